"""Seekable by construction: ``TFRecordWriter(..., seekable=True)`` fully flushes the deflate
stream at record boundaries, and the index keeps no window for those seek points."""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files import _gzindex, _writer


def records(n: int, seed: int = 0) -> list[bytes]:
    """Records of words and random bytes: deflate blocks every few KiB of output."""
    rng = np.random.default_rng(seed)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"epsilon"]
    return [
        b" ".join(words[int(k)] for k in rng.integers(0, 5, int(rng.integers(5, 30))))
        + rng.integers(0, 256, int(rng.integers(0, 200)), dtype=np.uint8).tobytes()
        + b"#%d" % i
        for i in range(n)
    ]


def kinds(index: str) -> list[int]:
    return [p.kind for p in _gzindex.decode(Path(index).read_bytes()).points]


@pytest.fixture(autouse=True)
def small_spacing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_writer, "SEEKABLE_SPACING", 48 * 1024)


@pytest.mark.parametrize("backend", ["zlib", "auto"])
@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_a_seekable_file_has_windowless_seek_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str, backend: str
) -> None:
    monkeypatch.setenv("TFRECORD_LITE_DEFLATE_BACKEND", backend)
    recs = records(24000)
    sizes = {}
    for seekable in (False, True):
        path = os.fspath(tmp_path / f"{seekable}.tfr")
        with tfr.TFRecordWriter(path, compression, seekable=seekable) as w:
            for r in recs:
                w.write(r)
        assert list(tfr.tf_record_iterator(path)) == recs  # one standard stream
        sizes[seekable] = os.path.getsize(path)
        index = tfr.create_index(path, spacing=512 * 1024)
        found = kinds(index)
        if seekable:
            assert found.count(_gzindex.FLUSH) >= 10 and _gzindex.BLOCK not in found, found
            with tfr.TFRecordFile(path) as f:
                for i in np.random.default_rng(1).permutation(len(recs))[:200].tolist():
                    f._gz.drop()  # type: ignore[union-attr]
                    assert f[i] == recs[i]
        elif backend == "zlib":
            assert _gzindex.FLUSH not in found and found.count(_gzindex.BLOCK) >= 5, found
    assert sizes[True] < sizes[False] * 1.03


def test_write_all_flushes_at_its_chunks_of_records(tmp_path: Path) -> None:
    recs = records(24000, seed=3)
    path = os.fspath(tmp_path / "a.gz")
    with tfr.TFRecordWriter(path, "GZIP", seekable=True) as w:
        w.write_all(recs)
    index = tfr.create_index(path, spacing=512 * 1024)
    assert kinds(index).count(_gzindex.FLUSH) >= 3
    assert list(tfr.TFRecordFile(path)) == recs


def test_a_seek_point_at_every_block(tmp_path: Path) -> None:
    recs = records(3000, seed=4)
    path = os.fspath(tmp_path / "a.gz")
    with tfr.TFRecordWriter(path, "GZIP", seekable=True) as w:
        for r in recs:
            w.write(r)
    index = tfr.create_index(path, spacing=1)  # flush points followed by more blocks
    outs = [p.out for p in _gzindex.decode(Path(index).read_bytes()).points]
    assert outs == sorted(set(outs)) and _gzindex.FLUSH in kinds(index)
    with tfr.TFRecordFile(path) as f:
        assert f[2999] == recs[2999]


