"""Building ``tf.train.Example`` / ``SequenceExample`` records from Python and NumPy values.

Two ways to build the same record:

* :func:`make_example` / :func:`make_sequence_example` return protobuf messages
  (``tfr.train.Example`` ...), for code that wants to inspect or edit them;
* :func:`encode_example` / :func:`encode_sequence_example` return the serialized
  bytes directly, written by hand with :mod:`tfrecord_lite._wire` — no protobuf
  object per record, several times faster. ``Example.FromString(encode_example(m))``
  always equals ``make_example(m)``: both go through the same value conversion.

Which list a value goes into
----------------------------
Every value is converted by one set of rules (:func:`_classify`):

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
  encoded PNG/JPEG (:func:`tfrecord_lite._decode.encode_image`); for a batch of
  rows use :func:`bytes_rows`, which views each row as one bytes value.
* **Bytes are never decoded or re-encoded**: NUL bytes anywhere are kept. Only a
  ``str`` is turned into bytes (UTF-8). Beware that NumPy's fixed-width ``S``
  dtype itself drops trailing NUL bytes (``np.array([b"a\\0"])[0] == b"a"``):
  use a list, an object array or a ``V`` (void) array for binary data.
* **Empty values**: an empty list / tuple / object array has no kind and gives an
  empty ``Feature()`` (TensorFlow parses it as *missing*: a ``FixedLenFeature``
  default applies). An empty typed NumPy array keeps its kind: ``np.array([],
  np.int64)`` gives an ``int64_list`` with no values (*present*, zero values).
* ``None`` is an error (``TypeError`` naming the key), never silently skipped; so
  are dicts, sets, complex numbers, nested lists, lists mixing bytes/str with
  numbers, object arrays holding arrays, and non-``str`` keys.
* Keys are written in the mapping's order (protobuf does not specify map order;
  any order parses the same).
"""

from __future__ import annotations

import functools
import operator
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Callable, Final, Optional, Union

import numpy as np
import numpy.typing as npt

from . import example_pb2, feature_pb2
from ._wire import (
    _encode_varints_array,
    decode_varints,
    encode_varint,
    encode_varints,
    varint_sizes,
)

__all__ = [
    "bytes_feature",
    "bytes_rows",
    "encode_example",
    "encode_sequence_example",
    "float_feature",
    "int64_feature",
    "make_example",
    "make_sequence_example",
]

# Kinds of a converted value.
_EMPTY: Final = 0  # Feature() with no kind; payload None
_BYTES: Final = 1  # payload: list[bytes]
_FLOAT: Final = 2  # payload: packed little-endian float32 bytes
_INT64: Final = 3  # payload: packed varint bytes
_FEATURE: Final = 4  # payload: a serialized Feature, copied as is

_KIND_NAMES: Final = {
    _EMPTY: "empty",
    _BYTES: "bytes_list",
    _FLOAT: "float_list",
    _INT64: "int64_list",
    _FEATURE: "Feature",
}

_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_F32: Final = struct.Struct("<f")

_FEATURE_NAMES: Final = ("tfrecord_lite.Feature", "tensorflow.Feature")
_FEATURE_LIST_NAMES: Final = ("tfrecord_lite.FeatureList", "tensorflow.FeatureList")

Converted = tuple[int, Any]


# --------------------------------------------------------------------------- conversion


def _where(key: object) -> str:
    return f"feature {key!r}"


def _message_name(value: object) -> Optional[str]:
    descriptor = getattr(value, "DESCRIPTOR", None)
    name = getattr(descriptor, "full_name", None)
    return name if isinstance(name, str) else None


def _check_int64(where: str, v: int) -> int:
    if not _INT64_MIN <= v <= _INT64_MAX:
        raise ValueError(f"{where}: value {v} is out of int64 range [-2**63, 2**63)")
    return v


def _int64_varints(where: str, ints: Sequence[int]) -> bytes:
    """Packed varints of Python ints (already ``int``), range-checked."""
    if len(ints) <= 16:
        return b"".join([encode_varint(_check_int64(where, v)) for v in ints])
    try:
        arr = np.array(ints, dtype=np.int64)
    except OverflowError:
        for v in ints:
            _check_int64(where, v)
        raise  # pragma: no cover - one of them is out of range
    return encode_varints(arr)


