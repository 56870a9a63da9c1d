"""Protocol-buffer wire format, by hand: varints, tags and packed runs (no I/O).

The ``tf.train`` messages are small and fixed, so tfrecord_lite writes and reads
their bytes directly instead of going through a protobuf object per record.
This module holds the pieces both directions share.

Wire format in one paragraph
----------------------------
A message is a sequence of fields; each field is a *tag* varint
``(field_number << 3) | wire_type`` followed by its payload: a varint
(wire type 0), 8 little-endian bytes (1), a varint length and that many bytes
(2, "length-delimited": strings, bytes, sub-messages and packed repeated
scalars) or 4 little-endian bytes (5). A varint stores an unsigned integer 7
bits per byte, least significant group first, the high bit of each byte set on
all bytes but the last. ``int64`` fields hold the two's complement as an
unsigned 64-bit varint, so every negative number takes 10 bytes
(``-1 -> ff ff ff ff ff ff ff ff ff 01``).

The ``tf.train`` messages (field numbers are TensorFlow's)::

    Example         { Features features = 1; }
    SequenceExample { Features context = 1; FeatureLists feature_lists = 2; }
    Features        { map<string, Feature> feature = 1; }          // entry: key = 1, value = 2
    Feature         { oneof kind { BytesList bytes_list = 1;
                                   FloatList float_list = 2;
                                   Int64List int64_list = 3; } }
    BytesList       { repeated bytes value = 1; }
    FloatList       { repeated float value = 1 [packed = true]; }
    Int64List       { repeated int64 value = 1 [packed = true]; }
    FeatureList     { repeated Feature feature = 1; }
    FeatureLists    { map<string, FeatureList> feature_list = 1; }  // entry: key = 1, value = 2

A reader must accept both the packed (wire type 2) and the unpacked (one tag per
value: wire type 5 for floats, 0 for ints) encodings of the two scalar lists.

Every function here is pure. Decoding errors raise
:class:`~tfrecord_lite.ParseError` (a ``ValueError``); positions in their
messages are byte offsets into the buffer given.
"""

from __future__ import annotations

from typing import Any, Final, Union

import numpy as np
import numpy.typing as npt

from .._errors import ParseError

__all__ = [
    "BYTES_LIST_VALUE",
    "EXAMPLE_FEATURES",
    "FEATURES_ENTRY",
    "FEATURE_BYTES_LIST",
    "FEATURE_FLOAT_LIST",
    "FEATURE_INT64_LIST",
    "FEATURE_LISTS_ENTRY",
    "FEATURE_LIST_FEATURE",
    "FLOAT_LIST_PACKED",
    "FLOAT_LIST_UNPACKED",
    "INT64_LIST_PACKED",
    "INT64_LIST_UNPACKED",
    "MAP_KEY",
    "MAP_VALUE",
    "MAX_LENGTH_LEN",
    "MAX_VARINT_LEN",
    "SEQUENCE_EXAMPLE_CONTEXT",
    "SEQUENCE_EXAMPLE_FEATURE_LISTS",
    "SMALL_VARINTS",
    "SMALL_VARINT_LIMIT",
    "WIRETYPE_FIXED32",
    "WIRETYPE_FIXED64",
    "WIRETYPE_LENGTH_DELIMITED",
    "WIRETYPE_VARINT",
    "Buffer",
    "decode_tag",
    "decode_varint",
    "decode_varint_int64",
    "decode_varints",
    "encode_length_delimited",
    "encode_tag",
    "encode_varint",
    "encode_varints",
    "encode_varints_fixed",
    "skip_field",
    "to_int64",
    "varint_size",
    "varint_sizes",
]

Buffer = Union[bytes, bytearray, memoryview]

WIRETYPE_VARINT: Final = 0
WIRETYPE_FIXED64: Final = 1
WIRETYPE_LENGTH_DELIMITED: Final = 2
WIRETYPE_FIXED32: Final = 5
_WIRETYPE_START_GROUP: Final = 3
_WIRETYPE_END_GROUP: Final = 4

