"""TFDS feature connectors, read from ``features.json`` and decoded as TFDS decodes them.

TFDS stores one ``tf.train.Example`` per example. A connector tree (``FeaturesDict``
of ``Image``, ``ClassLabel``, ``Sequence`` ...) is flattened into "tensor infos":
leaves with a serialized shape, dtype and *sequence rank* (how many ``Sequence``
wrap them), keyed by their path joined with ``/``. Each is parsed as TFDS's
``example_parser`` parses it:

* every dimension known: ``FixedLenFeature(shape)``;
* exactly one unknown dimension: ``FixedLenSequenceFeature(known dims)``, reshaped
  with ``-1`` in its place;
* sequence rank > 1 (a ``Sequence`` of ``Sequence``): ``<key>/ragged_flat_values``
  and ``<key>/ragged_row_lengths_<k>`` -> a :class:`~tfrecord_lite.RaggedValue`;

then cast from the wire type (int64 / float32 / bytes) to the feature's dtype, and
decoded by the leaf connector (images, encoded tensors). The connector classes
mirror ``tfds.features`` (``int2str``, ``names``, ``shape``, ``dtype`` ...).

``features.json`` is untrusted: its size, nesting depth, shapes and names are
checked, and a connector we do not know is an error that names it.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator, Mapping
from typing import Any, Optional, Union

import numpy as np

from .._errors import ParseError
from .._examples import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RaggedValue,
    parse_example,
)

__all__ = [
    "Audio",
    "BBoxFeature",
    "ClassLabel",
    "FeatureConnector",
    "FeaturesDict",
    "Image",
    "Scalar",
    "Sequence",
    "Tensor",
    "Text",
    "UnsupportedFeatureError",
    "Video",
    "features_from_json",
]

#: Limits on untrusted metadata.
MAX_DEPTH = 32
MAX_RANK = 32
MAX_FEATURES = 100_000
MAX_CLASSES = 10_000_000
#: Largest decoded tensor accepted from an ``encoding="zlib"``/``"bytes"`` value.
MAX_DECODED_BYTES = 1 << 31

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


def _parse_specs(key: str, info: TensorInfo) -> dict[str, Any]:
    """The tfrecord_lite feature specs TFDS's example parser uses for one leaf."""
    wire = _wire(info.dtype, key)
    shape = info.shape
    if all(d is not None for d in shape):
        return {key: FixedLenFeature(list(shape), wire)}
    if shape.count(None) == 1:
        known = [d for d in shape if d is not None]
        return {key: FixedLenSequenceFeature(known, wire, allow_missing=True)}
    if info.sequence_rank > 1:
        specs: dict[str, Any] = {
            f"{key}/ragged_row_lengths_{k}": FixedLenSequenceFeature(
                [], "int64", allow_missing=True
            )
            for k in range(info.sequence_rank - 1)
        }
        rest = shape[info.sequence_rank :]
        if any(d is None for d in rest):
            raise UnsupportedFeatureError(
                f"feature {key!r}: ragged values with unknown inner dimensions {_shape_str(shape)}"
            )
        specs[f"{key}/ragged_flat_values"] = FixedLenSequenceFeature(
            list(rest),
            wire,
            allow_missing=True,
        )
        return specs
    raise UnsupportedFeatureError(
        f"feature {key!r}: shape {_shape_str(shape)} has several unknown dimensions, which "
        "TFDS cannot store without encoding='zlib' or 'bytes'"
    )


