"""The base of the TFDS feature connectors: what a connector is, and how it is stored.

TFDS stores one ``tf.train.Example`` per example. A connector tree (``FeaturesDict``
of ``Image``, ``ClassLabel``, ``Sequence`` ...) is flattened into "tensor infos":
leaves with a serialized shape, dtype and *sequence rank* (how many ``Sequence``
wrap them), keyed by their path joined with ``/``. This module holds
:class:`FeatureConnector` (the base the connector classes share, mirroring
``tfds.features.FeatureConnector``), :class:`TensorInfo`, the dtype and shape
readers of ``features.json`` (untrusted: checked) and the error for a connector we
cannot decode. The connectors are in ``_tensor_features`` (tensors, scalars, class
labels, text, boxes, audio), ``_image_features`` and ``_sequence_features``
(dicts, sequences, videos); ``_features_json`` builds a tree from ``features.json``,
``_decoder`` decodes records with it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Optional

import numpy as np

MAX_RANK = 32


Shape = tuple[Optional[int], ...]


class UnsupportedFeatureError(NotImplementedError):
    """``features.json`` uses a TFDS feature connector that tfrecord_lite cannot decode."""


_DTYPES: dict[str, Any] = {
    "bool": np.bool_,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "string": np.object_,
    "str": np.object_,
    "object": np.object_,
}


def _dtype(name: Any, where: str) -> np.dtype[Any]:
    if not isinstance(name, str) or name not in _DTYPES:
        raise UnsupportedFeatureError(
            f"{where}: dtype {name!r} is not supported (supported: {', '.join(sorted(_DTYPES))})"
        )
    dt: np.dtype[Any] = np.dtype(_DTYPES[name])
    return dt


def _dtype_name(dtype: np.dtype[Any]) -> str:
    return "string" if dtype == np.object_ else dtype.name


def _wire(dtype: np.dtype[Any], where: str) -> str:
    """The tf.train.Example kind TFDS stores a dtype as."""
    if dtype == np.object_:
        return "string"
    if dtype.kind in "biu":
        return "int64"
    if dtype.kind == "f":
        return "float32"
    raise UnsupportedFeatureError(f"{where}: dtype {dtype} cannot be stored in a tf.train.Example")


def _shape(value: Any, where: str) -> Shape:
    """A ``{"dimensions": ["-1", "28"]}`` shape proto as JSON -> ``(None, 28)``."""
    if value is None:
        return ()
    if isinstance(value, Mapping):
        dims = value.get("dimensions", [])
    elif isinstance(value, (list, tuple)):
        dims = value
    else:
        raise ValueError(f"{where}: bad shape {value!r}")
    if not isinstance(dims, (list, tuple)) or len(dims) > MAX_RANK:
        raise ValueError(f"{where}: bad shape {value!r}")
    out: list[Optional[int]] = []
    for d in dims:
        try:
            n = int(d) if d is not None else -1
        except (TypeError, ValueError):
            raise ValueError(f"{where}: bad dimension {d!r} in shape {value!r}") from None
        if n < -1 or n > 1 << 40:
            raise ValueError(f"{where}: bad dimension {d!r} in shape {value!r}")
        out.append(None if n == -1 else n)
    return tuple(out)


def _shape_str(shape: Shape) -> str:
    inner = ", ".join("None" if d is None else str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


# --------------------------------------------------------------------------- tensor infos


class TensorInfo:
    """One serialized leaf: its shape (with ``None``), dtype and sequence rank."""

    __slots__ = ("dtype", "sequence_rank", "shape")

    def __init__(self, shape: Shape, dtype: np.dtype[Any], sequence_rank: int = 0) -> None:
        self.shape = shape
        self.dtype = dtype
        self.sequence_rank = sequence_rank

    def with_length(self, length: Optional[int]) -> TensorInfo:
        return TensorInfo((length, *self.shape), self.dtype, self.sequence_rank + 1)

    def __repr__(self) -> str:
        return f"TensorInfo(shape={_shape_str(self.shape)}, dtype={_dtype_name(self.dtype)})"


# --------------------------------------------------------------------------- connectors


class FeatureConnector:
    """Base of the connectors (mirrors ``tfds.features.FeatureConnector``)."""

    #: The ``pythonClassName`` TFDS writes for this connector.
    tfds_class = ""

    @property
    def shape(self) -> Any:
        """The decoded shape (``None`` for unknown dimensions); a dict for FeaturesDict."""
        raise NotImplementedError

    @property
    def dtype(self) -> Any:
        """The decoded NumPy dtype (``object`` for strings); a dict for FeaturesDict."""
        raise NotImplementedError

    # Internal protocol: a leaf connector has one serialized TensorInfo (or a dict of them
    # for dynamically shaped tensors) and decodes one value; containers override these.
    def serialized_info(self) -> Any:
        """How the value is stored in the Example: a ``TensorInfo`` (or a dict of them)."""
        raise NotImplementedError

    def decode(self, value: Any) -> Any:
        """Decode one serialized value (sequence rank 0)."""
        return value

    #: Whether :meth:`decode` changes its input (False: sequences skip the per-item map).
    needs_decoding = False

    def leaves(self, prefix: str) -> Iterator[tuple[str, FeatureConnector, Any]]:
        """``(key, leaf connector, serialized info)`` for every leaf, with ``/``-joined keys."""
        yield prefix, self, self.serialized_info()

    def load_metadata(self, data_dir: str, name: str) -> None:
        """Read what TFDS saved beside ``features.json`` (class names)."""

    def _repr_args(self) -> str:
        return f"shape={_shape_str(self.shape)}, dtype={_dtype_name(self.dtype)}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._repr_args()})"


class LeafConnector(FeatureConnector):
    """A connector of one decoded array of a given shape and dtype (tensors, images)."""

    _shape: Shape
    _dtype: np.dtype[Any]

    @property
    def shape(self) -> Shape:
        """The decoded shape (``None`` for unknown dimensions)."""
        return self._shape

    @property
    def dtype(self) -> np.dtype[Any]:
        """The decoded NumPy dtype."""
        return self._dtype
