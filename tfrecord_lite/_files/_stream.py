"""Reading one file's records, a list at a time: the loop under every reader.

:func:`read_batches` opens a file (path, URL or file object), detects its
compression (:mod:`tfrecord_lite._files._sniff`), inflates it when compressed
(:mod:`tfrecord_lite._files._inflate`) and feeds the bytes to the sans-I/O
:class:`~tfrecord_lite._record.RecordDecoder`; :func:`read_records` is the same,
record by record. :class:`~tfrecord_lite.TFRecordReader`,
:func:`~tfrecord_lite.tf_record_iterator` and the datasets are built on them.

GZIP/ZLIB bombs: a reader with ``max_record_size=None`` buffers at most
:data:`DEFAULT_MAX_COMPRESSED_RECORD` bytes of one record of a compressed file
before refusing it (:class:`~tfrecord_lite.RecordTooLargeError`), and inflates at
most one bounded chunk at a time, so memory stays bounded whatever the stream claims.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, Any, Callable, Optional, Union, cast

from .._errors import CompressionError, TFRecordError, TruncatedRecordError
from .._record import (
    HEADER_SIZE,
    RecordDecoder,
    SkipReport,
    check_max_record_size,
    check_on_error,
    located,
    warn_skip,
)
from . import _fs
from ._handles import (
    close_quietly,
    describe,
    is_local_file,
    open_binary,
    remaining_size,
    start_position,
)
from ._inflate import StreamEnd, inflate_ahead
from ._options import TFRecordOptions, reader_compression, wrong_compression
from ._paths import PathOrFile, is_file_object
from ._shardset import check_shard_records
from ._sniff import detect_compression, not_a_tfrecord, peek_start

__all__ = [
    "DEFAULT_MAX_COMPRESSED_RECORD",
    "READ_BLOCK_SIZE",
    "check_callback",
    "read_batches",
    "read_blocks",
    "read_records",
]


#: Block size for reading plain files.
READ_BLOCK_SIZE = 1024 * 1024

#: GZIP/ZLIB readers with ``max_record_size=None`` buffer at most this many bytes of
#: one record: a length field claiming more is a RecordTooLargeError once that much
#: of it has been decompressed (so a deflate bomb cannot take the memory it claims).
DEFAULT_MAX_COMPRESSED_RECORD = 256 * 1024 * 1024


def read_blocks(
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
    check_callback(on_skip)
    if not is_file_object(source):
        source = _fs.bind(source, storage_options)  # type: ignore[arg-type]
    lists = read_batches(
        source, compression, verify, buffer_size, on_error, on_skip, max_record_size
    )
    return _flatten(cast("Iterator[list[bytes]]", lists))  # (no spans: lists)


def _flatten(batches: Iterator[list[bytes]]) -> Iterator[bytes]:
    for batch in batches:
        yield from batch


def check_callback(on_skip: object) -> None:
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
    path = describe(source)
    owns = not is_file_object(source)
    f: IO[bytes] = (
        open_binary(os.fspath(source), "rb", buffering=0)  # type: ignore[arg-type]
        if owns
        else source  # type: ignore[assignment]
    )
    inflating: Optional[Iterator[bytes]] = None  # stopped before the file is closed
    try:
        stream_size = remaining_size(f) if owns else None
        base = start_position(f)
        block = [buffer_size]  # the size of the next read
        raw = read_blocks(f, block, stream_size)
        first = next(raw, b"")
        while 0 < len(first) < HEADER_SIZE:  # make sure detection sees a whole header
            more = next(raw, b"")
            if not more:
                break
            first += more
        requested = compression
        other = not_a_tfrecord(first, path)  # a JPEG, JSON, text...: said in one line
        found = detect_compression(first)
        if compression == "auto":
            compression = found
        chunks: Iterator[bytes] = _chain(first, raw)
        file_size = stream_size
        if compression and other is None:
            # A local file can be read again from any offset: that lets the fast
            # inflater (ISA-L, which cannot be copied) salvage records before damage.
            restart = None if base is None else _rereader(f, base, buffer_size)
            # A big stream is read and inflated in a background thread, ahead of the
            # framing below (the thread owns ``f`` until ``inflating`` is closed).
            size = stream_size if owns else remaining_size(f)
            chunks = inflating = inflate_ahead(
                chunks, compression, path, restart, size, is_local_file(f), parsed=spans
            )
            stream_size = None
            # A gzipped CSV, JSON...: judged on its first inflated bytes, as a plain file.
            head, chunks = peek_start(chunks)
            other = not_a_tfrecord(head, path, compression)
        if other is not None:
            if on_error == "raise":
                raise other
            report = SkipReport(path, 0, file_size, "header", 0, other, to_end=True)
            _reporter(on_skip, path)(report)  # the whole file, skipped
            return
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
            except StreamEnd:
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
            if not decoder.skipped and not decoder.stopped:
                # A shard of a complete set: as many records as its manifest lists.
                check_shard_records(source, decoder.index)
        except TFRecordError as err:
            if requested != "auto" and found != compression and err.index in (None, 0):
                err = wrong_compression(err, compression, found)
                if err.path is None and path is not None:
                    err = err.with_location(path=path)
                raise err from None
            if err.path is None and path is not None:
                raise err.with_location(path=path) from None
            raise
    finally:
        close_quietly(inflating)
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


def _rereader(f: IO[bytes], base: int, size: int) -> Callable[[int], Iterator[bytes]]:
    """``restart(offset)``: the blocks of ``f`` again, from ``offset`` bytes after ``base``."""

    def restart(offset: int) -> Iterator[bytes]:
        f.seek(base + offset)
        return read_blocks(f, size)

    return restart