def test_a_sync_flush_whose_blocks_reach_back_keeps_its_window(tmp_path: Path) -> None:
    """Byte-aligned but not free of the output before it: a block, with its window."""
    recs = records(3000, seed=2)
    data = tfr.encode_records(recs)
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    half = len(data) // 2
    cut = data.index(tfr.encode_record(recs[1500]))
    blob = z.compress(data[:cut]) + z.flush(zlib.Z_SYNC_FLUSH) + z.compress(data[cut:]) + z.flush()
    path = tmp_path / "sync.gz"
    path.write_bytes(blob)
    index = tfr.create_index(path, spacing=half // 4)
    assert _gzindex.FLUSH not in kinds(index)
    with tfr.TFRecordFile(path) as f:
        assert f[1500] == recs[1500] and f[2999] == recs[2999]


def test_the_index_refuses_a_flush_point_with_a_window_or_off_a_byte(tmp_path: Path) -> None:
    path = os.fspath(tmp_path / "a.gz")
    with tfr.TFRecordWriter(path, "GZIP", seekable=True) as w:
        w.write_all(records(12000))
    index = tfr.create_index(path, spacing=512 * 1024)
    good = _gzindex.decode(Path(index).read_bytes())
    k = next(i for i, p in enumerate(good.points) if p.kind == _gzindex.FLUSH)
    p = good.points[k]
    for bad in (
        _gzindex.SeekPoint(p.bit, p.out, _gzindex.FLUSH, b"x" * 10),
        _gzindex.SeekPoint(p.bit + 3, p.out, _gzindex.FLUSH),
    ):
        good.points[k] = bad
        with pytest.raises(_gzindex.IndexFileError, match="seek point"):
            _gzindex.decode(_gzindex.encode(good))


def test_seekable_must_be_a_bool(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="seekable"):
        tfr.TFRecordWriter(tmp_path / "a", "GZIP", seekable="yes")  # type: ignore[arg-type]
    with tfr.TFRecordWriter(tmp_path / "plain", seekable=True) as w:  # nothing to flush
        w.write(b"x")
    assert list(tfr.tf_record_iterator(str(tmp_path / "plain"))) == [b"x"]


def _no_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a compressed file may not inflate it whole to find its seek points."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the shard was read through to index it")

    monkeypatch.setattr(_gzindex, "build", refuse)


@pytest.mark.parametrize("split", [{"num_shards": 3}, {"records_per_shard": 7000}])
@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_seekable_shards_get_their_seek_point_index_as_they_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str, split: dict[str, Any]
) -> None:
    recs = records(20000, seed=5)
    with tfr.ShardedWriter(
        tmp_path / "train", compression=compression, write_index=True, seekable=True, **split
    ) as w:
        for r in recs:
            w.write(r)
    if "num_shards" in split:
        expected = [recs[k::3] for k in range(3)]
    else:
        expected = [recs[k : k + 7000] for k in range(0, len(recs), 7000)]
    assert [list(tfr.tf_record_iterator(p, compression)) for p in w.paths] == expected
    _no_pass(monkeypatch)
    for path, index, want in zip(w.paths, w.index_paths, expected):
        found = kinds(index)
        assert found[0] == _gzindex.START and found.count(_gzindex.FLUSH) >= 4, found
        assert set(found[1:]) == {_gzindex.FLUSH}
        with tfr.TFRecordFile(path) as f:
            assert len(f) == len(want)
            for i in np.random.default_rng(2).permutation(len(want))[:150].tolist():
                f._gz.drop()  # type: ignore[union-attr]
                assert f[i] == want[i]
            assert list(f) == want


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_a_seekable_shard_index_is_tied_to_its_shard(tmp_path: Path, compression: str) -> None:
    with tfr.ShardedWriter(
        tmp_path / "s", num_shards=1, compression=compression, write_index=True, seekable=True
    ) as w:
        w.write_all(records(8000, seed=6))
    path = w.paths[0]
    blob = bytearray(Path(path).read_bytes())
    blob[-20] ^= 0xFF  # same size, another tail
    Path(path).write_bytes(bytes(blob))
    with pytest.raises(tfr.StaleIndexError, match="hash"):
        tfr.TFRecordFile(path)


