"""atheris target: the framing decoder (RecordDecoder) in every on_error mode.

The input is a TFRecord stream. Checked on every input: only DataLossError is ever
raised (and only with on_error="raise"); the result does not depend on how the
stream is cut into chunks; "stop" returns what "raise" returns before its error;
"skip" starts with that too, returns only records framed intact in the input,
and accounts for every byte (records + skipped stretches == the stream).
"""

from __future__ import annotations

import sys
from typing import Any, Optional

import _leakfix
import atheris

with atheris.instrument_imports(include=["tfrecord_lite"]):
    import tfrecord_lite as tfr


def decode(
    data: bytes, chunk: int, mode: str, size: Optional[int]
) -> tuple[list[bytes], list[Any], Optional[str]]:
    d = tfr.RecordDecoder(on_error=mode, stream_size=size)
    out: list[bytes] = []
    try:
        for i in range(0, len(data), chunk):
            d.feed(data[i : i + chunk])
            while True:
                batch = d.records()
                if not batch:
                    break
                out += batch
        out += d.close()
    except tfr.DataLossError as err:
        if mode != "raise":
            raise AssertionError(f"{mode} raised {err!r}") from None
        return out, [], type(err).__name__
    reports = [(r.offset, r.length, r.reason, r.index, r.exact, r.to_end) for r in d.skipped]
    return out, reports, None


def TestOneInput(data: bytes) -> None:
    if not data:
        return
    chunk = 1 + data[0] % 37
    stream = data[1:]
    size = len(stream) if data[0] & 0x80 else None
    raised, _, err = decode(stream, len(stream) or 1, "raise", size)
    assert decode(stream, chunk, "raise", size)[::2] == (raised, err)
    stopped, stop_reports, _ = decode(stream, chunk, "stop", size)
    assert stopped == raised and len(stop_reports) == (1 if err else 0)
    skipped, reports, _ = decode(stream, len(stream) or 1, "skip", size)
    assert decode(stream, chunk, "skip", size)[:2] == (skipped, reports)
    assert skipped[: len(raised)] == raised
    for record in skipped:
        assert tfr.encode_record(record) in stream
    if all(r[1] is not None for r in reports):
        assert sum(len(r) + 16 for r in skipped) + sum(r[1] for r in reports) == len(stream)


if __name__ == "__main__":
    atheris.Setup(sys.argv, _leakfix.guarded(TestOneInput))
    atheris.Fuzz()
