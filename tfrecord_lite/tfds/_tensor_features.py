"""The tensor-like TFDS connectors: ``Tensor`` (with ``encoding`` none / bytes / zlib),
``Scalar``, ``BBoxFeature``, ``ClassLabel`` (names from ``<feature>.labels.txt``),
``Text`` and ``Audio`` stored as samples.
"""

from __future__ import annotations

import os
import zlib
from typing import Any, Optional

import numpy as np

from .._errors import ParseError
from ._features import (
    LeafConnector,
    Shape,
    TensorInfo,
    UnsupportedFeatureError,
    _shape_str,
)
from ._paths import check_inside

MAX_DECODED_BYTES = 1 << 31


class Tensor(LeafConnector):
    """``tfds.features.Tensor``: any shape and dtype, ``encoding`` none / bytes / zlib."""

    tfds_class = "tensorflow_datasets.core.features.tensor_feature.Tensor"

    def __init__(self, *, shape: Shape, dtype: Any, encoding: str = "none") -> None:
        self._shape = tuple(shape)
        self._dtype: np.dtype[Any] = np.dtype(dtype)
        enc = str(encoding).lower()
        if enc not in ("none", "bytes", "zlib"):
            raise UnsupportedFeatureError(f"Tensor encoding {encoding!r} is not supported")
        self.encoding = enc
        self._dynamic = self._shape.count(None) > 1
        if enc != "none" and self._dtype == np.object_:
            raise UnsupportedFeatureError("Tensor: encoding= with dtype string")
        self.needs_decoding = enc != "none"

    def serialized_info(self) -> Any:
        """How the value is stored in the Example: a ``TensorInfo`` (or a dict of them)."""
        value = (
            TensorInfo((), np.dtype(object))
            if self.encoding != "none"
            else TensorInfo(self._shape, self._dtype)
        )
        if self._dynamic:
            return {"shape": TensorInfo((len(self._shape),), np.dtype(np.int32)), "value": value}
        return value

    def decode(self, value: Any) -> Any:
        """Decode one serialized value (sequence rank 0).

        With ``encoding="bytes"`` / ``"zlib"`` TFDS stores the array's raw bytes (zlib
        compressed), and the shape as it can: none when every dimension is known;
        none either when exactly one is unknown (it is what the byte count leaves, as
        ``tf.reshape(value, [.., -1, ..])``); beside the bytes (``shape``) when several
        are unknown (the declared dimensions win over the stored ones).
        """
        if self.encoding == "none":
            return value
        if self._dynamic:
            raw = value["value"]
            stored = [int(d) for d in np.asarray(value["shape"]).reshape(-1)]
            if len(stored) != len(self._shape):
                raise ParseError(f"encoded tensor: stored shape {stored} has the wrong rank")
            shape = [s if d is None else d for s, d in zip(stored, self._shape)]
            if any(d < 0 for d in shape):
                raise ParseError(f"encoded tensor: negative dimension in stored shape {shape}")
        else:
            raw = value
            shape = [-1 if d is None else int(d) for d in self._shape]
        data = raw if isinstance(raw, bytes) else bytes(np.asarray(raw).item())
        item = self._dtype.itemsize
        known = int(np.prod([d for d in shape if d != -1], dtype=np.float64)) * item
        size: Optional[int] = None if -1 in shape else known
        if size is not None and size > MAX_DECODED_BYTES:
            raise ParseError(f"encoded tensor: shape {shape} claims {size} bytes")
        if self.encoding == "zlib":
            data = _inflate(data, size, shape)
        if size is None:  # one unknown dimension: what the bytes leave
            if known == 0 or len(data) % known:
                raise ParseError(
                    f"encoded tensor: {len(data)} bytes are not a whole number of rows of "
                    f"shape {_shape_str(self._shape)} of {self._dtype}"
                )
            shape[shape.index(-1)] = len(data) // known
        elif len(data) != size:
            raise ParseError(
                f"encoded tensor: {len(data)} bytes do not hold shape {shape} of {self._dtype}"
            )
        return (
            np.frombuffer(data, dtype=self._dtype.newbyteorder("<"))
            .astype(self._dtype, copy=True)
            .reshape(shape)
        )

    def _repr_args(self) -> str:
        enc = f", encoding={self.encoding}" if self.encoding != "none" else ""
        return super()._repr_args() + enc


class Scalar(Tensor):
    """``tfds.features.Scalar``: a shape ``()`` Tensor."""

    tfds_class = "tensorflow_datasets.core.features.scalar.Scalar"


