"""Block scanning: every complete record of a buffer in one pass (sans-I/O).

This is the fast core of :class:`tfrecord_lite._framing.RecordDecoder`. It does
what a per-record loop does (find each record, check the CRC of its length and
of its data, copy it out) but in phases over the whole buffer:

1. boundaries: record ``k + 1`` starts where record ``k`` ends. When records
   have equal lengths (one writer, fixed layout) every boundary is predicted
   and confirmed at once with NumPy; otherwise a tight loop reads lengths;
2. length CRCs: computed once per *distinct* length (a header's CRC depends
   only on its 8 length bytes), then compared with NumPy;
3. data CRCs: one call per record to the CRC backend, compared with NumPy.

The result is exactly the per-record loop's: the same records, and the same
error (kind, offset, index) at the first bad record, with every good record
before it returned first.
"""

from __future__ import annotations

import struct
from typing import NamedTuple, Optional, Union

import numpy as np

from ._crc import crc32c, mask, mask_array

__all__ = ["Scan", "scan"]

Buffer = Union[bytes, bytearray, memoryview]

HEADER_SIZE = 12
OVERHEAD = 16
_U64 = struct.Struct("<Q")


class Scan(NamedTuple):
    """Outcome of :func:`scan`.

    ``records``: the complete, verified records, in order. ``consumed``: bytes of
    the buffer they span. ``problem``: ``None``, or why scanning stopped early at
    ``consumed``: ``"header"`` (bad length CRC), ``"data"`` (bad data CRC),
    ``"claim"`` (a length beyond ``limit``). ``need``: for a clean stop, how many
    bytes must be available at ``consumed`` before another record can complete.
    """

    records: list[bytes]
    consumed: int
    problem: Optional[str]
    need: int


def _boundaries(
    buf: Buffer, end: int, max_records: int, limit: Optional[int]
) -> tuple[list[int], list[int], int, int, bool]:
    """(starts, lengths, stop, need, claim) of the complete records from offset 0.

    ``claim`` is True when the incomplete record at ``stop`` claims more bytes than ``limit``.
    """
    starts: list[int] = []
    lengths: list[int] = []
    pos = 0
    unpack = _U64.unpack_from
    if end >= HEADER_SIZE and max_records != 0:
        (first,) = unpack(buf, 0)
        step = first + OVERHEAD
        count = min(end // step, max_records if max_records > 0 else end)
        if first < end and count > 1:
            # Predict equal-length records and confirm all their length fields at once.
            arr = np.frombuffer(buf, dtype=np.uint8, count=count * step).reshape(count, step)
            lens = arr[:, :8].copy().view("<u8")[:, 0]
            same = lens == first
            good = count if same.all() else int(np.argmin(same))
            starts = list(range(0, good * step, step))
            lengths = [first] * good
            pos = good * step
    left = max_records - len(starts) if max_records >= 0 else end  # records still allowed
    add_start = starts.append
    add_length = lengths.append
    last = end - HEADER_SIZE  # a header must start at or before this offset
    while pos <= last and left:
        (length,) = unpack(buf, pos)
        nxt = pos + length + OVERHEAD
        if nxt > end:
            # Bytes that are here are fine even past ``limit`` (a file that grew since
            # its size was taken); a claim is an error only for bytes that are not.
            total = length + OVERHEAD
            return starts, lengths, pos, total, limit is not None and pos + total > limit
        add_start(pos)
        add_length(length)
        pos = nxt
        left -= 1
    return starts, lengths, pos, HEADER_SIZE, False


def _u32_at(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The little-endian uint32 at each offset of a byte array, as uint64."""
    out: np.ndarray = data[offsets].astype(np.uint64)
    out |= data[offsets + 1].astype(np.uint64) << np.uint64(8)
    out |= data[offsets + 2].astype(np.uint64) << np.uint64(16)
    out |= data[offsets + 3].astype(np.uint64) << np.uint64(24)
    return out


def _header_ok(buf: Buffer, pos: int) -> bool:
    return mask(crc32c(buf[pos : pos + 8])) == int.from_bytes(buf[pos + 8 : pos + 12], "little")


def scan(
    buf: Buffer, *, verify: bool = True, max_records: int = -1, limit: Optional[int] = None
) -> Scan:
    """Decode the complete records at the start of ``buf``.

    ``max_records`` (-1: no limit) caps how many are returned; ``limit`` is the
    number of bytes the whole stream has from ``buf[0]`` on, when known, so a
    length field claiming more is reported at once (``problem == "claim"``).
    """
    end = len(buf)
    starts, lengths, stop, need, claim = _boundaries(buf, end, max_records, limit)
    n = len(starts)
    bad_at = n  # index of the first bad record
    problem: Optional[str] = None
    mv = memoryview(buf)
    records = _copy(buf, mv, starts, lengths)
    if verify and n:
        data = np.frombuffer(buf, dtype=np.uint8)
        s = np.asarray(starts, dtype=np.int64)
        ln = np.asarray(lengths, dtype=np.uint64)
        stored_hdr = _u32_at(data, s + 8)
        if lengths[0] == lengths[-1] and (ln == ln[0]).all():
            # One length (one writer, fixed layout): one header CRC to compute.
            expected = mask_array(np.array([crc32c(_U64.pack(int(ln[0])))], dtype=np.uint64))
        else:
            uniq, inverse = np.unique(ln, return_inverse=True)
            expected = mask_array(
                np.array([crc32c(_U64.pack(int(u))) for u in uniq.tolist()], dtype=np.uint64)
            )[inverse.reshape(-1)]
        bad = np.flatnonzero(stored_hdr != expected)
        if len(bad):
            bad_at = int(bad[0])
            problem = "header"
        m = bad_at
        if m:
            # The CRC of each record's data, taken from the bytes objects handed out.
            crcs = np.fromiter(map(crc32c, records[:m] if m < n else records), np.uint64, m)
            foot = s[:m] + HEADER_SIZE + ln[:m].astype(np.int64)
            stored = _u32_at(data, foot)
            bad = np.flatnonzero(mask_array(crcs) != stored)
            if len(bad):
                bad_at = int(bad[0])
                problem = "data"
    elif verify and not n and end >= HEADER_SIZE and not _header_ok(buf, 0):
        return Scan([], 0, "header", HEADER_SIZE)
    # The record we stopped at is incomplete: its length CRC is checkable already,
    # and a damaged length must not make us wait for (or claim) absurd sizes.
    incomplete = claim or stop + need > end
    if problem is None and verify and incomplete and end - stop >= HEADER_SIZE:  # noqa: SIM102
        if not _header_ok(buf, stop):
            bad_at, problem = n, "header"
    if problem is None and claim:
        return Scan(records, stop, "claim", need)
    if problem is not None:
        consumed = starts[bad_at] if bad_at < n else stop
        return Scan(records[:bad_at], consumed, problem, need)
    return Scan(records, stop, None, need)


def _copy(buf: Buffer, mv: memoryview, starts: list[int], lengths: list[int]) -> list[bytes]:
    if isinstance(buf, bytes):
        return [buf[a + HEADER_SIZE : a + HEADER_SIZE + b] for a, b in zip(starts, lengths)]
    return [bytes(mv[a + HEADER_SIZE : a + HEADER_SIZE + b]) for a, b in zip(starts, lengths)]