def _float32_bytes(where: str, floats: Sequence[Any]) -> bytes:
    """Packed little-endian float32 of Python numbers (narrowed as TensorFlow does)."""
    if len(floats) == 1:
        try:
            return _F32.pack(floats[0])
        except OverflowError:  # finite but beyond float32: becomes +-inf below
            pass
    try:
        arr = np.array(floats, dtype=np.float64)
    except OverflowError as e:  # an int too large even for float64
        raise ValueError(f"{where}: {e}") from None
    with np.errstate(over="ignore"):
        return arr.astype("<f4").tobytes()


def _str_bytes(where: str, s: str) -> bytes:
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{where}: string is not valid UTF-8 text: {e}") from None


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


def _element_kind(where: str, t: type) -> str:
    kind = _ELEMENT_KIND.get(t)
    if kind is not None:
        return kind
    if t is type(None):
        raise TypeError(f"{where}: None is not a feature value (found inside a list)")
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
            f"{where}: nested sequences are not supported (got a {t.__name__} inside a list); "
            "a feature is one flat list of values: flatten it or pass a NumPy array"
        )
    raise TypeError(f"{where}: unsupported value type {t.__name__} inside a list")


def _elements_to_bytes(where: str, seq: Iterable[Any]) -> list[bytes]:
    out = []
    for x in seq:
        if type(x) is bytes:
            out.append(x)
        elif isinstance(x, str):
            out.append(_str_bytes(where, x))
        else:
            out.append(bytes(x))
    return out


def _classify_sequence(where: str, seq: Sequence[Any]) -> Converted:
    """A list / tuple (or an object array's elements) of scalars."""
    if not seq:
        return _EMPTY, None
    types = set(map(type, seq))
    if len(types) == 1:
        t = next(iter(types))
        if t is bytes:
            return _BYTES, list(seq)
        if t is int:
            return _INT64, _int64_varints(where, seq)
        if t is float:
            return _FLOAT, _float32_bytes(where, seq)
        if t is str:
            return _BYTES, [_str_bytes(where, s) for s in seq]
    kinds = {_element_kind(where, t) for t in types}
    if kinds <= {"b", "s"}:
        return _BYTES, _elements_to_bytes(where, seq)
    if "b" in kinds or "s" in kinds:
        names = sorted({t.__name__ for t in types})
        raise TypeError(
            f"{where}: a list mixes bytes/str with numbers ({', '.join(names)}); "
            "a feature holds one kind of value"
        )
    if "f" in kinds:
        return _FLOAT, _float32_bytes(where, [float(x) for x in seq])
    return _INT64, _int64_varints(where, [operator.index(x) for x in seq])


def _int_array_varints(where: str, arr: np.ndarray) -> bytes:
    if arr.dtype.kind == "b":
        return _encode_varints_array(arr).tobytes()
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size:
        top = int(arr.max())
        if top > _INT64_MAX:
            raise ValueError(f"{where}: value {top} is out of int64 range [-2**63, 2**63)")
    return encode_varints(arr)


def _void_elements(arr: np.ndarray) -> list[bytes]:
    """Each element of a (field-less) void array as its raw bytes."""
    n, width = arr.size, arr.dtype.itemsize
    buf = np.ascontiguousarray(arr).reshape(-1).tobytes()
    return [buf[i : i + width] for i in range(0, n * width, width)] if width else [b""] * n


def _classify_array(where: str, arr: np.ndarray) -> Converted:
    kind = arr.dtype.kind
    if kind in "iub":
        return _INT64, _int_array_varints(where, arr.reshape(-1))
    if kind == "f":
        with np.errstate(over="ignore"):
            return _FLOAT, arr.astype("<f4").tobytes()
    if kind == "S":
        return _BYTES, arr.reshape(-1).tolist()
    if kind == "U":
        return _BYTES, [_str_bytes(where, s) for s in arr.reshape(-1).tolist()]
    if kind == "V" and arr.dtype.names is None:
        return _BYTES, _void_elements(arr)
    if kind == "O":
        return _classify_sequence(where, arr.reshape(-1).tolist())
    raise TypeError(f"{where}: unsupported NumPy dtype {arr.dtype} (array of shape {arr.shape})")


