"""Which ``Feature`` kind a Python or NumPy value becomes, and its payload.

The contract: :func:`classify` turns one feature value into a *converted value*
``(kind, payload)``: ``kind`` is one of the ``KIND_*`` constants and ``payload`` is
already in the form the wire takes (``KIND_INT64``: packed varints; ``KIND_FLOAT``:
packed little-endian float32; ``KIND_BYTES``: a list of ``bytes``;
``KIND_FEATURE``: a serialized ``Feature``; ``KIND_EMPTY``: ``None``). A value it
cannot convert is a ``TypeError`` (wrong type) or ``ValueError`` (out of range, bad
text) whose message starts with where the value came from (a :data:`Where`,
formatted by :func:`describe_where` only when an error is raised). It has no side
effects and keeps no state, and it is the only place these rules live: the
protobuf messages and the hand-written bytes of :mod:`._build` and the columns of
:mod:`._encode_columns` all convert through it, so they agree value for value.

Which list a value goes into
----------------------------
Every value is converted by one set of rules (:func:`classify`):

=====================================================  ==============================
value                                                  feature
=====================================================  ==============================
``int``, ``bool``, NumPy integer / bool scalar         ``int64_list`` of 1 value
``float``, NumPy float16/32/64 scalar                  ``float_list`` of 1 value
``bytes``, ``bytearray``, ``memoryview``               ``bytes_list`` of 1 value
``str`` (stored as UTF-8)                              ``bytes_list`` of 1 value
list / tuple of the above                              one list of that kind
  ... mixing ints and floats                           ``float_list``
  ... empty                                            ``Feature()`` (no kind)
NumPy int / uint / bool array, **any** shape           ``int64_list``, flattened
NumPy float16/32/64 array, any shape                   ``float_list``, flattened
NumPy ``S`` / ``U`` / ``V`` / object array of bytes     ``bytes_list``, flattened
``tfr.train.Feature`` (or TensorFlow's ``tf.train.Feature``)  copied unchanged
other objects with ``__array__`` (torch, pandas, ...)  as ``np.asarray(value)``
=====================================================  ==============================

Notes and decisions:

* **No scalar unwrapping, ever.** ``[7]`` and ``7`` both give an ``int64_list``
  of one value; a one-element list stays a list when read back with a list spec.
* **Floats are stored as float32** (TensorFlow's ``FloatList``): ``0.1`` reads back
  as ``0.10000000149011612``; values beyond float32's range become ``inf``.
* **int64 range**: ints outside ``[-2**63, 2**63)`` (and uint64 values
  ``>= 2**63``) raise ``ValueError`` naming the key, as TensorFlow does
  (``Value out of range``). Negative ints take 10 bytes on the wire.
* **uint8 arrays are integers**, like every integer array: a ``(28, 28)`` uint8
  image becomes 784 int64 values (~2 bytes each on the wire). To store an image
  as raw bytes pass ``img.tobytes()`` (read it back with ``decode_raw``), or an
  encoded PNG/JPEG (:func:`tfrecord_lite._decoding._decode.encode_image`); for a batch of
  rows use :func:`bytes_rows`, which views each row as one bytes value.
* **Bytes are never decoded or re-encoded**: NUL bytes anywhere are kept. Only a
  ``str`` is turned into bytes (UTF-8). Beware that NumPy's fixed-width ``S``
  dtype itself drops trailing NUL bytes (``np.array([b"a\0"])[0] == b"a"``):
  use a list, an object array or a ``V`` (void) array for binary data.
* **Empty values**: an empty list / tuple / object array has no kind and gives an
  empty ``Feature()`` (TensorFlow parses it as *missing*: a ``FixedLenFeature``
  default applies). An empty typed NumPy array keeps its kind: ``np.array([],
  np.int64)`` gives an ``int64_list`` with no values (*present*, zero values).
* ``None`` is an error (``TypeError`` naming the key), never silently skipped; so
  are dicts, sets, complex numbers, nested lists, lists mixing bytes/str with
  numbers, object arrays holding arrays, and non-``str`` keys.

The mappings and names given to the builders are checked here too
(:func:`check_mapping`, :func:`check_key`), and so are the steps of a
``SequenceExample``'s feature list (:func:`classify_steps`: one kind per list).
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Optional

import numpy as np

from ._feature_kinds import KIND_BYTES, KIND_EMPTY, KIND_FEATURE, KIND_FLOAT, KIND_INT64
from ._wire import (
    SMALL_VARINT_LIMIT,
    SMALL_VARINTS,
    _encode_varints_array,
    encode_varint,
    encode_varints,
)

__all__ = [
    "FEATURE_LIST_NAMES",
    "INT64_MAX",
    "INT64_MIN",
    "KIND_BYTES",
    "KIND_EMPTY",
    "KIND_FEATURE",
    "KIND_FLOAT",
    "KIND_INT64",
    "KIND_NAMES",
    "Converted",
    "Where",
    "check_int64",
    "check_key",
    "check_mapping",
    "classify",
    "classify_steps",
    "describe_where",
    "feature_where",
    "float32_bytes",
    "message_name",
    "str_bytes",
]


# Kinds of a converted value (:mod:`._feature_kinds`), and what its payload is:
# KIND_EMPTY None; KIND_BYTES list[bytes]; KIND_FLOAT packed little-endian float32
# bytes; KIND_INT64 packed varint bytes; KIND_FEATURE a serialized Feature, copied as is.

#: Each kind's name, for error messages.
KIND_NAMES: Final = {
    KIND_EMPTY: "empty",
    KIND_BYTES: "bytes_list",
    KIND_FLOAT: "float_list",
    KIND_INT64: "int64_list",
    KIND_FEATURE: "Feature",
}


INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1

_F32: Final = struct.Struct("<f")

#: Full names of the messages copied as they are (ours and TensorFlow's).
_FEATURE_NAMES: Final = ("tfrecord_lite.Feature", "tensorflow.Feature")
FEATURE_LIST_NAMES: Final = ("tfrecord_lite.FeatureList", "tensorflow.FeatureList")


#: A converted value: ``(kind, payload)``.
Converted = tuple[int, Any]


#: Where a value comes from, for error messages: ``(prefix, key)`` formatted lazily by
#: :func:`describe_where` as ``prefix + repr(key)`` (or just ``prefix`` when key is None).
Where = tuple[str, object]


def feature_where(key: object) -> Where:
    """Where the value of feature ``key`` of an Example comes from."""
    return ("feature ", key)


def describe_where(where: Where) -> str:
    """The text of an error's location, built only when an error is raised."""
    prefix, key = where
    return prefix if key is None else f"{prefix}{key!r}"