def test_shards_that_are_not_seekable_keep_the_text_index(tmp_path: Path) -> None:
    with tfr.ShardedWriter(tmp_path / "t", num_shards=1, compression="GZIP", write_index=True) as w:
        w.write_all(records(8000, seed=7))
    assert not Path(w.index_paths[0]).read_bytes().startswith(_gzindex.MAGIC)
    with tfr.ShardedWriter(tmp_path / "p", num_shards=1, write_index=True, seekable=True) as w:
        w.write_all(records(100))  # plain: nothing to flush, the text index
    assert Path(w.index_paths[0]).read_text().startswith("0 ")
    assert list(tfr.TFRecordFile(w.paths[0])) == records(100)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_seekable_shards_without_an_index_are_flushed(tmp_path: Path, compression: str) -> None:
    recs = records(12000, seed=8)
    with tfr.ShardedWriter(
        tmp_path / "n", records_per_shard=6000, compression=compression, seekable=True
    ) as w:
        w.write_all(recs)
    assert w.index_paths == []
    for path in w.paths:
        assert kinds(tfr.create_index(path, spacing=512 * 1024)).count(_gzindex.FLUSH) >= 3


def test_seekable_is_a_bool_or_a_spacing(tmp_path: Path) -> None:
    for bad, error in (("yes", TypeError), (1.5, TypeError), (1, ValueError), (4095, ValueError)):
        with pytest.raises(error, match="seekable"):
            tfr.ShardedWriter(tmp_path / "x", 2, seekable=bad)  # type: ignore[arg-type]
        with pytest.raises(error, match="seekable"):
            tfr.TFRecordWriter(tmp_path / "y", "GZIP", seekable=bad)  # type: ignore[arg-type]
        with pytest.raises(error, match="seekable"):
            tfr.write_examples(tmp_path / "z", {"a": [1]}, seekable=bad)  # type: ignore[arg-type]
    assert not list(tmp_path.iterdir())


def gaps(index: str) -> list[int]:
    outs = [p.out for p in _gzindex.decode(Path(index).read_bytes()).points]
    return [b - a for a, b in zip(outs, outs[1:])]


@pytest.mark.parametrize("how", ["write", "write_all", "write_examples"])
def test_seekable_takes_the_bytes_between_flush_points(tmp_path: Path, how: str) -> None:
    spacing = 16 * 1024
    recs = records(6000, seed=10)
    path = tmp_path / "s.gz"
    if how == "write_examples":
        tfr.write_examples(path, {"r": recs}, compression="GZIP", seekable=spacing)
    else:
        with tfr.TFRecordWriter(path, "GZIP", seekable=spacing) as w:
            if how == "write":
                for r in recs:
                    w.write(r)
            else:
                w.write_all(recs)
    written = list(tfr.tf_record_iterator(str(path)))
    assert len(written) == 6000 and (how == "write_examples" or written == recs)
    index = tfr.create_index(path, spacing=1)
    found = gaps(index)
    total = sum(len(r) + 16 for r in written)
    assert kinds(index).count(_gzindex.FLUSH) >= total // (spacing + 600) - 1
    assert max(found) < spacing + 600  # a record is under 600 bytes
    with tfr.TFRecordFile(path) as f:
        for i in np.random.default_rng(3).permutation(len(f))[:100].tolist():
            f._gz.drop()  # type: ignore[union-attr]
            assert f[i] == written[i]


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_sharded_seekable_spacing_gives_the_index_its_points(
    tmp_path: Path, compression: str
) -> None:
    recs = records(8000, seed=11)
    with tfr.ShardedWriter(
        tmp_path / "c", 2, compression=compression, write_index=True, seekable=8192
    ) as w:
        w.write_all(recs)
    for k, (path, index) in enumerate(zip(w.paths, w.index_paths)):
        found = gaps(index)
        assert len(found) >= 50 and all(8192 <= g < 8192 + 1024 for g in found[:-1]), found
        with tfr.TFRecordFile(path) as f:
            assert f[::-1] == recs[k::2][::-1]


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_write_examples_seekable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str
) -> None:
    from tfrecord_lite._examples import _column_files as _columns

    monkeypatch.setattr(_columns, "WRITE_CHUNK_BYTES", 64 * 1024)
    monkeypatch.setenv("TFRECORD_LITE_DEFLATE_BACKEND", "zlib")
    rng = np.random.default_rng(9)
    columns = {
        "id": np.arange(6000, dtype=np.int64),
        "vec": rng.integers(0, 1000, (6000, 40)).astype(np.int64),
        "name": [b"row %d" % i for i in range(6000)],
    }
    found = {}
    for seekable in (False, True):
        path = tmp_path / f"{seekable}.tfr"
        assert tfr.write_examples(path, columns, compression=compression, seekable=seekable) == 6000
        back = tfr.read_examples(path)
        assert (back["id"] == columns["id"]).all() and (back["vec"] == columns["vec"]).all()
        found[seekable] = kinds(tfr.create_index(path, spacing=256 * 1024))
    assert found[True].count(_gzindex.FLUSH) >= 3 and _gzindex.BLOCK not in found[True]
    assert _gzindex.FLUSH not in found[False]


