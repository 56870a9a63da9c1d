"""The compiled Example walk: numba kernels over a chunk's concatenated records.

Plain Python functions over a ``uint8`` buffer, compiled by numba when this module
is imported (explicit signatures, ``nogil=True``, ``cache=True``): only
:mod:`._jit` imports it, the first time a large enough batch is parsed with the
``jit`` engine, never ``import tfrecord_lite``.

:func:`walk_examples` walks every record once: each map entry's key is first
compared with the key the previous record had at the same place (records of one
writer mostly share their key order), else found in the plan's hash table (the
whole key hashed, :mod:`._keyhash`; linear probing, then a byte-for-byte
compare), and for each (key, record) it notes where the list's
bytes are, how many values it holds, and whether they are packed. A record with
anything it cannot decide with certainty is marked for the reference (protobuf)
path, which then gives results and errors exactly as TensorFlow-worded as ever:
a second ``features`` field (concatenated Examples), a field other than
key-then-value in an entry (a key with no value included), a key given twice,
a key that is not ASCII, a ``Feature`` with more than one field, several packed
pieces or packed and unpacked values mixed in one list, a kind that is not the
spec's, an unknown field, a varint longer than 10 bytes, a length prefix longer
than 5 bytes, or a length past its message. One fill kernel then copies every key's values of the records handled
(:func:`fill_values`). Outputs are one row per record (``[record, key]``) and
every key's values of one kind go into one array: :mod:`._jit` does a few NumPy
calls per batch and kind, not per key and record.

Wire layout walked (proto3, TensorFlow's field numbers)::

    Example   { 1: Features  (LEN) }                       tag 0x0a
    Features  { 1: map entry (LEN), repeated }              tag 0x0a
    entry     { 1: key string (LEN)  2: Feature (LEN) }     tags 0x0a, 0x12
    Feature   { 1: BytesList | 2: FloatList | 3: Int64List } tags 0x0a/0x12/0x1a
    BytesList { 1: bytes, repeated }                        tag 0x0a each
    FloatList { 1: packed fixed32 (LEN) | fixed32 each }    tag 0x0a, or 0x0d each
    Int64List { 1: packed varints (LEN) | varint each }     tag 0x0a, or 0x08 each

The per-key bookkeeping between the walk and the fill, and the cutting of bytes
values, are kernels of their own (:mod:`._jit_columns`).
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import numba
import numpy as np

from .._feature_kinds import (
    KIND_BYTES,
    KIND_EMPTY,
    KIND_FLOAT,
    KIND_INT64,
    TAG_BYTES_LIST,
    TAG_FLOAT_LIST,
    TAG_INT64_LIST,
)
from ._keyhash import FINAL, SEED, STEP

__all__ = [
    "ABSENT", "EMPTY", "PACKED", "UNPACKED",
    "fill_entries", "fill_values", "key_hash", "walk_entries", "walk_examples",
]  # fmt: skip

#: Flags of a (key, record): absent, values one by one, packed, an empty ``Feature()``
#: (an Example counts it as absent, a SequenceExample's context as present).
ABSENT, UNPACKED, PACKED, EMPTY = 0, 1, 2, 4
#: The longest length prefix protobuf reads (:data:`~tfrecord_lite._examples._wire.MAX_LENGTH_LEN`).
MAX_LENGTH_LEN = 5

_SEED, _STEP, _FINAL = np.uint64(SEED), np.uint64(STEP), np.uint64(FINAL)

#: No reference counting (``_nrt=False``): the kernels allocate nothing (every array
#: comes from :mod:`._jit`), and numba's atomic increments and decrements of each
#: array passed to a helper were most of the walk's time (6-8 µs a taxi record, 60%
#: in the two atomic instructions; without them well under 1 µs).
_OPTIONS: dict[str, Any] = {"nogil": True, "cache": True, "_nrt": False}
_F = TypeVar("_F", bound=Callable[..., Any])
_jit: Callable[[_F], _F] = numba.njit(**_OPTIONS)
#: Inlined by numba itself, for a helper LLVM left as a call (:func:`_entry`: 30% of
#: the walk's time); each costs compile time, so only where it pays.
_jit_inlined: Callable[[_F], _F] = numba.njit(inline="always", **_OPTIONS)
_t = numba.types
#: The records' bytes: a read-only view (``np.frombuffer`` of ``bytes``).
_BUF = _t.Array(_t.uint8, 1, "C", readonly=True)
_I64, _I8, _I32, _U8 = (_t.Array(d, 1, "C") for d in (_t.int64, _t.int8, _t.int32, _t.uint8))
_I64_2D, _I8_2D, _B_2D = (_t.Array(d, 2, "C") for d in (_t.int64, _t.int8, _t.boolean))


@_jit
def _varint(buf: np.ndarray, p: int, end: int) -> tuple[int, int]:
    """(value as uint64 bits in an int64, position after it); position -1 if the
    varint runs past ``end`` or is longer than 10 bytes (or its 10th byte > 1)."""
    if p < end and buf[p] < 0x80:
        return int(buf[p]), p + 1
    result = np.uint64(0)
    shift = np.uint64(0)
    for k in range(10):
        if p >= end:
            return 0, -1
        b = buf[p]
        p += 1
        if k == 9 and b > 1:
            return 0, -1
        result |= np.uint64(b & 0x7F) << shift
        if b < 0x80:
            return int(np.int64(result)), p
        shift += np.uint64(7)
    return 0, -1


@_jit
def _length(buf: np.ndarray, p: int, end: int) -> tuple[int, int]:
    """A length prefix at ``p`` whose bytes fit before ``end``: (length, start of
    the bytes); start -1 if it does not, or if it takes over :data:`MAX_LENGTH_LEN`
    bytes (recent protobuf refuses such a record: the reference path decides)."""
    if p < end and buf[p] < 0x80:  # (most lengths: one byte)
        n = int(buf[p])
        if n > end - p - 1:
            return 0, -1
        return n, p + 1
    n, q = _varint(buf, p, end)
    if q < 0 or q - p > MAX_LENGTH_LEN or n < 0 or n > end - q:
        return 0, -1
    return n, q


@_jit
def key_hash(buf: np.ndarray, p: int, n: int) -> np.uint64:
    """The key hash of ``buf[p:p+n]`` (:mod:`._keyhash`): its length, then every
    8-byte window (the last one the key's last 8 bytes), each folded in by a step
    that keeps keys differing in any window apart, then a final mix."""
    h = np.uint64(n + 1) * _SEED
    if n < 8:
        w = np.uint64(0)
        for j in range(n):
            w |= np.uint64(buf[p + j]) << np.uint64(8 * j)
        h = (h ^ w) * _STEP
        h ^= h >> np.uint64(32)
    else:
        for k in range((n + 7) // 8):
            q = p + min(8 * k, n - 8)
            w = np.uint64(0)
            for j in range(8):
                w |= np.uint64(buf[q + j]) << np.uint64(8 * j)
            h = (h ^ w) * _STEP
            h ^= h >> np.uint64(32)
    h ^= h >> np.uint64(29)
    h *= _FINAL
    return h ^ (h >> np.uint64(32))


@_jit_inlined
def _is_key(buf: np.ndarray, p: int, n: int, k: int, koff: np.ndarray, kbytes: np.ndarray) -> bool:
    """Whether ``buf[p:p+n]`` is the plan's key ``k``."""
    a = koff[k]
    if koff[k + 1] - a != n:
        return False
    for j in range(n):  # noqa: SIM110 (a loop numba compiles; no generator)
        if kbytes[a + j] != buf[p + j]:
            return False
    return True


@_jit
def _lookup(
    buf: np.ndarray,
    p: int,
    n: int,
    slots: np.ndarray,
    koff: np.ndarray,
    kbytes: np.ndarray,
) -> int:
    """The index of the key ``buf[p:p+n]`` in the plan's table, or -1."""
    mask = np.int64(len(slots) - 1)
    s = np.int64(key_hash(buf, p, n) & np.uint64(mask))
    while True:
        k = slots[s]
        if k < 0:
            return -1
        if _is_key(buf, p, n, k, koff, kbytes):
            return int(k)
        s = (s + 1) & mask


@_jit
def _scan_list(buf: np.ndarray, p: int, end: int, kind: int) -> tuple[int, int]:
    """(number of values, flag) of the list message ``buf[p:end]`` of ``kind``
    (1 bytes, 2 float, 3 int64); number -1 where it is not certain."""
    if p == end:
        return 0, UNPACKED
    if kind == KIND_BYTES:
        count = 0
        while p < end:
            if buf[p] != 0x0A:
                return -1, 0
            n, q = _length(buf, p + 1, end)
            if q < 0:
                return -1, 0
            p = q + n
            count += 1
        return count, UNPACKED
    if kind == KIND_FLOAT:
        if buf[p] == 0x0A:
            n, q = _length(buf, p + 1, end)
            if q < 0 or q + n != end or n % 4:
                return -1, 0
            return n // 4, PACKED
        count = 0
        while p < end:
            if buf[p] != 0x0D or end - p < 5:
                return -1, 0
            p += 5
            count += 1
        return count, UNPACKED
    if buf[p] == 0x0A:
        n, q = _length(buf, p + 1, end)
        if q < 0 or q + n != end:
            return -1, 0
        count = 0
        run = 0
        for j in range(q, end):
            if buf[j] < 0x80:
                count += 1
                run = 0
            else:
                run += 1
                if run >= 10:
                    return -1, 0
        if n and buf[end - 1] >= 0x80:
            return -1, 0
        # (a 10-byte varint's last byte above 1 is left to the reference path)
        if n and end - q >= 10:
            j = q
            while j < end:
                k = j
                while buf[k] >= 0x80:
                    k += 1
                if k - j == 9 and buf[k] > 1:
                    return -1, 0
                j = k + 1
        return count, PACKED
    count = 0
    while p < end:
        if buf[p] != 0x08:
            return -1, 0
        _, q = _varint(buf, p + 1, end)
        if q < 0:
            return -1, 0
        p = q
        count += 1
    return count, UNPACKED


@_jit
def _feature(buf: np.ndarray, p: int, end: int) -> tuple[int, int, int, int]:
    """The ``Feature`` message ``buf[p:end]``: (kind 0-3, where its list's bytes
    start, number of values, flag); kind -1 where it is not certain (a second
    field, an unknown one, a malformed list)."""
    if p == end:
        return KIND_EMPTY, p, 0, EMPTY
    tag = buf[p]
    if tag != TAG_BYTES_LIST and tag != TAG_FLOAT_LIST and tag != TAG_INT64_LIST:
        return -1, 0, 0, 0
    kind = int(tag) >> 3  # (a kind is its list's field number)
    ln, ls = _length(buf, p + 1, end)
    if ls < 0 or ls + ln != end:
        return -1, 0, 0, 0
    count, flag = _scan_list(buf, ls, end, kind)
    if count < 0:
        return -1, 0, 0, 0
    return kind, ls, count, flag


@_jit_inlined
def _entry(
    buf: np.ndarray,
    p: int,
    end: int,
    i: int,
    slots: np.ndarray,
    koff: np.ndarray,
    kbytes: np.ndarray,
    seen: np.ndarray,
    guess: int,
) -> tuple[int, int, int]:
    """The map entry at ``p`` (of record ``i``, in a message ending at ``end``):
    (its key's index in the plan's table or -1, where its value's bytes start,
    where the entry ends); end -1 where the reference path decides (a malformed
    entry, a key with no value or a field after it, a key read twice, an unread
    key that is not ASCII). ``guess``: a key index to compare first (-1: none);
    the answer is the table's either way."""
    if buf[p] != 0x0A:
        return -1, 0, -1
    n, p = _length(buf, p + 1, end)
    if p < 0:
        return -1, 0, -1
    ee = p + n
    # the key
    if p >= ee or buf[p] != 0x0A:
        return -1, 0, -1
    kn, kp = _length(buf, p + 1, ee)
    if kp < 0:
        return -1, 0, -1
    p = kp + kn
    # the value: filling the rest of the entry
    if p >= ee or buf[p] != 0x12:
        return -1, 0, -1
    vn, vp = _length(buf, p + 1, ee)
    if vp < 0 or vp + vn != ee:
        return -1, 0, -1
    if guess >= 0 and _is_key(buf, kp, kn, guess, koff, kbytes):
        k = guess
    else:
        k = _lookup(buf, kp, kn, slots, koff, kbytes)
    if k < 0:
        # (a key read is ASCII; one that is not read must be too)
        for j in range(kp, kp + kn):
            if buf[j] >= 0x80:
                return -1, 0, -1
    else:
        if seen[k] == i:
            return -1, 0, -1
        seen[k] = i
    return k, vp, ee


@_jit
def _walk_record(
    buf: np.ndarray,
    i: int,
    p: int,
    end: int,
    slots: np.ndarray,
    koff: np.ndarray,
    kbytes: np.ndarray,
    kkind: np.ndarray,
    fstart: np.ndarray,
    fend: np.ndarray,
    fcount: np.ndarray,
    fflag: np.ndarray,
    seen: np.ndarray,
    order: np.ndarray,
) -> bool:
    """Walk record ``i`` (``buf[p:end]``); False where the reference path decides.
    ``order[j]``: the key index of the previous record's ``j``-th entry (-1: not
    read, or none), compared first and replaced by this record's."""
    had_features = False
    while p < end:
        if buf[p] != 0x0A or had_features:
            return False
        had_features = True
        n, p = _length(buf, p + 1, end)
        if p < 0:
            return False
        fe = p + n
        j = 0
        while p < fe:
            guess = order[j] if j < len(order) else -1
            k, vp, ee = _entry(buf, p, fe, i, slots, koff, kbytes, seen, guess)
            if ee < 0:
                return False
            if j < len(order):
                order[j] = k
            j += 1
            kind, ls, count, flag = _feature(buf, vp, ee)
            if kind < 0:
                return False
            le = ee
            if k >= 0:
                if kind and kind != kkind[k]:
                    return False
                fstart[i, k] = ls
                fend[i, k] = le
                fcount[i, k] = count
                fflag[i, k] = flag
            p = ee
    return True


@numba.njit(
    _t.void(
        _BUF, _I64, _I64, _I32, _I64, _U8, _I8, _I64, _I64, _U8,
        _I64_2D, _I64_2D, _I64_2D, _I8_2D,
    ),
    **_OPTIONS,
)  # fmt: skip
def walk_examples(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    slots: np.ndarray,
    koff: np.ndarray,
    kbytes: np.ndarray,
    kkind: np.ndarray,
    seen: np.ndarray,
    order: np.ndarray,
    status: np.ndarray,
    fstart: np.ndarray,
    fend: np.ndarray,
    fcount: np.ndarray,
    fflag: np.ndarray,
) -> None:
    """Walk records ``starts[i]..ends[i]``: ``status[i]`` 1 where the reference
    path decides, else per key ``k`` the list's bytes ``fstart[i, k]..fend[i, k]``,
    its number of values ``fcount[i, k]`` and ``fflag[i, k]`` (absent / unpacked /
    packed). The ``f*`` arrays (one row per record) may come uninitialized (each
    record's counts and flags are zeroed here first); ``seen`` (one slot per key)
    and ``order`` (any length: the key order looked for first) filled with -1."""
    nkeys = len(kkind)
    for i in range(len(starts)):
        for k in range(nkeys):
            fcount[i, k] = 0
            fflag[i, k] = ABSENT
        if not _walk_record(
            buf, i, starts[i], ends[i], slots, koff, kbytes, kkind,
            fstart, fend, fcount, fflag, seen, order,
        ):  # fmt: skip
            status[i] = 1
            for k in range(nkeys):
                fcount[i, k] = 0
                fflag[i, k] = ABSENT


@_jit
def _record_entries(
    buf: np.ndarray,
    i: int,
    o: int,
    slots: np.ndarray,
    koff: np.ndarray,
    kbytes: np.ndarray,
    kkind: np.ndarray,
    seen: np.ndarray,
    out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    p: int,
    end: int,
) -> int:
    """Walk record ``i`` (``buf[p:end]``) as :func:`_walk_record`, writing one entry
    per key read from position ``o`` of ``out``: the position after them, -1 where
    the reference path decides, -2 where ``out`` is full."""
    erec, ekey, estart, eend, ecount, eflag = out
    had_features = False
    while p < end:
        if buf[p] != 0x0A or had_features:
            return -1
        had_features = True
        n, p = _length(buf, p + 1, end)
        if p < 0:
            return -1
        fe = p + n
        while p < fe:
            k, vp, ee = _entry(buf, p, fe, i, slots, koff, kbytes, seen, -1)
            if ee < 0:
                return -1
            kind, ls, count, flag = _feature(buf, vp, ee)
            if kind < 0:
                return -1
            if k >= 0:
                if kind and kind != kkind[k]:
                    return -1
                if o == len(erec):
                    seen[k] = -1
                    return -2
                erec[o] = i
                ekey[o] = k
                estart[o] = ls
                eend[o] = ee
                ecount[o] = count
                eflag[o] = flag
                o += 1
            p = ee
    return o


@numba.njit(
    _t.void(
        _BUF, _I64, _I64, _I32, _I64, _U8, _I8, _I64, _U8, _I64,
        _I64, _I64, _I64, _I64, _I64, _I8,
    ),
    **_OPTIONS,
)  # fmt: skip
def walk_entries(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    slots: np.ndarray,
    koff: np.ndarray,
    kbytes: np.ndarray,
    kkind: np.ndarray,
    seen: np.ndarray,
    status: np.ndarray,
    state: np.ndarray,
    erec: np.ndarray,
    ekey: np.ndarray,
    estart: np.ndarray,
    eend: np.ndarray,
    ecount: np.ndarray,
    eflag: np.ndarray,
) -> None:
    """:func:`walk_examples` for wide batches (many keys, few in each record): one
    entry per (record, key read), in record order: its record ``erec``, key
    ``ekey``, the list's bytes ``estart..eend``, values ``ecount``, flag ``eflag``.
    Records the reference path decides get ``status`` 1 and no entries. ``state``:
    (the record to start at, the entries written before it), in and out; where the
    entries are full the walk stops before the record that did not fit (the caller
    makes them longer and calls again)."""
    out = (erec, ekey, estart, eend, ecount, eflag)
    i, o = state[0], state[1]
    while i < len(starts):
        after = _record_entries(
            buf, i, o, slots, koff, kbytes, kkind, seen, out, starts[i], ends[i]
        )
        if after == -2:
            for q in range(o, len(erec)):  # (its keys are read again on the next call)
                seen[ekey[q]] = -1
            break
        if after < 0:
            status[i] = 1
        else:
            o = after
        i += 1
    state[0] = i
    state[1] = o


@_jit
def _copy_values(
    buf: np.ndarray,
    kind: int,
    flag: int,
    p: int,
    end: int,
    c: int,
    o: int,
    ints: np.ndarray,
    floats: np.ndarray,
    bstart: np.ndarray,
    blength: np.ndarray,
) -> int:
    """Copy the ``c`` values of the list ``buf[p:end]`` (``kind``, ``flag``) to
    position ``o`` of its kind's output; the position after them."""
    if kind == KIND_INT64:
        if flag == PACKED:
            _, p = _length(buf, p + 1, end)
            while p < end:
                v, p = _varint(buf, p, end)
                ints[o] = v
                o += 1
        else:
            while p < end:
                v, p = _varint(buf, p + 1, end)
                ints[o] = v
                o += 1
    elif kind == KIND_FLOAT:
        if flag == PACKED:
            _, p = _length(buf, p + 1, end)
            q = 4 * o
            for j in range(4 * c):
                floats[q + j] = buf[p + j]
            o += c
        else:
            for _ in range(c):
                q = 4 * o
                for j in range(4):
                    floats[q + j] = buf[p + 1 + j]
                o += 1
                p += 5
    else:
        while p < end:
            n, q = _length(buf, p + 1, end)
            bstart[o] = q
            blength[o] = n
            o += 1
            p = q + n
    return o


@numba.njit(
    _t.void(_BUF, _I64, _I8, _I64, _I64_2D, _I64_2D, _I64_2D, _I8_2D, _I64, _U8, _I64, _I64),
    **_OPTIONS,
)
def fill_values(
    buf: np.ndarray,
    rows: np.ndarray,
    kkind: np.ndarray,
    cursor: np.ndarray,
    fstart: np.ndarray,
    fend: np.ndarray,
    fcount: np.ndarray,
    fflag: np.ndarray,
    ints: np.ndarray,
    floats: np.ndarray,
    bstart: np.ndarray,
    blength: np.ndarray,
) -> None:
    """Every key's values of records ``rows``, in record order, from ``cursor[k]``
    on in its kind's output (``cursor`` is moved past them): ``ints`` (int64), ``floats`` (4 bytes a value,
    little-endian float32 as on the wire), or where each BytesList item is
    (``bstart``, ``blength``)."""
    nkeys = len(kkind)
    for i in rows:  # record by record: its bytes are read once, in order
        for k in range(nkeys):
            c = fcount[i, k]
            if c == 0:
                continue
            cursor[k] = _copy_values(
                buf, kkind[k], fflag[i, k], fstart[i, k], fend[i, k], c, cursor[k],
                ints, floats, bstart, blength,
            )  # fmt: skip


@numba.njit(
    _t.void(_BUF, _I64, _I64, _I8, _I64, _I64, _I64, _I64, _I8, _I64, _U8, _I64, _I64),
    **_OPTIONS,
)
def fill_entries(
    buf: np.ndarray,
    order: np.ndarray,
    ekey: np.ndarray,
    kkind: np.ndarray,
    cursor: np.ndarray,
    estart: np.ndarray,
    eend: np.ndarray,
    ecount: np.ndarray,
    eflag: np.ndarray,
    ints: np.ndarray,
    floats: np.ndarray,
    bstart: np.ndarray,
    blength: np.ndarray,
) -> None:
    """:func:`fill_values` of the entries of :func:`walk_entries`, in ``order``."""
    for q in order:
        c = ecount[q]
        if c == 0:
            continue
        k = ekey[q]
        cursor[k] = _copy_values(
            buf, kkind[k], eflag[q], estart[q], eend[q], c, cursor[k],
            ints, floats, bstart, blength,
        )  # fmt: skip
