"""Building ``tf.train.Example`` / ``SequenceExample`` records from Python and NumPy values.

Two ways to build the same record:

* :func:`make_example` / :func:`make_sequence_example` return protobuf messages
  (``tfr.train.Example`` ...), for code that wants to inspect or edit them;
* :func:`encode_example` / :func:`encode_sequence_example` return the serialized
  bytes directly, written by hand with :mod:`tfrecord_lite._examples._wire` — no protobuf
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
* Keys are written in the mapping's order (protobuf does not specify map order;
  any order parses the same).
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Optional

import numpy as np
import numpy.typing as npt

from .. import example_pb2, feature_pb2
from ._wire import (
    SMALL_VARINT_LIMIT,
    SMALL_VARINTS,
    _encode_varints_array,
    decode_varints,
    encode_varint,
    encode_varints,
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


#: Where a value comes from, for error messages: ``(prefix, key)`` formatted lazily by
#: :func:`_fmt` as ``prefix + repr(key)`` (or just ``prefix`` when key is None).
Where = tuple[str, object]


def _where(key: object) -> Where:
    return ("feature ", key)


def _fmt(where: Where) -> str:
    """The text of an error's location, built only when an error is raised."""
    prefix, key = where
    return prefix if key is None else f"{prefix}{key!r}"


def _message_name(value: object) -> Optional[str]:
    descriptor = getattr(value, "DESCRIPTOR", None)
    name = getattr(descriptor, "full_name", None)
    return name if isinstance(name, str) else None


def _check_int64(where: Where, v: int) -> int:
    if not _INT64_MIN <= v <= _INT64_MAX:
        raise ValueError(f"{_fmt(where)}: value {v} is out of int64 range [-2**63, 2**63)")
    return v


def _int64_varints(where: Where, ints: Sequence[int]) -> bytes:
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


def _float32_bytes(where: Where, floats: Sequence[Any]) -> bytes:
    """Packed little-endian float32 of Python numbers (narrowed as TensorFlow does)."""
    if len(floats) == 1:
        try:
            return _F32.pack(floats[0])
        except OverflowError:  # finite but beyond float32: becomes +-inf below
            pass
    try:
        arr = np.array(floats, dtype=np.float64)
    except OverflowError as e:  # an int too large even for float64
        raise ValueError(f"{_fmt(where)}: {e}") from None
    with np.errstate(over="ignore"):
        return arr.astype("<f4").tobytes()


def _str_bytes(where: Where, s: str) -> bytes:
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{_fmt(where)}: string is not valid UTF-8 text: {e}") from None


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
        raise TypeError(f"{_fmt(where)}: None is not a feature value (found inside a list)")
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
            f"{_fmt(where)}: nested sequences are not supported (got a {t.__name__} inside a list); "
            "a feature is one flat list of values: flatten it or pass a NumPy array"
        )
    raise TypeError(f"{_fmt(where)}: unsupported value type {t.__name__} inside a list")


def _elements_to_bytes(where: Where, seq: Iterable[Any]) -> list[bytes]:
    out = []
    for x in seq:
        if type(x) is bytes:
            out.append(x)
        elif isinstance(x, str):
            out.append(_str_bytes(where, x))
        else:
            out.append(bytes(x))
    return out


def _classify_sequence(where: Where, seq: Sequence[Any]) -> Converted:
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
            f"{_fmt(where)}: a list mixes bytes/str with numbers ({', '.join(names)}); "
            "a feature holds one kind of value"
        )
    if "f" in kinds:
        return _FLOAT, _float32_bytes(where, [float(x) for x in seq])
    # NumPy 2's bool scalars refuse operator.index(); they are 0/1 as everywhere else.
    ints = [int(x) if isinstance(x, np.bool_) else operator.index(x) for x in seq]
    return _INT64, _int64_varints(where, ints)


def _int_array_varints(where: Where, arr: np.ndarray) -> bytes:
    if arr.dtype.kind == "b":
        return _encode_varints_array(arr).tobytes()
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size:
        top = int(arr.max())
        if top > _INT64_MAX:
            raise ValueError(f"{_fmt(where)}: value {top} is out of int64 range [-2**63, 2**63)")
    return encode_varints(arr)


def _void_elements(arr: np.ndarray) -> list[bytes]:
    """Each element of a (field-less) void array as its raw bytes."""
    n, width = arr.size, arr.dtype.itemsize
    buf = np.ascontiguousarray(arr).reshape(-1).tobytes()
    return [buf[i : i + width] for i in range(0, n * width, width)] if width else [b""] * n


def _classify_array(where: Where, arr: np.ndarray) -> Converted:
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
    raise TypeError(
        f"{_fmt(where)}: unsupported NumPy dtype {arr.dtype} (array of shape {arr.shape})"
    )


