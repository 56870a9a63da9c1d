"""Record sharding of GZIP/ZLIB files that have an index beside them: each file is
inflated once per shard, whatever the index (an older text index of decompressed
offsets, or the binary index with seek points)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._data import _source
from tfrecord_lite._files import _gzindex, _gzread


def write(path: Path, compression: str, n: int) -> list[bytes]:
    recs = [b"r%d-" % i + os.urandom(i % 50) for i in range(n)]
    with tfr.TFRecordWriter(str(path), compression) as w:
        w.write_all(recs)
    return recs


class Passes:
    """Counts the passes over a compressed file: streamed (``read_batches``), indexed
    on opening (``_gzindex.build``), and reads through seek points (``GzRanges.read``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.streamed: list[str] = []
        self.built: list[str] = []
        self.ranged = 0
        stream = _source.read_batches  # type: ignore[attr-defined]
        build, ranged = _gzindex.build, _gzread.GzRanges.read

        def counting_stream(source: Any, *args: Any, **kwargs: Any) -> Any:
            self.streamed.append(os.fspath(source))
            return stream(source, *args, **kwargs)

        def counting_build(path: str, *args: Any, **kwargs: Any) -> Any:
            self.built.append(path)
            return build(path, *args, **kwargs)

        def counting_read(gz: Any, start: int, n: int) -> bytes:
            self.ranged += 1
            return ranged(gz, start, n)

        monkeypatch.setattr(_source, "read_batches", counting_stream)
        monkeypatch.setattr(_gzindex, "build", counting_build)
        monkeypatch.setattr(_gzread.GzRanges, "read", counting_read)


@pytest.mark.parametrize("kind", ["text", "binary"])
@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_a_compressed_file_with_an_index_is_inflated_once_per_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str, kind: str
) -> None:
    path = tmp_path / "a.tfrecord"
    recs = write(path, compression, 3000)
    tfr.create_index(str(path), format=kind)
    passes = Passes(monkeypatch)
    for i in range(3):
        assert list(tfr.TFRecordDataset(str(path)).shard(3, i)) == recs[i::3]
    assert passes.streamed == [str(path)] * 3  # one pass a shard
    assert passes.built == [] and passes.ranged == 0  # and no other


def test_a_plain_file_with_an_index_still_reads_only_its_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "plain.tfrecord"
    recs = write(path, "", 500)
    tfr.create_index(str(path))
    passes = Passes(monkeypatch)
    assert list(tfr.TFRecordDataset(str(path)).shard(4, 3)) == recs[3::4]
    assert passes.streamed == []


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_resuming_a_record_shard_of_an_indexed_compressed_file(
    tmp_path: Path, compression: str
) -> None:
    path = tmp_path / "r.tfrecord"
    recs = write(path, compression, 2000)
    tfr.create_index(str(path), format="text")
    it = iter(tfr.TFRecordDataset(str(path)).shard(4, 1))
    head = [next(it) for _ in range(123)]
    state = it.state_dict()
    again = iter(tfr.TFRecordDataset(str(path)).shard(4, 1))
    again.load_state_dict(state)
    assert head + list(again) == recs[1::4]


@pytest.mark.parametrize("shard", [None, (3, 2)])
@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_resuming_in_a_compressed_file_starts_at_a_seek_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str, shard: Any
) -> None:
    path = tmp_path / "s.tfrecord"
    recs = [b"r%d-" % i + os.urandom(200) for i in range(20000)]
    with tfr.TFRecordWriter(str(path), compression, seekable=64 * 1024) as w:
        w.write_all(recs)
    tfr.create_index(str(path), spacing=64 * 1024)

    def dataset() -> Any:
        ds = tfr.TFRecordDataset(str(path))
        return ds if shard is None else ds.shard(*shard)

    want = recs if shard is None else recs[shard[1] :: shard[0]]
    it = iter(dataset())
    head = [next(it) for _ in range(len(want) - 700)]
    state = it.state_dict()
    del it
    starts: list[int] = []
    cursor = _gzread._Cursor.__init__

    def noting(self: Any, index: Any, k: int, read_at: Any) -> None:
        starts.append(index.points[k].out)
        cursor(self, index, k, read_at)

    monkeypatch.setattr(_gzread._Cursor, "__init__", noting)
    passes = Passes(monkeypatch)
    again = iter(dataset())
    again.load_state_dict(state)
    assert head + list(again) == want
    assert passes.streamed == [] and passes.built == []  # no pass from the file's start
    total = sum(len(r) + 16 for r in recs)
    # inflating began past the records before (the first record's header, checked on
    # opening, aside)
    assert starts and [s for s in starts if s < total // 2] == [0]


def test_resuming_in_a_compressed_file_with_a_text_index_streams_it(tmp_path: Path) -> None:
    path = tmp_path / "t.tfrecord"
    recs = write(path, "GZIP", 3000)
    tfr.create_index(str(path), format="text")
    it = iter(tfr.TFRecordDataset(str(path)))
    head = [next(it) for _ in range(2000)]
    again = iter(tfr.TFRecordDataset(str(path)))
    again.load_state_dict(it.state_dict())
    assert head + list(again) == recs
