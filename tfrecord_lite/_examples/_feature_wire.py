"""The serialized bytes of one converted ``Feature``, and of one map entry around it.

A converted value (:func:`._classify.classify`'s ``(kind, payload)``) becomes the
bytes protobuf writes for the same ``Feature`` (:func:`feature_pieces`,
:func:`feature_bytes`); a feature name becomes the ``key`` field of a map entry
(:func:`key_field`, cached in :data:`KEY_FIELDS`), and :func:`add_entry` writes a
whole ``map<string, Feature>`` (or ``FeatureList``) entry. These are the pieces
:func:`._build.encode_example` and :func:`._encode_columns.encode_columns` put
records together from, without a protobuf object.
"""

from __future__ import annotations

from typing import Any

from ._classify import KIND_BYTES, KIND_FEATURE, KIND_FLOAT, KIND_INT64, check_key, str_bytes
from ._wire import SMALL_VARINT_LIMIT, SMALL_VARINTS, encode_varint

__all__ = ["KEY_FIELDS", "add_entry", "feature_bytes", "feature_pieces", "key_field", "vlen"]


def vlen(n: int) -> bytes:
    """Varint of a length (``n >= 0``)."""
    return SMALL_VARINTS[n] if n < SMALL_VARINT_LIMIT else encode_varint(n)


def feature_pieces(kind: int, payload: Any) -> tuple[list[bytes], int]:
    """The serialized ``Feature`` of a converted value, as pieces, and its size.

    ``b"".join(pieces)`` is what protobuf writes for the same Feature.
    """
    if kind == KIND_BYTES:
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
    if kind == KIND_INT64 or kind == KIND_FLOAT:  # noqa: SIM109 (faster than a tuple test)
        tag = b"\x1a" if kind == KIND_INT64 else b"\x12"
        n = len(payload)
        if not n:
            return [tag, b"\x00"], 2
        nv = SMALL_VARINTS[n] if n < SMALL_VARINT_LIMIT else encode_varint(n)
        inner = 1 + len(nv) + n
        iv = SMALL_VARINTS[inner] if inner < SMALL_VARINT_LIMIT else encode_varint(inner)
        return [tag, iv, b"\x0a", nv, payload], 1 + len(iv) + inner
    if kind == KIND_FEATURE:
        return [payload], len(payload)
    return [], 0


def feature_bytes(kind: int, payload: Any) -> bytes:
    """Serialized ``Feature`` of a converted value (same bytes protobuf writes)."""
    return b"".join(feature_pieces(kind, payload)[0])


#: Feature name -> the ``key`` field of its map entry (cleared past 65,536 names).
KEY_FIELDS: dict[str, bytes] = {}


def key_field(name: Any) -> bytes:
    """``key`` field of a map entry (``0a len utf8``); ``TypeError`` unless ``name`` is a str."""
    kf = KEY_FIELDS.get(name)
    if kf is None:
        name = check_key(name)
        raw = str_bytes(("feature name ", name), name)
        kf = b"\x0a" + vlen(len(raw)) + raw
        if len(KEY_FIELDS) >= 65536:
            KEY_FIELDS.clear()
        KEY_FIELDS[name] = kf
    return kf


def add_entry(parts: list[bytes], name: Any, value: list[bytes], size: int) -> int:
    """Append one map entry (with its tag) of a value given as pieces; return its size."""
    kf = key_field(name)
    sv = vlen(size)
    entry = len(kf) + 1 + len(sv) + size
    ev = vlen(entry)
    parts += (b"\x0a", ev, kf, b"\x12", sv)
    parts += value
    return 1 + len(ev) + entry