def _classify(where: Where, value: Any) -> Converted:
    """The single source of truth: which list a value goes into, and its payload."""
    t = type(value)
    if t is bytes:
        return _BYTES, [value]
    if t is int:
        if 0 <= value < SMALL_VARINT_LIMIT:
            return _INT64, SMALL_VARINTS[value]
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
            f"{_fmt(where)}: None is not a feature value (leave the key out, or pass [] "
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
    if hasattr(value, "__array__"):  # torch / jax tensors, pandas Series, ...
        return _classify_array(where, np.asarray(value))
    raise TypeError(f"{_fmt(where)}: unsupported value type {t.__name__}")


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
    where: Where = ("int64_feature", None)
    kind, payload = _classify(where, _to_list(value))
    if kind == _EMPTY:
        kind, payload = _INT64, b""
    if kind != _INT64:
        raise TypeError(f"{_fmt(where)}: expected integers, got {_describe(value)}")
    return _build_feature(kind, payload)


def float_feature(value: Any) -> feature_pb2.Feature:
    """A ``Feature`` with a ``float_list``: a number, a list of numbers or a numeric array.

    Values are stored as float32 (``0.1`` reads back as ``0.10000000149011612``);
    ints and bools are converted. Bytes/str raise ``TypeError``.
    """
    where: Where = ("float_feature", None)
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
        raise TypeError(f"{_fmt(where)}: expected numbers, got {_describe(value)}")
    return _build_feature(kind, payload)


def bytes_feature(value: Any) -> feature_pb2.Feature:
    """A ``Feature`` with a ``bytes_list``: bytes-like or str values (str as UTF-8).

    Accepts one value, a list of them, or a NumPy ``S``/``U``/``V``/object array.
    Bytes are stored exactly as given. A numeric array raises ``TypeError``: pass
    ``arr.tobytes()`` to store its raw bytes as one value.
    """
    where: Where = ("bytes_feature", None)
    kind, payload = _classify(where, _to_list(value))
    if kind == _EMPTY:
        kind, payload = _BYTES, []
    if kind != _BYTES:
        hint = ""
        if isinstance(value, np.ndarray):
            hint = " (use arr.tobytes() to store an array's raw bytes as one value)"
        raise TypeError(f"{_fmt(where)}: expected bytes or str, got {_describe(value)}{hint}")
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
    arr = np.asarray(array)
    if arr.ndim == 0:
        raise ValueError("bytes_rows needs an array with at least one dimension")
    arr = np.ascontiguousarray(arr)
    if arr.dtype.kind == "O":
        raise TypeError("bytes_rows needs a numeric array, not an object array")
    n = arr.shape[0]
    width = arr.dtype.itemsize * int(np.prod(arr.shape[1:], dtype=np.int64))
    row_type = np.dtype((np.void, width))
    if width == 0 or n == 0:
        return np.zeros(n, dtype=row_type)
    return arr.reshape(n, -1).view(np.uint8).reshape(n, width).view(row_type).reshape(n)


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


