"""Where an epoch of TFRecord files is, and reading them again from there.

Files read one after the other: the state is a cursor, the file being read (its
place in the epoch's file order, its path, size and modification time) and the
next record in it (its index, and the byte offset of a record at or before it
whose offset is known). A plain local file is read again from that offset (a
seek); a GZIP/ZLIB file, a URL, or a file read while skipping damaged records is
read from its start, its first records passed over (inflating a compressed file
up to there: a seekable GZIP index would spare that).

Each list of records a file hands out is noted (:data:`_Mark`); the consumer of
the lists tells how many records of the last one were taken, and the cursor is
found from the note, rolled back through the last few notes when the stage above
holds records it took (see ._state).

Files interleaved (``num_parallel_reads``, ``interleave(cycle_length)``): the state
is the number of records handed out in the epoch, and the files are read again
from the epoch's start up to there (nothing above the files runs for them).
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

#: Lists kept to roll the cursor back through (records a stage above read ahead).
_HISTORY = 32


def order_digest(paths: Sequence[str]) -> str:
    """A digest of the epoch's files in reading order (the state checks it)."""
    return hashlib.sha256("\n".join(paths).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def bytes_before(raw: Sequence[bytes], p: int) -> int:
    """The bytes of ``raw[:p]`` with their framing (16 bytes a record)."""
    if isinstance(raw, RecordSpans):
        data = int(np.asarray(raw.lengths())[:p].sum())
    else:
        data = sum(map(len, raw[:p]))
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
    path = paths[cur.entry] if cur.entry < len(paths) else None
    return {
        "kind": KIND,
        "files": files,
        "order": order,
        "entry": cur.entry,
        "path": path,
        "stamp": None if path is None else file_stamp(path),
        "index": cur.index,
        "seek": None if cur.seek is None else list(cur.seek),
    }


def load_cursor(saved: dict[str, Any], paths: Sequence[str], order: str) -> Cursor:
    """The cursor a state saved, checked against this epoch's files."""
    check_kind(saved, KIND, KIND)
    _check_files(saved, paths, order)
    entry = field_int(saved, "entry", KIND)
    index = field_int(saved, "index", KIND)
    if entry > len(paths):
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


def count_state(handed: int, paths: Sequence[str], order: str, files: int) -> dict[str, Any]:
    """The state of interleaved files: the records handed out in the epoch."""
    return {"kind": KIND, "files": files, "order": order, "records": handed}


def load_count(saved: dict[str, Any], paths: Sequence[str], order: str) -> int:
    check_kind(saved, KIND, KIND)
    _check_files(saved, paths, order)
    return field_int(saved, "records", KIND)


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
        try:
            yield from read(f)
        except TFRecordError as err:
            raise err.with_location(path=path, offset_base=offset, index_base=index) from None
    finally:
        f.close()
