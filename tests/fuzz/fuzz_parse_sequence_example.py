"""atheris target: parse_sequence_example / parse_single_sequence_example.

Checked: only ParseError / ValueError / TypeError, the same with the fast path on and off.
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
    context, sequence = _common.SEQUENCE_SPECS[selector % len(_common.SEQUENCE_SPECS)]
    batch = _common.batch_of(records, flags)
    _common.fast_and_generic(lambda: tfr.parse_sequence_example(batch, context, sequence))
    _common.fast_and_generic(
        lambda: tfr.parse_single_sequence_example(records[0], context, sequence)
    )


if __name__ == "__main__":
    atheris.Setup(sys.argv, _leakfix.guarded(TestOneInput))
    atheris.Fuzz()
