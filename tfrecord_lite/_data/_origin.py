"""Where a pipeline's failing record came from: its file, its index in that file and
its byte offset, found only when an error is raised.

Nothing is tagged on the way: each file stream of an epoch registers the lists (or
:class:`~tfrecord_lite._record.RecordSpans`) of records it hands out in a small
side table (:class:`_Chunks`, one entry per block read: its file, the index of its
first record and the stride between records), holding the last few blocks. An op
that fails on an element (a record, or a batch of records and the index the error
gives inside it) asks :func:`relocated` for the error with the place filled in:

* a record handed out as the very ``bytes`` object of a list (the records of
  ``shuffle``, ``interleave``, ``take`` ... travel as they were read) is found by
  identity in the table;
* a record of spans (``parse(f).batch(n)`` cut from the blocks read) is found by
  its buffer and start;
* a record no longer in the table (it waited long in a shuffle buffer) is looked
  for by its bytes in the files the table names, read again;
* the byte offset is found by reading the file again up to that record.

Elements that are not records any more (the dicts ``parse`` makes, what ``map``
makes of them, the lists ``batch`` gathers) are placed by the records they were made
from: each op that makes one hands it out in a one-element slot, :data:`_LAST`,
``(element, records)`` (``parse``: the record or batch of records it parsed; ``map``:
the records of its input; ``batch``: those of the batch's first element). An op that
fails on an element finds it there by identity (nothing else was handed out between
the two in a chain of generators; after a shuffle buffer or a prefetch thread the
element is usually not the slot's, and then no place is given rather than a wrong
one): :func:`relocated` places a :class:`~tfrecord_lite.TFRecordError` so, and
:func:`noted` adds the place to any other error as a note (``KeyError`` from a
``map`` function, ``ValueError`` from a ``batch`` of shapes that cannot be stacked).

The cost on the fast path is one table entry per block read and one slot write per
element made; the error path reads files again.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any, Callable, Optional

import numpy as np

from .._errors import TFRecordError
from .._files import fs, read_batches, reader_compression
from .._record import RECORD_OVERHEAD, RecordSpans
from ._op import _close
from ._state import _Level, up_state

#: A record's place: its file (path or URL), its index in that file, its byte offset.
Place = tuple[str, int, Optional[int]]

#: An entry of the table: the records handed out, their file, the file index of the
#: first one, the stride between consecutive ones (sharding takes every n-th).
_Entry = tuple[Sequence[bytes], str, int, int]


class _Chunks:
    """The last blocks of records one epoch's file streams handed out (see the module)."""

    __slots__ = ("__weakref__", "compression", "entries")

    def __init__(self, compression: str, keep: int) -> None:
        self.compression = compression
        self.entries: deque[_Entry] = deque(maxlen=keep)


#: Every table of an epoch still reading in this process (an interleave's datasets
#: have their own sources and tables; an op after it searches them all).
_LIVE: weakref.WeakSet[_Chunks] = weakref.WeakSet()

#: The last tables made, kept after their files are read: a parser takes a group of
#: batches before parsing it, so the files may be read to the end before the error.
_RECENT: deque[_Chunks] = deque(maxlen=2)


def chunk_table(compression: str, keep: int) -> _Chunks:
    """A new table for one epoch of a source, holding its last ``keep`` blocks."""
    table = _Chunks(compression, keep)
    _LIVE.add(table)
    _RECENT.append(table)
    return table


def registered(
    lists: Iterator[Sequence[bytes]], table: _Chunks, path: str, first: int, step: int
) -> Iterator[Sequence[bytes]]:
    """``lists`` (records ``first, first + step, ...`` of the file ``path``), each
    entered in ``table`` as it is handed out; closing it closes ``lists``."""
    entries = table.entries
    try:
        for lst in lists:
            entries.append((lst, path, first, step))
            first += len(lst) * step
            yield lst
    finally:
        _close(lists)


#: The last element an op made, with the records it was made from: ``(element,
#: records)`` (see the module). One slot for the process, written and read whole.
_LAST: list[Optional[tuple[Any, Any]]] = [None]

