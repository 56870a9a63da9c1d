"""Decoding feature bytes into NumPy: ``decode_raw`` (TensorFlow's) and image helpers.

:func:`decode_raw` follows ``tf.io.decode_raw`` (``DecodeRaw`` / ``DecodePaddedRaw``)
including its error texts; :func:`encode_image` / :func:`decode_image` are small
Pillow wrappers (the optional ``image`` extra: ``pip install tfrecord-lite[image]``).
"""

from __future__ import annotations

import importlib
import io
import os
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from .._errors import ParseError

__all__ = [
    "decode_image",
    "decode_jpeg",
    "decode_png",
    "decode_raw",
    "encode_image",
    "encode_jpeg",
    "encode_png",
    "tf_decode_image",
]

# TensorFlow's DataTypeString names where they differ from NumPy's.
_TF_NAMES = {"float32": "float", "float64": "double", "float16": "half"}
# String spellings that mean something else in TensorFlow than in NumPy.
_TF_ALIASES: dict[str, np.dtype[Any]] = {
    "float": np.dtype(np.float32),
    "half": np.dtype(np.float16),
    "double": np.dtype(np.float64),
}
_STRING_NAMES = frozenset({"string", "bytes", "str", "object", "unicode"})


def _string_out_type(out_type: Any) -> TypeError:
    return TypeError(
        f"decode_raw: out_type {out_type!r} is a string type; decode_raw turns bytes into "
        "numbers (a bytes feature already is bytes)"
    )


def _out_dtype(out_type: Any) -> np.dtype[Any]:
    """The NumPy dtype ``out_type`` names (native byte order)."""
    if isinstance(out_type, str):
        name = out_type.strip()
        for prefix in ("tfr.", "tf.", "np.", "numpy."):
            if name.lower().startswith(prefix):
                name = name[len(prefix) :]
        low = name.lower()
        if low in _STRING_NAMES:
            raise _string_out_type(out_type)
        alias = _TF_ALIASES.get(low)
        if alias is not None:
            dtype = alias
        else:
            try:
                dtype = np.dtype(name)
            except TypeError:
                raise TypeError(f"decode_raw: unknown out_type {out_type!r}") from None
    elif out_type is float:  # as TensorFlow (and the rest of tfrecord_lite): float32
        dtype = np.dtype(np.float32)
    elif out_type is int:
        dtype = np.dtype(np.int64)
    elif out_type in (bytes, str, object):
        raise _string_out_type(out_type)
    else:
        # tfr.int64 / tfr.float32 carry .np_dtype; TensorFlow's tf.uint8 .as_numpy_dtype.
        inner = getattr(out_type, "np_dtype", None)
        if inner is None:
            inner = getattr(out_type, "as_numpy_dtype", None)
        try:
            dtype = np.dtype(out_type if inner is None else inner)
        except TypeError:
            raise TypeError(f"decode_raw: unknown out_type {out_type!r}") from None
    if dtype.kind in "OSUV":
        raise _string_out_type(out_type)
    if dtype.kind not in "biufc":
        raise TypeError(f"decode_raw: out_type must be a numeric dtype, got {dtype}")
    return dtype.newbyteorder("=")


def _tf_name(dtype: np.dtype[Any]) -> str:
    return _TF_NAMES.get(dtype.name, dtype.name)


def _to_bytes(x: Any) -> bytes:
    if type(x) is bytes:
        return x
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, np.void):
        return x.tobytes()
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    raise TypeError(f"decode_raw: elements must be bytes, got {type(x).__name__}")


def _check_fixed_length(fixed_length: Any, itemsize: int) -> int:
    if isinstance(fixed_length, (bool, float)) or not isinstance(fixed_length, (int, np.integer)):
        raise TypeError(f"fixed_length must be an int, got {type(fixed_length).__name__}")
    fixed = int(fixed_length)
    if fixed <= 0:
        raise ValueError(f"fixed_length ({fixed}) must be greater than zero.")
    if fixed % itemsize:
        raise ValueError(
            f"fixed_length ({fixed}) must be a multiple of the size of out_type ({itemsize})"
        )
    return fixed


def _from_bytes(
    buf: Any, dtype: np.dtype[Any], little_endian: bool, shape: tuple[int, ...]
) -> npt.NDArray[Any]:
    """View ``buf`` as ``dtype`` in the requested byte order; native order result."""
    if dtype.kind == "b":  # any nonzero byte is True; NumPy bools must be 0/1
        truth: npt.NDArray[np.bool_] = np.frombuffer(buf, dtype=np.uint8).reshape(shape) != 0
        return truth
    wire = dtype.newbyteorder("<" if little_endian else ">")
    arr = np.frombuffer(buf, dtype=wire).reshape(shape)
    if not wire.isnative:
        arr = arr.astype(dtype)
    return arr


def _check_size(size: int, dtype: np.dtype[Any]) -> None:
    if size % dtype.itemsize:
        raise ParseError(
            f"Input to DecodeRaw has length {size} that is not a multiple of "
            f"{dtype.itemsize}, the size of {_tf_name(dtype)}"
        )


