"""TensorFlow's ``TensorProto`` bytes: ``serialize_tensor``, ``parse_tensor``, ``decode_json_example``.

``tf.io.serialize_tensor(t)`` stores a whole tensor (any shape, any dtype, strings
too) as one serialized ``tensorflow.TensorProto``; TensorFlow's TFRecord tutorial
keeps non-scalar features that way, in a ``bytes`` feature. The bytes written here
are TensorFlow's (numbers as little-endian ``tensor_content``, strings as
``string_val``), and :func:`parse_tensor` reads every form TensorFlow may write
(``tensor_content`` or the typed ``*_val`` fields, a short typed field being
filled with its last value as TensorFlow does).

:func:`decode_json_example` turns ``tf.train.Example`` records written in
protobuf's JSON mapping into the binary records the parsers read.
"""

from __future__ import annotations

import base64
import math
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from .. import example_pb2, tensor_pb2
from .._errors import ParseError

__all__ = ["decode_json_example", "parse_tensor", "serialize_tensor"]

#: NumPy dtype -> TensorFlow DataType value (tensor.proto's enum).
_TO_DT: dict[np.dtype[Any], int] = {
    np.dtype(np.float32): 1,
    np.dtype(np.float64): 2,
    np.dtype(np.int32): 3,
    np.dtype(np.uint8): 4,
    np.dtype(np.int16): 5,
    np.dtype(np.int8): 6,
    np.dtype(np.complex64): 8,
    np.dtype(np.int64): 9,
    np.dtype(np.bool_): 10,
    np.dtype(np.uint16): 17,
    np.dtype(np.complex128): 18,
    np.dtype(np.float16): 19,
    np.dtype(np.uint32): 22,
    np.dtype(np.uint64): 23,
}
_FROM_DT: dict[int, np.dtype[Any]] = {v: k for k, v in _TO_DT.items()}
DT_STRING = 7
#: TensorFlow's DataTypeString names, used in its error messages.
_DT_NAMES = {
    1: "float",
    2: "double",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    8: "complex64",
    9: "int64",
    10: "bool",
    14: "bfloat16",
    17: "uint16",
    18: "complex128",
    19: "half",
    20: "resource",
    21: "variant",
    22: "uint32",
    23: "uint64",
}
#: A typed ``*_val`` field shorter than the shape is filled (TensorFlow's rule); the
#: fill may not make more than this many bytes (a few bytes of hostile input must
#: never allocate gigabytes).
MAX_FILL_BYTES = 1 << 30

_TF_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "bool": "bool"}
_STRING_NAMES = frozenset({"string", "bytes", "str", "object", "unicode"})


def _dt_name(dt: int) -> str:
    return _DT_NAMES.get(dt, f"DataType {dt}")


def _as_data_type(out_type: Any) -> int:
    """The DataType value ``out_type`` names (``tfr.float32``, ``np.uint8``, ``"string"`` ...)."""
    if out_type in (bytes, str, object):
        return DT_STRING
    if out_type is float:
        return 1
    if out_type is int:
        return 9
    if out_type is bool:
        return 10
    name: Any = None
    if isinstance(out_type, str):
        name = out_type.strip().lower()
        for prefix in ("tfr.", "tf.", "np.", "numpy."):
            if name.startswith(prefix):
                name = name[len(prefix) :]
        if name in _STRING_NAMES:
            return DT_STRING
        name = _TF_ALIASES.get(name, name)
        try:
            dtype = np.dtype(name)
        except TypeError:
            raise TypeError(f"parse_tensor: unknown out_type {out_type!r}") from None
    else:
        # tfr.float32 / tfr.string carry .np_dtype, TensorFlow's dtypes .as_numpy_dtype.
        inner = getattr(out_type, "np_dtype", None)
        if inner is None:
            inner = getattr(out_type, "as_numpy_dtype", None)
        if getattr(out_type, "name", None) == "string":
            return DT_STRING
        try:
            dtype = np.dtype(out_type if inner is None else inner)
        except TypeError:
            raise TypeError(f"parse_tensor: unknown out_type {out_type!r}") from None
    if dtype.kind in "OSU":
        return DT_STRING
    dt = _TO_DT.get(dtype.newbyteorder("="))
    if dt is None:
        raise TypeError(f"parse_tensor: unsupported out_type {out_type!r} ({dtype})")
    return dt


def _element_bytes(x: Any) -> bytes:
    if isinstance(x, bytes):
        return x
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, (bytearray, memoryview, np.bytes_)):
        return bytes(x)
    raise TypeError(
        f"serialize_tensor: a string tensor must hold bytes or str, got {type(x).__name__}"
    )


