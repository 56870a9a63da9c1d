"""Index files and random access to the records of a TFRecord file.

Index format
------------
A text file with one line per record, ``offset length``, both decimal byte
counts: ``offset`` is where the record's header starts and ``length`` is the whole
framed record (12-byte header + data + 4-byte CRC, so ``16 + len(data)``)::

    0 27
    27 43
    70 16

This is the format of vahidk/tfrecord's ``tfrecord2idx`` and NVIDIA DALI's
``tfrecord2idx``, so their index files work here and ours work there.
:func:`read_index` tolerates a missing or extra trailing newline, ``\\r\\n`` line
ends, blank lines, and index files with only the offset column.

Compressed files
----------------
Records of a GZIP/ZLIB file cannot be reached without decompressing everything
before them. :func:`create_index` on a compressed file writes the offsets in the
*decompressed* stream (what vahidk/tfrecord's gzip reader seeks to).
:class:`TFRecordFile` refuses a compressed file with :class:`RandomAccessError`
unless ``decompress=True``, which decompresses it once into a temporary file
(streaming, bounded memory) and reads from that. Nothing is ever read at a
compressed offset as if it were plain.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any, Optional, Union, overload

import numpy as np

from .._errors import CorruptRecordError, TFRecordError, TruncatedRecordError
from .._record import (
    HEADER_SIZE,
    LENGTH,
    RECORD_OVERHEAD,
    encode_record,
    header_ok,
    iter_records,
    unframe,
)
from . import _fs
from ._handles import Closing, open_binary
from ._options import compression_name
from ._sniff import detect_compression
from ._stream import read_records
from ._walk import walk_headers

__all__ = [
    "RandomAccessError",
    "StaleIndexError",
    "TFRecordFile",
    "create_index",
    "default_index_path",
    "find_index",
    "read_index",
    "write_index",
]

PathLike = Union[str, "os.PathLike[str]"]

#: Suffixes tried, in order, next to a data file when no index path is given.
INDEX_SUFFIXES = (".index", ".idx")

#: Bytes of decompressed records written at a time by ``decompress=True``.
_SCAN_BLOCK = 1024 * 1024
#: At most this many bytes are read at once for a run of consecutive records.
_MAX_SPAN = 16 * 1024 * 1024


class StaleIndexError(TFRecordError, ValueError):
    """An index file does not describe its data file (it is stale, damaged, or for another file).

    Rebuild it with :func:`create_index`.
    """


class RandomAccessError(TFRecordError, ValueError):
    """Random access is impossible on this file as it is (e.g. it is GZIP/ZLIB-compressed)."""


def default_index_path(path: PathLike) -> str:
    """The index path :func:`create_index` writes by default: ``path + ".index"``."""
    base = os.fspath(path)
    name = base + INDEX_SUFFIXES[0]
    return base.with_path(name) if isinstance(base, _fs.URL) else name


def find_index(
    path: PathLike, *, storage_options: Optional[Mapping[str, Any]] = None
) -> Optional[str]:
    """The index file next to ``path`` (``path.index`` or ``path.idx``), or None."""
    base = _fs.bind(path, storage_options)
    for suffix in INDEX_SUFFIXES:
        candidate = base.with_path(base + suffix) if isinstance(base, _fs.URL) else base + suffix
        if _fs.isfile(candidate):
            return candidate
    return None


# --------------------------------------------------------------------------- reading / writing


def read_index(
    index_path: PathLike,
    *,
    data_size: Optional[int] = None,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> np.ndarray:
    """Read an index file into an int64 array of shape ``(n, 2)``: ``offset, length`` per record.

    Accepts a trailing newline or none, ``\\r\\n``, blank lines, and one-column files
    (offsets only: each length is then the distance to the next offset, and the
    last one needs ``data_size``, the data file's size in bytes).
    """
    name = _fs.bind(index_path, storage_options)
    with open_binary(name, "rb") as f:
        text = f.read()
    lines = [line.split() for line in text.splitlines()]
    rows = [parts for parts in lines if parts]
    if not rows:
        return np.zeros((0, 2), dtype=np.int64)
    width = len(rows[0])
    if width not in (1, 2):
        raise StaleIndexError(
            f"not a TFRecord index file: line 1 has {width} fields, expected 'offset length'",
            path=name,
        )
    try:
        if any(len(parts) != width for parts in rows):
            raise ValueError("lines have different numbers of fields")
        flat = np.array([int(tok) for parts in rows for tok in parts], dtype=np.int64)
    except (ValueError, OverflowError) as err:
        raise StaleIndexError(
            f"not a TFRecord index file ({err}); each line must be 'offset length'", path=name
        ) from None
    if width == 2:
        table = flat.reshape(-1, 2)
    else:
        if data_size is None:
            raise StaleIndexError(
                "this index has only offsets; the data file's size is needed for the last length",
                path=name,
            )
        ends = np.append(flat[1:], data_size)
        table = np.stack([flat, ends - flat], axis=1)
    if (table < 0).any():
        raise StaleIndexError("not a TFRecord index file: negative offset or length", path=name)
    return table


def write_index(
    index_path: PathLike,
    table: Union[np.ndarray, Sequence[tuple[int, int]]],
    *,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> str:
    """Write ``(offset, length)`` rows as an index file (atomically: see :func:`_write_lines`)."""
    name = _fs.bind(index_path, storage_options)
    rows = np.asarray(table, dtype=np.int64).reshape(-1, 2)

    def lines() -> Iterator[tuple[int, int]]:
        for start in range(0, len(rows), 65536):
            yield from rows[start : start + 65536].tolist()

    _write_lines(name, lines())
    return name


def _write_lines(dest: str, rows: Iterator[tuple[int, int]]) -> None:
    """Write ``offset length`` lines to ``dest`` atomically, streaming: a local file goes
    to a temporary file renamed at the end; a URL is one upload, completed at the end
    (aborted on an error: a reader never sees half an index)."""
    out = _fs.open_write(dest, atomic=True)
    try:
        lines: list[str] = []
        for offset, length in rows:
            lines.append(f"{offset} {length}\n")
            if len(lines) >= 65536:
                out.file.write("".join(lines).encode("ascii"))
                lines.clear()
        out.file.write("".join(lines).encode("ascii"))
    except BaseException:
        out.discard()
        raise
    out.commit()


def _file_size(path: str) -> int:
    return _fs.size(path)


def _head(path: str, n: int = 16) -> bytes:
    return _fs.head(path, n)  # one small ranged request for a URL


def _scan_plain(path: str) -> Iterator[tuple[int, int]]:
    """Yield ``(offset, framed length)`` of each record of a plain file, from its headers
    (:func:`~tfrecord_lite._files._walk.walk_headers`: record data is skipped, not read)."""
    size = _file_size(path)
    with open_binary(path, "rb") as f:
        for offset, length in walk_headers(f, size, path=path):
            yield offset, length + RECORD_OVERHEAD


def _scan_stream(path: str, compression: str) -> Iterator[tuple[int, int]]:
    """``(offset, length)`` of each record in the decompressed stream of a compressed file."""
    offset = 0
    for record in read_records(path, compression):
        total = len(record) + RECORD_OVERHEAD
        yield offset, total
        offset += total


def _index_rows(path: str, compression: str) -> Iterator[tuple[int, int]]:
    if compression == "auto":
        compression = detect_compression(_head(path))
    if compression:
        return _scan_stream(path, compression)
    return _scan_plain(path)


def create_index(
    path: PathLike,
    index_path: Optional[PathLike] = None,
    *,
    compression: Union[str, None] = "auto",
    storage_options: Optional[Mapping[str, Any]] = None,
) -> str:
    """Write the index file of a TFRecord file; return its path (default ``path + ".index"``).

    One streaming pass with bounded memory, whatever the file's size: for a plain
    file only the record headers are read (their CRCs are checked) and record data
    is skipped. A GZIP/ZLIB file is decompressed on the fly and the offsets are
    those of the decompressed stream (see the module documentation). The index is
    written to a temporary file and renamed, so a reader never sees half an index.
    """
    src = _fs.bind(path, storage_options)
    if index_path is None:
        dest = default_index_path(src)
    else:
        dest = _fs.bind(index_path, storage_options if _fs.is_url(os.fspath(index_path)) else None)
    comp = compression_name(compression, allow_auto=True)
    _write_lines(dest, _index_rows(src, comp))
    return dest


def _check_index(table: np.ndarray, size: int, data: str, index_name: Optional[str]) -> None:
    """Raise :class:`StaleIndexError` unless ``table`` tiles ``[0, size)`` record by record."""
    where = f"index {index_name!r} for {data!r}" if index_name else f"index of {data!r}"
    n = len(table)
    if n == 0:
        if size != 0:
            raise StaleIndexError(
                f"stale index: {where} lists no records but the file has {size} bytes; "
                "rebuild it with create_index()",
                path=index_name or data,
            )
        return
    offsets = table[:, 0]
    lengths = table[:, 1]
    end = int(offsets[-1] + lengths[-1])
    if end != size:
        raise StaleIndexError(
            f"stale index: {where} ends at byte {end} but the file has {size} bytes; "
            "rebuild it with create_index()",
            path=index_name or data,
        )
    bad_entries = np.flatnonzero(lengths < RECORD_OVERHEAD)
    if offsets[0] != 0:
        bad = 0
    elif len(bad_entries):
        bad = int(bad_entries[0])
    else:
        gaps = np.flatnonzero(offsets[1:] != offsets[:-1] + lengths[:-1])
        bad = int(gaps[0]) + 1 if len(gaps) else -1
    if bad >= 0:
        raise StaleIndexError(
            f"stale index: {where} is not a record-by-record tiling of the file "
            f"(entry {bad}: offset {int(offsets[bad])}, length {int(lengths[bad])}); "
            "rebuild it with create_index()",
            path=index_name or data,
        )


# --------------------------------------------------------------------------- random access


class TFRecordFile(Sequence[bytes], Closing):
    """Random access to the records of one TFRecord file: ``len(f)``, ``f[i]``, ``f[2:10]``, ``f[[3, 1]]``.

    >>> f = TFRecordFile("train.tfrecord")          # doctest: +SKIP
    >>> len(f), f[0], f[-1], f[10:20], f[[5, 2, 9]]  # doctest: +SKIP

    The index is ``index_path`` if given, else ``path.index`` / ``path.idx`` if one
    exists (checked against the file's size, :class:`StaleIndexError` if it does not
    match), else it is built in one streaming pass over the headers (memory: 8 bytes
    per record). Every record read is CRC-checked unless ``verify=False``; ``f[i]``
    equals the i-th record :func:`tfrecord_lite.tf_record_iterator` yields.

    A GZIP/ZLIB file raises :class:`RandomAccessError`, unless ``decompress=True``:
    then it is decompressed once into a temporary file (deleted on :meth:`close`).

    Reads use ``os.pread`` where available, so one ``TFRecordFile`` may be shared by
    threads. It pickles (the file is reopened on first use), so it can be handed to
    ``torch`` DataLoader worker processes.
    """

    def __init__(
        self,
        path: PathLike,
        index_path: Optional[PathLike] = None,
        *,
        compression: Union[str, None] = "auto",
        verify: bool = True,
        decompress: bool = False,
        storage_options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"TFRecordFile needs a path, got {type(path).__name__}")
        self.path = _fs.bind(path, storage_options)
        self.verify = verify
        self.decompress = decompress
        self._compression_arg = compression_name(compression, allow_auto=True)
        self._lock = threading.Lock()
        self._fd: Optional[int] = None
        self._fobj: Optional[IO[bytes]] = None
        self._tmp: Optional[str] = None
        self._pid = os.getpid()
        comp = self._compression_arg
        if comp == "auto":
            comp = detect_compression(_head(self.path))
        self.compression = comp
        self._data_path = self.path
        if comp:
            if not decompress:
                raise RandomAccessError(
                    f"random access needs an uncompressed file, and this one is {comp}: "
                    "records of a compressed stream cannot be reached without decompressing "
                    "everything before them. Pass decompress=True to decompress it once into a "
                    "temporary file, or stream it with tf_record_iterator()/TFRecordDataset",
                    path=self.path,
                )
            self._tmp = self._decompress_to_temp(comp)
            self._data_path = self._tmp
        self.index_path: Optional[str] = (
            _fs.bind(index_path, storage_options if _fs.is_url(os.fspath(index_path)) else None)
            if index_path is not None
            else find_index(self.path)
        )
        size = self._size()
        if self.index_path is not None:
            table = read_index(self.index_path, data_size=size)
            _check_index(table, size, self.path, self.index_path)
            offsets = np.ascontiguousarray(table[:, 0])
            self._bounds = np.append(offsets, np.int64(size)).astype(np.int64)
            self._check_headers()
        else:
            offs = array("q")
            for offset, _ in _scan_plain(self._data_path):
                offs.append(offset)
            offsets = np.frombuffer(offs, dtype=np.int64) if len(offs) else np.zeros(0, np.int64)
        # Record i spans bounds[i]..bounds[i+1].
        self._bounds = np.append(offsets, np.int64(size)).astype(np.int64)

    # -- construction helpers

    def _decompress_to_temp(self, compression: str) -> str:
        fd, name = tempfile.mkstemp(prefix="tfrecord-lite-", suffix=".tfrecord")
        try:
            with os.fdopen(fd, "wb") as out:
                batch: list[bytes] = []
                pending = 0
                for record in read_records(self.path, compression, verify=self.verify):
                    batch.append(encode_record(record))
                    pending += len(record) + RECORD_OVERHEAD
                    if pending >= _SCAN_BLOCK:
                        out.write(b"".join(batch))
                        batch.clear()
                        pending = 0
                out.write(b"".join(batch))
        except BaseException:
            os.remove(name)
            raise
        return name

    def _size(self) -> int:
        return _file_size(self._data_path)

    # -- low-level reads

    def _read(self, start: int, n: int) -> bytes:
        if self._pid != os.getpid():  # forked: do not share the parent's file offset
            self._fd = None
            self._fobj = None
            self._pid = os.getpid()
        if _fs.is_url(self._data_path):
            data = _fs.read_range(self._data_path, start, n)  # one ranged request
        elif hasattr(os, "pread"):
            fd = self._fd
            if fd is None:
                with self._lock:
                    if self._fd is None:
                        self._fd = os.open(
                            self._data_path, os.O_RDONLY | getattr(os, "O_BINARY", 0)
                        )
                    fd = self._fd
            parts = []
            got = 0
            while got < n:
                chunk = os.pread(fd, n - got, start + got)
                if not chunk:
                    break
                parts.append(chunk)
                got += len(chunk)
            data = parts[0] if len(parts) == 1 else b"".join(parts)
        else:
            with self._lock:
                if self._fobj is None:
                    self._fobj = open_binary(self._data_path, "rb")
                self._fobj.seek(start)
                data = self._fobj.read(n)
        if len(data) != n:
            raise TruncatedRecordError(
                f"the file is shorter than its index says ({len(data)} of {n} bytes at "
                f"byte {start}); it changed since it was indexed",
                expected=n,
                available=len(data),
                path=self.path,
                offset=start,
            )
        return data

    def _check_headers(self) -> None:
        """Cheap check that the index fits the file: the first and last records' headers."""
        n = len(self)
        for i in {0, n - 1} if n else ():
            start, end = int(self._bounds[i]), int(self._bounds[i + 1])
            head = self._read(start, HEADER_SIZE)
            (length,) = LENGTH.unpack_from(head, 0)
            if not header_ok(head) or length + RECORD_OVERHEAD != end - start:
                raise StaleIndexError(
                    f"stale index: {self.index_path!r} says record {i} is {end - start} bytes "
                    f"at byte {start}, which the file does not hold; it is an index of another "
                    "version of the file: rebuild it with create_index()",
                    path=self.index_path,
                    index=i,
                    offset=start,
                )

    def _decode(self, buf: bytes, first: int, count: int) -> list[bytes]:
        start = int(self._bounds[first])
        try:
            out = list(iter_records(buf, verify=self.verify, offset=start, index=first))
        except TruncatedRecordError as err:
            raise self._stale(first, count, err) from None
        except CorruptRecordError as err:
            if err.part == "header" and self.index_path is not None:
                raise CorruptRecordError(
                    f"{err.message}; or the index {self.index_path!r} is stale "
                    "(rebuild it with create_index())",
                    part="header",
                    path=self.path,
                    offset=err.offset,
                    index=err.index,
                ) from None
            raise err.with_location(path=self.path) from None
        except TFRecordError as err:
            raise err.with_location(path=self.path) from None
        if len(out) != count:
            raise self._stale(first, count, None)
        return out

    def _stale(self, first: int, count: int, err: Optional[Exception]) -> StaleIndexError:
        start, end = int(self._bounds[first]), int(self._bounds[first + count])
        why = f" ({err})" if err is not None else ""
        return StaleIndexError(
            f"stale index: bytes {start}..{end} of the file are not the {count} record(s) "
            f"the index {self.index_path!r} says{why}; rebuild it with create_index()",
            path=self.path,
            offset=start,
            index=first,
        )

    def _read_one(self, k: int) -> bytes:
        """Record ``k``: one read, both CRCs checked at once (``unframe``); anything
        unexpected goes through :meth:`_decode`, which raises the precise error."""
        start, end = int(self._bounds[k]), int(self._bounds[k + 1])
        buf = self._read(start, end - start)
        data = unframe(buf) if self.verify else None
        return data if data is not None else self._decode(buf, k, 1)[0]

    def _read_run(self, first: int, stop: int) -> list[bytes]:
        """Records ``first..stop-1`` (consecutive), in spans of at most 16 MiB."""
        out: list[bytes] = []
        bounds = self._bounds
        i = first
        while i < stop:
            start = int(bounds[i])
            j = int(np.searchsorted(bounds, start + _MAX_SPAN, side="right")) - 1
            j = min(max(j, i + 1), stop)
            end = int(bounds[j])
            out.extend(self._decode(self._read(start, end - start), i, j - i))
            i = j
        return out

    # -- the Sequence API

    def __len__(self) -> int:
        return len(self._bounds) - 1

    @property
    def offsets(self) -> np.ndarray:
        """Byte offset of each record (int64, read-only view)."""
        view = self._bounds[:-1]
        view.flags.writeable = False
        return view

    @property
    def lengths(self) -> np.ndarray:
        """Framed length of each record, ``16 + len(data)`` (int64)."""
        return np.diff(self._bounds)

    def _norm(self, i: Any) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(
                f"record indices must be integers, slices or lists of integers, not {type(i).__name__}"
            )
        k = int(i)
        n = len(self)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError(f"record index {i} out of range for a file of {n} records")
        return k

    @overload
    def __getitem__(self, i: int) -> bytes: ...

    @overload
    def __getitem__(self, i: slice) -> list[bytes]: ...

    @overload
    def __getitem__(self, i: Union[Sequence[int], np.ndarray]) -> list[bytes]: ...

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step == 1:
                return self._read_run(start, stop) if stop > start else []
            return self.get_many(range(start, stop, step))
        if isinstance(i, (int, np.integer)) and not isinstance(i, bool):
            return self._read_one(self._norm(i))
        if isinstance(i, (str, bytes, bool)):
            raise TypeError(
                f"record indices must be integers, slices or lists, not {type(i).__name__}"
            )
        try:
            items = list(i)
        except TypeError:
            raise TypeError(
                f"record indices must be integers, slices or lists of integers, not {type(i).__name__}"
            ) from None
        return self.get_many(items)

    def get_many(self, indices: Any) -> list[bytes]:
        """The records at ``indices`` (any order, repeats allowed), in that order.

        Consecutive indices are read with one system call per run.
        """
        ks = [self._norm(i) for i in indices]
        if not ks:
            return []
        order = sorted(range(len(ks)), key=ks.__getitem__)
        out: list[Optional[bytes]] = [None] * len(ks)
        pos = 0
        while pos < len(order):
            # A run of consecutive (or repeated) record numbers in sorted order.
            end = pos + 1
            while end < len(order) and ks[order[end]] - ks[order[end - 1]] in (0, 1):
                end += 1
            first = ks[order[pos]]
            last = ks[order[end - 1]]
            records = self._read_run(first, last + 1)
            for p in range(pos, end):
                out[order[p]] = records[ks[order[p]] - first]
            pos = end
        return out  # type: ignore[return-value]

    def __iter__(self) -> Iterator[bytes]:
        n = len(self)
        step = 1024
        for start in range(0, n, step):
            yield from self._read_run(start, min(start + step, n))

    # -- life cycle

    def close(self) -> None:
        """Close the file (and delete the temporary decompressed copy). Idempotent."""
        with self._lock:
            if self._fd is not None and self._pid == os.getpid():
                os.close(self._fd)
            self._fd = None
            if self._fobj is not None:
                self._fobj.close()
                self._fobj = None
            if self._tmp is not None and self._pid == os.getpid():
                with contextlib.suppress(OSError):
                    os.remove(self._tmp)
                self._tmp = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_lock"] = None
        state["_fd"] = None
        state["_fobj"] = None
        # A copy in another process must not delete the owner's temporary file.
        state["_owner_tmp"] = state.pop("_tmp")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        owner_tmp = state.pop("_owner_tmp")
        self.__dict__.update(state)
        self._tmp = None
        self._lock = threading.Lock()
        if owner_tmp is not None:
            self._data_path = owner_tmp

    def __repr__(self) -> str:
        extra = f" decompressed from {self.compression}" if self.compression else ""
        return f"<TFRecordFile {self.path!r} records={len(self)}{extra}>"
