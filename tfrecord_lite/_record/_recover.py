"""Reading past damage: finding the next record start, skip reports, and salvage.

TFRecord has no sync markers, but every record begins with a 12-byte header
whose last 4 bytes are the masked CRC32C of the first 8 (the length). After a
damaged record, the next place where such a header checks out *and* the record
it announces passes its data CRC is, with overwhelming probability, the start
of a real record (a random 12 bytes pass the header test with probability
2**-32; passing the data CRC as well costs another 2**-32).

Sans-I/O pieces (used by :class:`tfrecord_lite.RecordDecoder` in
``on_error="skip"`` mode, and by the CLI):

* :func:`find_next_record` scans a buffer: ``bytes`` / ``memoryview`` in, an
  offset or ``None`` out.
* :class:`SkipReport` describes one skipped stretch of a stream: where, how many
  bytes, why, and the error ``on_error="raise"`` would have raised.
* :func:`crc32c_combine` joins the CRCs of two pieces, so a record's CRC can be
  checked piece by piece without holding it whole.

Over files: :func:`find_next_record_in_file` is :func:`find_next_record` over a
seekable binary file, in bounded memory; :func:`salvage` yields every intact record
*and* every damaged span of a stream given as chunks (``tfrecord_lite._files._io.salvage_file``
runs it over a file, for the ``verify`` / ``convert`` CLI commands).

A GZIP/ZLIB stream that is itself damaged cannot be resumed (TensorFlow's
writers emit one deflate stream with no sync points): reading stops there, with
the records before the damage returned and the rest of the file reported.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import struct
import warnings
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, NamedTuple, Optional, Union

import numpy as np

from .._errors import (
    DataLossError,
    TFRecordError,
    TruncatedRecordError,
)
from ._crc import crc32c as _crc32c
from ._crc import mask
from ._scan import _length_crc

if TYPE_CHECKING:  # pragma: no cover
    from ._framing import RecordDecoder

__all__ = [
    "MAX_RESYNC_LENGTH",
    "ON_ERROR",
    "REASONS",
    "Damage",
    "Record",
    "SkipReport",
    "SkippedDataWarning",
    "crc32c_combine",
    "find_next_record",
    "find_next_record_in_file",
    "salvage",
]

Buffer = Union[bytes, bytearray, memoryview]

# Copies of _framing's constants: _framing imports this module.
HEADER_SIZE = 12
RECORD_OVERHEAD = 16

#: A header claiming this many data bytes or more (1 TiB) is never taken for a
#: record start while resynchronising: its three top length bytes must be zero.
MAX_RESYNC_LENGTH = 2**40
#: Candidate positions examined per vectorised step.
_WINDOW = 1 << 16
#: Block size of :func:`find_next_record_in_file`.
BLOCK_SIZE = 1 << 20
_U32 = struct.Struct("<I")
_OFFSETS = np.arange(HEADER_SIZE, dtype=np.int64)

#: The readers' ``on_error`` values.
ON_ERROR = ("raise", "skip", "stop")

#: :attr:`SkipReport.reason` values.
REASONS = {
    "header": "the CRC of a record's length field does not match",
    "data": "the CRC of a record's data does not match",
    "truncated": "the stream ends inside a record (or a GZIP/ZLIB stream has no end marker)",
    "too-large": "a record's length field claims more than max_record_size",
    "compression": "the GZIP/ZLIB stream is damaged: the rest of the file cannot be decoded",
}


def check_on_error(value: object) -> str:
    """Validate an ``on_error`` argument."""
    if not isinstance(value, str):
        raise TypeError(f"on_error must be a string, got {type(value).__name__}")
    if value not in ON_ERROR:
        raise ValueError(f"on_error must be one of {', '.join(map(repr, ON_ERROR))}, got {value!r}")
    return value


def check_max_record_size(value: object) -> Optional[int]:
    """Validate a ``max_record_size`` argument (``None`` or a non-negative int)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"max_record_size must be None or an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"max_record_size must be >= 0, got {value}")
    return value


# --------------------------------------------------------------------------- reports