def serialize_tensor(tensor: Any, name: Optional[str] = None) -> bytes:
    """A serialized ``TensorProto`` of ``tensor``, byte for byte ``tf.io.serialize_tensor``.

    ``tensor``: a NumPy array, scalar, nested list, ``bytes`` or ``str`` (anything
    ``np.asarray`` takes). Numbers: bool, int8-64, uint8-64, float16/32/64,
    complex64/128, written as little-endian ``tensor_content``. Strings (``S``, ``U``
    or object arrays of ``bytes``/``str``; ``str`` is stored as UTF-8) are written as
    ``string_val``. Scalars and empty arrays keep their shapes. Python ints become
    int64 and floats float64 (NumPy's defaults; TensorFlow's ``tf.constant`` would
    pick int32 / float32: pass an array of the dtype you mean). ``name`` is accepted
    for TensorFlow compatibility and ignored. Read back with :func:`parse_tensor`.
    """
    del name
    if isinstance(tensor, (bytes, str)):
        arr: npt.NDArray[Any] = np.empty((), dtype=object)
        arr[()] = tensor
    else:
        arr = np.asarray(tensor)
    proto = tensor_pb2.TensorProto()
    proto.tensor_shape.SetInParent()  # present even for a scalar, as TensorFlow writes it
    for d in arr.shape:
        proto.tensor_shape.dim.add(size=int(d))
    if arr.dtype.kind in "OSU":
        proto.dtype = DT_STRING  # type: ignore[assignment]
        proto.string_val.extend(_element_bytes(x) for x in arr.reshape(-1).tolist())
        return proto.SerializeToString()
    dtype = arr.dtype.newbyteorder("=") if arr.dtype.byteorder != "|" else arr.dtype
    dt = _TO_DT.get(dtype)
    if dt is None:
        raise TypeError(
            f"serialize_tensor: unsupported dtype {arr.dtype}; TensorFlow tensors hold bool, "
            "(u)int8-64, float16/32/64, complex64/128 or strings"
        )
    proto.dtype = dt  # type: ignore[assignment]
    if arr.size:
        proto.tensor_content = np.ascontiguousarray(arr, dtype=dtype.newbyteorder("<")).tobytes()
    return proto.SerializeToString()


def _serialized_bytes(serialized: Any, what: str) -> bytes:
    if isinstance(serialized, bytes):
        return serialized
    if isinstance(serialized, (bytearray, memoryview, np.bytes_)):
        return bytes(serialized)
    if isinstance(serialized, np.ndarray) and serialized.ndim == 0:
        return _serialized_bytes(serialized.item(), what)
    if isinstance(serialized, np.ndarray) and serialized.size == 1 and serialized.ndim == 1:
        return _serialized_bytes(serialized[0], what)
    raise TypeError(
        f"{what}: serialized must be one bytes value (or a 0-d array of it), "
        f"got {type(serialized).__name__}"
    )


def _fill(values: Any, n: int, dtype: np.dtype[Any], dt: int, field: str) -> npt.NDArray[Any]:
    """A typed ``*_val`` field as ``n`` elements: fewer values are filled with the last one."""
    have = len(values)
    if have > n:
        raise ParseError(
            f"Could not parse TensorProto: {field} holds {have} values but the shape holds {n}"
        )
    if n * max(dtype.itemsize, 1) > MAX_FILL_BYTES and have < n:
        raise ParseError(
            f"TensorProto of {_dt_name(dt)} claims {n} elements from {have} values: more than "
            f"the {MAX_FILL_BYTES} bytes parse_tensor fills"
        )
    out = np.zeros(n, dtype=dtype)
    if have:
        out[:have] = np.asarray(values).astype(dtype, copy=False)
        out[have:] = out[have - 1]
    return out


