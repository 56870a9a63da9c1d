"""The key table of the entry walk: feature keys found by vectorized lookups.

Each map entry's key is given its key slot by a :class:`KeyTable`: guessed from the
walk's step (records that share a key order), or looked up by its length and last
byte, or hashed whole (:mod:`._keyhash`, the compiled engine's hash too), and in
every case compared byte for byte; a parse plan builds its table once
(:func:`key_table`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Optional

import numpy as np

from ..._record import unaligned
from .._feature_kinds import KIND_OF_DTYPE
from .._schema import DType
from ._buffers import _PAD
from ._keyhash import LOAD, hash_parts, key_hashes
from ._numpy_vectors import _MASK

__all__ = ["KeyTable", "key_table"]

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


def _first_last(
    words: np.ndarray, start: np.ndarray, length: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each key's first and last 8-byte windows (equal, and masked, under 8 bytes)."""
    mask = _MASK[np.minimum(length, 8)]  # all ones from 8 bytes on
    w0 = words[start] & mask
    wl = words[start + np.maximum(length - 8, 0)] & mask
    return w0, wl


#: Up to this many keys, every bucket function (shift) is tried; above, every 8th.
SHIFT_SEARCH_KEYS = 2048
#: A lookup of fewer keys than this hashes them all (no guess from the walk's steps).
GUESS_MIN_KEYS = 256
#: The guess is tried when, of every this many th key, most have their guess's length.
GUESS_SAMPLE = 16
#: Keys up to this long have a (length, last byte) signature row (longer ones are hashed).
SIGNATURE_LONGEST = 255
#: A signature no key read has, and one several keys share (those keys are hashed).
_NO_KEY, _SEVERAL = -2, -1