#: The types of elements entered in :data:`_LAST`: made anew for each element (a
#: number, a string or ``None`` may be one shared object, met again elsewhere).
FRESH: frozenset[type] = frozenset({dict, tuple, list, np.ndarray})


def handed(element: Any, records: Any) -> None:
    """Enter ``element``, made from ``records`` (a record, or a list or spans of them),
    in the slot :func:`made_from` reads."""
    _LAST[0] = (element, records)


def made_from(element: Any) -> Any:
    """The records ``element`` was made from, when it is the last element an op made
    (see the module), else None."""
    last = _LAST[0]
    return last[1] if last is not None and last[0] is element else None


def release(element: Any) -> None:
    """Empty the slot if it holds ``element`` (an op that ends lets go of its last one)."""
    last = _LAST[0]
    if last is not None and last[0] is element:
        _LAST[0] = None


def _place_of(item: Any, j: Optional[int]) -> Optional[Place]:
    """The place of record ``j`` of ``item`` (a batch of records), or of ``item``
    (a record, ``j`` None): None when it cannot be told."""
    if not isinstance(item, (bytes, RecordSpans, list)):
        return None
    if not isinstance(item, bytes) and (j is None or not 0 <= j < len(item)):
        return None
    try:
        return _find(item, None if isinstance(item, bytes) else j)
    except Exception:  # the error path must never hide the error it reports
        return None


def _first_place(element: Any) -> Optional[Place]:
    """The place of the (first) record ``element`` was made from, if known."""
    records = made_from(element)
    if records is None:
        return None
    return _place_of(records, 0)


def relocated(err: TFRecordError, item: Any, index: Optional[int] = None) -> TFRecordError:
    """``err`` with the place of the record it is about, when that record is found.

    ``item`` is the element the op failed on: a record (``bytes``), or a batch of
    records with ``index`` (default: the error's own ``index``) the failing one's
    position in it, or an element made from records (see :func:`made_from`: the place
    is that of its first record). ``err`` is returned unchanged when it already names
    a file or the record cannot be told.
    """
    if err.path is not None:
        return err
    place = _place_of(item, err.index if index is None else index)
    if place is None:
        place = _first_place(item)
    if place is None:
        return err
    path, idx, offset = place
    new = type(err).__new__(type(err))
    new.__dict__.update(err.__dict__)
    TFRecordError.__init__(new, err.message + _HINT, path=path, offset=offset, index=idx)
    return new


#: What to do, said after what went wrong in a pipeline.
_HINT = "; to skip the elements that fail, add .ignore_errors() to the pipeline"


def failing(err: TFRecordError, item: Any) -> TFRecordError:
    """:func:`relocated`, with the traceback of ``err`` (to raise ``from None``)."""
    return relocated(err, item).with_traceback(err.__traceback__)


def noted(err: BaseException, element: Any) -> None:
    """Add to ``err`` (raised by an op on ``element``, not a TFRecordError) a note
    naming the file, index and byte offset of the record ``element`` was made from
    (its first, for an element made from several), when that is known. The note is
    shown under the traceback (``__notes__``, PEP 678)."""
    records = made_from(element)
    place = _first_place(element)
    if place is None:
        return
    path, idx, offset = place
    where = f"file {path!r}, record {idx}" + ("" if offset is None else f", byte offset {offset}")
    if not isinstance(records, bytes):
        where += " (its first record)"
    if isinstance(element, list):  # the elements of a batch, being stacked
        note = f"the batch that failed starts with the element made from {where}{_HINT}"
    else:
        note = f"the element that failed was made from {where}{_HINT}"
    add_note = getattr(err, "add_note", None)
    if add_note is not None:
        add_note(note)
    else:  # Python < 3.11: the attribute alone
        err.__notes__ = [*getattr(err, "__notes__", ()), note]