def message_name(value: object) -> Optional[str]:
    """The full protobuf name of ``value``'s message type, or None for a non-message."""
    descriptor = getattr(value, "DESCRIPTOR", None)
    name = getattr(descriptor, "full_name", None)
    return name if isinstance(name, str) else None


def check_int64(where: Where, v: int) -> int:
    """``v``, or ``ValueError`` when it is outside int64."""
    if not INT64_MIN <= v <= INT64_MAX:
        raise ValueError(
            f"{describe_where(where)}: value {v} is out of int64 range [-2**63, 2**63)"
        )
    return v


def _int64_varints(where: Where, ints: Sequence[int]) -> bytes:
    """Packed varints of Python ints (already ``int``), range-checked."""
    if len(ints) <= 16:
        return b"".join([encode_varint(check_int64(where, v)) for v in ints])
    try:
        arr = np.array(ints, dtype=np.int64)
    except OverflowError:
        for v in ints:
            check_int64(where, v)
        raise  # pragma: no cover - one of them is out of range
    return encode_varints(arr)


def float32_bytes(where: Where, floats: Sequence[Any]) -> bytes:
    """Packed little-endian float32 of Python numbers (narrowed as TensorFlow does)."""
    if len(floats) == 1:
        try:
            return _F32.pack(floats[0])
        except OverflowError:  # finite but beyond float32: becomes +-inf below
            pass
    try:
        arr = np.array(floats, dtype=np.float64)
    except OverflowError as e:  # an int too large even for float64
        raise ValueError(f"{describe_where(where)}: {e}") from None
    with np.errstate(over="ignore"):
        return arr.astype("<f4").tobytes()


def str_bytes(where: Where, s: str) -> bytes:
    """``s`` as UTF-8; ``ValueError`` for text that has none (lone surrogates)."""
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{describe_where(where)}: string is not valid UTF-8 text: {e}") from None


