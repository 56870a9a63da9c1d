"""The ``numpy`` engine: Example and SequenceExample features of a batch of records,
vectorized.

Two extractors, both NumPy over the concatenated bytes of the records of a
window, both exact: a record they cannot read with certainty is left to the
protobuf reference, so results and errors are always the reference's. A batch of
more than :data:`~._buffers.WINDOW_BYTES` (big records) is extracted a window of
records at a time (:func:`~._buffers.by_windows`, as every engine).

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

from collections.abc import Mapping, Sequence
from typing import Optional

import numpy as np

from ..._record import record_lengths
from .._schema import DType
from ._buffers import (
    _INT32_BYTES,
    _contiguous,
    _settle_heap,
    _take,
    by_windows,
    sequences_by_windows,
)
from ._numpy_entries import _walk
from ._numpy_keys import KeyTable, key_table
from ._numpy_layout import _GiveUp, _layout_group
from ._numpy_sequences import _sequence_window
from ._numpy_wide import walk_wide
from ._output import (
    MIN_BATCH,
    AnyColumn,
    FastColumn,
    SequenceColumns,
    _joined,
    enabled,
    grid_rows,
    merge_columns,
    wide,
)

__all__ = ["extract", "extract_sequences"]

#: Record lengths whose layouts the equal-layout path tries, most common first.
_LAYOUTS = 4


def extract(
    records: Sequence[bytes],
    needed: Mapping[str, DType],
    table: Optional[KeyTable] = None,
    lengths: Optional[np.ndarray] = None,
    sparse: bool = False,
) -> Optional[tuple[np.ndarray, Mapping[str, AnyColumn]]]:
    """Extract ``needed`` keys from every record the vectorized paths can read.

    Returns ``(handled, columns)``: ``handled`` is a bool mask over the records and
    each column covers the handled records, in order. ``None`` when nothing was
    handled (the caller then runs the generic path on everything). ``table``: the
    compiled :class:`KeyTable` of ``needed`` (a parse plan keeps one), else built here;
    ``lengths``: the records' lengths, where the caller has them; ``sparse``: a wide
    batch (:func:`~._output.wide`) may come back as
    :class:`~._output.SparseColumn` s (:func:`_extract_sparse`). Big records: a window
    of records at a time (:func:`~._buffers.by_windows`).
    """
    n = len(records)
    if n < MIN_BATCH or not enabled():
        return None
    _settle_heap()
    keys = table if table is not None else key_table(needed)
    if lengths is None:
        lengths = record_lengths(records)
    if sparse and wide(n, len(needed), int(lengths.sum())):
        if not keys.usable:
            return None
        return by_windows(
            records, lengths, lambda r, ln: _extract_sparse(r, ln, needed, keys), needed
        )
    return by_windows(records, lengths, lambda r, ln: _extract_runs(r, ln, needed, keys), needed)


def _extract_runs(
    records: Sequence[bytes], lengths: np.ndarray, needed: Mapping[str, DType], table: KeyTable
) -> Optional[tuple[np.ndarray, Mapping[str, AnyColumn]]]:
    """:func:`extract` of one window: many keys, a run of records at a time, so the
    (record, key) grid stays small (:func:`~._output.grid_rows`)."""
    n = len(records)
    rows = grid_rows(len(needed))
    if n <= rows:
        return _extract_window(records, lengths, needed, table)
    handled = np.zeros(n, dtype=bool)
    found: list[dict[str, FastColumn]] = []
    for a in range(0, n, rows):
        part = _extract_window(records[a : a + rows], lengths[a : a + rows], needed, table)
        if part is not None:
            handled[a : a + rows] = part[0]
            found.append(part[1])
    if not found:
        return None
    return handled, found[0] if len(found) == 1 else _joined(found, needed)


def _extract_sparse(
    records: Sequence[bytes], lengths: np.ndarray, needed: Mapping[str, DType], table: KeyTable
) -> Optional[tuple[np.ndarray, Mapping[str, AnyColumn]]]:
    """:func:`extract` of one window of a wide batch: the entry walk only (a layout
    group's columns would be records x keys), one :class:`~._output.SparseColumn` per
    key."""
    buf, starts, zero = _contiguous(records, lengths)
    data = np.frombuffer(buf, dtype=np.uint8)
    ends = starts + lengths
    if len(buf) < _INT32_BYTES:
        starts, ends = starts.astype(np.int32), ends.astype(np.int32)
    ok, cols = walk_wide(buf, data, starts, ends, table, needed, zero)
    return ok, cols


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
    lists' entries, then the steps (``Feature`` s) of every list at once; big
    records a window at a time (:func:`~._buffers.sequences_by_windows`).
    """
    n = len(records)
    if n < MIN_BATCH or not enabled():
        return None
    ctable, ltable = tables if tables is not None else (key_table(context), key_table(lists))
    if not (ctable.usable and ltable.usable):
        return None
    lengths = record_lengths(records)
    _settle_heap()
    return sequences_by_windows(
        records,
        lengths,
        lambda r, ln: _sequence_window(r, ln, context, lists, ctable, ltable),
        context,
        lists,
    )


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
