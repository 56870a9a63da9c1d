"""The compiled Example walk: numba kernels over a chunk's concatenated records.

Plain Python functions over a ``uint8`` buffer, compiled by numba when this module
is imported (explicit signatures, ``nogil=True``, ``cache=True``): only
:mod:`._jit` imports it, the first time a large enough batch is parsed with the
``jit`` engine, never ``import tfrecord_lite``.

:func:`walk_examples` walks every record once: each map entry's key is found
in the plan's hash table (FNV-1a over the key bytes, linear probing, then a
byte-for-byte compare), and for each (key, record) it notes where the list's
bytes are, how many values it holds, and whether they are packed. A record with
anything it cannot decide with certainty is marked for the reference (protobuf)
path, which then gives results and errors exactly as TensorFlow-worded as ever:
a second ``features`` field (concatenated Examples), a field other than
key-then-value in an entry (a key with no value included), a key given twice,
a key that is not ASCII, a ``Feature`` with more than one field, several packed
pieces or packed and unpacked values mixed in one list, a kind that is not the
spec's, an unknown field, a varint longer than 10 bytes, or a length past its
message. The fill kernels then copy each key's values of the records handled
(:func:`fill_int64`, :func:`fill_float`, :func:`bytes_spans`).

Wire layout walked (proto3, TensorFlow's field numbers)::

    Example   { 1: Features  (LEN) }                       tag 0x0a
    Features  { 1: map entry (LEN), repeated }              tag 0x0a
    entry     { 1: key string (LEN)  2: Feature (LEN) }     tags 0x0a, 0x12
    Feature   { 1: BytesList | 2: FloatList | 3: Int64List } tags 0x0a/0x12/0x1a
    BytesList { 1: bytes, repeated }                        tag 0x0a each
    FloatList { 1: packed fixed32 (LEN) | fixed32 each }    tag 0x0a, or 0x0d each
    Int64List { 1: packed varints (LEN) | varint each }     tag 0x0a, or 0x08 each
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["bytes_spans", "fill_float", "fill_int64", "walk_examples"]

#: Flags of a (key, record): absent (or an empty ``Feature()``), values one by one, packed.
ABSENT, UNPACKED, PACKED = 0, 1, 2

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)

_jit = numba.njit(nogil=True, cache=True)
_t = numba.types
#: The records' bytes: a read-only view (``np.frombuffer`` of ``bytes``).
_BUF = _t.Array(_t.uint8, 1, "C", readonly=True)
_I64, _I8, _I32, _U8 = (_t.Array(d, 1, "C") for d in (_t.int64, _t.int8, _t.int32, _t.uint8))
_I64_2D, _I8_2D = (_t.Array(d, 2, "C") for d in (_t.int64, _t.int8))


@_jit
def _varint(buf: np.ndarray, p: int, end: int) -> tuple[int, int]:
    """(value as uint64 bits in an int64, position after it); position -1 if the
    varint runs past ``end`` or is longer than 10 bytes (or its 10th byte > 1)."""
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
    the bytes); start -1 if it does not."""
    n, q = _varint(buf, p, end)
    if q < 0 or n < 0 or n > end - q:
        return 0, -1
    return n, q


@_jit
def fnv1a(buf: np.ndarray, p: int, n: int) -> np.uint64:
    """FNV-1a of ``buf[p:p+n]`` (the key hash; :mod:`._jit` computes it the same way)."""
    h = _FNV_OFFSET
    for q in range(p, p + n):
        h = (h ^ np.uint64(buf[q])) * _FNV_PRIME
    return h


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
    s = np.int64(fnv1a(buf, p, n) & np.uint64(mask))
    while True:
        k = slots[s]
        if k < 0:
            return -1
        a = koff[k]
        if koff[k + 1] - a == n:
            same = True
            for j in range(n):
                if kbytes[a + j] != buf[p + j]:
                    same = False
                    break
            if same:
                return int(k)
        s = (s + 1) & mask