#: Longest valid varint: 64 bits / 7 bits per byte, rounded up.
MAX_VARINT_LEN: Final = 10
#: Longest length prefix every protobuf release reads (a 32-bit size). upb, the
#: default backend, refuses a longer one as "Wire format was corrupt" however small
#: its value since protobuf 5 (4.25 read it): every engine leaves such a record to
#: the protobuf reference path, so the installed protobuf decides.
MAX_LENGTH_LEN: Final = 5

_UINT64_MASK: Final = (1 << 64) - 1
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1


def encode_tag(field_number: int, wire_type: int) -> bytes:
    """Return the tag bytes of field ``field_number`` with ``wire_type``."""
    if field_number < 1 or not 0 <= wire_type <= 5:
        raise ValueError(f"invalid field number {field_number} / wire type {wire_type}")
    return encode_varint((field_number << 3) | wire_type)


# One-byte tags of the tf.train messages (field numbers 1-3 fit in one byte).
#: Example.features (length-delimited Features).
EXAMPLE_FEATURES: Final = b"\x0a"
#: SequenceExample.context (Features).
SEQUENCE_EXAMPLE_CONTEXT: Final = b"\x0a"
#: SequenceExample.feature_lists (FeatureLists).
SEQUENCE_EXAMPLE_FEATURE_LISTS: Final = b"\x12"
#: Features.feature: one map entry (key = 1, value = 2).
FEATURES_ENTRY: Final = b"\x0a"
#: FeatureLists.feature_list: one map entry (key = 1, value = 2).
FEATURE_LISTS_ENTRY: Final = b"\x0a"
#: A map entry's key (string).
MAP_KEY: Final = b"\x0a"
#: A map entry's value (message).
MAP_VALUE: Final = b"\x12"
#: Feature.bytes_list.
FEATURE_BYTES_LIST: Final = b"\x0a"
#: Feature.float_list.
FEATURE_FLOAT_LIST: Final = b"\x12"
#: Feature.int64_list.
FEATURE_INT64_LIST: Final = b"\x1a"
#: FeatureList.feature: one Feature (one step of a sequence).
FEATURE_LIST_FEATURE: Final = b"\x0a"
#: BytesList.value: one bytes value.
BYTES_LIST_VALUE: Final = b"\x0a"
#: FloatList.value, packed: length-delimited run of little-endian float32.
FLOAT_LIST_PACKED: Final = b"\x0a"
#: FloatList.value, unpacked: one fixed32 per value.
FLOAT_LIST_UNPACKED: Final = b"\x0d"
#: Int64List.value, packed: length-delimited run of varints.
INT64_LIST_PACKED: Final = b"\x0a"
#: Int64List.value, unpacked: one varint per value.
INT64_LIST_UNPACKED: Final = b"\x08"


# --------------------------------------------------------------------------- scalars


