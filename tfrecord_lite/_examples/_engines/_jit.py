"""The ``jit`` engine's driver: the numba kernels of :mod:`._jit_kernels` and
:mod:`._jit_sequences` over a window of records (with the ``jit`` extra:
``pip install 'tfrecord-lite-np[jit]'``).

Per window, the driver makes a fixed number of NumPy calls and, per key, only
slices: the walk fills one row per record of (where, how many, packed?) for every
key, a tally kernel turns it into one row per key with each key's total, place and
summary (:func:`~._jit_columns.tally_columns`), one fill kernel writes every key's
values into one array per kind, and each key's column is a slice of it; every
bytes key's values are made ``bytes`` together (:func:`_all_bytes`). Between the
kernels, which release the GIL, the Python work per batch is what threads of one
process cannot do at once (taxi-like batches of 1024: about 0.4 ms of 1.6). A wide batch (a sparse schema: thousands of keys, each in a few records,
:func:`~._output.wide`) is walked into one entry per (record, key read)
instead (:func:`_jit_sparse`), so its memory follows the entries present, not
records x keys. Bytes values repeated in a column (categorical strings) are cut out once
(:func:`_bytes_values`). The kernels take no references (see
:mod:`._jit_kernels`) and release the GIL, so threads can parse chunks at once (a
dataset's ``num_parallel_calls``, the threads of ``arrow.read_table``).

Nothing compiles at ``import tfrecord_lite``: the kernels are compiled, or read from
numba's on-disk cache, the first time a batch needs them, in the background for
``auto`` (:mod:`._kernels` says how, and where the cache may be kept).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from ..._record import record_lengths
from .._feature_kinds import KIND_BYTES, KIND_FLOAT, KIND_INT64, KIND_OF_DTYPE
from .._schema import DType
from ._buffers import (
    _bytes_objects,
    _contiguous,
    _settle_heap,
    by_windows,
    sequences_by_windows,
)
from ._kernels import load as _load
from ._keyhash import LOAD, key_hash
from ._output import (
    AnyColumn,
    FastColumn,
    SequenceColumns,
    SparseColumn,
    _joined,
    grid_rows,
    wide,
)

__all__ = ["JitTable", "jit_extract", "jit_extract_sequences", "jit_table"]


class JitTable:
    """The keys a plan reads, as the kernels look them up: an open-addressing hash
    table (``slots``, at least :data:`~._keyhash.LOAD` per key, probed linearly) over
    the keys' bytes (``kbytes``, ``koff``) and kinds. The hash is the whole key's
    (:mod:`._keyhash`), so keys alike but for their middle bytes spread as any
    others; ``probes`` is the longest probe sequence of any key."""

    def __init__(self, needed: Mapping[str, DType]) -> None:
        self.names = list(needed)
        self.dtypes = [needed[k] for k in self.names]
        keys = [k.encode("utf-8") for k in self.names]
        size = 8
        while size < LOAD * len(keys) + 2:
            size *= 2
        slots = [-1] * size
        longest_probe = 0
        for k, key in enumerate(keys):
            if not key.isascii():
                continue  # never matches (the walk leaves such records to protobuf)
            s, step = key_hash(key) & (size - 1), 0
            while slots[s] >= 0:
                s, step = (s + 1) & (size - 1), step + 1
            slots[s] = k
            longest_probe = max(longest_probe, step)
        self.slots = np.array(slots, dtype=np.int32)
        #: The most slots any key's lookup visits.
        self.probes = longest_probe + 1
        self.koff = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum([len(k) for k in keys], out=self.koff[1:])
        self.kbytes = np.frombuffer(b"".join(keys) or b"\0", dtype=np.uint8).copy()
        self.kkind = np.array([KIND_OF_DTYPE[d.name] for d in self.dtypes], dtype=np.int8)
        #: Each key's kind, as Python ints; the bytes keys, in key order.
        self.kinds: list[int] = self.kkind.tolist()
        self.bytes_keys = [k for k, kind in enumerate(self.kinds) if kind == KIND_BYTES]


@functools.lru_cache(maxsize=64)
def _jit_table(keys: tuple[tuple[str, DType], ...]) -> JitTable:
    return JitTable(dict(keys))


def jit_table(needed: Mapping[str, DType]) -> JitTable:
    """The :class:`JitTable` of ``needed``, built once per set of keys and dtypes
    (parses that build their plan per call share it, as :func:`~._numpy_keys.key_table`)."""
    return _jit_table(tuple(needed.items()))


#: Bytes values of a key are made once per distinct value where at most this share
#: of them differ (categorical columns: company names, payment types).
DISTINCT_SHARE = 0.5
#: Only columns of values no longer than this are looked at for repeats.
INTERN_BYTES = 64


def _bytes_values(
    kern: Any, buf: Any, data: np.ndarray, start: np.ndarray, length: np.ndarray
) -> np.ndarray:
    """``buf[start[i]:start[i]+length[i]]`` for every i, as an object array of bytes;
    repeated values are cut out once (equal values share one ``bytes`` object)."""
    return _interned(kern, buf, data, start, length, np.array([0, len(start)], dtype=np.int64))


def _interned(
    kern: Any,
    buf: Any,
    data: np.ndarray,
    start: np.ndarray,
    length: np.ndarray,
    bounds: np.ndarray,
) -> np.ndarray:
    """:func:`_bytes_values` of several columns' values at once (column ``g`` 's:
    ``bounds[g]`` to ``bounds[g + 1]``), made by one call: in each column where at
    most :data:`DISTINCT_SHARE` of them differ, each distinct value once
    (:func:`~._jit_columns.intern_columns`)."""
    m = len(start)
    if m < 16:
        return _made(kern, buf, data, start, length)
    slots = np.empty(1 << (2 * m).bit_length(), dtype=np.int64)
    heads = np.empty(m, dtype=np.int64)
    which = np.empty(m, dtype=np.int64)
    made = kern.intern_columns(
        data, start, length, bounds, DISTINCT_SHARE, INTERN_BYTES, slots, heads, which
    )
    if made == m:
        return _made(kern, buf, data, start, length)
    first = heads[:made]
    return _made(kern, buf, data, start[first], length[first])[which]


#: Values of one length up to this long, this many or more, are copied out by a
#: kernel (without the GIL) and made ``bytes`` by one NumPy call.
GATHER_BYTES, GATHER_MIN = 64, 32


def _made(
    kern: Any, buf: Any, data: np.ndarray, start: np.ndarray, length: np.ndarray
) -> np.ndarray:
    """:func:`~._buffers._bytes_objects`, values of one length (ids, fixed-width codes)
    copied out by :func:`~._jit_columns.gather_bytes`."""
    if len(start) >= GATHER_MIN:
        size = int(length[0])
        if 0 < size <= GATHER_BYTES and not (length != size).any():
            block = np.empty((len(start), size), dtype=np.uint8)
            kern.gather_bytes(data, start, block)
            return block.view(np.dtype((np.void, size))).ravel().astype(object)
    return _bytes_objects(buf, data, start, length)


class _Values:
    """Every key's values of one batch, one array per kind, key after key
    (``offsets[k]``: where key ``k`` 's begin in its kind's array)."""

    def __init__(self, totals: np.ndarray, kkind: np.ndarray) -> None:
        self.totals = totals
        self.offsets = np.zeros(len(kkind), dtype=np.int64)
        sizes = [0, 0, 0, 0]
        for kind in (KIND_BYTES, KIND_FLOAT, KIND_INT64):
            mine = kkind == kind
            if mine.any():
                ends_of = np.cumsum(totals[mine])
                self.offsets[mine] = ends_of - totals[mine]
                sizes[kind] = int(ends_of[-1])
        self.ints = np.empty(sizes[KIND_INT64], dtype=np.int64)
        self.floats = np.empty(4 * sizes[KIND_FLOAT], dtype=np.uint8)
        self.bstart = np.empty(sizes[KIND_BYTES], dtype=np.int64)
        self.blength = np.empty(sizes[KIND_BYTES], dtype=np.int64)

    def outputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What the fill kernels write: ints, floats (bytes), bytes starts, lengths."""
        return self.ints, self.floats, self.bstart, self.blength

    def column(self, kern: Any, buf: Any, data: np.ndarray, k: int, kind: int) -> np.ndarray:
        """Key ``k`` 's values (``kind``: one of :mod:`~tfrecord_lite._examples._feature_kinds`)."""
        a = int(self.offsets[k])
        b = a + int(self.totals[k])
        if kind == KIND_INT64:
            return self.ints[a:b]
        if kind == KIND_FLOAT:
            return self.floats[4 * a : 4 * b].view("<f4").astype(np.float32, copy=False)
        return _bytes_values(kern, buf, data, self.bstart[a:b], self.blength[a:b])


