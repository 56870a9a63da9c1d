"""TFRecord files: writing and reading, plain, GZIP and ZLIB.

This is the I/O layer: it opens files, compresses and decompresses, and feeds
bytes to the sans-I/O :mod:`tfrecord_lite._record._framing` layer. Names and options
mirror TensorFlow's ``tf.io.TFRecordWriter``, ``tf.io.TFRecordOptions`` and
``tf.compat.v1.io.tf_record_iterator``.

Compression (TensorFlow's ``ZlibCompressionOptions``): the whole file is one
deflate stream over the framed records. ``"ZLIB"`` is RFC 1950 (zlib header,
e.g. ``78 9c``); ``"GZIP"`` is one RFC 1952 member with mtime 0 and OS byte 3,
exactly as TensorFlow writes it. Readers also accept concatenated gzip members.

Auto-detection (``compression="auto"``, the readers' default), per file, from
its first bytes: a valid plain record header (its length CRC verifies) means
plain, even if the bytes could also start a gzip or zlib stream; otherwise the
gzip magic ``1f 8b`` means GZIP and a valid zlib header (CMF method 8, check
bits) means ZLIB; anything else is read as plain, so its error says so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import os
import secrets
import stat
import struct
import threading
import weakref
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import length_hint
from typing import IO, Any, Callable, Optional, Union, cast

from .._errors import (
    ClosedError,
    CompressionError,
    CorruptRecordError,
    DataLossError,
    GraphOnlyError,
    TFRecordError,
    TruncatedRecordError,
)
from .._record import (
    HEADER_SIZE,
    RECORD_OVERHEAD,
    Damage,
    FramedRecords,
    Item,
    RecordDecoder,
    SkipReport,
    as_buffer,
    check_max_record_size,
    check_on_error,
    crc32c,
    crc32c_combine,
    find_next_record_in_file,
    frame_parts,
    header_error,
    located,
    mask,
    record_header,
    salvage,
    truncated_error,
    warn_skip,
)
from . import _fs
from ._compress import INFLATE_CHUNK as INFLATE_CHUNK  # bounds every inflate call
from ._compress import StreamEnd as _StreamEnd
from ._compress import compressobj
from ._compress import inflate as _inflate
from ._compress import inflate_ahead as _inflate_ahead
from ._paths import PathOrFile, expand_paths, is_file_object

__all__ = [
    "TFRecordCompressionType",
    "TFRecordOptions",
    "TFRecordReader",
    "TFRecordWriter",
    "detect_compression",
    "open",
    "tf_record_iterator",
]

_builtin_open = open

#: TensorFlow's default zlib buffer sizes (``ZlibCompressionOptions``).
DEFAULT_BUFFER_SIZE = 256 * 1024
#: Block size for reading plain files.
READ_BLOCK_SIZE = 1024 * 1024
#: GZIP/ZLIB readers with ``max_record_size=None`` buffer at most this many bytes of
#: one record: a length field claiming more is a RecordTooLargeError once that much
#: of it has been decompressed (so a deflate bomb cannot take the memory it claims).
DEFAULT_MAX_COMPRESSED_RECORD = 256 * 1024 * 1024

#: Records framed together by TFRecordWriter.write_all.
_FRAME_CHUNK = 4096
_GZIP_MAGIC = b"\x1f\x8b"
_U32 = struct.Struct("<I")
_COMPRESSIONS = ("", "ZLIB", "GZIP")


class TFRecordCompressionType:
    """Compression types, as ``tf.io.TFRecordCompressionType``."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_TYPE_NAMES = {
    TFRecordCompressionType.NONE: "",
    TFRecordCompressionType.ZLIB: "ZLIB",
    TFRecordCompressionType.GZIP: "GZIP",
}


def _compression_name(value: object, *, allow_auto: bool) -> str:
    """Normalise a compression argument to "", "ZLIB", "GZIP" (or "auto")."""
    if value is None:
        return ""
    if isinstance(value, TFRecordOptions):
        return value.compression_type
    if isinstance(value, bool):
        raise TypeError("compression must be None, a string or TFRecordOptions, got bool")
    if isinstance(value, int):
        if value in _TYPE_NAMES:
            return _TYPE_NAMES[value]
    elif isinstance(value, str):
        upper = value.strip().upper()
        if upper in ("", "NONE"):
            return ""
        if upper in ("ZLIB", "GZIP"):
            return upper
        if upper == "AUTO":
            if allow_auto:
                return "auto"
            raise ValueError(
                'compression="auto" is for readers; a writer needs "", "GZIP" or "ZLIB"'
            )
    else:
        raise TypeError(
            f"compression must be None, a string or TFRecordOptions, got {type(value).__name__}"
        )
    allowed = '"", "GZIP", "ZLIB"' + (', "auto"' if allow_auto else "")
    raise ValueError(f"Not a valid compression_type: {value!r}; expected one of {allowed}")


def reader_compression(value: object) -> str:
    """A reader's compression argument: ``None`` means "not given", i.e. ``"auto"``.

    One meaning in every reader (``TFRecordReader``, ``tf_record_iterator``,
    ``read_records``, ``open``, ``TFRecordDataset``): ``None`` and ``"auto"`` detect
    the compression per file; ``""``/``"NONE"`` (or ``TFRecordOptions()``) insist
    on an uncompressed file. See docs/tensorflow-behaviour.md for why.
    """
    return "auto" if value is None else _compression_name(value, allow_auto=True)


def _wrong_compression(err: TFRecordError, used: str, found: str) -> TFRecordError:
    """``err`` (raised at the start of a file) with a hint: the file looks ``found``."""
    what = f"{found}-compressed" if found else "uncompressed"
    fix = f'compression_type="{found}"' if found else 'compression_type=""'
    hint = (
        f"; the file looks {what}, but it was read as {used or 'uncompressed'}: "
        f'read it with {fix} (or "auto", which detects it)'
    )
    new = type(err).__new__(type(err))
    new.__dict__.update(err.__dict__)
    TFRecordError.__init__(
        new, err.message + hint, path=err.path, offset=err.offset, index=err.index
    )
    return new


