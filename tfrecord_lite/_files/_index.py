"""Random access to the records of a TFRecord file: :class:`TFRecordFile`.

Index files (the text format shared with vahidk/tfrecord and NVIDIA DALI, and the
binary index of compressed files) are :mod:`tfrecord_lite._files._indexfile`'s;
their names are also importable from here.

Compressed files
----------------
A GZIP/ZLIB file is read through its seek points
(:mod:`tfrecord_lite._files._gzindex`, :mod:`tfrecord_lite._files._gzread`):
``f[i]`` inflates from the nearest seek point before record ``i``. The seek
points come from the file's binary index (:func:`create_index`), checked against
the file (size, and a hash of its first and last 64 KiB), or, without one, from
one streaming pass when the ``TFRecordFile`` is made, kept in memory (32 KiB a
seek point, every 4 MiB of output, plus 8 bytes a record). ``decompress=True``
decompresses the file once into a temporary file and reads that instead.
Offsets are those of the *decompressed* stream; nothing is ever read at a
compressed offset as if it were plain.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
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
from . import _fs, _gzindex
from ._gzread import GzRanges, SeekPointError
from ._handles import Closing, open_binary
from ._indexfile import (
    RandomAccessError,
    StaleIndexError,
    check_gz_index,
    check_index,
    create_index,
    default_index_path,
    find_index,
    load_index,
    read_index,
    scan_plain,
    write_index,
)
from ._options import compression_name
from ._sniff import detect_compression
from ._stream import read_records

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

#: Bytes of decompressed records written at a time by ``decompress=True``.
_SCAN_BLOCK = 1024 * 1024
#: At most this many bytes are read at once for a run of consecutive records.
_MAX_SPAN = 16 * 1024 * 1024


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

    A GZIP/ZLIB file is read through seek points: from its binary index
    (:func:`create_index`; checked against the file's size and a hash of its head
    and tail, :class:`StaleIndexError` if it does not match), or from one streaming
    pass on opening, kept in memory. ``f[i]`` inflates from the nearest seek point
    before record ``i`` (at most about 4 MiB of output); reads that follow each
    other go on from where the last one stopped. Offsets and lengths are those of
    the decompressed stream; their record CRCs are checked even with
    ``verify=False``. A remote (URL) compressed file needs its index file (else
    :class:`RandomAccessError`). ``decompress=True`` instead decompresses the file
    once into a temporary file (deleted on :meth:`close`) and reads that.

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
        self._gz: Optional[GzRanges] = None
        comp = self._compression_arg
        if comp == "auto":
            comp = detect_compression(_fs.head(self.path, 16))
        self.compression = comp
        self._data_path = self.path
        if comp and decompress:
            self._tmp = self._decompress_to_temp(comp)
            self._data_path = self._tmp
        self.index_path: Optional[str] = (
            _fs.bind(index_path, storage_options if _fs.is_url(os.fspath(index_path)) else None)
            if index_path is not None
            else find_index(self.path)
        )
        if comp and not decompress:
            self._bounds = self._open_compressed(comp)
            self._check_headers()
            return
        size = self._size()
        if self.index_path is not None:
            table = read_index(self.index_path, data_size=size)
            check_index(table, size, self.path, self.index_path)
            offsets = np.ascontiguousarray(table[:, 0])
            self._bounds = np.append(offsets, np.int64(size)).astype(np.int64)
            self._check_headers()
        else:
            offs = array("q")
            for offset, _ in scan_plain(self._data_path):
                offs.append(offset)
            offsets = np.frombuffer(offs, dtype=np.int64) if len(offs) else np.zeros(0, np.int64)
        # Record i spans bounds[i]..bounds[i+1].
        self._bounds = np.append(offsets, np.int64(size)).astype(np.int64)

    def _open_compressed(self, comp: str) -> np.ndarray:
        """The record bounds of a compressed file, from its binary index (checked
        against the file) or one pass over it; sets up reading from seek points."""
        size = _fs.size(self.path)
        index: Optional[_gzindex.GzIndex] = None
        table: Optional[np.ndarray] = None
        if self.index_path is not None:
            loaded = load_index(self.index_path)
            if isinstance(loaded, _gzindex.GzIndex):
                if loaded.compression != comp:
                    raise StaleIndexError(
                        f"stale index: {self.index_path!r} is the index of a "
                        f"{loaded.compression} file and {self.path!r} is {comp}; rebuild it "
                        "with create_index()",
                        path=self.index_path,
                    )
                check_gz_index(loaded, self.path, size, self.index_path)
                index = loaded
            else:
                table = loaded
        if index is None:
            if _fs.is_url(self.path):
                raise RandomAccessError(
                    f"random access into a remote {comp} file needs its index (seek points): "
                    f"none was found next to {self.path!r}. Write one with create_index(), "
                    "or pass decompress=True to decompress the file once into a temporary "
                    "file",
                    path=self.path,
                )
            index = _gzindex.build(self.path, comp)
            if table is not None:  # a text index: it must list the records found
                assert self.index_path is not None
                bounds = index.offsets()
                if table.shape[1] == 1:
                    ends = np.append(table[1:, 0], np.int64(index.total_out))
                    table = np.stack([table[:, 0], ends - table[:, 0]], axis=1)
                check_index(table, index.total_out, self.path, self.index_path)
                if len(table) != len(index.lengths) or (table[:, 0] != bounds[:-1]).any():
                    raise StaleIndexError(
                        f"stale index: {self.index_path!r} does not list the records of "
                        f"{self.path!r}; rebuild it with create_index()",
                        path=self.index_path,
                    )
        self._gz = GzRanges(index, self._pread)
        return index.offsets()

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
        if self._gz is not None:
            return self._gz.index.total_out
        return _fs.size(self._data_path)

    @property
    def _crc(self) -> bool:
        """Whether record CRCs are checked: with ``verify``, and always for records
        inflated from a seek point (a damaged window inflates to plausible bytes)."""
        return self.verify or self._gz is not None

    # -- low-level reads

    def _pread(self, start: int, n: int) -> bytes:
        """Up to ``n`` bytes of the file at ``start`` (fewer at its end)."""
        if self._pid != os.getpid():  # forked: do not share the parent's file offset
            self._fd = None
            self._fobj = None
            self._pid = os.getpid()
        if _fs.is_url(self._data_path):
            return _fs.read_range(self._data_path, start, n)  # one ranged request
        if hasattr(os, "pread"):
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
            return parts[0] if len(parts) == 1 else b"".join(parts)
        with self._lock:
            if self._fobj is None:
                self._fobj = open_binary(self._data_path, "rb")
            self._fobj.seek(start)
            return self._fobj.read(n)

    def _read(self, start: int, n: int) -> bytes:
        if self._gz is None:
            data = self._pread(start, n)
        else:
            try:
                data = self._gz.read(start, n)
            except SeekPointError as err:
                raise self._bad_point(err, start) from None
        if len(data) != n:
            if self._gz is not None and self.index_path is not None:
                raise StaleIndexError(
                    f"stale index: the decompressed stream of {self.path!r} is shorter than "
                    f"its index {self.index_path!r} says ({len(data)} of {n} bytes at "
                    f"decompressed byte {start}); rebuild it with create_index()",
                    path=self.index_path,
                    offset=start,
                )
            raise TruncatedRecordError(
                f"the file is shorter than its index says ({len(data)} of {n} bytes at "
                f"byte {start}); it changed since it was indexed",
                expected=n,
                available=len(data),
                path=self.path,
                offset=start,
            )
        return data

    def _bad_point(self, err: SeekPointError, start: int) -> StaleIndexError:
        where = repr(self.index_path) if self.index_path else "the index built on opening"
        return StaleIndexError(
            f"seek point {err.point} of {where} does not fit {self.path!r}: {err}; the index "
            "is damaged or not this file's (rebuild it with create_index()), or the file "
            "is corrupt",
            path=self.index_path or self.path,
            offset=start,
        )

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
            out = list(iter_records(buf, verify=self._crc, offset=start, index=first))
        except TruncatedRecordError as err:
            raise self._stale(first, count, err) from None
        except CorruptRecordError as err:
            if self._gz is not None and self.index_path is not None:
                raise StaleIndexError(
                    f"{err.message}, in bytes inflated through the index {self.index_path!r} "
                    "(decompressed offsets): the index is damaged or not this file's "
                    "(rebuild it with create_index()), or the file is corrupt",
                    path=self.index_path,
                    offset=err.offset,
                    index=err.index,
                ) from None
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
            path=self.index_path if self._gz is not None and self.index_path else self.path,
            offset=start,
            index=first,
        )

    def _read_one(self, k: int) -> bytes:
        """Record ``k``: one read, both CRCs checked at once (``unframe``); anything
        unexpected goes through :meth:`_decode`, which raises the precise error."""
        start, end = int(self._bounds[k]), int(self._bounds[k + 1])
        buf = self._read(start, end - start)
        data = unframe(buf) if self._crc else None
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

        Consecutive indices are read with one system call per run. In a GZIP/ZLIB
        file, records with no seek point between them are read as one run too: the
        bytes between them are inflated either way.
        """
        ks = [self._norm(i) for i in indices]
        if not ks:
            return []
        order = sorted(range(len(ks)), key=ks.__getitem__)
        out: list[Optional[bytes]] = [None] * len(ks)
        together = self._together()
        pos = 0
        while pos < len(order):
            # A run of consecutive (or repeated) record numbers in sorted order.
            first = ks[order[pos]]
            end = pos + 1
            while end < len(order) and together(first, ks[order[end - 1]], ks[order[end]]):
                end += 1
            last = ks[order[end - 1]]
            records = self._read_run(first, last + 1)
            for p in range(pos, end):
                out[order[p]] = records[ks[order[p]] - first]
            pos = end
        return out  # type: ignore[return-value]

    def _together(self) -> Callable[[int, int, int], bool]:
        """Whether record ``k`` joins the run of records ``first..prev`` (sorted) that
        :meth:`get_many` reads at once: it follows ``prev``, or (compressed) no seek point
        lies between them and the run stays under 16 MiB, unless the span is one the
        cache of inflated spans keeps (then each record is a slice of it)."""
        gz = self._gz
        bounds = self._bounds
        if gz is None:
            return lambda first, prev, k: k - prev in (0, 1)

        def together(first: int, prev: int, k: int) -> bool:
            if k - prev in (0, 1):
                return True
            if gz.caches(int(bounds[first])):
                return False  # each read is a slice of the span the cache keeps
            if int(bounds[k + 1]) - int(bounds[first]) > _MAX_SPAN:
                return False
            return gz.point_before(int(bounds[prev + 1])) == gz.point_before(int(bounds[k]))

        return together

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
            if self._gz is not None:
                self._gz.drop()
            if self._tmp is not None and self._pid == os.getpid():
                with contextlib.suppress(OSError):
                    os.remove(self._tmp)
                self._tmp = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_lock"] = None
        state["_fd"] = None
        state["_fobj"] = None
        state["_gz"] = None if self._gz is None else self._gz.index
        # A copy in another process must not delete the owner's temporary file.
        state["_owner_tmp"] = state.pop("_tmp")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        owner_tmp = state.pop("_owner_tmp")
        self.__dict__.update(state)
        self._tmp = None
        self._lock = threading.Lock()
        if self._gz is not None:
            self._gz = GzRanges(state["_gz"], self._pread)
        if owner_tmp is not None:
            self._data_path = owner_tmp

    def __repr__(self) -> str:
        if self._gz is not None:
            extra = f" {self.compression}, {len(self._gz.index.points)} seek points"
        else:
            extra = f" decompressed from {self.compression}" if self.compression else ""
        return f"<TFRecordFile {self.path!r} records={len(self)}{extra}>"
