"""The feature-key hash: one definition for the NumPy engine and the compiled one.

A key of ``n`` bytes is read as ``max(1, ceil(n / 8))`` little-endian 8-byte
windows: window ``j`` is bytes ``8j .. 8j+8``, except that the last one is the
key's last 8 bytes (it may overlap the one before); a key under 8 bytes is one
window of its bytes, zero-filled. The hash starts from the length and folds in
every window with a step that, for a given window, is a bijection of the running
value (xor, multiply by an odd constant, xor-shift), so two keys of one length
that differ in any window never have the same 64-bit hash; a final mix spreads
every bit into the low ones, which pick a bucket. Keys that share their length
and their first and last 8 bytes (``sensor_00001_reading``, ...) therefore spread
over the table like any others.

:func:`key_hashes` computes it for many keys at once (NumPy), :func:`key_hash`
for one (the tables are built with it); ``_jit_kernels.key_hash`` is the same
formula compiled, with these constants (the compiled kernels are cached by their
own file's date, so a change here must come with a change of that file;
``tests/examples/test_key_hash.py`` checks that all three agree).
"""

from __future__ import annotations

from typing import Final

import numpy as np

__all__ = ["FINAL", "SEED", "STEP", "hash_parts", "key_hash", "key_hashes"]

#: A key table has at least this many buckets per key (linear probing stays short).
LOAD = 4
#: Multiplied by ``length + 1`` to start the hash.
SEED: Final = 0x9E3779B97F4A7C15
#: Multiplier of each window's step.
STEP: Final = 0xBF58476D1CE4E5B9
#: Multiplier of the final mix.
FINAL: Final = 0x94D049BB133111EB
_M64: Final = (1 << 64) - 1

_SEED, _STEP, _FINAL = np.uint64(SEED), np.uint64(STEP), np.uint64(FINAL)
_S29, _S32 = np.uint64(29), np.uint64(32)
#: ``_MASKS[k]``: the low ``k`` bytes of a word.
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)


def key_hash(key: bytes) -> int:
    """The hash of one key (an int in ``[0, 2**64)``)."""
    n = len(key)
    h = ((n + 1) * SEED) & _M64
    if n < 8:
        windows = [int.from_bytes(key, "little")]
    else:
        windows = [
            int.from_bytes(key[min(8 * j, n - 8) :][:8], "little") for j in range(-(-n // 8))
        ]
    for w in windows:
        h = ((h ^ w) * STEP) & _M64
        h ^= h >> 32
    h ^= h >> 29
    h = (h * FINAL) & _M64
    return h ^ (h >> 32)


def key_hashes(words: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The hash of every key ``start[i] .. start[i]+length[i]`` of a buffer read as
    overlapping little-endian words (``words[p]``: the 8 bytes from ``p``; the
    buffer is padded so that a word may start at any key byte), as uint64."""
    return hash_parts(words, start, length)[0]


def hash_parts(
    words: np.ndarray, start: np.ndarray, length: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`key_hashes`, and each key's first and last windows (masked under 8
    bytes, where the two are one), which the lookup compares too.

    A key's last window is the ``last`` already gathered for the lookup, so only the
    windows between its first and last (keys over 16 bytes) are gathered here: reads
    of the unaligned word view cost most of the hash."""
    length = length.astype(np.int64, copy=False)
    h = (length + 1).astype(np.uint64)
    h *= _SEED
    first = words[start]
    if int(length.min(initial=8)) < 8:
        first &= _MASKS[np.minimum(length, 8)]
    h ^= first
    h *= _STEP
    h ^= h >> _S32
    longest = int(length.max(initial=0))
    if longest <= 8:
        return _final(h), first, first
    last = words[start + np.maximum(length - 8, 0)]
    short = length <= 8
    any_short = bool(short.any())
    if any_short:
        np.copyto(last, first, where=short)
    if longest > 16:
        # The middle windows (bytes 8j .. 8j+8 while a window follows), in order.
        mid = np.flatnonzero(length > 16)
        hm, sm, nm = h[mid], start[mid], length[mid]
        j = 1
        while len(mid):
            x = words[sm + 8 * j]
            x ^= hm
            x *= _STEP
            x ^= x >> _S32
            hm = x
            j += 1
            more = nm > 8 * j + 8
            if not more.all():
                h[mid] = hm
                mid, hm, sm, nm = mid[more], hm[more], sm[more], nm[more]
    # The last window of every key over 8 bytes.
    over = np.flatnonzero(~short) if any_short else slice(None)
    x = last[over] ^ h[over]
    x *= _STEP
    x ^= x >> _S32
    h[over] = x
    return _final(h), first, last


def _final(h: np.ndarray) -> np.ndarray:
    """The final mix (in place)."""
    h ^= h >> _S29
    h *= _FINAL
    h ^= h >> _S32
    return h
