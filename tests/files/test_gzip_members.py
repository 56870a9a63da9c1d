"""GZIP files of many small members: their output is handed on in chunks, not a member
at a time (a file of a million one-record members read 200 times slower than one member)."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files import _inflate


def blocks(blob: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(blob), size):
        yield blob[start : start + size]


@pytest.mark.parametrize("restartable", [False, True])
def test_small_members_come_out_joined(restartable: bool) -> None:
    recs = [b"r%05d" % i for i in range(5000)]
    blob = b"".join(gzip.compress(tfr.encode_record(r), mtime=0) for r in recs)
    restart = (lambda offset: blocks(blob[offset:], 1 << 16)) if restartable else None
    chunks = list(_inflate.inflate(blocks(blob, 1 << 16), "GZIP", None, restart, 4096))
    assert b"".join(chunks) == tfr.encode_records(recs)
    assert all(len(c) <= 4096 for c in chunks)
    # 5000 members of 22 bytes: about 27 chunks of 4 KiB, plus one per block read.
    assert len(chunks) < 5000 // 20, len(chunks)


def test_nothing_is_held_while_the_next_block_is_read() -> None:
    """A reader of a slow stream gets each block's records before the next block."""
    members = [gzip.compress(tfr.encode_record(b"x%d" % i), mtime=0) for i in range(3)]
    pulled: list[int] = []

    def source() -> Iterator[bytes]:
        for i, m in enumerate(members):
            pulled.append(i)
            yield m

    out = _inflate.inflate(source(), "GZIP", None)
    first = next(out)
    assert first == tfr.encode_record(b"x0") and pulled == [0]


def test_records_before_damage_are_still_handed_out() -> None:
    recs = [b"r%03d" % i for i in range(100)]
    good = b"".join(gzip.compress(tfr.encode_record(r), mtime=0) for r in recs)
    bad = bytearray(gzip.compress(b"y" * 1000, mtime=0))
    bad[12] ^= 0xFF
    got: list[bytes] = []
    with pytest.raises(tfr.CompressionError):
        for chunk in _inflate.inflate(iter([good + bytes(bad)]), "GZIP", None):
            got.append(chunk)
    assert b"".join(got).startswith(tfr.encode_records(recs))


def test_a_file_of_many_members_reads_every_record(tmp_path: Path) -> None:
    recs = [bytes([i % 256]) * (i % 50) for i in range(3000)]
    path = tmp_path / "m.gz"
    path.write_bytes(b"".join(gzip.compress(tfr.encode_record(r), mtime=0) for r in recs))
    assert list(tfr.tf_record_iterator(str(path))) == recs
    z = zlib.compressobj(6, zlib.DEFLATED, 15)
    (tmp_path / "one.zz").write_bytes(z.compress(tfr.encode_records(recs)) + z.flush())
    assert list(tfr.tf_record_iterator(str(tmp_path / "one.zz"))) == recs


def test_after_a_small_member_isal_gives_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """ISA-L's per-stream setup costs more than it saves on small members: the members
    after one under SMALL_MEMBER are inflated with zlib-ng or zlib (same bytes out)."""
    pytest.importorskip("isal")
    monkeypatch.setenv("TFRECORD_LITE_DEFLATE_BACKEND", "auto")
    made: list[str] = []
    real = _inflate._decompressobj

    def spy(backend: str, wbits: int) -> object:
        made.append(backend)
        return real(backend, wbits)

    monkeypatch.setattr(_inflate, "_decompressobj", spy)
    big = bytes(range(256)) * 1024  # 256 KiB: a member over the bound
    parts = [big, b"small", b"tiny", big, b"end"]
    blob = b"".join(gzip.compress(p, mtime=0) for p in parts)
    restart = lambda offset: blocks(blob[offset:], 1 << 16)  # noqa: E731
    out = b"".join(_inflate.inflate(blocks(blob, 1 << 16), "GZIP", None, restart))
    assert out == b"".join(parts)
    assert made[:2] == ["isal", "isal"] and "isal" not in made[2:], made
