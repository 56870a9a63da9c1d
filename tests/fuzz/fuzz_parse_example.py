"""atheris target: parse_example / parse_single_example on arbitrary records.

Checked: only ParseError / ValueError / TypeError, and the vectorized fast path
gives exactly the generic path's result (or the same error class) on every input.
"""

from __future__ import annotations

import sys

import _leakfix
import atheris

with atheris.instrument_imports(include=["tfrecord_lite"]):
    import _common

    import tfrecord_lite as tfr


def TestOneInput(data: bytes) -> None:
    selector, flags, records = _common.split(data)
    spec = _common.EXAMPLE_SPECS[selector % len(_common.EXAMPLE_SPECS)]
    batch = _common.batch_of(records, flags)
    _common.fast_and_generic(lambda: tfr.parse_example(batch, spec))
    _common.fast_and_generic(lambda: tfr.parse_single_example(records[0], spec))


if __name__ == "__main__":
    atheris.Setup(sys.argv, _leakfix.guarded(TestOneInput))
    atheris.Fuzz()