class KeyTable:
    """The feature keys one parse reads, compiled once for vectorized lookups.

    ``names``/``dtypes``: the keys in order (a key's *slot* is its position). A key
    in a record is first looked up by its *signature*, its length and last byte
    (``signature``): most keys read have one of their own, so a key of that
    signature is compared with that key alone, and a key of a signature no key read
    has is not read. A key of a signature several keys share is hashed whole
    (:func:`~._keyhash.key_hashes`, the hash the compiled engine uses too) into an
    open-addressing table of at least :data:`LOAD` buckets per key, probed linearly.
    Every candidate slot is compared window by window (which compares every byte).
    ``probes``: the longest probe sequence any key needs, which bounds a lookup's
    passes (one NumPy pass per probe over the keys still unresolved; a key in no
    bucket on the way is not read).
    """

    def __init__(self, needed: Mapping[str, DType]) -> None:
        self.names = list(needed)
        self.dtypes = [needed[k] for k in self.names]
        self.codes = np.array([KIND_OF_DTYPE[d.name] for d in self.dtypes], dtype=np.int8)
        encoded = [k.encode("utf-8") for k in self.names]
        n = len(encoded)
        lengths = np.array([len(k) for k in encoded], dtype=np.int64)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(encoded) + bytes(_PAD), dtype=np.uint8)
        words = unaligned(data, "<u8")
        self.windows = max(1, -(-int(lengths.max(initial=0)) // 8))
        #: Keys longer than this are not read (no lookup needed).
        self.longest = int(lengths.max(initial=-1))
        key_words = np.zeros((n, self.windows), dtype=np.uint64)
        for j in range(self.windows):
            key_words[:, j] = _key_words(words, offsets[:-1], lengths, j)
        first, last = _first_last(words, offsets[:-1], lengths)
        # What the lookup compares a candidate slot with: per slot, the key's length,
        # first and last windows and every window; row n is a sentinel that no key
        # matches (length -1), where empty buckets point.
        self.lengths = np.append(lengths, -1)
        self.first = np.append(first, np.uint64(0))
        self.last = np.append(last, np.uint64(0))
        self.words = np.vstack([key_words, np.zeros((1, self.windows), dtype=np.uint64)])
        # The key of each (length, last byte) signature: a key of a signature only one key
        # read has can only be that key (or none) and is compared with it, not hashed; a
        # signature no key has is no key read. (Every key of length 0 is the empty key.)
        rows = min(self.longest, SIGNATURE_LONGEST) + 1
        signature = np.full((max(rows, 1), 256), _NO_KEY, dtype=np.int64)
        for slot, key in enumerate(encoded):
            if not key:
                signature[0, :] = slot
            elif len(key) < rows:
                cell = (len(key), key[-1])
                signature[cell] = slot if signature[cell] == _NO_KEY else _SEVERAL
        #: Row ``length * 256 + last byte``: the slot, or ``_NO_KEY`` / ``_SEVERAL``.
        self.signature = signature.reshape(-1)
        size = 8
        while size < LOAD * n:
            size *= 2
        self.mask = np.uint64(size - 1)
        hashes = key_hashes(words, offsets[:-1], lengths).tolist()
        # Each probe is a pass over the keys still unresolved: of the few bucket
        # functions tried (the hash's bits from ``shift`` on), the one whose longest
        # probe is shortest (a few keys in one cluster cost a pass each).
        best: Optional[tuple[int, int, list[int]]] = None
        shifts = range(0, 64 - size.bit_length() + 1, 1 if n <= SHIFT_SEARCH_KEYS else 8)
        for shift in shifts:
            buckets = [n] * size
            longest_probe = 0
            for k, h in enumerate(hashes):
                b, step = (h >> shift) & (size - 1), 0
                while buckets[b] != n:
                    b, step = (b + 1) & (size - 1), step + 1
                buckets[b] = k
                longest_probe = max(longest_probe, step)
            if best is None or longest_probe < best[0]:
                best = (longest_probe, shift, buckets)
            if longest_probe == 0:
                break
        assert best is not None
        self.shift = np.uint64(best[1])
        self.buckets = np.array(best[2], dtype=np.intp)
        #: The most buckets any key's lookup visits (1: every key in its own bucket).
        self.probes = best[0] + 1
        #: Whether the vectorized walk can use the table (always, since every key has one).
        self.usable = True

    def _same(
        self,
        words: np.ndarray,
        start: np.ndarray,
        length: np.ndarray,
        c: np.ndarray,
        w0: np.ndarray,
        wl: np.ndarray,
    ) -> np.ndarray:
        """Whether key ``i`` (at ``start[i]``, ``length[i]`` bytes, first and last
        windows ``w0[i]``, ``wl[i]``) is slot ``c[i]`` 's."""
        hit: np.ndarray = self.lengths[c] == length
        hit &= self.first[c] == w0
        hit &= self.last[c] == wl
        if self.windows > 2:
            # Keys over 16 bytes: compare the windows between the first and last.
            long_ = np.flatnonzero(hit & (length > 16))
            for j in range(1, self.windows - 1):
                mid = long_[length[long_] > 8 * (j + 1)]
                same = _key_words(words, start[mid], length[mid], j) == self.words[c[mid], j]
                hit[mid[~same]] = False
        return hit

    def _confirm(
        self,
        words: np.ndarray,
        start: np.ndarray,
        length: np.ndarray,
        cand: np.ndarray,
        slots: np.ndarray,
        where: np.ndarray,
    ) -> None:
        """Set ``slots[where[i]]`` to ``cand[i]`` where key ``i`` (at ``start[i]``,
        ``length[i]`` bytes) is that slot's key, every byte compared."""
        w0, wl = _first_last(words, start, length)
        hit = self._same(words, start, length, cand, w0, wl)
        slots[where[hit]] = cand[hit]

    def lookup(
        self,
        data: np.ndarray,
        start: np.ndarray,
        length: np.ndarray,
        steps: Optional[np.ndarray] = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Slots of the keys ``data[start:start+length]`` (-1: not a key read).

        Also returns, per key, whether it is safe to leave unread: a key that
        matches no slot must be valid UTF-8 (protobuf checks string keys); this
        accepts ASCII only and lets the caller send other records the generic way.

        ``steps``: where runs of keys that are likely one key begin (with the end
        last), as the entry walk gives them: its step ``k`` holds the ``k``-th key of
        every record, the same key wherever records are written in one key order.
        Each run's first key is looked up, and the run's keys of that length are
        compared with it; only the others are hashed. The slots are the hash
        lookup's either way (a guess is taken only where every byte matches).
        """
        m = len(length)
        safe = np.ones(m, dtype=bool)
        slots = np.full(m, -1, dtype=np.int64)
        words = unaligned(data, "<u8")
        if m and self.names:
            todo: Optional[np.ndarray] = None
            if steps is not None and m >= GUESS_MIN_KEYS and len(steps) <= m // 8:
                todo = self._guess(data, words, start, length, steps, slots)
            self._probe(data, words, start, length, slots, todo)
        unknown = np.flatnonzero(slots < 0)
        if len(unknown):
            # Unread keys must be ASCII here: check every window of theirs.
            us, ul = start[unknown], length[unknown]
            high = np.zeros(len(unknown), dtype=bool)
            for j in range(max(1, -(-int(ul.max()) // 8))):
                high |= (_key_words(words, us, ul, j) & _HIGH_BITS) != 0
            safe[unknown[high]] = False
        return slots, safe

    def _guess(
        self,
        data: np.ndarray,
        words: np.ndarray,
        start: np.ndarray,
        length: np.ndarray,
        steps: np.ndarray,
        slots: np.ndarray,
    ) -> Optional[np.ndarray]:
        """Set ``slots`` where a key is its run's first key (``steps``: as
        :meth:`lookup`); return the keys left to hash (None: all, as the guess was
        not tried: in a sample of every :data:`GUESS_SAMPLE` th key, fewer than half
        have the length of their run's first key, as where key order varies)."""
        firsts = steps[:-1]
        first_slots = np.full(len(firsts), -1, dtype=np.int64)
        self._probe(data, words, start[firsts], length[firsts], first_slots, None)
        sample = np.arange(0, len(length), GUESS_SAMPLE)
        run = np.searchsorted(steps, sample, side="right") - 1
        if 2 * int(np.count_nonzero(self.lengths[first_slots[run]] == length[sample])) < len(
            sample
        ):
            return None
        guess = np.repeat(first_slots, np.diff(steps))
        # (-1 reads the sentinel row, whose length -1 matches no key)
        cand = np.flatnonzero(self.lengths[guess] == length)
        if len(cand):
            self._confirm(words, start[cand], length[cand], guess[cand], slots, cand)
        return np.flatnonzero(slots < 0)

    def _probe(
        self,
        data: np.ndarray,
        words: np.ndarray,
        start: np.ndarray,
        length: np.ndarray,
        slots: np.ndarray,
        todo: Optional[np.ndarray],
    ) -> None:
        """Set ``slots`` of keys ``todo`` (all when None): by their signature (the
        table's ``signature``), else by their hash."""
        if todo is None:
            if int(length.max(initial=0)) <= self.longest:
                todo, ts, tl = np.arange(len(length)), start, length
            else:
                todo = np.flatnonzero(length <= self.longest)
                ts, tl = start[todo], length[todo]
        else:
            todo = todo[length[todo] <= self.longest]  # (longer keys are not read)
            ts, tl = start[todo], length[todo]
        if not len(todo):
            return
        rows = len(self.signature) // 256
        cell = tl * 256 + data.take(ts + np.maximum(tl, 1) - 1)
        if self.longest < rows:
            c = self.signature.take(cell)
        else:
            beyond = tl >= rows  # (no row: hashed)
            c = self.signature.take(np.where(beyond, 0, cell))
            c[beyond] = _SEVERAL
        one = np.flatnonzero(c >= 0)
        if len(one) == len(c):  # (every key of a signature of its own: no copies)
            self._confirm(words, ts, tl, c, slots, todo)
            return
        if len(one):
            self._confirm(words, ts[one], tl[one], c[one], slots, todo[one])
        several = np.flatnonzero(c == _SEVERAL)
        if not len(several):
            return
        todo, ts, tl = todo[several], ts[several], tl[several]
        hashes, w0, wl = hash_parts(words, ts, tl)
        h = ((hashes >> self.shift) & self.mask).view(np.int64)
        for step in range(self.probes):
            c = self.buckets[(h + step) & int(self.mask) if step else h]
            hit = self._same(words, ts, tl, c, w0, wl)
            slots[todo[hit]] = c[hit]
            more = ~hit & (c != len(self.names))  # (an empty bucket ends the probe)
            if not more.any():
                break
            todo, ts, tl, h = todo[more], ts[more], tl[more], h[more]
            w0, wl = w0[more], wl[more]


@functools.lru_cache(maxsize=64)
def _key_table(keys: tuple[tuple[str, DType], ...]) -> KeyTable:
    return KeyTable(dict(keys))


def key_table(needed: Mapping[str, DType]) -> KeyTable:
    """The :class:`KeyTable` of ``needed``, compiled once per set of keys and dtypes
    (parses that build their plan per call share it)."""
    return _key_table(tuple(needed.items()))
