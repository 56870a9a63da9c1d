"""Where an epoch of TFRecord files is, and reading them again from there.

Files read one after the other: the state is a cursor, the file being read (its
place in the epoch's file order, its path, size and modification time) and the
next record in it (its index, and the byte offset of a record at or before it
whose offset is known). A plain local file is read again from that offset (a
seek); a GZIP/ZLIB file with its binary index (:func:`~tfrecord_lite.create_index`)
is inflated from the seek point before that record; a compressed file without
one, a URL, or a file read while skipping damaged records is read from its start,
its first records passed over.

Each list of records a file hands out is noted (:data:`_Mark`); the consumer of
the lists tells how many records of the last one were taken, and the cursor is
found from the note, rolled back through the last few notes when the stage above
holds records it took (see ._state).

Files interleaved (``num_parallel_reads``, ``interleave(cycle_length)``): the
interleave hands out lists merged from its open files; the state is where each
open file was when the current list started (a cursor each), the next file to
open, and how many records of the list were taken: on resuming the files open at
their cursors and those records are read again (at most one list: see
:class:`Watch`).
"""

from __future__ import annotations

import hashlib
import os
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any, Callable, Optional

import numpy as np

from .._errors import TFRecordError
from .._record import RecordSpans
from ._state import bad, check_kind, field_int

#: A list of records handed out: ``(out, entry, raw, at, first, offset, step)``:
#: ``out[c]`` is ``raw[at + c * step]``, record ``first + at + c * step`` of the
#: epoch's file ``entry``; ``raw[0]`` is record ``first``, at byte ``offset`` (None:
#: not known). Files read through their index: ``raw`` is None, ``at`` 0.
_Mark = tuple[Sequence[bytes], int, Optional[Sequence[bytes]], int, int, Optional[int], int]

#: Kind of the files' stage in a state.
KIND = "files"

#: Lists kept to roll the cursor back through (records a stage above read ahead):
#: at most this many, and no older ones than needed to hold :data:`_BACK` records
#: (a parser reads ahead at most 16,384 records). Further back, the stage above
#: saves the records it holds instead.
_HISTORY = 8
_BACK = 20_000


def _trim(history: deque[Any], size: Callable[[Any], int]) -> None:
    """Drop the oldest lists of ``history`` not needed to hold :data:`_BACK` records."""
    while len(history) > 1 and sum(size(h) for h in list(history)[1:]) >= _BACK:
        history.popleft()


