"""A bad shard or a bad element need not stop a dataset: ``on_error=`` and ``ignore_errors()``."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import tfrecord_lite as tfr

FEATURES = {"x": tfr.FixedLenFeature([], tfr.int64)}


def _write(path: Path, values: list[int]) -> str:
    with tfr.TFRecordWriter(os.fspath(path)) as w:
        for v in values:
            w.write(
                tfr.train.Example(
                    features=tfr.train.Features(
                        feature={"x": tfr.train.Feature(int64_list=tfr.train.Int64List(value=[v]))}
                    )
                ).SerializeToString()
            )
    return os.fspath(path)


def _damage_record(path: str, index: int) -> tuple[int, int]:
    """Flip the last data byte of record ``index``: its data CRC no longer matches.
    Returns the record's offset and its size with header and footer."""
    data = bytearray(Path(path).read_bytes())
    offset = 0
    for _ in range(index):
        offset += 16 + int.from_bytes(data[offset : offset + 8], "little")
    length = int.from_bytes(data[offset : offset + 8], "little")
    data[offset + 12 + length - 1] ^= 0xFF
    Path(path).write_bytes(bytes(data))
    return offset, 16 + length


@pytest.fixture
def shards(tmp_path: Path) -> tuple[list[str], int, int]:
    first = _write(tmp_path / "a.tfrecord", list(range(0, 10)))
    second = _write(tmp_path / "b.tfrecord", list(range(10, 20)))
    offset, size = _damage_record(second, 3)  # value 13
    return [first, second], offset, size


def _values(ds: tfr.data.Dataset) -> list[int]:
    out: list[int] = []
    for batch in ds:
        out.extend(np.asarray(batch["x"]).reshape(-1).tolist())
    return out


def test_a_damaged_record_raises_by_default(shards: tuple[list[str], int, int]) -> None:
    files, offset, _ = shards
    with pytest.raises(tfr.CorruptRecordError) as info:
        list(tfr.TFRecordDataset(files))
    assert (info.value.path, info.value.index) == (files[1], 3)
    assert offset <= info.value.offset < offset + 16


@pytest.mark.parametrize("batched", [False, True])
def test_on_error_skip_reports_and_goes_on(
    shards: tuple[list[str], int, int], batched: bool
) -> None:
    files, offset, size = shards
    reports: list[tfr.SkipReport] = []
    ds = tfr.TFRecordDataset(files, on_error="skip", on_skip=reports.append).parse(FEATURES)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "skip" is quiet
        got = _values(ds.batch(4)) if batched else [int(e["x"]) for e in ds]
    assert got == [v for v in range(20) if v != 13]
    assert len(reports) == 1
    (rep,) = reports
    assert (rep.path, rep.offset, rep.length, rep.index) == (files[1], offset, size, 3)
    assert isinstance(rep.error, tfr.CorruptRecordError)


def test_on_error_warn_warns_for_each_skip(shards: tuple[list[str], int, int]) -> None:
    files, _, _ = shards
    with pytest.warns(tfr.SkippedDataWarning, match="b.tfrecord"):
        got = list(tfr.TFRecordDataset(files, on_error="warn"))
    assert len(got) == 19


def test_on_error_is_checked(tmp_path: Path) -> None:
    path = _write(tmp_path / "ok.tfrecord", [1])
    with pytest.raises(ValueError, match="on_error"):
        tfr.TFRecordDataset(path, on_error="ignore")
    with pytest.raises(TypeError, match="on_skip"):
        tfr.TFRecordDataset(path, on_error="skip", on_skip=3)  # type: ignore[arg-type]


def test_ignore_errors_drops_what_fails_and_skips_damaged_records(
    shards: tuple[list[str], int, int], tmp_path: Path
) -> None:
    files, _, _ = shards
    # besides record 3 of b.tfrecord (damaged): d.tfrecord holds no Example
    bad = _write(tmp_path / "c.tfrecord", [20, 21])
    with tfr.TFRecordWriter(os.fspath(tmp_path / "d.tfrecord")) as w:
        w.write(b"not an Example")
    files = [*files, bad, os.fspath(tmp_path / "d.tfrecord")]

    def check(e: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if int(e["x"]) == 7:
            raise ValueError("seven")
        return e

    ds = tfr.TFRecordDataset(files).parse(FEATURES).map(check)
    with pytest.raises(ValueError, match="seven"):
        list(ds)
    kept = [v for v in range(22) if v not in (7, 13)]
    assert _values(ds.ignore_errors().batch(5)) == kept
    with pytest.warns(tfr.SkippedDataWarning, match="seven"):
        assert _values(ds.ignore_errors(log_warning=True).batch(5)) == kept
    applied = ds.apply(tfr.data.experimental.ignore_errors())
    assert [int(e["x"]) for e in applied] == kept
    # a batch that cannot be made is dropped whole
    ragged = tfr.data.Dataset.from_tensor_slices([0, 1, 2, 3, 4, 5]).map(
        lambda i: np.zeros(int(i) // 3 + 1)
    )
    got = list(ragged.batch(2, ragged="error").ignore_errors())
    assert [b.shape for b in got] == [(2, 1), (2, 2)]
    assert ragged.ignore_errors().cardinality() == tfr.data.UNKNOWN_CARDINALITY
