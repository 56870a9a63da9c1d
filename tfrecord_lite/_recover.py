"""Reading past damage: finding the next record start, and a reader that keeps going.

TFRecord has no sync markers, but every record begins with a 12-byte header
whose last 4 bytes are the masked CRC32C of the first 8 (the length). After a
damaged record, the next place where such a header checks out is, with
overwhelming probability, the start of a real record (a random 12 bytes pass
with probability 2**-32, and the filter below makes it rarer still).

* :func:`find_next_record` scans a buffer (sans-I/O): ``bytes`` / ``memoryview``
  in, an offset or ``None`` out.
* :func:`find_next_record_in_file` is the same over a seekable binary file, in
  bounded memory.
* :func:`salvage` decodes a stream given as chunks (file blocks or decompressed
  data) and yields every intact record *and* every damaged span, resuming after
  each damaged record: at the exact next record when only the data CRC is bad
  (the length is known good), else at the next valid header.
* :func:`salvage_file` is :func:`salvage` over a file (plain, GZIP or ZLIB).

A GZIP/ZLIB stream that is itself damaged cannot be resumed (deflate has no
sync points in TensorFlow's files): reading stops there, with the records
before the damage returned.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from typing import IO, Callable, NamedTuple, Optional, Union

import numpy as np

from ._crc import mask
from ._crc import crc32c as _crc32c
from ._errors import (
    CorruptRecordError,
    DataLossError,
    TFRecordError,
    TruncatedRecordError,
)
from ._framing import HEADER_SIZE, RECORD_OVERHEAD, RecordDecoder
from ._io import _inflate, _StreamEnd, detect_compression

__all__ = [
    "MAX_RESYNC_LENGTH",
    "Damage",
    "Record",
    "find_next_record",
    "find_next_record_in_file",
    "salvage",
    "salvage_file",
]

Buffer = Union[bytes, bytearray, memoryview]

#: A header claiming this many data bytes or more (1 TiB) is never taken for a
#: record start while resynchronising: its three top length bytes must be zero.
MAX_RESYNC_LENGTH = 2**40
#: Candidate positions examined per vectorised step.
_WINDOW = 1 << 16
#: Block size of the file wrapper and of :func:`salvage_file`.
BLOCK_SIZE = 1 << 20
_U64 = struct.Struct("<Q")
_OFFSETS = np.arange(HEADER_SIZE, dtype=np.int64)


def _as_bytes_view(buf: Buffer) -> memoryview:
    view = memoryview(buf)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    return view


def find_next_record(
    buf: Buffer, start: int = 0, *, stream_size: Optional[int] = None
) -> Optional[int]:
    """The first offset ``>= start`` in ``buf`` where a valid record header begins.

    A valid header: 12 bytes whose last 4 are the masked CRC32C of the first 8,
    claiming fewer than :data:`MAX_RESYNC_LENGTH` data bytes. ``stream_size``, when
    known, is the number of bytes the whole stream has from ``buf[0]`` on; a header
    claiming a record that would run past it is skipped. Returns ``None`` when no
    position in ``buf`` qualifies (positions in the last 11 bytes cannot hold a
    whole header: a caller scanning a stream keeps them for the next buffer).
    """
    view = _as_bytes_view(buf)
    a = np.frombuffer(view, dtype=np.uint8)
    n = len(a)
    last = n - HEADER_SIZE  # the last position a whole header fits at
    pos = max(int(start), 0)
    cache: dict[int, int] = {}
    while pos <= last:
        stop = min(last + 1, pos + _WINDOW)
        zero = a[pos + 5 : stop + 7] == 0
        # length < 2**40: bytes 5, 6 and 7 of the little-endian length are zero.
        cand = np.flatnonzero(zero[:-2] & zero[1:-1] & zero[2:])
        if cand.size:
            idx = cand.astype(np.int64) + pos
            hdr = a[idx[:, None] + _OFFSETS]
            lengths = hdr[:, :8].copy().view("<u8")[:, 0]
            stored = hdr[:, 8:12].copy().view("<u4")[:, 0].astype(np.int64)
            uniq, inverse = np.unique(lengths, return_inverse=True)
            crcs = []
            for u in uniq.tolist():
                c = cache.get(u)
                if c is None:
                    c = cache[u] = mask(_crc32c(_U64.pack(u)))
                crcs.append(c)
            ok = stored == np.asarray(crcs, dtype=np.int64)[inverse.reshape(-1)]
            if stream_size is not None:
                ok &= idx + RECORD_OVERHEAD + lengths.astype(np.int64) <= stream_size
            hits = np.flatnonzero(ok)
            if hits.size:
                return int(idx[hits[0]])
        pos = stop
    return None


def find_next_record_in_file(
    f: Union[IO[bytes], str, os.PathLike[str]],
    start: int,
    *,
    stream_size: Optional[int] = None,
    block_size: int = BLOCK_SIZE,
) -> Optional[int]:
    """:func:`find_next_record` over a plain TFRecord file (a path or a seekable binary file).

    Returns the absolute offset of the first valid header at or after ``start``,
    or ``None``. ``stream_size`` defaults to the file's size. Reads ``block_size``
    bytes at a time.
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
        rel = None if stream_size is None else stream_size - pos
        hit = find_next_record(block, 0, stream_size=rel)
        if hit is not None:
            return pos + hit
        if len(block) < span:
            return None
        pos += block_size