def order_digest(paths: Sequence[str]) -> str:
    """A digest of the epoch's files in reading order (the state checks it)."""
    return hashlib.sha256("\n".join(paths).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def bytes_before(raw: Sequence[bytes], p: int) -> int:
    """The bytes of ``raw[:p]`` with their framing (16 bytes a record)."""
    if isinstance(raw, RecordSpans):
        data = raw.nbytes if p == len(raw) else int(np.asarray(raw.lengths())[:p].sum())
    else:
        data = sum(map(len, raw if p == len(raw) else raw[:p]))
    return data + 16 * p


def file_stamp(path: str) -> Optional[list[int]]:
    """A local file's size and modification time (None for a URL or a missing file)."""
    if "://" in path and not path.startswith("file://"):
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


class Cursor:
    """Where the next record of a file read one after the other is (see the module)."""

    __slots__ = ("entry", "index", "seek")

    def __init__(self, entry: int, index: int, seek: Optional[tuple[int, int]]) -> None:
        self.entry = entry
        self.index = index
        self.seek = seek  # (index, byte offset) of a record at or before ``index``


def position(mark: _Mark, c: int) -> Cursor:
    """The cursor once ``c`` records of the list ``mark`` notes were taken."""
    _, entry, raw, at, first, offset, step = mark
    p = at + c * step  # the next record, in ``raw``
    index = first + p
    if raw is None or offset is None:
        return Cursor(entry, index, None)
    q = min(p, len(raw))
    return Cursor(entry, index, (first + q, offset + bytes_before(raw, q)))


class Tracker:
    """The lists of records handed out, and the cursor they give (see the module)."""

    def __init__(self, start: Cursor, lists: bool) -> None:
        self.marks: deque[_Mark] = deque()  # noted by the readers, maybe ahead
        self.history: deque[_Mark] = deque(maxlen=_HISTORY)
        self.start = start
        self.lists = lists
        self.current: Optional[Iterator[bytes]] = None  # records mode: the list's iterator

    def follow(self, merged: Iterator[Sequence[bytes]]) -> Iterator[Any]:
        """``merged`` (lists, or their records), each list's note made current."""
        marks, history = self.marks, self.history
        for lst in merged:
            while marks and marks[0][0] is not lst:
                marks.popleft()
            if not marks:  # not a list a reader noted: no cursor can be told
                raise RuntimeError("a list of records was handed out without its place")
            history.append(marks.popleft())
            _trim(history, lambda m: len(m[0]))
            if self.lists:
                yield lst
            else:
                it = self.current = iter(lst)
                yield from it

    def cursor(self, behind: int) -> Optional[Cursor]:
        """The cursor, ``behind`` records back (None: further back than kept)."""
        history = self.history
        if not history:
            return self.start if behind == 0 else None
        j = len(history) - 1
        taken = len(history[j][0])
        if self.current is not None:
            taken -= self.current.__length_hint__()  # type: ignore[attr-defined]
        c = taken - behind
        while c < 0:
            j -= 1
            if j < 0:
                return None
            c += len(history[j][0])
        return position(history[j], c)


def cursor_state(cur: Cursor, paths: Sequence[str], order: str, files: int) -> dict[str, Any]:
    """The state of files read one after the other, at ``cur``."""
    return {"kind": KIND, "files": files, "order": order, **_position_fields(cur, paths)}


def load_cursor(saved: dict[str, Any], paths: Sequence[str], order: str) -> Cursor:
    """The cursor a state saved, checked against this epoch's files."""
    check_kind(saved, KIND, KIND)
    _check_files(saved, paths, order)
    return _load_position(saved, paths, allow_end=True)


def _position_fields(cur: Cursor, paths: Sequence[str]) -> dict[str, Any]:
    path = paths[cur.entry] if cur.entry < len(paths) else None
    return {
        "entry": cur.entry,
        "path": path,
        "stamp": None if path is None else file_stamp(path),
        "index": cur.index,
        "seek": None if cur.seek is None else list(cur.seek),
    }


def _load_position(saved: Any, paths: Sequence[str], allow_end: bool = False) -> Cursor:
    """A cursor saved by :func:`_position_fields`, checked against the file it names."""
    if not isinstance(saved, dict):
        raise bad(KIND, f"a file position is a {type(saved).__name__}, not a dict")
    entry = field_int(saved, "entry", KIND)
    index = field_int(saved, "index", KIND)
    if entry > len(paths) or (entry == len(paths) and not allow_end):
        raise bad(KIND, f"file {entry} of {len(paths)}")
    seek = saved.get("seek")
    if entry < len(paths):
        path = paths[entry]
        if saved.get("path") != path:
            raise bad(KIND, f"the file being read was {saved.get('path')!r}, here it is {path!r}")
        stamp = file_stamp(path)
        if saved.get("stamp") != stamp:
            raise bad(
                KIND,
                f"the file {path!r} changed since the state was saved (size and "
                f"modification time {saved.get('stamp')} then, {stamp} now)",
            )
    if seek is not None:
        if (
            not isinstance(seek, list)
            or len(seek) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in seek)
            or seek[0] > index
        ):
            raise bad(KIND, f"the byte position {seek!r} is not valid")
        return Cursor(entry, index, (seek[0], seek[1]))
    return Cursor(entry, index, None)


def _check_files(saved: dict[str, Any], paths: Sequence[str], order: str) -> None:
    if saved.get("files") != len(paths) or saved.get("order") != order:
        raise bad(
            KIND,
            f"it read {saved.get('files')!r} files (order digest {saved.get('order')!r}), "
            f"this epoch reads {len(paths)} (order digest {order!r}): other files, "
            "another shard, or another file order",
        )


def opened_at(
    path: str, seek: tuple[int, int], read: Callable[[Any], Iterator[Sequence[bytes]]]
) -> Iterator[Sequence[bytes]]:
    """``read(f)`` of the plain file ``path`` opened at the byte offset of ``seek``;
    errors give positions in the whole file."""
    index, offset = seek
    f = open(path, "rb", buffering=0)  # noqa: SIM115 (closed below)
    try:
        if offset > os.fstat(f.fileno()).st_size:
            raise bad(KIND, f"byte offset {offset} is past the end of {path!r}")
        f.seek(offset)
        started = False
        try:
            for lst in read(f):
                started = True
                yield lst
        except TFRecordError as err:
            if not started and not err.index:  # the very first record: not one at all
                raise bad(
                    KIND,
                    f"byte offset {offset} of {path!r} is not where record {index} starts "
                    f"({err.message})",
                ) from None
            raise err.with_location(path=path, offset_base=offset, index_base=index) from None
    finally:
        f.close()


#: A slot of interleaved files at the start of a list handed out: its file (place in
#: the epoch's order), the note of its current list (None: none read yet) and the
#: position in that list.
_SlotAt = Optional[tuple[int, Optional[_Mark], int]]


