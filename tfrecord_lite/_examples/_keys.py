"""The key table of the entry walk: feature keys found by a vectorized hash.

Each map entry's key bytes are hashed with one vectorized pass and looked up in
a :class:`KeyTable` (then compared byte for byte), which gives each entry its
key slot; a parse plan builds its table once (:func:`key_table`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from .._record import unaligned
from ._extracted import _CODE_OF_DTYPE, _PAD
from ._schema import DType
from ._vectors import _MASK

__all__ = ["KeyTable", "key_table"]

#: Multipliers of the key hash, one per 8-byte window (odd 64-bit constants).
_MULT = np.array(
    [(0x9E3779B97F4A7C15 * (2 * j + 1) + 0x632BE59BD9B4E019 * j) % 2**64 for j in range(64)],
    dtype=np.uint64,
) | np.uint64(1)


_LENGTH_MULT = np.uint64(0xD6E8FEB86659FD93)


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