# Element kinds inside a list: b(ytes-like) s(tr) i(nt) f(loat).
_ELEMENT_KIND: dict[type, str] = {
    bytes: "b",
    bytearray: "b",
    memoryview: "b",
    np.bytes_: "b",
    np.void: "b",
    str: "s",
    np.str_: "s",
    int: "i",
    bool: "i",
    np.bool_: "i",
    float: "f",
}


_INT_TYPES: tuple[type, ...] = (np.int8, np.int16, np.int32, np.int64)
_INT_TYPES += (np.uint8, np.uint16, np.uint32, np.uint64)
_FLOAT_TYPES: tuple[type, ...] = (np.float16, np.float32, np.float64, np.longdouble)
_ELEMENT_KIND.update(dict.fromkeys(_INT_TYPES, "i"))
_ELEMENT_KIND.update(dict.fromkeys(_FLOAT_TYPES, "f"))


def _element_kind(where: Where, t: type) -> str:
    kind = _ELEMENT_KIND.get(t)
    if kind is not None:
        return kind
    if t is type(None):
        raise TypeError(
            f"{describe_where(where)}: None is not a feature value (found inside a list)"
        )
    if issubclass(t, (bytes, bytearray, memoryview, np.void)):
        return "b"
    if issubclass(t, str):
        return "s"
    if issubclass(t, (int, np.integer, np.bool_)):
        return "i"
    if issubclass(t, (float, np.floating)) and not issubclass(t, np.complexfloating):
        return "f"
    if issubclass(t, (list, tuple, np.ndarray)):
        raise TypeError(
            f"{describe_where(where)}: nested sequences are not supported (got a {t.__name__} inside a list); "
            "a feature is one flat list of values: flatten it or pass a NumPy array"
        )
    raise TypeError(f"{describe_where(where)}: unsupported value type {t.__name__} inside a list")


def _elements_to_bytes(where: Where, seq: Iterable[Any]) -> list[bytes]:
    out = []
    for x in seq:
        if type(x) is bytes:
            out.append(x)
        elif isinstance(x, str):
            out.append(str_bytes(where, x))
        else:
            out.append(bytes(x))
    return out


def _classify_sequence(where: Where, seq: Sequence[Any]) -> Converted:
    """A list / tuple (or an object array's elements) of scalars."""
    if not seq:
        return KIND_EMPTY, None
    types = set(map(type, seq))
    if len(types) == 1:
        t = next(iter(types))
        if t is bytes:
            return KIND_BYTES, list(seq)
        if t is int:
            return KIND_INT64, _int64_varints(where, seq)
        if t is float:
            return KIND_FLOAT, float32_bytes(where, seq)
        if t is str:
            return KIND_BYTES, [str_bytes(where, s) for s in seq]
    kinds = {_element_kind(where, t) for t in types}
    if kinds <= {"b", "s"}:
        return KIND_BYTES, _elements_to_bytes(where, seq)
    if "b" in kinds or "s" in kinds:
        names = sorted({t.__name__ for t in types})
        raise TypeError(
            f"{describe_where(where)}: a list mixes bytes/str with numbers ({', '.join(names)}); "
            "a feature holds one kind of value"
        )
    if "f" in kinds:
        return KIND_FLOAT, float32_bytes(where, [float(x) for x in seq])
    # NumPy 2's bool scalars refuse operator.index(); they are 0/1 as everywhere else.
    ints = [int(x) if isinstance(x, np.bool_) else operator.index(x) for x in seq]
    return KIND_INT64, _int64_varints(where, ints)


def _int_array_varints(where: Where, arr: np.ndarray) -> bytes:
    if arr.dtype.kind == "b":
        return _encode_varints_array(arr).tobytes()
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size:
        top = int(arr.max())
        if top > INT64_MAX:
            raise ValueError(
                f"{describe_where(where)}: value {top} is out of int64 range [-2**63, 2**63)"
            )
    return encode_varints(arr)


def _void_elements(arr: np.ndarray) -> list[bytes]:
    """Each element of a (field-less) void array as its raw bytes."""
    n, width = arr.size, arr.dtype.itemsize
    buf = np.ascontiguousarray(arr).reshape(-1).tobytes()
    return [buf[i : i + width] for i in range(0, n * width, width)] if width else [b""] * n