class Watch:
    """Interleaved files (see the module): at the start of each list the interleave
    hands out, where each slot's file is, which file opens next and whether the
    files ran out; the state is that, and how many records of the list were taken
    (read again on resuming: at most one list)."""

    def __init__(
        self,
        cycle: int,
        saved: Optional[dict[str, Any]],
        paths: Sequence[str],
        order: str,
        lists: bool,
    ) -> None:
        self.paths, self.order, self.lists = paths, order, lists
        self.marks: deque[_Mark] = deque(maxlen=4 + 2 * cycle)  # noted by the readers
        self.history: deque[tuple[tuple[tuple[_SlotAt, ...], int, bool], int]] = deque(
            maxlen=_HISTORY
        )
        self.current: Optional[Iterator[Any]] = None  # records mode: the list's iterator
        self.slot_mark: list[Optional[_Mark]] = [None] * cycle
        self.snap: tuple[tuple[_SlotAt, ...], int, bool] = ((None,) * cycle, 0, False)
        self.opened: list[Optional[Callable[[], Iterator[Sequence[Any]]]]] = []
        starts: list[Optional[Cursor]] = [None] * cycle
        self.next_entry, self.exhausted, self.skip = 0, False, 0
        if saved is not None:
            check_kind(saved, KIND, KIND)
            _check_files(saved, paths, order)
            slots = saved.get("slots")
            if not isinstance(slots, list) or len(slots) != cycle:
                raise bad(KIND, f"'slots' is not a list of {cycle} files")
            self.next_entry = field_int(saved, "next", KIND)
            self.skip = field_int(saved, "skip", KIND)
            self.exhausted = saved.get("exhausted") is True
            starts = [None if d is None else _load_position(d, paths) for d in slots]
            entries = [c.entry for c in starts if c is not None]
            if self.next_entry > len(paths) or any(e >= self.next_entry for e in entries):
                raise bad(KIND, f"files {entries} open, file {self.next_entry} next")
            if len(set(entries)) != len(entries):
                raise bad(KIND, f"a file is open in two slots: {entries}")
        self.starts = {c.entry: c for c in starts if c is not None}
        self.entries = [None if c is None else c.entry for c in starts]
        self.initial = saved if saved is not None else self._state(self.snap, 0)
        self.begin_at = self.next_entry

    # -- called by the interleave

    def begin(self, its: Sequence[Any], pos: Sequence[int], exhausted: bool) -> None:
        """A list starts: note where the slots are."""
        self.snap = (
            tuple(
                None if its[s] is None else (self.entries[s], self.slot_mark[s], pos[s])  # type: ignore[misc]
                for s in range(len(its))
            ),
            self.next_entry,
            exhausted,
        )

    def opening(self, s: int) -> None:
        """Slot ``s`` opens the next file."""
        self.entries[s] = self.next_entry
        self.next_entry += 1
        self.slot_mark[s] = None

    def fetched(self, s: int, lst: Sequence[Any]) -> None:
        """Slot ``s`` took the next list of its file."""
        if not self.marks or self.marks[-1][0] is not lst:
            raise RuntimeError("a list of records was handed out without its place")
        self.slot_mark[s] = self.marks[-1]

    # -- the consumer

    def follow(self, merged: Iterator[Sequence[bytes]]) -> Iterator[Any]:
        """``merged`` (lists, or their records), after the records ``skip`` passes over."""
        skip = self.skip
        for out in merged:
            self.history.append((self.snap, len(out)))
            _trim(self.history, lambda h: int(h[1]))
            drop = min(skip, len(out))
            skip -= drop
            if self.lists:
                if drop < len(out):
                    yield out[drop:] if drop else out
            else:
                it = self.current = iter(out)
                for _ in range(drop):
                    next(it)
                yield from it
        if skip:
            raise bad(KIND, f"{skip} more records to pass over than the files hold")

    def state(self, behind: int) -> Optional[dict[str, Any]]:
        history = self.history
        if not history:
            return self.initial if behind == 0 else None
        j = len(history) - 1
        c = history[j][1] - behind
        if self.current is not None:
            c -= self.current.__length_hint__()  # type: ignore[attr-defined]
        while c < 0:
            j -= 1
            if j < 0:
                return None
            c += history[j][1]
        return self._state(history[j][0], c)

    def _state(self, snap: tuple[tuple[_SlotAt, ...], int, bool], skip: int) -> dict[str, Any]:
        slots, next_entry, exhausted = snap
        out: list[Optional[dict[str, Any]]] = []
        for sl in slots:
            if sl is None:
                out.append(None)
                continue
            entry, mark, p = sl
            if mark is None:
                cur = self.starts.get(entry, Cursor(entry, 0, None))
            else:
                cur = position(mark, p)
            out.append(_position_fields(cur, self.paths))
        return {
            "kind": KIND,
            "files": len(self.paths),
            "order": self.order,
            "slots": out,
            "next": next_entry,
            "exhausted": exhausted,
            "skip": skip,
        }
