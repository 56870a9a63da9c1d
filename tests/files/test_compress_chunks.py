"""Chunked deflate over threads (``_deflate_parallel.ChunkedDeflate``) and the ``auto`` encoder ladder.

A chunked stream is checked byte for byte against the standard library's
inflater (``gzip.decompress`` / ``zlib.decompress`` verify CRC-32 + size and
Adler-32), with the declared window only, at every level, window size and flush;
its threads must be gone after close, discard and errors. TensorFlow reads the
same streams in tests/interop/test_compress_interop.py.
"""

from __future__ import annotations

import gc
import gzip
import os
import pathlib
import random
import subprocess
import sys
import threading
import zlib
from typing import Any

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files import _compress, _deflate_parallel

ENV = _compress.ENV_VAR
BACKENDS = _compress.available_deflate_backends()
CHUNKED = [b for b in BACKENDS if b != "zlib"]
needs_fast = pytest.mark.skipif(not CHUNKED, reason="no isal / zlib-ng in this venv")
THREAD = "tfrecord_lite-deflate"


def deflate_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(THREAD)]


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> int:
    """Many chunks from little data, and threads whatever the core count."""
    monkeypatch.setattr(_deflate_parallel, "DEFLATE_CHUNK", 5000)
    monkeypatch.setattr(_compress, "deflate_threads", lambda: 2)
    return 5000


def data_for(seed: int, n: int) -> bytes:
    """Compressible bytes with repeats near and far (matches cross chunk boundaries)."""
    rng = random.Random(seed)
    words = [bytes(rng.choice(b"abcdefghij") for _ in range(rng.randint(3, 12))) for _ in range(80)]
    parts = []
    size = 0
    while size < n:
        if rng.random() < 0.1:
            part = rng.randbytes(rng.randint(1, 300))
        else:
            part = b" ".join(rng.choice(words) for _ in range(rng.randint(1, 60)))
        parts.append(part)
        size += len(part)
    return b"".join(parts)[:n]


def inflate_exact(blob: bytes, wbits: int) -> bytes:
    """zlib's reading with exactly the declared window; the stream must end cleanly."""
    d = zlib.decompressobj(wbits)
    out = d.decompress(blob) + d.flush()
    assert d.eof and not d.unused_data
    return out


def chunked(backend: str, level: int, wbits: int, threads: int = 2) -> Any:
    mapped = 1 if backend == "isal" else level
    return _compress._chunked(backend, mapped, level, wbits, 9, 0, threads)


@needs_fast
@pytest.mark.parametrize("backend", CHUNKED)
@pytest.mark.parametrize("wbits", [31, 15, 25, 9, -15])
def test_chunked_stream_is_one_standard_stream(small_chunks: int, backend: str, wbits: int) -> None:
    data = data_for(1, 60_000)
    for level in (-1, 1, 6):
        if backend == "isal" and _compress.isal_level(level) is None:
            continue
        z = chunked(backend, level, wbits)
        # Uneven pieces: some smaller than a chunk, one of several chunks.
        cuts = [0, 7, 4000, 4001, 9000, 40_000, len(data)]
        blob = b"".join(z.compress(data[a:b]) for a, b in zip(cuts, cuts[1:])) + z.flush()
        assert inflate_exact(blob, wbits) == data, (level, wbits)
        if wbits > 15:
            assert gzip.decompress(blob) == data  # CRC-32 and size checked
        # zlib's header for the same options: TensorFlow's first bytes.
        ref = zlib.compressobj(level, zlib.DEFLATED, wbits, 9, 0)
        head = (ref.compress(b"") + ref.flush(zlib.Z_FULL_FLUSH))[
            : 10 if wbits > 15 else 2 if wbits > 0 else 0
        ]
        assert blob.startswith(head)
        assert not deflate_threads()  # Z_FINISH stopped them


@needs_fast
@pytest.mark.parametrize("backend", CHUNKED)
def test_chunked_flushes_make_everything_so_far_readable(small_chunks: int, backend: str) -> None:
    data = data_for(2, 40_000)
    z = chunked(backend, -1, 31)
    d = zlib.decompressobj(31)
    got = b""
    pos = 0
    for i, end in enumerate((3000, 3000, 17_000, 29_999, 40_000)):
        got += d.decompress(z.compress(data[pos:end]))
        pos = end
        mode = zlib.Z_FULL_FLUSH if i % 2 else zlib.Z_SYNC_FLUSH
        got += d.decompress(z.flush(mode))
        assert got == data[:end]  # a reader sees every byte written so far
        if mode == zlib.Z_FULL_FLUSH:
            # After a full flush the rest decodes without what came before.
            assert z._zdict == b""
    got += d.decompress(z.flush())
    assert got == data and d.eof
    assert z.flush() == b""  # finished: nothing more
    with pytest.raises(zlib.error):
        z.compress(b"more")