def test_a_read_near_its_seek_point_reads_little_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recs = records(20000, seed=12)
    with tfr.ShardedWriter(
        tmp_path / "n", 1, compression="GZIP", write_index=True, seekable=8192
    ) as w:
        w.write_all(recs)
    asked: list[int] = []
    real = tfr.TFRecordFile._pread

    def counting(f: tfr.TFRecordFile, start: int, n: int) -> bytes:
        asked.append(n)
        return real(f, start, n)

    monkeypatch.setattr(tfr.TFRecordFile, "_pread", counting)
    with tfr.TFRecordFile(w.paths[0]) as f:
        for i in np.random.default_rng(4).permutation(len(recs))[:50].tolist():
            f._gz.drop()  # type: ignore[union-attr]
            asked.clear()
            assert f[i] == recs[i]
            assert sum(asked) <= 48 * 1024, asked  # not 256 KiB a read


@pytest.mark.parametrize("split", [{"num_shards": 2}, {"records_per_shard": 3000}])
def test_seekable_shards_on_an_object_store_are_read_at_random(split: dict[str, Any]) -> None:
    pytest.importorskip("fsspec")
    recs = records(6000, seed=13)
    prefix = f"memory://tfrecord-lite-tests/seekable-{len(split)}-{next(iter(split))}/train"
    with tfr.ShardedWriter(
        prefix, compression="GZIP", write_index=True, seekable=True, **split
    ) as w:
        w.write_all(recs)
    expected = [recs[0::2], recs[1::2]] if "num_shards" in split else [recs[:3000], recs[3000:]]
    for path, index, want in zip(w.paths, w.index_paths, expected):
        with tfr.TFRecordFile(path) as f:  # a remote compressed file: only with its index
            assert f.index_path == index and len(f) == len(want)
            assert f[[len(want) - 1, 0, 1234]] == [want[-1], want[0], want[1234]]


def test_framed_chunks_are_cut_where_flush_points_fall(tmp_path: Path) -> None:
    """write_examples hands the writer whole chunks of framed records: a chunk longer
    than the spacing is cut at the record boundaries where its flush points fall."""
    from tfrecord_lite._record import FramedRecords

    recs = records(30000, seed=14)
    framed = tfr.encode_records(recs)
    spacing = 1 << 20
    assert len(framed) > 3 * spacing
    path = tmp_path / "framed.gz"
    with tfr.TFRecordWriter(path, "GZIP", seekable=spacing) as w:
        assert w.write_all(FramedRecords(framed, len(recs))) == len(recs)
        assert w.records_written == len(recs)
    assert list(tfr.tf_record_iterator(str(path))) == recs
    index = tfr.create_index(path, spacing=spacing // 2)
    assert kinds(index).count(_gzindex.FLUSH) >= len(framed) // (spacing + 600) - 1
    assert max(gaps(index)) < spacing + 600
