"""The one-record route: ``parse_single_example`` without the batch machinery.

A batch parse pays a few NumPy calls per feature key whatever the batch size:
for one record (``parse_single_example``, a dataset's
``.map(lambda r: parse_single_example(r, spec))``) that was tens of microseconds
a record. Here one record is decoded by protobuf and each spec's output built
directly: ``FixedLenFeature`` (present with the right number of values, or
missing with a default) and ``VarLenFeature``, what tutorial and TFX specs hold.
Anything else — other spec kinds, a wrong kind or count, a required feature
missing, a record protobuf cannot decode — returns None, and the batch path
(:mod:`._parse`) parses the record as before, so results and errors are the
same (tests/examples/test_single.py compares both on random records).

:func:`cached_plan` keeps the compiled plans of the last few dict specs, keyed by
their contents (specs of ``FixedLenFeature`` / ``VarLenFeature`` with hashable
fields only), so a loop passing the same dict does not validate it per record.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any, Callable, Optional

import numpy as np
from google.protobuf.message import DecodeError

from .. import example_pb2
from ._assemble import ParsedValue
from ._floats import float_values
from ._schema import FixedLenFeature, VarLenFeature, float32, string
from ._values import SparseValue

__all__ = ["cached_plan", "parse_one"]

#: Dict specs whose compiled plans :func:`cached_plan` keeps (least recently used out).
PLAN_CACHE_SIZE = 32

_plans: OrderedDict[Hashable, Any] = OrderedDict()
_plans_lock = threading.Lock()
#: The dict last given, a copy of it, and its plan: a loop passing one dict skips the key.
_last: Optional[tuple[dict[str, Any], dict[str, Any], Any]] = None


def _spec_key(features: Mapping[str, Any]) -> Optional[Hashable]:
    """A key equal for equal specs (only ``FixedLenFeature`` / ``VarLenFeature``
    with hashable fields), else None."""
    items = []
    for name, spec in features.items():
        kind = type(spec)
        if kind is not FixedLenFeature and kind is not VarLenFeature:
            return None
        fields = tuple(tuple(f) if type(f) is list else f for f in spec)  # (shapes)
        items.append((name, kind, tuple(type(f) for f in spec), fields))
    key = tuple(items)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def cached_plan(features: Any, compile_plan: Callable[[Any], Any]) -> Any:
    """``compile_plan(features)``, reused for equal dict specs."""
    global _last
    if not isinstance(features, dict):
        return compile_plan(features)
    last = _last
    if last is not None and last[0] is features:
        try:
            if features == last[1]:  # (the same spec objects: compared by identity)
                return last[2]
        except (TypeError, ValueError):
            pass
    plan = _plan_by_key(features, compile_plan)
    _last = (features, dict(features), plan)
    return plan


def _plan_by_key(features: dict[str, Any], compile_plan: Callable[[Any], Any]) -> Any:
    key = _spec_key(features)
    if key is None:
        return compile_plan(features)
    with _plans_lock:
        plan = _plans.get(key)
        if plan is not None:
            _plans.move_to_end(key)
            return plan
    plan = compile_plan(features)
    with _plans_lock:
        _plans[key] = plan
        while len(_plans) > PLAN_CACHE_SIZE:
            _plans.popitem(last=False)
    return plan


def _positions(c: int) -> np.ndarray:
    return np.arange(c, dtype=np.int64).reshape(c, 1)


def _empty(spec: Any) -> np.ndarray:
    return np.empty(0, dtype=object if spec.dtype is string else spec.dtype.np_dtype)


def _array(values: Any, spec: Any, feature: Any) -> np.ndarray:
    if spec.dtype is string:
        out = np.empty(len(values), dtype=object)
        out[:] = list(values)
        return out
    if spec.dtype is float32:
        return float_values(feature.float_list)  # (NaN bits kept)
    return np.array(values, dtype=spec.dtype.np_dtype)


def parse_one(record: bytes, specs: Mapping[str, Any]) -> Optional[dict[str, ParsedValue]]:
    """``parse_single_example(record, specs)`` (validated specs), or None where the
    batch path must decide (see the module docstring)."""
    try:
        fmap = example_pb2.Example.FromString(record).features.feature
    except (DecodeError, RuntimeError, ValueError):
        return None
    out: dict[str, ParsedValue] = {}
    for name, spec in specs.items():
        feature = fmap.get(name)
        kind = None if feature is None else feature.WhichOneof("kind")
        if kind is not None and kind != spec.dtype.kind:
            return None
        if type(spec) is VarLenFeature:
            vals = getattr(feature, kind).value if kind is not None else ()
            c = len(vals)
            out[name] = SparseValue(
                np.zeros((c, 1), dtype=np.int64) if c < 2 else _positions(c),
                _array(vals, spec, feature) if c else _empty(spec),
                np.array([c], dtype=np.int64),
            )
        elif type(spec) is FixedLenFeature:
            shape = spec.shape
            size = math.prod(shape)
            if size == 0:
                return None
            if kind is None:
                if spec.default_value is None:
                    return None
                dense = np.empty((1, size), dtype=spec.dtype.np_dtype)
                dense[0] = np.asarray(spec.default_value).reshape(-1)
                out[name] = dense.reshape(shape)
                continue
            vals = getattr(feature, kind).value
            if len(vals) != size:
                return None
            if not shape and spec.dtype is not float32:  # a scalar: a 0-d array
                out[name] = np.array(vals[0], dtype=spec.dtype.np_dtype)
            else:
                out[name] = _array(vals, spec, feature).reshape(shape)
        else:
            return None
    return out
