"""``decode_raw``: feature bytes into NumPy numbers, as TensorFlow's.

:func:`decode_raw` follows ``tf.io.decode_raw`` (``DecodeRaw`` / ``DecodePaddedRaw``)
including its error texts.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from .._errors import ParseError

__all__ = ["decode_raw"]


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