class BBoxFeature(Tensor):
    """``tfds.features.BBoxFeature``: ``float32[4]``, normalized ``(ymin, xmin, ymax, xmax)`` by default."""

    tfds_class = "tensorflow_datasets.core.features.bounding_boxes.BBoxFeature"

    def __init__(self, *, bbox_format: str = "REL_YXYX") -> None:
        super().__init__(shape=(4,), dtype=np.float32)
        self.bbox_format = bbox_format


class ClassLabel(Tensor):
    """``tfds.features.ClassLabel``: an int64 label; names from ``<feature>.labels.txt``."""

    tfds_class = "tensorflow_datasets.core.features.class_label_feature.ClassLabel"

    def __init__(
        self, *, num_classes: Optional[int] = None, names: Optional[list[str]] = None
    ) -> None:
        super().__init__(shape=(), dtype=np.int64)
        self._names: Optional[list[str]] = None
        self._str2int: dict[str, int] = {}
        self._num_classes = num_classes
        if names is not None:
            self.names = names

    @property
    def num_classes(self) -> Optional[int]:
        """The number of classes."""
        return self._num_classes

    @property
    def names(self) -> list[str]:
        """The class names (``"0"``, ``"1"`` ... when the dataset gave none)."""
        if self._names is not None:
            return list(self._names)
        return [str(i) for i in range(self._num_classes or 0)]

    @names.setter
    def names(self, names: list[str]) -> None:
        names = [str(n) for n in names]
        if self._num_classes is not None and len(names) != self._num_classes:
            raise ValueError(f"ClassLabel: {len(names)} names for {self._num_classes} classes")
        if len(set(names)) != len(names):
            raise ValueError("ClassLabel: class names are not unique")
        self._names = names
        self._num_classes = len(names)
        self._str2int = {n: i for i, n in enumerate(names)}

    def int2str(self, int_value: int) -> str:
        """The name of class ``int_value``."""
        i = int(int_value)
        if self._names is not None:
            if not 0 <= i < len(self._names):
                raise ValueError(f"Invalid integer class label {i}")
            return self._names[i]
        if not 0 <= i < (self._num_classes or 0):
            raise ValueError(f"Invalid integer class label {i}")
        return str(i)

    def str2int(self, str_value: str) -> int:
        """The class number of ``str_value``."""
        if self._names is not None:
            if str_value not in self._str2int:
                raise ValueError(f"Invalid string class label {str_value}")
            return self._str2int[str_value]
        try:
            i = int(str_value)
        except ValueError:
            raise ValueError(f"Invalid string class label {str_value}") from None
        if not 0 <= i < (self._num_classes or 0):
            raise ValueError(f"Invalid string class label {str_value}")
        return i

    def load_metadata(self, data_dir: str, name: str) -> None:
        """Read what TFDS saved beside ``features.json`` (class names)."""

        path = os.path.join(data_dir, f"{name}.labels.txt")
        if not os.path.isfile(path):
            return
        check_inside(path)
        if os.path.getsize(path) > 1 << 28:
            raise ValueError(f"{path}: class names file is too large")
        with open(path, encoding="utf-8") as f:
            names = [n.strip() for n in f.read().split("\n") if n.strip()]
        self.names = names

    def _repr_args(self) -> str:
        return f"shape=(), dtype=int64, num_classes={self._num_classes}"


class Text(Tensor):
    """``tfds.features.Text``: a string, returned as ``bytes`` (UTF-8)."""

    tfds_class = "tensorflow_datasets.core.features.text_feature.Text"

    def __init__(self) -> None:
        super().__init__(shape=(), dtype=object)


class Audio(Tensor):
    """``tfds.features.Audio`` stored as samples (``lazy_decode=False``, the default)."""

    tfds_class = "tensorflow_datasets.core.features.audio_feature.Audio"

    def __init__(
        self, *, shape: Shape, dtype: Any, sample_rate: Optional[int], encoding: str = "none"
    ) -> None:
        super().__init__(shape=shape, dtype=dtype, encoding=encoding)
        self.sample_rate = sample_rate


def _inflate(data: bytes, size: Optional[int], shape: list[int]) -> bytes:
    """zlib data inflated: exactly ``size`` bytes, or at most ``MAX_DECODED_BYTES`` if unknown."""
    limit = MAX_DECODED_BYTES if size is None else size
    d = zlib.decompressobj()
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as err:
        raise ParseError(f"encoded tensor: bad zlib data ({err})") from None
    if size is None and len(out) > limit:
        raise ParseError(f"encoded tensor: zlib data inflates past {limit} bytes")
    if not d.eof or (size is not None and len(out) != size):
        raise ParseError(
            f"encoded tensor: zlib data does not hold the {size} bytes of shape {shape}"
            if size is not None
            else "encoded tensor: zlib data is cut short"
        )
    return out
