"""NumPy building blocks of the vectorized extractors.

Index ranges and gathered byte regions, and protobuf varints decoded many at
once: one per position (:func:`_varints`), packed runs (:func:`_decode_packed_varints`),
and runs of one width, whole blocks at a time (:func:`_uniform_values`).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..._record import unaligned


def _ranges(start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The indices ``start[i] .. start[i]+length[i]`` of every i, concatenated."""
    total = int(length.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    if total == len(length) and int(length.min()) == 1:
        return start  # one index each
    offsets = np.zeros(len(length) + 1, dtype=np.int64)
    np.cumsum(length, out=offsets[1:])
    return np.arange(total, dtype=np.int64) + np.repeat(start - offsets[:-1], length)


def _gather_regions(data: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Concatenate ``data[start[i]:start[i]+length[i]]`` for every i, vectorized."""
    if len(length) == 1:
        s = int(start[0])
        out: np.ndarray = data[s : s + int(length[0])]
        return out
    out = data[_ranges(start, length)]
    return out


def _varints(data: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The varint at each position: (value as int64, width in bytes; 11 if over 10).

    Reads may run up to 10 bytes past a position (the buffer is padded); a value
    of 2**63 or more comes back negative, which callers reject as a length.
    """
    b = data.take(pos)
    width = np.ones(len(pos), dtype=np.int64)
    if not len(b) or int(b.max()) < 0x80:
        return b.astype(np.int64), width
    value = (b & 0x7F).astype(np.uint64)
    live = np.flatnonzero(b >= 0x80)
    for k in range(1, 10):
        bk = data.take(pos[live] + k)
        value[live] |= (bk & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        width[live] += 1
        live = live[bk >= 0x80]
        if not len(live):
            break
    width[live] = 11
    return value.view(np.int64), width


#: Per byte j of a little-endian word: the 7 value bits of that byte, moved down by j.
_GROUPS = [(np.uint64(j), np.uint64(0x7F << (7 * j))) for j in range(8)]


_SEVENS = np.uint64(0x7F7F7F7F7F7F7F7F)


#: :func:`_pack7`'s rounds: (the upper half of every lane, how far it moves down).
_PACK_ROUNDS = [
    (np.uint64(0x7F007F007F007F00), np.uint64(1)),
    (np.uint64(0x3FFF00003FFF0000), np.uint64(2)),
    (np.uint64(0x0FFFFFFF00000000), np.uint64(4)),
]


#: MASK[k]: the low k bytes of a 64-bit word (k = 0..8).
_MASK = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)


def _pack7(words: np.ndarray) -> np.ndarray:
    """The 7-bit groups of little-endian uint64 ``words`` (varints of up to 8 bytes,
    the bytes after each one zeroed) packed together into their values, in place.

    Three rounds, whatever the width: each joins the upper half of every 16-, then
    32-, then 64-bit lane to its lower half.
    """
    words &= _SEVENS
    upper = np.empty_like(words)
    for mask, shift in _PACK_ROUNDS:
        np.bitwise_and(words, mask, out=upper)
        words ^= upper
        upper >>= shift
        words |= upper
    return words


def _varint_values(raw: np.ndarray, starts: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """The varints of ``raw`` starting at ``starts`` (``widths`` bytes each, 1..10), as int64.

    Varints of up to 8 bytes are read as one little-endian word each and their
    7-bit groups packed together; longer ones byte by byte.
    """
    padded = np.zeros(len(raw) + 8, dtype=np.uint8)
    padded[: len(raw)] = raw
    w = unaligned(padded, "<u8")[starts] & _MASK[np.minimum(widths, 8)]
    top = int(widths.max())
    if top > 3:
        value = _pack7(w)
    else:
        value = w & _GROUPS[0][1]
        for shift, mask in _GROUPS[1:top]:
            value |= (w >> shift) & mask
    long_ = np.flatnonzero(widths > 8)
    if len(long_):
        for j in (8, 9):
            live = long_[widths[long_] > j]
            value[live] |= (raw[starts[live] + j] & 0x7F).astype(np.uint64) << np.uint64(7 * j)
    out: np.ndarray = value.view(np.int64)
    return out


def _decode_packed_varints(
    raw: np.ndarray, lengths: np.ndarray
) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """Decode concatenated packed-varint regions: (values int64, count per region).

    Returns None when a region does not end on a complete varint or holds one
    longer than 10 bytes.
    """
    n = len(lengths)
    if len(raw) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(n, dtype=np.int64)
    term = raw < 0x80
    region_end = np.cumsum(lengths) - 1
    nonempty = lengths > 0
    if not term[region_end[nonempty]].all():
        return None  # a varint runs past the end of its region
    ends = np.flatnonzero(term)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    widths = ends - starts + 1
    if (widths > 10).any():
        return None
    if len(ends) == len(raw):
        values = raw.astype(np.int64)
    else:
        values = _varint_values(raw, starts, widths)
    # Varints per region: the last bytes (``ends``) before its end, less those before its start.
    bounds = np.searchsorted(ends, region_end + 1)
    counts = np.diff(bounds, prepend=0)
    return values, counts


def _uniform_width(block: np.ndarray) -> int:
    """``w`` if every row of ``block`` (records x bytes of one packed-varint list)
    holds only varints of ``w`` bytes (1..10), else 0.

    Lists written by one writer from values of one magnitude (ids, hashes,
    timestamps) are like this; they then decode as a (records, values, w) array.
    """
    g, length = block.shape
    if not g or not length:
        return 0
    ends = np.flatnonzero(block[0] < 0x80)
    if not len(ends):
        return 0
    w = int(ends[0]) + 1
    if w > 10 or length % w or len(ends) != length // w:
        return 0
    # Every byte's continuation bit: set, but for the last byte of each varint.
    pattern = np.full(length, 0x80, dtype=np.uint8)
    pattern[w - 1 :: w] = 0
    return w if ((block & 0x80) == pattern).all() else 0


def _uniform_values(block: np.ndarray, w: int) -> np.ndarray:
    """The varints of ``block`` (every one ``w`` bytes, see :func:`_uniform_width`), as int64."""
    g, length = block.shape
    if w <= 8:
        # Every varint as one little-endian word: a view stepping ``w`` bytes.
        size = g * length
        padded = np.empty(size + 8, dtype=np.uint8)
        padded[:size].reshape(g, length)[:] = block
        padded[size:] = 0
        words = np.ndarray((size // w,), dtype="<u8", buffer=padded, strides=(w,))
        packed: np.ndarray = _pack7(words & _MASK[w]).view(np.int64)
        return packed
    cells = block.reshape(g, length // w, w)
    value = (cells[:, :, 0] & 0x7F).astype(np.uint64)
    for j in range(1, w):
        value |= (cells[:, :, j] & 0x7F).astype(np.uint64) << np.uint64(7 * j)
    out: np.ndarray = value.view(np.int64).reshape(-1)
    return out


def _packed_varints_ok(raw: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per region of concatenated packed-varint regions: does it hold whole varints only?

    A region must end on a varint's last byte (< 0x80) and hold no varint longer
    than 10 bytes, or protobuf rejects the record, read or not.
    """
    n = len(lengths)
    ok = np.ones(n, dtype=bool)
    if len(raw) == 0:
        return ok
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    nonempty = lengths > 0
    ok[nonempty] = raw[offsets[1:][nonempty] - 1] < 0x80
    ends = np.flatnonzero(raw < 0x80)
    if len(ends):
        widths = np.diff(ends, prepend=-1)
        too_long = ends[widths > 10]
        if len(too_long):
            ok[np.searchsorted(offsets, too_long, side="right") - 1] = False
    return ok
