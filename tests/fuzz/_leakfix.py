"""Work around a memory leak in atheris' comparison hook (seen with atheris 3.0.0).

Instrumented code calls ``atheris._trace_cmp(a, b, op, counter, is_const)`` for
every comparison. When the result is not a bool (a NumPy comparison returns an
array, and tfrecord_lite's block scanner and resynchroniser compare arrays all the
time), the native hook leaks it: ~200 bytes per comparison, gigabytes per fuzz
run. With :func:`guarded`, comparisons of plain scalars (the ones libFuzzer learns
from) still go to the native hook and anything else is compared in Python.
``atheris.Fuzz()`` rebinds the hook when it starts, so the guard reinstalls it
from inside the fuzzed function.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import atheris

try:
    from atheris.version_dependent import CMP_OP_SHIFT_AMOUNT
except ImportError:  # pragma: no cover - other atheris layouts
    CMP_OP_SHIFT_AMOUNT = 0

_SCALARS = frozenset({int, float, str, bytes, bool, type(None)})
_OPS = (operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge)


def _make(native: Callable[..., Any]) -> Callable[..., Any]:
    def trace_cmp(obj1: Any, obj2: Any, opid: int, counter: int, is_const: bool) -> Any:
        if type(obj1) in _SCALARS and type(obj2) in _SCALARS:
            return native(obj1, obj2, opid, counter, is_const)
        return _OPS[opid if opid < len(_OPS) else opid >> CMP_OP_SHIFT_AMOUNT](obj1, obj2)

    trace_cmp.native = native  # type: ignore[attr-defined]
    return trace_cmp


def install() -> None:
    """Wrap the current ``atheris._trace_cmp`` (again, if something rebound it)."""
    if not hasattr(atheris._trace_cmp, "native"):
        atheris._trace_cmp = _make(atheris._trace_cmp)


def guarded(test_one_input: Callable[[bytes], None]) -> Callable[[bytes], None]:
    """``test_one_input`` with the comparison hook guarded on every call."""

    def run(data: bytes) -> None:
        install()
        test_one_input(data)

    return run