def _classify(where: str, value: Any) -> Converted:
    """The single source of truth: which list a value goes into, and its payload."""
    t = type(value)
    if t is bytes:
        return _BYTES, [value]
    if t is int:
        return _INT64, encode_varint(_check_int64(where, value))
    if t is float:
        return _FLOAT, _float32_bytes(where, (value,))
    if t is str:
        return _BYTES, [_str_bytes(where, value)]
    if t is list or t is tuple:
        return _classify_sequence(where, value)
    if t is np.ndarray:
        return _classify_array(where, value)
    if value is None:
        raise TypeError(
            f"{where}: None is not a feature value (leave the key out, or pass [] "
            "for an empty feature)"
        )
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _BYTES, [bytes(value)]
    if isinstance(value, str):
        return _BYTES, [_str_bytes(where, value)]
    if isinstance(value, int):  # bool, IntEnum, ...
        return _INT64, encode_varint(_check_int64(where, int(value)))
    if isinstance(value, float):  # np.float64 too
        return _FLOAT, _float32_bytes(where, (float(value),))
    if isinstance(value, (np.ndarray, np.generic)):
        return _classify_array(where, np.asarray(value))
    if isinstance(value, (list, tuple)):
        return _classify_sequence(where, value)
    if _message_name(value) in _FEATURE_NAMES:
        return _FEATURE, value.SerializeToString()
    raise TypeError(f"{where}: unsupported value type {t.__name__}")


# --------------------------------------------------------------------------- explicit kinds


def _to_list(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        return value
    return [value]


def int64_feature(value: Any) -> feature_pb2.Feature:
    """A ``Feature`` with an ``int64_list``: an int, a list of ints or an integer array.

    Booleans become 0/1; NumPy integer/bool arrays of any shape are flattened.
    Floats and bytes raise ``TypeError``; values outside int64 raise ``ValueError``.
    An empty list gives an ``int64_list`` with no values.
    """
    where = "int64_feature"
    kind, payload = _classify(where, _to_list(value))
    if kind == _EMPTY:
        kind, payload = _INT64, b""
    if kind != _INT64:
        raise TypeError(f"{where}: expected integers, got {_describe(value)}")
    return _build_feature(kind, payload)


def float_feature(value: Any) -> feature_pb2.Feature:
    """A ``Feature`` with a ``float_list``: a number, a list of numbers or a numeric array.

    Values are stored as float32 (``0.1`` reads back as ``0.10000000149011612``);
    ints and bools are converted. Bytes/str raise ``TypeError``.
    """
    where = "float_feature"
    value = _to_list(value)
    kind, payload = _classify(where, value)
    if kind == _EMPTY:
        kind, payload = _FLOAT, b""
    elif kind == _INT64:
        if isinstance(value, np.ndarray):
            with np.errstate(over="ignore"):
                payload = value.astype("<f4").tobytes()
        else:
            payload = _float32_bytes(where, [float(x) for x in value])
        kind = _FLOAT
    if kind != _FLOAT:
        raise TypeError(f"{where}: expected numbers, got {_describe(value)}")
    return _build_feature(kind, payload)


def bytes_feature(value: Any) -> feature_pb2.Feature:
    """A ``Feature`` with a ``bytes_list``: bytes-like or str values (str as UTF-8).

    Accepts one value, a list of them, or a NumPy ``S``/``U``/``V``/object array.
    Bytes are stored exactly as given. A numeric array raises ``TypeError``: pass
    ``arr.tobytes()`` to store its raw bytes as one value.
    """
    where = "bytes_feature"
    kind, payload = _classify(where, _to_list(value))
    if kind == _EMPTY:
        kind, payload = _BYTES, []
    if kind != _BYTES:
        hint = ""
        if isinstance(value, np.ndarray):
            hint = " (use arr.tobytes() to store an array's raw bytes as one value)"
        raise TypeError(f"{where}: expected bytes or str, got {_describe(value)}{hint}")
    return _build_feature(kind, payload)


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype}"
    if isinstance(value, (list, tuple)) and value:
        return f"a {type(value).__name__} of {type(value[0]).__name__}"
    return type(value).__name__