# --------------------------------------------------------------------------- salvage


class Record(NamedTuple):
    """An intact record: where it starts in the (decompressed) stream, its index, its bytes.

    After a resynchronisation past a damaged header, indexes count on from the
    damaged record as if nothing more was lost (see :attr:`Damage.exact`).
    """

    offset: int
    index: int
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


def _pending(decoder: RecordDecoder) -> bytes:
    """The bytes a decoder holds from its current offset on (the damaged record's start)."""
    return b"".join(bytes(c) for c in decoder._chunks)


def salvage(
    chunks: Iterable[Buffer], *, stream_size: Optional[int] = None
) -> Iterator[Item]:
    """Yield the intact records of a stream given as chunks, and each damaged span.

    ``chunks`` is the (decompressed) stream in pieces of any size; ``stream_size``
    its total size when known (lets a damaged length be rejected at once). An
    exception raised *by the chunk source* (a damaged compressed stream) ends the
    stream: it is yielded as a final :class:`Damage` after every record before it.
    """
    source = iter(chunks)
    leftover: list[bytes] = []

    def pull() -> Optional[bytes]:
        if leftover:
            return leftover.pop(0)
        for c in source:
            if c:
                return bytes(c)
        return None

    offset = 0
    index = 0
    exact = True
    while True:
        remaining = None if stream_size is None else stream_size - offset
        decoder = RecordDecoder(verify=True, offset=offset, index=index, stream_size=remaining)
        next_offset = offset
        error: Optional[DataLossError] = None
        while error is None:
            try:
                chunk = pull()
            except DataLossError as err:
                yield Damage(_source_error(err, decoder), None, exact)
                return
            if chunk is None:
                try:
                    decoder.close()
                except DataLossError as err:
                    yield Damage(err, None, exact)
                return
            decoder.feed(chunk)
            while True:
                try:
                    batch = decoder.records()
                except DataLossError as err:
                    error = err
                    break
                if not batch:
                    break
                for data in batch:
                    yield Record(next_offset, index, data)
                    next_offset += len(data) + RECORD_OVERHEAD
                    index += 1
        if not isinstance(error, CorruptRecordError):
            yield Damage(error, None, exact)  # truncation: nothing follows
            return
        bad_start = decoder.offset
        buf = _pending(decoder)
        if error.part == "data":
            # The length is good (its CRC matched): the next record follows this one.
            (length,) = _U64.unpack_from(buf, 0)
            resume: Optional[int] = bad_start + RECORD_OVERHEAD + length
            skip = RECORD_OVERHEAD + length
            while len(buf) < skip:  # pragma: no cover - the whole record was decoded
                more = pull()
                if more is None:
                    break
                buf += more
            rest = buf[skip:]
            yield Damage(error, resume, exact)
        else:
            resume, rest = _resync(buf, bad_start, stream_size, pull)
            exact = False
            yield Damage(error, resume, False)
        if resume is None:
            return
        if rest:
            leftover.insert(0, rest)
        offset = resume
        index += 1


def _resync(
    buf: bytes,
    base: int,
    stream_size: Optional[int],
    pull: Callable[[], Optional[bytes]],
) -> tuple[Optional[int], bytes]:
    """Find the next valid header after the damaged one at ``base``: (offset, bytes from it on)."""
    search_from = 1
    while True:
        limit = None if stream_size is None else stream_size - base
        hit = find_next_record(buf, search_from, stream_size=limit)
        if hit is not None:
            return base + hit, buf[hit:]
        keep = max(search_from, len(buf) - (HEADER_SIZE - 1))
        buf = buf[keep:]
        base += keep
        search_from = 0
        try:
            more = pull()
        except DataLossError:
            more = None
        if more is None:
            return None, b""
        buf += more


def _source_error(err: DataLossError, decoder: RecordDecoder) -> DataLossError:
    """The error for a chunk source that failed: a cut inside a record is said as such."""
    if isinstance(err, TruncatedRecordError):
        try:
            decoder.close()
        except DataLossError as inner:
            return inner
        if err.offset is None:
            return TruncatedRecordError(
                err.message, path=err.path, offset=decoder.offset, index=decoder.index
            )
    return err


def _file_blocks(
    f: IO[bytes], first: bytes, on_bytes: Optional[Callable[[int], None]]
) -> Iterator[bytes]:
    if first:
        if on_bytes is not None:
            on_bytes(len(first))
        yield first
    while True:
        block = f.read(BLOCK_SIZE)
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
    with open(name, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        first = f.read(BLOCK_SIZE)
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


def describe_error(err: TFRecordError) -> str:
    """The error's message with its location first: ``path: record 3, byte offset 113: ...``."""
    where = []
    if err.path is not None:
        where.append(err.path)
    loc = []
    if err.index is not None:
        loc.append(f"record {err.index}")
    if err.offset is not None:
        loc.append(f"byte offset {err.offset}")
    if loc:
        where.append(", ".join(loc))
    return ": ".join([*where, err.message])
