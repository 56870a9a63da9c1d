"""Vectorized extraction of Example and SequenceExample features from a batch of records.

Two extractors, both NumPy over the concatenated bytes of the records of a
chunk, both exact: a record they cannot read with certainty is left to the
generic protobuf path (``_parse``), so results and errors are always the
generic path's. A batch of more than :data:`WINDOW_BYTES` (big records) is
extracted a window of records at a time.

* **Equal layout.** Records of one length whose structural bytes (tags, lengths,
  keys) equal a template record's parse along the same path, so a 2-D array of
  them gives whole columns at once (MNIST-like and tabular files: one writer;
  each of the few most common lengths, as varint widths vary, has its template).
* **Entry walk.** Everything else: the map entries of all records are walked in
  lockstep *by entry index* (the n-th entry of every record at once), so key
  order, missing keys, extra keys, list lengths and varint widths do not matter.
  Each entry's key bytes are hashed with one vectorized pass and looked up in a
  :class:`KeyTable` (then compared byte for byte), which places each entry in a
  (record, key slot) table; each feature's values are gathered per kind for all
  entries at once (packed or unpacked numbers, BytesList items), and finally per
  key, in record order, through that table.

SequenceExamples (:func:`extract_sequences`) are walked the same way: the
context's map entries as an Example's, then the feature lists' entries, then the
steps (``Feature`` s) of every list at once. A batch with any record this cannot
read with certainty goes to the generic path whole.

Records either extractor leaves to the generic path: concatenated (merged)
Examples, a key given twice, unknown fields, a ``Feature`` with two kinds set,
several packed chunks in one list, keys that are not ASCII and not read, kinds
that do not match the spec (the generic path words the error), and anything
malformed.

Wire layout walked (proto3, TensorFlow's field numbers)::

    Example   { 1: Features  (LEN) }                       tag 0x0a
    Features  { 1: map entry (LEN), repeated }              tag 0x0a
    entry     { 1: key string (LEN)  2: Feature (LEN) }     tags 0x0a, 0x12
    Feature   { 1: BytesList | 2: FloatList | 3: Int64List } tags 0x0a/0x12/0x1a
    BytesList { 1: bytes, repeated }                        tag 0x0a each
    FloatList { 1: packed fixed32 (LEN) | fixed32 each }    tag 0x0a, or 0x0d each
    Int64List { 1: packed varints (LEN) | varint each }     tag 0x0a, or 0x08 each

Before its first extraction a process allocates and frees one
:data:`HEAP_SETTLE_BYTES` block, so that glibc's malloc keeps the memory of
these passes instead of faulting it in anew for each window (:func:`_settle_heap`).

Set ``TFRECORD_LITE_FASTPATH=0`` to switch this path off (debugging).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from .._record import Buffer, RecordSpans, unaligned
from ._schema import DType, float32, int64, string

__all__ = [
    "FastColumn",
    "KeyTable",
    "SequenceColumns",
    "enabled",
    "extract",
    "extract_sequences",
    "key_table",
    "merge_columns",
]

#: Below this many records the generic path is as fast.
MIN_BATCH = 8
#: Bytes of records joined into one buffer at most (a batch of bigger records is
#: extracted a window of records at a time; a single bigger record on its own).
WINDOW_BYTES = 16 << 20
#: Record lengths whose layouts the equal-layout path tries, most common first.
_LAYOUTS = 4
#: Joined buffers under this size are walked with int32 positions (else int64).
_INT32_BYTES = 1 << 31
#: Zero bytes after the records: lets varint reads run past a record's end safely.
_PAD = 16

_KIND_TAG = {"bytes_list": 0x0A, "float_list": 0x12, "int64_list": 0x1A}
_TAG_KIND = {v: k for k, v in _KIND_TAG.items()}
_KIND_DTYPE = {"bytes_list": string, "float_list": float32, "int64_list": int64}

# Kind codes of the entry walk: 0 an empty Feature(), 1 bytes, 2 float, 3 int64.
_BYTES, _FLOAT, _INT64 = 1, 2, 3
_CODE_OF_DTYPE = {"string": _BYTES, "float32": _FLOAT, "int64": _INT64}
_FEATURE_TAG_CODE = np.full(256, -1, dtype=np.int8)
_FEATURE_TAG_CODE[[0x0A, 0x12, 0x1A]] = [_BYTES, _FLOAT, _INT64]


def enabled() -> bool:
    """Whether the vectorized path is on (``TFRECORD_LITE_FASTPATH``, default on)."""
    return os.environ.get("TFRECORD_LITE_FASTPATH", "1").strip().lower() not in (
        "0",
        "false",
        "no",
        "off",
    )


class FastColumn(NamedTuple):
    """Everything parsing needs of one feature key over a batch of records.

    ``present[i]``: record ``i`` has the key with a kind set (a key mapped to an
    empty ``Feature()`` counts as absent, as in TensorFlow); ``counts[i]``: its
    number of values (0 when absent); ``values``: all records' values, concatenated.
    Both extractors produce it: this module's, and the generic one in ``_parse``
    (which calls it ``Column``).
    """

    present: np.ndarray
    counts: np.ndarray
    values: np.ndarray


class _GiveUp(Exception):
    """The template record has a layout this module does not handle."""


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _GiveUp
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


# --------------------------------------------------------------------------- vector helpers


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


# --------------------------------------------------------------------------- key lookup

#: Multipliers of the key hash, one per 8-byte window (odd 64-bit constants).
_MULT = np.array(
    [(0x9E3779B97F4A7C15 * (2 * j + 1) + 0x632BE59BD9B4E019 * j) % 2**64 for j in range(64)],
    dtype=np.uint64,
) | np.uint64(1)
_LENGTH_MULT = np.uint64(0xD6E8FEB86659FD93)
#: MASK[k]: the low k bytes of a 64-bit word (k = 0..8).
_MASK = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
_HIGH_BITS = np.uint64(0x8080808080808080)


def _key_words(words: np.ndarray, start: np.ndarray, length: np.ndarray, j: int) -> np.ndarray:
    """Window ``j`` of each key: bytes ``8j..8j+8`` (the last 8 bytes for the last window).

    Windows 0 .. ceil(length/8)-1 cover a key exactly (the last may overlap the one
    before; a key under 8 bytes is masked), so equal lengths and equal windows mean
    equal keys. Windows past a key's end are 0.
    """
    if j == 0:
        w: np.ndarray = words[start] & _MASK[np.minimum(length, 8)]
        return w
    off = np.minimum(8 * j, length - 8)
    inside = length > 8 * j
    w = words[start + np.where(inside, off, 0)]
    return np.where(inside, w, np.uint64(0))


def _short_hash(w0: np.ndarray, wl: np.ndarray, length: np.ndarray) -> np.ndarray:
    """A hash of a key's length, first and last 8-byte windows."""
    h = w0 * _MULT[0]
    h ^= wl * _MULT[1]
    h ^= length.astype(np.uint64) * _LENGTH_MULT
    h ^= h >> np.uint64(31)
    h *= _MULT[2]
    h ^= h >> np.uint64(29)
    out: np.ndarray = h
    return out