def _check_range(name: str, value: Optional[int], low: int, high: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")


class TFRecordOptions:
    """Options for TFRecord files, as ``tf.io.TFRecordOptions``.

    ``compression_type`` is ``None``/``""``, ``"ZLIB"`` or ``"GZIP"`` (or a
    :class:`TFRecordCompressionType` value). The zlib settings default to
    TensorFlow's: level -1 (zlib's 6), window bits 15, memory level 9, strategy 0,
    256 KiB buffers.
    """

    compression_type_map = _TYPE_NAMES

    def __init__(
        self,
        compression_type: Union[str, int, None] = None,
        flush_mode: Optional[int] = None,
        input_buffer_size: Optional[int] = None,
        output_buffer_size: Optional[int] = None,
        window_bits: Optional[int] = None,
        compression_level: Optional[int] = None,
        compression_method: Optional[int] = None,
        mem_level: Optional[int] = None,
        compression_strategy: Optional[int] = None,
    ) -> None:
        self.compression_type = _compression_name(compression_type, allow_auto=False)
        _check_range("compression_level", compression_level, -1, 9)
        _check_range("mem_level", mem_level, 1, 9)
        _check_range("compression_strategy", compression_strategy, 0, 4)
        _check_range("input_buffer_size", input_buffer_size, 1, 2**31)
        _check_range("output_buffer_size", output_buffer_size, 1, 2**31)
        if window_bits is not None:
            _check_range("window_bits", window_bits, 8, 31)
            if 15 < window_bits < 24:
                raise ValueError(
                    f"window_bits must be 8..15 (or 24..31 meaning gzip), got {window_bits}"
                )
        if compression_method is not None and compression_method != zlib.DEFLATED:
            raise ValueError(
                f"compression_method must be {zlib.DEFLATED} (deflate), got {compression_method}"
            )
        allowed_flush = (
            zlib.Z_NO_FLUSH,
            zlib.Z_PARTIAL_FLUSH,
            zlib.Z_SYNC_FLUSH,
            zlib.Z_FULL_FLUSH,
        )
        if flush_mode is not None and flush_mode not in allowed_flush:
            raise ValueError(f"flush_mode must be one of {allowed_flush}, got {flush_mode}")
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options: Union[TFRecordOptions, str, int, None]) -> str:
        """Return ``""``, ``"ZLIB"`` or ``"GZIP"`` for options or a compression type."""
        return _compression_name(options, allow_auto=False)

    def _wbits(self) -> int:
        bits = 15 if self.window_bits is None else self.window_bits
        bits = bits - 16 if bits > 15 else bits
        bits = max(bits, 9)  # zlib rejects 8 for deflate; TensorFlow's zlib raises it to 9 too
        return bits + 16 if self.compression_type == "GZIP" else bits

    def _compressobj(self) -> Any:
        # The backend (ISA-L when installed, else zlib) is chosen in _compress.
        zobj, _ = compressobj(
            -1 if self.compression_level is None else self.compression_level,
            self._wbits(),
            9 if self.mem_level is None else self.mem_level,
            0 if self.compression_strategy is None else self.compression_strategy,
            self.flush_mode or zlib.Z_NO_FLUSH,
        )
        return zobj

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if v is not None and v != "")
        return f"TFRecordOptions({fields})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TFRecordOptions) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]


def _as_options(compression: object, options: object) -> TFRecordOptions:
    if compression is not None and options is not None:
        raise TypeError("pass either compression= or options=, not both")
    value = options if options is not None else compression
    if isinstance(value, TFRecordOptions):
        return value
    return TFRecordOptions(compression_type=_compression_name(value, allow_auto=False))


def detect_compression(head: bytes) -> str:
    """Guess a file's compression from its first bytes: ``""``, ``"GZIP"`` or ``"ZLIB"``.

    At least 12 bytes should be given (fewer are read as plain, which then fails
    as a truncated record).
    """
    if len(head) >= HEADER_SIZE:
        (stored,) = _U32.unpack_from(head, 8)
        if mask(crc32c(head[:8])) == stored:
            return ""
    if head[:2] == _GZIP_MAGIC:
        return "GZIP"
    if (
        len(head) >= 2
        and head[0] & 0x0F == 8
        and head[0] >> 4 <= 7
        and (head[0] << 8 | head[1]) % 31 == 0
    ):
        return "ZLIB"
    return ""


def _open_binary(path: str, mode: str, buffering: int = -1) -> IO[bytes]:
    if _fs.is_url(path):  # fsspec URLs: see tfrecord_lite._files._fs
        if mode.replace("b", "") == "r":
            return _fs.open_read(path)
        if mode.replace("b", "") == "w":
            return _fs.open_write(path).file
        raise ValueError(f"mode {mode!r} is not supported for the URL {path!r}")
    return _builtin_open(path, mode, buffering=buffering)


def _is_local_file(f: object) -> bool:
    """Whether ``f`` reads a regular file of this machine (not a pipe, socket or URL)."""
    try:
        return stat.S_ISREG(os.fstat(f.fileno()).st_mode)  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return False


def _describe(source: object) -> Optional[str]:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else None


# --------------------------------------------------------------------------- writer


