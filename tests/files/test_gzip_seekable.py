"""Seekable by construction: ``TFRecordWriter(..., seekable=True)`` fully flushes the deflate
stream at record boundaries, and the index keeps no window for those seek points."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

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
