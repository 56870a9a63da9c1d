"""Work around a memory leak in atheris' comparison hook (seen with atheris 3.0.0).

Instrumented code calls ``atheris._trace_cmp(a, b, op, counter, is_const)`` for
every comparison. When the result is not a bool (a NumPy comparison returns an
array, and tfrecord_lite's block scanner and resynchroniser compare arrays all the
time), the native hook leaks it: ~200 bytes per comparison, gigabytes per fuzz
run. Comparisons of plain scalars (the ones libFuzzer learns from) still go to
the native hook; anything else is compared here. Import before instrumenting.
"""

from __future__ import annotations

import operator
from typing import Any

import atheris

try:
    from atheris.version_dependent import CMP_OP_SHIFT_AMOUNT
except ImportError:  # pragma: no cover - other atheris layouts
    CMP_OP_SHIFT_AMOUNT = 0

_SCALARS = frozenset({int, float, str, bytes, bool, type(None)})
_OPS = (operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge)
_native = atheris._trace_cmp


def _trace_cmp(obj1: Any, obj2: Any, opid: int, counter: int, is_const: bool) -> Any:
    if type(obj1) in _SCALARS and type(obj2) in _SCALARS:
        return _native(obj1, obj2, opid, counter, is_const)
    return _OPS[opid if opid < len(_OPS) else opid >> CMP_OP_SHIFT_AMOUNT](obj1, obj2)


atheris._trace_cmp = _trace_cmp
