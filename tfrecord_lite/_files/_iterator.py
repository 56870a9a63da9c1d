"""``tf_record_iterator``: TensorFlow 1's record iterator, which keeps its read offset.

:class:`RecordIterator` reads a plain file from a kept offset (:class:`_PlainTail`),
so records appended after ``StopIteration`` are returned by the next ``next()``
(TensorBoard-style tailing); compressed files and the skip modes are read as one
stream by :func:`tfrecord_lite._files._stream.read_batches`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any, Callable, Optional, Union, cast

from .._errors import TFRecordError
from .._record import RecordDecoder, SkipReport
from ._handles import Closing, close_quietly, describe, open_binary
from ._options import TFRecordOptions, wrong_compression
from ._paths import PathOrFile, is_file_object
from ._reader import ListHandout, TFRecordReader
from ._shardset import check_shard_records
from ._sniff import SNIFF_BYTES, check_start, detect_compression
from ._stream import read_batches

__all__ = ["RecordIterator", "tf_record_iterator"]


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


class RecordIterator(ListHandout, Closing):
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
        self.path = describe(source)
        self.index = 0
        self._error = None
        if r.on_error == "raise" and r.compression in ("", "auto"):
            f: Optional[IO[bytes]] = None
            owns = not is_file_object(source)
            if owns:
                f = open_binary(os.fspath(source), "rb", buffering=0)  # type: ignore[arg-type]
            elif getattr(source, "seekable", lambda: False)():
                f = source  # type: ignore[assignment]
            if f is not None:
                try:
                    start = f.tell()
                    head = f.read(SNIFF_BYTES)
                    f.seek(start)
                    check_start(head, self.path)
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

    def __repr__(self) -> str:
        return f"<RecordIterator path={self.path!r} index={self.index}>"


def _closing(f: IO[bytes], batches: Iterator[list[bytes]]) -> Iterator[list[bytes]]:
    try:
        yield from batches
    finally:
        close_quietly(batches)
        f.close()


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
                    if self._owns:  # a shard of a complete set: its listed count
                        check_shard_records(self._path, d.index)
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
                err = wrong_compression(err, "", self._found)
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
