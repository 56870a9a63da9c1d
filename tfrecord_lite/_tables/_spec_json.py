"""Feature specs as JSON text, for engines whose options are strings (Spark's data source).

``{"label": {"type": "FixedLenFeature", "shape": [], "dtype": "int64"}, "tokens":
{"type": "VarLenFeature", "dtype": "string"}}`` stands for ``{"label":
FixedLenFeature([], int64), "tokens": VarLenFeature(string)}``. ``FixedLenFeature``
(``shape``, ``dtype``, ``default_value``), ``VarLenFeature`` (``dtype``),
``FixedLenSequenceFeature`` (``shape``, ``dtype``, ``allow_missing``,
``default_value``) and ``RaggedFeature`` without partitions (``dtype``,
``value_key``) are written and read; the short form ``{"label": "int64"}`` is a
scalar ``FixedLenFeature`` and ``{"tokens": "string[]"}`` a ``VarLenFeature``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from .._examples import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    VarLenFeature,
    as_dtype,
    validate_features,
)


def _default(value: Any) -> Any:
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind in "SU":
        raise ValueError("a bytes default_value cannot be written as JSON")
    return arr.tolist()


def spec_to_json(spec: FeatureSpec) -> dict[str, Any]:
    """One spec as JSON-friendly data (see the module documentation)."""
    dtype = as_dtype(spec.dtype).name
    if isinstance(spec, FixedLenFeature):
        out: dict[str, Any] = {"type": "FixedLenFeature", "shape": list(spec.shape), "dtype": dtype}
        if spec.default_value is not None:
            out["default_value"] = _default(spec.default_value)
        return out
    if isinstance(spec, VarLenFeature):
        return {"type": "VarLenFeature", "dtype": dtype}
    if isinstance(spec, FixedLenSequenceFeature):
        out = {
            "type": "FixedLenSequenceFeature",
            "shape": list(spec.shape),
            "dtype": dtype,
            "allow_missing": bool(spec.allow_missing),
        }
        if spec.default_value is not None:
            out["default_value"] = _default(spec.default_value)
        return out
    if isinstance(spec, RaggedFeature) and not spec.partitions:
        out = {"type": "RaggedFeature", "dtype": dtype}
        if spec.value_key:
            out["value_key"] = spec.value_key
        return out
    raise ValueError(f"{spec!r} cannot be passed as a JSON feature spec")


def spec_from_json(key: str, data: Any) -> FeatureSpec:
    """The spec that :func:`spec_to_json` wrote (or its short form)."""
    if isinstance(data, str):
        if data.endswith("[]"):
            return VarLenFeature(as_dtype(data[:-2]))
        return FixedLenFeature([], as_dtype(data))
    if not isinstance(data, Mapping) or "type" not in data or "dtype" not in data:
        raise ValueError(
            f"feature {key!r}: expected a dtype name or an object with 'type' and 'dtype', "
            f"got {data!r}"
        )
    kind, dtype = data["type"], as_dtype(data["dtype"])
    if kind == "FixedLenFeature":
        return FixedLenFeature(data.get("shape", []), dtype, data.get("default_value"))
    if kind == "VarLenFeature":
        return VarLenFeature(dtype)
    if kind == "FixedLenSequenceFeature":
        return FixedLenSequenceFeature(
            data.get("shape", []),
            dtype,
            bool(data.get("allow_missing", False)),
            data.get("default_value"),
        )
    if kind == "RaggedFeature":
        return RaggedFeature(dtype, value_key=data.get("value_key"))
    raise ValueError(
        f"feature {key!r}: type {kind!r} is not one of FixedLenFeature, VarLenFeature, "
        "FixedLenSequenceFeature, RaggedFeature"
    )


def specs_to_json(features: Optional[Mapping[str, FeatureSpec]]) -> str:
    """A feature dict as JSON text."""
    specs = validate_features(features or {})
    return json.dumps({k: spec_to_json(v) for k, v in specs.items()})


def specs_from_json(
    text: Optional[str], what: str = "features"
) -> Optional[dict[str, FeatureSpec]]:
    """The feature dict of JSON text (``None`` for ``None`` or empty text)."""
    if text is None or not text.strip():
        return None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{what} is not valid JSON: {e}") from None
    if not isinstance(data, Mapping):
        raise ValueError(f"{what} must be a JSON object of feature specs, got {text!r}")
    return validate_features({k: spec_from_json(k, v) for k, v in data.items()}, what)
