"""Exceptions raised by tfrecord_lite.

Every error the library raises on bad *data* derives from :class:`TFRecordError`,
and also from the builtin exception a Python user would expect to catch
(``ValueError`` for bad bytes, ``EOFError`` for data that ends too early, ...).
Wrong *arguments* raise plain ``TypeError`` / ``ValueError``.

Errors about a place in a file carry where it happened::

    try:
        for rec in tfrecord_lite.tf_record_iterator("train.tfrecord"):
            ...
    except tfrecord_lite.CorruptRecordError as e:
        print(e.path, e.offset, e.index)

``offset`` is the byte offset of the record's first byte (of the
*decompressed* stream for GZIP/ZLIB files) and ``index`` is the 0-based
position of the record in its file.

Hierarchy::

    TFRecordError
    ├── DataLossError (ValueError)          the file's bytes are not a valid TFRecord file
    │   ├── CorruptRecordError              a CRC does not match
    │   ├── TruncatedRecordError (EOFError) the file ends inside a record
    │   ├── RecordTooLargeError             a length field claims more than max_record_size
    │   └── CompressionError                the GZIP/ZLIB stream is damaged
    ├── ClosedError (ValueError)            a writer or reader used after close()
    ├── GraphOnlyError (NotImplementedError) a TF1 graph-mode API (queues) that cannot run eagerly
    └── ParseError (ValueError)             a record is not a valid Example, or does not fit the schema
"""

from __future__ import annotations

import os
from typing import Optional, Union

__all__ = [
    "ClosedError",
    "CompressionError",
    "CorruptRecordError",
    "DataLossError",
    "GraphOnlyError",
    "ParseError",
    "RecordTooLargeError",
    "TFRecordError",
    "TruncatedRecordError",
]

PathLike = Union[str, "os.PathLike[str]"]


class TFRecordError(Exception):
    """Base class of every error tfrecord_lite raises about data.

    Attributes ``path``, ``offset`` and ``index`` say where the problem is; any of
    them may be ``None`` when it does not apply (e.g. bytes not read from a file).
    """

    def __init__(
        self,
        message: str,
        *,
        path: Optional[PathLike] = None,
        offset: Optional[int] = None,
        index: Optional[int] = None,
    ) -> None:
        self.message = message
        self.path: Optional[str] = os.fspath(path) if path is not None else None
        self.offset = offset
        self.index = index
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.path is not None:
            where.append(f"file {self.path!r}")
        if self.index is not None:
            where.append(f"record {self.index}")
        if self.offset is not None:
            where.append(f"byte offset {self.offset}")
        if not where:
            return self.message
        return f"{self.message} ({', '.join(where)})"

    def with_location(
        self,
        *,
        path: Optional[PathLike] = None,
        offset_base: int = 0,
        index_base: int = 0,
    ) -> TFRecordError:
        """Return a copy of this error with the file name and absolute positions filled in.

        Lower layers work on buffers and report positions relative to the buffer; the
        I/O layer calls this to turn them into positions in the file.
        """
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        TFRecordError.__init__(
            new,
            self.message,
            path=path if path is not None else self.path,
            offset=None if self.offset is None else self.offset + offset_base,
            index=None if self.index is None else self.index + index_base,
        )
        return new

    def __reduce__(self):  # type: ignore[no-untyped-def]
        # Keep the keyword-only attributes when the error crosses a process boundary
        # (DataLoader workers, multiprocessing).
        return (
            _rebuild,
            (type(self), self.message, self.path, self.offset, self.index, dict(self.__dict__)),
        )


def _rebuild(
    cls: type[TFRecordError],
    message: str,
    path: Optional[str],
    offset: Optional[int],
    index: Optional[int],
    state: dict[str, object],
) -> TFRecordError:
    err = cls.__new__(cls)
    err.__dict__.update(state)
    TFRecordError.__init__(err, message, path=path, offset=offset, index=index)
    return err


class DataLossError(TFRecordError, ValueError):
    """The bytes are not a valid TFRecord stream (TensorFlow's ``DataLossError``)."""


class CorruptRecordError(DataLossError):
    """A record's length or data CRC32C does not match its stored checksum.

    ``part`` is ``"header"`` (the 8 length bytes) or ``"data"``.
    """

    def __init__(
        self,
        message: str,
        *,
        part: str = "data",
        path: Optional[PathLike] = None,
        offset: Optional[int] = None,
        index: Optional[int] = None,
    ) -> None:
        self.part = part
        super().__init__(message, path=path, offset=offset, index=index)


class TruncatedRecordError(DataLossError, EOFError):
    """The stream ends inside a record: a partial header, data or footer.

    TensorFlow silently stops at a partial *header*; tfrecord_lite raises, because a
    file cut short is lost data. ``expected`` and ``available`` give the byte counts.
    """

    def __init__(
        self,
        message: str,
        *,
        expected: Optional[int] = None,
        available: Optional[int] = None,
        path: Optional[PathLike] = None,
        offset: Optional[int] = None,
        index: Optional[int] = None,
    ) -> None:
        self.expected = expected
        self.available = available
        super().__init__(message, path=path, offset=offset, index=index)


class RecordTooLargeError(DataLossError):
    """A record's length field claims more than the reader's ``max_record_size``.

    Raised before the record's data is buffered, so a damaged or hostile length
    cannot make the reader allocate it. ``length`` is the claimed number of data
    bytes and ``limit`` the ``max_record_size`` in force.
    """

    def __init__(
        self,
        message: str,
        *,
        length: Optional[int] = None,
        limit: Optional[int] = None,
        path: Optional[PathLike] = None,
        offset: Optional[int] = None,
        index: Optional[int] = None,
    ) -> None:
        self.length = length
        self.limit = limit
        super().__init__(message, path=path, offset=offset, index=index)


class CompressionError(DataLossError):
    """A GZIP or ZLIB stream cannot be decompressed."""


class ClosedError(TFRecordError, ValueError):
    """A writer or reader was used after ``close()``."""


class GraphOnlyError(TFRecordError, NotImplementedError):
    """A TensorFlow 1 graph-mode API (input queues, ``TFRecordReader().read(queue)``).

    Those need a graph and a session; tfrecord_lite runs eagerly. The message names
    the replacement and shows the one-line translation (see ``docs/tf1-queues.md``).
    """


class ParseError(TFRecordError, ValueError):
    """A record is not a valid ``tf.train.Example`` or does not match the schema.

    ``key`` names the feature involved, when there is one.
    """

    def __init__(
        self,
        message: str,
        *,
        key: Optional[str] = None,
        path: Optional[PathLike] = None,
        offset: Optional[int] = None,
        index: Optional[int] = None,
    ) -> None:
        self.key = key
        super().__init__(message, path=path, offset=offset, index=index)
