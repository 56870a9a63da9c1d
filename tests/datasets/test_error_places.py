"""An error a pipeline raises about a record names its file, its index there and its
byte offset, whatever ops come before it (shuffle, interleave, sharding, batching)."""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr

F = {"x": tfr.FixedLenFeature([], tfr.int64)}
BAD = 537  # the record of the second file that lacks "x"
N = 1000


def _example(key: str, value: int) -> bytes:
    return tfr.make_example({key: [value]}).SerializeToString()


def _write(path: Path, bad: int = -1, gz: bool = False) -> str:
    with tfr.TFRecordWriter(os.fspath(path), "GZIP" if gz else "") as w:
        for i in range(N):
            w.write(_example("y" if i == bad else "x", i))
    return os.fspath(path)


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    return [_write(tmp_path / "f1.tfrecord"), _write(tmp_path / "f2.tfrecord", BAD)]


def _offset(path: str, index: int) -> int:
    """The byte offset of record ``index`` of a plain or GZIP file, walked here."""
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    offset = 0
    for _ in range(index):
        offset += 16 + int.from_bytes(data[offset : offset + 8], "little")
    return offset


def _raised(ds: tfr.data.Dataset) -> tfr.TFRecordError:
    with pytest.raises(tfr.TFRecordError) as info:
        for _ in ds:
            pass
    return info.value


PIPELINES: dict[str, Callable[[list[str]], Any]] = {
    "parse.batch": lambda f: tfr.TFRecordDataset(f).parse(F).batch(64),
    "parse": lambda f: tfr.TFRecordDataset(f).parse(F),
    "batch.parse": lambda f: tfr.TFRecordDataset(f).batch(64).parse(F),
    "shuffle.parse.batch": lambda f: tfr.TFRecordDataset(f).shuffle(300, seed=1).parse(F).batch(8),
    "shuffle-big.parse": lambda f: tfr.TFRecordDataset(f).shuffle(5000, seed=2).parse(F),
    "interleave-files": lambda f: tfr.TFRecordDataset(f, num_parallel_reads=2).parse(F).batch(64),
    "interleave-datasets": lambda f: (
        tfr.data.Dataset.from_tensor_slices(f)
        .interleave(lambda p: tfr.TFRecordDataset(p), cycle_length=2)
        .map(lambda r: tfr.io.parse_single_example(r, F))
        .batch(16)
    ),
    "shard-by-record": lambda f: (
        tfr.TFRecordDataset(f).shard(3, (BAD * 2 + 1) % 3, by="record").parse(F)
    ),
    "map-parse_single_example": lambda f: tfr.TFRecordDataset(f).map(
        lambda r: tfr.io.parse_single_example(r, F)
    ),
    "map-threads": lambda f: tfr.TFRecordDataset(f).map(
        lambda r: tfr.io.parse_single_example(r, F), num_parallel_calls=2
    ),
    "batch.map-parse_example": lambda f: (
        tfr.TFRecordDataset(f).batch(32).map(lambda b: tfr.io.parse_example(b, F))
    ),
    "filter": lambda f: tfr.TFRecordDataset(f).filter(
        lambda r: tfr.io.parse_single_example(r, F)["x"] >= 0
    ),
    "take.prefetch.parse": lambda f: tfr.TFRecordDataset(f).take(1800).prefetch(3).parse(F),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_a_parse_error_names_the_file_record_and_offset(files: list[str], name: str) -> None:
    err = _raised(PIPELINES[name](files))
    assert isinstance(err, tfr.ParseError)
    assert err.path == files[1]
    assert err.index == BAD
    assert err.offset == _offset(files[1], BAD)
    text = str(err)
    assert "f2.tfrecord" in text and f"record {BAD}," in text
    assert f"byte offset {err.offset}" in text
    assert "is required but could not be found" in text  # what
    assert ".ignore_errors()" in text  # what to do


def test_gzip_files_give_the_offset_in_the_inflated_stream(tmp_path: Path) -> None:
    f = [_write(tmp_path / "a.tfrecord.gz", gz=True), _write(tmp_path / "b.gz", BAD, gz=True)]
    err = _raised(tfr.TFRecordDataset(f).parse(F).batch(100))
    assert (err.path, err.index, err.offset) == (f[1], BAD, _offset(f[1], BAD))


def test_a_sequence_parse_error_names_its_record(tmp_path: Path) -> None:
    path = os.fspath(tmp_path / "seq.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        for i in range(50):
            lists = {"v": [[i]]} if i != 31 else {"v": [[b"not an int"]]}
            w.write(tfr.make_sequence_example({"n": [i]}, lists).SerializeToString())
    seq = {"v": tfr.FixedLenSequenceFeature([], tfr.int64)}
    ctx = {"n": tfr.FixedLenFeature([], tfr.int64)}
    for ds in (
        tfr.TFRecordDataset(path).parse_sequence(ctx, seq),
        tfr.TFRecordDataset(path).batch(8).parse_sequence(ctx, seq),
    ):
        err = _raised(ds)
        assert (err.path, err.index, err.offset) == (path, 31, _offset(path, 31))


def test_an_error_already_placed_is_kept(files: list[str]) -> None:
    # A damaged record is reported by the reader with its own place; nothing overrides it.
    data = bytearray(Path(files[0]).read_bytes())
    data[_offset(files[0], 5) + 13] ^= 0xFF
    Path(files[0]).write_bytes(bytes(data))
    err = _raised(tfr.TFRecordDataset(files).parse(F).batch(4))
    assert isinstance(err, tfr.CorruptRecordError)
    assert (err.path, err.index) == (files[0], 5)


def test_values_before_the_error_are_unchanged(files: list[str]) -> None:
    got: list[int] = []
    with pytest.raises(tfr.ParseError):
        for b in tfr.TFRecordDataset(files).parse(F).batch(64):
            got.extend(np.asarray(b["x"]).tolist())
    whole = (N + BAD) // 64 * 64  # the records of the batches before the bad one
    assert got == list(range(N)) + list(range(whole - N))