def _values(proto: Any, dt: int, n: int) -> npt.NDArray[Any]:
    dtype = _FROM_DT[dt]
    if proto.tensor_content:
        content = proto.tensor_content
        want = n * dtype.itemsize
        if len(content) != want:
            raise ParseError(
                f"Could not parse TensorProto: tensor_content has {len(content)} bytes, "
                f"the shape needs {want} ({n} x {_dt_name(dt)})"
            )
        flat = np.frombuffer(content, dtype=dtype.newbyteorder("<"))
        if dtype.kind == "b":
            flat = np.frombuffer(content, dtype=np.uint8) != 0
        return flat.astype(dtype)  # native order, writable
    if dt in (1,):
        return _fill(proto.float_val, n, dtype, dt, "float_val")
    if dt == 2:
        return _fill(proto.double_val, n, dtype, dt, "double_val")
    if dt in (3, 4, 5, 6, 17):
        return _fill(proto.int_val, n, dtype, dt, "int_val")
    if dt == 9:
        return _fill(proto.int64_val, n, dtype, dt, "int64_val")
    if dt == 10:
        return _fill(proto.bool_val, n, dtype, dt, "bool_val")
    if dt == 22:
        return _fill(proto.uint32_val, n, dtype, dt, "uint32_val")
    if dt == 23:
        return _fill(proto.uint64_val, n, dtype, dt, "uint64_val")
    if dt == 19:
        bits = _fill(proto.half_val, n, np.dtype(np.uint16), dt, "half_val")
        return bits.view(np.float16)
    # complex: real and imaginary parts interleaved
    field = "scomplex_val" if dt == 8 else "dcomplex_val"
    parts: npt.NDArray[Any] = np.asarray(getattr(proto, field), dtype=np.float64)
    if parts.size % 2:
        raise ParseError(f"Could not parse TensorProto: {field} holds an odd number of values")
    pairs: npt.NDArray[Any] = np.empty(parts.size // 2, dtype=np.complex128)
    pairs.real = parts[0::2]
    pairs.imag = parts[1::2]
    return _fill(pairs, n, dtype, dt, field)


def parse_tensor(serialized: Any, out_type: Any, name: Optional[str] = None) -> npt.NDArray[Any]:
    """The array in a serialized ``TensorProto``, like ``tf.io.parse_tensor``.

    ``serialized``: the bytes (``tf.io.serialize_tensor``'s or
    :func:`serialize_tensor`'s), also as a 0-d object array as parsing returns it.
    ``out_type``: the dtype it holds (``tfr.float32``, ``np.uint8``, ``tfr.string``,
    ``"double"``, TensorFlow's ``tf.int64`` ...); a different stored type raises
    :class:`~tfrecord_lite.ParseError` with TensorFlow's text (``Type mismatch
    between parsed tensor (int32) and dtype (float)``). Numbers come back as a
    writable array of the stored shape in native byte order; strings as an object
    array of ``bytes`` (a 0-d array for a scalar). Bytes that are not a
    ``TensorProto``, or whose shape and values disagree, raise ``ParseError``.
    ``name`` is accepted for TensorFlow compatibility and ignored.
    """
    del name
    want = _as_data_type(out_type)
    data = _serialized_bytes(serialized, "parse_tensor")
    proto = tensor_pb2.TensorProto()
    try:
        proto.ParseFromString(data)
    except Exception:  # protobuf's DecodeError, or a RuntimeWarning-free ValueError
        shown = base64.b64encode(data[:48]).decode("ascii")
        raise ParseError(
            f"Could not parse `serialized` as TensorProto, base64: {shown}"
            + ("..." if len(data) > 48 else "")
        ) from None
    dt = int(proto.dtype)
    if dt != want:
        raise ParseError(
            f"Type mismatch between parsed tensor ({_dt_name(dt)}) and dtype ({_dt_name(want)})"
        )
    if proto.tensor_shape.unknown_rank:
        raise ParseError("Could not parse TensorProto: its shape has an unknown rank")
    shape = tuple(int(d.size) for d in proto.tensor_shape.dim)
    if any(d < 0 for d in shape):
        raise ParseError(f"Could not parse TensorProto: its shape {list(shape)} is not known")
    n = math.prod(shape)
    if dt == DT_STRING:
        values = list(proto.string_val)
        if len(values) > n:
            raise ParseError(
                f"Could not parse TensorProto: string_val holds {len(values)} values "
                f"but the shape holds {n}"
            )
        if len(values) < n:  # filled with the last value (b"" when none), as TensorFlow
            if n > MAX_FILL_BYTES // 8:
                raise ParseError(
                    f"TensorProto of string claims {n} elements from {len(values)} values: "
                    f"more than parse_tensor fills"
                )
            values += [values[-1] if values else b""] * (n - len(values))
        out: npt.NDArray[Any] = np.empty(n, dtype=object)
        out[:] = values
        return out.reshape(shape)
    if dt not in _FROM_DT:
        raise ParseError(f"parse_tensor: TensorProto of {_dt_name(dt)} is not supported")
    return _values(proto, dt, n).reshape(shape)


def _json_text(x: Any) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, (bytes, bytearray, memoryview, np.bytes_)):
        return bytes(x).decode("utf-8")
    raise TypeError(f"decode_json_example: elements must be str or bytes, got {type(x).__name__}")


def decode_json_example(json_examples: Any, name: Optional[str] = None) -> npt.NDArray[Any]:
    """Examples written as JSON -> serialized binary Examples, like ``tf.io.decode_json_example``.

    Each element is one ``tf.train.Example`` in protobuf's JSON mapping, e.g.
    ``{"features": {"feature": {"a": {"int64List": {"value": ["1", 2]}}}}}``
    (``bytesList`` values are base64; field names may also be written
    ``int64_list``). ``json_examples``: a ``str``/``bytes`` or a list / array of
    them; the result is an object array of ``bytes`` of the same shape (0-d for one
    string), ready for :func:`tfrecord_lite.parse_example`. Invalid JSON or a field
    an Example does not have raises :class:`~tfrecord_lite.ParseError` naming the
    element. ``name`` is accepted for TensorFlow compatibility and ignored.
    """
    del name
    from google.protobuf import json_format

    if isinstance(json_examples, (str, bytes, bytearray, np.str_, np.bytes_)):
        arr: npt.NDArray[Any] = np.empty((), dtype=object)
        arr[()] = json_examples
    else:
        arr = np.asarray(json_examples, dtype=object)
    flat = arr.reshape(-1)
    out: npt.NDArray[Any] = np.empty(flat.size, dtype=object)
    for i, x in enumerate(flat.tolist()):
        text = _json_text(x)
        message = example_pb2.Example()
        try:
            json_format.Parse(text, message)
        except json_format.ParseError as e:
            where = f"element {i}: " if arr.ndim else ""
            raise ParseError(f"Error while parsing JSON: {where}{e}") from None
        out[i] = message.SerializeToString(deterministic=True)
    return out.reshape(arr.shape)