def _decode_one(
    data: Any, dtype: np.dtype[Any], little_endian: bool, fixed: Optional[int], copy: bool
) -> npt.NDArray[Any]:
    if isinstance(data, str):
        data = data.encode("utf-8")
    buf = np.frombuffer(data, dtype=np.uint8)  # any contiguous buffer, no copy
    if fixed is not None:
        padded = np.zeros(fixed, dtype=np.uint8)
        keep = min(fixed, buf.size)
        padded[:keep] = buf[:keep]
        return _from_bytes(padded, dtype, little_endian, (fixed // dtype.itemsize,))
    if buf.size == 0:
        return np.zeros(0, dtype=dtype)
    _check_size(buf.size, dtype)
    arr = _from_bytes(buf, dtype, little_endian, (buf.size // dtype.itemsize,))
    # A view of immutable bytes can never change: keep it zero-copy (read-only).
    # A mutable buffer (bytearray, memoryview, ...) may be reused by its owner: copy.
    if arr.base is not None and (copy or not isinstance(data, bytes)):
        arr = arr.copy()
    return arr


def _decode_fixed_width(
    raw: npt.NDArray[np.uint8],
    shape: tuple[int, ...],
    dtype: np.dtype[Any],
    little_endian: bool,
    fixed: Optional[int],
    lengths: Optional[npt.NDArray[Any]],
) -> npt.NDArray[Any]:
    """Elements stored as the rows of ``raw`` (n, width), zero-padded, ``lengths`` their sizes."""
    n, width = raw.shape
    if fixed is not None:
        rows = np.zeros((n, fixed), dtype=np.uint8)
        keep = min(fixed, width)
        rows[:, :keep] = raw[:, :keep]
        return _from_bytes(rows, dtype, little_endian, (*shape, fixed // dtype.itemsize))
    if n == 0:
        return np.zeros((*shape, 0), dtype=dtype)
    size = width
    if lengths is not None:
        size = _common_size(lengths)
    if size == 0:
        return np.zeros((*shape, 0), dtype=dtype)
    _check_size(size, dtype)
    rows = np.ascontiguousarray(raw[:, :size]) if size != width else raw.copy()
    return _from_bytes(rows, dtype, little_endian, (*shape, size // dtype.itemsize))


def _common_size(lengths: npt.NDArray[np.int64]) -> int:
    """The one length every element has (TensorFlow's error when they differ)."""
    size = int(lengths[0])
    bad = np.flatnonzero(lengths != size)
    if bad.size:
        i = int(bad[0])
        raise ParseError(
            "DecodeRaw requires input strings to all be the same size, but element "
            f"{i} has size {size} != {int(lengths[i])}"
        )
    return size


def _decode_many(
    elements: list[bytes],
    shape: tuple[int, ...],
    dtype: np.dtype[Any],
    little_endian: bool,
    fixed: Optional[int],
) -> npt.NDArray[Any]:
    n = len(elements)
    if fixed is not None:
        out = bytearray(n * fixed)
        for i, b in enumerate(elements):
            piece = b[:fixed]
            out[i * fixed : i * fixed + len(piece)] = piece
        return _from_bytes(out, dtype, little_endian, (*shape, fixed // dtype.itemsize))
    if n == 0:
        return np.zeros((*shape, 0), dtype=dtype)
    lengths = np.fromiter(map(len, elements), dtype=np.int64, count=n)
    size = _common_size(lengths)
    if size == 0:
        return np.zeros((*shape, 0), dtype=dtype)
    _check_size(size, dtype)
    joined = bytearray().join(elements)  # a fresh, writable buffer
    return _from_bytes(joined, dtype, little_endian, (*shape, size // dtype.itemsize))


def decode_raw(
    input_bytes: Any,
    out_type: Any,
    little_endian: bool = True,
    fixed_length: Optional[int] = None,
    name: Optional[str] = None,
    *,
    copy: bool = False,
) -> npt.NDArray[Any]:
    """Reinterpret bytes as an array of numbers, like ``tf.io.decode_raw``.

    ``input_bytes`` is one bytes-like value (-> 1-D array) or a list / nested list /
    NumPy array of them (``S``, ``V`` or object dtype) -> shape
    ``input.shape + (len // itemsize,)``. ``str`` values are taken as UTF-8.

    ``out_type``: any numeric NumPy dtype or anything ``np.dtype()`` accepts
    (``np.uint8``, ``"int32"``, ``"<f4"``...), ``tfr.int64`` / ``tfr.float32``,
    TensorFlow's ``tf.uint8``..., and TensorFlow's names ``"float"`` (float32),
    ``"half"``, ``"double"``; Python ``float`` means float32 and ``int`` int64, as
    elsewhere in tfrecord_lite. String types raise ``TypeError``. The byte order of
    the data is ``little_endian`` (any order given in the dtype is ignored); the
    result is always in native order.

    Without ``fixed_length`` all elements must have the same size, a multiple of
    the item size (else :class:`ParseError` with TensorFlow's message, e.g.
    ``Input to DecodeRaw has length 3 that is not a multiple of 4, the size of
    float``); empty elements give a last dimension of 0. With ``fixed_length``
    (a positive multiple of the item size) each element is truncated or
    zero-padded to that many bytes first.

    Memory: for a single ``bytes`` value in native order the result is a
    **read-only zero-copy view** of it (``bytes`` never changes, so the view is
    safe to keep); pass ``copy=True`` (or call ``.copy()``) for a writable array.
    Every other input gives a fresh writable array: a mutable buffer
    (``bytearray``, ``memoryview``) is copied, never aliased.

    ``decode_raw([b"\\x01\\x23"], np.int32, fixed_length=8)`` -> ``[[0x2301, 0]]``;
    with ``little_endian=False`` -> ``[[0x01230000, 0]]``. ``name`` is accepted for
    TensorFlow compatibility and ignored.
    """
    del name
    dtype = _out_dtype(out_type)
    fixed = None if fixed_length is None else _check_fixed_length(fixed_length, dtype.itemsize)
    if isinstance(input_bytes, (bytes, bytearray, memoryview, str)):
        return _decode_one(input_bytes, dtype, little_endian, fixed, copy)
    if isinstance(input_bytes, np.ndarray):
        arr = input_bytes
    elif isinstance(input_bytes, np.void):
        return _decode_one(input_bytes.tobytes(), dtype, little_endian, fixed, True)
    elif isinstance(input_bytes, (list, tuple)):
        arr = np.empty(0, dtype=object) if not input_bytes else _object_array(input_bytes)
    else:
        raise TypeError(
            "decode_raw: input_bytes must be bytes or a list / array of bytes, "
            f"not {type(input_bytes).__name__}"
        )
    shape = arr.shape
    if arr.ndim == 0:
        return _decode_one(_to_bytes(arr.item()), dtype, little_endian, fixed, True)
    kind = arr.dtype.kind
    n = arr.size
    if kind == "S":
        # Fixed-width, NUL-padded: NumPy's value of an element ends before its
        # trailing NULs (np.char.str_len), and zero padding is what fixed_length adds.
        raw = np.ascontiguousarray(arr).reshape(n).view(np.uint8).reshape(n, arr.dtype.itemsize)
        lengths = None if fixed is not None else np.char.str_len(arr.reshape(n))
        return _decode_fixed_width(raw, shape, dtype, little_endian, fixed, lengths)
    if kind == "V" and arr.dtype.names is None:
        raw = np.ascontiguousarray(arr).reshape(n).view(np.uint8).reshape(n, arr.dtype.itemsize)
        return _decode_fixed_width(raw, shape, dtype, little_endian, fixed, None)
    if kind in "OU":
        values = arr.reshape(n).tolist()
        # (Parsed BytesLists hold bytes only: no per-value conversion then.)
        elements = values if set(map(type, values)) == {bytes} else list(map(_to_bytes, values))
        return _decode_many(elements, shape, dtype, little_endian, fixed)
    raise TypeError(
        f"decode_raw: input_bytes must hold bytes, not {arr.dtype} values "
        "(a numeric array already is decoded; use arr.view(dtype) to reinterpret it)"
    )


def _object_array(values: Any) -> npt.NDArray[Any]:
    """A (possibly nested) list of bytes as an object array of its shape."""
    try:
        arr = np.array(values, dtype=object)
    except ValueError as e:  # ragged nesting
        raise ValueError(f"decode_raw: nested lists must be rectangular: {e}") from None
    for x in arr.reshape(-1).tolist():
        if isinstance(x, (list, tuple)):
            raise ValueError("decode_raw: nested lists must be rectangular")
    return arr


# --------------------------------------------------------------------------- images

_INSTALL_HINT = "pip install 'tfrecord-lite[image]'"


def pil_image() -> Any:
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError(
            f"encode_image / decode_image need Pillow, which is not installed: {_INSTALL_HINT}"
        ) from e
    return Image


_FORMATS = {"png": "PNG", "jpeg": "JPEG", "jpg": "JPEG"}


def encode_image(array: npt.ArrayLike, format: str = "png", quality: int = 95) -> bytes:
    """Encode a uint8 image array as PNG (lossless, default) or JPEG bytes.

    ``array``: ``(H, W)`` or ``(H, W, 1)`` grayscale, ``(H, W, 2)`` gray + alpha,
    ``(H, W, 3)`` RGB or ``(H, W, 4)`` RGBA, dtype uint8 (JPEG: no alpha).
    ``quality`` (1-100) applies to JPEG only. Needs Pillow (the ``image`` extra).
    """
    fmt = _FORMATS.get(str(format).lower())
    if fmt is None:
        raise ValueError(f"format must be 'png' or 'jpeg', got {format!r}")
    arr = np.asarray(array)
    if arr.dtype != np.uint8:
        raise TypeError(f"encode_image needs a uint8 array, got {arr.dtype}")
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] in (2, 3, 4))):
        raise ValueError(
            f"encode_image needs an (H, W) or (H, W, C) array with C in 1-4, got shape {arr.shape}"
        )
    if fmt == "JPEG" and arr.ndim == 3 and arr.shape[2] in (2, 4):
        raise ValueError("JPEG has no alpha channel: drop it or use format='png'")
    if not 1 <= int(quality) <= 100:
        raise ValueError(f"quality must be in 1-100, got {quality}")
    image_mod = pil_image()
    img = image_mod.fromarray(np.ascontiguousarray(arr))
    out = io.BytesIO()
    if fmt == "JPEG":
        img.save(out, format=fmt, quality=int(quality))
    else:
        img.save(out, format=fmt)
    return out.getvalue()


def decode_image(
    data: Any, mode: Optional[str] = None, *, name: Optional[str] = None
) -> npt.NDArray[np.uint8]:
    """Decode encoded image bytes (PNG, JPEG, GIF, BMP, ...) into a uint8 array.

    Returns ``(H, W)`` for grayscale, ``(H, W, C)`` otherwise (C = 2 gray+alpha,
    3 RGB, 4 RGBA). ``mode`` converts first (Pillow mode: ``"L"``, ``"RGB"``,
    ``"RGBA"``...); by default palette images become RGB (RGBA if transparent),
    1-bit images L, CMYK / YCbCr RGB. 16/32-bit images raise ``ValueError`` unless
    a ``mode`` is given. Undecodable bytes raise :class:`ParseError`. Needs Pillow.

    ``data``: bytes, or what parsing returns for a ``tf.string`` feature (a 0-d or
    one-element object array). This is the Pillow-style helper (grayscale stays
    2-D); :func:`tfrecord_lite.io.decode_image` is TensorFlow's ``tf.io.decode_image``
    (``channels=``, ``dtype=``, always ``(H, W, C)``).
    """
    del name
    image_mod = pil_image()
    if isinstance(data, str):
        raise TypeError("decode_image needs the encoded bytes, not a str")
    data = image_bytes(data, "decode_image")
    try:
        img = image_mod.open(io.BytesIO(data))
        img.load()
    except (OSError, SyntaxError, ValueError, EOFError, image_mod.DecompressionBombError) as e:
        raise ParseError(f"cannot decode image: {e}") from e
    if mode is not None:
        img = img.convert(mode)
    elif img.mode in ("L", "LA", "RGB", "RGBA"):
        pass
    elif img.mode == "1":
        img = img.convert("L")
    elif img.mode in ("P", "PA"):
        alpha = img.mode == "PA" or "transparency" in img.info
        img = img.convert("RGBA" if alpha else "RGB")
    elif img.mode.startswith(("I", "F")):
        raise ValueError(
            f"image mode {img.mode!r} has more than 8 bits per channel; decode_image returns "
            "uint8: pass mode='L' (or 'RGB') to convert"
        )
    else:
        img = img.convert("RGB")
    out = np.array(img)
    if out.dtype != np.uint8:
        raise ValueError(f"image mode {img.mode!r} does not decode to uint8")
    return out


# --------------------------------------------------------------------------- tf.io images
#
# TensorFlow's tf.io image ops (tfr.io.decode_image, decode_jpeg, decode_png,
# encode_jpeg, encode_png). Every JPEG the library decodes (tfr.io.decode_jpeg,
# tfr.io.decode_image, tfrecord_lite.tfds Image/Video) goes through
# decode_jpeg_pixels below, with one of two backends:
#
# * "simplejpeg" (the optional simplejpeg package, part of the image extra):
#   libjpeg-turbo with the DCT and upsampling selectable. dct_method "" /
#   "INTEGER_FAST" is the fast integer DCT with fancy upsampling, TensorFlow's
#   default; "INTEGER_ACCURATE" the accurate integer DCT with fancy upsampling.
#   Pixels are TensorFlow's exactly (0 difference, measured against TensorFlow
#   2.21 in tests/interop/test_tensor_interop.py and test_tfds_interop.py).
# * "pillow" (when simplejpeg is not installed, for CMYK/YCCK JPEGs and for
#   ratio > 1): "INTEGER_ACCURATE", grayscale and 4:4:4 JPEGs are exact; on
#   chroma-subsampled (4:2:0 / 4:2:2) JPEGs Pillow's fast mode turns fancy
#   upsampling off, so the accurate DCT is used instead, and pixels differ from
#   TensorFlow's default by at most JPEG_MAX_DIFF (measured: 8).
#
# The environment variable TFRECORD_LITE_JPEG_BACKEND ("simplejpeg" or "pillow")
# forces a backend (read at each decode).

#: Largest pixel difference measured between :func:`decode_jpeg` with the default
#: ``dct_method`` and TensorFlow's ``tf.io.decode_jpeg`` on chroma-subsampled JPEGs
#: when Pillow decodes them (simplejpeg not installed); 0 on grayscale and 4:4:4
#: JPEGs, with ``dct_method="INTEGER_ACCURATE"``, and whenever simplejpeg decodes.
JPEG_MAX_DIFF = 8

#: Environment variable that forces the JPEG backend: ``simplejpeg`` or ``pillow``.
JPEG_BACKEND_ENV_VAR = "TFRECORD_LITE_JPEG_BACKEND"
JPEG_BACKENDS = ("simplejpeg", "pillow")

_SIMPLEJPEG: list[Any] = []


def _simplejpeg() -> Any:
    """The optional ``simplejpeg`` module, or None when it is not installed (imported once)."""
    if not _SIMPLEJPEG:
        try:
            module: Any = importlib.import_module("simplejpeg")
        except ImportError:
            module = None
        _SIMPLEJPEG.append(module)
    return _SIMPLEJPEG[0]


def jpeg_backend() -> str:
    """The JPEG backend in use: ``"simplejpeg"`` when installed, else ``"pillow"``.

    ``TFRECORD_LITE_JPEG_BACKEND=pillow`` forces Pillow; ``=simplejpeg`` requires
    simplejpeg (ImportError with the install line when it is missing).
    """
    forced = os.environ.get(JPEG_BACKEND_ENV_VAR, "").strip().lower()
    if forced and forced not in JPEG_BACKENDS:
        raise ValueError(
            f"{JPEG_BACKEND_ENV_VAR}={forced!r}: expected one of {', '.join(JPEG_BACKENDS)}"
        )
    if forced == "pillow":
        return "pillow"
    if _simplejpeg() is not None:
        return "simplejpeg"
    if forced == "simplejpeg":
        raise ImportError(
            f"{JPEG_BACKEND_ENV_VAR}=simplejpeg but simplejpeg is not installed: {_INSTALL_HINT}"
        )
    return "pillow"


_DCT_METHODS = ("", "INTEGER_FAST", "INTEGER_ACCURATE")


def image_bytes(contents: Any, what: str) -> bytes:
    """Encoded image bytes from bytes-like ``contents`` or a 0-d / one-element array of them."""
    x = contents
    if isinstance(x, np.ndarray):
        if x.size != 1 or x.ndim > 1:
            raise ValueError(
                f"{what}: contents must be one encoded image (bytes or a 0-d array), "
                f"got an array of shape {x.shape}; decode images one by one"
            )
        x = x.reshape(()).item()
    if isinstance(x, bytes):
        return x
    if isinstance(x, (bytearray, memoryview, np.bytes_)):
        return bytes(x)
    if isinstance(x, np.void):
        return x.tobytes()
    if isinstance(x, str):
        raise TypeError(f"{what}: contents must be the encoded bytes, not a str")
    raise TypeError(f"{what}: contents must be bytes, got {type(x).__name__}")


def _check_channels(channels: Any, allowed: tuple[int, ...], what: str) -> int:
    if channels is None:
        return 0
    if isinstance(channels, bool) or not isinstance(channels, (int, np.integer)):
        raise TypeError(f"{what}: channels must be an int, got {type(channels).__name__}")
    if int(channels) not in allowed:
        choices = ", ".join(map(str, allowed[:-1])) + f" or {allowed[-1]}"
        raise ValueError(f"{what}: `channels` must be {choices} but got {channels}")
    return int(channels)


def _open(data: bytes, what: str) -> Any:
    image_mod = pil_image()
    try:
        return image_mod.open(io.BytesIO(data))
    except (OSError, SyntaxError, ValueError, EOFError, image_mod.DecompressionBombError) as e:
        raise ParseError(f"{what}: cannot decode image: {e}") from e


def _load(img: Any, what: str) -> None:
    image_mod = pil_image()
    try:
        img.load()
    except (OSError, SyntaxError, ValueError, EOFError, image_mod.DecompressionBombError) as e:
        raise ParseError(f"{what}: cannot decode image: {e}") from e


def _subsampled(img: Any) -> bool:
    """True if a JPEG's chroma is subsampled (Pillow's per-component sampling factors)."""
    layers = getattr(img, "layer", None) or []
    factors = {(h, v) for _, h, v, _ in layers}
    return len(factors) > 1


#: TensorFlow's PNG decoder asks libpng for ITU-R 601 gray (0.299, 0.587); libpng
#: keeps the weights in 1/32768 units, truncated: these are the integers it uses.
_GRAY_R = 29900 * 32768 // 100000
_GRAY_G = 58700 * 32768 // 100000
_GRAY_B = 32768 - _GRAY_R - _GRAY_G


def _gray_from_rgb(rgb: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """libpng's RGB -> gray as TensorFlow's decode_png gets it (8-bit: truncated)."""
    r, g, b = (rgb[..., i].astype(np.uint64) for i in range(3))
    total = _GRAY_R * r + _GRAY_G * g + _GRAY_B * b
    if rgb.dtype == np.uint16:
        total = total + 16384
    return (total >> 15).astype(rgb.dtype)


def _to_channels(arr: npt.NDArray[Any], channels: int) -> npt.NDArray[Any]:
    """An (H, W, C) array with ``channels`` channels (0: keep), as TensorFlow's decoders."""
    c = arr.shape[2]
    if channels == 0 or channels == c:
        return arr
    if channels == 1:
        if c in (1, 2):
            return arr[:, :, :1]
        return _gray_from_rgb(arr[:, :, :3])[:, :, None]
    if channels == 2:
        gray = _to_channels(arr, 1)
        alpha = arr[:, :, -1:] if c in (2, 4) else np.full_like(gray, np.iinfo(arr.dtype).max)
        return np.concatenate([gray, alpha], axis=2)
    if channels == 3:
        if c in (1, 2):
            return np.repeat(arr[:, :, :1], 3, axis=2)
        return arr[:, :, :3]
    # channels == 4
    rgb = _to_channels(arr, 3)
    alpha = (
        arr[:, :, -1:]
        if c in (2, 4)
        else np.full((*rgb.shape[:2], 1), np.iinfo(arr.dtype).max, arr.dtype)
    )
    return np.concatenate([rgb, alpha], axis=2)


def _as_hwc(img: Any, what: str) -> npt.NDArray[Any]:
    """A loaded Pillow image as (H, W, C) uint8 (uint16 for 16-bit grayscale)."""
    mode = img.mode
    if mode in ("I;16", "I;16B", "I;16L", "I"):
        arr = np.asarray(img)
        if arr.dtype != np.uint16:
            arr = arr.astype(np.uint16)
        return arr[:, :, None]
    if mode == "1":
        img = img.convert("L")
    elif mode in ("P", "PA"):
        alpha = mode == "PA" or "transparency" in img.info
        img = img.convert("RGBA" if alpha else "RGB")
    elif mode not in ("L", "LA", "RGB", "RGBA"):
        img = img.convert("RGB")
    arr = np.asarray(img)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return np.array(arr, dtype=arr.dtype)  # writable


def _convert_dtype(
    arr: npt.NDArray[Any], dtype: Any, what: str, png: bool = False
) -> npt.NDArray[Any]:
    """TensorFlow's image decoders' dtype conversions between uint8, uint16 and floats.

    Integers: uint8 -> uint16 is ``x * 256`` (a PNG: libpng's ``x * 257``), uint16 ->
    uint8 ``x // 256``. Floats:
    ``x * (1 / max)`` in the float type; a PNG goes through 16 bits first (libpng's
    ``x * 257``, then ``x * (1 / 65535)``), as TensorFlow decodes it.
    """
    want = np.dtype(
        getattr(dtype, "as_numpy_dtype", None) or getattr(dtype, "np_dtype", None) or dtype
    )
    if want == arr.dtype:
        return arr
    if want == np.uint16 and arr.dtype == np.uint8:
        return arr.astype(np.uint16) * np.uint16(257 if png else 256)
    if want == np.uint8 and arr.dtype == np.uint16:
        return (arr // 256).astype(np.uint8)
    if want in (np.float32, np.float16, np.float64):
        if png and arr.dtype == np.uint8:
            arr = arr.astype(np.uint16) * np.uint16(257)
        scale = want.type(1.0 / float(np.iinfo(arr.dtype).max))
        out: npt.NDArray[Any] = arr.astype(want) * scale
        return out
    raise TypeError(f"{what}: dtype must be uint8, uint16 or float32, got {want}")


def decode_jpeg(
    contents: Any,
    channels: int = 0,
    ratio: int = 1,
    fancy_upscaling: bool = True,
    try_recover_truncated: bool = False,
    acceptable_fraction: float = 1,
    dct_method: str = "",
    name: Optional[str] = None,
) -> npt.NDArray[np.uint8]:
    """Decode a JPEG into a uint8 ``(H, W, C)`` array, as ``tf.io.decode_jpeg``.

    ``contents``: the JPEG bytes, or what parsing returns for a string feature (a 0-d
    or one-element object array). ``channels``: 0 (as stored: 1 or 3), 1 (grayscale)
    or 3 (RGB). ``ratio``: 1, 2, 4 or 8, downscaling while decoding.
    ``dct_method``: ``""`` (default) or ``"INTEGER_FAST"``, or ``"INTEGER_ACCURATE"``.
    With the ``image`` extra installed (Pillow and simplejpeg: libjpeg-turbo with the
    DCT selectable) the pixels are TensorFlow's exactly for every ``dct_method``.
    With Pillow alone, ``"INTEGER_ACCURATE"``, grayscale and 4:4:4 JPEGs are exact;
    chroma-subsampled JPEGs (most photos) with the default ``dct_method`` are decoded
    with the accurate DCT and differ from TensorFlow's by at most ``JPEG_MAX_DIFF`` = 8
    (measured against TensorFlow 2.21; Pillow offers no fast DCT with fancy
    upsampling). ``TFRECORD_LITE_JPEG_BACKEND=pillow`` forces Pillow.
    ``fancy_upscaling``, ``try_recover_truncated`` and ``acceptable_fraction`` are
    accepted for TensorFlow compatibility (a truncated JPEG raises ``ParseError``);
    ``name`` is ignored. Needs the ``image`` extra.
    """
    del name, fancy_upscaling, acceptable_fraction, try_recover_truncated
    what = "decode_jpeg"
    ch = _check_channels(channels, (0, 1, 3), what)
    if ratio not in (1, 2, 4, 8):
        raise ValueError(f"{what}: ratio must be 1, 2, 4 or 8, got {ratio!r}")
    if dct_method not in _DCT_METHODS:
        raise ValueError(
            f"{what}: dct_method must be one of {list(_DCT_METHODS)}, got {dct_method!r}"
        )
    return decode_jpeg_pixels(image_bytes(contents, what), ch, dct_method, ratio, what)


#: Pillow's own decompression-bomb limit when Pillow is not installed (its default).
_PIL_MAX_PIXELS = 89478485


def _max_jpeg_pixels() -> Optional[int]:
    """Pixels above which a JPEG is refused, as Pillow refuses it (twice MAX_IMAGE_PIXELS)."""
    try:
        from PIL import Image
    except ImportError:
        return 2 * _PIL_MAX_PIXELS
    limit = Image.MAX_IMAGE_PIXELS
    return None if limit is None else 2 * int(limit)


def _jpeg_simplejpeg(data: bytes, channels: int, dct_method: str) -> Optional[npt.NDArray[Any]]:
    """libjpeg-turbo's decode with TensorFlow's settings, or None to let Pillow decide.

    None for JPEGs it does not take (CMYK / YCCK colour, a header it cannot read, a
    recoverable error such as a truncated file, more pixels than Pillow allows): Pillow
    then decodes them or raises the ``ParseError``.
    """
    sj = _simplejpeg()
    try:
        height, width, colorspace, _ = sj.decode_jpeg_header(data)
        colorspace = str(colorspace).lower()
        if colorspace not in ("gray", "rgb", "ycbcr"):
            return None
        limit = _max_jpeg_pixels()
        if limit is not None and int(height) * int(width) > limit:
            return None
        gray = channels == 1 or (channels == 0 and colorspace == "gray")
        out = sj.decode_jpeg(
            data,
            colorspace="GRAY" if gray else "RGB",
            fastdct=dct_method != "INTEGER_ACCURATE",
            fastupsample=False,
            strict=True,
        )
    except (ValueError, RuntimeError, OSError):
        return None
    arr = np.asarray(out, dtype=np.uint8)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return np.require(arr, requirements=("C", "W"))


def _jpeg_pillow(data: bytes, channels: int, dct_method: str, ratio: int, what: str) -> Any:
    img = _open(data, what)
    if img.format != "JPEG":
        raise ParseError(f"{what}: not a JPEG image (found {img.format})")
    draft_mode = "L" if channels == 1 and img.mode in ("RGB", "YCbCr") else None
    if draft_mode or ratio > 1:
        size = (max(1, img.size[0] // ratio), max(1, img.size[1] // ratio)) if ratio > 1 else None
        # libjpeg's own colour -> gray (the Y channel), as TensorFlow asks for it
        img.draft(draft_mode or img.mode, size)
    elif dct_method != "INTEGER_ACCURATE" and not _subsampled(img):
        # Pillow's "draft" decoder flag selects libjpeg's fast integer DCT, TensorFlow's
        # default (it also turns fancy upsampling off, which only matters when subsampled).
        img.decoderconfig = (1, 1)
    _load(img, what)
    if img.mode == "CMYK":
        img = img.convert("RGB")
    return _to_channels(_as_hwc(img, what), channels)


def decode_jpeg_pixels(
    data: bytes, channels: int = 0, dct_method: str = "", ratio: int = 1, what: str = "decode_jpeg"
) -> npt.NDArray[np.uint8]:
    """JPEG bytes to uint8 ``(H, W, C)`` pixels as ``tf.io.decode_jpeg`` gives them.

    The one JPEG decoder of the library (see the comment above ``JPEG_MAX_DIFF``).
    ``channels``: 0 (as stored: 1 for grayscale, else 3), 1 or 3; ``dct_method``:
    ``""``, ``"INTEGER_FAST"`` or ``"INTEGER_ACCURATE"``; ``ratio``: 1, 2, 4 or 8.
    Arguments are not checked here. Undecodable bytes raise ``ParseError``.
    """
    if ratio == 1 and jpeg_backend() == "simplejpeg":
        arr = _jpeg_simplejpeg(data, channels, dct_method)
        if arr is not None:
            return arr
    out: npt.NDArray[np.uint8] = _jpeg_pillow(data, channels, dct_method, ratio, what)
    return out


def decode_png(
    contents: Any, channels: int = 0, dtype: Any = np.uint8, name: Optional[str] = None
) -> npt.NDArray[Any]:
    """Decode a PNG into an ``(H, W, C)`` array, as ``tf.io.decode_png``.

    ``channels``: 0 (as stored), 1 (gray), 3 (RGB) or 4 (RGBA) (TensorFlow's
    choices); colour to gray is libpng's, as TensorFlow gets it. ``dtype``: ``np.uint8``
    (16-bit PNGs are scaled down, ``x // 256``) or ``np.uint16`` (8-bit PNGs are
    scaled up, ``x * 257``), TensorFlow's conversions. ``contents``: bytes or a 0-d /
    one-element object array. ``name`` is ignored. Needs Pillow.
    """
    del name
    what = "decode_png"
    ch = _check_channels(channels, (0, 1, 3, 4), what)
    want = np.dtype(getattr(dtype, "as_numpy_dtype", None) or dtype)
    if want not in (np.uint8, np.uint16):
        raise TypeError(f"{what}: dtype must be uint8 or uint16, got {want}")
    img = _open(image_bytes(contents, what), what)
    _load(img, what)
    arr = _as_hwc(img, what)
    return _convert_dtype(_to_channels(arr, ch), want, what, png=True)


def _frames(img: Any, what: str) -> list[npt.NDArray[Any]]:
    out = []
    n = int(getattr(img, "n_frames", 1))
    for i in range(n):
        img.seek(i)
        frame = img.convert("RGB")
        out.append(np.array(frame, dtype=np.uint8))
    return out


def tf_decode_image(
    contents: Any,
    channels: Optional[int] = None,
    dtype: Any = np.uint8,
    name: Optional[str] = None,
    expand_animations: bool = True,
) -> npt.NDArray[Any]:
    """Decode a BMP, GIF, JPEG or PNG, as ``tf.io.decode_image``.

    Returns ``(H, W, C)``; an animated GIF gives ``(frames, H, W, 3)`` (every GIF,
    as TensorFlow) unless ``expand_animations=False`` (then its first frame, 3-D).
    ``channels``: None / 0 (as stored), 1, 3 or 4. ``dtype``: ``np.uint8`` (default),
    ``np.uint16`` or ``np.float32`` (scaled to [0, 1] as ``tf.image.convert_image_dtype``).
    JPEGs decode as :func:`decode_jpeg` (default ``dct_method``), PNGs as
    :func:`decode_png`. ``contents``: bytes or a 0-d / one-element object array (what
    parsing returns). ``name`` is ignored. Needs Pillow.
    """
    del name
    what = "decode_image"
    ch = _check_channels(channels, (0, 1, 3, 4), what)
    data = image_bytes(contents, what)
    if data[:3] == b"\xff\xd8\xff":  # a JPEG (Pillow's test too): no need to open it twice
        if ch not in (0, 1, 3):
            raise ValueError(f"{what}: channels must be 0, 1 or 3 for a JPEG, got {ch}")
        return _convert_dtype(decode_jpeg_pixels(data, ch, what=what), dtype, what)
    img = _open(data, what)
    fmt = img.format
    if fmt == "PNG":
        _load(img, what)
        return _convert_dtype(_to_channels(_as_hwc(img, what), ch), dtype, what, png=True)
    if fmt == "GIF":
        if ch not in (0, 3):
            raise ValueError(f"{what}: channels must be 0 or 3 for a GIF, got {ch}")
        try:
            frames = _frames(img, what) if expand_animations else _frames_first(img)
        except (OSError, ValueError, EOFError) as e:
            raise ParseError(f"{what}: cannot decode image: {e}") from e
        stacked = np.stack(frames) if expand_animations else frames[0]
        return _convert_dtype(stacked, dtype, what)
    if fmt == "BMP":
        if ch not in (0, 1, 3, 4):
            raise ValueError(f"{what}: channels must be 0, 1, 3 or 4 for a BMP, got {ch}")
        _load(img, what)
        return _convert_dtype(_to_channels(_as_hwc(img, what), ch), dtype, what)
    raise ParseError(
        f"{what}: unknown image format {fmt!r}; TensorFlow's decode_image reads BMP, GIF, "
        "JPEG and PNG"
    )


def _frames_first(img: Any) -> list[npt.NDArray[Any]]:
    img.seek(0)
    return [np.array(img.convert("RGB"), dtype=np.uint8)]


def _hwc_for_encoding(image: Any, what: str, dtypes: tuple[Any, ...]) -> npt.NDArray[Any]:
    arr = np.asarray(image)
    if arr.ndim != 3:
        raise ValueError(f"{what}: image must be 3-dimensional (H, W, C), got shape {arr.shape}")
    if arr.dtype not in dtypes:
        names = " or ".join(np.dtype(d).name for d in dtypes)
        raise TypeError(f"{what}: image must be {names}, got {arr.dtype}")
    return np.ascontiguousarray(arr)


def encode_jpeg(
    image: Any,
    format: str = "",
    quality: int = 95,
    progressive: bool = False,
    optimize_size: bool = False,
    chroma_downsampling: bool = True,
    density_unit: str = "in",
    x_density: int = 300,
    y_density: int = 300,
    xmp_metadata: str = "",
    name: Optional[str] = None,
) -> bytes:
    """JPEG bytes of a uint8 ``(H, W, 1)`` or ``(H, W, 3)`` image, as ``tf.io.encode_jpeg``.

    ``format``: ``""`` (by the channels), ``"grayscale"`` or ``"rgb"``. ``quality``
    0-100; ``chroma_downsampling`` (default True) stores colour at 4:2:0 as TensorFlow,
    False at 4:4:4. ``progressive``, ``optimize_size``, the density and XMP metadata
    are written as asked. The bytes are libjpeg's via Pillow, not necessarily
    TensorFlow's byte for byte; TensorFlow decodes them to the same pixels as its own.
    ``name`` is ignored. Needs Pillow.
    """
    del name
    what = "encode_jpeg"
    arr = _hwc_for_encoding(image, what, (np.dtype(np.uint8),))
    c = arr.shape[2]
    if format not in ("", "grayscale", "rgb"):
        raise ValueError(f"{what}: format must be '', 'grayscale' or 'rgb', got {format!r}")
    want = {"grayscale": 1, "rgb": 3}.get(format, c)
    if c != want or c not in (1, 3):
        raise ValueError(
            f"{what}: image must have {'1 or 3' if not format else want} channels, got {c}"
        )
    if not 0 <= int(quality) <= 100:
        raise ValueError(f"{what}: quality must be in 0-100, got {quality}")
    if density_unit not in ("in", "cm"):
        raise ValueError(f"{what}: density_unit must be 'in' or 'cm', got {density_unit!r}")
    image_mod = pil_image()
    img = image_mod.fromarray(arr[:, :, 0] if c == 1 else arr)
    out = io.BytesIO()
    options: dict[str, Any] = {
        "quality": max(1, int(quality)),
        "subsampling": 2 if chroma_downsampling else 0,
        "progressive": bool(progressive),
        "optimize": bool(optimize_size),
    }
    if density_unit == "in":
        options["dpi"] = (int(x_density), int(y_density))
    if xmp_metadata:
        options["xmp"] = xmp_metadata.encode("utf-8")
    img.save(out, format="JPEG", **options)
    return out.getvalue()


def encode_png(image: Any, compression: int = -1, name: Optional[str] = None) -> bytes:
    """PNG bytes of an ``(H, W, C)`` image, as ``tf.io.encode_png``.

    uint8 with C = 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA); uint16 with C = 1.
    ``compression``: -1 (default level) or 0-9. Lossless: decoding gives ``image``
    back. ``name`` is ignored. Needs Pillow.
    """
    del name
    what = "encode_png"
    arr = _hwc_for_encoding(image, what, (np.dtype(np.uint8), np.dtype(np.uint16)))
    c = arr.shape[2]
    if c not in (1, 2, 3, 4):
        raise ValueError(f"{what}: image must have 1 to 4 channels, got {c}")
    if arr.dtype == np.uint16 and c != 1:
        raise ValueError(
            f"{what}: 16-bit images with {c} channels are not supported (Pillow); use 1"
        )
    if not -1 <= int(compression) <= 9:
        raise ValueError(f"{what}: compression must be -1 or 0-9, got {compression}")
    image_mod = pil_image()
    img = image_mod.fromarray(arr[:, :, 0] if c == 1 else arr)
    out = io.BytesIO()
    img.save(out, format="PNG", compress_level=6 if int(compression) < 0 else int(compression))
    return out.getvalue()
