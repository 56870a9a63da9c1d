"""Building ``tf.train.Example`` / ``SequenceExample`` records from Python and NumPy values.

Two ways to build the same record:

* :func:`make_example` / :func:`make_sequence_example` return protobuf messages
  (``tfr.train.Example`` ...), for code that wants to inspect or edit them;
* :func:`encode_example` / :func:`encode_sequence_example` return the serialized
  bytes directly, written by hand from the pieces of :mod:`._feature_wire` — no
  protobuf object per record, several times faster. ``Example.FromString(encode_example(m))``
  always equals ``make_example(m)``: both convert each value with
  :func:`._classify.classify`, whose module documentation gives the rules (which
  list a value goes into, float32 and int64 ranges, empty values, errors).

:func:`int64_feature`, :func:`float_feature` and :func:`bytes_feature` build one
``Feature`` of a given kind; :func:`bytes_rows` views an array's rows as bytes values.
Keys are written in the mapping's order (protobuf does not specify map order; any
order parses the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from .. import example_pb2, feature_pb2
from ._classify import (
    FEATURE_LIST_NAMES,
    KIND_BYTES,
    KIND_EMPTY,
    KIND_FEATURE,
    KIND_FLOAT,
    KIND_INT64,
    Where,
    check_key,
    check_mapping,
    classify,
    classify_steps,
    describe_where,
    feature_where,
    float32_bytes,
    message_name,
)
from ._feature_wire import KEY_FIELDS, add_entry, feature_pieces, key_field, vlen
from ._wire import SMALL_VARINT_LIMIT, SMALL_VARINTS, decode_varints, encode_varint

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
    kind, payload = classify(where, _to_list(value))
    if kind == KIND_EMPTY:
        kind, payload = KIND_INT64, b""
    if kind != KIND_INT64:
        raise TypeError(f"{describe_where(where)}: expected integers, got {_describe(value)}")
    return _build_feature(kind, payload)


def float_feature(value: Any) -> feature_pb2.Feature:
    """A ``Feature`` with a ``float_list``: a number, a list of numbers or a numeric array.

    Values are stored as float32 (``0.1`` reads back as ``0.10000000149011612``);
    ints and bools are converted. Bytes/str raise ``TypeError``.
    """
    where: Where = ("float_feature", None)
    value = _to_list(value)
    kind, payload = classify(where, value)
    if kind == KIND_EMPTY:
        kind, payload = KIND_FLOAT, b""
    elif kind == KIND_INT64:
        if isinstance(value, np.ndarray):
            with np.errstate(over="ignore"):
                payload = value.astype("<f4").tobytes()
        else:
            payload = float32_bytes(where, [float(x) for x in value])
        kind = KIND_FLOAT
    if kind != KIND_FLOAT:
        raise TypeError(f"{describe_where(where)}: expected numbers, got {_describe(value)}")
    return _build_feature(kind, payload)


def bytes_feature(value: Any) -> feature_pb2.Feature:
    """A ``Feature`` with a ``bytes_list``: bytes-like or str values (str as UTF-8).

    Accepts one value, a list of them, or a NumPy ``S``/``U``/``V``/object array.
    Bytes are stored exactly as given. A numeric array raises ``TypeError``: pass
    ``arr.tobytes()`` to store its raw bytes as one value.
    """
    where: Where = ("bytes_feature", None)
    kind, payload = classify(where, _to_list(value))
    if kind == KIND_EMPTY:
        kind, payload = KIND_BYTES, []
    if kind != KIND_BYTES:
        hint = ""
        if isinstance(value, np.ndarray):
            hint = " (use arr.tobytes() to store an array's raw bytes as one value)"
        raise TypeError(
            f"{describe_where(where)}: expected bytes or str, got {_describe(value)}{hint}"
        )
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
    if kind == KIND_INT64:
        feature.int64_list.SetInParent()
        if payload:
            feature.int64_list.value.extend(decode_varints(payload).tolist())
    elif kind == KIND_FLOAT:
        feature.float_list.SetInParent()
        if payload:
            feature.float_list.value.extend(np.frombuffer(payload, "<f4").tolist())
    elif kind == KIND_BYTES:
        feature.bytes_list.SetInParent()
        feature.bytes_list.value.extend(payload)
    elif kind == KIND_FEATURE:
        feature.ParseFromString(payload)


def make_example(features: Mapping[str, Any]) -> example_pb2.Example:
    """Build a ``tfr.train.Example`` from ``{name: value}``.

    A value is an int, float, bytes or str, a list of them, a NumPy array of any
    shape (flattened) or a ``Feature``; :mod:`tfrecord_lite._examples._classify`
    gives the rules (which list each becomes, ranges, empty values, errors).

    ``make_example({"label": 3, "image": img.tobytes(), "box": [0.1, 0.2, 0.5, 0.9]})``
    The ``features`` field is always set (an empty mapping serializes to ``0a 00``,
    as TensorFlow's ``Example(features=Features(feature={}))``).
    """
    features = check_mapping("features", features)
    example = example_pb2.Example()
    example.features.SetInParent()
    fmap = example.features.feature
    for key, value in features.items():
        name = check_key(key)
        kind, payload = classify(feature_where(key), value)
        _fill_feature(fmap[name], kind, payload)
    return example


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
    context = check_mapping("context", context)
    feature_lists = check_mapping("feature_lists", feature_lists)
    seq = example_pb2.SequenceExample()
    seq.context.SetInParent()
    seq.feature_lists.SetInParent()
    cmap = seq.context.feature
    for key, value in context.items():
        name = check_key(key)
        kind, payload = classify(("context feature ", key), value)
        _fill_feature(cmap[name], kind, payload)
    lmap = seq.feature_lists.feature_list
    for key, steps in feature_lists.items():
        name = check_key(key)
        flist = lmap[name]
        if message_name(steps) in FEATURE_LIST_NAMES:
            flist.ParseFromString(steps.SerializeToString())
            continue
        for kind, payload in classify_steps(("feature list ", key), steps):
            _fill_feature(flist.feature.add(), kind, payload)
    return seq


def _add_features(parts: list[bytes], prefix: str, features: Any) -> int:
    """Append the entries of a ``Features`` message; return their total size."""
    if type(features) is not dict:
        features = check_mapping("features" if prefix == "feature " else "context", features)
    # The per-record hot loop of encode_example: add_entry and vlen inlined.
    small, limit, key_fields = SMALL_VARINTS, SMALL_VARINT_LIMIT, KEY_FIELDS
    total = 0
    for key, value in features.items():
        pieces, size = feature_pieces(*classify((prefix, key), value))
        kf = key_fields.get(key) or key_field(key)
        sv = small[size] if size < limit else encode_varint(size)
        entry = len(kf) + 1 + len(sv) + size
        ev = small[entry] if entry < limit else encode_varint(entry)
        parts += (b"\x0a", ev, kf, b"\x12", sv)
        parts += pieces
        total += 1 + len(ev) + entry
    return total


def encode_example(features: Mapping[str, Any]) -> bytes:
    """Serialize ``{name: value}`` as a ``tf.train.Example`` (values as for :func:`make_example`).

    Parses to exactly ``make_example(features)``; the bytes are the same as
    ``make_example(features).SerializeToString()`` up to the order of the map
    entries (here: the mapping's order; protobuf leaves map order unspecified).
    """
    parts = [b"\x0a", b""]
    body = _add_features(parts, "feature ", features)
    parts[1] = vlen(body)
    return b"".join(parts)


def encode_sequence_example(
    context: Optional[Mapping[str, Any]] = None,
    feature_lists: Optional[Mapping[str, Any]] = None,
) -> bytes:
    """Serialize a ``tf.train.SequenceExample``; arguments as :func:`make_sequence_example`.

    Parses to exactly ``make_sequence_example(context, feature_lists)``.
    """
    parts = [b"\x0a", b""]
    ctx = _add_features(parts, "context feature ", check_mapping("context", context))
    parts[1] = vlen(ctx)
    parts += (b"\x12", b"")
    at = len(parts) - 1
    lists = 0
    for key, steps in check_mapping("feature_lists", feature_lists).items():
        if message_name(steps) in FEATURE_LIST_NAMES:
            flist = steps.SerializeToString()
            lists += add_entry(parts, key, [flist], len(flist))
            continue
        key_field(key)  # check the name before the steps
        pieces: list[bytes] = []
        size = 0
        for kind, payload in classify_steps(("feature list ", key), steps):
            fp, fs = feature_pieces(kind, payload)
            fv = vlen(fs)
            pieces += (b"\x0a", fv)
            pieces += fp
            size += 1 + len(fv) + fs
        lists += add_entry(parts, key, pieces, size)
    parts[at] = vlen(lists)
    return b"".join(parts)
