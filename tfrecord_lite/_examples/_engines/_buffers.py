"""A chunk's buffer, as every engine takes it: the records joined into one buffer
(with :data:`_PAD` zero bytes after them), cut into windows of at most
:data:`WINDOW_BYTES`, their lengths, bytes values cut out of it as ``bytes`` objects,
and the heap settled once per process before the first batch.

Shared by the engines (:mod:`._numpy`, :mod:`._jit`) and their dispatcher
(:mod:`._dispatch`); no engine imports another's private pieces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Optional

import numpy as np

from ..._record import Buffer, RecordSpans
from ._output import AnyColumn, SequenceColumns, joined_runs, joined_sequences

__all__ = ["WINDOW_BYTES", "by_windows", "sequences_by_windows"]


#: Bytes of records joined into one buffer at most (a batch of bigger records is
#: extracted a window of records at a time; a single bigger record on its own).
WINDOW_BYTES = 16 << 20


#: Joined buffers under this size are walked with int32 positions (else int64).
_INT32_BYTES = 1 << 31


#: Zero bytes after the records: lets varint reads run past a record's end safely.
_PAD = 16


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
    and one munmap. Other allocators are not affected. The compiled engine's grids
    and joined records are such blocks too (taxi-like records, jit: 27,000 page
    faults in 160 batches before, 350 after, and page faults of threads of one
    process wait on each other), so it settles the heap as well.
    """
    global _heap_settled
    if _heap_settled:
        return
    _heap_settled = True
    if HEAP_SETTLE_BYTES > 0:
        block = np.empty(HEAP_SETTLE_BYTES, dtype=np.uint8)
        del block


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


#: What an engine gives for one window of Example records: (handled, columns), or
#: None when it handled none.
Found = Optional[tuple[np.ndarray, Mapping[str, AnyColumn]]]


def by_windows(
    records: Sequence[bytes],
    lengths: np.ndarray,
    one: Callable[[Sequence[bytes], np.ndarray], Found],
    names: Iterable[str],
) -> Found:
    """An Example batch through an engine (``one``: records and their lengths ->
    ``(handled, columns)`` or None) a window of at most :data:`WINDOW_BYTES` of
    records at a time (:func:`_window_cuts`), so the joined buffer stays small and is
    reused by the allocator, not faulted in afresh; the windows' columns joined (keys
    ``names``). None when no record was handled."""
    n = len(records)
    if int(lengths.sum()) <= WINDOW_BYTES:  # (the common case: one window, no cuts)
        part = one(records, lengths)
        return part if part is not None and part[0].any() else None
    cuts = _window_cuts(records, lengths)
    handled = np.zeros(n, dtype=bool)
    found: list[tuple[int, Mapping[str, AnyColumn]]] = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        part = one(records[a:b], lengths[a:b])
        if part is not None and part[0].any():
            handled[a:b] = part[0]
            found.append((int(part[0].sum()), part[1]))
    if not found:
        return None
    return handled, found[0][1] if len(found) == 1 else joined_runs(found, names)


def sequences_by_windows(
    records: Sequence[bytes],
    lengths: np.ndarray,
    one: Callable[[Sequence[bytes], np.ndarray], Optional[SequenceColumns]],
    context: Iterable[str],
    lists: Iterable[str],
) -> Optional[SequenceColumns]:
    """:func:`by_windows` for SequenceExamples: None as soon as a window has a record
    the engine leaves to the reference (the batch goes there whole)."""
    if int(lengths.sum()) <= WINDOW_BYTES:
        return one(records, lengths)
    cuts = _window_cuts(records, lengths)
    parts = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        part = one(records[a:b], lengths[a:b])
        if part is None:
            return None
        parts.append(part)
    return joined_sequences(parts, context, lists)


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


#: BytesList items up to this long are cut out a whole length at a time
#: (:func:`_bytes_objects`) when they have at most :data:`_SHORT_LENGTHS` distinct
#: lengths, or one per :data:`_ITEMS_PER_LENGTH` items (a length's gather costs
#: about as much as that many items cut one by one).
_SHORT_BYTES = 64


_SHORT_LENGTHS = 8


_ITEMS_PER_LENGTH = 128


#: Up to this many items are cut one by one (a column's distinct values, a small
#: batch): grouping them by length costs more than it saves.
_FEW_ITEMS = 32


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
    if top <= _SHORT_BYTES and n > _FEW_ITEMS:
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
                part = block.view(np.dtype((np.void, size))).ravel().astype(object)  # (bytes)
                if len(distinct) == 1:
                    return part
                out[idx] = part
            return out
    ends = start + length
    if isinstance(buf, bytes):
        out[:] = [buf[s:e] for s, e in zip(start.tolist(), ends.tolist())]
    else:  # a work array: copies
        view = memoryview(buf)
        out[:] = [view[s:e].tobytes() for s, e in zip(start.tolist(), ends.tolist())]
    return out
