"""GZIP/ZLIB bombs through every path that inflates: refused in bounded memory and time.

A bomb here is a small compressed file holding one record header that claims 8 GiB,
followed by a long run of deflated zeros. The Python readers refuse it with
``RecordTooLargeError`` once :data:`~tfrecord_lite._files._stream.DEFAULT_MAX_COMPRESSED_RECORD`
bytes of the record are inflated; the CLI (which reads through ``salvage``), index
creation and random access must stop the same way: each command runs in a
subprocess whose address space is capped (``RLIMIT_AS``), under a timeout.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._record._format import record_header

#: The address-space cap of the CLI subprocesses.
RSS_CAP = 1 << 30
#: What the bomb's header claims.
CLAIM = 8 << 30


def _deflated_zeros(mib: int) -> list[bytes]:
    """``mib`` MiB of zeros as raw deflate blocks: one fully flushed 1 MiB segment,
    repeated (each segment stands alone, so the copies form one valid stream)."""
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    segment = z.compress(bytes(1 << 20)) + z.flush(zlib.Z_FULL_FLUSH)
    return [segment] * mib


def bomb(path: Path, compression: str, zeros_mib: int = 1024) -> Path:
    """Write a bomb: a header claiming :data:`CLAIM` bytes, then ``zeros_mib`` MiB of zeros
    (about 1 KB of file per MiB), as a GZIP or ZLIB stream with no end (it is cut there:
    no reader gets that far)."""
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = z.compress(record_header(CLAIM)) + z.flush(zlib.Z_FULL_FLUSH)
    head = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" if compression == "GZIP" else b"\x78\xda"
    with open(path, "wb") as f:
        f.write(head + first)
        for piece in _deflated_zeros(zeros_mib):
            f.write(piece)
    return path


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (RSS_CAP, RSS_CAP))


#: Runs the CLI in-process and reports its peak RSS (KiB) on the last stderr line.
_WRAPPER = """
import resource, sys
from tfrecord_lite._cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
except MemoryError:
    code = 99
sys.stderr.write("\\nmaxrss_kib=%d\\n" % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(code if isinstance(code, int) else 1)
"""


def _cli(*args: str) -> tuple[subprocess.CompletedProcess[str], float, int]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8", TFRECORD_LITE_PROGRESS="0")
    start = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        preexec_fn=_limit_memory,
    )
    took = time.monotonic() - start
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("maxrss_kib=")]
    rss = int(lines[-1].split("=")[1]) * 1024 if lines else -1
    return out, took, rss


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
@pytest.mark.parametrize("command", ["count", "info", "verify", "head", "schema"])
def test_the_cli_refuses_a_bomb_in_bounded_memory_and_time(
    tmp_path: Path, compression: str, command: str
) -> None:
    path = bomb(tmp_path / f"bomb.{compression.lower()}", compression)
    assert path.stat().st_size < 2 << 20  # ~1 MB that inflates past 1 GiB
    out, took, rss = _cli(command, str(path))
    text = out.stdout + out.stderr
    assert out.returncode not in (0, 99, -9), text  # not ok, not out of memory, not killed
    assert "MemoryError" not in text and "Traceback" not in text, text
    assert "too large" in text and "8589934592" in text, text
    assert took < 20, took
    # The record's bytes up to the bound (256 MiB), an inflated chunk, the interpreter.
    assert 0 < rss < 600 << 20, rss
    print(f"{command} {compression}: {took:.1f} s, peak RSS {rss / 2**20:.0f} MiB")


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_index_creation_and_random_access_refuse_a_bomb(tmp_path: Path, compression: str) -> None:
    path = bomb(tmp_path / "bomb", compression, zeros_mib=300)
    with pytest.raises(tfr.RecordTooLargeError) as info:
        tfr.create_index(path)
    assert info.value.length == CLAIM and info.value.path == str(path)
    with pytest.raises(tfr.RecordTooLargeError):
        tfr.TFRecordFile(path, decompress=True)
    assert not (tmp_path / "bomb.index").exists()


def test_salvage_bounds_one_record_whatever_the_stream_size() -> None:
    """``salvage`` holds at most ``max_buffered`` bytes of one record, with or without a
    ``stream_size``, and ends the stream there (the chunks after it are not pulled)."""
    from tfrecord_lite._files._salvage import Damage, Record, salvage

    pulled: list[int] = []

    def chunks() -> Iterator[bytes]:
        yield tfr.encode_record(b"before")
        yield record_header(CLAIM)
        for i in range(64):
            pulled.append(i)
            yield bytes(1 << 20)

    for size in (None, CLAIM + 100):
        pulled.clear()
        items = list(salvage(chunks(), stream_size=size, max_buffered=4 << 20))
        assert isinstance(items[0], Record) and items[0].data == b"before"
        last = items[-1]
        assert isinstance(last, Damage) and last.resume is None
        assert isinstance(last.error, tfr.RecordTooLargeError) and last.error.length == CLAIM
        assert len(pulled) < 8  # stopped once the bound was crossed