@dataclasses.dataclass(frozen=True)
class SkipReport:
    """One stretch of a stream that a reader skipped (``on_error="skip"`` or ``"stop"``).

    ``path``: the file (``None`` for bytes not read from a file). ``offset``: the
    first skipped byte, in the *decompressed* stream for GZIP/ZLIB files.
    ``length``: how many bytes were skipped, or ``None`` when that is unknown
    (the rest of a damaged compressed stream; the rest of a stream of unknown
    size left by ``"stop"``). ``reason``: one of :data:`REASONS`. ``index``: the
    position of the damaged record in its file (records before it, plus one per
    earlier skip). ``error``: what ``on_error="raise"`` would have raised.
    ``exact``: exactly one record was skipped (its length field was intact), so
    later indexes are still positions in the file. ``to_end``: nothing after the
    skipped stretch was read (end of stream, ``"stop"``, damaged compression).
    """

    path: Optional[str]
    offset: int
    length: Optional[int]
    reason: str
    index: int
    error: TFRecordError
    exact: bool = False
    to_end: bool = False

    @property
    def end(self) -> Optional[int]:
        """Offset just after the skipped bytes (where reading resumed), if known."""
        return None if self.length is None else self.offset + self.length

    def describe(self) -> str:
        """One line for a log: where, how much, why."""
        where = f"{self.path}: " if self.path else ""
        size = "the rest of the stream" if self.length is None else f"{self.length} bytes"
        after = " (to the end of the file)" if self.to_end and self.length is not None else ""
        return (
            f"{where}skipped {size}{after} at byte offset {self.offset} "
            f"(record {self.index}): {self.error.message}"
        )


class SkippedDataWarning(UserWarning):
    """Issued for each :class:`SkipReport` when the reader was given no ``on_skip`` callback."""


def warn_skip(report: SkipReport) -> None:
    """The default ``on_skip``: a :class:`SkippedDataWarning` (skipping is never silent)."""
    warnings.warn(report.describe(), SkippedDataWarning, stacklevel=4)


def located(report: SkipReport, path: Optional[str]) -> SkipReport:
    """``report`` with its file filled in (and its error carrying the path too)."""
    if path is None:
        return report
    err = report.error
    if err.path is None:
        err = err.with_location(path=path)
    return dataclasses.replace(report, path=path, error=err)


# --------------------------------------------------------------------------- CRC pieces


def _gf2_times(mat: tuple[int, ...], vec: int) -> int:
    out = 0
    i = 0
    while vec:
        if vec & 1:
            out ^= mat[i]
        vec >>= 1
        i += 1
    return out


