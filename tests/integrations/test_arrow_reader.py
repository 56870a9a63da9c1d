"""tfrecord_lite.arrow.record_batch_reader: a streamed pyarrow.RecordBatchReader (DuckDB, Polars)."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr

pa = pytest.importorskip("pyarrow")
from tfrecord_lite import arrow as tfa  # noqa: E402

FEATURES = {
    "label": tfr.FixedLenFeature([], tfr.int64),
    "score": tfr.FixedLenFeature([], tfr.float32),
    "name": tfr.FixedLenFeature([], tfr.string),
    "vec": tfr.FixedLenFeature([3], tfr.float32),
    "tags": tfr.VarLenFeature(tfr.string),
}


def example(i: int, name: object = None) -> bytes:
    return tfr.encode_example(
        {
            "label": i % 7,
            "score": i / 4,
            "name": b"n%d" % i if name is None else name,
            "vec": [i, -i, 0.5],
            "tags": [b"t%d" % j for j in range(i % 3)],
        }
    )


def write(path: Path, records: list[bytes]) -> Path:
    with tfr.TFRecordWriter(str(path)) as w:
        for r in records:
            w.write(r)
    return path


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write(tmp_path / "data.tfrecord", [example(i) for i in range(95)])


def test_reader_equals_read_table(data: Path) -> None:
    reader = tfa.record_batch_reader(data, FEATURES, batch_size=20)
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema == tfa.arrow_schema(FEATURES)
    batches = list(reader)
    assert [b.num_rows for b in batches] == [20, 20, 20, 20, 15]
    assert pa.Table.from_batches(batches).equals(tfa.read_table(data, FEATURES))
    inferred = tfa.record_batch_reader(data).read_all()
    assert inferred.equals(tfa.read_table(data))


def test_columns_are_the_only_features_parsed(tmp_path: Path) -> None:
    # record 40 holds a float where "name" is declared bytes: parsing "name" fails there
    records = [example(i) for i in range(60)]
    records[40] = example(40, name=[1.5])
    path = write(tmp_path / "mixed.tfrecord", records)
    table = tfa.record_batch_reader(path, FEATURES, columns=["vec", "label"]).read_all()
    assert table.column_names == ["vec", "label"]
    assert table.column("label").to_pylist() == [i % 7 for i in range(60)]
    with pytest.raises(tfr.ParseError, match="name"):
        tfa.record_batch_reader(path, FEATURES).read_all()


def test_batches_are_read_as_they_are_asked_for(data: Path, tmp_path: Path) -> None:
    # a file whose tail is cut off: the batches before it come out, the cut one raises
    good = data.read_bytes()
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(good + example(95)[:5])
    reader = tfa.record_batch_reader(cut, FEATURES, batch_size=30)
    for _ in range(3):
        assert reader.read_next_batch().num_rows == 30
    with pytest.raises(tfr.DataLossError):
        reader.read_next_batch()


def _peak(fn: Any) -> int:
    """The most memory (Python objects and NumPy arrays, traced) ``fn`` held at once."""
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_memory_does_not_grow_with_the_files(tmp_path: Path) -> None:
    one = write(tmp_path / "one.tfrecord", [example(i) for i in range(20_000)])
    ten = [one] * 10

    def stream(paths: Any) -> None:
        rows = 0
        for batch in tfa.record_batch_reader(paths, FEATURES, batch_size=1_000):
            rows += batch.num_rows
        assert rows == 20_000 * len(paths)

    stream([one])  # plans compiled, modules loaded
    small, big = _peak(lambda: stream([one])), _peak(lambda: stream(ten))
    # What reading them whole holds at the end: the table's Arrow buffers (which
    # tracemalloc does not see), 200,000 rows.
    whole = tfa.read_table(ten, FEATURES).nbytes
    assert big < 1.5 * small + (1 << 20) and big < whole / 2, (small, big, whole)


def test_unknown_columns_are_named(data: Path) -> None:
    with pytest.raises(KeyError, match=r"no feature 'nope'.*'label'"):
        tfa.record_batch_reader(data, FEATURES, columns=["label", "nope"])
    with pytest.raises(TypeError, match="not one string"):
        tfa.record_batch_reader(data, FEATURES, columns="label")
    with pytest.raises(ValueError, match="names no feature"):  # not batches of 0 rows
        tfa.record_batch_reader(data, FEATURES, columns=[])
    with pytest.raises(ValueError, match="batch_size"):
        tfa.record_batch_reader(data, FEATURES, batch_size=0)


def test_sequence_examples_by_column(tmp_path: Path) -> None:
    records = [
        tfr.encode_sequence_example(
            {"id": i}, {"frames": [[float(j)] for j in range(i % 4)], "words": [[b"w"]] * i}
        )
        for i in range(10)
    ]
    path = write(tmp_path / "seq.tfrecord", records)
    ctx = {"id": tfr.FixedLenFeature([], tfr.int64)}
    seq = {
        "frames": tfr.FixedLenSequenceFeature([], tfr.float32),
        "words": tfr.VarLenFeature(tfr.string),
    }
    table = tfa.record_batch_reader(
        path, ctx, columns=["frames", "id"], sequence_features=seq, batch_size=4
    ).read_all()
    assert table.column_names == ["id", "frames"]
    assert table.column("frames").to_pylist()[3] == [0.0, 1.0, 2.0]
    full = tfa.read_table(path, ctx, sequence_features=seq)
    assert table.column("frames").equals(full.column("frames"))


def test_duckdb_reads_the_stream(data: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    if int(pa.__version__.split(".")[0]) < 14:
        pytest.skip(
            f"DuckDB reads Arrow streams through the PyCapsule interface, which pyarrow "
            f"{pa.__version__} does not have (14 or later)"
        )
    reader = tfa.record_batch_reader(data, FEATURES, columns=["label", "score"], batch_size=16)
    assert isinstance(reader, pa.RecordBatchReader)  # DuckDB finds it by its name
    got = duckdb.sql(
        "SELECT label, count(*) AS n, sum(score) AS s FROM reader GROUP BY label ORDER BY label"
    ).fetchall()
    labels = np.arange(95) % 7
    scores = np.arange(95, dtype=np.float64) / 4
    want = [(k, int((labels == k).sum()), float(scores[labels == k].sum())) for k in range(7)]
    assert got == want


def test_polars_reads_the_stream(data: Path) -> None:
    pl = pytest.importorskip("polars")
    df = pl.from_arrow(tfa.record_batch_reader(data, FEATURES, columns=["name"]))
    assert df.columns == ["name"] and df.height == 95
    assert df["name"][94] == b"n94"


@pytest.mark.parametrize("batch_size", [4, 8192])
def test_a_bad_record_is_named_by_file_index_and_offset(tmp_path: Path, batch_size: int) -> None:
    first = write(tmp_path / "a.tfrecord", [example(i) for i in range(10)])
    records = [example(i) for i in range(10)]
    records[7] = example(7, name=[1.5])
    second = write(tmp_path / "b.tfrecord", records)
    reader = tfa.record_batch_reader([first, second], FEATURES, batch_size=batch_size)
    with pytest.raises(tfr.ParseError) as err:
        reader.read_all()
    assert err.value.path == str(second) and err.value.index == 7 and err.value.key == "name"
    assert err.value.offset == int(tfr.TFRecordFile(str(second)).offsets[7])
    gz = tmp_path / "b.tfrecord.gz"
    gz.write_bytes(gzip.compress(second.read_bytes()))
    with pytest.raises(tfr.ParseError) as err:
        tfa.record_batch_reader([first, gz], FEATURES, batch_size=batch_size).read_all()
    assert err.value.path == str(gz) and err.value.index == 7 and err.value.offset is None


def test_batches_run_across_files(tmp_path: Path) -> None:
    a = write(tmp_path / "a.tfrecord", [example(i) for i in range(10)])
    b = write(tmp_path / "b.tfrecord", [example(i) for i in range(10, 23)])
    batches = list(tfa.record_batch_reader([a, b], FEATURES, batch_size=4))
    assert [x.num_rows for x in batches] == [4, 4, 4, 4, 4, 3]
    table = pa.Table.from_batches(batches)
    assert table.column("name").to_pylist() == [b"n%d" % i for i in range(23)]
    assert table.equals(tfa.read_table([a, b], FEATURES))
