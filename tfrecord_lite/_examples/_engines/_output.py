"""What every engine gives: the columns of a batch.

:class:`FastColumn` (one feature key's values over a batch of records),
:class:`SparseColumn` (the same, by the records that have the key: wide batches),
:class:`SequenceColumns` (a SequenceExample batch's), putting columns of record
subsets back in record order (:func:`merge_columns`) and joining those of
consecutive runs of records, how many records one grid of keys may hold, and the
switch (``TFRECORD_LITE_FASTPATH``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple, Optional, Union

import numpy as np

from ... import _settings
from .._schema import DType, string

__all__ = ["FastColumn", "SequenceColumns", "SparseColumn", "enabled", "merge_columns", "wide"]


#: Below this many records the generic path is as fast.
MIN_BATCH = 8


def enabled() -> bool:
    """Whether the vectorized path is on: the ``fastpath`` setting
    (``TFRECORD_LITE_FASTPATH`` or ``tfr.options(fastpath=...)``, default on), read at
    each call."""
    return _settings.fastpath()


class FastColumn(NamedTuple):
    """Everything parsing needs of one feature key over a batch of records.

    ``present[i]``: record ``i`` has the key with a kind set (a key mapped to an
    empty ``Feature()`` counts as absent, as in TensorFlow); ``counts[i]``: its
    number of values (0 when absent); ``values``: all records' values, concatenated.
    Both extractors produce it: this module's, and the generic one in ``_parse``
    (which calls it ``Column``). ``summary``, where the engine counted it (the
    compiled one): (records with the key, the fewest values of one of them, the
    most values of any record), so the assembly can skip its checks of a column
    where every record has the values its spec asks for; None elsewhere.
    """

    present: np.ndarray
    counts: np.ndarray
    values: np.ndarray
    summary: Optional[tuple[int, int, int]] = None


class SparseColumn(NamedTuple):
    """A :class:`FastColumn` of a wide batch (many keys, each in few records), by the
    records that have the key: memory follows what is present, not records x keys.

    ``n``: the records of the batch; ``rows``: the (increasing) records where the key
    is present; ``counts[j]``: the number of values of record ``rows[j]``;
    ``values``: as a :class:`FastColumn` 's. The engines give it where the caller
    takes it (:func:`wide`); :meth:`dense` is the :class:`FastColumn`.
    """

    n: int
    rows: np.ndarray
    counts: np.ndarray
    values: np.ndarray

    def dense(self) -> FastColumn:
        """The same column, one entry per record."""
        present = np.zeros(self.n, dtype=bool)
        present[self.rows] = True
        counts = np.zeros(self.n, dtype=np.int64)
        counts[self.rows] = self.counts
        return FastColumn(present, counts, self.values)


#: Either layout of a key's column.
AnyColumn = Union[FastColumn, SparseColumn]


def dense(col: AnyColumn) -> FastColumn:
    """``col`` as a :class:`FastColumn`."""
    return col.dense() if isinstance(col, SparseColumn) else col


#: A batch of more (record, key) cells than this and than its bytes is wide.
SPARSE_MIN_CELLS = 1 << 16


def wide(n: int, nkeys: int, nbytes: int) -> bool:
    """Whether a batch of ``n`` records, ``nbytes`` bytes, read for ``nkeys`` keys
    is extracted as :class:`SparseColumn` s: where its records x keys are many more
    than its entries can be (each takes bytes), a grid would be mostly empty."""
    cells = n * nkeys
    return cells > SPARSE_MIN_CELLS and cells > nbytes


def joined_sparse(
    found: Sequence[tuple[int, Mapping[str, SparseColumn]]], names: Iterable[str]
) -> dict[str, SparseColumn]:
    """The sparse columns of consecutive runs of records (``(records, columns)``
    each), as one."""
    bases = np.cumsum([0] + [m for m, _ in found])
    total = int(bases[-1])
    return {
        name: SparseColumn(
            total,
            np.concatenate([cols[name].rows + int(b) for b, (_, cols) in zip(bases, found)]),
            np.concatenate([cols[name].counts for _, cols in found]),
            np.concatenate([cols[name].values for _, cols in found]),
        )
        for name in names
    }


def merge_sparse(n: int, parts: list[tuple[np.ndarray, FastColumn | SparseColumn]]) -> SparseColumn:
    """:func:`merge_columns` into a :class:`SparseColumn`: ``parts`` pairs each column
    (of either layout) with the positions (among ``n``) of its records."""
    rows, counts, values = [], [], []
    for idx, col in parts:
        if isinstance(col, FastColumn):
            have = np.flatnonzero(col.present)
            col = SparseColumn(len(idx), have, col.counts[have], col.values)
        rows.append(idx[col.rows])
        counts.append(col.counts)
        values.append(col.values)
    at = np.concatenate(rows)
    each = np.concatenate(counts)
    order = np.argsort(at, kind="stable")
    # each value goes with its record: order the values by their records' places
    value_rows = np.repeat(at, each)
    moved = np.argsort(value_rows, kind="stable")
    return SparseColumn(n, at[order], each[order], np.concatenate(values)[moved])


#: The most (record, key) cells an engine's per-batch grid may hold: a batch of more
#: records x keys (sparse schemas: thousands of keys, each in a few records) is
#: extracted a run of records at a time (the compiled grid: 25 bytes a cell, the
#: NumPy walk's 8), and read a batch of fewer records at a time.
GRID_CELLS = 1 << 23


def grid_rows(nkeys: int) -> int:
    """The most records one grid of ``nkeys`` keys may hold (:data:`GRID_CELLS`)."""
    return max(1, GRID_CELLS // max(1, nkeys))


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


class SequenceColumns(NamedTuple):
    """What :func:`extract_sequences` found.

    ``context``: a column per context key; ``present`` means the record has the key
    (as TensorFlow's SequenceExample parser counts it: an empty ``Feature`` too).
    ``lists``: per feature-list key, (has the key, steps per record, a column over
    every step of every record, record-major).
    """

    context: dict[str, FastColumn]
    lists: dict[str, tuple[np.ndarray, np.ndarray, FastColumn]]


def joined_runs(
    found: Sequence[tuple[int, Mapping[str, AnyColumn]]], names: Iterable[str]
) -> dict[str, AnyColumn]:
    """The columns of consecutive runs of records (``(records handled, columns)``
    each, columns of one layout), as one."""
    if isinstance(next(iter(found[0][1].values()), None), SparseColumn):
        sparse = [
            (m, {k: c for k, c in cols.items() if isinstance(c, SparseColumn)}) for m, cols in found
        ]
        return dict(joined_sparse(sparse, names))
    return dict(_joined([{k: dense(c) for k, c in cols.items()} for _, cols in found], names))


def joined_sequences(
    parts: Sequence[SequenceColumns], context: Iterable[str], lists: Iterable[str]
) -> SequenceColumns:
    """The :class:`SequenceColumns` of consecutive runs of records, as one."""
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