def _encode_varint_slow(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


#: ``SMALL_VARINTS[i]`` is the varint of ``i`` for ``0 <= i < SMALL_VARINT_LIMIT`` (1 or 2
#: bytes): lengths and small ints are the common case, and indexing a tuple is cheaper
#: than a call to :func:`encode_varint` in per-record loops.
SMALL_VARINT_LIMIT: Final = 1 << 14
SMALL_VARINTS: Final[tuple[bytes, ...]] = tuple(
    _encode_varint_slow(i) for i in range(SMALL_VARINT_LIMIT)
)


def encode_varint(value: int) -> bytes:
    """Encode an integer in ``[-2**63, 2**64)`` as a varint.

    Negative numbers are encoded as their 64-bit two's complement (10 bytes), the
    way protobuf encodes ``int64``; values in ``[2**63, 2**64)`` are ``uint64``.
    """
    if 0 <= value < SMALL_VARINT_LIMIT:
        return SMALL_VARINTS[value]
    if value < 0:
        if value < _INT64_MIN:
            raise ValueError(f"value {value} is out of int64 range")
        value += 1 << 64
    elif value > _UINT64_MASK:
        raise ValueError(f"value {value} is out of uint64 range")
    return _encode_varint_slow(value)


def varint_size(value: int) -> int:
    """Number of bytes :func:`encode_varint` writes for ``value``."""
    if value < 0:
        return MAX_VARINT_LEN
    if value < 0x80:
        return 1
    return (value.bit_length() + 6) // 7


def encode_length_delimited(tag: bytes, payload: bytes) -> bytes:
    """Return ``tag + varint(len(payload)) + payload``."""
    return b"".join((tag, encode_varint(len(payload)), payload))


def to_int64(value: int) -> int:
    """Reinterpret an unsigned 64-bit value as a signed (two's complement) int64."""
    return value - (1 << 64) if value > _INT64_MAX else value


def decode_varint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Decode the varint at ``buf[pos:]``; return ``(unsigned value, position after it)``.

    Bits beyond the 64th of a 10-byte varint are dropped, as protobuf does.
    Raises :class:`ParseError` if the buffer ends inside the varint or the varint
    is longer than 10 bytes.
    """
    end = len(buf)
    if pos >= end:
        raise ParseError(f"truncated varint at byte {pos}")
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    i = pos + 1
    limit = pos + MAX_VARINT_LEN
    while True:
        if i >= end:
            raise ParseError(f"truncated varint at byte {pos}")
        if i >= limit:
            raise ParseError(f"varint longer than {MAX_VARINT_LEN} bytes at byte {pos}")
        b = buf[i]
        result |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            return result & _UINT64_MASK, i
        shift += 7


def decode_varint_int64(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Like :func:`decode_varint`, the value read as a signed ``int64``."""
    value, pos = decode_varint(buf, pos)
    return to_int64(value), pos


def decode_tag(buf: Buffer, pos: int = 0) -> tuple[int, int, int]:
    """Decode the tag at ``buf[pos:]``; return ``(field_number, wire_type, new position)``."""
    tag, new_pos = decode_varint(buf, pos)
    field_number = tag >> 3
    if field_number == 0 or tag > 0xFFFFFFFF:
        raise ParseError(f"invalid field tag {tag} at byte {pos}")
    return field_number, tag & 7, new_pos


def skip_field(buf: Buffer, pos: int, wire_type: int) -> int:
    """Return the position just after a field's payload that starts at ``pos``.

    Groups (wire types 3 and 4) are deprecated and never appear in ``tf.train``
    messages: they raise :class:`ParseError`, as do payloads that run past the end.
    """
    end = len(buf)
    if wire_type == WIRETYPE_VARINT:
        return decode_varint(buf, pos)[1]
    if wire_type == WIRETYPE_LENGTH_DELIMITED:
        length, pos = decode_varint(buf, pos)
        new_pos = pos + length
    elif wire_type == WIRETYPE_FIXED32:
        new_pos = pos + 4
    elif wire_type == WIRETYPE_FIXED64:
        new_pos = pos + 8
    else:
        raise ParseError(f"unsupported wire type {wire_type} at byte {pos}")
    if new_pos > end:
        raise ParseError(
            f"truncated field at byte {pos}: needs {new_pos - pos} bytes, has {end - pos}"
        )
    return new_pos


# --------------------------------------------------------------------------- arrays

_U64 = np.uint64
# 2**(7k) for k = 1..9: a value needs k+1 bytes iff it is >= the k-th threshold.
_THRESHOLDS: Final = np.array([1 << (7 * k) for k in range(1, MAX_VARINT_LEN)], dtype=np.uint64)


def _as_uint64(values: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    """The values as uint64 bit patterns (two's complement for negative int64)."""
    arr = np.asarray(values)
    if arr.dtype.kind == "b":
        arr = arr.astype(np.uint8)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"varints encode integers, not {arr.dtype}")
    arr = arr.reshape(-1)
    if arr.dtype == np.uint64:
        return arr
    if arr.dtype.kind == "i":
        # Sign-extend to int64 first, then reinterpret the bits.
        return arr.astype(np.int64, copy=False).view(np.uint64)
    return arr.astype(np.uint64)


def varint_sizes(values: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Per-value byte counts of :func:`encode_varints`, same shape as ``values``."""
    arr = np.asarray(values)
    shape = arr.shape
    u = _as_uint64(arr)
    sizes = np.ones(u.shape, dtype=np.int64)
    if u.size and int(u.max()) >= 0x80:
        for threshold in _THRESHOLDS:
            sizes += u >= threshold
    return sizes.reshape(shape)


def encode_varints(values: npt.ArrayLike) -> bytes:
    """Concatenated varints of every value (flattened, C order): a packed ``int64`` run.

    Signed integers are encoded as int64 two's complement (negative -> 10 bytes),
    unsigned ones as uint64, booleans as 0/1. The result equals
    ``b"".join(encode_varint(int(v)) for v in values)``.
    """
    return _encode_varints_array(values).tobytes()


def _encode_varints_array(values: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    u = _as_uint64(values)
    if u.size == 0:
        return np.zeros(0, dtype=np.uint8)
    if int(u.max()) < 0x80:
        return u.astype(np.uint8)
    sizes = np.ones(u.shape, dtype=np.int64)
    for threshold in _THRESHOLDS:
        sizes += u >= threshold
    ends = np.cumsum(sizes)
    total = int(ends[-1])
    starts = ends - sizes
    out = np.empty(total, dtype=np.uint8)
    # Byte k of every value that has more than k bytes.
    shifted = u
    active_idx: npt.NDArray[np.intp] = np.arange(u.size)
    for k in range(MAX_VARINT_LEN):
        if k:
            keep = sizes[active_idx] > k
            active_idx = active_idx[keep]
            if active_idx.size == 0:
                break
            shifted = shifted[keep] >> _U64(7)
        low = (shifted & _U64(0x7F)).astype(np.uint8)
        more = sizes[active_idx] > k + 1
        low |= more.astype(np.uint8) << np.uint8(7)
        out[starts[active_idx] + k] = low
    return out


def encode_varints_fixed(values: npt.ArrayLike, width: int) -> npt.NDArray[np.uint8]:
    """Varints of values that all take exactly ``width`` bytes, as a ``(n, width)`` array.

    The caller guarantees ``varint_sizes(values) == width`` for every value.
    """
    u = _as_uint64(values)
    out = np.empty((u.size, width), dtype=np.uint8)
    for k in range(width):
        byte = ((u >> _U64(7 * k)) & _U64(0x7F)).astype(np.uint8)
        if k < width - 1:
            byte |= np.uint8(0x80)
        out[:, k] = byte
    return out


def decode_varints(buf: Buffer, *, signed: bool = True) -> npt.NDArray[Any]:
    """Decode a packed run of varints (the whole of ``buf``) into a 1-D array.

    Returns ``int64`` (two's complement, protobuf's ``int64``) or, with
    ``signed=False``, ``uint64``. Raises :class:`ParseError` if the run ends inside
    a varint or a varint is longer than 10 bytes.
    """
    data = np.frombuffer(buf, dtype=np.uint8)
    out_dtype = np.int64 if signed else np.uint64
    if data.size == 0:
        return np.zeros(0, dtype=out_dtype)
    cont = data >= 0x80
    if not cont.any():
        return data.astype(out_dtype)
    if cont[-1]:
        ends_all = np.flatnonzero(~cont)
        start = int(ends_all[-1]) + 1 if ends_all.size else 0
        raise ParseError(f"truncated varint at byte {start}")
    ends = np.flatnonzero(~cont)  # index of each varint's last byte
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts + 1
    if int(lengths.max()) > MAX_VARINT_LEN:
        bad = int(starts[np.argmax(lengths > MAX_VARINT_LEN)])
        raise ParseError(f"varint longer than {MAX_VARINT_LEN} bytes at byte {bad}")
    # Position of every byte inside its varint -> its shift; groups never overlap,
    # so summing the shifted 7-bit groups is the same as OR-ing them. Bits past the
    # 64th (in a 10th byte > 1) wrap away, as protobuf drops them.
    pos_in = np.arange(data.size, dtype=np.int64) - np.repeat(starts, lengths)
    groups = (data & 0x7F).astype(np.uint64) << (pos_in.astype(np.uint64) * _U64(7))
    values = np.add.reduceat(groups, starts)
    return values.view(np.int64) if signed else values