def bytes_rows(array: npt.ArrayLike) -> np.ndarray:
    """View each row of ``array`` (its first axis) as one raw-bytes value.

    Returns a 1-D NumPy void array of ``len(array)`` elements, each holding the
    C-order bytes of one row (zero-copy when ``array`` is C-contiguous). As a
    feature value or column it gives one ``bytes`` per row::

        images = np.zeros((n, 28, 28), np.uint8)
        columns = {"image": bytes_rows(images), "label": labels}   # image: 784 bytes each

    Read back with ``decode_raw(values, np.uint8).reshape(-1, 28, 28)``.
    """
    arr = np.ascontiguousarray(np.asarray(array))
    if arr.ndim == 0:
        raise ValueError("bytes_rows needs an array with at least one dimension")
    n = arr.shape[0]
    width = arr.dtype.itemsize * (arr.size // n if n else int(np.prod(arr.shape[1:])))
    if arr.dtype.kind == "O":
        raise TypeError("bytes_rows needs a numeric array, not an object array")
    return (
        arr.reshape(n, -1)
        .view(np.uint8)
        .reshape(n, width)
        .view(np.dtype((np.void, width)))
        .reshape(n)
    )


# --------------------------------------------------------------------------- protobuf objects


def _build_feature(kind: int, payload: Any) -> feature_pb2.Feature:
    feature = feature_pb2.Feature()
    _fill_feature(feature, kind, payload)
    return feature


def _fill_feature(feature: feature_pb2.Feature, kind: int, payload: Any) -> None:
    if kind == _INT64:
        feature.int64_list.SetInParent()
        if payload:
            feature.int64_list.value.extend(decode_varints(payload).tolist())
    elif kind == _FLOAT:
        feature.float_list.SetInParent()
        if payload:
            feature.float_list.value.extend(np.frombuffer(payload, "<f4").tolist())
    elif kind == _BYTES:
        feature.bytes_list.SetInParent()
        feature.bytes_list.value.extend(payload)
    elif kind == _FEATURE:
        feature.ParseFromString(payload)
    # _EMPTY: the map entry exists, with no kind set.


def _check_mapping(what: str, mapping: Any) -> Mapping[str, Any]:
    if mapping is None:
        return {}
    if not isinstance(mapping, Mapping):
        raise TypeError(
            f"{what} must be a mapping of feature name to value, not {type(mapping).__name__}"
        )
    return mapping


def _check_key(key: Any) -> str:
    if type(key) is str:
        return key
    if isinstance(key, str):
        return str(key)
    raise TypeError(f"feature names must be str, got {type(key).__name__} {key!r}")


def make_example(features: Mapping[str, Any]) -> example_pb2.Example:
    """Build a ``tfr.train.Example`` from ``{name: value}``; see the module notes for the rules.

    ``make_example({"label": 3, "image": img.tobytes(), "box": [0.1, 0.2, 0.5, 0.9]})``
    The ``features`` field is always set (an empty mapping serializes to ``0a 00``,
    as TensorFlow's ``Example(features=Features(feature={}))``).
    """
    features = _check_mapping("features", features)
    example = example_pb2.Example()
    example.features.SetInParent()
    fmap = example.features.feature
    for key, value in features.items():
        name = _check_key(key)
        kind, payload = _classify(_where(key), value)
        _fill_feature(fmap[name], kind, payload)
    return example


def _classify_steps(where: str, steps: Any) -> list[Converted]:
    """The per-step conversions of one feature list, all of one kind."""
    if isinstance(steps, np.ndarray):
        if steps.ndim == 0:
            raise TypeError(f"{where}: a feature list needs a sequence of steps, not a 0-d array")
        items: Sequence[Any] = list(steps)
    elif isinstance(steps, (list, tuple)):
        items = steps
    else:
        raise TypeError(
            f"{where}: a feature list is a list of steps (or an array, one row per step), "
            f"not {type(steps).__name__}"
        )
    out = []
    seen: Optional[int] = None
    for i, step in enumerate(items):
        kind, payload = _classify(f"{where} step {i}", step)
        if kind in (_BYTES, _FLOAT, _INT64):
            if seen is None:
                seen = kind
            elif kind != seen:
                raise TypeError(
                    f"{where}: step {i} is a {_KIND_NAMES[kind]} but earlier steps are "
                    f"{_KIND_NAMES[seen]}; every step of a feature list holds one kind"
                )
        out.append((kind, payload))
    return out


def make_sequence_example(
    context: Optional[Mapping[str, Any]] = None,
    feature_lists: Optional[Mapping[str, Any]] = None,
) -> example_pb2.SequenceExample:
    """Build a ``tfr.train.SequenceExample``.

    ``context`` is like :func:`make_example`'s mapping. ``feature_lists`` maps a
    name to its steps: a list whose items are each converted like a feature value,
    or a NumPy array (one step per row, ``arr[i]`` flattened), or a
    ``tfr.train.FeatureList``. All non-empty steps of one list must share a kind.
    Both fields are always set, so ``None`` and ``{}`` give the same record.
    """
    context = _check_mapping("context", context)
    feature_lists = _check_mapping("feature_lists", feature_lists)
    seq = example_pb2.SequenceExample()
    seq.context.SetInParent()
    seq.feature_lists.SetInParent()
    cmap = seq.context.feature
    for key, value in context.items():
        name = _check_key(key)
        kind, payload = _classify(f"context feature {key!r}", value)
        _fill_feature(cmap[name], kind, payload)
    lmap = seq.feature_lists.feature_list
    for key, steps in feature_lists.items():
        name = _check_key(key)
        flist = lmap[name]
        if _message_name(steps) in _FEATURE_LIST_NAMES:
            flist.ParseFromString(steps.SerializeToString())
            continue
        for kind, payload in _classify_steps(f"feature list {key!r}", steps):
            _fill_feature(flist.feature.add(), kind, payload)
    return seq


# --------------------------------------------------------------------------- wire encoding


def _feature_bytes(kind: int, payload: Any) -> bytes:
    """Serialized ``Feature`` of a converted value (same bytes protobuf writes)."""
    if kind == _BYTES:
        parts = []
        for b in payload:
            parts.append(b"\x0a")
            parts.append(encode_varint(len(b)))
            parts.append(b)
        body = b"".join(parts)
        return b"".join((b"\x0a", encode_varint(len(body)), body))
    if kind in (_INT64, _FLOAT):
        tag = b"\x1a" if kind == _INT64 else b"\x12"
        n = len(payload)
        if not n:
            return tag + b"\x00"
        ln = encode_varint(n)
        return b"".join((tag, encode_varint(1 + len(ln) + n), b"\x0a", ln, payload))
    if kind == _FEATURE:
        return payload  # type: ignore[no-any-return]
    return b""


@functools.lru_cache(maxsize=4096)
def _key_field(name: str) -> bytes:
    """``key`` field of a map entry: ``0a len name``."""
    raw = _str_bytes(f"feature name {name!r}", name)
    return b"\x0a" + encode_varint(len(raw)) + raw


def _entry(name: str, value_bytes: bytes) -> bytes:
    """One map entry (``Features.feature`` or ``FeatureLists.feature_list``), with its tag."""
    kf = _key_field(name)
    lv = encode_varint(len(value_bytes))
    size = len(kf) + 1 + len(lv) + len(value_bytes)
    return b"".join((b"\x0a", encode_varint(size), kf, b"\x12", lv, value_bytes))


def _features_body(what: str, features: Mapping[str, Any]) -> bytes:
    parts = []
    for key, value in features.items():
        name = _check_key(key)
        kind, payload = _classify(f"{what}{key!r}", value)
        parts.append(_entry(name, _feature_bytes(kind, payload)))
    return b"".join(parts)


def encode_example(features: Mapping[str, Any]) -> bytes:
    """Serialize ``{name: value}`` as a ``tf.train.Example`` (see the module notes for the rules).

    Equivalent to ``make_example(features).SerializeToString()`` up to the order of
    the map entries (here: the mapping's order), but written directly.
    """
    body = _features_body("feature ", _check_mapping("features", features))
    return b"".join((b"\x0a", encode_varint(len(body)), body))


def encode_sequence_example(
    context: Optional[Mapping[str, Any]] = None,
    feature_lists: Optional[Mapping[str, Any]] = None,
) -> bytes:
    """Serialize a ``tf.train.SequenceExample``; arguments as :func:`make_sequence_example`."""
    ctx = _features_body("context feature ", _check_mapping("context", context))
    entries = []
    for key, steps in _check_mapping("feature_lists", feature_lists).items():
        name = _check_key(key)
        if _message_name(steps) in _FEATURE_LIST_NAMES:
            flist = steps.SerializeToString()
        else:
            parts = []
            for kind, payload in _classify_steps(f"feature list {key!r}", steps):
                fb = _feature_bytes(kind, payload)
                parts.append(b"\x0a")
                parts.append(encode_varint(len(fb)))
                parts.append(fb)
            flist = b"".join(parts)
        entries.append(_entry(name, flist))
    lists = b"".join(entries)
    return b"".join(
        (b"\x0a", encode_varint(len(ctx)), ctx, b"\x12", encode_varint(len(lists)), lists)
    )


# --------------------------------------------------------------------------- columns


# Feature-internal header before the data, for data of d bytes, per column kind.
def _int64_header(d: int) -> bytes:
    if not d:
        return b"\x1a\x00"
    ln = encode_varint(d)
    return b"\x1a" + encode_varint(1 + len(ln) + d) + b"\x0a" + ln


def _float_header(d: int) -> bytes:
    if not d:
        return b"\x12\x00"
    ln = encode_varint(d)
    return b"\x12" + encode_varint(1 + len(ln) + d) + b"\x0a" + ln


def _single_bytes_header(d: int) -> bytes:
    ln = encode_varint(d)
    return b"\x0a" + encode_varint(1 + len(ln) + d) + b"\x0a" + ln


def _no_header(d: int) -> bytes:
    return b""


class _Column:
    """One column of ``_encode_columns``: per-record data of ``d[i]`` bytes plus headers.

    Record ``i``'s map entry is ``prefix(d[i]) + data_i``; ``prefix`` depends only
    on the key, the column kind and ``d[i]``.
    """

    __slots__ = ("_cache", "_header", "_key_field", "d", "data_2d", "data_list")

    def __init__(
        self,
        name: str,
        header: Callable[[int], bytes],
        d: npt.NDArray[np.int64],
        data_list: Callable[[], list[bytes]],
        data_2d: Callable[[npt.NDArray[np.intp], int], npt.NDArray[np.uint8]],
    ) -> None:
        self._key_field = _key_field(name)
        self._header = header
        self._cache: dict[int, bytes] = {}
        self.d = d
        self.data_list = data_list
        self.data_2d = data_2d

    def prefix(self, d: int) -> bytes:
        p = self._cache.get(d)
        if p is None:
            fh = self._header(d)
            f = len(fh) + d
            lf = encode_varint(f)
            size = len(self._key_field) + 1 + len(lf) + f
            p = b"".join((b"\x0a", encode_varint(size), self._key_field, b"\x12", lf, fh))
            self._cache[d] = p
        return p

    def prefixes(self, values: npt.NDArray[np.int64]) -> tuple[list[bytes], npt.NDArray[np.intp]]:
        """Distinct prefixes of ``values`` and the index of each value's prefix."""
        uniq, inverse = np.unique(values, return_inverse=True)
        return [self.prefix(int(u)) for u in uniq], inverse.reshape(-1)


def _split(buf: bytes, ends: npt.NDArray[np.int64]) -> list[bytes]:
    starts = [0, *ends[:-1].tolist()]
    return [buf[a:b] for a, b in zip(starts, ends.tolist())]


def _rows_2d(
    data: list[bytes], idx: npt.NDArray[np.intp], width: int, everything: bool
) -> npt.NDArray[np.uint8]:
    if everything:
        joined = b"".join(data)
    else:
        joined = b"".join([data[i] for i in idx.tolist()])
    return np.frombuffer(joined, dtype=np.uint8).reshape(len(idx), width)


def _bytes_list_column(name: str, values: list[bytes], n: int) -> _Column:
    d = np.fromiter(map(len, values), dtype=np.int64, count=n)

    def data_2d(idx: npt.NDArray[np.intp], width: int) -> npt.NDArray[np.uint8]:
        return _rows_2d(values, idx, width, len(idx) == n)

    return _Column(name, _single_bytes_header, d, lambda: values, data_2d)


def _void_column(name: str, arr: np.ndarray, n: int) -> _Column:
    width = arr.dtype.itemsize
    rows = np.ascontiguousarray(arr).view(np.uint8).reshape(n, width)
    d = np.full(n, width, dtype=np.int64)

    def data_list() -> list[bytes]:
        buf = rows.tobytes()
        return [buf[i : i + width] for i in range(0, n * width, width)] if width else [b""] * n

    def data_2d(idx: npt.NDArray[np.intp], w: int) -> npt.NDArray[np.uint8]:
        return rows if len(idx) == n else rows[idx]

    return _Column(name, _single_bytes_header, d, data_list, data_2d)


def _int_column(where: str, name: str, values: np.ndarray, n: int) -> _Column:
    """``values``: (n, m) integer/bool array; each record gets its row."""
    if values.dtype.kind == "u" and values.dtype.itemsize == 8 and values.size:
        top = int(values.max())
        if top > _INT64_MAX:
            raise ValueError(f"{where}: value {top} is out of int64 range [-2**63, 2**63)")
    if values.dtype.kind == "b":
        values = values.astype(np.uint8)
    sizes = varint_sizes(values)
    d = sizes.sum(axis=1, dtype=np.int64)
    single_width = bool(sizes.size) and int(sizes.max()) == 1

    def data_list() -> list[bytes]:
        return _split(_encode_varints_array(values).tobytes(), np.cumsum(d))

    def data_2d(idx: npt.NDArray[np.intp], width: int) -> npt.NDArray[np.uint8]:
        sub = values if len(idx) == n else values[idx]
        if single_width:
            return sub.astype(np.uint8)
        return _encode_varints_array(sub).reshape(len(idx), width)

    return _Column(name, _int64_header, d, data_list, data_2d)


def _float_column(name: str, values: np.ndarray, n: int) -> _Column:
    with np.errstate(over="ignore"):
        f32 = np.ascontiguousarray(values, dtype="<f4")
    rows = f32.view(np.uint8).reshape(n, -1)
    width = rows.shape[1]
    d = np.full(n, width, dtype=np.int64)

    def data_list() -> list[bytes]:
        buf = rows.tobytes()
        return [buf[i : i + width] for i in range(0, n * width, width)] if width else [b""] * n

    def data_2d(idx: npt.NDArray[np.intp], w: int) -> npt.NDArray[np.uint8]:
        return rows if len(idx) == n else rows[idx]

    return _Column(name, _float_header, d, data_list, data_2d)


def _generic_column(where: str, name: str, values: Any, n: int) -> _Column:
    """Any per-record values: each converted like an ``encode_example`` value."""
    feats = []
    seen: Optional[int] = None
    for i in range(n):
        kind, payload = _classify(f"{where} (record {i})", values[i])
        if kind in (_BYTES, _FLOAT, _INT64):
            if seen is None:
                seen = kind
            elif kind != seen:
                raise TypeError(
                    f"{where}: record {i} is a {_KIND_NAMES[kind]} but earlier records are "
                    f"{_KIND_NAMES[seen]}; a column holds one kind of value "
                    "(convert it first, e.g. with np.asarray(column, np.float32))"
                )
        feats.append(_feature_bytes(kind, payload))
    d = np.fromiter(map(len, feats), dtype=np.int64, count=n)

    def data_2d(idx: npt.NDArray[np.intp], width: int) -> npt.NDArray[np.uint8]:
        return _rows_2d(feats, idx, width, len(idx) == n)

    return _Column(name, _no_header, d, lambda: feats, data_2d)


def _make_column(name: str, values: Any, n: int) -> _Column:
    where = _where(name)
    if isinstance(values, np.ndarray):
        if values.ndim == 0:
            raise ValueError(f"{where}: a column needs one value per record, got a 0-d array")
        if len(values) != n:
            raise ValueError(f"{where}: column has {len(values)} values, expected {n}")
        kind = values.dtype.kind
        if kind in "iub":
            return _int_column(where, name, values.reshape(n, -1), n)
        if kind == "f":
            return _float_column(name, values.reshape(n, -1), n)
        if values.ndim == 1:
            if kind == "V" and values.dtype.names is None:
                return _void_column(name, values, n)
            if kind == "S":
                return _bytes_list_column(name, values.tolist(), n)
            if kind == "U":
                return _bytes_list_column(name, [_str_bytes(where, s) for s in values.tolist()], n)
            if kind == "O":
                return _make_column(name, values.tolist(), n)
        if kind in "SUVO":
            return _generic_column(where, name, values, n)
        raise TypeError(f"{where}: unsupported NumPy dtype {values.dtype} for a column")
    if isinstance(values, (str, bytes, bytearray, memoryview, Mapping)) or not isinstance(
        values, Sequence
    ):
        raise TypeError(
            f"{where}: a column is a list or array with one value per record, "
            f"not {type(values).__name__}"
        )
    if len(values) != n:
        raise ValueError(f"{where}: column has {len(values)} values, expected {n}")
    types = set(map(type, values))
    if len(types) == 1:
        t = next(iter(types))
        if t is bytes:
            return _bytes_list_column(name, list(values), n)
        if t is str:
            return _bytes_list_column(name, [_str_bytes(where, s) for s in values], n)
        if t is int:
            try:
                arr = np.array(values, dtype=np.int64)
            except OverflowError:
                for v in values:
                    _check_int64(where, v)
                raise  # pragma: no cover
            return _int_column(where, name, arr.reshape(n, 1), n)
        if t is float:
            return _float_column(name, np.array(values, dtype=np.float64).reshape(n, 1), n)
    return _generic_column(where, name, values, n)


def _encode_columns(columns: Mapping[str, Any], n: int) -> list[bytes]:
    """Serialize ``n`` Examples from columns: record ``i`` holds ``{k: columns[k][i]}``.

    A column is a list or array of length ``n``. Record ``i`` gets exactly what
    ``encode_example({k: columns[k][i] for k in columns})`` would give it: a
    ``(n, ...)`` numeric array gives each record its row, flattened; a ``(n,)``
    bytes/str/object array or list gives each record one value (or, for list
    items, that list). In addition all non-empty records of a column must share
    one kind (``TypeError`` otherwise: no column changing type from row to row).

    The work is done column-wise with NumPy: records whose per-column data sizes
    are the same are laid out together as rows of one 2-D byte array.
    """
    if n < 0:
        raise ValueError(f"number of records must be >= 0, got {n}")
    cols = [
        _make_column(_check_key(k), v, n) for k, v in _check_mapping("columns", columns).items()
    ]
    if n == 0:
        return []
    if not cols:
        return [b"\x0a\x00"] * n
    if all(int(c.d.min()) == int(c.d.max()) for c in cols):
        return _assemble_groups(cols, [np.arange(n)], n)
    dmat = np.stack([c.d for c in cols], axis=1)
    _, inverse = np.unique(dmat, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n_groups = int(inverse.max()) + 1
    if n_groups * 32 <= n:
        order = np.argsort(inverse, kind="stable")
        bounds = np.cumsum(np.bincount(inverse, minlength=n_groups))[:-1]
        return _assemble_groups(cols, np.split(order, bounds), n)
    return _assemble_join(cols, n)


def _assemble_groups(
    cols: list[_Column], groups: list[npt.NDArray[np.intp]], n: int
) -> list[bytes]:
    """Records of equal layout as rows of one (group size, record size) byte array."""
    result: list[bytes] = [b""] * n
    for idx in groups:
        first = int(idx[0])
        pieces: list[Union[bytes, npt.NDArray[np.uint8]]] = []
        body = 0
        for c in cols:
            d = int(c.d[first])
            p = c.prefix(d)
            pieces.append(p)
            pieces.append(c.data_2d(idx, d))
            body += len(p) + d
        head = b"\x0a" + encode_varint(body)
        size = len(head) + body
        m = len(idx)
        out = np.empty((m, size), dtype=np.uint8)
        out[:, : len(head)] = np.frombuffer(head, dtype=np.uint8)
        pos = len(head)
        for piece in pieces:
            if isinstance(piece, bytes):
                w = len(piece)
                out[:, pos : pos + w] = np.frombuffer(piece, dtype=np.uint8)
            else:
                w = piece.shape[1]
                out[:, pos : pos + w] = piece
            pos += w
        buf = out.tobytes()
        records = [buf[i : i + size] for i in range(0, m * size, size)]
        if m == n:
            return records
        for i, rec in zip(idx.tolist(), records):
            result[i] = rec
    return result


def _assemble_join(cols: list[_Column], n: int) -> list[bytes]:
    """Records of varying layout: join each record's pieces."""
    lists: list[list[bytes]] = []
    body = np.zeros(n, dtype=np.int64)
    for c in cols:
        uniq, inverse = c.prefixes(c.d)
        lens = np.fromiter(map(len, uniq), dtype=np.int64, count=len(uniq))
        body += lens[inverse] + c.d
        lists.append(np.array(uniq, dtype=object)[inverse].tolist())
        lists.append(c.data_list())
    ub, binv = np.unique(body, return_inverse=True)
    heads = [b"\x0a" + encode_varint(int(b)) for b in ub]
    lists.insert(0, np.array(heads, dtype=object)[binv.reshape(-1)].tolist())
    return [b"".join(parts) for parts in zip(*lists)]