def _joined_records(
    records: Sequence[bytes], lengths: Optional[np.ndarray] = None
) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """The records in one buffer: (buffer, its bytes read-only, starts, ends)."""
    if lengths is None:
        lengths = record_lengths(records)
    buf, starts, _ = _contiguous(records, lengths)
    data = np.frombuffer(buf, dtype=np.uint8)
    if data.flags.writeable:  # (the kernels take the bytes read-only)
        data = data.view()
        data.flags.writeable = False
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    return buf, data, starts, starts + lengths


def _key_arrays(n: int, nkeys: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per (record, key) -- one row per record, so a record's keys are written close
    together: where the list's bytes start and end, its number of values, its flag.
    Not zeroed: :func:`~._jit_kernels.walk_examples` zeroes each record's row itself,
    without the GIL (:func:`_zeroed_key_arrays` for the SequenceExample walk)."""
    start_end = np.empty((2, n, nkeys), dtype=np.int64)
    return (
        start_end[0],
        start_end[1],
        np.empty((n, nkeys), dtype=np.int64),
        np.empty((n, nkeys), dtype=np.int8),
    )


def _zeroed_key_arrays(n: int, nkeys: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_key_arrays` with the counts and flags zeroed."""
    return (
        np.empty((n, nkeys), dtype=np.int64),
        np.empty((n, nkeys), dtype=np.int64),
        np.zeros((n, nkeys), dtype=np.int64),
        np.zeros((n, nkeys), dtype=np.int8),
    )


def _entries(cap: int) -> list[np.ndarray]:
    """Room for ``cap`` entries of :func:`~._jit_kernels.walk_entries`."""
    return [np.empty(cap, dtype=np.int64) for _ in range(5)] + [np.empty(cap, dtype=np.int8)]


def _jit_sparse(
    kern: Any, records: Sequence[bytes], table: JitTable, lengths: np.ndarray
) -> Optional[tuple[np.ndarray, Mapping[str, AnyColumn]]]:
    """:func:`jit_extract` of a wide batch: one entry per (record, key read) instead of
    a records x keys grid, and :class:`~._output.SparseColumn` s."""
    buf, data, starts, ends = _joined_records(records, lengths)
    n = len(records)
    status = np.zeros(n, dtype=np.uint8)
    seen = np.full(len(table.names), -1, dtype=np.int64)
    state = np.zeros(2, dtype=np.int64)
    out = _entries(max(1024, len(data) // 32))
    while True:
        kern.walk_entries(
            data, starts, ends, table.slots, table.koff, table.kbytes, table.kkind,
            seen, status, state, *out,
        )  # fmt: skip
        if state[0] >= n:
            break
        more = _entries(2 * len(out[0]))  # full: twice the room, from where it stopped
        for bigger, full in zip(more, out):
            bigger[: len(full)] = full
        out = more
    handled = status == 0
    if not handled.any():
        return None
    erec, ekey, estart, eend, ecount, eflag = (a[: int(state[1])] for a in out)
    present = np.flatnonzero(eflag & 3)  # (not an empty Feature())
    order = present[np.argsort(ekey[present], kind="stable")]  # by key, then record
    keys = ekey[order]
    counts = ecount[order]
    bounds = np.searchsorted(keys, np.arange(len(table.names) + 1))
    summed = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(counts, out=summed[1:])
    vals = _Values(summed[bounds[1:]] - summed[bounds[:-1]], table.kkind)
    kern.fill_entries(
        data, order, ekey, table.kkind, vals.offsets.copy(), estart, eend, ecount, eflag,
        *vals.outputs(),
    )  # fmt: skip
    m = int(handled.sum())
    rows = (np.cumsum(handled) - 1)[erec[order]] if m < n else erec[order]
    cols: dict[str, SparseColumn] = {}
    for k, name in enumerate(table.names):
        a, b = int(bounds[k]), int(bounds[k + 1])
        values = vals.column(kern, buf, data, k, int(table.kkind[k]))
        cols[name] = SparseColumn(m, rows[a:b], counts[a:b], values)
    return handled, cols


def _example_kernels() -> Any:
    """The Example kernels the driver calls, as one namespace: the walks and fills
    (:mod:`._jit_kernels`) and the per-key bookkeeping (:mod:`._jit_columns`)."""
    return _kernel_namespace(_load(), _load("_jit_columns"))


@functools.cache
def _kernel_namespace(*modules: Any) -> Any:
    return types.SimpleNamespace(**{n: getattr(m, n) for m in modules for n in m.__all__})


def jit_extract(
    records: Sequence[bytes],
    table: JitTable,
    lengths: Optional[np.ndarray] = None,
    sparse: bool = False,
) -> Optional[tuple[np.ndarray, Mapping[str, AnyColumn]]]:
    """:func:`~._numpy.extract` by the compiled kernels: ``(handled, columns)``,
    or None when no record was handled (or the engine could not be loaded).
    ``sparse``: a wide batch (:func:`~._output.wide`) may come back as
    :class:`~._output.SparseColumn` s. Big records: a window of records at a time
    (:func:`~._buffers.by_windows`, as every engine)."""
    try:
        kern = _example_kernels()
    except Exception:
        return None
    _settle_heap()
    n = len(records)
    if lengths is None:
        lengths = record_lengths(records)
    if sparse and n and wide(n, len(table.names), int(lengths.sum())):
        return by_windows(
            records, lengths, lambda r, ln: _jit_sparse(kern, r, table, ln), table.names
        )
    return by_windows(records, lengths, lambda r, ln: _jit_dense(kern, r, table, ln), table.names)


def _jit_dense(
    kern: Any, records: Sequence[bytes], table: JitTable, lengths: np.ndarray
) -> Optional[tuple[np.ndarray, dict[str, FastColumn]]]:
    """:func:`jit_extract` into a records x keys grid, a run of records at a time."""
    n = len(records)
    nkeys = len(table.names)
    step = grid_rows(nkeys)
    if n > step:
        # A sparse schema (many keys, few per record): the grid a run of records at a time.
        handled = np.zeros(n, dtype=bool)
        found: list[dict[str, FastColumn]] = []
        for a in range(0, n, step):
            part = _jit_dense(kern, records[a : a + step], table, lengths[a : a + step])
            if part is not None:
                handled[a : a + step] = part[0]
                found.append(part[1])
        if not found:
            return None
        return handled, found[0] if len(found) == 1 else _joined(found, table.names)
    buf, data, starts, ends = _joined_records(records, lengths)
    status = np.zeros(n, dtype=np.uint8)
    seen = np.full(nkeys, -1, dtype=np.int64)
    order = np.full(2 * nkeys + 16, -1, dtype=np.int64)  # (the key order looked for first)
    fstart, fend, fcount, fflag = _key_arrays(n, nkeys)  # (zeroed by the walk)
    kern.walk_examples(
        data, starts, ends, table.slots, table.koff, table.kbytes, table.kkind,
        seen, order, status, fstart, fend, fcount, fflag,
    )  # fmt: skip
    handled = status == 0
    if handled.all():
        rows = np.arange(n, dtype=np.int64)
    else:
        rows = np.flatnonzero(handled).astype(np.int64)
        if not len(rows):
            return None
    # One row per key (which records have it, their counts), each key's total,
    # place and summary: one kernel, not NumPy calls per key and kind.
    m = len(rows)
    present_of = np.empty((nkeys, m), dtype=bool)
    counts_of = np.empty((nkeys, m), dtype=np.int64)
    stats = np.empty((nkeys, 5), dtype=np.int64)
    sizes = np.zeros(4, dtype=np.int64)
    kern.tally_columns(rows, table.kkind, fcount, fflag, present_of, counts_of, stats, sizes)
    nbytes, nfloats, nints = sizes.tolist()[KIND_BYTES:]
    ints = np.empty(nints, dtype=np.int64)
    floats = np.empty(nfloats, dtype="<f4")
    bstart = np.empty(nbytes, dtype=np.int64)
    blength = np.empty(nbytes, dtype=np.int64)
    kern.fill_values(
        data, rows, table.kkind, stats[:, 1].copy(), fstart, fend, fcount, fflag,
        ints, floats.view(np.uint8), bstart, blength,
    )  # fmt: skip
    each = stats.tolist()
    by_kind: dict[int, np.ndarray] = {
        KIND_INT64: ints,
        KIND_FLOAT: floats if floats.dtype.isnative else floats.astype(np.float32),
        KIND_BYTES: _all_bytes(kern, buf, data, bstart, blength, table, each),
    }
    cols = {}
    for k, name in enumerate(table.names):
        total, at, present, fewest, most = each[k]
        values = by_kind[table.kinds[k]][at : at + total]
        cols[name] = FastColumn(present_of[k], counts_of[k], values, (present, fewest, most))
    return handled, cols


def _all_bytes(
    kern: Any,
    buf: Any,
    data: np.ndarray,
    bstart: np.ndarray,
    blength: np.ndarray,
    table: JitTable,
    each: list[list[int]],
) -> np.ndarray:
    """Every bytes key's values of a batch (key after key, as ``bstart``,
    ``blength``; ``each[k][1]``: where key ``k`` 's begin), as one object array of
    ``bytes`` made by one call (:func:`_interned`)."""
    bounds = np.array([each[k][1] for k in table.bytes_keys] + [len(bstart)], dtype=np.int64)
    return _interned(kern, buf, data, bstart, blength, bounds)


def jit_extract_sequences(
    records: Sequence[bytes], ctable: JitTable, ltable: JitTable
) -> Optional[SequenceColumns]:
    """:func:`~._numpy.extract_sequences` by the compiled kernels: the context and
    feature-list columns, or None when any record needs the reference path."""
    try:
        kern = _example_kernels()
        seq = _load("_jit_sequences")
    except Exception:
        return None
    _settle_heap()
    return sequences_by_windows(
        records,
        record_lengths(records),
        lambda r, ln: _jit_sequence_window(kern, seq, r, ln, ctable, ltable),
        ctable.names,
        ltable.names,
    )


def _jit_sequence_window(
    kern: Any,
    seq: Any,
    records: Sequence[bytes],
    lengths: np.ndarray,
    ctable: JitTable,
    ltable: JitTable,
) -> Optional[SequenceColumns]:
    """:func:`jit_extract_sequences` of one window of records."""
    n = len(records)
    buf, data, starts, ends = _joined_records(records, lengths)
    nc, nl = len(ctable.names), len(ltable.names)
    cstart, cend, ccount, cflag = _zeroed_key_arrays(n, nc)
    lstart, lend, lcount, lflag = _zeroed_key_arrays(n, nl)
    lsteps = np.zeros((n, nl), dtype=np.int64)
    ok = seq.walk_sequences(
        data, starts, ends,
        ctable.slots, ctable.koff, ctable.kbytes, ctable.kkind, np.full(nc, -1, dtype=np.int64),
        cstart, cend, ccount, cflag,
        ltable.slots, ltable.koff, ltable.kbytes, ltable.kkind, np.full(nl, -1, dtype=np.int64),
        lstart, lend, lsteps, lcount, lflag,
    )  # fmt: skip
    if not ok:
        return None
    rows = np.arange(n, dtype=np.int64)
    cvals = _Values(ccount.sum(axis=0), ctable.kkind)
    kern.fill_values(
        data, rows, ctable.kkind, cvals.offsets.copy(), cstart, cend, ccount, cflag,
        *cvals.outputs(),
    )  # fmt: skip
    context = {
        name: FastColumn(
            cflag[:, k] != 0, ccount[:, k], cvals.column(kern, buf, data, k, int(ctable.kkind[k]))
        )
        for k, name in enumerate(ctable.names)
    }
    # The steps of every list key, key after key; their values as the context's.
    steps = lsteps.sum(axis=0)
    soffsets = np.zeros(nl, dtype=np.int64)
    np.cumsum(steps[:-1], out=soffsets[1:])
    filled = np.empty(int(steps.sum()), dtype=np.uint8)
    scount = np.empty(len(filled), dtype=np.int64)
    lvals = _Values(lcount.sum(axis=0), ltable.kkind)
    seq.fill_steps(
        data, ltable.kkind, soffsets.copy(), lvals.offsets.copy(), lstart, lend, lsteps,
        filled, scount, *lvals.outputs(),
    )  # fmt: skip
    lists = {}
    for k, name in enumerate(ltable.names):
        a, b = int(soffsets[k]), int(soffsets[k] + steps[k])
        values = lvals.column(kern, buf, data, k, int(ltable.kkind[k]))
        column = FastColumn(filled[a:b].view(bool), scount[a:b], values)
        lists[name] = (lflag[:, k] != 0, lsteps[:, k].copy(), column)
    return SequenceColumns(context, lists)
