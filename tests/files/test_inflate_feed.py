"""How GZIP/ZLIB streams are fed to the inflater (``tfrecord_lite._files._inflate.inflate``).

Each inflate call gets about the compressed input that fills its output bound,
not a whole block read from the file: what the bound leaves unread comes back
from the inflater as a copy (``unconsumed_tail``), so feeding a whole block
copied most of it again on every call. These tests check that the input per
call stays bounded, and that the output, the bounds and the errors do not
depend on how the stream is cut into blocks and calls.
"""

from __future__ import annotations

import os
import random
import re
import zlib
from collections.abc import Iterator
from typing import Any, Optional

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files import _compress, _inflate

ENV = _compress.ENV_VAR
BACKENDS = _compress.available_deflate_backends()


def text(seed: int, size: int) -> bytes:
    """Compressible bytes (words from a small vocabulary): deflate shrinks them 3-5x."""
    rng = random.Random(seed)
    words = [bytes(rng.choice(b"abcdefghij") for _ in range(rng.randint(2, 8))) for _ in range(60)]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) + b" "
    return bytes(out[:size])


def deflate(data: bytes, compression: str, level: int = 6) -> bytes:
    z = zlib.compressobj(level, zlib.DEFLATED, 31 if compression == "GZIP" else 15)
    return z.compress(data) + z.flush()


def blocks(blob: bytes, size: int) -> Iterator[bytes]:
    return (blob[i : i + size] for i in range(0, len(blob), size))


def inflate_all(
    blob: bytes, compression: str, block: int, chunk: int
) -> tuple[list[bytes], Optional[str]]:
    """The pieces ``inflate`` hands out and the message of the error it ends with (if any)."""
    restart = lambda offset: blocks(blob[offset:], block)  # noqa: E731
    out: list[bytes] = []
    try:
        for piece in _inflate.inflate(blocks(blob, block), compression, None, restart, chunk):
            out.append(piece)
    except tfr.CompressionError as err:
        return out, str(err)
    except _inflate.StreamEnd:
        return out, "StreamEnd"
    return out, None


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(ENV, request.param)
    return str(request.param)


