"""Salvage: every intact record of a damaged file, and every damaged stretch.

:func:`salvage` yields the intact records *and* the damaged spans of a stream given
as chunks (the decoder's ``on_error="skip"`` mode, seen as a list of
:class:`Record` / :class:`Damage` events); :func:`salvage_file` runs it over a file,
plain, GZIP or ZLIB, for the ``verify`` / ``convert`` CLI commands.
:func:`find_next_record_in_file` is :func:`~tfrecord_lite._record.find_next_record`
over a seekable plain file, in bounded memory.

How resynchronisation works (and what it promises) is told in
:mod:`tfrecord_lite._record._resync`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import IO, Callable, NamedTuple, Optional, Union

from .._errors import DataLossError, TFRecordError, TruncatedRecordError
from .._record import (
    HEADER_SIZE,
    RECORD_OVERHEAD,
    RecordDecoder,
    SkipReport,
    data_ok,
    next_header,
)
from . import _stream
from ._handles import close_quietly, open_binary, remaining_size
from ._inflate import StreamEnd, inflate
from ._sniff import detect_compression, not_a_tfrecord, peek_start
from ._stream import DEFAULT_MAX_COMPRESSED_RECORD, READ_BLOCK_SIZE

__all__ = [
    "Damage",
    "Item",
    "Record",
    "SalvageInfo",
    "find_next_record_in_file",
    "salvage",
    "salvage_file",
]

Buffer = Union[bytes, bytearray, memoryview]

#: Block size of :func:`find_next_record_in_file`.
BLOCK_SIZE = 1 << 20


def find_next_record_in_file(
    f: Union[IO[bytes], str, os.PathLike[str]],
    start: int,
    *,
    stream_size: Optional[int] = None,
    block_size: int = BLOCK_SIZE,
) -> Optional[int]:
    """:func:`find_next_record` over a plain TFRecord file (a path or a seekable binary file).

    Returns the absolute offset of the first valid record at or after ``start``,
    or ``None``. ``stream_size`` defaults to the file's size. Reads ``block_size``
    bytes at a time (plus the whole record of a candidate, when it is at most
    ``block_size`` bytes long, to check its data CRC).
    """
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return find_next_record_in_file(
                fh, start, stream_size=stream_size, block_size=block_size
            )
    if stream_size is None:
        try:
            stream_size = os.fstat(f.fileno()).st_size
        except (OSError, AttributeError, ValueError):
            stream_size = None
    pos = start
    span = block_size + HEADER_SIZE - 1
    while True:
        f.seek(pos)
        block = f.read(span)
        if len(block) < HEADER_SIZE:
            return None
        last_block = len(block) < span
        rel = None if stream_size is None else stream_size - pos
        scan_from = 0
        while True:
            hit = next_header(block, scan_from, stream_size=rel)
            if hit is None or (hit[0] >= block_size and not last_block):
                break  # later positions are the next block's
            at, length = hit
            total = RECORD_OVERHEAD + length
            if at + total <= len(block):
                if data_ok(block, at, length):
                    return pos + at
            elif total <= block_size:
                f.seek(pos + at)
                whole = f.read(total)
                if len(whole) < total or data_ok(whole, 0, length):
                    return pos + at  # (a record running past the end: judged by its header)
            else:
                return pos + at  # too long to check here: judged by its header
            scan_from = at + 1
        if last_block:
            return None
        pos += block_size


# --------------------------------------------------------------------------- salvage


class Record(NamedTuple):
    """An intact record: where it starts in the (decompressed) stream, its index, its bytes.

    After a resynchronisation past a damaged header, indexes count on from the
    damaged record as if nothing more was lost (see :attr:`Damage.exact`).
    """

    offset: int
    index: int  # type: ignore[assignment]
    data: bytes


class Damage(NamedTuple):
    """A damaged stretch of the stream.

    ``error`` is the library's error (with offset and index). ``resume`` is the
    offset reading resumed at, or ``None`` when it could not resume (the stream
    ended, or a compressed stream is itself damaged). ``exact`` is False when the
    damaged record's length was unreadable: records may have been lost before
    ``resume`` and later indexes are then counts, not positions.
    """

    error: DataLossError
    resume: Optional[int]
    exact: bool


Item = Union[Record, Damage]


class _Salvager:
    """Turns a skip-mode decoder's records and reports into :class:`Record` / :class:`Damage`."""

    def __init__(self, stream_size: Optional[int]) -> None:
        self.reports: list[SkipReport] = []
        self.decoder: RecordDecoder = RecordDecoder(
            verify=True, stream_size=stream_size, on_error="skip", on_skip=self.reports.append
        )
        self.offset = 0
        self.index = 0
        self.exact = True

    def items(self, batch: list[bytes]) -> Iterator[Item]:
        # A decoder call reports its skips before the records it returns.
        for rep in self.reports:
            if not rep.exact and rep.reason in ("header", "data", "too-large"):
                self.exact = False
            resume = None if rep.to_end or rep.length is None else rep.offset + rep.length
            err = rep.error
            assert isinstance(err, DataLossError)
            yield Damage(err, resume, self.exact)
            if resume is not None:
                self.offset = resume
            self.index = rep.index + 1
        self.reports.clear()
        for data in batch:
            yield Record(self.offset, self.index, data)
            self.offset += len(data) + RECORD_OVERHEAD
            self.index += 1

    def drain(self) -> Iterator[Item]:
        while True:
            batch = self.decoder.records()
            yield from self.items(batch)
            if not batch:
                return