def _classify_array(where: Where, arr: np.ndarray) -> Converted:
    kind = arr.dtype.kind
    if kind in "iub":
        return KIND_INT64, _int_array_varints(where, arr.reshape(-1))
    if kind == "f":
        with np.errstate(over="ignore"):
            return KIND_FLOAT, arr.astype("<f4").tobytes()
    if kind == "S":
        return KIND_BYTES, arr.reshape(-1).tolist()
    if kind == "U":
        return KIND_BYTES, [str_bytes(where, s) for s in arr.reshape(-1).tolist()]
    if kind == "V" and arr.dtype.names is None:
        return KIND_BYTES, _void_elements(arr)
    if kind == "O":
        return _classify_sequence(where, arr.reshape(-1).tolist())
    raise TypeError(
        f"{describe_where(where)}: unsupported NumPy dtype {arr.dtype} (array of shape {arr.shape})"
    )


def classify(where: Where, value: Any) -> Converted:
    """The single source of truth: which list a value goes into, and its payload."""
    t = type(value)
    if t is bytes:
        return KIND_BYTES, [value]
    if t is int:
        if 0 <= value < SMALL_VARINT_LIMIT:
            return KIND_INT64, SMALL_VARINTS[value]
        return KIND_INT64, encode_varint(check_int64(where, value))
    if t is float:
        return KIND_FLOAT, float32_bytes(where, (value,))
    if t is str:
        return KIND_BYTES, [str_bytes(where, value)]
    if t is list or t is tuple:
        return _classify_sequence(where, value)
    if t is np.ndarray:
        return _classify_array(where, value)
    if value is None:
        raise TypeError(
            f"{describe_where(where)}: None is not a feature value (leave the key out, or pass [] "
            "for an empty feature)"
        )
    if isinstance(value, (bytes, bytearray, memoryview)):
        return KIND_BYTES, [bytes(value)]
    if isinstance(value, str):
        return KIND_BYTES, [str_bytes(where, value)]
    if isinstance(value, int):  # bool, IntEnum, ...
        return KIND_INT64, encode_varint(check_int64(where, int(value)))
    if isinstance(value, float):  # np.float64 too
        return KIND_FLOAT, float32_bytes(where, (float(value),))
    if isinstance(value, (np.ndarray, np.generic)):
        return _classify_array(where, np.asarray(value))
    if isinstance(value, (list, tuple)):
        return _classify_sequence(where, value)
    if message_name(value) in _FEATURE_NAMES:
        return KIND_FEATURE, value.SerializeToString()
    if hasattr(value, "__array__"):  # torch / jax tensors, pandas Series, ...
        return _classify_array(where, np.asarray(value))
    raise TypeError(f"{describe_where(where)}: unsupported value type {t.__name__}")


def check_mapping(what: str, mapping: Any) -> Mapping[str, Any]:
    """``mapping`` (``None``: empty), or ``TypeError`` naming ``what`` for a non-mapping."""
    if mapping is None:
        return {}
    if not isinstance(mapping, Mapping):
        raise TypeError(
            f"{what} must be a mapping of feature name to value, not {type(mapping).__name__}"
        )
    return mapping


def check_key(key: Any) -> str:
    """A feature name as a plain ``str``; ``TypeError`` for a name of another type."""
    if type(key) is str:
        return key
    if isinstance(key, str):
        return str(key)
    raise TypeError(f"feature names must be str, got {type(key).__name__} {key!r}")


def classify_steps(where: Where, steps: Any) -> list[Converted]:
    """The per-step conversions of one feature list, all of one kind."""
    if isinstance(steps, np.ndarray):
        if steps.ndim == 0:
            raise TypeError(
                f"{describe_where(where)}: a feature list needs a sequence of steps, not a 0-d array"
            )
        items: Sequence[Any] = list(steps)
    elif isinstance(steps, (list, tuple)):
        items = steps
    else:
        raise TypeError(
            f"{describe_where(where)}: a feature list is a list of steps (or an array, one row per step), "
            f"not {type(steps).__name__}"
        )
    out = []
    seen: Optional[int] = None
    step_prefix = f"{describe_where(where)}, step "
    for i, step in enumerate(items):
        kind, payload = classify((step_prefix, i), step)
        if kind in (KIND_BYTES, KIND_FLOAT, KIND_INT64):
            if seen is None:
                seen = kind
            elif kind != seen:
                raise TypeError(
                    f"{describe_where(where)}: step {i} is a {KIND_NAMES[kind]} but earlier steps are "
                    f"{KIND_NAMES[seen]}; every step of a feature list holds one kind"
                )
        out.append((kind, payload))
    return out
