"""Reading past damage, without I/O: finding the next record start, and skip reports.

TFRecord has no sync markers, but every record begins with a 12-byte header
whose last 4 bytes are the masked CRC32C of the first 8 (the length). After a
damaged record, the next place where such a header checks out *and* the record
it announces passes its data CRC is, with overwhelming probability, the start
of a real record (a random 12 bytes pass the header test with probability
2**-32; passing the data CRC as well costs another 2**-32).

Used by :class:`tfrecord_lite.RecordDecoder` in ``on_error="skip"`` mode, and by
salvage over files (:mod:`tfrecord_lite._files._salvage`):

* :func:`next_header` finds the next valid header in a buffer, 64 Ki positions
  per vectorised step (a search, not a walk: it tries every offset);
* :func:`find_next_record` is the next offset where a whole record verifies;
* :class:`SkipReport` describes one skipped stretch of a stream: where, how many
  bytes, why, and the error ``on_error="raise"`` would have raised;
* :func:`check_on_error` / :func:`check_max_record_size` validate the readers'
  arguments about damage.

A GZIP/ZLIB stream that is itself damaged cannot be resumed (TensorFlow's
writers emit one deflate stream with no sync points): reading stops there, with
the records before the damage returned and the rest of the file reported.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Optional, Union

import numpy as np

from .._errors import TFRecordError
from ._format import HEADER_SIZE, RECORD_OVERHEAD, byte_view, data_ok, length_crc

__all__ = [
    "MAX_RESYNC_LENGTH",
    "ON_ERROR",
    "REASONS",
    "SkipReport",
    "SkippedDataWarning",
    "check_max_record_size",
    "check_on_error",
    "find_next_record",
    "located",
    "next_header",
    "warn_skip",
]

Buffer = Union[bytes, bytearray, memoryview]

#: A header claiming this many data bytes or more (1 TiB) is never taken for a
#: record start while resynchronising: its three top length bytes must be zero.
MAX_RESYNC_LENGTH = 2**40
#: Candidate positions examined per vectorised step.
_WINDOW = 1 << 16
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


# --------------------------------------------------------------------------- finding records


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
    view = byte_view(buf)
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
            crcs = [length_crc(u) for u in uniq.tolist()]
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
    view = byte_view(buf)
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