def _gf2_square(mat: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(_gf2_times(mat, mat[n]) for n in range(32))


def _one_zero_byte() -> tuple[int, ...]:
    # Operator for one zero *bit* on a reflected CRC-32C register, squared to one byte.
    op: tuple[int, ...] = (0x82F63B78, *(1 << n for n in range(31)))
    for _ in range(3):
        op = _gf2_square(op)
    return op


@functools.lru_cache(maxsize=128)
def _zeros_operator(nbytes: int) -> tuple[int, ...]:
    """The GF(2) operator that feeds ``nbytes`` zero bytes through a CRC-32C register."""
    result: Optional[tuple[int, ...]] = None
    power = _one_zero_byte()
    while True:
        if nbytes & 1:
            result = power if result is None else tuple(_gf2_times(power, c) for c in result)
        nbytes >>= 1
        if not nbytes:
            break
        power = _gf2_square(power)
    assert result is not None
    return result


def crc32c_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32C of ``a + b`` from ``crc1 = crc32c(a)``, ``crc2 = crc32c(b)`` and ``len(b)``.

    Lets a record of any size be checked piece by piece (zlib's ``crc32_combine``).
    """
    if len2 <= 0:
        return crc1
    return _gf2_times(_zeros_operator(len2), crc1) ^ crc2


def crc32c_of_zeros(n: int) -> int:
    """CRC-32C of ``n`` zero bytes, in O(log n) (for sparse files in tests and tools)."""
    crc = 0
    done = 0
    piece, piece_len = _crc32c(b"\0"), 1
    while n:
        if n & 1:
            crc = crc32c_combine(crc, piece, piece_len) if done else piece
            done += piece_len
        n >>= 1
        if n:
            piece = crc32c_combine(piece, piece, piece_len)
            piece_len *= 2
    return crc


# --------------------------------------------------------------------------- finding records


def _as_bytes_view(buf: Buffer) -> memoryview:
    view = memoryview(buf)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    return view


def next_header(
    buf: Buffer,
    start: int = 0,
    *,
    stream_size: Optional[int] = None,
    max_length: Optional[int] = None,
) -> Optional[tuple[int, int]]:
    """``(offset, length)`` of the first valid record *header* at or after ``start``.

    Only the header is checked (its length CRC, and the length against
    ``stream_size`` / ``max_length`` / :data:`MAX_RESYNC_LENGTH`); the data may
    lie beyond ``buf``. Vectorised: 64 Ki positions per step.
    """
    view = _as_bytes_view(buf)
    a = np.frombuffer(view, dtype=np.uint8)
    n = len(a)
    last = n - HEADER_SIZE  # the last position a whole header fits at
    pos = max(int(start), 0)
    cap = MAX_RESYNC_LENGTH - 1 if max_length is None else min(max_length, MAX_RESYNC_LENGTH - 1)
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
            if (lengths == lengths[0]).all():  # zero-filled stretches, equal records
                uniq, inverse = lengths[:1], np.zeros(len(lengths), dtype=np.int64)
            else:
                uniq, inverse = np.unique(lengths, return_inverse=True)
            crcs = [_length_crc(u) for u in uniq.tolist()]
            ok = stored == np.asarray(crcs, dtype=np.int64)[inverse.reshape(-1)]
            ok &= lengths <= np.uint64(cap)
            if stream_size is not None:
                ok &= idx + RECORD_OVERHEAD + lengths.astype(np.int64) <= stream_size
            hits = np.flatnonzero(ok)
            if hits.size:
                h = int(hits[0])
                return int(idx[h]), int(lengths[h])
        pos = stop
    return None


def data_ok(buf: Buffer, pos: int, length: int) -> bool:
    """Whether the record at ``pos`` (header already checked) passes its data CRC."""
    view = _as_bytes_view(buf)
    data_end = pos + HEADER_SIZE + length
    (stored,) = _U32.unpack_from(view, data_end)
    return bool(mask(_crc32c(view[pos + HEADER_SIZE : data_end])) == stored)


def find_next_record(
    buf: Buffer,
    start: int = 0,
    *,
    stream_size: Optional[int] = None,
    max_length: Optional[int] = None,
) -> Optional[int]:
    """The first offset ``>= start`` in ``buf`` where a valid record begins.

    Valid: 12 bytes whose last 4 are the masked CRC32C of the first 8, claiming
    fewer than :data:`MAX_RESYNC_LENGTH` data bytes (and at most ``max_length``);
    when the whole record lies inside ``buf`` its data CRC must match too (a
    record running past the end of ``buf`` is judged by its header alone).
    ``stream_size``, when known, is the number of bytes the whole stream has from
    ``buf[0]`` on; a header claiming a record that would run past it is skipped.
    Returns ``None`` when no position in ``buf`` qualifies (positions in the last
    11 bytes cannot hold a whole header: a caller scanning a stream keeps them
    for the next buffer).
    """
    view = _as_bytes_view(buf)
    end = len(view)
    pos = max(int(start), 0)
    while True:
        hit = next_header(view, pos, stream_size=stream_size, max_length=max_length)
        if hit is None:
            return None
        at, length = hit
        if at + RECORD_OVERHEAD + length > end or data_ok(view, at, length):
            return at
        pos = at + 1


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
        from ._framing import RecordDecoder

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


def salvage(chunks: Iterable[Buffer], *, stream_size: Optional[int] = None) -> Iterator[Item]:
    """Yield the intact records of a stream given as chunks, and each damaged span.

    ``chunks`` is the (decompressed) stream in pieces of any size; ``stream_size``
    its total size when known (lets a damaged length be rejected at once). After
    a record whose data CRC fails, reading resumes at the next record when its
    header checks out (the length was intact: ``exact``), else at the next place
    where a whole record verifies. An exception raised *by the chunk source* (a
    damaged compressed stream) ends the stream: it is yielded as a final
    :class:`Damage` after every record before it. This is the decoder's
    ``on_error="skip"`` mode, seen as a list of events.
    """
    s = _Salvager(stream_size)
    decoder = s.decoder
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
    yield from s.drain()
    yield from s.items(decoder.close())


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
