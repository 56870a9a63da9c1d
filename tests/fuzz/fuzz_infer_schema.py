"""atheris target: infer_schema on arbitrary records, then parsing with the inferred schema.

Checked: only ParseError / ValueError / TypeError; a schema inferred from records
parses those same records (fast path and generic path agreeing).
"""

from __future__ import annotations

import sys

import _leakfix
import atheris

with atheris.instrument_imports(include=["tfrecord_lite"]):
    import _common

    import tfrecord_lite as tfr


def TestOneInput(data: bytes) -> None:
    _, flags, records = _common.split(data)
    try:
        schema = tfr.infer_schema(records)
    except _common.ALLOWED:
        return
    batch = _common.batch_of(records, flags)
    if schema.sequence_features:
        _common.fast_and_generic(
            lambda: tfr.parse_sequence_example(batch, dict(schema), schema.sequence_features)
        )
        return
    result = _common.fast_and_generic(lambda: tfr.parse_example(batch, dict(schema)))
    if result[0] != "ok":
        raise AssertionError(f"records do not parse with the schema inferred from them: {result}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, _leakfix.guarded(TestOneInput))
    atheris.Fuzz()