def located_stream(
    make: Callable[[Iterator[Any]], Iterator[Any]],
    items: Iterator[Any],
    first: Optional[Callable[[Any], None]] = None,
    levels: Optional[tuple[_Level, _Level, str]] = None,
) -> Iterator[Any]:
    """``make(items)``, an op that answers each input with one output in order
    (a parser), with its errors placed by :func:`relocated`: the input it failed on
    is the first one not yet answered. ``first`` (optional) looks at the first
    input. Closing it closes ``items``.

    With ``levels`` (its level, the level below, its kind) it publishes its state:
    the inputs taken and not yet answered are rolled back below, or saved."""
    pending: list[Any] = []  # the inputs taken and not yet answered (at most a group)
    done = 0
    if levels is not None:
        lv, below, kind = levels

        def state(behind: int) -> Optional[dict[str, Any]]:
            held = pending[done:]
            if behind:
                up = below.state(behind + len(held))
                return None if up is None else {"kind": kind, "up": up}
            return {"kind": kind, **up_state(below, held)}

        lv.get = state

    def feed() -> Iterator[Any]:
        # ``items`` is closed below, after an error is placed: its files are still
        # open (their blocks still in the table) when ``make`` has given up.
        if first is not None:
            for x in items:
                first(x)
                pending.append(x)
                yield x
                break
        for x in items:
            pending.append(x)
            yield x

    out = make(feed())
    last = _LAST
    y = None
    try:
        for y in out:
            last[0] = (y, pending[done])  # (see handed)
            done += 1
            if done == len(pending):
                pending.clear()
                done = 0
            yield y
    except TFRecordError as err:
        if done < len(pending):
            raise failing(err, pending[done]) from None
        raise
    finally:
        release(y)
        _close(out)
        _close(items)


def _find(item: Any, j: Optional[int]) -> Optional[Place]:
    tables = [t for t in list(_LIVE) if t.entries]
    if isinstance(item, RecordSpans):
        assert j is not None
        buf, start = _span_of(item, j)
        record: bytes = item[j]
        for table in tables:
            for chunk, path, first, step in list(table.entries):
                k = _span_position(chunk, buf, start)
                if k is not None:
                    return _placed(table, path, first + k * step)
    else:
        record = item if j is None else item[j]
        for table in tables:
            for chunk, path, first, step in list(table.entries):
                if isinstance(chunk, list):
                    for k, x in enumerate(chunk):
                        if x is record:
                            return _placed(table, path, first + k * step)
    if not isinstance(record, bytes):
        return None
    # Not in the table any more (or copied out of spans): read the files again.
    for table in tables:
        for path in dict.fromkeys(path for _, path, _, _ in list(table.entries)):
            found = _walk(path, table.compression, record=record)
            if found is not None:
                return (path, found[0], found[1])
    return None


def _span_of(spans: RecordSpans, j: int) -> tuple[bytes, int]:
    """The buffer and start of record ``j`` of ``spans``."""
    ends = spans.part_ends()
    p = int(np.searchsorted(ends, j, side="right")) - 1
    buf, starts, _ = spans.parts[p]
    return buf, int(starts[j - int(ends[p])])


def _span_position(chunk: Sequence[bytes], buf: bytes, start: int) -> Optional[int]:
    """The position in ``chunk`` (spans) of the record at ``start`` of ``buf``, if there."""
    if not isinstance(chunk, RecordSpans):
        return None
    base = 0
    for b, starts, _ in chunk.parts:
        if b is buf:
            k = int(np.searchsorted(starts, start))
            if k < len(starts) and int(starts[k]) == start:
                return base + k
        base += len(starts)
    return None


def _placed(table: _Chunks, path: str, index: int) -> Place:
    found = _walk(path, table.compression, index=index)
    return (path, index, found[1] if found is not None else None)


def _walk(
    path: str, compression: str, *, index: Optional[int] = None, record: Optional[bytes] = None
) -> Optional[tuple[int, int]]:
    """Read ``path`` again up to record ``index`` (or the first record equal to
    ``record``): its ``(index, byte offset)``, or None (not there, or unreadable)."""
    at = offset = 0
    lists = read_batches(
        fs.bind(path, None), reader_compression(compression), False, 1 << 20, "raise", None, None
    )
    try:
        for lst in lists:
            if index is not None and at + len(lst) <= index:
                at += len(lst)
                offset += sum(map(len, lst)) + RECORD_OVERHEAD * len(lst)
                continue
            for x in lst:
                if at == index or (record is not None and x == record):
                    return at, offset
                at += 1
                offset += len(x) + RECORD_OVERHEAD
    except TFRecordError:
        return None
    finally:
        _close(lists)
    return None