def salvage(
    chunks: Iterable[Buffer],
    *,
    stream_size: Optional[int] = None,
    max_buffered: Optional[int] = DEFAULT_MAX_COMPRESSED_RECORD,
) -> Iterator[Item]:
    """Yield the intact records of a stream given as chunks, and each damaged span.

    ``chunks`` is the (decompressed) stream in pieces of any size; ``stream_size``
    its total size when known (lets a damaged length be rejected at once). After
    a record whose data CRC fails, reading resumes at the next record when its
    header checks out (the length was intact: ``exact``), else at the next place
    where a whole record verifies. An exception raised *by the chunk source* (a
    damaged compressed stream) ends the stream: it is yielded as a final
    :class:`Damage` after every record before it. This is the decoder's
    ``on_error="skip"`` mode, seen as a list of events.

    ``max_buffered`` (default: the GZIP/ZLIB readers' bound, 256 MiB) bounds the
    bytes of one record held while it arrives, whatever ``stream_size`` says: a
    record whose length claims more is a final :class:`Damage` (a
    :class:`~tfrecord_lite.RecordTooLargeError`) once that many of its bytes have
    come, and the rest of the stream is not read (skipping it would mean inflating
    everything it claims: a deflate bomb's gigabytes). ``None``: no bound (a plain
    file, whose size bounds every record).
    """
    s = _Salvager(stream_size)
    decoder = s.decoder
    decoder._soft_limit = max_buffered
    source = iter(chunks)
    while True:
        try:
            chunk = next(source, None)
        except DataLossError as err:
            yield from s.drain()
            if isinstance(err, TruncatedRecordError):
                cause: TFRecordError = err
                if err.offset is None:
                    cause = TruncatedRecordError(
                        err.message, path=err.path, offset=decoder.offset, index=decoder.index
                    )
                batch = decoder._close(cause=cause, cause_reason="truncated")
            else:
                batch = decoder._close(cause=err, cause_reason="compression")
            yield from s.items(batch)
            return
        if chunk is None:
            break
        decoder.feed(chunk)
        yield from s.drain()
        if decoder._skip is not None and decoder._skip.reason == "too-large":
            close_quietly(source)  # the record over the bound ends the stream here
            yield from s.items(decoder.close())
            return
    yield from s.drain()
    yield from s.items(decoder.close())


# --------------------------------------------------------------------------- over a file


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
        yield from inflate(blocks, compression, path)
    except StreamEnd:
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

    Errors carry the file's path; offsets are in the decompressed stream. A file that
    is plainly another format (an image, JSON, text...) is one :class:`Damage`, a
    :class:`~tfrecord_lite._files._sniff.NotATFRecordError`, and nothing more.
    ``on_bytes(n)`` is called with the number of file bytes read, block by block
    (for a progress bar); ``info`` receives the compression and the file's size.
    """
    name = os.fspath(path)
    with open_binary(name, "rb") as f:
        size = remaining_size(f) or 0
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
        other = not_a_tfrecord(first, name)
        blocks = _file_blocks(f, first, on_bytes)
        chunks: Iterator[bytes] = _inflated(blocks, comp, name) if comp else blocks
        if comp and other is None:  # a gzipped CSV...: judged on its first inflated bytes
            head, chunks = peek_start(chunks)
            other = not_a_tfrecord(head, name, comp)
        if other is not None:  # an image, JSON, text...: one damage, the whole file
            yield Damage(other, None, False)
            return
        bound = _stream.DEFAULT_MAX_COMPRESSED_RECORD if comp else None
        for item in salvage(chunks, stream_size=None if comp else size, max_buffered=bound):
            if isinstance(item, Damage):
                err = item.error
                if err.path is None:
                    err = err.with_location(path=name)  # type: ignore[assignment]
                item = Damage(err, item.resume, item.exact)
            yield item