def _classify_steps(where: Where, steps: Any) -> list[Converted]:
    """The per-step conversions of one feature list, all of one kind."""
    if isinstance(steps, np.ndarray):
        if steps.ndim == 0:
            raise TypeError(
                f"{_fmt(where)}: a feature list needs a sequence of steps, not a 0-d array"
            )
        items: Sequence[Any] = list(steps)
    elif isinstance(steps, (list, tuple)):
        items = steps
    else:
        raise TypeError(
            f"{_fmt(where)}: a feature list is a list of steps (or an array, one row per step), "
            f"not {type(steps).__name__}"
        )
    out = []
    seen: Optional[int] = None
    step_prefix = f"{_fmt(where)}, step "
    for i, step in enumerate(items):
        kind, payload = _classify((step_prefix, i), step)
        if kind in (_BYTES, _FLOAT, _INT64):
            if seen is None:
                seen = kind
            elif kind != seen:
                raise TypeError(
                    f"{_fmt(where)}: step {i} is a {_KIND_NAMES[kind]} but earlier steps are "
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
        kind, payload = _classify(("context feature ", key), value)
        _fill_feature(cmap[name], kind, payload)
    lmap = seq.feature_lists.feature_list
    for key, steps in feature_lists.items():
        name = _check_key(key)
        flist = lmap[name]
        if _message_name(steps) in _FEATURE_LIST_NAMES:
            flist.ParseFromString(steps.SerializeToString())
            continue
        for kind, payload in _classify_steps(("feature list ", key), steps):
            _fill_feature(flist.feature.add(), kind, payload)
    return seq


def _vlen(n: int) -> bytes:
    """Varint of a length (``n >= 0``)."""
    return SMALL_VARINTS[n] if n < SMALL_VARINT_LIMIT else encode_varint(n)


def _feature_pieces(kind: int, payload: Any) -> tuple[list[bytes], int]:
    """The serialized ``Feature`` of a converted value, as pieces, and its size.

    ``b"".join(pieces)`` is what protobuf writes for the same Feature.
    """
    if kind == _BYTES:
        pieces = [b"\x0a", b""]  # [1]: the BytesList size, known at the end
        body = 0
        for b in payload:
            n = len(b)
            nv = SMALL_VARINTS[n] if n < SMALL_VARINT_LIMIT else encode_varint(n)
            pieces += (b"\x0a", nv, b)
            body += 1 + len(nv) + n
        bv = SMALL_VARINTS[body] if body < SMALL_VARINT_LIMIT else encode_varint(body)
        pieces[1] = bv
        return pieces, 1 + len(bv) + body
    if kind == _INT64 or kind == _FLOAT:  # noqa: SIM109 (faster than a tuple test)
        tag = b"\x1a" if kind == _INT64 else b"\x12"
        n = len(payload)
        if not n:
            return [tag, b"\x00"], 2
        nv = SMALL_VARINTS[n] if n < SMALL_VARINT_LIMIT else encode_varint(n)
        inner = 1 + len(nv) + n
        iv = SMALL_VARINTS[inner] if inner < SMALL_VARINT_LIMIT else encode_varint(inner)
        return [tag, iv, b"\x0a", nv, payload], 1 + len(iv) + inner
    if kind == _FEATURE:
        return [payload], len(payload)
    return [], 0


def _feature_bytes(kind: int, payload: Any) -> bytes:
    """Serialized ``Feature`` of a converted value (same bytes protobuf writes)."""
    return b"".join(_feature_pieces(kind, payload)[0])


_KEY_FIELDS: dict[str, bytes] = {}


def _key_field(name: Any) -> bytes:
    """``key`` field of a map entry (``0a len utf8``); ``TypeError`` unless ``name`` is a str."""
    kf = _KEY_FIELDS.get(name)
    if kf is None:
        name = _check_key(name)
        raw = _str_bytes(("feature name ", name), name)
        kf = b"\x0a" + _vlen(len(raw)) + raw
        if len(_KEY_FIELDS) >= 65536:
            _KEY_FIELDS.clear()
        _KEY_FIELDS[name] = kf
    return kf


def _add_entry(parts: list[bytes], name: Any, value: list[bytes], size: int) -> int:
    """Append one map entry (with its tag) of a value given as pieces; return its size."""
    kf = _key_field(name)
    sv = _vlen(size)
    entry = len(kf) + 1 + len(sv) + size
    ev = _vlen(entry)
    parts += (b"\x0a", ev, kf, b"\x12", sv)
    parts += value
    return 1 + len(ev) + entry


def _add_features(parts: list[bytes], prefix: str, features: Any) -> int:
    """Append the entries of a ``Features`` message; return their total size."""
    if type(features) is not dict:
        features = _check_mapping("features" if prefix == "feature " else "context", features)
    # The per-record hot loop of encode_example: _add_entry and _vlen inlined.
    small, limit, key_fields = SMALL_VARINTS, SMALL_VARINT_LIMIT, _KEY_FIELDS
    total = 0
    for key, value in features.items():
        pieces, size = _feature_pieces(*_classify((prefix, key), value))
        kf = key_fields.get(key) or _key_field(key)
        sv = small[size] if size < limit else encode_varint(size)
        entry = len(kf) + 1 + len(sv) + size
        ev = small[entry] if entry < limit else encode_varint(entry)
        parts += (b"\x0a", ev, kf, b"\x12", sv)
        parts += pieces
        total += 1 + len(ev) + entry
    return total


def encode_example(features: Mapping[str, Any]) -> bytes:
    """Serialize ``{name: value}`` as a ``tf.train.Example`` (see the module notes for the rules).

    Parses to exactly ``make_example(features)``; the bytes are the same as
    ``make_example(features).SerializeToString()`` up to the order of the map
    entries (here: the mapping's order; protobuf leaves map order unspecified).
    """
    parts = [b"\x0a", b""]
    body = _add_features(parts, "feature ", features)
    parts[1] = _vlen(body)
    return b"".join(parts)


def encode_sequence_example(
    context: Optional[Mapping[str, Any]] = None,
    feature_lists: Optional[Mapping[str, Any]] = None,
) -> bytes:
    """Serialize a ``tf.train.SequenceExample``; arguments as :func:`make_sequence_example`.

    Parses to exactly ``make_sequence_example(context, feature_lists)``.
    """
    parts = [b"\x0a", b""]
    ctx = _add_features(parts, "context feature ", _check_mapping("context", context))
    parts[1] = _vlen(ctx)
    parts += (b"\x12", b"")
    at = len(parts) - 1
    lists = 0
    for key, steps in _check_mapping("feature_lists", feature_lists).items():
        if _message_name(steps) in _FEATURE_LIST_NAMES:
            flist = steps.SerializeToString()
            lists += _add_entry(parts, key, [flist], len(flist))
            continue
        _key_field(key)  # check the name before the steps
        pieces: list[bytes] = []
        size = 0
        for kind, payload in _classify_steps(("feature list ", key), steps):
            fp, fs = _feature_pieces(kind, payload)
            fv = _vlen(fs)
            pieces += (b"\x0a", fv)
            pieces += fp
            size += 1 + len(fv) + fs
        lists += _add_entry(parts, key, pieces, size)
    parts[at] = _vlen(lists)
    return b"".join(parts)
