"""Writing TFRecord files: :class:`TFRecordWriter`, plain, GZIP and ZLIB.

Names and options mirror TensorFlow's ``tf.io.TFRecordWriter``. The writer frames
records with :mod:`tfrecord_lite._record` and compresses them with
:mod:`tfrecord_lite._files._compress`; continuing an existing file (``mode="a"``)
is :mod:`tfrecord_lite._files._append`'s.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import stat
import threading
import weakref
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any, Optional, Union

from .._errors import ClosedError, TFRecordError
from .._record import (
    LENGTH,
    RECORD_OVERHEAD,
    FramedRecords,
    SkipReport,
    as_buffer,
    frame_parts,
    record_footer,
    record_header,
)
from . import _fs
from ._append import copy_for_append, prepare_append
from ._handles import close_quietly, create_parent, describe, named_for, open_binary, write_all
from ._options import TFRecordOptions, as_options
from ._paths import PathOrFile, is_file_object

__all__ = ["FileInUseError", "TFRecordWriter"]

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock
    fcntl = None  # type: ignore[assignment]


#: TensorFlow's default zlib buffer sizes (``ZlibCompressionOptions``).
DEFAULT_BUFFER_SIZE = 256 * 1024
#: ``seekable=True``: records (framed) between two full flushes, at least; under the
#: 4 MiB between an index's seek points, so that each of them can be a flush point.
SEEKABLE_SPACING = 3 * 1024 * 1024
#: The least spacing ``seekable=<bytes>`` takes (a full flush costs a few hundred
#: bytes of lost matches each; closer than this it only grows the file).
MIN_SEEKABLE_SPACING = 4096

#: Records framed together by TFRecordWriter.write_all.
_FRAME_CHUNK = 4096
#: ``seekable=N`` below this: write_all frames record by record (its chunks of
#: :data:`_FRAME_CHUNK` records would be farther apart than the flush points).
_CHUNKED_FROM = 1024 * 1024


class TFRecordWriter:
    """Write records to a TFRecord file, as ``tf.io.TFRecordWriter``.

    >>> with TFRecordWriter("train.tfrecord", "GZIP") as w:     # doctest: +SKIP
    ...     w.write(example.SerializeToString())

    ``path`` is a ``str``/``os.PathLike`` (the file is created or truncated) or an
    open binary file object (written from its current position and left open by
    :meth:`close`). ``compression`` is ``None``/``""``, ``"GZIP"``, ``"ZLIB"`` or a
    :class:`TFRecordOptions`; ``options=`` is accepted as TensorFlow's keyword.

    A local ``path`` whose folders do not exist yet gets them (object-store prefixes
    need none); a folder that cannot be made is an ``OSError`` naming ``path``.

    Crash safety:

    * ``atomic=True``: records go to a temporary file ``.<name>.tmp-<random>`` in
      the same directory, which a clean :meth:`close` fsyncs and renames onto
      ``path``. An exception inside ``with``, or a writer dropped without
      ``close()``, removes the temporary file: nothing appears at ``path`` (an
      older file there is left as it was). Default ``False``, as TensorFlow: the
      file is visible while it is written, and an exception inside ``with``
      closes it normally, keeping the records written so far.
    * :meth:`flush` makes every record written so far readable by another process
      (GZIP/ZLIB: a sync flush); ``flush(fsync=True)`` also makes it durable.
      A process killed at any moment leaves a file whose complete records all
      read back (the tail is a :class:`TruncatedRecordError`, or is reported
      with ``on_error="stop"``/``"skip"``).
    * ``mode="a"``: continue an existing plain or GZIP file (GZIP: as a new gzip
      member, which TensorFlow and this library read on). The file is checked
      first: plain files must be whole records with good length CRCs up to the
      end, the last record's data CRC included; GZIP files must read cleanly.
      A damaged tail raises (e.g. :class:`TruncatedRecordError` after a crash)
      unless ``repair=True`` (plain files), which cuts the file back to its last
      complete record, when no intact record follows the damage, and keeps a
      :class:`~tfrecord_lite.SkipReport` of what it cut in :attr:`repaired`.
      ZLIB streams cannot be continued.

    A URL (``s3://``, ``gs://`` ...; ``storage_options`` for its filesystem) is
    written as one upload: on an object store it appears only at :meth:`close`,
    whole. There ``atomic=True`` aborts the upload on an exception (nothing
    appears, an older object is untouched), and ``mode="a"`` rewrites the object
    (downloaded, checked, uploaded with the new records at :meth:`close`; the old
    object stays as it was until then). A process killed mid-upload leaves nothing.

    ``seekable=True`` (GZIP/ZLIB): the deflate stream is fully flushed at a record
    boundary every 3 MiB of records (:data:`SEEKABLE_SPACING`), so inflating can
    start there without the output before it: the file's index
    (:func:`~tfrecord_lite.create_index`) then keeps no 32 KiB window for those seek
    points. The file stays one standard stream any reader reads. ``seekable=N`` (a
    number of bytes, at least 4096) flushes every ``N`` bytes of records instead:
    closer points make each random read inflate less (about ``N / 2`` bytes on
    average) and the file larger (each flush forgets the deflate window); see
    ``benchmarks/RESULTS-io.md`` for what each spacing costs and gives.

    Two writers of one local file: in the default mode and with ``mode="a"`` a writer
    holds an exclusive advisory lock (``flock``) on the file until :meth:`close`; a
    second writer of the same path, in this process or another, raises
    :class:`FileInUseError` before it truncates anything. (``atomic=True`` writers each
    write their own temporary file: the last to close wins, whole. Object stores
    cannot lock: the last upload to complete wins, whole.)

    The writer is safe to share between threads: each record is written whole.
    In a process forked from the one that opened it, it refuses to be used
    (``ValueError``): its buffer belongs to the parent.
    """

    def __init__(
        self,
        path: PathOrFile,
        compression: Union[str, int, TFRecordOptions, None] = None,
        *,
        options: Union[str, int, TFRecordOptions, None] = None,
        atomic: bool = False,
        mode: str = "w",
        repair: bool = False,
        seekable: Union[bool, int] = False,
        storage_options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self._lock = threading.Lock()
        self._file: Optional[IO[bytes]] = None
        self._owns_lock = False  # holds the flock of _open_locked (dropped in a forked child)
        self._held: Optional[int] = None  # atomic=True: a descriptor of the file it replaces
        # Until a clean close(): a local temporary path (atomic=True), or the pending
        # upload of a URL (atomic=True, or mode="a": the object is rewritten).
        self._tmp_path: Union[str, _fs.Output, None] = None
        self._pid = os.getpid()
        self.records_written = 0
        #: With ``mode="a", repair=True``: what was cut off the damaged tail, if anything.
        self.repaired: Optional[SkipReport] = None
        self._options = as_options(compression, options)
        self.compression = self._options.compression_type
        self.path = describe(path)
        self._owns_file = not is_file_object(path)
        append = _writer_mode(mode) == "a"
        if not all(isinstance(v, bool) for v in (atomic, repair)):
            raise TypeError("atomic and repair must be True or False")
        spacing = seek_spacing(seekable)
        if repair and not append:
            raise ValueError("repair=True goes with mode='a'")
        if self._owns_file:
            target = _fs.bind(path, storage_options)  # type: ignore[arg-type]
            if atomic and append:
                raise ValueError("atomic=True and mode='a' cannot be combined")
            if _fs.is_url(target) and (atomic or append):
                # No rename on object stores: the upload is committed at close().
                out = _fs.open_write(target, atomic=True)
                try:
                    if append:
                        self.repaired = copy_for_append(target, out, self.compression, repair)
                except BaseException:
                    out.discard()
                    raise
                self._tmp_path = out
                self._file = out.file
                self._final_path = target
            elif append:
                create_parent(target)
                existed = os.path.exists(target)
                f = _open_locked(target, append=True)  # before the check: no one else writes
                self._owns_lock = True
                try:
                    self.repaired = prepare_append(target, self.compression, repair)
                except BaseException:
                    f.close()
                    if not existed:  # (made by the lock above: leave nothing)
                        with contextlib.suppress(OSError):
                            os.unlink(target)
                    raise
                self._file = f
            elif atomic:
                create_parent(target)
                # The file it will replace, locked until then: refused if another writer has
                # it open (its records would vanish with the rename), and none can open it.
                self._held = _hold(target, None)
                tmp = _temp_path(target)
                try:
                    with named_for(target, tmp):
                        self._file = open_binary(tmp, "xb", buffering=0)
                except BaseException:
                    self._release_held()
                    raise
                self._tmp_path = tmp
                self._final_path = target
            elif _fs.is_url(target):
                self._file = open_binary(target, "wb", buffering=0)
            else:
                create_parent(target)
                self._file = _open_locked(target, append=False)
                self._owns_lock = True
        else:
            if atomic or append:
                raise ValueError(
                    "atomic=True and mode='a' need a file path: a file object is written "
                    "from its current position"
                )
            self._file = path  # type: ignore[assignment]
        self._zobj = self._options._compressobj() if self.compression else None
        self._flush_mode = self._options.flush_mode or zlib.Z_NO_FLUSH
        # seekable: a full flush at a record boundary once this much input has passed.
        self._seek_every = spacing if self._zobj is not None else 0
        self._since_point = 0
        # seekable: bytes in (framed records) and out (compressed, from where this writer
        # started), and where each full flush left them: (compressed, decompressed) offsets.
        self._bytes_in = 0
        self._bytes_out = 0
        self._flush_points: list[tuple[int, int]] = []
        self._buffer_size = self._options.output_buffer_size or DEFAULT_BUFFER_SIZE
        self._parts: list[Union[bytes, memoryview]] = []
        self._pending = 0
        _OPEN_WRITERS.add(self)

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """An ``OSError`` that names no file (a full disk, an I/O error) re-raised naming
        :attr:`path`, and saying what is left under it."""
        try:
            yield
        except OSError as err:
            if err.filename is not None or self.path is None or isinstance(err, TFRecordError):
                raise
            if self._tmp_path is not None or getattr(self, "_final_path", None) is not None:
                kept = "nothing was kept under that name (the temporary file is removed)"
            else:
                kept = (
                    "the file holds what was written before, possibly ending in a cut "
                    "record: read it with on_error='stop', or write it again"
                )
            detail = err.strerror or str(err) or type(err).__name__
            raise type(err)(
                err.errno, f"{detail}: writing the TFRecord file failed; {kept}", self.path
            ) from err

    @property
    def atomic(self) -> bool:
        """True for a writer that renames its temporary file onto :attr:`path` at close."""
        return getattr(self, "_final_path", None) is not None

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has been called."""
        return self._file is None

    def _check_open(self) -> IO[bytes]:
        if self._file is None:
            raise ClosedError("Writer is closed.", path=self.path)
        if self._pid != os.getpid():
            raise ValueError(
                "this TFRecordWriter was opened by another process (before a fork): "
                "its buffered records belong to that process; open a writer in this one"
            )
        return self._file

    def write(self, record: Union[bytes, bytearray, memoryview]) -> None:
        """Append one record (its bytes, e.g. ``example.SerializeToString()``).

        Takes bytes-like objects only: a ``str``, a NumPy array or an ``Example``
        object is a ``TypeError`` that says how to get the bytes.
        """
        data = _record_buffer(record)
        with self._lock, self._errors():
            self._check_open()
            self._append(data)

    def write_all(self, records: Iterable[Union[bytes, bytearray, memoryview]]) -> int:
        """Append every record of an iterable; return how many were written."""
        count = 0
        with self._lock, self._errors():
            self._check_open()
            if self._flush_mode != zlib.Z_NO_FLUSH or 0 < self._seek_every < _CHUNKED_FROM:
                for record in records:
                    self._append(_record_buffer(record))
                    count += 1
                return count
            if isinstance(records, FramedRecords):
                return self._write_framed(records)
            # Frame a chunk of records at a time (vectorized CRC masking, cached headers).
            it = iter(records)
            while True:
                chunk = [
                    r if type(r) is bytes else bytes(_record_buffer(r))
                    for r in itertools.islice(it, _FRAME_CHUNK)
                ]
                if not chunk:
                    return count
                parts, size = frame_parts(chunk)
                self._parts.extend(parts)
                self._pending += size
                self.records_written += len(chunk)
                count += len(chunk)
                if self._pending >= self._buffer_size:
                    self._drain(None)

    def _write_framed(self, records: FramedRecords) -> int:
        """Records framed already (one buffer, from ``write_examples``): written as they are."""
        if 0 < self._seek_every < records.nbytes:
            return self._write_framed_seekable(records)
        if records.nbytes < self._buffer_size:
            self._parts.append(bytes(records.buffer))  # buffered: a copy of its own
        else:
            self._drain(None)  # what is buffered goes first; the drain below writes it alone
            self._parts.append(memoryview(records.buffer))
        self._pending += records.nbytes
        self.records_written += records.count
        if self._pending >= self._buffer_size:
            self._drain(None)
        return records.count

    def _write_framed_seekable(self, records: FramedRecords) -> int:
        """Framed records cut at record boundaries where flush points fall due."""
        view = memoryview(records.buffer).cast("B")
        pos = cut = 0
        count = 0
        while pos < len(view):
            (length,) = LENGTH.unpack_from(view, pos)
            pos += length + RECORD_OVERHEAD
            count += 1
            if self._since_point + self._pending + pos - cut >= self._seek_every:
                self._parts.append(bytes(view[cut:pos]))
                self._pending += pos - cut
                self.records_written += count
                count = 0
                cut = pos
                self._drain(None)
        if pos > cut:
            self._parts.append(bytes(view[cut:pos]))
            self._pending += pos - cut
            self.records_written += count
            if self._pending >= self._buffer_size:
                self._drain(None)
        return records.count

    def _append(self, data: Union[bytes, bytearray, memoryview]) -> None:
        if not isinstance(data, bytes):
            # Buffered until the next drain: copy, so that a caller reusing its
            # bytearray / memoryview cannot change a record after its CRC was taken.
            data = bytes(data)
        header = record_header(len(data))
        footer = record_footer(data)
        parts = self._parts
        parts.append(header)
        parts.append(data)
        parts.append(footer)
        self._pending += len(data) + RECORD_OVERHEAD
        self.records_written += 1
        if self._flush_mode != zlib.Z_NO_FLUSH:
            self._drain(self._flush_mode)
        elif self._pending >= self._buffer_size or self._point_due():
            self._drain(None)

    def _point_due(self) -> bool:
        """Whether the records buffered reach the next flush point (``seekable``)."""
        return bool(self._seek_every) and self._since_point + self._pending >= self._seek_every

    def _drain(self, zlib_flush: Optional[int]) -> None:
        f = self._file
        assert f is not None
        if self._parts:
            parts = self._parts
            blob = parts[0] if len(parts) == 1 else b"".join(parts)
            self._parts = []
            self._pending = 0
            self._since_point += len(blob)
            self._bytes_in += len(blob)
            if self._zobj is not None:
                blob = self._zobj.compress(blob)
            if blob:
                write_all(f, blob)
                self._bytes_out += len(blob)
        due = self._seek_every and self._since_point >= self._seek_every
        if due and zlib_flush in (None, zlib.Z_SYNC_FLUSH):  # (parts are whole records)
            zlib_flush = zlib.Z_FULL_FLUSH
        if zlib_flush == zlib.Z_FULL_FLUSH:
            self._since_point = 0
        if self._zobj is not None and zlib_flush is not None:
            tail = self._zobj.flush(zlib_flush)
            write_all(f, tail)
            self._bytes_out += len(tail)
            if zlib_flush == zlib.Z_FULL_FLUSH and self._seek_every:
                points = self._flush_points
                if not points or points[-1][1] != self._bytes_in:
                    points.append((self._bytes_out, self._bytes_in))

    def flush(self, *, fsync: bool = False) -> None:
        """Write out everything buffered so far.

        After ``flush()``, another reader of the file sees every record written so
        far, for compressed files too (the deflate stream is sync-flushed), and a
        crash of this process loses none of them. ``fsync=True`` also asks the
        operating system to put them on disk (survives a power cut). With
        ``atomic=True`` the records are in the temporary file until :meth:`close`.
        """
        with self._lock, self._errors():
            f = self._check_open()
            self._drain(zlib.Z_SYNC_FLUSH)
            f.flush()
            if fsync and not _fs.is_url(self.path or ""):
                os.fsync(f.fileno())

    def close(self) -> None:
        """Finish the file (compressed streams get their end marker) and close it.

        Calling ``close()`` again does nothing. A file object passed in by the
        caller is flushed but left open. With ``atomic=True`` the file is fsynced
        and renamed onto :attr:`path` (if that fails, the temporary file is removed).
        """
        with self._lock, self._errors():
            f = self._file
            if f is None:
                return
            if self._pid != os.getpid():
                self._file = None  # the parent's file: leave it to the parent
                return
            tmp = self._tmp_path
            done = False
            try:
                self._drain(zlib.Z_FINISH)
                f.flush()
                if isinstance(tmp, str):
                    os.fsync(f.fileno())
                done = True
            finally:
                self._file = None
                zobj, self._zobj = self._zobj, None
                close_quietly(zobj)  # a threaded deflate's threads stop here
                self._tmp_path = None
                if self._owns_file:
                    f.close()
                if tmp is not None:
                    try:
                        if isinstance(tmp, str) and done:
                            self._held = _hold(self._final_path, self._held, kept=tmp)
                        _commit(tmp, self._final_path, done)
                    finally:
                        self._release_held()

    def _release_held(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            with contextlib.suppress(OSError):
                os.close(held)

    def _discard(self) -> None:
        """Close an atomic writer without committing: its temporary file is removed."""
        with self._lock:
            f, tmp = self._file, self._tmp_path
            if f is None or tmp is None:
                return
            self._file = None
            zobj, self._zobj = self._zobj, None
            close_quietly(zobj)
            self._tmp_path = None
            self._parts = []
            try:
                f.close()
            finally:
                self._release_held()
                if self._pid == os.getpid():
                    _remove_quietly(tmp)

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None and self._tmp_path is not None:
            self._discard()  # atomic: no file at the final path
        else:
            self.close()

    def __del__(self) -> None:
        # Finish the stream if the writer is dropped without close(), as files do;
        # an atomic writer dropped so was not closed cleanly: it leaves nothing.
        try:
            if getattr(self, "_file", None) is not None:
                if self._tmp_path is not None:
                    self._discard()
                else:
                    self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (
            f"<TFRecordWriter {self.path!r} compression={self.compression!r} "
            f"records={self.records_written} {state}>"
        )


class FileInUseError(TFRecordError, BlockingIOError):
    """Another writer (in this process or another) has the file open: a second
    ``TFRecordWriter`` of the same local path would silently destroy its records."""


def _open_locked(path: str, *, append: bool) -> IO[bytes]:
    """Open a local file for writing under an exclusive advisory lock (``flock``), which
    it keeps until it is closed. Truncated (unless ``append``) only once the lock is
    held: a second writer of the same path raises :class:`FileInUseError` and leaves the
    first writer's records as they are."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0), 0o666)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a device or a pipe: no lock, no truncation
            return os.fdopen(fd, "ab" if append else "wb", buffering=0)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise FileInUseError(
                    "another TFRecordWriter (in this process or another) is writing this file: "
                    "a second writer would destroy its records. Write to another path, or "
                    "close the first writer before opening the file again",
                    path=path,
                ) from None
        if not append:
            os.ftruncate(fd, 0)
        return os.fdopen(fd, "ab" if append else "wb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def _hold(path: str, held: Optional[int], kept: Optional[str] = None) -> Optional[int]:
    """Lock the file at ``path`` that an atomic writer will replace (``held``: the
    descriptor it locked before, kept when ``path`` still names that file); None when
    there is no file there. Another writer holding it is :class:`FileInUseError`:
    replacing the file would silently drop every record it writes. ``kept``: the
    finished temporary file, kept (and named) when the final name is refused at close."""
    if held is not None:
        try:
            now, mine = os.stat(path), os.fstat(held)
            if (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
                return held
        except OSError:
            pass
        os.close(held)  # the name leads elsewhere now: check the file there
    if fcntl is None:  # pragma: no cover - not POSIX: no lock
        return None
    flags = os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    for mode in (os.O_RDONLY, os.O_WRONLY):
        try:
            fd = os.open(path, flags | mode)
            break
        except PermissionError:
            continue
        except OSError:  # no file there (or no regular one): nothing to hold
            return None
    else:
        return None  # neither readable nor writable: no TFRecordWriter of ours has it
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        if kept is None:
            what = "nothing was written"
        else:
            what = f"the records written are kept in {kept!r}: rename it onto the path later"
        raise FileInUseError(
            "another TFRecordWriter (in this process or another) has this file open: "
            "replacing it (atomic=True) would silently drop its records, so it is not "
            f"replaced; {what}. Close the other writer first, or write to another path",
            path=path,
        ) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def seek_spacing(seekable: object) -> int:
    """The bytes of records between two full flushes that ``seekable`` asks for (0: none)."""
    if isinstance(seekable, bool):
        return SEEKABLE_SPACING if seekable else 0
    if not isinstance(seekable, int):
        raise TypeError(
            "seekable must be True, False or a number of bytes between flush points, "
            f"got {type(seekable).__name__}"
        )
    if seekable < MIN_SEEKABLE_SPACING:
        raise ValueError(
            f"seekable={seekable}: the bytes between two flush points must be at least "
            f"{MIN_SEEKABLE_SPACING} (or pass True for the default, {SEEKABLE_SPACING})"
        )
    return seekable


def _record_buffer(record: object) -> Union[bytes, bytearray, memoryview]:
    """A record to write as a buffer; a TypeError with the fix for the usual mistakes."""
    if isinstance(record, (bytes, bytearray, memoryview)):
        return as_buffer(record)
    kind = type(record)
    if hasattr(record, "SerializeToString"):
        raise TypeError(
            f"write() takes a record's bytes, got a protobuf message ({kind.__name__}): "
            "pass example.SerializeToString()"
        )
    if kind.__module__ == "numpy" or hasattr(record, "__array_interface__"):
        raise TypeError(
            f"write() takes a record's bytes, got {kind.__module__}.{kind.__qualname__}: "
            "store arrays in an Example (tfr.encode_example({'image': arr})), or pass "
            "arr.tobytes() to write the raw bytes as the record"
        )
    return as_buffer(record)


#: Writers open in this process: a forked child marks them as not its own.
_OPEN_WRITERS: weakref.WeakSet[TFRecordWriter] = weakref.WeakSet()


def _writer_mode(mode: object) -> str:
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a string, got {type(mode).__name__}")
    m = mode.replace("b", "")
    if m not in ("w", "a"):
        raise ValueError(f"mode must be 'w' (create or truncate) or 'a' (append), got {mode!r}")
    return m


def _temp_path(target: str) -> str:
    directory, name = os.path.split(os.path.abspath(target))
    return os.path.join(directory, f".{name}.tmp-{secrets.token_hex(6)}")


def _remove_quietly(path: Union[str, _fs.Output]) -> None:
    if isinstance(path, _fs.Output):
        path.discard()  # an upload: aborted, nothing appears
        return
    with contextlib.suppress(OSError):
        os.unlink(path)


def _commit(tmp: Union[str, _fs.Output], final: str, ok: bool) -> None:
    """Rename a finished temporary file onto its final path, or remove it."""
    if isinstance(tmp, _fs.Output):  # an upload: completed, or aborted
        if ok:
            tmp.commit()
        else:
            tmp.discard()
        return
    if not ok:
        _remove_quietly(tmp)
        return
    try:
        os.replace(tmp, final)
    except BaseException:
        _remove_quietly(tmp)
        raise
    _fs.fsync_directory(os.path.dirname(os.path.abspath(final)))


def _after_fork_in_child() -> None:
    # Writers inherited from the parent refuse to write (see _check_open): their
    # buffers hold the parent's records, which must not be written twice.
    for writer in list(_OPEN_WRITERS):
        writer._tmp_path = None  # never remove the parent's temporary file
        if writer._held is not None:  # atomic=True: the lock on the file it will replace
            with contextlib.suppress(OSError):
                null = os.open(os.devnull, os.O_RDONLY)
                try:
                    os.dup2(null, writer._held)
                finally:
                    os.close(null)
        if writer._owns_lock and writer._file is not None:
            # The flock belongs to the open file description the child shares: point the
            # child's descriptor at /dev/null so the parent's close() releases the lock.
            with contextlib.suppress(OSError, ValueError):
                null = os.open(os.devnull, os.O_WRONLY)
                try:
                    os.dup2(null, writer._file.fileno())
                finally:
                    os.close(null)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