def _cast(value: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """tf.cast from the wire dtype (int64/float32/object) to the feature's dtype."""
    if value.dtype == dtype:
        return value
    if dtype == np.bool_:
        return np.asarray(value != 0)
    return value.astype(dtype)


def _deserialize(key: str, parsed: Mapping[str, Any], info: TensorInfo) -> Any:
    """The parsed wire value(s) of one leaf -> TFDS's tensor (before the connector decodes it)."""
    if info.sequence_rank > 1:
        flat = np.asarray(parsed[f"{key}/ragged_flat_values"])
        rest = [int(d) for d in info.shape[info.sequence_rank :] if d is not None]
        try:
            flat = _cast(flat.reshape([-1, *rest]), info.dtype)
        except ValueError:
            raise ParseError(
                f"feature {key!r}: {flat.size} ragged values do not fit rows of {rest}", key=key
            ) from None
        lengths = [
            np.asarray(parsed[f"{key}/ragged_row_lengths_{k}"], dtype=np.int64)
            for k in range(info.sequence_rank - 1)
        ]
        return _ragged(key, flat, lengths)
    raw = parsed[key]
    if isinstance(raw, bytes):  # a scalar string (np.asarray would make it an "S" array)
        value = np.empty((), dtype=object)
        value[()] = raw
    else:
        value = np.asarray(raw)
    shape = [-1 if d is None else d for d in info.shape]
    if shape != list(value.shape):
        try:
            value = value.reshape(shape)
        except ValueError:
            raise ParseError(
                f"feature {key!r}: {value.size} values do not fit shape {_shape_str(info.shape)}",
                key=key,
            ) from None
    return _cast(value, info.dtype)


def _ragged(key: str, flat: np.ndarray, lengths: list[np.ndarray]) -> RaggedValue:
    """``tf.RaggedTensor.from_nested_row_lengths`` with the checks TensorFlow makes."""
    splits_list = []
    expected = None
    for k, row_lengths in enumerate(lengths):
        if (row_lengths < 0).any():
            raise ParseError(f"feature {key!r}: negative ragged row length", key=key)
        if expected is not None and len(row_lengths) != expected:
            raise ParseError(
                f"feature {key!r}: ragged_row_lengths_{k} has {len(row_lengths)} rows, "
                f"the level above holds {expected}",
                key=key,
            )
        splits = np.zeros(len(row_lengths) + 1, np.int64)
        np.cumsum(row_lengths, out=splits[1:])
        expected = int(splits[-1])
        splits_list.append(splits)
    if expected is not None and expected != len(flat):
        raise ParseError(
            f"feature {key!r}: the ragged row lengths add up to {expected} values, "
            f"the record holds {len(flat)}",
            key=key,
        )
    value: Any = flat
    for splits in reversed(splits_list):
        value = RaggedValue(value, splits)
    return value  # type: ignore[no-any-return]


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


class Tensor(FeatureConnector):
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

    @property
    def shape(self) -> Shape:
        """The decoded shape (``None`` for unknown dimensions)."""
        return self._shape

    @property
    def dtype(self) -> np.dtype[Any]:
        """The decoded NumPy dtype."""
        return self._dtype

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
        """Decode one serialized value (sequence rank 0)."""
        if self.encoding == "none":
            return value
        if self._dynamic:
            raw = value["value"]
            stored = [int(d) for d in np.asarray(value["shape"]).reshape(-1)]
            if len(stored) != len(self._shape):
                raise ParseError(f"encoded tensor: stored shape {stored} has the wrong rank")
            shape = [s if d is None else d for s, d in zip(stored, self._shape)]
        else:
            raw = value
            shape = [int(d) for d in self._shape if d is not None]
        if any(d < 0 for d in shape):
            raise ParseError(f"encoded tensor: negative dimension in stored shape {shape}")
        size = int(np.prod(shape, dtype=np.float64)) * self._dtype.itemsize
        if size > MAX_DECODED_BYTES:
            raise ParseError(f"encoded tensor: shape {shape} claims {size} bytes")
        data = raw if isinstance(raw, bytes) else bytes(np.asarray(raw).item())
        if self.encoding == "zlib":
            d = zlib.decompressobj()
            try:
                out = d.decompress(data, size + 1)
            except zlib.error as err:
                raise ParseError(f"encoded tensor: bad zlib data ({err})") from None
            if not d.eof or len(out) != size:
                raise ParseError(
                    f"encoded tensor: zlib data does not hold the {size} bytes of shape {shape}"
                )
            data = out
        if len(data) != size:
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
        import os

        path = os.path.join(data_dir, f"{name}.labels.txt")
        if not os.path.isfile(path):
            return
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


_IMAGE_DTYPES = {"png": ("uint8", "uint16", "float32"), "jpeg": ("uint8",)}


class Image(FeatureConnector):
    """``tfds.features.Image``: PNG/JPEG bytes decoded to ``(H, W, C)`` uint8 / uint16 / float32.

    Decoded like ``tf.image.decode_image(channels=shape[-1], dtype=dtype)``: PNG is
    exact. JPEG is decoded as :func:`tfrecord_lite.io.decode_jpeg`: exact with the
    ``image`` extra (simplejpeg); with Pillow alone, chroma-subsampled JPEGs may differ
    from TensorFlow's pixels by a few levels (see the README). ``float32`` images are
    single-channel, stored as 4-channel uint8 PNGs holding the float bytes.
    """

    tfds_class = "tensorflow_datasets.core.features.image_feature.Image"
    needs_decoding = True

    def __init__(
        self,
        *,
        shape: Shape = (None, None, 3),
        dtype: Any = np.uint8,
        encoding_format: Optional[str] = None,
    ) -> None:
        self._shape = tuple(shape)
        self._dtype: np.dtype[Any] = np.dtype(dtype)
        self.encoding_format = encoding_format
        if len(self._shape) != 3:
            raise UnsupportedFeatureError(
                f"Image: shape {_shape_str(self._shape)} (only (height, width, channels) images; "
                "animated GIF images are not supported)"
            )
        if self._dtype.name not in ("uint8", "uint16", "float32"):
            raise UnsupportedFeatureError(f"Image: dtype {self._dtype} is not supported")
        channels = self._shape[-1]
        if channels not in (None, 0, 1, 2, 3, 4):
            raise ValueError(f"Image: {channels} channels")
        if self._dtype == np.float32 and channels != 1:
            raise ValueError("Image: float32 images have one channel")

    @property
    def shape(self) -> Shape:
        """The decoded shape (``None`` for unknown dimensions)."""
        return self._shape

    @property
    def dtype(self) -> np.dtype[Any]:
        """The decoded NumPy dtype."""
        return self._dtype

    def serialized_info(self) -> Any:
        """How the value is stored in the Example: a ``TensorInfo`` (or a dict of them)."""
        return TensorInfo((), np.dtype(object))

    def decode(self, value: Any) -> Any:
        """Decode one serialized value (sequence rank 0)."""
        data = value if isinstance(value, bytes) else bytes(np.asarray(value).item())
        if self._dtype == np.float32:
            pixels = decode_image_bytes(data, 4, np.dtype(np.uint8))
            out = np.ascontiguousarray(pixels).view("<f4").astype(np.float32, copy=False)
            return _check_shape(out, self._shape)
        channels = self._shape[-1] or 0
        return _check_shape(decode_image_bytes(data, channels, self._dtype), self._shape)

    def _repr_args(self) -> str:
        fmt = f", encoding_format={self.encoding_format}" if self.encoding_format else ""
        return super()._repr_args() + fmt


def _check_shape(image: np.ndarray, shape: Shape) -> np.ndarray:
    if image.ndim != len(shape) or any(
        d is not None and d != s for d, s in zip(shape, image.shape)
    ):
        raise ParseError(
            f"decoded image has shape {image.shape}, the dataset declares {_shape_str(shape)}"
        )
    return image


def _png_info(data: bytes) -> Optional[tuple[int, int]]:
    """(bit depth, colour type) of a PNG, from its IHDR chunk."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 26 and data[12:16] == b"IHDR":
        return data[24], data[25]
    return None


def decode_image_bytes(data: bytes, channels: int, dtype: np.dtype[Any]) -> np.ndarray:
    """``tf.image.decode_image(data, channels, dtype)`` for PNG/JPEG/BMP (uint8, uint16), with Pillow.

    ``channels=0`` keeps the file's channels. Always 3-D ``(H, W, C)``.
    """
    from .._decoding import decode_jpeg_pixels, pil_image

    if channels not in (0, 1, 3, 4):
        raise ParseError(
            f"cannot decode an image to {channels} channels: tf.image.decode_image (which TFDS "
            "uses) accepts channels 0, 1, 3 or 4"
        )
    if data[:3] == b"\xff\xd8\xff" and channels in (0, 1, 3):
        # the library's one JPEG decoder, tf.io.decode_jpeg's pixels
        pixels = decode_jpeg_pixels(data, channels, what="decode image")
        return pixels.astype(np.uint16) * np.uint16(256) if dtype == np.uint16 else pixels
    pil = pil_image()
    png = _png_info(data)
    try:
        img = pil.open(io.BytesIO(data))
        img.load()
    except (OSError, SyntaxError, ValueError, EOFError, pil.DecompressionBombError) as err:
        raise ParseError(f"cannot decode image: {err}") from None
    sixteen = png is not None and png[0] == 16
    if sixteen and img.mode not in ("I;16", "I;16B", "I;16L", "I"):
        raise UnsupportedFeatureError(
            f"16-bit PNG with colour type {png[1] if png else '?'} (Pillow decodes only "
            "16-bit grayscale)"
        )
    if sixteen:
        arr = np.array(img).astype(np.uint16)
        if dtype == np.uint8:
            arr = (arr >> 8).astype(np.uint8)
        arr = arr[:, :, None]
        if channels in (3, 4):
            arr = np.repeat(arr, 3, axis=2)
            if channels == 4:
                full = np.iinfo(arr.dtype).max
                arr = np.concatenate([arr, np.full((*arr.shape[:2], 1), full, arr.dtype)], 2)
        elif channels == 2:
            full = np.iinfo(arr.dtype).max
            arr = np.concatenate([arr, np.full((*arr.shape[:2], 1), full, arr.dtype)], 2)
        return arr
    mode = img.mode
    target = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}.get(channels)
    if target is None:  # keep the file's channels
        if mode in ("L", "LA", "RGB", "RGBA"):
            target = mode
        elif mode == "1":
            target = "L"
        elif mode in ("P", "PA"):
            target = "RGBA" if (mode == "PA" or "transparency" in img.info) else "RGB"
        else:
            target = "RGB"
    if target == "L" and mode not in ("L", "LA", "1", "I", "I;16", "I;16B", "I;16L"):
        # libpng's rgb_to_gray as TensorFlow sets it up (weights .299/.587 in 15-bit
        # fixed point, truncated): Pillow's "L" conversion rounds differently.
        rgb = np.asarray(img.convert("RGB"), dtype=np.uint32)
        gray = (rgb[..., 0] * 9797 + rgb[..., 1] * 19234 + rgb[..., 2] * 3737) >> 15
        out = gray.astype(np.uint8)[:, :, None]
        return out.astype(np.uint16) * np.uint16(257) if dtype == np.uint16 else out
    if mode != target:
        img = img.convert(target)
    arr = np.asarray(img)
    if arr.dtype != np.uint8:
        arr = arr.astype(np.uint8)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if dtype == np.uint16:
        arr = arr.astype(np.uint16) * np.uint16(257)
    return arr


class Audio(Tensor):
    """``tfds.features.Audio`` stored as samples (``lazy_decode=False``, the default)."""

    tfds_class = "tensorflow_datasets.core.features.audio_feature.Audio"

    def __init__(
        self, *, shape: Shape, dtype: Any, sample_rate: Optional[int], encoding: str = "none"
    ) -> None:
        super().__init__(shape=shape, dtype=dtype, encoding=encoding)
        self.sample_rate = sample_rate


class FeaturesDict(FeatureConnector):
    """``tfds.features.FeaturesDict``: a dict of connectors (nested)."""

    tfds_class = "tensorflow_datasets.core.features.features_dict.FeaturesDict"

    def __init__(self, features: Mapping[str, FeatureConnector]) -> None:
        self._features = dict(features)

    def __getitem__(self, key: str) -> FeatureConnector:
        return self._features[key]

    def __contains__(self, key: object) -> bool:
        return key in self._features

    def __iter__(self) -> Iterator[str]:
        return iter(self._features)

    def __len__(self) -> int:
        return len(self._features)

    def keys(self) -> Any:
        """The feature names."""
        return self._features.keys()

    def items(self) -> Any:
        """``(name, connector)`` pairs."""
        return self._features.items()

    def values(self) -> Any:
        """The connectors."""
        return self._features.values()

    @property
    def shape(self) -> dict[str, Any]:
        """The decoded shapes, a dict by feature name."""
        return {k: f.shape for k, f in self._features.items()}

    @property
    def dtype(self) -> dict[str, Any]:
        """The decoded dtypes, a dict by feature name."""
        return {k: f.dtype for k, f in self._features.items()}

    def leaves(self, prefix: str) -> Iterator[tuple[str, FeatureConnector, Any]]:
        """``(key, leaf connector, serialized info)`` for every leaf, with ``/``-joined keys."""
        for name, feature in self._features.items():
            yield from feature.leaves(f"{prefix}/{name}" if prefix else name)

    def load_metadata(self, data_dir: str, name: str) -> None:
        """Read what TFDS saved beside ``features.json`` (class names)."""
        for key, feature in self._features.items():
            feature.load_metadata(data_dir, f"{name}-{key}" if name else key)

    def __repr__(self) -> str:
        return _dict_repr(type(self).__name__, self._features, 0)


def _dict_repr(title: str, features: Mapping[str, FeatureConnector], indent: int) -> str:
    pad = "    " * (indent + 1)
    lines = [f"{title}({{"]
    for k, f in features.items():
        inner = (
            _dict_repr(type(f).__name__, f._features, indent + 1)
            if isinstance(f, FeaturesDict)
            else repr(f)
        )
        lines.append(f"{pad}{k!r}: {inner},")
    lines.append("    " * indent + "})")
    return "\n".join(lines)


class Sequence(FeatureConnector):
    """``tfds.features.Sequence``: a variable (or fixed ``length``) list of a connector, stacked."""

    tfds_class = "tensorflow_datasets.core.features.sequence_feature.Sequence"

    def __init__(self, feature: FeatureConnector, length: Optional[int] = None) -> None:
        self.feature = feature
        self.length = length

    @property
    def shape(self) -> Any:
        """The item's shape with the sequence length in front."""
        return _map_shape(self.feature.shape, self.length)

    @property
    def dtype(self) -> Any:
        """The item's dtype."""
        return self.feature.dtype

    def __getitem__(self, key: str) -> FeatureConnector:
        if isinstance(self.feature, FeaturesDict):
            return self.feature[key]
        raise TypeError(f"{type(self).__name__} of {type(self.feature).__name__} has no keys")

    def leaves(self, prefix: str) -> Iterator[tuple[str, FeatureConnector, Any]]:
        """``(key, leaf connector, serialized info)`` for every leaf, with ``/``-joined keys."""
        for key, leaf, info in self.feature.leaves(prefix):
            yield key, leaf, _map_info(info, self.length)

    def load_metadata(self, data_dir: str, name: str) -> None:
        """Read what TFDS saved beside ``features.json`` (class names)."""
        self.feature.load_metadata(data_dir, name)

    def _repr_args(self) -> str:
        length = f", length={self.length}" if self.length is not None else ""
        return f"{self.feature!r}{length}"


def _map_shape(shape: Any, length: Optional[int]) -> Any:
    if isinstance(shape, dict):
        return {k: _map_shape(v, length) for k, v in shape.items()}
    return (length, *shape)


def _map_info(info: Any, length: Optional[int]) -> Any:
    if isinstance(info, dict):
        return {k: _map_info(v, length) for k, v in info.items()}
    return info.with_length(length)


class Video(Sequence):
    """``tfds.features.Video``: a sequence of encoded frames (PNG or JPEG), ``(T, H, W, C)``."""

    tfds_class = "tensorflow_datasets.core.features.video_feature.Video"

    def __init__(
        self, *, shape: Shape, dtype: Any = np.uint8, encoding_format: str = "png"
    ) -> None:
        if len(shape) != 4:
            raise ValueError(f"Video: shape {_shape_str(tuple(shape))} is not (frames, h, w, c)")
        super().__init__(
            Image(shape=tuple(shape[1:]), dtype=dtype, encoding_format=encoding_format),
            length=shape[0],
        )
        self.encoding_format = encoding_format

    def _repr_args(self) -> str:
        return f"shape={_shape_str(self.shape)}, dtype={_dtype_name(self.dtype)}"


# --------------------------------------------------------------------------- features.json


_KNOWN_UNSUPPORTED = {
    "Translation",
    "TranslationVariableLanguages",
    "Dataset",
    "LabeledImage",
    "Optional",
}


def features_from_json(
    value: Any, _depth: int = 0, _count: Optional[list[int]] = None
) -> FeatureConnector:
    """Build the connector tree from the JSON of ``features.json`` (untrusted: checked)."""
    count = _count if _count is not None else [0]
    count[0] += 1
    if count[0] > MAX_FEATURES:
        raise ValueError(f"features.json: more than {MAX_FEATURES} features")
    if _depth > MAX_DEPTH:
        raise ValueError(f"features.json: features nested deeper than {MAX_DEPTH}")
    if not isinstance(value, Mapping):
        raise ValueError(f"features.json: a feature must be an object, got {type(value).__name__}")
    cls_name = value.get("pythonClassName", "")
    short = cls_name.rsplit(".", 1)[-1] if isinstance(cls_name, str) else ""
    where = f"feature connector {cls_name or '?'}"

    def body(name: str) -> Mapping[str, Any]:
        content = value.get(name, {})
        if not isinstance(content, Mapping):
            raise ValueError(f"features.json: {where}: {name!r} is not an object")
        return content

    if "featuresDict" in value or short == "FeaturesDict":
        feats = body("featuresDict").get("features", {})
        if not isinstance(feats, Mapping):
            raise ValueError("features.json: featuresDict.features is not an object")
        out: dict[str, FeatureConnector] = {}
        for name, sub in feats.items():
            _check_name(name)
            out[name] = features_from_json(sub, _depth + 1, count)
        return FeaturesDict(out)
    if short == "Video":
        v = body("video")
        return Video(
            shape=_shape(v.get("shape"), where),
            dtype=_dtype(v.get("dtype", "uint8"), where),
            encoding_format=_image_format(v.get("encodingFormat", "png"), where),
        )
    if short == "Sequence" or ("sequence" in value and not short):
        s = body("sequence")
        length = int(s.get("length", -1))
        return Sequence(
            features_from_json(s.get("feature"), _depth + 1, count),
            None if length == -1 else _dim(length, where),
        )
    if short in ("Image",) or ("image" in value and not short):
        im = body("image")
        dtype = _dtype(im.get("dtype", "uint8"), where)
        fmt = im.get("encodingFormat") or None
        if fmt is not None:
            fmt = _image_format(fmt, where)
        return Image(shape=_shape(im.get("shape"), where), dtype=dtype, encoding_format=fmt)
    if short == "ClassLabel" or ("classLabel" in value and not short):
        c = body("classLabel")
        n = int(c.get("numClasses", 0))
        if not 0 <= n <= MAX_CLASSES:
            raise ValueError(f"features.json: {where}: {n} classes")
        return ClassLabel(num_classes=n)
    if short == "Text" or ("text" in value and not short):
        return Text()
    if short == "BBoxFeature" or ("boundingBox" in value and not short):
        b = body("boundingBox")
        if _dtype(b.get("dtype", "float32"), where) != np.float32:
            raise UnsupportedFeatureError(f"{where}: bounding boxes of dtype {b.get('dtype')}")
        return BBoxFeature(bbox_format=str(b.get("bboxFormat", "REL_YXYX")))
    if short == "Audio":
        a = body("audio")
        if a.get("lazyDecode"):
            raise UnsupportedFeatureError(
                f"{where} with lazy_decode=True (stores the encoded {a.get('fileFormat') or 'audio'} "
                "file; decoding it needs ffmpeg): not supported"
            )
        enc = str(a.get("encoding", "none")).lower()
        return Audio(
            shape=_shape(a.get("shape"), where),
            dtype=_dtype(a.get("dtype", "int64"), where),
            sample_rate=int(a["sampleRate"]) if "sampleRate" in a else None,
            encoding=enc,
        )
    if short in ("Tensor", "Scalar") or ("tensor" in value and not short):
        t = body("tensor")
        if t.get("optional"):
            raise UnsupportedFeatureError(f"{where} with optional=True is not supported")
        cls = Scalar if short == "Scalar" else Tensor
        feature = cls(
            shape=_shape(t.get("shape"), where),
            dtype=_dtype(t.get("dtype"), where),
            encoding=str(t.get("encoding", "none")),
        )
        return feature
    shown = cls_name or ", ".join(sorted(k for k in value if isinstance(k, str))[:5])
    hint = " (known, not supported yet)" if short in _KNOWN_UNSUPPORTED else ""
    raise UnsupportedFeatureError(
        f"TFDS feature connector {shown!r}{hint} is not supported by tfrecord_lite.tfds; "
        "supported: FeaturesDict, Tensor, Scalar, ClassLabel, Text, Image, BBoxFeature, "
        "Sequence, Video, Audio"
    )


def _dim(n: int, where: str) -> int:
    if not 0 <= n <= 1 << 40:
        raise ValueError(f"features.json: {where}: bad length {n}")
    return n


def _image_format(fmt: Any, where: str) -> str:
    f = str(fmt).lower()
    if f not in ("png", "jpeg"):
        raise UnsupportedFeatureError(f"{where}: encoding_format {fmt!r}")
    return f


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not name or len(name) > 1000:
        raise ValueError(f"features.json: bad feature name {name!r}")
    if "/" in name or "\\" in name or "\x00" in name or name in (".", ".."):
        raise ValueError(f"features.json: feature name {name!r} may not contain '/', '\\' or NUL")


# --------------------------------------------------------------------------- the decoder


class Leaf:
    """One flat leaf of a connector tree: where its value lives and how to decode it."""

    __slots__ = ("connector", "fixed", "info", "key", "path", "rank", "scalar")

    def __init__(self, key: str, connector: FeatureConnector, info: Any) -> None:
        self.key = key
        self.path = tuple(key.split("/"))
        self.connector = connector
        self.info = info
        ranks = {i.sequence_rank for i in _infos(info)}
        if len(ranks) != 1:
            raise UnsupportedFeatureError(f"feature {key!r}: mixed sequence ranks")
        self.rank = ranks.pop()
        #: One serialized tensor of a fully known shape, decoded one value at a time: whole
        #: batch columns can be reshaped and cast at once (the fast path).
        self.fixed = (
            isinstance(info, TensorInfo)
            and all(d is not None for d in info.shape)
            and (self.rank == 0 or not connector.needs_decoding)
        )
        #: A scalar stored as it is returned (int64, float32, string): read straight from
        #: the protobuf message on the random-access path.
        self.scalar: Optional[str] = None
        if (
            self.fixed
            and info.shape == ()
            and not connector.needs_decoding
            and info.dtype.name in ("int64", "float32", "object")
        ):
            self.scalar = "string" if info.dtype == np.object_ else info.dtype.name


def _infos(info: Any) -> list[TensorInfo]:
    if isinstance(info, dict):
        return [i for v in info.values() for i in _infos(v)]
    return [info]


class ExampleDecoder:
    """Parse a TFDS record and decode every feature, as ``builder.as_dataset`` does."""

    def __init__(self, features: FeatureConnector, skip_decoding: frozenset[str] = frozenset()):
        self.features = features
        self.leaves = [Leaf(k, c, i) for k, c, i in features.leaves("")]
        self.skip = skip_decoding
        specs: dict[str, Any] = {}
        for leaf in self.leaves:
            if isinstance(leaf.info, dict):
                for sub, info in leaf.info.items():
                    specs.update(_parse_specs(f"{leaf.key}/{sub}", info))
            else:
                specs.update(_parse_specs(leaf.key, leaf.info))
        #: TFDS's own specs (``parse_single_example`` with them is the reference path).
        self.specs = specs
        # Each serialized key as (key, wire kind, shape if fixed else None). Batches are
        # parsed with FixedLenFeature / RaggedFeature (per-record lengths kept), then
        # reshaped per record as TFDS's FixedLenSequenceFeature + reshape would.
        self._keys: list[tuple[str, str, Optional[tuple[int, ...]]]] = []
        batch: dict[str, Any] = {}
        for key, spec in specs.items():
            wire = _WIRE_OF[getattr(spec.dtype, "name", spec.dtype)]
            if isinstance(spec, FixedLenFeature):
                shape = tuple(int(d) for d in spec.shape)
                self._keys.append((key, wire, shape))
                batch[key] = FixedLenFeature(list(shape), wire)
            else:
                self._keys.append((key, wire, None))
                batch[key] = RaggedFeature(wire)
        self.batch_specs = batch
        self._key_info = {key: (wire, shape is not None) for key, wire, shape in self._keys}

    def decode_batch(self, records: list[bytes]) -> list[dict[str, Any]]:
        """Decode many records with one vectorized ``parse_example`` (the streaming path)."""
        n = len(records)
        if not n:
            return []
        cols: dict[str, Any] = parse_example(records, self.batch_specs)
        slow = [leaf for leaf in self.leaves if not leaf.fixed]
        rows: dict[str, list[Any]] = {}
        for key, _, shape in self._keys if slow else ():
            col = cols[key]
            if shape is not None:
                rows[key] = list(col)
            else:
                flat_values = np.asarray(col.values)
                splits = np.asarray(col.row_splits).tolist()
                rows[key] = [flat_values[splits[j] : splits[j + 1]] for j in range(n)]
        slow_values: dict[str, list[Any]] = {leaf.key: [] for leaf in slow}
        for j in range(n if slow else 0):
            parsed = {k: v[j] for k, v in rows.items()}
            for leaf in slow:
                slow_values[leaf.key].append(self._finish(leaf, parsed))
        # Final values per leaf: whole columns at once where the shape is fixed.
        finals: list[tuple[tuple[str, ...], list[Any]]] = []
        values: list[Any]
        for leaf in self.leaves:
            if leaf.fixed:
                info = leaf.info
                column = _cast(np.asarray(cols[leaf.key]).reshape((n, *info.shape)), info.dtype)
                values = list(column)
                if leaf.key not in self.skip and leaf.connector.needs_decoding:
                    values = [_to_numpy(leaf.connector.decode(v)) for v in values]
            else:
                values = slow_values[leaf.key]
            finals.append((leaf.path, values))
        out = []
        flat = all(len(path) == 1 for path, _ in finals)
        for j in range(n):
            if flat:
                out.append({path[0]: values[j] for path, values in finals})
            else:
                ex: dict[str, Any] = {}
                for path, values in finals:
                    _put(ex, path, values[j])
                out.append(ex)
        return out

    def _finish(self, leaf: Leaf, parsed: Mapping[str, Any]) -> Any:
        if isinstance(leaf.info, dict):
            value: Any = {
                sub: _deserialize(f"{leaf.key}/{sub}", parsed, info)
                for sub, info in leaf.info.items()
            }
        else:
            value = _deserialize(leaf.key, parsed, leaf.info)
        if leaf.key not in self.skip and leaf.connector.needs_decoding:
            value = _decode_ranked(leaf.connector, value, leaf.rank)
        return _to_numpy(value)

    def decode_one(self, record: bytes) -> dict[str, Any]:
        """Decode one record through the protobuf runtime (the random-access path)."""
        from google.protobuf.message import DecodeError

        from ..example_pb2 import Example

        try:
            fmap = Example.FromString(record).features.feature
        except DecodeError as err:
            raise ParseError(f"not a tf.train.Example: {err}") from None
        out: dict[str, Any] = {}
        parsed: Optional[_LazyValues] = None
        for leaf in self.leaves:
            if leaf.scalar is not None:
                value = _proto_scalar(fmap, leaf.key, leaf.scalar)
            else:
                if parsed is None:
                    parsed = _LazyValues(fmap, self._key_info)
                value = self._finish(leaf, parsed)
            if len(leaf.path) == 1:
                out[leaf.key] = value
            else:
                _put(out, leaf.path, value)
        return out

    def decode_parsed(self, parsed: Mapping[str, Any]) -> dict[str, Any]:
        """From ``parse_single_example(record, self.specs)`` to the nested example."""
        out: dict[str, Any] = {}
        for leaf in self.leaves:
            _put(out, leaf.path, self._finish(leaf, parsed))
        return out


_WIRE_OF = {"int64": "int64", "float32": "float32", "string": "string"}
_LIST_OF = {"int64": "int64_list", "float32": "float_list", "string": "bytes_list"}
_NP_OF = {"int64": np.int64, "float32": np.float32}


def _proto_values(fmap: Any, key: str, wire: str, required: bool) -> np.ndarray:
    """One feature of a parsed ``Example`` as a flat array, as TensorFlow's parser reads it."""
    if key not in fmap:
        if required:
            raise ParseError(f"feature {key!r} is required but missing from the record", key=key)
        return np.zeros(0, dtype=object if wire == "string" else _NP_OF[wire])
    feature = fmap[key]
    kind = feature.WhichOneof("kind")
    if kind is None:
        return np.zeros(0, dtype=object if wire == "string" else _NP_OF[wire])
    if kind != _LIST_OF[wire]:
        raise ParseError(
            f"feature {key!r}: the record holds a {kind}, the dataset declares {wire} "
            f"({_LIST_OF[wire]})",
            key=key,
        )
    values = getattr(feature, kind).value
    if wire == "string":
        out = np.empty(len(values), dtype=object)
        out[:] = list(values)
        return out
    return np.array(values, dtype=_NP_OF[wire])


class _LazyValues(dict):  # type: ignore[type-arg]
    """Feature values of one parsed ``Example``, converted to arrays when first asked for."""

    def __init__(self, fmap: Any, key_info: Mapping[str, tuple[str, bool]]) -> None:
        super().__init__()
        self.fmap = fmap
        self.key_info = key_info

    def __missing__(self, key: str) -> np.ndarray:
        wire, required = self.key_info[key]
        value = self[key] = _proto_values(self.fmap, key, wire, required)
        return value


def _proto_scalar(fmap: Any, key: str, wire: str) -> Any:
    """A one-value feature as ``tfds.as_numpy`` returns it: ``np.int64``, ``np.float32`` or ``bytes``."""
    if key in fmap:
        feature = fmap[key]
        kind = feature.WhichOneof("kind")
        if kind == _LIST_OF[wire]:
            values = getattr(feature, kind).value
            if len(values) == 1:
                v = values[0]
                return v if wire == "string" else _NP_OF[wire](v)
    # missing, wrong kind or count: the general path raises the error
    arr = _proto_values(fmap, key, wire, True)
    raise ParseError(f"feature {key!r}: {arr.size} values do not fit shape ()", key=key)


def _decode_ranked(connector: FeatureConnector, value: Any, rank: int) -> Any:
    if rank == 0:
        return connector.decode(value)
    if rank == 1:
        items = _unstack(value)
        decoded = [connector.decode(v) for v in items]
        if not decoded:
            shape = tuple(0 if d is None else d for d in connector.shape)
            return np.zeros((0, *shape), dtype=connector.dtype)
        try:
            return np.stack(decoded)
        except ValueError:
            raise ParseError(
                "the items of a Sequence decode to different shapes "
                f"({sorted({d.shape for d in decoded})}); TFDS cannot batch them either"
            ) from None
    # ragged: decode the flat values
    if not isinstance(value, RaggedValue):
        raise ParseError("expected a ragged value")
    return _map_flat(value, connector)


def _map_flat(value: Any, connector: FeatureConnector) -> Any:
    if isinstance(value, RaggedValue):
        return RaggedValue(_map_flat(value.values, connector), value.row_splits)
    decoded = [connector.decode(v) for v in value]
    if not decoded:
        shape = tuple(0 if d is None else d for d in connector.shape)
        return np.zeros((0, *shape), dtype=connector.dtype)
    return np.stack(decoded)


def _unstack(value: Any) -> list[Any]:
    if isinstance(value, dict):
        keys = list(value)
        parts = [_unstack(value[k]) for k in keys]
        return [dict(zip(keys, row)) for row in zip(*parts)]
    return list(value)


def _to_numpy(value: Any) -> Any:
    """0-d arrays become what ``tfds.as_numpy`` yields: NumPy scalars, or ``bytes``."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        item = value[()]
        if isinstance(item, (bytes, bytearray, memoryview)):
            return bytes(item)
        if isinstance(item, np.generic):
            return item
        return value.dtype.type(item) if value.dtype != object else item
    return value


def _put(out: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    d = out
    for p in path[:-1]:
        d = d.setdefault(p, {})
    d[path[-1]] = value


def flat_items(tree: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``("a/b", value)`` for every leaf of a nested dict."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from flat_items(v, f"{prefix}/{k}" if prefix else k)
    else:
        yield prefix, tree


FeatureLike = Union[FeatureConnector, Mapping[str, Any]]