def _first_last(
    words: np.ndarray, start: np.ndarray, length: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each key's first and last 8-byte windows (equal, and masked, under 8 bytes)."""
    mask = _MASK[np.minimum(length, 8)]  # all ones from 8 bytes on
    w0 = words[start] & mask
    wl = words[start + np.maximum(length - 8, 0)] & mask
    return w0, wl


class KeyTable:
    """The feature keys one parse reads, compiled once for vectorized lookups.

    ``names``/``dtypes``: the keys in order (a key's *slot* is its position). A key
    in a record is read as 8-byte windows; its length and first and last windows
    pick a slot through a small collision-free hash table, then every window is
    compared with the slot's key (which compares every byte).
    """

    def __init__(self, needed: Mapping[str, DType]) -> None:
        self.names = list(needed)
        self.dtypes = [needed[k] for k in self.names]
        self.codes = np.array([_CODE_OF_DTYPE[d.name] for d in self.dtypes], dtype=np.int8)
        encoded = [k.encode("utf-8") for k in self.names]
        n = len(encoded)
        lengths = np.array([len(k) for k in encoded], dtype=np.int64)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(encoded) + bytes(_PAD), dtype=np.uint8)
        words = unaligned(data, "<u8")
        self.windows = max(1, -(-int(lengths.max(initial=0)) // 8))
        key_words = np.zeros((n, self.windows), dtype=np.uint64)
        for j in range(self.windows):
            key_words[:, j] = _key_words(words, offsets[:-1], lengths, j)
        first, last = _first_last(words, offsets[:-1], lengths)
        hashes = _short_hash(first, last, lengths)
        #: Keys that differ only between their first and last 8 bytes: hash every window.
        self.full = len(np.unique(hashes)) < n
        if self.full:
            hashes = self._full_hash(key_words, lengths)
        # What the lookup compares a candidate slot with: per slot, the key's length,
        # first and last windows and every window; row n is a sentinel that no key
        # matches (length -1), where empty buckets point.
        self.lengths = np.append(lengths, -1)
        self.first = np.append(first, np.uint64(0))
        self.last = np.append(last, np.uint64(0))
        self.words = np.vstack([key_words, np.zeros((1, self.windows), dtype=np.uint64)])
        # A bucket per hash value: find a table size and shift with no two keys in a bucket.
        self.usable = False
        self.shift = np.uint64(0)
        self.mask = np.uint64(0)
        self.buckets = np.full(1, n, dtype=np.intp)
        size = 8
        while size <= 1 << 16 and not self.usable:
            while size < 2 * n:
                size *= 2
            for shift in range(0, 64 - size.bit_length() + 2):
                b = (hashes >> np.uint64(shift)) & np.uint64(size - 1)
                if len(np.unique(b)) == n:
                    self.shift, self.mask = np.uint64(shift), np.uint64(size - 1)
                    self.buckets = np.full(size, n, dtype=np.intp)
                    self.buckets[b.astype(np.intp)] = np.arange(n)
                    self.usable = True
                    break
            size *= 2

    @staticmethod
    def _full_hash(words: np.ndarray, length: np.ndarray) -> np.ndarray:
        h = length.astype(np.uint64) * _LENGTH_MULT
        for j in range(words.shape[1]):
            h ^= words[:, j] * _MULT[(j + 3) % len(_MULT)]
            h ^= h >> np.uint64(29)
            h *= _MULT[2]
        out: np.ndarray = h
        return out

    def lookup(
        self, data: np.ndarray, start: np.ndarray, length: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Slots of the keys ``data[start:start+length]`` (-1: not a key read).

        Also returns, per key, whether it is safe to leave unread: a key that
        matches no slot must be valid UTF-8 (protobuf checks string keys); this
        accepts ASCII only and lets the caller send other records the generic way.
        """
        m = len(length)
        safe = np.ones(m, dtype=bool)
        if not m or not len(self.names):
            slots = np.full(m, -1, dtype=np.int64)
        else:
            words = unaligned(data, "<u8")
            w0, wl = _first_last(words, start, length)
            if self.full:
                kw = np.empty((m, self.windows), dtype=np.uint64)
                for j in range(self.windows):
                    kw[:, j] = _key_words(words, start, length, j)
                h = self._full_hash(kw, length)
            else:
                h = _short_hash(w0, wl, length)
            h >>= self.shift
            h &= self.mask
            c = self.buckets[h.view(np.int64)]
            hit = self.lengths[c] == length
            hit &= self.first[c] == w0
            hit &= self.last[c] == wl
            if self.windows > 2:
                # Keys over 16 bytes: compare the windows between the first and last.
                long_ = np.flatnonzero(hit & (length > 16))
                for j in range(1, self.windows - 1):
                    mid = long_[length[long_] > 8 * (j + 1)]
                    same = _key_words(words, start[mid], length[mid], j) == self.words[c[mid], j]
                    hit[mid[~same]] = False
            slots = np.where(hit, c, -1)
        unknown = np.flatnonzero(slots < 0)
        if len(unknown):
            # Unread keys must be ASCII here: check every window of theirs.
            words = unaligned(data, "<u8")
            us, ul = start[unknown], length[unknown]
            high = np.zeros(len(unknown), dtype=bool)
            for j in range(max(1, -(-int(ul.max()) // 8))):
                high |= (_key_words(words, us, ul, j) & _HIGH_BITS) != 0
            safe[unknown[high]] = False
        return slots, safe


@functools.lru_cache(maxsize=64)
def _key_table(keys: tuple[tuple[str, DType], ...]) -> KeyTable:
    return KeyTable(dict(keys))


def key_table(needed: Mapping[str, DType]) -> KeyTable:
    """The :class:`KeyTable` of ``needed``, compiled once per set of keys and dtypes
    (parses that build their plan per call share it)."""
    return _key_table(tuple(needed.items()))


# --------------------------------------------------------------------------- the heap

#: The block :func:`_settle_heap` allocates and frees once per process (0: never).
HEAP_SETTLE_BYTES = 8 << 20
_heap_settled = False


def _settle_heap() -> None:
    """Allocate and free one :data:`HEAP_SETTLE_BYTES` block, once per process
    (before the first extraction).

    The entry walk makes dozens of NumPy temporaries of a few hundred KiB per
    window, and big values become big ``bytes`` objects. glibc's malloc maps
    blocks above its mmap threshold (128 KiB at start) afresh, and hands the top
    of its heap back to the system once more than its trim threshold (also 128
    KiB) is free there: in a process that had not yet freed a big block, every
    window faulted its temporaries in anew (taxi-like records: about 15,000 page
    faults a pass, 10-15% of the parse time on a 2-core VM). Freeing one mapped
    block raises the two thresholds to its size and twice that (glibc's dynamic
    threshold, where a process that has handled a big array already is), so the
    memory is reused from the heap. The block is never touched: it costs one mmap
    and one munmap. Other allocators are not affected.
    """
    global _heap_settled
    _heap_settled = True
    if HEAP_SETTLE_BYTES > 0:
        block = np.empty(HEAP_SETTLE_BYTES, dtype=np.uint8)
        del block


# --------------------------------------------------------------------------- entry walk


def _reject(ok: np.ndarray, rec: np.ndarray, good: np.ndarray) -> None:
    """Mark the records of the entries that are not ``good`` as not handled."""
    if not good.all():
        ok[rec[~good]] = False


def _length_field(
    data: np.ndarray, pos: np.ndarray, limit: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A length prefix at ``pos``: (payload start, payload end, fits within ``limit``)."""
    b = data.take(pos)
    if not len(b) or int(b.max()) < 0x80:  # one-byte lengths (the common case)
        start = pos + 1
        end = start + b
        fits = end <= limit
        if fits.all():
            return start, end, fits
        return start, np.where(fits, end, start), fits
    n, w = _varints(data, pos)
    start = pos + w
    fits = (w <= 10) & (n >= 0) & (n <= limit - start)
    return start, start + np.where(fits, n, 0), fits


def _owner_major(
    n: int, owners: list[np.ndarray], *columns: list[np.ndarray]
) -> tuple[np.ndarray, ...]:
    """Put items found step by step (``owners[k]``: owners of the k-th items) owner-major.

    Within one owner, items keep their step order. No sort: each item's place is
    its owner's first place plus its step.
    """
    owner = np.concatenate(owners)
    if len(owners) == 1:
        return (owner, *(c[0] for c in columns))
    counts = np.bincount(owner, minlength=n)
    first = np.zeros(n, dtype=np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    steps = np.concatenate([np.full(len(o), k, dtype=np.int64) for k, o in enumerate(owners)])
    dest = first[owner] + steps
    out = [np.empty_like(owner)]
    out[0][dest] = owner
    for c in columns:
        flat = np.concatenate(c)
        placed = np.empty_like(flat)
        placed[dest] = flat
        out.append(placed)
    return tuple(out)


def _walk_fields(
    data: np.ndarray, act: np.ndarray, cur: np.ndarray, lim: np.ndarray, ok: np.ndarray
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Walk regions ``cur[i]..lim[i]`` of fields 1 (tag 0x0A, length-delimited) in lockstep.

    Step k reads the k-th field of every region still going: returns, per step,
    the owners (``act`` values) and payload starts and ends. An owner whose region
    holds anything else, or a field running past its end, is marked in ``ok``.
    """
    owners: list[np.ndarray] = []
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    while len(act):
        tag_ok = data.take(cur) == 0x0A
        s, e, fits = _length_field(data, cur + 1, lim)
        good = tag_ok & fits
        if not good.all():
            ok[act[~good]] = False
            act, s, e, lim = act[good], s[good], e[good], lim[good]
        owners.append(act)
        starts.append(s)
        ends.append(e)
        more = e < lim
        act, cur, lim = act[more], e[more], lim[more]
    return owners, starts, ends


def _bytes_items(
    data: np.ndarray, ls: np.ndarray, le: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Walk BytesLists in lockstep: (items per list, item starts, item lengths, list ok).

    Items come list-major, in order.
    """
    m = len(ls)
    good_list = np.ones(m, dtype=bool)
    act = np.flatnonzero(ls < le)
    owners, starts, ends = _walk_fields(data, act, ls[act], le[act], good_list)
    if not owners:
        z = np.zeros(0, dtype=np.int64)
        return np.zeros(m, dtype=np.int64), z, z, good_list
    owner, start, end = _owner_major(m, owners, starts, ends)
    return np.bincount(owner, minlength=m).astype(np.int64), start, end - start, good_list


def _float_values(
    data: np.ndarray, ls: np.ndarray, le: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FloatLists: (values per list, all values, list ok). Packed (one chunk) or unpacked."""
    m = len(ls)
    size = le - ls
    first = data.take(ls)
    counts = np.zeros(m, dtype=np.int64)
    good = size == 0
    packed = (first == 0x0A) & ~good
    unpacked = (first == 0x0D) & ~good
    ps, pe, fits = _length_field(data, ls + 1, le)
    packed_ok = packed & fits & (pe == le) & ((pe - ps) % 4 == 0)
    if not unpacked.any() and ((pe - ps)[packed_ok] == 4).all():
        # One float per list (or none): read them as 4-byte words, no byte gather.
        counts[packed_ok] = 1
        good |= packed_ok
        scalars = unaligned(data, "<u4")
        return counts, scalars[ps[packed_ok]].view("<f4").astype(np.float32), good
    counts[packed_ok] = (pe - ps)[packed_ok] // 4
    good |= packed_ok
    if not unpacked.any():
        raw = _gather_regions(data, ps[packed_ok], (pe - ps)[packed_ok])
        return counts, raw.view("<f4").astype(np.float32), good
    unpacked &= size % 5 == 0
    idx = np.flatnonzero(unpacked)
    raw = _gather_regions(data, ls[idx], size[idx]).reshape(-1, 5)
    tag_bad = raw[:, 0] != 0x0D
    item_owner = np.repeat(idx, size[idx] // 5)
    unpacked[item_owner[tag_bad]] = False
    counts[unpacked] = size[unpacked] // 5
    good |= unpacked
    # Interleave both kinds of lists in list order.
    offsets = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    values = np.empty(int(offsets[-1]), dtype=np.float32)
    values[_ranges(offsets[:-1][packed_ok], counts[packed_ok])] = _gather_regions(
        data, ps[packed_ok], (pe - ps)[packed_ok]
    ).view("<f4")
    keep = unpacked[item_owner]
    values[_ranges(offsets[:-1][unpacked], counts[unpacked])] = (
        np.ascontiguousarray(raw[keep, 1:]).reshape(-1).view("<f4")
    )
    return counts, values, good


def _int64_values(
    data: np.ndarray, ls: np.ndarray, le: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Int64Lists: (values per list, all values, list ok). Packed (one chunk) or unpacked."""
    m = len(ls)
    size = le - ls
    first = data.take(ls)
    empty = size == 0
    packed = (first == 0x0A) & ~empty
    unpacked = (first == 0x08) & ~empty
    ps, pe, fits = _length_field(data, ls + 1, le)
    packed &= fits & (pe == le)
    if not unpacked.any():
        # One varint per list (or none): read them where they are, no byte gather.
        plen = pe - ps
        value, width = _varints(data, ps)
        single = packed & (width == plen) & (width <= 10)
        if (single | ~packed | (plen == 0)).all():
            counts = single.astype(np.int64)
            return counts, value[single], empty | packed
    # Unpacked lists are varints too (tag 0x08, value, tag, value, ...): decode both alike.
    rs = np.where(unpacked, ls, ps)
    rlen = np.where(packed | unpacked, np.where(unpacked, size, pe - ps), 0)
    good = empty | packed | unpacked
    raw = _gather_regions(data, rs, rlen)
    region_ok = _packed_varints_ok(raw, rlen)
    if not region_ok.all():
        good &= region_ok
        rlen = np.where(good, rlen, 0)
        raw = _gather_regions(data, rs, rlen)
    decoded = _decode_packed_varints(raw, rlen)
    assert decoded is not None  # every region was checked
    values, counts = decoded
    if unpacked.any():
        owner = np.repeat(np.arange(m, dtype=np.int64), counts)
        offsets = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        within = np.arange(len(values), dtype=np.int64) - offsets[:-1][owner]
        is_tag = unpacked[owner] & (within % 2 == 0)
        bad = unpacked & (counts % 2 == 1)
        bad[owner[is_tag & (values != 0x08)]] = True
        good &= ~bad
        values = values[~is_tag]
        counts = np.where(unpacked, counts // 2, counts)
    return counts, values, good


def _walk_features(
    data: np.ndarray, fs: np.ndarray, fe: np.ndarray, ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Walk the map entries of Features regions ``fs..fe`` in lockstep by entry index.

    Returns (owner, start, end) of every entry body, step by step (the first
    entries of all records, then the second ones, ...); owners whose entries are
    malformed are marked in ``ok``.
    """
    act = np.flatnonzero(ok & (fs < fe))
    owners, starts, ends = _walk_fields(data, act, fs[act], fe[act], ok)
    if not owners:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    if len(owners) == 1:
        return owners[0], starts[0], ends[0]
    return np.concatenate(owners), np.concatenate(starts), np.concatenate(ends)


class _Entries(NamedTuple):
    """The map entries of a chunk (in walk order): owner, kind code, list region.

    ``place``: per record and key slot (``n * slots``, record-major), the index of
    the entry giving that key a kind, or -1.
    """

    owner: np.ndarray
    code: np.ndarray
    ls: np.ndarray
    le: np.ndarray
    place: np.ndarray


def _key_value(
    data: np.ndarray, es: np.ndarray, ee: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Map entries ``es..ee`` (key: field 1, value: field 2, spanning the rest):
    (key start, key end, value start, well formed). The value ends at ``ee``."""
    tag_ok = (es < ee) & (data.take(es) == 0x0A)
    ks, ke, fits = _length_field(data, es + 1, ee)
    good = tag_ok & fits & (ke < ee)
    if not good.all():
        ke = np.where(good, ke, es)
    good &= data.take(ke) == 0x12
    vs, ve, fits = _length_field(data, ke + 1, ee)
    good &= fits & (ve == ee)
    return ks, ke, vs, good


def _place_keys(
    data: np.ndarray,
    owner: np.ndarray,
    ks: np.ndarray,
    ke: np.ndarray,
    good: np.ndarray,
    table: KeyTable,
    ok: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Look up the keys ``ks..ke`` of map entries (owned by records ``owner``) in
    ``table``: (slot per entry, -1 if not read; per record and slot, record-major,
    the entry giving it, else -1; the entries with a slot; their places).

    Records with an entry not ``good``, an unread key that is not ASCII, or a key
    given twice (merged messages) are marked in ``ok``: the generic path reads them.
    """
    _reject(ok, owner, good)
    slots, safe = table.lookup(data, ks, np.where(good, ke - ks, 0))
    _reject(ok, owner, safe)
    ns = len(table.names)
    place = np.full(len(ok) * ns, -1, dtype=np.int64)
    known = np.flatnonzero(slots >= 0)
    flat = owner[known] * ns + slots[known]
    place[flat] = known
    twice = place[flat] != known
    if twice.any():
        ok[owner[known[twice]]] = False
    return slots, place, known, flat


def _entries(
    data: np.ndarray,
    owner: np.ndarray,
    es: np.ndarray,
    ee: np.ndarray,
    table: KeyTable,
    ok: np.ndarray,
    zero: int,
    found: Optional[np.ndarray] = None,
) -> _Entries:
    """Read each entry's key (looked up in ``table``) and its Feature's kind and list region.

    ``zero``: the index of a zero byte in ``data`` (an empty Feature's length is read there).
    ``found``: when given (``n * slots`` bools, record-major), set where a record has
    the key at all, an empty Feature included.
    """
    ks, ke, vs, good = _key_value(data, es, ee)
    # The Feature: empty (no kind), or exactly one list field spanning it.
    nonempty = vs < ee
    if nonempty.all():
        code = _FEATURE_TAG_CODE.take(data.take(vs))
        lpos = vs + 1
    else:
        code = np.where(nonempty, _FEATURE_TAG_CODE.take(data.take(vs)), 0).astype(np.int8)
        # An empty Feature's length is read from a zero byte (not the next entry).
        lpos = np.where(nonempty, vs + 1, zero)
    ls, le, fits = _length_field(data, lpos, ee)
    good &= ~nonempty | ((code > 0) & fits & (le == ee))
    slots, place, known, flat = _place_keys(data, owner, ks, ke, good, table, ok)
    if len(known):
        kslots = slots[known]
        if found is not None:
            found[flat] = True
        # A kind other than the spec's: the generic path words the error.
        kcode = code[known]
        wrong = (kcode != 0) & (kcode != table.codes[kslots])
        if wrong.any():
            ok[owner[known[wrong]]] = False
        empty = kcode == 0
        if empty.any():
            place[flat[empty]] = -1  # a key mapped to an empty Feature() is absent
    if not good.all():
        le = np.where(good & nonempty, le, ls)
    return _Entries(owner, code, ls, le, place)


def _walk_examples(
    data: np.ndarray, starts: np.ndarray, ends: np.ndarray, ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The Features region of each Example record (one field spanning it, or nothing)."""
    fs = starts.copy()
    idx = np.flatnonzero(ends > starts)
    if len(idx):
        s = starts[idx]
        e = ends[idx]
        ps, pe, fits = _length_field(data, s + 1, e)
        good = (data.take(s) == 0x0A) & fits & (pe == e)
        ok[idx[~good]] = False
        fs[idx] = ps
    return fs, ends


class _KindValues(NamedTuple):
    """The lists of one kind (in item order): values per list, where each list's
    values start, and the values (BytesLists: (item starts, item lengths))."""

    counts: np.ndarray
    offsets: np.ndarray
    values: Any


def _values_by_kind(
    data: np.ndarray, code: np.ndarray, ls: np.ndarray, le: np.ndarray
) -> tuple[dict[int, _KindValues], np.ndarray, np.ndarray]:
    """Decode the lists ``ls..le`` of every item (``code``: its kind, 0 for none), each
    kind at once: (per kind, each item's place among its kind, items well formed)."""
    per_kind: dict[int, _KindValues] = {}
    local = np.zeros(len(code), dtype=np.int64)
    good_items = np.ones(len(code), dtype=bool)
    for kind in (_BYTES, _FLOAT, _INT64):
        idx = np.flatnonzero(code == kind)
        local[idx] = np.arange(len(idx), dtype=np.int64)
        values: Any
        if kind == _BYTES:
            counts, istart, ilen, good = _bytes_items(data, ls[idx], le[idx])
            values = (istart, ilen)
        elif kind == _FLOAT:
            counts, values, good = _float_values(data, ls[idx], le[idx])
        else:
            counts, values, good = _int64_values(data, ls[idx], le[idx])
        if not good.all():
            good_items[idx[~good]] = False
        offsets = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        per_kind[kind] = _KindValues(counts, offsets, values)
    return per_kind, local, good_items


def _gather_kind(
    buf: Buffer, data: np.ndarray, lists: _KindValues, kind: int, j: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(values per list, all values) of the lists at places ``j`` of one kind, in order."""
    counts = lists.counts[j]
    items = _ranges(lists.offsets[j], counts)
    if kind == _BYTES:
        istart, ilen = lists.values
        return counts, _bytes_objects(buf, data, istart[items], ilen[items])
    values: np.ndarray = lists.values[items]
    return counts, values


def _columns(
    buf: Buffer,
    data: np.ndarray,
    ent: _Entries,
    ok: np.ndarray,
    table: KeyTable,
    needed: Mapping[str, DType],
) -> dict[str, FastColumn]:
    """Values of every entry (validated, read or not), then one column per needed key."""
    per_kind, local, good = _values_by_kind(data, ent.code, ent.ls, ent.le)
    _reject(ok, ent.owner, good)
    # Per handled record and slot: the entry giving the key a kind, or -1.
    place = ent.place.reshape(len(ok), len(table.names))
    if not ok.all():
        place = place[ok]
    m = len(place)
    cols: dict[str, FastColumn] = {}
    for slot, name in enumerate(table.names):
        entry = place[:, slot]
        present = entry >= 0
        kind = int(table.codes[slot])
        found, values = _gather_kind(buf, data, per_kind[kind], kind, local[entry[present]])
        counts = np.zeros(m, dtype=np.int64)
        counts[present] = found
        cols[name] = FastColumn(present, counts, values)
    return cols


#: BytesList items up to this long are cut out a whole length at a time
#: (:func:`_bytes_objects`) when they have at most :data:`_SHORT_LENGTHS` distinct
#: lengths, or one per :data:`_ITEMS_PER_LENGTH` items (a length's gather costs
#: about as much as that many items cut one by one).
_SHORT_BYTES = 64
_SHORT_LENGTHS = 8
_ITEMS_PER_LENGTH = 128


def _bytes_objects(
    buf: Buffer, data: np.ndarray, start: np.ndarray, length: np.ndarray
) -> np.ndarray:
    """``buf[start[i]:start[i]+length[i]]`` for every i, as an object array of bytes.

    Short values of a few distinct lengths are cut out a whole length at a time
    (a 2-D gather viewed as fixed-size byte strings); others one by one.
    """
    n = len(start)
    out = np.empty(n, dtype=object)
    if not n:
        return out
    top = int(length.max())
    if top <= _SHORT_BYTES:
        seen = np.bincount(length, minlength=top + 1)
        distinct = np.flatnonzero(seen)
        if len(distinct) <= max(_SHORT_LENGTHS, n // _ITEMS_PER_LENGTH):
            if len(distinct) == 1:
                groups = [np.arange(n, dtype=np.int64)]
            else:
                order = np.argsort(length, kind="stable")
                groups = np.split(order, np.cumsum(seen[distinct])[:-1])
            for size, idx in zip(distinct.tolist(), groups):
                if size == 0:
                    out[idx] = b""
                    continue
                block = data[start[idx][:, None] + np.arange(size)]
                part = np.empty(len(idx), dtype=object)
                part[:] = block.view(np.dtype((np.void, size))).ravel().tolist()
                out[idx] = part
            return out
    ends = start + length
    if isinstance(buf, bytes):
        out[:] = [buf[s:e] for s, e in zip(start.tolist(), ends.tolist())]
    else:  # a work array: copies
        view = memoryview(buf)
        out[:] = [view[s:e].tobytes() for s, e in zip(start.tolist(), ends.tolist())]
    return out


def _walk(
    buf: Buffer,
    data: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    table: KeyTable,
    needed: Mapping[str, DType],
    zero: int,
) -> tuple[np.ndarray, dict[str, FastColumn]]:
    """The entry walk over records ``starts..ends``: (handled mask, columns of those).

    ``data`` (``buf``'s bytes) has at least :data:`_PAD` bytes after the last
    record, and a zero byte at ``zero``.
    """
    ok = np.ones(len(starts), dtype=bool)
    fs, fe = _walk_examples(data, starts, ends, ok)
    owner, es, ee = _walk_features(data, fs, fe, ok)
    ent = _entries(data, owner, es, ee, table, ok, zero)
    return ok, _columns(buf, data, ent, ok, table, needed)


# --------------------------------------------------------------------------- SequenceExamples


class SequenceColumns(NamedTuple):
    """What :func:`extract_sequences` found.

    ``context``: a column per context key; ``present`` means the record has the key
    (as TensorFlow's SequenceExample parser counts it: an empty ``Feature`` too).
    ``lists``: per feature-list key, (has the key, steps per record, a column over
    every step of every record, record-major).
    """

    context: dict[str, FastColumn]
    lists: dict[str, tuple[np.ndarray, np.ndarray, FastColumn]]


def _sequence_parts(
    data: np.ndarray, starts: np.ndarray, ends: np.ndarray, ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The context (field 1) and feature_lists (field 2) regions of each
    SequenceExample: (context start, end, lists start, end), empty where absent.
    A record with anything else, or either field twice, is marked in ``ok``."""
    cs, ce, fs, fe = starts.copy(), starts.copy(), starts.copy(), starts.copy()
    seen = np.zeros((2, len(starts)), dtype=bool)
    act = np.flatnonzero(ends > starts)
    cur, lim = starts[act], ends[act]
    while len(act):
        tag = data.take(cur)
        s, e, fits = _length_field(data, cur + 1, lim)
        field = np.where(tag == 0x0A, 0, np.where(tag == 0x12, 1, -1))
        good = fits & (field >= 0)
        good[good] &= ~seen[field[good], act[good]]
        ok[act[~good]] = False
        for f, (rs, re_) in enumerate(((cs, ce), (fs, fe))):
            mine = good & (field == f)
            rs[act[mine]] = s[mine]
            re_[act[mine]] = e[mine]
            seen[f, act[mine]] = True
        more = good & (e < lim)
        act, cur, lim = act[more], e[more], lim[more]
    return cs, ce, fs, fe


def _step_values(
    data: np.ndarray, fs: np.ndarray, fe: np.ndarray, zero: int
) -> Optional[tuple[np.ndarray, dict[int, _KindValues], np.ndarray]]:
    """The Feature messages ``fs..fe`` (steps of feature lists; each empty, or one
    list of any kind): (kind code per Feature, 0 if empty; :func:`_values_by_kind`'s
    lists per kind and places). None when any is malformed.
    """
    nonempty = fs < fe
    code = np.where(nonempty, _FEATURE_TAG_CODE.take(data.take(np.where(nonempty, fs, zero))), 0)
    if (code < 0).any():
        return None
    ls, le, fits = _length_field(data, np.where(nonempty, fs + 1, zero), fe)
    if not (~nonempty | (fits & (le == fe))).all():
        return None
    per_kind, local, good = _values_by_kind(data, code, ls, le)
    if not good.all():
        return None
    return code, per_kind, local


def _record_lengths(records: Sequence[bytes]) -> np.ndarray:
    """The length of every record, as int64."""
    if isinstance(records, RecordSpans):
        return records.lengths()
    return np.fromiter(map(len, records), dtype=np.int64, count=len(records))


def extract_sequences(
    records: Sequence[bytes],
    context: Mapping[str, DType],
    lists: Mapping[str, DType],
    tables: Optional[tuple[KeyTable, KeyTable]] = None,
) -> Optional[SequenceColumns]:
    """Context and feature-list columns of a batch of SequenceExamples, or None when
    any record needs the generic path (anything unusual: it reads or words it).

    ``context`` / ``lists``: the keys read and their dtypes; ``tables``: their
    compiled :class:`KeyTable` s (built here when not given). The walk is the
    Example one: the context's map entries by entry index, then the feature
    lists' entries, then the steps (``Feature`` s) of every list at once.
    """
    n = len(records)
    if n < MIN_BATCH or not enabled():
        return None
    ctable, ltable = tables if tables is not None else (key_table(context), key_table(lists))
    if not (ctable.usable and ltable.usable):
        return None
    lengths = _record_lengths(records)
    if not _heap_settled:
        _settle_heap()
    if int(lengths.sum()) <= WINDOW_BYTES:
        return _sequence_window(records, lengths, context, lists, ctable, ltable)
    # Big records: a window of records at a time (as :func:`extract`).
    cuts = _window_cuts(records, lengths)
    parts = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        part = _sequence_window(records[a:b], lengths[a:b], context, lists, ctable, ltable)
        if part is None:
            return None
        parts.append(part)
    return SequenceColumns(
        _joined([p.context for p in parts], context),
        {
            name: (
                np.concatenate([p.lists[name][0] for p in parts]),
                np.concatenate([p.lists[name][1] for p in parts]),
                _joined([{name: p.lists[name][2]} for p in parts], [name])[name],
            )
            for name in lists
        },
    )


def _sequence_window(
    records: Sequence[bytes],
    lengths: np.ndarray,
    context: Mapping[str, DType],
    lists: Mapping[str, DType],
    ctable: KeyTable,
    ltable: KeyTable,
) -> Optional[SequenceColumns]:
    """:func:`extract_sequences` of one window of records."""
    n = len(records)
    buf, starts, zero = _contiguous(records, lengths)
    data = np.frombuffer(buf, dtype=np.uint8)
    ok = np.ones(n, dtype=bool)
    cs, ce, fs, fe = _sequence_parts(data, starts, starts + lengths, ok)
    # The context: an Example's Features.
    owner, es, ee = _walk_features(data, cs, ce, ok)
    found = np.zeros(n * len(ctable.names), dtype=bool)
    ent = _entries(data, owner, es, ee, ctable, ok, zero, found)
    if not ok.all():
        return None
    cols = _columns(buf, data, ent, ok, ctable, context)
    if not ok.all():
        return None
    has = found.reshape(n, len(ctable.names))
    ctx = {
        name: cols[name]._replace(present=has[:, slot]) for slot, name in enumerate(ctable.names)
    }
    # The feature lists: entries of the same shape, each value a FeatureList.
    owner, es, ee = _walk_features(data, fs, fe, ok)
    ks, ke, vs, good = _key_value(data, es, ee)
    _, place, _, _ = _place_keys(data, owner, ks, ke, good, ltable, ok)
    if not ok.all():
        return None
    # Every step of every list, read or not (as protobuf checks them all): its
    # Feature's region, entry by entry; then each kind's values for all steps at once.
    good = np.ones(len(es), dtype=bool)
    act = np.flatnonzero(vs < ee)
    owners, step_starts, step_ends = _walk_fields(data, act, vs[act], ee[act], good)
    if not good.all():
        return None
    if owners:
        step_owner, step_start, step_end = _owner_major(len(es), owners, step_starts, step_ends)
    else:
        step_owner = step_start = step_end = np.zeros(0, dtype=np.int64)
    steps_of = _step_values(data, step_start, step_end, zero)
    if steps_of is None:
        return None
    code, per_kind, local = steps_of
    per_entry = np.bincount(step_owner, minlength=len(es)).astype(np.int64)
    first = np.zeros(len(es), dtype=np.int64)
    np.cumsum(per_entry[:-1], out=first[1:])
    out: dict[str, tuple[np.ndarray, np.ndarray, FastColumn]] = {}
    where = place.reshape(n, len(ltable.names))
    for slot, name in enumerate(ltable.names):
        entry = where[:, slot]
        present = entry >= 0
        mine = entry[present]  # this key's entries, in record order
        steps = np.zeros(n, dtype=np.int64)
        steps[present] = per_entry[mine]
        idx = _ranges(first[mine], per_entry[mine])  # their steps, in order
        kind = int(ltable.codes[slot])
        filled = code[idx] != 0  # steps that are not an empty Feature()
        if (code[idx][filled] != kind).any():
            return None  # a kind other than the spec's: the generic path words the error
        per_step, values = _gather_kind(buf, data, per_kind[kind], kind, local[idx[filled]])
        counts = np.zeros(len(idx), dtype=np.int64)
        counts[filled] = per_step
        out[name] = (present, steps, FastColumn(filled, counts, values))
    return SequenceColumns(ctx, out)


# --------------------------------------------------------------------------- equal-length layout


class _Layout(NamedTuple):
    """Where everything is in a record of a given length.

    ``struct``: positions of every byte that steers parsing (tags, lengths, keys);
    ``template``: their values; ``regions``: per key, its kind and the (start,
    length) of each value payload (every BytesList item, or the one packed chunk).
    """

    length: int
    struct: np.ndarray
    template: np.ndarray
    regions: dict[str, tuple[Optional[str], list[tuple[int, int]]]]


_Regions = dict[str, tuple[Optional[str], list[tuple[int, int]]]]


def _regions(record: bytes) -> _Regions:
    """Parse one record fully: per key, its kind and the (start, length) of each payload.

    A payload is a BytesList item or the one packed chunk of a number list; an
    empty ``Feature()`` has kind None. Raises :class:`_GiveUp` on anything this
    module leaves to the generic path (see the module docstring).
    """
    end = len(record)
    regions: _Regions = {}
    if end:
        if record[0] != 0x0A:
            raise _GiveUp
        flen, pos = _varint(record, 1, end)
        if pos + flen != end:
            raise _GiveUp
        while pos < end:
            if record[pos] != 0x0A:
                raise _GiveUp
            elen, pos = _varint(record, pos + 1, end)
            eend = pos + elen
            if eend > end or pos >= eend or record[pos] != 0x0A:
                raise _GiveUp
            klen, pos = _varint(record, pos + 1, eend)
            try:
                key = record[pos : pos + klen].decode("utf-8")
            except UnicodeDecodeError:
                raise _GiveUp from None
            pos += klen
            if pos >= eend or record[pos] != 0x12 or key in regions:
                raise _GiveUp
            vlen, pos = _varint(record, pos + 1, eend)
            if pos + vlen != eend:
                raise _GiveUp
            if vlen == 0:
                regions[key] = (None, [])
                continue
            kind = _TAG_KIND.get(record[pos])
            if kind is None:
                raise _GiveUp
            llen, pos = _varint(record, pos + 1, eend)
            lend = pos + llen
            if lend != eend:
                raise _GiveUp
            items: list[tuple[int, int]] = []
            while pos < lend:
                if record[pos] != 0x0A:
                    raise _GiveUp  # unpacked values, or another field
                ilen, pos = _varint(record, pos + 1, lend)
                if pos + ilen > lend:
                    raise _GiveUp
                items.append((pos, ilen))
                pos += ilen
            if kind != "bytes_list" and len(items) > 1:
                raise _GiveUp  # several packed chunks
            if kind == "float_list" and items and items[0][1] % 4:
                raise _GiveUp
            regions[key] = (kind, items)
    return regions


def _layout(record: bytes) -> _Layout:
    """Parse one record fully, recording which bytes are structure and which are values.

    Two records of the same length whose structural bytes are equal parse along
    exactly the same path (every decision is made from those bytes), so their
    values sit at the same offsets.
    """
    regions = _regions(record)
    is_value = np.zeros(len(record), dtype=bool)
    for _, items in regions.values():
        for pos, ilen in items:
            is_value[pos : pos + ilen] = True
    struct = np.flatnonzero(~is_value)
    template = np.frombuffer(record, dtype=np.uint8)[struct]
    return _Layout(len(record), struct, template, regions)


def _layout_columns(
    rows: np.ndarray, layout: _Layout, needed: Mapping[str, DType], widths: Mapping[int, int]
) -> Optional[dict[str, FastColumn]]:
    """Columns of ``rows`` (records of one layout, one per row of a 2-D uint8 array).

    ``widths``: for packed int64 lists (by start) whose varints have one width in
    every row (:func:`_uniform_width`), that width.
    """
    g = len(rows)
    cols: dict[str, FastColumn] = {}
    for name, dtype in needed.items():
        kind, items = layout.regions.get(name, (None, []))
        if kind is None:
            empty = np.zeros(0, dtype=object if dtype is string else dtype.np_dtype)
            cols[name] = FastColumn(np.zeros(g, bool), np.zeros(g, np.int64), empty)
            continue
        if _KIND_DTYPE[kind] is not dtype:
            raise _GiveUp  # a dtype mismatch: the generic path reports it exactly
        present = np.ones(g, dtype=bool)
        if kind == "bytes_list":
            per_item: list[list[Any]] = []
            for start, length in items:
                if length == 0:
                    per_item.append([b""] * g)
                else:
                    # Each row's bytes as one fixed-size item (a view: only the
                    # bytes objects are copies).
                    block = rows[:, start : start + length].view(np.dtype((np.void, length)))
                    per_item.append(block[:, 0].tolist())
            values = np.empty(g * len(items), dtype=object)
            for j, item_values in enumerate(per_item):
                values[j :: len(items)] = item_values
            cols[name] = FastColumn(present, np.full(g, len(items), np.int64), values)
            continue
        if not items:
            empty = np.zeros(0, dtype=dtype.np_dtype)
            cols[name] = FastColumn(present, np.zeros(g, np.int64), empty)
            continue
        start, length = items[0]
        block = np.ascontiguousarray(rows[:, start : start + length])
        if kind == "float_list":
            floats = block.view("<f4").astype(np.float32, copy=False).reshape(-1)
            cols[name] = FastColumn(present, np.full(g, length // 4, np.int64), floats)
        elif block.size == 0 or int(block.max()) < 0x80:
            ints = block.astype(np.int64).reshape(-1)  # every varint is one byte
            cols[name] = FastColumn(present, np.full(g, length, np.int64), ints)
        elif w := widths.get(start, 0):
            ints = _uniform_values(block, w)
            cols[name] = FastColumn(present, np.full(g, length // w, np.int64), ints)
        else:
            decoded = _decode_packed_varints(block.reshape(-1), np.full(g, length, np.int64))
            if decoded is None:
                return None
            cols[name] = FastColumn(present, decoded[1], decoded[0])
    return cols


def _layout_group(
    records: Sequence[bytes], group: np.ndarray, needed: Mapping[str, DType]
) -> Optional[tuple[np.ndarray, dict[str, FastColumn]]]:
    """Handle the records of ``group`` (equal lengths) that follow the first one's layout."""
    layout = _layout(records[int(group[0])])
    width = layout.length
    pieces: list[np.ndarray]
    if isinstance(records, RecordSpans):
        # Each block read on its own: a strided view of it where its records lie
        # evenly (no copy), not one array copied together from several blocks.
        chosen = records if len(group) == len(records) else records.take(group)
        pieces = [RecordSpans([part]).rows(width) for part in chosen.parts]
    else:
        picked = records if len(group) == len(records) else [records[i] for i in group.tolist()]
        pieces = [np.frombuffer(b"".join(picked), dtype=np.uint8).reshape(len(group), width)]
    oks: list[np.ndarray] = []
    found: list[dict[str, FastColumn]] = []
    for rows in pieces:
        fits = (rows[:, layout.struct] == layout.template).all(axis=1)
        widths = _packed_widths(rows, layout, fits)
        cols = _layout_columns(rows if fits.all() else rows[fits], layout, needed, widths)
        if cols is None:
            return None
        oks.append(fits)
        found.append(cols)
    fits = oks[0] if len(oks) == 1 else np.concatenate(oks)
    return group[fits], found[0] if len(found) == 1 else _joined(found, needed)


def _packed_widths(rows: np.ndarray, layout: _Layout, fits: np.ndarray) -> dict[int, int]:
    """The packed int64 lists of ``layout`` (by start) whose varints have one width in
    every row, with that width (:func:`_uniform_width`); clears in ``fits`` the rows
    where another list does not hold whole varints."""
    widths: dict[int, int] = {}
    for kind, items in layout.regions.values():
        if kind == "int64_list" and items and items[0][1]:
            start, length = items[0]
            block = np.ascontiguousarray(rows[:, start : start + length])
            widths[start] = _uniform_width(block)
            if not widths[start]:  # (else every list holds whole varints)
                fits &= _packed_varints_ok(block.reshape(-1), np.full(len(rows), length, np.int64))
    return widths


def _joined(
    found: Sequence[Mapping[str, FastColumn]], names: Iterable[str]
) -> dict[str, FastColumn]:
    """The columns of consecutive runs of records, as one."""
    return {
        name: FastColumn(
            np.concatenate([cols[name].present for cols in found]),
            np.concatenate([cols[name].counts for cols in found]),
            np.concatenate([cols[name].values for cols in found]),
        )
        for name in names
    }


def extract(
    records: Sequence[bytes], needed: Mapping[str, DType], table: Optional[KeyTable] = None
) -> Optional[tuple[np.ndarray, dict[str, FastColumn]]]:
    """Extract ``needed`` keys from every record the vectorized paths can read.

    Returns ``(handled, columns)``: ``handled`` is a bool mask over the records and
    each column covers the handled records, in order. ``None`` when nothing was
    handled (the caller then runs the generic path on everything). ``table``: the
    compiled :class:`KeyTable` of ``needed`` (a parse plan keeps one), else built here.
    """
    n = len(records)
    if n < MIN_BATCH or not enabled():
        return None
    if not _heap_settled:
        _settle_heap()
    if table is None:
        table = key_table(needed)
    lengths = _record_lengths(records)
    if int(lengths.sum()) <= WINDOW_BYTES:
        return _extract_window(records, lengths, needed, table)
    # Big records: walk the batch a window of records at a time, so the joined
    # buffer stays small (and is reused by the allocator, not faulted in afresh).
    cuts = _window_cuts(records, lengths)
    handled = np.zeros(n, dtype=bool)
    found: list[dict[str, FastColumn]] = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        part = _extract_window(records[a:b], lengths[a:b], needed, table)
        if part is not None:
            handled[a:b] = part[0]
            found.append(part[1])
    if not found:
        return None
    return handled, found[0] if len(found) == 1 else _joined(found, needed)


def _window_cuts(records: Sequence[bytes], lengths: np.ndarray) -> list[int]:
    """Where to cut a batch into windows of at most :data:`WINDOW_BYTES` of records
    (a bigger record is a window of its own): ``[0, ..., len(records)]``.

    Spans are cut only where one block read ends and the next begins, so a window
    of one block is read where it is.
    """
    n = len(records)
    ends = np.cumsum(lengths)
    at = records.part_ends() if isinstance(records, RecordSpans) else None
    cuts = [0]
    while cuts[-1] < n:
        base = int(ends[cuts[-1] - 1]) if cuts[-1] else 0
        cut = int(np.searchsorted(ends, base + WINDOW_BYTES, side="right"))
        if at is not None:
            snapped = int(at[np.searchsorted(at, cut, side="right") - 1])
            # (A block bigger than a window is a window of its own.)
            cut = snapped if snapped > cuts[-1] else int(at[np.searchsorted(at, cuts[-1], "right")])
        cuts.append(min(n, max(cut, cuts[-1] + 1)))
    return cuts


def _extract_window(
    records: Sequence[bytes], lengths: np.ndarray, needed: Mapping[str, DType], table: KeyTable
) -> Optional[tuple[np.ndarray, dict[str, FastColumn]]]:
    """:func:`extract` of one window of records."""
    n = len(records)
    handled = np.zeros(n, dtype=bool)
    parts: list[tuple[np.ndarray, dict[str, FastColumn]]] = []
    # 1. The records of each common length (varint widths vary, so there may be a
    #    few) that share its first record's layout: whole columns from a 2-D array.
    sizes, times = np.unique(lengths, return_counts=True)
    for k in np.argsort(-times, kind="stable")[:_LAYOUTS].tolist():
        if times[k] * 8 < n or not sizes[k]:
            break
        group = np.flatnonzero(lengths == sizes[k])
        try:
            found = _layout_group(records, group, needed)
        except _GiveUp:
            found = None
        if found is not None and len(found[0]):
            handled[found[0]] = True
            parts.append(found)
    # 2. The rest: the entry walk, whatever their layouts, over the rest joined.
    rest = np.flatnonzero(~handled)
    if len(rest) and table.usable:
        buf, starts, zero = _contiguous(
            records if len(rest) == n else _take(records, rest), lengths[rest]
        )
        data = np.frombuffer(buf, dtype=np.uint8)
        ends = starts + lengths[rest]
        if len(buf) < _INT32_BYTES:
            # positions: half the memory traffic
            starts, ends = starts.astype(np.int32), ends.astype(np.int32)
        ok, cols = _walk(buf, data, starts, ends, table, needed, zero)
        if ok.any():
            handled[rest[ok]] = True
            parts.append((rest[ok], cols))
    if not parts:
        return None
    if len(parts) == 1:
        return handled, parts[0][1]
    parts.sort(key=lambda part: int(part[0][0]))
    return handled, _merge(parts, handled, needed)


def _take(records: Sequence[bytes], idx: np.ndarray) -> Sequence[bytes]:
    if isinstance(records, RecordSpans):
        return records.take(idx)
    return [records[i] for i in idx.tolist()]


def _contiguous(records: Sequence[bytes], lengths: np.ndarray) -> tuple[Buffer, np.ndarray, int]:
    """One buffer holding every record and :data:`_PAD` bytes after the last one:
    (buffer, starts, index of a zero byte in it).

    Spans of several blocks are copied into a reused work array: the walk copies
    out everything it returns, and a window of big records then costs no fresh
    pages.
    """
    if isinstance(records, RecordSpans):
        return records.contiguous(_PAD)
    starts = np.zeros(len(records), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    buf = b"".join([*records, bytes(_PAD)])
    return buf, starts, len(buf) - 1


def merge_columns(n: int, parts: list[tuple[np.ndarray, FastColumn]], dtype: DType) -> FastColumn:
    """Interleave columns covering disjoint record subsets back into record order.

    ``parts`` pairs each column with the positions (among ``n``) of its records.
    """
    present = np.zeros(n, dtype=bool)
    counts = np.zeros(n, dtype=np.int64)
    for idx, col in parts:
        present[idx] = col.present
        counts[idx] = col.counts
    np_dtype = object if dtype is string else dtype.np_dtype
    spans = {(int(c.counts.min()), int(c.counts.max())) for _, c in parts if len(c.counts)}
    if len(spans) == 1 and sum(len(idx) for idx, _ in parts) == n:
        low, high = spans.pop()
        if low == high:
            # The same number of values in every record: place whole rows.
            rows = np.empty((n, low), dtype=np_dtype)
            for idx, col in parts:
                rows[idx] = col.values.reshape(len(idx), low)
            return FastColumn(present, counts, rows.reshape(-1))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    values = np.empty(int(offsets[-1]), dtype=np_dtype)
    for idx, col in parts:
        local = np.zeros(len(col.counts) + 1, dtype=np.int64)
        np.cumsum(col.counts, out=local[1:])
        dest = np.arange(len(col.values), dtype=np.int64) + np.repeat(
            offsets[idx] - local[:-1], col.counts
        )
        values[dest] = col.values
    return FastColumn(present, counts, values)


def _merge(
    parts: list[tuple[np.ndarray, dict[str, FastColumn]]],
    handled: np.ndarray,
    needed: Mapping[str, DType],
) -> dict[str, FastColumn]:
    """Put the columns of several templates back in record order."""
    if len(parts) == 1:
        return parts[0][1]
    pos_of = np.cumsum(handled) - 1  # record index -> position among handled records
    m = int(handled.sum())
    return {
        name: merge_columns(m, [(pos_of[idx], cols[name]) for idx, cols in parts], dtype)
        for name, dtype in needed.items()
    }