class _Spy:
    """A real inflater whose calls are recorded: input bytes, output bytes, input left unread."""

    def __init__(self, z: Any, calls: list[tuple[int, int, int]]) -> None:
        self._z = z
        self._calls = calls

    def decompress(self, data: Any, max_length: int = 0) -> bytes:
        out: bytes = self._z.decompress(data, max_length)
        left = len(self._z.unused_data) if self._z.eof else len(self._z.unconsumed_tail)
        self._calls.append((len(data), len(out), left))
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._z, name)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_each_call_gets_about_the_input_that_fills_its_bound(
    backend: str, compression: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = text(1, 3 * 2**20)
    blob = deflate(data, compression)
    assert len(blob) * 3 < len(data)  # compressible: a whole block inflates past the bound
    calls: list[tuple[int, int, int]] = []
    real = _inflate._decompressobj
    monkeypatch.setattr(
        _inflate, "_decompressobj", lambda name, wbits: _Spy(real(name, wbits), calls)
    )
    chunk = 256 * 1024
    out, error = inflate_all(blob, compression, 2**20, chunk)
    assert error is None
    assert b"".join(out) == data
    assert max(map(len, out)) <= chunk
    assert calls
    # No call gets more input than its output bound (the first a quarter of it) ...
    assert max(given for given, _, _ in calls) <= max(chunk, _inflate.INFLATE_FEED_MIN)
    # ... so the input left unread (copied by the inflater) stays a small part of the stream;
    # fed whole 1 MiB blocks, the calls leave several times the stream's size unread.
    assert sum(left for _, _, left in calls) < len(blob) // 2
    # The output still comes in pieces near the bound, not in small bits.
    assert len(calls) < 3 * len(data) // chunk


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_output_does_not_depend_on_blocks_or_bound(backend: str, compression: str) -> None:
    data = text(2, 300_000) + os.urandom(200_000) + text(3, 300_000)  # ratio changes midway
    blob = deflate(data, compression)
    for block in (777, 64 * 1024, len(blob)):
        for chunk in (1000, 64 * 1024, _inflate.INFLATE_CHUNK):
            out, error = inflate_all(blob, compression, block, chunk)
            assert error is None, (block, chunk)
            assert b"".join(out) == data, (block, chunk)
            assert max(map(len, out)) <= chunk


def test_concatenated_members_and_padding_whatever_the_cut(backend: str) -> None:
    parts = [text(4, 60_000), b"", os.urandom(20_000), text(5, 30_000)]
    members = [deflate(p, "GZIP") for p in parts]
    blob = b"".join(members) + bytes(100)  # zero padding after the last member (TF accepts it)
    data = b"".join(parts)
    for block in (1, 2, 3, 1000, len(members[0]), len(members[0]) + 1, len(blob)):
        for chunk in (5000, 256 * 1024):
            out, error = inflate_all(blob, "GZIP", block, chunk)
            assert error is None, (block, chunk)
            assert b"".join(out) == data, (block, chunk)


def test_damage_is_reported_at_the_same_byte_whatever_the_cut(backend: str) -> None:
    data = text(6, 1_500_000)
    blob = bytearray(deflate(data, "GZIP"))
    blob[len(blob) // 2] ^= 0x55
    damaged = bytes(blob)
    reports = set()
    outputs = set()
    for block in (4096, 300_000, 2**20, len(damaged)):
        for chunk in (10_000, 256 * 1024, _inflate.INFLATE_CHUNK):
            out, error = inflate_all(damaged, "GZIP", block, chunk)
            assert error is not None and "noticed at compressed byte" in error, error
            reports.add(re.sub(r"\s+", " ", error))
            outputs.add(b"".join(out))
    assert len(reports) == 1, reports  # one message, one offset
    assert len(outputs) == 1  # the same output before the damage
    (got,) = outputs
    # Everything before the damaged deflate block is handed out (the damaged block
    # itself may inflate to wrong bytes before the inflater notices).
    assert len(got) > len(data) // 4
    assert data[: len(data) // 4] == got[: len(data) // 4]


def test_truncated_stream_ends_after_all_its_output(backend: str) -> None:
    data = text(7, 800_000)
    blob = deflate(data, "GZIP")
    cut = blob[: len(blob) * 2 // 3]
    results = set()
    for block in (1000, 2**20):
        for chunk in (20_000, _inflate.INFLATE_CHUNK):
            out, error = inflate_all(cut, "GZIP", block, chunk)
            assert error == "StreamEnd"
            got = b"".join(out)
            assert data.startswith(got) and len(got) > len(data) // 2
            results.add(len(got))
    assert len(results) == 1


def test_deflate_bomb_stays_bounded_with_a_small_feed(backend: str) -> None:
    # Zeros inflate ~1000x: a call fed a quarter of its bound must still stop at the bound.
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    blob = b"".join(z.compress(bytes(2**20)) for _ in range(64)) + z.flush()
    biggest = total = 0
    chunk = 128 * 1024
    for piece in _inflate.inflate(
        iter([blob]), "GZIP", None, lambda offset: iter([blob[offset:]]), chunk
    ):
        biggest = max(biggest, len(piece))
        total += len(piece)
    assert total == 64 * 2**20
    assert biggest <= chunk


def test_records_read_through_the_file_reader_are_intact(
    backend: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(8)
    records = [text(rng.randrange(10**6), rng.randrange(0, 5000)) for _ in range(800)]
    path = tmp_path / "r.tfrecord.gz"
    with tfr.TFRecordWriter(str(path), "GZIP") as w:
        for r in records:
            w.write(r)
    for threads in ("1", "2"):
        monkeypatch.setenv(_compress.THREADS_ENV, threads)
        assert list(tfr.tf_record_iterator(str(path))) == records


def test_inline_reads_hand_out_read_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    # Inline (one core, or TFRECORD_LITE_THREADS=1) a reader gets READ_CHUNK pieces, not
    # INFLATE_CHUNK ones: smaller fresh buffers inflate faster (fewer page faults).
    monkeypatch.setenv(_compress.THREADS_ENV, "1")
    data = text(9, 3 * 2**20)
    blob = deflate(data, "GZIP")
    chunks = _inflate.inflate_ahead(
        blocks(blob, 2**20), "GZIP", None, lambda offset: blocks(blob[offset:], 2**20), len(blob)
    )
    assert not isinstance(chunks, _inflate.ReadAhead)
    sizes = [len(c) for c in chunks]
    assert sum(sizes) == len(data)
    assert max(sizes) == _inflate.READ_CHUNK < _inflate.INFLATE_CHUNK
