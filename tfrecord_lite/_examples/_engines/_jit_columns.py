"""The compiled engine's per-key bookkeeping: numba kernels over the walk's grid and
the bytes values it found (:mod:`._jit_kernels` walks and fills).

:func:`tally_columns` turns the walk's one row per record into one row per key (its
present records, value counts, where its values begin and a summary that lets the
assembly skip its checks); :func:`gather_bytes` copies values of one length out of the
buffer; :func:`intern_columns` finds the repeated bytes values of several columns, so
each distinct value is made once. Compiled like the walk (``nogil=True``,
``cache=True``, no reference counting), and loaded by :mod:`._kernels` beside it.
"""

from __future__ import annotations

import numba
import numpy as np

from ._jit_kernels import (
    _B_2D,
    _BUF,
    _I8,
    _I8_2D,
    _I64,
    _I64_2D,
    _OPTIONS,
    PACKED,
    UNPACKED,
    _jit,
    _t,
    key_hash,
)

__all__ = ["gather_bytes", "intern_columns", "tally_columns"]


@numba.njit(_t.void(_I64, _I8, _I64_2D, _I8_2D, _B_2D, _I64_2D, _I64_2D, _I64), **_OPTIONS)
def tally_columns(
    rows: np.ndarray,
    kkind: np.ndarray,
    fcount: np.ndarray,
    fflag: np.ndarray,
    present_of: np.ndarray,
    counts_of: np.ndarray,
    stats: np.ndarray,
    sizes: np.ndarray,
) -> None:
    """Records ``rows`` of the walk's grid (one row per record) as one row per key
    ``k``: ``present_of[k, j]`` (record ``rows[j]`` has a list set), ``counts_of[k, j]``
    (its values); ``stats[k]``: its values, where they begin in their kind's output
    (each key's after the previous one's), the records with a list set, their fewest
    values and the most of any record. ``sizes[kind]`` (zeroed): the kind's values."""
    nkeys = len(kkind)
    for k in range(nkeys):  # (key by key: each key's row is written in order)
        total, present, fewest, most = 0, 0, 0, 0
        for j in range(len(rows)):
            i = rows[j]
            c = fcount[i, k]
            counts_of[k, j] = c
            total += c
            most = max(most, c)
            here = (fflag[i, k] & (UNPACKED | PACKED)) != 0
            present_of[k, j] = here
            if here:
                fewest = c if present == 0 else min(fewest, c)
                present += 1
        stats[k, 0], stats[k, 2], stats[k, 3], stats[k, 4] = total, present, fewest, most
    for k in range(nkeys):
        stats[k, 1] = sizes[kkind[k]]
        sizes[kkind[k]] += stats[k, 0]


@numba.njit(_t.void(_BUF, _I64, _t.Array(_t.uint8, 2, "C")), **_OPTIONS)
def gather_bytes(buf: np.ndarray, start: np.ndarray, out: np.ndarray) -> None:
    """``out[o] = buf[start[o]:start[o]+w]``, values of one length ``w`` (``out``'s rows)."""
    w = out.shape[1]
    for o in range(len(start)):
        for j in range(w):
            out[o, j] = buf[start[o] + j]


@_jit
def _same(buf: np.ndarray, p: int, q: int, n: int) -> bool:
    """Whether ``buf[p:p+n]`` and ``buf[q:q+n]`` are the same bytes."""
    j = 0
    while j < n and buf[p + j] == buf[q + j]:
        j += 1
    return j == n


@numba.njit(_t.int64(_BUF, _I64, _I64, _I64, _t.float64, _t.int64, _I64, _I64, _I64), **_OPTIONS)
def intern_columns(
    buf: np.ndarray,
    start: np.ndarray,
    length: np.ndarray,
    bounds: np.ndarray,
    share: float,
    longest: int,
    slots: np.ndarray,
    heads: np.ndarray,
    which: np.ndarray,
) -> int:
    """Bytes values ``buf[start[o]:start[o]+length[o]]`` of several columns (column
    ``g`` 's: ``bounds[g]`` to ``bounds[g + 1]``), each mapped to one of the values
    to make, ``heads[:made]`` (``made`` returned): ``which[o]``. In a column of 16
    values or more, none longer than ``longest``, where at most ``share`` of them
    differ (compared byte for byte), equal values share a head; elsewhere each
    value is its own, as where they are alike at both ends (too many probes).
    ``slots``: a hash table, a power of two above twice any column's values."""
    made = 0
    for g in range(len(bounds) - 1):
        a, b = bounds[g], bounds[g + 1]
        m, first, mask, probes = b - a, made, np.int64(1), 0
        while mask <= 2 * m:
            mask *= 2
        mask -= 1
        fails = m < 16
        for o in range(a, b):
            fails = fails or length[o] > longest
        for o in range(0 if fails else mask + 1):
            slots[o] = -1
        for o in range(a, b):
            if fails:
                break
            p, n = start[o], length[o]
            s = np.int64(key_hash(buf, p, n) & np.uint64(mask))
            while True:
                probes += 1
                r = slots[s]
                if probes > 4 * m:
                    fails = True
                    break
                if r < 0:
                    slots[s], which[o], heads[made] = o, made, o
                    made += 1
                    break
                if length[r] == n and _same(buf, start[r], p, n):
                    which[o] = which[r]
                    break
                s = (s + 1) & mask
            fails = fails or made - first > share * m
        if fails:
            made = first  # (every value its own)
            for q in range(a, b):
                which[q], heads[made] = made, q
                made += 1
    return made
