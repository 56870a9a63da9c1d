"""read_table(use_threads=True): batches converted on a pool of threads while the
calling thread reads on; the same table and the same first error as one thread."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import tfrecord_lite as tfr

pa = pytest.importorskip("pyarrow")
from tfrecord_lite import arrow as tfa  # noqa: E402
from tfrecord_lite._tables import (  # noqa: E402
    ReadPlan,
    _plan,
    stream_tables,
)

FEATURES = {
    "label": tfr.FixedLenFeature([], tfr.int64),
    "score": tfr.VarLenFeature(tfr.float32),
    "name": tfr.FixedLenFeature([], tfr.string, default_value=b""),
    "ids": tfr.RaggedFeature(tfr.int64),
}


def record(i: int) -> bytes:
    features: dict[str, Any] = {"label": i, "ids": list(range(i % 4))}
    if i % 3:
        features["score"] = [i / 8] * (i % 3)
    if i % 5:
        features["name"] = b"n%d" % i
    return tfr.encode_example(features)


def write(path: Path, records: list[bytes], compression: str = "") -> Path:
    with tfr.TFRecordWriter(path, compression) as w:
        w.write_all(records)
    return path


@pytest.fixture()
def files(tmp_path: Path) -> list[Path]:
    return [
        write(tmp_path / "a.tfrecord.gz", [record(i) for i in range(0, 2500)], "GZIP"),
        write(tmp_path / "b.tfrecord", [record(i) for i in range(2500, 3100)]),
        write(tmp_path / "c.tfrecord.gz", [record(i) for i in range(3100, 5000)], "GZIP"),
    ]


def converting_threads(monkeypatch: Any) -> list[str]:
    """The names of the threads each batch is converted on (not the empty batch a
    plan converts for its schema)."""
    names: list[str] = []
    real = _plan.ReadPlan.convert

    def noting(self: Any, records: Any) -> Any:
        if len(records):
            names.append(threading.current_thread().name)
        return real(self, records)

    monkeypatch.setattr(_plan.ReadPlan, "convert", noting)
    return names


@pytest.mark.parametrize("batch_size", [7, 333, 8192])
def test_threads_give_the_same_table(files: list[Path], batch_size: int) -> None:
    one = tfa.read_table(files, FEATURES, batch_size=batch_size, use_threads=False)
    assert one.num_rows == 5000
    assert one.column("label").to_pylist() == list(range(5000))
    with tfr.options(threads=2):
        assert tfa.read_table(files, FEATURES, batch_size=batch_size).equals(one)
    plan = ReadPlan(FEATURES, None)
    tables = list(stream_tables(plan, files, batch_size=batch_size, workers=3))
    assert [t.num_rows for t in tables] == [
        t.num_rows for t in stream_tables(plan, files, batch_size=batch_size)
    ]
    assert pa.concat_tables(tables).equals(one)


def test_inferred_schema_and_sequence_examples_too(tmp_path: Path) -> None:
    records = [
        tfr.encode_sequence_example(
            {"id": i}, {"frames": [[float(i)] * (j + 1) for j in range(i % 4)]}
        )
        for i in range(3000)
    ]
    path = write(tmp_path / "seq.tfrecord", records)
    one = tfa.read_table(path, batch_size=256, use_threads=False)
    assert one.num_rows == 3000
    with tfr.options(threads=2):
        assert tfa.read_table(path, batch_size=256).equals(one)


def test_batches_are_converted_on_the_pool(files: list[Path], monkeypatch: Any) -> None:
    names = converting_threads(monkeypatch)
    plan = ReadPlan(FEATURES, None)
    list(stream_tables(plan, files, batch_size=500, workers=2))
    assert len(names) == 10
    assert all(n.startswith("tfrecord_lite-table") for n in names)


def test_no_thread_without_use_threads_or_with_one_thread_allowed(
    files: list[Path], monkeypatch: Any
) -> None:
    names = converting_threads(monkeypatch)
    tfa.read_table(files, FEATURES, batch_size=1000, use_threads=False)
    with tfr.options(threads=1):
        tfa.read_table(files, FEATURES, batch_size=1000)
    assert names == [threading.current_thread().name] * 10


def test_the_first_parse_error_is_the_one_thread_error(tmp_path: Path) -> None:
    good = [record(i) for i in range(1200)]
    bad = list(good)
    bad[777] = tfr.encode_example({"label": [1, 2]})  # two values for a FixedLenFeature([])
    bad[1100] = tfr.encode_example({"label": b"text"})  # a later one, in another batch
    paths = [write(tmp_path / "ok.tfrecord", good), write(tmp_path / "bad.tfrecord", bad)]
    errors = []
    for threads in (False, True):
        with tfr.options(threads=2), pytest.raises(tfr.ParseError) as err:
            tfa.read_table(paths, FEATURES, batch_size=256, use_threads=threads)
        errors.append(err.value)
    assert str(errors[0]) == str(errors[1])
    assert errors[1].index == 777 and errors[1].path == str(paths[1])


def test_a_read_error_after_a_parse_error_does_not_hide_it(tmp_path: Path) -> None:
    bad = [record(i) for i in range(600)]
    bad[500] = tfr.encode_example({"label": [1, 2]})
    first = write(tmp_path / "parse.tfrecord", bad)
    second = write(tmp_path / "crc.tfrecord", [record(i) for i in range(50)])
    data = bytearray(second.read_bytes())
    data[40] ^= 0xFF  # the first record's data: its CRC no longer matches
    second.write_bytes(bytes(data))
    for workers in (1, 2, 4):
        with pytest.raises(tfr.ParseError) as err:
            list(
                stream_tables(
                    ReadPlan(FEATURES, None), [first, second], batch_size=100, workers=workers
                )
            )
        assert err.value.index == 500
    # Alone, the damaged file's error is the reader's, threads or not.
    for threads in (False, True):
        with tfr.options(threads=2), pytest.raises(tfr.DataLossError, match=r"crc\.tfrecord"):
            tfa.read_table(second, FEATURES, use_threads=threads)


def test_the_tables_before_an_error_come_first(tmp_path: Path) -> None:
    records = [record(i) for i in range(1000)]
    records[730] = tfr.encode_example({"label": [1, 2]})
    path = write(tmp_path / "late.tfrecord", records)
    got = []
    with pytest.raises(tfr.ParseError):
        for table in stream_tables(ReadPlan(FEATURES, None), path, batch_size=100, workers=3):
            got.append(table.num_rows)
    assert got == [100] * 7