@_jit
def _scan_list(buf: np.ndarray, p: int, end: int, kind: int) -> tuple[int, int]:
    """(number of values, flag) of the list message ``buf[p:end]`` of ``kind``
    (1 bytes, 2 float, 3 int64); number -1 where it is not certain."""
    if p == end:
        return 0, UNPACKED
    if kind == 1:
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
    if kind == 2:
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
) -> bool:
    """Walk record ``i`` (``buf[p:end]``); False where the reference path decides."""
    had_features = False
    while p < end:
        if buf[p] != 0x0A or had_features:
            return False
        had_features = True
        n, p = _length(buf, p + 1, end)
        if p < 0:
            return False
        fe = p + n
        while p < fe:
            if buf[p] != 0x0A:
                return False
            n, p = _length(buf, p + 1, fe)
            if p < 0:
                return False
            ee = p + n
            # the key
            if p >= ee or buf[p] != 0x0A:
                return False
            kn, kp = _length(buf, p + 1, ee)
            if kp < 0:
                return False
            for j in range(kp, kp + kn):
                if buf[j] >= 0x80:
                    return False
            p = kp + kn
            # the value: a Feature filling the rest of the entry
            if p >= ee or buf[p] != 0x12:
                return False
            vn, vp = _length(buf, p + 1, ee)
            if vp < 0 or vp + vn != ee:
                return False
            kind = 0
            ls = vp
            le = vp
            if vn:
                tag = buf[vp]
                if tag != 0x0A and tag != 0x12 and tag != 0x1A:
                    return False
                kind = tag >> 3
                ln, ls = _length(buf, vp + 1, ee)
                if ls < 0 or ls + ln != ee:
                    return False
                le = ee
            count = 0
            flag = ABSENT
            if kind:
                count, flag = _scan_list(buf, ls, le, kind)
                if count < 0:
                    return False
            k = _lookup(buf, kp, kn, slots, koff, kbytes)
            if k >= 0:
                if seen[k] == i:
                    return False
                seen[k] = i
                if kind and kind != kkind[k]:
                    return False
                fstart[k, i] = ls
                fend[k, i] = le
                fcount[k, i] = count
                fflag[k, i] = flag
            p = ee
    return True


@numba.njit(
    _t.void(_BUF, _I64, _I64, _I32, _I64, _U8, _I8, _U8, _I64_2D, _I64_2D, _I64_2D, _I8_2D),
    nogil=True,
    cache=True,
)
def walk_examples(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    slots: np.ndarray,
    koff: np.ndarray,
    kbytes: np.ndarray,
    kkind: np.ndarray,
    status: np.ndarray,
    fstart: np.ndarray,
    fend: np.ndarray,
    fcount: np.ndarray,
    fflag: np.ndarray,
) -> None:
    """Walk records ``starts[i]..ends[i]``: ``status[i]`` 1 where the reference
    path decides, else per key ``k`` the list's bytes ``fstart[k, i]..fend[k, i]``,
    its number of values ``fcount[k, i]`` and ``fflag[k, i]`` (absent / unpacked /
    packed). The ``f*`` arrays come zeroed."""
    nkeys = len(kkind)
    seen = np.full(nkeys, -1, dtype=np.int64)
    for i in range(len(starts)):
        if not _walk_record(
            buf,
            i,
            starts[i],
            ends[i],
            slots,
            koff,
            kbytes,
            kkind,
            fstart,
            fend,
            fcount,
            fflag,
            seen,
        ):
            status[i] = 1
            for k in range(nkeys):
                fcount[k, i] = 0
                fflag[k, i] = ABSENT


@numba.njit(_t.void(_BUF, _I64, _I64, _I64, _I8, _I64, _I64), nogil=True, cache=True)
def fill_int64(
    buf: np.ndarray,
    rows: np.ndarray,
    fstart: np.ndarray,
    fend: np.ndarray,
    fflag: np.ndarray,
    fcount: np.ndarray,
    out: np.ndarray,
) -> None:
    """One int64 key's values of records ``rows``, in order, into ``out``."""
    o = 0
    for i in rows:
        if fcount[i] == 0:
            continue
        p = fstart[i]
        end = fend[i]
        if fflag[i] == PACKED:
            _, p = _length(buf, p + 1, end)
            while p < end:
                v, p = _varint(buf, p, end)
                out[o] = v
                o += 1
        else:
            while p < end:
                v, p = _varint(buf, p + 1, end)
                out[o] = v
                o += 1


@numba.njit(_t.void(_BUF, _I64, _I64, _I64, _I8, _I64, _U8), nogil=True, cache=True)
def fill_float(
    buf: np.ndarray,
    rows: np.ndarray,
    fstart: np.ndarray,
    fend: np.ndarray,
    fflag: np.ndarray,
    fcount: np.ndarray,
    out: np.ndarray,
) -> None:
    """One float key's values of records ``rows``, in order, into ``out`` (4 bytes
    each, little-endian float32 as on the wire)."""
    o = 0
    for i in rows:
        c = fcount[i]
        if c == 0:
            continue
        p = fstart[i]
        if fflag[i] == PACKED:
            _, p = _length(buf, p + 1, fend[i])
            out[o : o + 4 * c] = buf[p : p + 4 * c]
            o += 4 * c
        else:
            for _ in range(c):
                out[o : o + 4] = buf[p + 1 : p + 5]
                o += 4
                p += 5


@numba.njit(_t.void(_BUF, _I64, _I64, _I64, _I64, _I64, _I64), nogil=True, cache=True)
def bytes_spans(
    buf: np.ndarray,
    rows: np.ndarray,
    fstart: np.ndarray,
    fend: np.ndarray,
    fcount: np.ndarray,
    start: np.ndarray,
    length: np.ndarray,
) -> None:
    """Where each BytesList value of one key's records ``rows`` is: ``start``, ``length``."""
    o = 0
    for i in rows:
        if fcount[i] == 0:
            continue
        p = fstart[i]
        end = fend[i]
        while p < end:
            n, q = _length(buf, p + 1, end)
            start[o] = q
            length[o] = n
            o += 1
            p = q + n