class TFRecordWriter:
    """Write records to a TFRecord file, as ``tf.io.TFRecordWriter``.

    >>> with TFRecordWriter("train.tfrecord", "GZIP") as w:     # doctest: +SKIP
    ...     w.write(example.SerializeToString())

    ``path`` is a ``str``/``os.PathLike`` (the file is created or truncated) or an
    open binary file object (written from its current position and left open by
    :meth:`close`). ``compression`` is ``None``/``""``, ``"GZIP"``, ``"ZLIB"`` or a
    :class:`TFRecordOptions`; ``options=`` is accepted as TensorFlow's keyword.

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
        storage_options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self._lock = threading.Lock()
        self._file: Optional[IO[bytes]] = None
        # Until a clean close(): a local temporary path (atomic=True), or the pending
        # upload of a URL (atomic=True, or mode="a": the object is rewritten).
        self._tmp_path: Union[str, _fs.Output, None] = None
        self._pid = os.getpid()
        self.records_written = 0
        #: With ``mode="a", repair=True``: what was cut off the damaged tail, if anything.
        self.repaired: Optional[SkipReport] = None
        self._options = _as_options(compression, options)
        self.compression = self._options.compression_type
        self.path = _describe(path)
        self._owns_file = not is_file_object(path)
        append = _writer_mode(mode) == "a"
        if not isinstance(atomic, bool) or not isinstance(repair, bool):
            raise TypeError("atomic and repair must be True or False")
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
                        self.repaired = _copy_for_append(target, out, self.compression, repair)
                except BaseException:
                    out.discard()
                    raise
                self._tmp_path = out
                self._file = out.file
                self._final_path = target
            elif append:
                self.repaired = _prepare_append(target, self.compression, repair)
                self._file = _open_binary(target, "ab", buffering=0)
            elif atomic:
                self._tmp_path = _temp_path(target)
                self._file = _builtin_open(self._tmp_path, "xb", buffering=0)
                self._final_path = target
            else:
                self._file = _open_binary(target, "wb", buffering=0)
        else:
            if atomic or append:
                raise ValueError(
                    "atomic=True and mode='a' need a file path: a file object is written "
                    "from its current position"
                )
            self._file = path  # type: ignore[assignment]
        self._zobj = self._options._compressobj() if self.compression else None
        self._flush_mode = self._options.flush_mode or zlib.Z_NO_FLUSH
        self._buffer_size = self._options.output_buffer_size or DEFAULT_BUFFER_SIZE
        self._parts: list[Union[bytes, memoryview]] = []
        self._pending = 0
        _OPEN_WRITERS.add(self)

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
        with self._lock:
            self._check_open()
            self._append(data)

    def write_all(self, records: Iterable[Union[bytes, bytearray, memoryview]]) -> int:
        """Append every record of an iterable; return how many were written."""
        count = 0
        with self._lock:
            self._check_open()
            if self._flush_mode != zlib.Z_NO_FLUSH:
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

    def _append(self, data: Union[bytes, bytearray, memoryview]) -> None:
        if not isinstance(data, bytes):
            # Buffered until the next drain: copy, so that a caller reusing its
            # bytearray / memoryview cannot change a record after its CRC was taken.
            data = bytes(data)
        header = record_header(len(data))
        footer = _U32.pack(mask(crc32c(data)))
        parts = self._parts
        parts.append(header)
        parts.append(data)
        parts.append(footer)
        self._pending += len(data) + 16
        self.records_written += 1
        if self._flush_mode != zlib.Z_NO_FLUSH:
            self._drain(self._flush_mode)
        elif self._pending >= self._buffer_size:
            self._drain(None)

    def _drain(self, zlib_flush: Optional[int]) -> None:
        f = self._file
        assert f is not None
        if self._parts:
            parts = self._parts
            blob = parts[0] if len(parts) == 1 else b"".join(parts)
            self._parts = []
            self._pending = 0
            if self._zobj is not None:
                blob = self._zobj.compress(blob)
            if blob:
                _write_all(f, blob)
        if self._zobj is not None and zlib_flush is not None:
            _write_all(f, self._zobj.flush(zlib_flush))

    def flush(self, *, fsync: bool = False) -> None:
        """Write out everything buffered so far.

        After ``flush()``, another reader of the file sees every record written so
        far, for compressed files too (the deflate stream is sync-flushed), and a
        crash of this process loses none of them. ``fsync=True`` also asks the
        operating system to put them on disk (survives a power cut). With
        ``atomic=True`` the records are in the temporary file until :meth:`close`.
        """
        with self._lock:
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
        with self._lock:
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
                _close_quietly(zobj)  # a threaded deflate's threads stop here
                self._tmp_path = None
                if self._owns_file:
                    f.close()
                if tmp is not None:
                    _commit(tmp, self._final_path, done)

    def _discard(self) -> None:
        """Close an atomic writer without committing: its temporary file is removed."""
        with self._lock:
            f, tmp = self._file, self._tmp_path
            if f is None or tmp is None:
                return
            self._file = None
            zobj, self._zobj = self._zobj, None
            _close_quietly(zobj)
            self._tmp_path = None
            self._parts = []
            try:
                f.close()
            finally:
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


def _copy_for_append(
    url: str, out: _fs.Output, compression: str, repair: bool
) -> Optional[SkipReport]:
    """``mode="a"`` on a URL: the object is downloaded to a temporary file, checked (and
    repaired) as a local file would be, and copied into the new upload ``out``."""
    local = _fs.download_to_temp(url)
    if local is None:
        return None  # a new object
    try:
        try:
            report = _prepare_append(local, compression, repair)
        except TFRecordError as err:
            moved = type(err).__new__(type(err))
            moved.__dict__.update(err.__dict__)
            TFRecordError.__init__(
                moved,
                err.message.replace(repr(local), repr(str(url))),
                path=url,
                offset=err.offset,
                index=err.index,
            )
            raise moved from None
        except ValueError as err:
            raise ValueError(str(err).replace(repr(local), repr(str(url)))) from None
        if report is not None:
            error = report.error.with_location(path=url) if report.error is not None else None
            report = dataclasses.replace(report, path=str(url), error=error)
        with _builtin_open(local, "rb") as f:
            while True:
                block = f.read(_fs.REMOTE_BLOCK_SIZE)
                if not block:
                    break
                _write_all(out.file, block)
    finally:
        os.unlink(local)
    return report


def _prepare_append(path: str, compression: str, repair: bool) -> Optional[SkipReport]:
    """Check that ``path`` can be continued; with ``repair``, cut off a damaged tail."""
    if compression == "ZLIB":
        raise ValueError(
            "mode='a' works for plain and GZIP files: a ZLIB stream cannot be continued "
            "(readers ignore anything after its end)"
        )
    if repair and compression:
        raise ValueError("repair=True works for uncompressed files only")
    try:
        f = _builtin_open(path, "rb", buffering=1024 * 1024)
    except FileNotFoundError:
        return None  # a new file
    with f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return None
        found = detect_compression(f.read(HEADER_SIZE))
        if found != compression:
            raise ValueError(
                f"cannot append {compression or 'uncompressed'} records to {path!r}: "
                f"it is {found + '-compressed' if found else 'uncompressed'}"
            )
        if compression:  # GZIP: the whole stream must read cleanly
            f.seek(0)
            for _ in read_records(f, compression, buffer_size=READ_BLOCK_SIZE):
                pass
            return None
        problem = _check_plain_tail(f, size)
        if problem is None:
            return None
        start, index, damage, reason = problem
        err = damage.with_location(path=path)
        if not repair:
            raise err
        following = find_next_record_in_file(f, start + 1, stream_size=size)
        if following is not None:
            raise DataLossError(
                f"cannot repair {path!r} for appending: the damage at byte {start} is "
                f"followed by intact records (the next at byte {following}); cutting the "
                "file there would lose them. Read it with on_error='skip' and rewrite it",
                path=path,
                offset=start,
                index=index,
            ) from err
    with _builtin_open(path, "r+b") as g:
        g.truncate(start)
        g.flush()
        os.fsync(g.fileno())
    return SkipReport(path, start, size - start, reason, index, err, to_end=True)


def _check_plain_tail(f: IO[bytes], size: int) -> Optional[tuple[int, int, DataLossError, str]]:
    """Walk the record headers of a plain file: (start, index, error, reason) of the
    first problem, or None when it is whole records up to its end (the last one's
    data CRC checked too). Reads 12 bytes per record, plus the last record."""
    pos = 0
    index = 0
    last: Optional[tuple[int, int]] = None
    while pos < size:
        f.seek(pos)
        head = f.read(HEADER_SIZE)
        if len(head) < HEADER_SIZE:
            return (
                pos,
                index,
                truncated_error("header", HEADER_SIZE, len(head), pos, index),
                "truncated",
            )
        length, stored = struct.unpack("<QI", head)
        if mask(crc32c(head[:8])) != stored:
            return pos, index, header_error(head, 0, stored, index, pos), "header"
        end = pos + RECORD_OVERHEAD + length
        if end > size:
            have = size - pos
            what = "data" if have < HEADER_SIZE + length else "footer"
            err = truncated_error(what, RECORD_OVERHEAD + length, have, pos, index)
            return pos, index, err, "truncated"
        last = (pos, length)
        pos = end
        index += 1
    if last is not None:
        start, length = last
        f.seek(start + HEADER_SIZE)
        crc = 0
        left = length
        while left:
            piece = f.read(min(left, READ_BLOCK_SIZE))
            if not piece:  # pragma: no cover - the file shrank under us
                break
            crc = (
                crc32c_combine(crc, crc32c(piece), len(piece)) if left != length else crc32c(piece)
            )
            left -= len(piece)
        (stored,) = _U32.unpack(f.read(4))
        if mask(crc) != stored:
            bad = CorruptRecordError(
                f"corrupted record: the CRC32C of the last record's {length} data bytes "
                "does not match; the file is damaged",
                part="data",
                offset=start + HEADER_SIZE,
                index=index - 1,
            )
            return start, index - 1, bad, "data"
    return None


def _after_fork_in_child() -> None:
    # Writers inherited from the parent refuse to write (see _check_open): their
    # buffers hold the parent's records, which must not be written twice.
    for writer in list(_OPEN_WRITERS):
        writer._tmp_path = None  # never remove the parent's temporary file


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _write_all(f: IO[bytes], data: Union[bytes, bytearray, memoryview]) -> None:
    """``f.write(data)``, repeated until every byte is written.

    A raw file (``open(..., buffering=0)``, or one passed in) may write fewer bytes
    than asked: Linux writes at most 2**31 - 4096 bytes per call, pipes and signals
    cut writes short. Objects whose ``write`` returns ``None`` are taken to have
    written everything.
    """
    view = memoryview(data)
    while view:
        n = f.write(view)
        if n is None or n >= len(view):
            return
        view = view[n:]


# --------------------------------------------------------------------------- reader


def _read_blocks(
    f: IO[bytes], size: Union[int, list[int]], expected: Optional[int] = None
) -> Iterator[bytes]:
    """Blocks of ``size`` bytes; when the file's size is known, no read asks for more
    than it holds (``read(n)`` allocates ``n`` bytes first), and a file that grows
    meanwhile is read on. ``size`` may be a one-item list that the caller changes as
    it goes (each read takes its current value)."""
    sizes = size if isinstance(size, list) else [size]
    read = f.read
    left = expected
    while True:
        n = sizes[0]
        if left is None:
            block = read(n)
        elif left > 0:
            block = read(min(n, left))
            left -= len(block)
        else:  # at the expected end: a small read tells whether the file grew
            block = read(min(n, 4096))
            left = None
        if not block:
            return
        yield block


#: Reading records for the parser (spans), a plain file's blocks grow up to this
#: size while records are big, so that a block holds about :data:`_SPAN_RECORDS`
#: records: fewer pieces to join and fewer tails read twice.
_SPAN_BLOCK_MAX = 4 << 20
_SPAN_RECORDS = 64


_EXHAUSTED: Iterator[bytes] = iter(())


class _ListHandout:
    """``next()`` and ``for`` for the readers: records come from the current list a decoder made.

    The records of the current list are handed out by one shared list iterator
    (``_it``), whose ``next()`` is atomic: threads sharing a reader each get
    different records, and a ``for`` loop runs at C speed (``iter()`` returns a
    chain over the lists, not ``self``). :attr:`index` is derived from how far
    that iterator has gone, so nothing is counted per record.

    A subclass calls :meth:`_init_handout`, sets ``_closed``, ``_lock`` and ``path``,
    and provides :meth:`_next_list` (which sets ``index`` to 0 when it opens a file).
    """

    _batch: list[bytes]
    _it: Iterator[bytes]
    _base: int
    _closed: bool
    _lock: threading.RLock
    path: Optional[str]

    def _init_handout(self) -> None:
        self._batch = []  # the decoder's current list ...
        self._it = _EXHAUSTED  # ... handed out by this iterator
        self._base = 0  # records of this file before ``_batch``

    def _next_list(self) -> list[bytes]:
        """The next non-empty list of records (``StopIteration`` when there is none)."""
        raise NotImplementedError

    @property
    def index(self) -> int:
        """Records handed out from :attr:`path` so far."""
        return self._base + len(self._batch) - length_hint(self._it)

    @index.setter
    def index(self, value: int) -> None:
        self._base = value - len(self._batch) + length_hint(self._it)

    def _refill(self, spent: Iterator[bytes]) -> Iterator[bytes]:
        """The list iterator to take records from once ``spent`` ran out.

        ``StopIteration`` at the end; ``ClosedError`` after :meth:`close`.
        """
        with self._lock:
            if self._it is not spent:  # another thread got the next list meanwhile
                return self._it
            if self._closed:
                raise ClosedError("Reader is closed.", path=self.path)
            self._base += len(self._batch)
            self._batch, self._it = [], _EXHAUSTED
            batch = self._next_list()  # may open the next file (and set index to 0)
            self._batch, self._it = batch, iter(batch)
            return self._it

    def _drop_list(self) -> None:
        """Forget the current list (on close): loops running over it stop at once."""
        it = self._it
        self._base += len(self._batch) - length_hint(it)
        self._batch, self._it = [], _EXHAUSTED
        for _ in it:  # a ``for`` loop elsewhere holds it: exhaust it
            pass

    def _lists(self) -> Iterator[Iterator[bytes]]:
        it = self._it
        while True:
            yield it
            try:
                it = self._refill(it)
            except StopIteration:
                return

    def __iter__(self) -> Iterator[bytes]:
        return itertools.chain.from_iterable(self._lists())

    def __next__(self) -> bytes:
        it = self._it
        while True:
            for record in it:
                return record
            it = self._refill(it)  # StopIteration ends the iteration


class TFRecordReader(_ListHandout):
    """Read the records of one or more TFRecord files, as ``bytes``.

    >>> with TFRecordReader("data/train-*.tfrecord") as reader:   # doctest: +SKIP
    ...     for record in reader:
    ...         example = tfrecord_lite.train.Example.FromString(record)

    ``paths``: a path, an open binary file, a glob pattern, a directory, a shard
    spec ``name@N``, or a list of those (see :func:`tfrecord_lite.expand_paths`).
    ``compression``: ``"auto"`` or ``None`` (default: detected per file), ``""``
    (uncompressed only), ``"GZIP"``, ``"ZLIB"`` or :class:`TFRecordOptions`; a
    wrong one is an error that names what the file looks like. ``verify=False``
    skips the CRC checks (faster; damaged data then goes unnoticed). Paths may
    be URLs (``s3://``, ``gs://`` ...); ``storage_options`` go to their fsspec
    filesystem (see the README's "Cloud storage").

    Damaged files (see :func:`read_records`): ``on_error="raise"`` (default) raises
    at the first damaged record; ``"skip"`` skips it and resynchronises on the next
    intact record; ``"stop"`` ends that file quietly. Either way every skipped
    stretch is a :class:`~tfrecord_lite.SkipReport`, kept in :attr:`skipped` and
    passed to ``on_skip(report)`` (a :class:`SkippedDataWarning` when no
    ``on_skip`` is given). ``max_record_size`` bounds the bytes one record may claim.

    While iterating, :attr:`path` is the file being read and :attr:`index` the
    number of records yielded from it so far. A reader may be shared between
    threads (each ``next()`` is served whole); separate readers of the same file
    are independent.
    """

    def __init__(
        self,
        paths: Union[PathOrFile, Sequence[PathOrFile], None] = None,
        compression: Union[str, int, TFRecordOptions, None] = "auto",
        *,
        verify: bool = True,
        buffer_size: Optional[int] = None,
        options: Union[str, int, TFRecordOptions, None] = None,
        on_error: str = "raise",
        on_skip: Optional[Callable[[SkipReport], None]] = None,
        max_record_size: Optional[int] = None,
        storage_options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if paths is None:  # TF1's tf.TFRecordReader().read(filename_queue)
            raise GraphOnlyError(
                "TFRecordReader() without files is TensorFlow 1's queue reader "
                "(reader.read(filename_queue)), which needs a graph and a session. "
                "Read the files directly: "
                "`for record in tfr.data.TFRecordDataset(filenames): ...` "
                "(see docs/tf1-queues.md)"
            )
        if options is not None:
            if compression != "auto":
                raise TypeError("pass either compression= or options=, not both")
            compression = options
        self.compression = reader_compression(compression)
        if (
            isinstance(compression, TFRecordOptions)
            and compression.input_buffer_size
            and buffer_size is None
        ):
            buffer_size = compression.input_buffer_size
        _check_range("buffer_size", buffer_size, 1, 2**31)
        self.on_error = check_on_error(on_error)
        self.max_record_size = check_max_record_size(max_record_size)
        _check_callback(on_skip)
        self.files = expand_paths(paths, storage_options=storage_options)
        self.verify = verify
        self.buffer_size = buffer_size or READ_BLOCK_SIZE
        self.path: Optional[str] = None
        self._init_handout()
        #: Every stretch skipped so far (``on_error`` "skip" or "stop"), in order.
        self.skipped: list[SkipReport] = []
        self._on_skip = on_skip
        self._gen: Optional[Iterator[list[bytes]]] = None
        self._closed = False
        self._lock = threading.RLock()

    @property
    def bytes_skipped(self) -> int:
        """Total bytes skipped so far (stretches of unknown length count as 0)."""
        return sum(r.length or 0 for r in self.skipped)

    def _next_list(self) -> list[bytes]:
        if self._gen is None:
            self._gen = self._batches()
        while True:
            batch = next(self._gen)  # StopIteration ends the iteration
            if batch:
                return batch

    def _skipped(self, report: SkipReport) -> None:
        self.skipped.append(report)
        if self._on_skip is None:
            warn_skip(report)
        else:
            self._on_skip(report)

    def _batches(self) -> Iterator[list[bytes]]:
        """Every file's records, a list at a time."""
        for source in self.files:
            self.path = _describe(source)
            self.index = 0
            lists = read_batches(
                source,
                self.compression,
                self.verify,
                self.buffer_size,
                self.on_error,
                self._skipped,
                self.max_record_size,
            )
            yield from cast("Iterator[list[bytes]]", lists)  # (no spans: lists)

    def close(self) -> None:
        """Stop reading and close the current file. Idempotent."""
        with self._lock:
            self._closed = True
            self._drop_list()
            if self._gen is not None:
                gen, self._gen = self._gen, None
                gen.close()  # type: ignore[attr-defined]

    def __enter__(self) -> TFRecordReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<TFRecordReader files={len(self.files)} compression={self.compression!r}>"


def read_records(
    source: PathOrFile,
    compression: Union[str, int, TFRecordOptions, None] = "auto",
    *,
    verify: bool = True,
    buffer_size: int = READ_BLOCK_SIZE,
    on_error: str = "raise",
    on_skip: Optional[Callable[[SkipReport], None]] = None,
    max_record_size: Optional[int] = None,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> Iterator[bytes]:
    """Yield the records of one file (path, URL or binary file object) as ``bytes``.

    ``compression``: ``"auto"`` or ``None`` (detected), ``""``, ``"GZIP"``, ``"ZLIB"``.
    Errors carry the file's name and the record's offset and index.

    ``on_error``: ``"raise"`` (default) raises the first :class:`DataLossError`
    after the records before it. ``"skip"`` reports a damaged record and goes on:
    at the next record when only the data CRC failed, else at the next offset
    where a whole record (header and data CRC) verifies; a truncated tail is
    reported too. A damaged GZIP/ZLIB stream cannot be resynchronised (deflate
    has no sync points): the rest of that file is reported as skipped. ``"stop"``
    ends the file quietly at the first problem, reporting it. Reports are
    :class:`~tfrecord_lite.SkipReport` objects passed to ``on_skip(report)``;
    without ``on_skip`` each is a :class:`~tfrecord_lite.SkippedDataWarning`.

    ``max_record_size``: a record whose length field claims more data bytes is a
    :class:`~tfrecord_lite.RecordTooLargeError` as soon as its header is read
    (with ``"skip"``: skipped unread). ``None`` (default): no limit for plain
    files (a length is checked against the file's size before anything is
    read); for GZIP/ZLIB at most :data:`DEFAULT_MAX_COMPRESSED_RECORD` bytes
    (256 MiB) of one record are buffered before it is refused.
    """
    compression = reader_compression(compression)
    on_error = check_on_error(on_error)
    max_record_size = check_max_record_size(max_record_size)
    _check_callback(on_skip)
    if not is_file_object(source):
        source = _fs.bind(source, storage_options)  # type: ignore[arg-type]
    lists = read_batches(
        source, compression, verify, buffer_size, on_error, on_skip, max_record_size
    )
    return _flatten(cast("Iterator[list[bytes]]", lists))  # (no spans: lists)


def _flatten(batches: Iterator[list[bytes]]) -> Iterator[bytes]:
    for batch in batches:
        yield from batch


def _check_callback(on_skip: object) -> None:
    if on_skip is not None and not callable(on_skip):
        raise TypeError(f"on_skip must be callable, got {type(on_skip).__name__}")


def _reporter(
    on_skip: Optional[Callable[[SkipReport], None]], path: Optional[str]
) -> Callable[[SkipReport], None]:
    def report(rep: SkipReport) -> None:
        rep = located(rep, path)
        if on_skip is None:
            warn_skip(rep)
        else:
            on_skip(rep)

    return report


def read_batches(
    source: PathOrFile,
    compression: str,
    verify: bool,
    buffer_size: int,
    on_error: str,
    on_skip: Optional[Callable[[SkipReport], None]],
    max_record_size: Optional[int],
    spans: bool = False,
    grow: bool = False,
) -> Iterator[Sequence[bytes]]:
    """The records of one file, a list at a time (each list in file order).

    For a parser: with ``spans``, where it can, each list is a
    :class:`~tfrecord_lite._record._scan.RecordSpans` of the block read (no record is
    copied out on its own); with ``grow``, a plain file's blocks grow (up to
    :data:`_SPAN_BLOCK_MAX`) while its records are big, to about
    :data:`_SPAN_RECORDS` records a block.
    """
    path = _describe(source)
    owns = not is_file_object(source)
    f: IO[bytes] = (
        _open_binary(os.fspath(source), "rb", buffering=0)  # type: ignore[arg-type]
        if owns
        else source  # type: ignore[assignment]
    )
    inflating: Optional[Iterator[bytes]] = None  # stopped before the file is closed
    try:
        stream_size = _remaining_size(f) if owns else None
        base = _start_position(f)
        block = [buffer_size]  # the size of the next read
        raw = _read_blocks(f, block, stream_size)
        first = next(raw, b"")
        while 0 < len(first) < HEADER_SIZE:  # make sure detection sees a whole header
            more = next(raw, b"")
            if not more:
                break
            first += more
        requested = compression
        found = detect_compression(first)
        if compression == "auto":
            compression = found
        chunks: Iterator[bytes] = _chain(first, raw)
        if compression:
            # A local file can be read again from any offset: that lets the fast
            # inflater (ISA-L, which cannot be copied) salvage records before damage.
            restart = None if base is None else _rereader(f, base, buffer_size)
            # A big stream is read and inflated in a background thread, ahead of the
            # framing below (the thread owns ``f`` until ``inflating`` is closed).
            size = stream_size if owns else _remaining_size(f)
            chunks = inflating = _inflate_ahead(
                chunks, compression, path, restart, size, _is_local_file(f), parsed=spans
            )
            stream_size = None
        decoder = RecordDecoder(
            verify=verify,
            stream_size=stream_size,
            on_error=on_error,
            on_skip=_reporter(on_skip, path) if on_error != "raise" else None,
            max_record_size=max_record_size,
        )
        if compression and max_record_size is None:
            decoder._soft_limit = DEFAULT_MAX_COMPRESSED_RECORD
        # A plain file can seek past a record skipped for being too large.
        seekable = stream_size is not None and on_error == "skip"
        # A plain file: the next block may start at an incomplete record (no join).
        rewind = stream_size is not None and on_error == "raise"
        grow = grow and rewind
        try:
            try:
                for chunk in chunks:
                    decoder.feed(chunk)
                    yield from _decoded_batches(decoder, spans)
                    if decoder.stopped:
                        break
                    if rewind and len(chunk) == block[0]:
                        back = decoder._release_tail(block[0])
                        if back:
                            f.seek(-back, os.SEEK_CUR)
                    if grow and decoder.index and block[0] < _SPAN_BLOCK_MAX:
                        want = decoder.offset * _SPAN_RECORDS // decoder.index
                        while block[0] < min(want, _SPAN_BLOCK_MAX):
                            block[0] = min(block[0] * 2, _SPAN_BLOCK_MAX)
                    if seekable:
                        ahead = decoder._discard_ahead()
                        if ahead > buffer_size:
                            f.seek(ahead, os.SEEK_CUR)
                            decoder._advance(ahead)
            except _StreamEnd:
                yield from _decoded_batches(decoder)
                if on_error == "raise":
                    decoder.close()  # raises if the cut is inside a record
                cut = TruncatedRecordError(
                    f"the {compression} stream ends before its end marker, after "
                    f"{decoder.index} complete records: the file was cut short or its "
                    "writer was not closed",
                    offset=decoder.offset,
                    index=decoder.index,
                )
                if on_error == "raise":
                    raise cut from None
                yield from _batched(decoder._close(cause=cut, cause_reason="truncated"))
                return
            except CompressionError as err:
                if on_error == "raise":
                    raise
                yield from _decoded_batches(decoder)
                yield from _batched(decoder._close(cause=err, cause_reason="compression"))
                return
            yield from _decoded_batches(decoder)  # a deferred error is raised here
            yield from _batched(decoder.close())
        except TFRecordError as err:
            if requested != "auto" and found != compression and err.index in (None, 0):
                err = _wrong_compression(err, compression, found)
                if err.path is None and path is not None:
                    err = err.with_location(path=path)
                raise err from None
            if err.path is None and path is not None:
                raise err.with_location(path=path) from None
            raise
    finally:
        _close_quietly(inflating)
        if owns:
            f.close()


def _decoded_batches(decoder: RecordDecoder, spans: bool = False) -> Iterator[Sequence[bytes]]:
    while True:
        batch = decoder._spans() if spans else decoder.records()
        if not batch:
            return
        yield batch


def _batched(records: Iterable[bytes]) -> Iterator[list[bytes]]:
    """The records as one list (from a generator: the ones before an error included)."""
    out: list[bytes] = []
    try:
        for record in records:
            out.append(record)
    except BaseException:
        if out:
            yield out
        raise
    if out:
        yield out


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if first:
        yield first
    yield from rest


def _start_position(f: IO[bytes]) -> Optional[int]:
    """Where reading ``f`` starts, if it can seek back there later; else None."""
    try:
        return f.tell() if f.seekable() else None
    except (OSError, AttributeError, ValueError):
        return None


def _rereader(f: IO[bytes], base: int, size: int) -> Callable[[int], Iterator[bytes]]:
    """``restart(offset)``: the blocks of ``f`` again, from ``offset`` bytes after ``base``."""

    def restart(offset: int) -> Iterator[bytes]:
        f.seek(base + offset)
        return _read_blocks(f, size)

    return restart


def _remaining_size(f: IO[bytes]) -> Optional[int]:
    try:
        if not f.seekable():
            return None
        if isinstance(f, _fs.RemoteReader):
            return f.size - f.tell()
        return os.fstat(f.fileno()).st_size - f.tell()
    except (OSError, AttributeError, ValueError):
        return None


def tf_record_iterator(
    path: Union[PathOrFile, Sequence[PathOrFile]],
    compression: Union[str, int, TFRecordOptions, None] = "auto",
    *,
    verify: bool = True,
    options: Union[str, int, TFRecordOptions, None] = None,
    on_error: str = "raise",
    on_skip: Optional[Callable[[SkipReport], None]] = None,
    max_record_size: Optional[int] = None,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> RecordIterator:
    """An iterator over the records of a TFRecord file (or files), as ``bytes``.

    The counterpart of ``tf.compat.v1.io.tf_record_iterator(path, options)``;
    the second argument also takes TensorFlow's options. ``None`` (and the
    default ``"auto"``) detect the compression; ``""`` insists on a plain file.
    See :class:`TFRecordReader` for the accepted ``path`` forms and for
    ``on_error`` / ``on_skip`` / ``max_record_size``.

    Like TensorFlow's, the iterator keeps its read offset (TensorBoard-style
    tailing of a file that is still being written relies on it):

    * after ``StopIteration``, records appended to the file later are returned by
      the next ``next()``;
    * a record cut short at the end of the file raises
      :class:`~tfrecord_lite.TruncatedRecordError` (a ``DataLossError``) on each
      ``next()`` until the rest of it has been written; then it is returned. A
      file that ends inside a record *header* raises too (TensorFlow stops
      silently there);
    * a corrupt record raises the same error on every later ``next()``.

    This holds for uncompressed files read with ``on_error="raise"`` (the
    default), and for the last file when several are given. A GZIP/ZLIB file,
    or ``on_error="skip"``/``"stop"``, is read as one stream: after its end the
    iterator stays at the end (records appended later are not picked up: a
    deflate stream cannot be resumed there), and an error repeats on every
    later ``next()``. ``close()`` (or ``with``) closes the file; otherwise it
    stays open, as in TensorFlow, until the iterator is dropped.
    """
    reader = TFRecordReader(
        path,
        compression,
        verify=verify,
        options=options,
        on_error=on_error,
        on_skip=on_skip,
        max_record_size=max_record_size,
        storage_options=storage_options,
    )
    return RecordIterator(reader)


class RecordIterator(_ListHandout):
    """The iterator :func:`tf_record_iterator` returns: it keeps its read offset.

    ``next()`` returns the next record; ``StopIteration`` at the end of the file
    does not end it (see :func:`tf_record_iterator`). :attr:`path` is the file
    being read and :attr:`index` the number of records returned from it so far.
    """

    def __init__(self, reader: TFRecordReader) -> None:
        self._reader = reader
        self._files = list(reader.files)
        self._next_file = 0
        self._init_handout()
        self._tail: Optional[_PlainTail] = None
        self._stream: Optional[Iterator[list[bytes]]] = None
        self._error: Optional[BaseException] = None
        self._closed = False
        self._lock = threading.RLock()
        #: The file being read.
        self.path: Optional[str] = None

    def _next_list(self) -> list[bytes]:
        """The next non-empty list of records; StopIteration at the end (for now)."""
        while True:
            last = self._next_file >= len(self._files)
            if self._tail is not None:
                batch = self._tail.read()
                if batch:
                    return batch
                if last:
                    raise StopIteration  # the file stays open: it may grow
                self._tail.close()
                self._tail = None
            elif self._stream is not None:
                if self._error is not None:
                    raise self._error
                try:
                    batch = next(self._stream)
                except StopIteration:
                    batch = []
                except BaseException as err:
                    self._error = err
                    raise
                if batch:
                    return batch
                if last:
                    raise StopIteration  # stays at the end of this stream
                self._stream = None
            elif last:
                raise StopIteration
            else:
                self._open(self._files[self._next_file])
                self._next_file += 1

    def _open(self, source: PathOrFile) -> None:
        r = self._reader
        self.path = _describe(source)
        self.index = 0
        self._error = None
        if r.on_error == "raise" and r.compression in ("", "auto"):
            f: Optional[IO[bytes]] = None
            owns = not is_file_object(source)
            if owns:
                f = _open_binary(os.fspath(source), "rb", buffering=0)  # type: ignore[arg-type]
            elif getattr(source, "seekable", lambda: False)():
                f = source  # type: ignore[assignment]
            if f is not None:
                try:
                    start = f.tell()
                    head = f.read(HEADER_SIZE)
                    f.seek(start)
                    found = detect_compression(head)
                    if r.compression == "" or found == "":
                        self._tail = _PlainTail(f, owns, self.path, r, found)
                        return
                except BaseException:
                    if owns:
                        f.close()
                    raise
                if owns:  # compressed: read the open file as one stream, then close it
                    self._stream = _closing(f, self._one_pass(f))
                    return
        self._stream = self._one_pass(source)

    def _one_pass(self, source: PathOrFile) -> Iterator[list[bytes]]:
        r = self._reader
        lists = read_batches(
            source,
            r.compression,
            r.verify,
            r.buffer_size,
            r.on_error,
            r._skipped,
            r.max_record_size,
        )
        return cast("Iterator[list[bytes]]", lists)  # (no spans: lists)

    def close(self) -> None:
        """Close the file being read. Idempotent; ``next()`` then raises ``ClosedError``."""
        with self._lock:
            self._closed = True
            self._drop_list()
            tail, self._tail = self._tail, None
            stream, self._stream = self._stream, None
            if tail is not None:
                tail.close()
            if stream is not None:
                stream.close()  # type: ignore[attr-defined]

    def __enter__(self) -> RecordIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __repr__(self) -> str:
        return f"<RecordIterator path={self.path!r} index={self.index}>"


def _closing(f: IO[bytes], batches: Iterator[list[bytes]]) -> Iterator[list[bytes]]:
    try:
        yield from batches
    finally:
        _close_quietly(batches)
        f.close()


def _close_quietly(it: object) -> None:
    close = getattr(it, "close", None)
    if close is not None:
        close()


class _PlainTail:
    """An uncompressed file read from a kept offset: it may grow between reads."""

    def __init__(
        self, f: IO[bytes], owns: bool, path: Optional[str], r: TFRecordReader, found: str
    ) -> None:
        self._f: Optional[IO[bytes]] = f
        self._found = found  # what the first bytes look like (a hint when an error follows)
        self._owns = owns
        self._path = path
        self._verify = r.verify
        self._block = r.buffer_size
        self._decoder = RecordDecoder(verify=r.verify, max_record_size=r.max_record_size)

    def read(self) -> list[bytes]:
        """The records completed since the last call; ``[]`` at the end of the file.

        Raises a DataLossError when the file ends inside a record (each call, until
        the record is complete) or a record is corrupt (every call).
        """
        d = self._decoder
        f = self._f
        if f is None:
            return []
        try:
            out = d.records()
            while not out:
                block = f.read(self._block)
                if not block:
                    if d.pending:
                        self._raise_truncated()
                    return []
                d.feed(block)
                out = d.records()
                if len(block) == self._block:
                    # The next block starts at the incomplete record instead of
                    # being joined onto its head (no copy of the whole block).
                    back = d._release_tail(self._block)
                    if back:
                        f.seek(-back, os.SEEK_CUR)
            return out
        except TFRecordError as err:
            if self._found and err.index in (None, 0):
                err = _wrong_compression(err, "", self._found)
            elif err.path is not None or self._path is None:
                raise
            raise err.with_location(path=self._path) from None

    def _raise_truncated(self) -> None:
        d = self._decoder
        probe = RecordDecoder(verify=self._verify, offset=d.offset, index=d.index)
        for chunk in d._chunks:
            probe.feed(chunk)
        probe.close()  # raises TruncatedRecordError: the file ends inside a record

    def close(self) -> None:
        f, self._f = self._f, None
        if f is not None and self._owns:
            f.close()


def open(  # mirrors the builtin, like gzip.open
    path: PathOrFile,
    mode: str = "r",
    compression: Union[str, int, TFRecordOptions, None] = None,
    *,
    verify: bool = True,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> Union[TFRecordReader, TFRecordWriter]:
    """Open a TFRecord file for reading (``"r"``) or writing (``"w"``).

    ``mode`` may carry a ``"b"`` (ignored: records are always bytes). Reading
    detects compression unless it is given. ``storage_options`` are for a URL's
    filesystem (see :mod:`tfrecord_lite._files._fs`).
    """
    m = mode.replace("b", "")
    if m == "r":
        return TFRecordReader(
            path,
            "auto" if compression is None else compression,
            verify=verify,
            storage_options=storage_options,
        )
    if m == "w":
        return TFRecordWriter(path, compression, storage_options=storage_options)
    raise ValueError(f"mode must be 'r' or 'w', got {mode!r}")


# --------------------------------------------------------------------------- salvage


def _file_blocks(
    f: IO[bytes], first: bytes, on_bytes: Optional[Callable[[int], None]]
) -> Iterator[bytes]:
    if first:
        if on_bytes is not None:
            on_bytes(len(first))
        yield first
    while True:
        block = f.read(READ_BLOCK_SIZE)
        if not block:
            return
        if on_bytes is not None:
            on_bytes(len(block))
        yield block


def _inflated(blocks: Iterator[bytes], compression: str, path: str) -> Iterator[bytes]:
    try:
        yield from _inflate(blocks, compression, path)
    except _StreamEnd:
        raise TruncatedRecordError(
            f"the {compression} stream ends before its end marker: the file was cut short "
            "or its writer was not closed",
            path=path,
        ) from None


class SalvageInfo:
    """Filled in by :func:`salvage_file` as it reads: what it found about the file."""

    def __init__(self) -> None:
        self.compression = ""
        self.file_size = 0


def salvage_file(
    path: Union[str, os.PathLike[str]],
    compression: str = "auto",
    *,
    on_bytes: Optional[Callable[[int], None]] = None,
    info: Optional[SalvageInfo] = None,
) -> Iterator[Item]:
    """:func:`salvage` over a TFRecord file: plain, GZIP or ZLIB (``"auto"``: detected).

    Errors carry the file's path; offsets are in the decompressed stream.
    ``on_bytes(n)`` is called with the number of file bytes read, block by block
    (for a progress bar); ``info`` receives the compression and the file's size.
    """
    name = os.fspath(path)
    with _open_binary(name, "rb") as f:
        size = _remaining_size(f) or 0
        first = f.read(READ_BLOCK_SIZE)
        comp = compression.upper() if compression else ""
        if comp == "NONE":
            comp = ""
        if comp == "AUTO":
            comp = detect_compression(first)
        if comp not in ("", "GZIP", "ZLIB"):
            raise ValueError(f"compression must be auto, none, GZIP or ZLIB, got {compression!r}")
        if info is not None:
            info.compression = comp
            info.file_size = size
        blocks = _file_blocks(f, first, on_bytes)
        chunks: Iterator[bytes] = _inflated(blocks, comp, name) if comp else blocks
        for item in salvage(chunks, stream_size=None if comp else size):
            if isinstance(item, Damage):
                err = item.error
                if err.path is None:
                    err = err.with_location(path=name)  # type: ignore[assignment]
                item = Damage(err, item.resume, item.exact)
            yield item
