"""Reading records: :class:`TFRecordReader` over one or more files, and :func:`open`.

Names and options mirror TensorFlow's. A reader takes paths, globs, directories,
shard specs and file objects (:mod:`tfrecord_lite._files._paths`) and reads each
file with :func:`tfrecord_lite._files._stream.read_batches`; :class:`ListHandout` is
how it (and :class:`~tfrecord_lite._files._iterator.RecordIterator`) hands the
records out, to one thread or several.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Mapping, Sequence
from operator import length_hint
from typing import Any, Callable, Optional, Union, cast

from .._errors import ClosedError, GraphOnlyError
from .._record import SkipReport, check_max_record_size, check_on_error, warn_skip
from ._handles import describe
from ._options import TFRecordOptions, check_range, reader_compression
from ._paths import PathOrFile, expand_paths
from ._stream import READ_BLOCK_SIZE, check_callback, read_batches
from ._writer import TFRecordWriter

__all__ = ["ListHandout", "TFRecordReader", "open"]


_EXHAUSTED: Iterator[bytes] = iter(())


class ListHandout:
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


class TFRecordReader(ListHandout):
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
        check_range("buffer_size", buffer_size, 1, 2**31)
        self.on_error = check_on_error(on_error)
        self.max_record_size = check_max_record_size(max_record_size)
        check_callback(on_skip)
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
            self.path = describe(source)
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
