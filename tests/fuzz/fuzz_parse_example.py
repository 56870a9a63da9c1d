"""atheris target: parse_example / parse_single_example on arbitrary records.

Checked: only ParseError / ValueError / TypeError, the vectorized fast path
gives exactly the generic path's result (or the same error class) on every input,
and chunked batch parsing (``parse_batches``, several batches extracted at once)
gives exactly one ``parse_example`` per batch, up to and including the first error.
"""

from __future__ import annotations

import sys
from typing import Any

import _leakfix
import atheris

with atheris.instrument_imports(include=["tfrecord_lite"]):
    import _common

    import tfrecord_lite as tfr
    from tfrecord_lite._examples import _batches as _stream


def TestOneInput(data: bytes) -> None:
    selector, flags, records = _common.split(data)
    spec = _common.EXAMPLE_SPECS[selector % len(_common.EXAMPLE_SPECS)]
    batch = _common.batch_of(records, flags)
    _common.fast_and_generic(lambda: tfr.parse_example(batch, spec))
    _common.fast_and_generic(lambda: tfr.parse_single_example(records[0], spec))
    size = 1 + (flags >> 1) % 8
    batches = [batch[i : i + size] for i in range(0, len(batch), size)]
    chunked = _chunked(lambda: _stream.parse_batches(iter(batches), spec))
    one_by_one = _chunked(lambda: (tfr.parse_example(b, spec) for b in batches))
    if chunked != one_by_one:
        raise AssertionError(f"chunked batches disagree:\n{chunked!r}\n!=\n{one_by_one!r}")


def _chunked(make: Any) -> list[Any]:
    """Each batch's canonical result, then the first error's (class, message)."""
    out: list[Any] = []
    try:
        for parsed in make():
            out.append(_common.canon(parsed))
    except _common.ALLOWED as err:
        out.append((type(err).__name__, str(err)))
    return out


if __name__ == "__main__":
    atheris.Setup(sys.argv, _leakfix.guarded(TestOneInput))
    atheris.Fuzz()
