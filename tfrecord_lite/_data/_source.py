"""The records of TFRecord files, read for one epoch: :class:`_Source`.

Sharding (:meth:`TFRecordDataset.shard`) always splits the *input records*,
wherever it appears in the chain, and is exact: the shards are disjoint and
together hold every record once. Files are first put in a canonical order
(sorted by path); then

* while there are at least as many files as shards, shard ``i`` of ``n`` takes
  ``files[i::n]`` (whole files: no record is read twice);
* otherwise records are split. Record ``r`` (0-based, within its file) of file
  ``f`` (position in the canonical order, among the ``F`` files left) gets the
  label ``k = r * F + f`` -- its position if the files were read round-robin --
  and belongs to shard ``k % n``. The label depends only on *which* record it is,
  not on the order records are read in, so sharding stays exact with
  ``shuffle_files``, ``interleave`` and any seed (or none). Shards get equally
  many records (±1) when the files are equally long, and a shard skips, without
  opening it, every file where it owns nothing: with 2 files and 8 shards each
  shard reads one file, not both. When a plain file has an index file
  (``file.index``/``file.idx``, see :func:`create_index`), a shard reads only its
  own records from it instead of streaming the whole file (a GZIP/ZLIB file is
  streamed, inflated once: a shard's records are spread over all of it).

Several ``shard`` calls nest (shard ``j`` of ``m`` of shard ``i`` of ``n``), which is
how :mod:`tfrecord_lite.torch` adds DataLoader workers and distributed ranks.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any, Callable, Optional, TypeVar

from .._files import (
    READ_BLOCK_SIZE,
    detect_compression,
    find_index,
    fs,
    indexed_count,
    read_batches,
    reader_compression,
)
from .._record import RecordSpans, SkipReport, warn_skip
from ._op import UNKNOWN_CARDINALITY, EpochKey, _close
from ._ops_interleave import _interleave_lists
from ._ops_shuffle import _rng
from ._origin import _Chunks, chunk_table, registered
from ._prefetch import _prefetch
from ._source_state import (
    Cursor,
    Tracker,
    Watch,
    _Mark,
    bytes_before,
    cursor_state,
    load_cursor,
    opened_at,
    order_digest,
)
from ._state import _Level

_T = TypeVar("_T")


#: Records read at a time from a compressed file's seek point (resuming in it).
_SEEK_RUN = 4096

#: Smallest read block per file when interleaving many files (TensorFlow reads
#: 256 KiB per open file; smaller blocks cost more in per-block work than they save).
_MIN_BLOCK = 256 * 1024


class _Source:
    """The files and how to read them: compression, sharding, file order, interleave."""

    def __init__(
        self,
        files: tuple[str, ...],
        compression: str,
        buffer_size: Optional[int],
        verify: bool,
    ) -> None:
        self.files = files
        self.compression = compression
        self.buffer_size = buffer_size  # None: chosen from the number of files open at once
        self.verify = verify
        self.cycle_length = 1
        self.block_length = 1
        self.shards: tuple[tuple[int, int, str], ...] = ()
        self.file_shuffle: Optional[tuple[int, bool]] = None  # (entropy, reshuffle)
        # path -> (skip, take): read only records skip..skip+take-1 of that file
        # (tfrecord_lite.tfds split slices such as "train[10%:20%]").
        self.windows: Optional[dict[str, tuple[int, int]]] = None
        # Damaged records: "raise", or "skip" / "warn" them (reports to on_skip).
        self.on_error = "raise"
        self.on_skip: Optional[Callable[[SkipReport], None]] = None

    def cardinality(self) -> int:
        return UNKNOWN_CARDINALITY  # the number of records is in the files

    def describe(self) -> str:
        return f"TFRecordDataset(files={len(self.files)})"

    def copy(self, **changes: Any) -> _Source:
        new = _Source.__new__(_Source)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def plan(self) -> tuple[list[tuple[str, int]], int, int, int]:
        """Apply the shard stages: the files to read ``(path, label f)`` in reading order, F, N, I.

        A record ``r`` of the file labelled ``f`` is read iff ``(r * F + f) % N == I``.
        """
        canonical = sorted(range(len(self.files)), key=lambda j: (self.files[j], j))
        selected = canonical  # user positions, in canonical order
        n_rec, i_rec = 1, 0
        for n, i, by in self.shards:
            if n_rec == 1 and by != "record" and len(selected) >= n:
                selected = selected[i::n]
            elif by == "file":
                raise ValueError(
                    f"shard(by='file') needs at least {n} files to split, have {len(selected)}"
                )
            else:
                i_rec += n_rec * i
                n_rec *= n
        label = {pos: f for f, pos in enumerate(selected)}
        order = sorted(selected)  # the user's order among the selected files
        return [(self.files[pos], label[pos]) for pos in order], len(selected), n_rec, i_rec

    def iterate(
        self,
        key: EpochKey,
        extra_shards: tuple[tuple[int, int, str], ...] = (),
        lists: bool = False,
        spans: bool = False,
        lv: Optional[_Level] = None,
    ) -> Iterator[Any]:
        """The records (``lists``: lists of records, in the same order).

        ``spans`` (with ``lists``, for a parser): files read one after the other
        hand out :class:`~tfrecord_lite._record._scan.RecordSpans` of their blocks where
        they can, so no record is copied out on its own. The state is published in
        ``lv`` (and a saved one taken from it): see :mod:`._source_state`.
        """
        src = self.copy(shards=self.shards + extra_shards) if extra_shards else self
        entries, n_files, n_rec, i_rec = src.plan()
        if src.file_shuffle is not None:
            entropy, reshuffle = src.file_shuffle
            perm = _rng(entropy, 1, key, reshuffle).permutation(len(entries))
            entries = [entries[j] for j in perm]
        lv = lv if lv is not None else _Level()
        saved = lv.take()
        paths = [path for path, _ in entries]
        order = order_digest(paths)
        # Each file hands out its records a list at a time (as its decoder
        # produces them); the files' lists are merged in tf.data's order, and
        # only the last step hands out single records.
        # (Interleaving several files puts their records in lists of its own.)
        spans = spans and lists and src.cycle_length <= 1
        # The blocks handed out, so that an error names its record's file (see _origin).
        table = chunk_table(src.compression, 4 + 2 * src.cycle_length)
        chained = src.cycle_length <= 1
        if not chained:
            return src._interleaved(entries, table, n_files, n_rec, i_rec, lists, saved, lv)
        start = Cursor(0, 0, None) if saved is None else load_cursor(saved, paths, order)
        tracker = Tracker(start, lists)
        readers: list[Callable[[], Iterator[Sequence[bytes]]]] = [
            functools.partial(
                src._read_file,
                table,
                path,
                f,
                n_files,
                n_rec,
                i_rec,
                spans,
                tracker.marks,
                e,
                start if e == start.entry else None,
            )
            for e, (path, f) in enumerate(entries)
            if e >= start.entry
        ]
        merged = _chain_files(_warmed(readers, paths[start.entry :], 2))
        if spans:
            merged = _read_ahead_when_big(merged)

        def state(behind: int) -> Optional[dict[str, Any]]:
            cur = tracker.cursor(behind)
            return None if cur is None else cursor_state(cur, paths, order, len(paths))

        lv.get = state
        return tracker.follow(merged)

    def _interleaved(
        self,
        entries: list[tuple[str, int]],
        table: _Chunks,
        n_files: int,
        n_rec: int,
        i_rec: int,
        lists: bool,
        saved: Optional[dict[str, Any]],
        lv: _Level,
    ) -> Iterator[Any]:
        """The files' records interleaved (``cycle_length`` open at once), in tf.data's
        order, resuming where ``saved`` says (see :class:`._source_state.Watch`)."""
        paths = [path for path, _ in entries]
        watch = Watch(self.cycle_length, saved, paths, order_digest(paths), lists)

        def reader(e: int) -> Callable[[], Iterator[Sequence[bytes]]]:
            path, f = entries[e]
            start = watch.starts.get(e)
            return functools.partial(
                self._read_file, table, path, f, n_files, n_rec, i_rec, False, watch.marks, e, start
            )

        watch.opened = [None if e is None else reader(e) for e in watch.entries]
        rest = range(watch.next_entry, len(entries))
        pending = _warmed([reader(e) for e in rest], paths[watch.next_entry :], self.cycle_length)
        merged = _interleave_lists(pending, self.cycle_length, self.block_length, watch)
        lv.get = watch.state
        return watch.follow(merged)

    def block_size(self) -> int:
        """Read block per open file: 1 MiB, shared out when several files are open at once."""
        if self.buffer_size is not None:
            return self.buffer_size
        return max(_MIN_BLOCK, READ_BLOCK_SIZE // max(1, self.cycle_length))

    def _read_file(
        self,
        table: _Chunks,
        path: str,
        f: int,
        n_files: int,
        n: int,
        i: int,
        spans: bool = False,
        marks: Optional[deque[_Mark]] = None,
        entry: int = 0,
        start: Optional[Cursor] = None,
    ) -> Iterator[Sequence[bytes]]:
        """The records of one file this shard reads, each block entered in ``table``,
        each list noted in ``marks`` as file ``entry`` of the epoch (see
        :mod:`._source_state`), from the record ``start`` says."""
        window = self.windows.get(path) if self.windows else None
        low, high = (window[0], window[0] + window[1]) if window is not None else (0, None)
        if n == 1:
            r0, step = 0, 1
        else:
            # Records r with r * F + f == i (mod n): r == r0 (mod n / gcd(F, n)), or none at all.
            g = math.gcd(n_files, n)
            d = (i - f) % n
            if d % g:
                return iter(())  # no record of this file is in this shard
            step = n // g
            r0 = ((d // g) * pow(n_files // g, -1, step)) % step if step > 1 else 0
        first = max(low, start.index if start is not None else 0)
        first += (r0 - first) % step  # the first record to hand out
        resuming = start is not None and start.index > 0
        if resuming and not self.windows and self.on_error == "raise":
            index_path = self._seek_index(path)
            if index_path is not None:  # resuming in a compressed file: from a seek point
                lists = self._read_from_seek_point(path, index_path, first, step, marks, entry)
                return registered(lists, table, path, first, step)
        if (
            step > 1
            and self.compression in ("", "auto")
            and not self.windows
            and self.on_error == "raise"
        ):
            index_path = find_index(path)
            if index_path is not None:
                lists = self._read_indexed(path, index_path, first, step, marks, entry)
                return registered(lists, table, path, first, step)
        seek = start.seek if start is not None else None
        if seek is not None and not (seek[1] > 0 and self._plain_local(path)):
            seek = None  # read from the start, passing over the records before
        offsets = marks is not None and self.on_error == "raise"
        raws = self._stream(path, spans, seek)
        lists = _picked(raws, first, step, high, marks, entry, seek, offsets)
        return registered(lists, table, path, first, step)

    def _stream(
        self, path: str, spans: bool = False, seek: Optional[tuple[int, int]] = None
    ) -> Iterator[Sequence[bytes]]:
        """The file's records (CRCs checked, damaged ones raised or skipped), a list
        (or spans) at a time; from the byte offset of ``seek`` (a record index and
        its offset) when the file is a plain local one, else from its start (see
        :func:`_picked`)."""

        def read(source: Any, compression: str) -> Iterator[Sequence[bytes]]:
            return read_batches(
                source,
                compression,
                self.verify,
                self.block_size(),
                "raise" if self.on_error == "raise" else "skip",
                self._skip_reporter(),
                None,
                spans,
                grow=spans and self.buffer_size is None,
            )

        if seek is not None:
            return opened_at(path, seek, lambda f: read(f, ""))
        return read(fs.bind(path, None), reader_compression(self.compression))

    def _plain_local(self, path: str) -> bool:
        """Whether ``path`` is a local uncompressed file (it can be read from an offset)."""
        if fs.is_url(path) or self.on_error != "raise":
            return False
        compression = reader_compression(self.compression)
        if compression == "auto":
            with open(path, "rb") as f:
                compression = detect_compression(f.read(16))
        return compression == ""

    def _compressed(self, path: str) -> bool:
        """Whether ``path`` is read as GZIP/ZLIB (told, or sniffed from its first bytes)."""
        compression = reader_compression(self.compression)
        if compression == "auto":
            compression = detect_compression(fs.head(path, 16))
        return compression != ""

    def _seek_index(self, path: str) -> Optional[str]:
        """The binary index (seek points) beside a GZIP/ZLIB file, checked against it;
        None for a plain file, no index, a text index, or one that does not fit."""
        from .._files import StaleIndexError

        if not self._compressed(path):
            return None
        index_path = find_index(path)
        if index_path is None:
            return None
        try:
            return index_path if indexed_count(path, index_path) is not None else None
        except StaleIndexError as err:
            warnings.warn(f"{err}; reading {path!r} without it", RuntimeWarning, stacklevel=2)
            return None

    def _read_from_seek_point(
        self,
        path: str,
        index_path: str,
        start: int,
        step: int,
        marks: Optional[deque[_Mark]] = None,
        entry: int = 0,
    ) -> Iterator[Sequence[bytes]]:
        """Records ``start::step`` of a compressed file with its binary index, inflated
        from the seek point before record ``start`` on (the records before it are not
        inflated), a run of consecutive records at a time; each list noted in ``marks``."""
        from .._files import TFRecordFile

        f = TFRecordFile(path, index_path, compression=self.compression, verify=self.verify)
        try:
            n = len(f)
            run = _SEEK_RUN - _SEEK_RUN % step or step
            for first in range(start, n, run):
                lst = f[first : min(n, first + run)][::step]
                if marks is not None:
                    marks.append((lst, entry, None, 0, first, None, step))
                yield lst
        finally:
            f.close()

    def _skip_reporter(self) -> Optional[Callable[[SkipReport], None]]:
        """Where a skipped stretch is reported: ``on_skip``, and a warning with "warn"."""
        on_skip, warn = self.on_skip, self.on_error == "warn"
        if self.on_error == "raise" or (warn and on_skip is None):
            return None  # "warn" alone: the reader's default, a SkippedDataWarning each

        def report(rep: SkipReport) -> None:
            if on_skip is not None:
                on_skip(rep)
            if warn:
                warn_skip(rep)

        return report

    def _read_indexed(
        self,
        path: str,
        index_path: str,
        start: int,
        step: int,
        marks: Optional[deque[_Mark]] = None,
        entry: int = 0,
    ) -> Iterator[Sequence[bytes]]:
        """Records ``start::step`` of a file with an index: read only those (one pread
        each), each list noted in ``marks``.

        A GZIP/ZLIB file is streamed instead, inflated once: every byte of it is
        inflated for records spread over all of it, and a text index (decompressed
        offsets) could not even be checked without a pass of its own.
        """
        from .._files import RandomAccessError, StaleIndexError, TFRecordFile

        def streamed() -> Iterator[Sequence[bytes]]:
            return _picked(self._stream(path), start, step, None, marks, entry, None, False)

        if self._compressed(path):
            yield from streamed()
            return
        try:
            f = TFRecordFile(path, index_path, compression=self.compression, verify=self.verify)
        except RandomAccessError:  # not readable at random after all: stream it
            yield from streamed()
            return
        except StaleIndexError as err:
            warnings.warn(f"{err}; reading {path!r} without it", RuntimeWarning, stacklevel=2)
            yield from streamed()
            return
        try:
            n = len(f)
            chunk = 256 * step
            for first in range(start, n, chunk):
                lst = f.get_many(range(first, min(n, first + chunk), step))
                if marks is not None:
                    marks.append((lst, entry, None, 0, first, None, step))
                yield lst
        finally:
            f.close()


def _picked(
    raws: Iterator[Sequence[bytes]],
    first: int,
    step: int,
    high: Optional[int],
    marks: Optional[deque[_Mark]],
    entry: int,
    seek: Optional[tuple[int, int]],
    offsets: bool,
) -> Iterator[Sequence[bytes]]:
    """Records ``first, first + step, ...`` (below ``high``) of a file read as lists
    from the record ``seek`` gives (its start: None), each list noted in ``marks``
    (with the byte offsets of its records when ``offsets``)."""
    base, off = seek if seek is not None else (0, 0)
    at: Optional[int] = off if offsets else None
    want = first
    try:
        for raw in raws:
            stop = len(raw) if high is None else min(len(raw), high - base)
            a = want - base
            if a < stop:
                whole = a == 0 and step == 1 and stop == len(raw)
                out = raw if whole else raw[a:stop:step]
                if marks is not None:
                    marks.append((out, entry, raw, a, base, at, step))
                want = base + a + len(out) * step
                yield out
            if at is not None:
                at += bytes_before(raw, len(raw))
            base += len(raw)
            if high is not None and base >= high:
                return
    finally:
        _close(raws)


#: Records this big on average are read ahead in a background thread while the
#: parser works: reading and checking the CRC of a big record release the GIL.
_AHEAD_FROM = 16 << 10


def _read_ahead_when_big(lists: Iterator[Sequence[bytes]]) -> Iterator[Sequence[bytes]]:
    """The lists, in order; once they prove to hold big records (spans of at least
    :data:`_AHEAD_FROM` bytes a record), the rest are read in a background thread,
    two blocks ahead of the parser. Closing it closes ``lists``."""
    handed = False
    try:
        for lst in lists:
            yield lst
            if isinstance(lst, RecordSpans) and lst.nbytes >= len(lst) * _AHEAD_FROM:
                break
        else:
            return
        handed = True  # the thread reads (and finally closes) ``lists`` from here on
        yield from _prefetch(lambda: lists, 2)
    finally:
        if not handed:
            _close(lists)


def _warmed(
    readers: list[Callable[[], Iterator[_T]]], paths: list[str], cycle: int
) -> list[Callable[[], Iterator[_T]]]:
    """``readers`` of ``paths``; for object stores, each starts fetching the next
    files' first blocks, so that ``cycle`` objects (at least 2) are in flight at once."""
    if not any(fs.is_url(p) for p in paths):
        return readers
    ahead = max(2, cycle)
    fs.prefetch(paths[:ahead])
    return [
        functools.partial(_warming, make, paths[k + 1 : k + 1 + ahead])
        for k, make in enumerate(readers)
    ]


def _warming(make: Callable[[], Iterator[_T]], upcoming: list[str]) -> Iterator[_T]:
    """Open a file's reader, and start fetching the files that follow it (URLs)."""
    fs.prefetch(upcoming)
    return make()


def _chain_files(readers: list[Callable[[], Iterator[_T]]]) -> Iterator[_T]:
    for make in readers:
        it = make()
        try:
            yield from it
        finally:
            _close(it)