@needs_fast
@pytest.mark.parametrize("backend", CHUNKED)
def test_chunked_empty_and_tiny_streams(small_chunks: int, backend: str) -> None:
    for data in (b"", b"x", data_for(3, 4999)):
        for wbits in (31, 15):
            z = chunked(backend, -1, wbits)
            blob = z.compress(data) + z.flush()
            assert inflate_exact(blob, wbits) == data
    assert not deflate_threads()  # one chunk is deflated in the caller's thread


@needs_fast
def test_chunked_bounds_the_chunks_in_flight(
    small_chunks: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    z = chunked(CHUNKED[0], -1, 31)
    seen: list[int] = []
    submit = z._submit

    def counting(data: Any, mode: int) -> None:
        submit(data, mode)
        seen.append(len(z._running))

    monkeypatch.setattr(z, "_submit", counting)
    data = data_for(4, 200_000)
    blob = z.compress(data) + z.flush()  # one big buffer: cut into chunks
    assert gzip.decompress(blob) == data
    assert len(seen) >= 30
    assert max(seen) <= 2 * z.threads


@needs_fast
@pytest.mark.parametrize("backend", CHUNKED)
def test_writer_threads_stop_on_close_discard_and_errors(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, small_chunks: int, backend: str
) -> None:
    monkeypatch.setenv(ENV, backend)
    records = [data_for(i, 700) for i in range(600)]  # more than one output buffer
    path = tmp_path / "f.gz"

    with tfr.TFRecordWriter(path, "GZIP") as w:
        w.write_all(records)
        assert w._zobj.threads == 2
        assert deflate_threads()
    assert not deflate_threads()
    assert list(tfr.tf_record_iterator(path)) == records
    assert gzip.decompress(path.read_bytes()) == tfr.encode_records(records)

    # An atomic writer left by an exception: nothing at the path, no thread left.
    target = tmp_path / "atomic.gz"
    with pytest.raises(KeyboardInterrupt), tfr.TFRecordWriter(target, "GZIP", atomic=True) as w:
        w.write_all(records)
        assert deflate_threads()
        raise KeyboardInterrupt
    assert not target.exists()
    assert not deflate_threads()

    # A writer dropped without close() finishes its stream and stops its threads.
    w = tfr.TFRecordWriter(tmp_path / "dropped.gz", "GZIP")
    w.write_all(records)
    del w
    gc.collect()
    assert not deflate_threads()
    assert list(tfr.tf_record_iterator(tmp_path / "dropped.gz")) == records


@needs_fast
def test_writer_flush_with_threads(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, small_chunks: int
) -> None:
    path = tmp_path / "f.gz"
    records = [data_for(i, 900) for i in range(120)]
    with tfr.TFRecordWriter(path, "GZIP") as w:
        for i in range(0, 120, 40):
            w.write_all(records[i : i + 40])
            w.flush()
            # Another reader sees every record so far (the stream is not finished).
            d = zlib.decompressobj(31)
            seen = d.decompress(path.read_bytes())
            assert list(tfr.iter_records(seen)) == records[: i + 40]
    assert list(tfr.tf_record_iterator(path)) == records


def test_single_core_writes_one_stream(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_compress, "deflate_threads", lambda: 1)
    for name in ("auto", *BACKENDS):
        monkeypatch.setenv(ENV, name)
        z, _ = _compress.compressobj(-1, 31, 9, 0)
        blob = z.compress(b"abc" * 1000) + z.flush()
        assert not isinstance(getattr(z, "_z", z), _deflate_parallel.ChunkedDeflate)
        assert gzip.decompress(blob) == b"abc" * 1000


def test_zlib_by_name_and_per_record_flushes_are_never_chunked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_compress, "deflate_threads", lambda: 4)
    monkeypatch.setenv(ENV, "zlib")
    z, name = _compress.compressobj(-1, 31, 9, 0)
    assert name == "zlib" and not isinstance(z, _deflate_parallel.ChunkedDeflate)
    for backend in CHUNKED:
        monkeypatch.setenv(ENV, backend)
        z, _ = _compress.compressobj(-1, 31, 9, 0, zlib.Z_SYNC_FLUSH)
        assert not isinstance(z, _deflate_parallel.ChunkedDeflate)
        z, _ = _compress.compressobj(-1, 31, 9, 0)
        assert isinstance(z, _deflate_parallel.ChunkedDeflate)


# --------------------------------------------------------------------------- the auto ladder


