"""The entry walk of wide batches: columns by the records that have each key.

A sparse schema (thousands of keys, each in a few records) makes the
(record, key slot) table of :func:`~._numpy_entries._walk` mostly empty: records x keys
cells for a few entries each. This walk reads the entries as that one does
(:mod:`._numpy_entries`'s steps, the same checks, the same records left to the generic
path), then sorts the entries read by key slot and record instead of placing
them in a table, and gives each key a :class:`~._output.SparseColumn`: its
memory follows the entries present, not records x keys.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..._record import Buffer
from .._feature_kinds import KIND_OF_TAG
from .._schema import DType
from ._numpy_entries import (
    _gather_kind,
    _key_value,
    _length_field,
    _reject,
    _values_by_kind,
    _walk_examples,
    _walk_features,
)
from ._numpy_keys import KeyTable
from ._output import SparseColumn

__all__ = ["walk_wide"]


def walk_wide(
    buf: Buffer,
    data: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    table: KeyTable,
    needed: Mapping[str, DType],
    zero: int,
) -> tuple[np.ndarray, dict[str, SparseColumn]]:
    """:func:`~._numpy_entries._walk` of records ``starts..ends``: (handled mask, one
    :class:`~._output.SparseColumn` per key, over the handled records)."""
    ok = np.ones(len(starts), dtype=bool)
    fs, fe = _walk_examples(data, starts, ends, ok)
    owner, es, ee, steps = _walk_features(data, fs, fe, ok)
    ks, ke, vs, good = _key_value(data, es, ee)
    # The Feature: empty (no kind), or exactly one list field spanning it.
    nonempty = vs < ee
    code = np.where(nonempty, KIND_OF_TAG.take(data.take(vs)), 0).astype(np.int8)
    lpos = np.where(nonempty, vs + 1, zero)  # (an empty Feature's length: a zero byte)
    ls, le, fits = _length_field(data, lpos, ee)
    good &= ~nonempty | ((code > 0) & fits & (le == ee))
    _reject(ok, owner, good)
    slots, safe = table.lookup(data, ks, np.where(good, ke - ks, 0), steps)
    _reject(ok, owner, safe)
    known = np.flatnonzero(slots >= 0)
    # The entries read, by key slot, then record (then place in the record).
    known = known[np.lexsort((owner[known], slots[known]))]
    kslot, kowner, kcode = slots[known], owner[known], code[known]
    twice = (kslot[1:] == kslot[:-1]) & (kowner[1:] == kowner[:-1])  # merged messages
    if twice.any():
        ok[kowner[1:][twice]] = False
    # A kind other than the spec's: the generic path words the error.
    wrong = (kcode != 0) & (kcode != table.codes[kslot])
    if wrong.any():
        ok[kowner[wrong]] = False
    if not good.all():
        le = np.where(good & nonempty, le, ls)
    per_kind, local, good_items = _values_by_kind(data, code, ls, le)
    _reject(ok, owner, good_items)
    # Entries of handled records that give the key a kind (an empty Feature(): absent).
    keep = ok[kowner] & (kcode != 0)
    entry, kslot, kowner = known[keep], kslot[keep], kowner[keep]
    rows = kowner if ok.all() else (np.cumsum(ok) - 1)[kowner]
    bounds = np.searchsorted(kslot, np.arange(len(table.names) + 1))
    m = int(ok.sum())
    cols: dict[str, SparseColumn] = {}
    for slot, name in enumerate(table.names):
        a, b = int(bounds[slot]), int(bounds[slot + 1])
        kind = int(table.codes[slot])
        found, values = _gather_kind(buf, data, per_kind[kind], kind, local[entry[a:b]])
        cols[name] = SparseColumn(m, rows[a:b], found, values)
    return ok, cols
