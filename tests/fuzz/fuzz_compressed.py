"""atheris target: reading GZIP / ZLIB / auto-detected files (read_records).

Byte 0 picks the compression and the read size; the rest is the file. Checked:
only DataLossError, and only with on_error="raise"; "stop" returns what "raise"
returns before its error, "skip" starts with it; every returned record is bytes.
"""

from __future__ import annotations

import io
import sys
from typing import Optional

import _leakfix
import atheris

with atheris.instrument_imports(include=["tfrecord_lite"]):
    import tfrecord_lite as tfr

COMPRESSIONS = ("GZIP", "ZLIB", "auto", "")


def read(blob: bytes, compression: str, mode: str, size: int) -> tuple[list[bytes], Optional[str]]:
    out: list[bytes] = []
    reports: list[tfr.SkipReport] = []
    try:
        for r in tfr.read_records(
            io.BytesIO(blob),
            compression,
            on_error=mode,
            on_skip=reports.append,
            buffer_size=size,
            max_record_size=1 << 20,
        ):
            assert type(r) is bytes
            out.append(r)
    except tfr.DataLossError as err:
        if mode != "raise":
            raise AssertionError(f"{mode} raised {err!r}") from None
        return out, type(err).__name__
    if mode == "stop":
        assert len(reports) <= 1
    return out, None


def TestOneInput(data: bytes) -> None:
    if not data:
        return
    compression = COMPRESSIONS[data[0] % 4]
    size = (1, 7, 64, 4096)[(data[0] >> 2) % 4]
    blob = data[1:]
    raised, _err = read(blob, compression, "raise", size)
    stopped, _ = read(blob, compression, "stop", size)
    assert stopped == raised
    skipped, _ = read(blob, compression, "skip", size)
    assert skipped[: len(raised)] == raised


if __name__ == "__main__":
    atheris.Setup(sys.argv, _leakfix.guarded(TestOneInput))
    atheris.Fuzz()