def test_ladder() -> None:
    ladder = _compress._ladder
    expected = (["isal"] if "isal" in BACKENDS else []) + (
        ["zlib-ng", "zlib-ng"] if "zlib-ng" in BACKENDS else []
    )
    assert [b for b, _ in ladder(-1, 9, 0, zlib.Z_NO_FLUSH)] == expected
    if "zlib-ng" in BACKENDS:
        assert ("zlib-ng", 4) in ladder(6, 9, 0, zlib.Z_NO_FLUSH)
        assert ("zlib-ng", 5) in ladder(-1, 9, 0, zlib.Z_NO_FLUSH)
        assert [lv for b, lv in ladder(2, 9, 0, zlib.Z_NO_FLUSH) if b == "zlib-ng"] == [1]
    assert ladder(9, 9, 0, zlib.Z_NO_FLUSH) == []  # the smallest output was asked for
    assert ladder(0, 9, 0, zlib.Z_NO_FLUSH) == []  # store only
    assert ladder(-1, 8, 0, zlib.Z_NO_FLUSH) == []
    assert ladder(-1, 9, zlib.Z_FILTERED, zlib.Z_NO_FLUSH) == []
    assert ladder(-1, 9, 0, zlib.Z_PARTIAL_FLUSH) == []


@needs_fast
@pytest.mark.parametrize("wbits", [31, 15])
def test_auto_keeps_the_fastest_encoder_within_tolerance(
    monkeypatch: pytest.MonkeyPatch, wbits: int
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    rng = random.Random(5)
    samples = {
        "repetitive": data_for(6, 3 * _compress.TRIAL_BYTES),
        "noise": rng.randbytes(3 * _compress.TRIAL_BYTES),
        "text": tfr.encode_records([data_for(i, 300) for i in range(1500)]),
    }
    for label, data in samples.items():
        for level in (-1, 1, 4, 6):
            sample = data[: _compress.TRIAL_BYTES]  # what the trial judges
            z, name = _compress.compressobj(level, wbits, 9, 0)
            assert name == "auto"
            blob = z.compress(data) + z.flush()
            assert inflate_exact(blob, wbits) == data
            # The kept encoder is the first of the ladder within tolerance on the sample.
            # (zlib.compress takes wbits from Python 3.11 only: a compressobj's raw deflate)
            limit = len(_compress._zlib_raw(sample, 6 if level == -1 else level, 15)) * 1.03
            fits = [
                (b, lv)
                for b, lv in _compress._ladder(level, 9, 0, zlib.Z_NO_FLUSH)
                if len(_compress._module(b).compress(sample, lv, -15)) <= limit
            ]
            kept = fits[0] if fits else (_compress._exact(), level)
            assert (z.backend, z.level) == kept, (label, level)
            # The whole stream stays within tolerance of zlib's at the level asked for.
            ref = zlib.compressobj(level, zlib.DEFLATED, wbits, 9, 0)
            assert len(blob) <= 1.03 * len(ref.compress(data) + ref.flush()) + 64, (label, level)


@needs_fast
def test_chunked_copies_a_buffer_the_caller_reuses(small_chunks: int) -> None:
    z = chunked(CHUNKED[0], -1, 31)
    buf = bytearray(data_for(9, 20_000))
    expected = bytes(buf)
    out = z.compress(buf)  # several chunks queued for the threads
    buf[:] = bytes(len(buf))  # reused at once, as a writer's caller may
    out += z.flush()
    assert gzip.decompress(out) == expected


@needs_fast
@pytest.mark.parametrize("backend", CHUNKED)
def test_a_writer_left_open_at_exit_finishes_its_stream(
    tmp_path: pathlib.Path, backend: str
) -> None:
    # The interpreter stops the threads before it drops the writer: its last chunks
    # are deflated in the exiting thread and the file still ends cleanly.
    out = tmp_path / "open.gz"
    script = f"""
import tfrecord_lite as tfr
records = [bytes([i % 7]) * 3000 + str(i).encode() for i in range(1500)]
w = tfr.TFRecordWriter({str(out)!r}, "GZIP")
w.write_all(records)
w.write_all(records)
print(type(getattr(w._zobj, "_z", w._zobj)).__name__)
"""
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env[ENV] = backend
    env["PYTHONPATH"] = str(pathlib.Path(__file__).resolve().parents[2])
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    if _compress.deflate_threads() > 1:
        assert run.stdout.strip() == "ChunkedDeflate"
    records = [bytes([i % 7]) * 3000 + str(i).encode() for i in range(1500)]
    assert gzip.decompress(out.read_bytes()) == tfr.encode_records(records * 2)
