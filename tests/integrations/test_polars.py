"""tfrecord_lite.polars: scan_tfrecord (IO plugin: projection, predicate, row limit) and read_tfrecord."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr

pl = pytest.importorskip("polars")
pytest.importorskip("pyarrow")
from tfrecord_lite import arrow as tfa  # noqa: E402
from tfrecord_lite import polars as tfpl  # noqa: E402

FEATURES = {
    "label": tfr.FixedLenFeature([], tfr.int64),
    "score": tfr.FixedLenFeature([], tfr.float32),
    "name": tfr.FixedLenFeature([], tfr.string),
    "vec": tfr.FixedLenFeature([3], tfr.float32),
    "tags": tfr.VarLenFeature(tfr.string),
}
N = 95
#: Polars 2 raises an error of the source as it is; Polars 1.x wraps it in a ComputeError,
#: and reads a filtered scan to its end before applying head().
POLARS_2 = int(pl.__version__.split(".")[0]) >= 2


def read_error(lf: Any, kind: type[BaseException], text: str) -> BaseException:
    """The error that ends ``lf.collect()``: ``kind`` (Polars 2) or a ComputeError holding it."""
    with pytest.raises(Exception) as info:
        lf.collect()
    err = info.value
    if POLARS_2:
        assert isinstance(err, kind), repr(err)
    else:
        assert isinstance(err, pl.exceptions.ComputeError), repr(err)
    assert text in str(err), str(err)
    return err


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
    return write(tmp_path / "data.tfrecord", [example(i) for i in range(N)])


@pytest.fixture
def cut(data: Path, tmp_path: Path) -> Path:
    """The same records, then a record cut off: reading to the end raises DataLossError."""
    path = tmp_path / "cut.tfrecord"
    path.write_bytes(data.read_bytes() + example(N)[:7])
    return path


def test_scan_equals_read_table(data: Path) -> None:
    lf = tfpl.scan_tfrecord(data, FEATURES, batch_size=16)
    assert isinstance(lf, pl.LazyFrame)
    want = pl.from_arrow(tfa.read_table(data, FEATURES))
    got = lf.collect()
    assert got.schema == want.schema
    assert got.equals(want)
    assert got.schema["name"] == pl.Binary and got.schema["vec"] == pl.Array(pl.Float32, 3)
    assert got.schema["tags"] == pl.List(pl.Binary)
    assert tfpl.scan_tfrecord(data).collect().equals(pl.from_arrow(tfa.read_table(data)))


def test_only_the_selected_features_are_parsed(tmp_path: Path) -> None:
    # record 40 holds a float where "name" is declared bytes: parsing "name" fails there
    records = [example(i) for i in range(60)]
    records[40] = example(40, name=[1.5])
    path = write(tmp_path / "mixed.tfrecord", records)
    lf = tfpl.scan_tfrecord(path, FEATURES, batch_size=16)
    got = lf.select("label", "vec").collect()
    assert got["label"].to_list() == [i % 7 for i in range(60)]
    assert "2/5 COLUMNS" in lf.select("label", "vec").explain()  # the scan's projection
    assert lf.select(pl.len()).collect().item() == 60
    read_error(lf, tfr.ParseError, "Key: name")
    with pytest.raises(tfr.ParseError, match="Key: name"):  # raised as it is, any Polars
        tfpl.read_tfrecord(path, FEATURES)


def test_filters_are_applied_in_the_scan(data: Path) -> None:
    lf = tfpl.scan_tfrecord(data, FEATURES, batch_size=10)
    query = lf.filter((pl.col("label") == 3) & (pl.col("score") > 5)).select("name")
    plan = query.explain()
    assert "SELECTION" in plan  # the filter is handed to the scan
    got = query.collect()["name"].to_list()
    assert got == [b"n%d" % i for i in range(N) if i % 7 == 3 and i / 4 > 5]
    # the filter reads a column the query does not return
    assert lf.filter(pl.col("tags").list.len() == 2).select("label").collect().height == 31


def test_head_stops_reading(cut: Path) -> None:
    lf = tfpl.scan_tfrecord(cut, FEATURES, batch_size=16)
    assert lf.head(5).collect()["label"].to_list() == [0, 1, 2, 3, 4]
    assert lf.head(40).collect().height == 40
    first_two = lf.filter(pl.col("label") == 6).head(2)
    if POLARS_2:  # it stops asking for batches once it has two rows
        assert first_two.collect()["score"].to_list() == [1.5, 3.25]
    else:  # Polars 1.x reads a filtered scan to its end, then takes the head
        read_error(first_two, tfr.DataLossError, "truncated record")
    assert tfpl.read_tfrecord(cut, FEATURES, n_rows=N).height == N
    read_error(lf, tfr.DataLossError, "truncated record")
    read_error(lf.filter(pl.col("label") == 6).head(100), tfr.DataLossError, "truncated record")
    with pytest.raises(tfr.DataLossError):
        tfpl.read_tfrecord(cut, FEATURES)


def test_read_tfrecord(data: Path, tmp_path: Path) -> None:
    df = tfpl.read_tfrecord(data, FEATURES, columns=["vec", "label"], n_rows=4)
    assert isinstance(df, pl.DataFrame) and df.columns == ["vec", "label"]
    assert df["vec"].to_list() == [[float(i), float(-i), 0.5] for i in range(4)]
    gz = tmp_path / "data.tfrecord.gz"
    gz.write_bytes(gzip.compress(data.read_bytes()))
    assert tfpl.read_tfrecord(gz).equals(tfpl.read_tfrecord(data))
    assert tfpl.read_tfrecord([data, data], FEATURES).height == 2 * N
    assert tfpl.read_tfrecord(data, FEATURES, n_rows=0).height == 0


def test_bad_arguments_are_named(data: Path) -> None:
    with pytest.raises(KeyError, match="no feature 'nope'"):
        tfpl.read_tfrecord(data, FEATURES, columns=["nope"])
    with pytest.raises(TypeError, match="not one string"):
        tfpl.read_tfrecord(data, FEATURES, columns="label")
    with pytest.raises(ValueError, match="batch_size"):
        tfpl.scan_tfrecord(data, FEATURES, batch_size=0)
    with pytest.raises(ValueError, match="n_rows"):
        tfpl.read_tfrecord(data, FEATURES, n_rows=-1)


def test_sequence_examples(tmp_path: Path) -> None:
    records = [
        tfr.encode_sequence_example({"id": i}, {"frames": [[float(j)] for j in range(i % 4)]})
        for i in range(10)
    ]
    path = write(tmp_path / "seq.tfrecord", records)
    df = tfpl.read_tfrecord(
        path,
        {"id": tfr.FixedLenFeature([], tfr.int64)},
        sequence_features={"frames": tfr.FixedLenSequenceFeature([], tfr.float32)},
    )
    assert df.schema["frames"] == pl.List(pl.Float32)
    assert df.filter(pl.col("id") == 3)["frames"].to_list() == [[0.0, 1.0, 2.0]]


def test_importing_the_package_does_not_import_polars() -> None:
    code = (
        "import sys, tfrecord_lite, tfrecord_lite.arrow, tfrecord_lite.polars\n"
        "assert 'polars' not in sys.modules, 'polars imported'\n"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root, timeout=120)


def test_aggregations_match_numpy(data: Path) -> None:
    out = (
        tfpl.scan_tfrecord(data, FEATURES)
        .group_by("label")
        .agg(pl.col("score").sum())
        .sort("label")
        .collect()
    )
    labels = np.arange(N) % 7
    scores = np.arange(N) / 4
    assert out["score"].to_list() == [float(scores[labels == k].sum()) for k in range(7)]


def test_head_across_files_stops_in_the_second(data: Path, cut: Path) -> None:
    lf = tfpl.scan_tfrecord([data, cut], FEATURES, batch_size=16)
    got = lf.head(N + 5).collect()
    assert got["label"].to_list() == [i % 7 for i in range(N)] + [0, 1, 2, 3, 4]
    read_error(lf, tfr.DataLossError, "cut.tfrecord")
    with pytest.raises(tfr.DataLossError) as err:
        tfpl.read_tfrecord([data, cut], FEATURES)
    assert err.value.path is not None and err.value.path.endswith("cut.tfrecord")


@pytest.mark.parametrize("threads", [1, 3])
def test_a_scan_on_threads_reads_what_one_thread_reads(
    data: Path, cut: Path, threads: int, monkeypatch: Any
) -> None:
    # The source converts its batches on this many threads (the cores, capped by
    # TFRECORD_LITE_THREADS): the frames, the row limit and the error are one thread's.
    monkeypatch.setattr(tfpl, "cores", lambda: threads)
    want = pl.from_arrow(tfa.read_table(data, FEATURES, use_threads=False))
    assert tfpl.read_tfrecord(data, FEATURES, batch_size=8).equals(want)
    lf = tfpl.scan_tfrecord(data, FEATURES, batch_size=8)
    assert lf.head(21).collect()["label"].to_list() == [i % 7 for i in range(21)]
    assert lf.filter(pl.col("label") == 3).select("score").collect()["score"].to_list() == [
        i / 4 for i in range(N) if i % 7 == 3
    ]
    read_error(tfpl.scan_tfrecord(cut, FEATURES, batch_size=8), tfr.DataLossError, "cut.tfrecord")
