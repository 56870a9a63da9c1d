"""Block scanning: every complete record of a buffer in one pass (sans-I/O).

This is the fast core of :class:`tfrecord_lite._record._decoder.RecordDecoder`. It does
what a per-record loop does (find each record, check the CRC of its length and
of its data, copy it out) but in phases over the whole buffer:

1. boundaries: record ``k + 1`` starts where record ``k`` ends. When records
   have equal lengths (one writer, fixed layout) every boundary is predicted
   and confirmed at once with NumPy (a strided view of the length fields, no
   copy; a few are compared first, so varying lengths cost next to nothing);
   otherwise the length fields are followed one by one
   (:func:`~tfrecord_lite._record._lengths.follow_lengths`, or the compiled
   follower the engine lends, which releases the interpreter lock);
2. length CRCs: computed once per *distinct* length (a header's CRC depends
   only on its 8 length bytes; the distinct lengths found with a table of the
   lengths present where they are small, not a sort), then compared with NumPy;
3. data CRCs: one CRC over the whole run of records (below); where that does
   not match, or records are long, one call per record to the CRC backend,
   compared with NumPy.

**One CRC for a run of records.** CRC-32C is affine over GF(2): processing a
record's bytes moves the register by a fixed linear map (set by the byte count)
plus a term that depends on the bytes. A record followed by its own *unmasked*
CRC always leaves the register where any other such record of the same length
would (the "residue" property of CRCs), and a header is fixed by its length. So
a run of records, each with its stored (masked) CRC replaced by the unmasked
value, has one CRC whatever the data: that of the same run of zero-filled valid
records of the same lengths. The scan copies the run into a reused work array
and writes the unmasked stored CRCs into their slots with NumPy; it builds the
zero-filled run the same way (or, for ``n`` records of one length ``L``, keeps
its CRC per ``(L, n)``), and compares two CRCs. Any single damaged record changes
the first (the maps involved are invertible); a mismatch falls back to the
per-record loop, which finds and reports the first bad record exactly as
before. What it gives up: errors in two or more records of one run that cancel
out (chance 2**-32 for random damage, the same as one damaged record passing its
own CRC). It is used for records under :data:`RUN_CRC_BELOW` bytes on average,
where one call per record costs more than the CRC itself; for runs of varied
lengths only under :data:`VARIED_RUN_CRC_BELOW`, as each distinct length also
costs the CRC of that many zero bytes and the zero-filled run is a second pass.

Why a walk of its own: the boundaries of phase 1 are the record-header walk of a
buffer *held in memory*, vectorised (all boundaries of equal-length records
confirmed at once), with every data byte checked; the package's other header reader,
:func:`tfrecord_lite._files._offsets.record_offsets`, reads only the headers of a file
and seeks over the data. Headers are checked with :mod:`tfrecord_lite._record._format`'s
:func:`~tfrecord_lite._record._format.length_crc` (vectorised per distinct length)
and :func:`~tfrecord_lite._record._format.header_ok`.

The result is exactly the per-record loop's: the same records, and the same
error (kind, offset, index) at the first bad record, with every good record
before it returned first. The records come out as ``bytes`` objects, or (for a
reader that hands them straight to the parser) as :class:`RecordSpans`: the
same records left where they are in the buffer, with no copy per record.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Sequence
from typing import NamedTuple, Optional, Union, cast, overload

import numpy as np

from ._crc import crc32c, mask_array, unmask_array
from ._format import HEADER_SIZE, LENGTH, header_ok, length_crc
from ._format import RECORD_OVERHEAD as OVERHEAD
from ._lengths import length_follower

__all__ = ["RecordSpans", "Scan", "join_records", "record_lengths", "scan"]

Buffer = Union[bytes, bytearray, memoryview]

_NONE = np.zeros(0, dtype=np.int64)
#: Records of the first length looked at before all are compared (:func:`_boundaries`).
_PREDICT = 4
#: Lengths below this (plus 4 a record) have their distinct values found with a
#: table, not a sort (:func:`_distinct`).
_TABLE_MIN = 1 << 16
#: Runs of records shorter than this on average have their data CRCs checked with
#: one CRC over the run (module docstring); longer ones record by record.
RUN_CRC_BELOW = 16 * 1024
#: The same for runs whose records are not all of one length. Above it, a run costs
#: more than one call per record: the scan of a block of 12 KB records of varied
#: lengths (SequenceExamples) took 1.45x the CPU with the run's CRC (measured).
VARIED_RUN_CRC_BELOW = 768
_RUN_MIN = 4  # fewer records than this: per record
#: Work arrays (:func:`scratch`) up to this size stay with their thread for reuse.
SCRATCH_KEEP = 32 << 20
_scratch = threading.local()


class Scan(NamedTuple):
    """Outcome of :func:`scan`.

    ``records``: the complete, verified records, in order. ``consumed``: bytes of
    the buffer they span. ``problem``: ``None``, or why scanning stopped early at
    ``consumed``: ``"header"`` (bad length CRC), ``"data"`` (bad data CRC),
    ``"claim"`` (a length beyond ``limit``). ``need``: for a clean stop, how many
    bytes must be available at ``consumed`` before another record can complete.
    """

    records: Sequence[bytes]
    consumed: int
    problem: Optional[str]
    need: int


_Part = tuple[bytes, np.ndarray, np.ndarray]  # (buffer, data starts, data lengths)


class RecordSpans(Sequence[bytes]):
    """Records left in the buffers they were read in, not copied one by one.

    Each part is ``(buffer, starts, lengths)``: record ``i`` of the part is
    ``buffer[starts[i] : starts[i] + lengths[i]]``. It is a ``Sequence[bytes]``:
    an index gives a copy of that one record, iteration gives each record as
    ``bytes``; slices (any step), :meth:`take` and :meth:`join` give more spans
    without copying. A parser reads whole batches from the buffers with
    :meth:`rows` and :meth:`contiguous`, so no record becomes an object of its own.
    The buffers are immutable ``bytes`` (blocks of a TFRecord stream, each record
    after its 12-byte header), so spans stay valid as long as they live.
    """

    __slots__ = ("_ends", "_parts")

    def __init__(self, parts: Sequence[_Part] = ()) -> None:
        self._parts = _merged(parts)
        self._ends = np.cumsum([len(p[1]) for p in self._parts], dtype=np.int64)

    @classmethod
    def join(cls, pieces: Sequence[RecordSpans]) -> RecordSpans:
        """The records of ``pieces``, one after the other."""
        return cls([part for piece in pieces for part in piece._parts])

    @property
    def parts(self) -> list[_Part]:
        """The ``(buffer, starts, lengths)`` parts, in record order."""
        return list(self._parts)

    def __len__(self) -> int:
        return int(self._ends[-1]) if len(self._ends) else 0

    def part_ends(self) -> np.ndarray:
        """Where each part ends, in records: 0 first, then each part's end (int64)."""
        return np.concatenate([[0], self._ends]).astype(np.int64)

    def __repr__(self) -> str:
        return f"RecordSpans({len(self)} records in {len(self._parts)} buffers)"

    def lengths(self) -> np.ndarray:
        """Every record's length (int64), in order."""
        if len(self._parts) == 1:
            return self._parts[0][2]
        if not self._parts:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([p[2] for p in self._parts])

    @property
    def nbytes(self) -> int:
        """The records' bytes in total."""
        return sum(int(p[2].sum()) for p in self._parts)

    def __iter__(self) -> Iterator[bytes]:
        for buf, starts, lengths in self._parts:
            yield from _copy(buf, starts.tolist(), (starts + lengths).tolist())

    @overload
    def __getitem__(self, i: int) -> bytes: ...

    @overload
    def __getitem__(self, i: slice) -> RecordSpans: ...

    def __getitem__(self, i: Union[int, slice]) -> Union[bytes, RecordSpans]:
        n = len(self)
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step == 1:
                return self._range(start, max(start, stop))
            return self.take(np.arange(start, stop, step, dtype=np.int64))
        k = i.__index__()
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError("RecordSpans index out of range")
        p = int(np.searchsorted(self._ends, k, side="right"))
        buf, starts, lengths = self._parts[p]
        j = k - (int(self._ends[p - 1]) if p else 0)
        a = int(starts[j])
        return buf[a : a + int(lengths[j])]

    def _range(self, start: int, stop: int) -> RecordSpans:
        out: list[_Part] = []
        base = 0
        for (buf, starts, lengths), end in zip(self._parts, self._ends.tolist()):
            if end > start and base < stop:
                a, b = max(start - base, 0), min(stop, end) - base
                out.append((buf, starts[a:b], lengths[a:b]))
            base = end
        return RecordSpans(out)

    def take(self, idx: np.ndarray) -> RecordSpans:
        """The records at positions ``idx`` (in that order; negative counts from the end)."""
        n = len(self)
        idx = np.asarray(idx, dtype=np.int64)
        idx = np.where(idx < 0, idx + n, idx)
        if len(idx) and (int(idx.min()) < 0 or int(idx.max()) >= n):
            raise IndexError("RecordSpans index out of range")
        part = np.searchsorted(self._ends, idx, side="right")
        local = idx - self.part_ends()[part]
        # One part per run of positions in the same buffer.
        cuts = [0, *(np.flatnonzero(np.diff(part)) + 1).tolist(), len(idx)]
        out: list[_Part] = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            if b > a:
                buf, starts, lengths = self._parts[int(part[a])]
                out.append((buf, starts[local[a:b]], lengths[local[a:b]]))
        return RecordSpans(out)

    def rows(self, width: int) -> np.ndarray:
        """The records, all ``width`` bytes long, as a 2-D uint8 array (one per row).

        Records evenly spaced in one buffer (one writer, one length) are a strided
        view of it (read-only, no copy); others are copied once into the array.
        """
        if any((lengths != width).any() for _, _, lengths in self._parts):
            raise ValueError(f"RecordSpans.rows({width}) needs records of {width} bytes each")
        views = [_rows_of(buf, starts, width) for buf, starts, _ in self._parts]
        if len(views) == 1:
            return views[0]
        if not views:
            return np.zeros((0, width), dtype=np.uint8)
        return np.concatenate(views)

    def contiguous(self, pad: int) -> tuple[Buffer, np.ndarray, int]:
        """One buffer holding every record, with at least ``pad`` bytes after the last
        one: (buffer, starts, index of a zero byte in it).

        Records of one buffer that has ``pad`` bytes after them are read where they
        are (the zero byte: the top byte of the first record's length field, as no
        record reaches 2**56 bytes). Otherwise each part's stretch from its first
        record to its last is copied whole (the framing between records comes along;
        it is never read), then ``pad`` zero bytes: one copy of the bytes, not one
        per record. The copy goes into this thread's reused work array (no fresh
        pages per call), a memoryview that lasts only until the next such call:
        copy out what is kept.
        """
        if len(self._parts) == 1:
            buf, starts, lengths = self._parts[0]
            zero = int(starts[0]) - HEADER_SIZE + 7
            if len(buf) >= int(starts[-1] + lengths[-1]) + pad and zero >= 0 and buf[zero] == 0:
                return buf, starts, zero
        pieces: list[tuple[Buffer, int, int]] = []
        out: list[np.ndarray] = []
        size = 0
        for buf, starts, lengths in self._parts:
            a, b = int(starts[0]), int(starts[-1] + lengths[-1])
            pieces.append((buf, a, b))
            out.append(starts - (a - size))
            size += b - a
        starts = np.concatenate(out) if out else np.zeros(0, np.int64)
        work = scratch("join", size + pad)
        at = 0
        for block, a, b in pieces:
            work[at : at + b - a] = np.frombuffer(block, dtype=np.uint8, count=b - a, offset=a)
            at += b - a
        work[at:] = 0
        return work.data, starts, len(work) - 1


def join_records(pieces: Sequence[Sequence[bytes]]) -> Sequence[bytes]:
    """The records of ``pieces`` as one sequence, in order: spans joined without a copy
    where every piece is a :class:`RecordSpans`, else a list of them all."""
    if len(pieces) == 1:
        return pieces[0]
    if all(isinstance(p, RecordSpans) for p in pieces):
        return RecordSpans.join(cast("list[RecordSpans]", pieces))
    return [r for p in pieces for r in p]


def record_lengths(records: Sequence[bytes]) -> np.ndarray:
    """The length of every record, as int64."""
    if isinstance(records, RecordSpans):
        return records.lengths()
    return np.fromiter(map(len, records), dtype=np.int64, count=len(records))


def _merged(parts: Sequence[_Part]) -> list[_Part]:
    """The non-empty parts, consecutive parts of one buffer made one."""
    out: list[_Part] = []
    run: list[_Part] = []
    for part in parts:
        if not len(part[1]):
            continue
        if run and run[-1][0] is not part[0]:
            out.append(_one_part(run))
            run = []
        run.append(part)
    if run:
        out.append(_one_part(run))
    return out


def _one_part(run: list[_Part]) -> _Part:
    if len(run) == 1:
        return run[0]
    return run[0][0], np.concatenate([p[1] for p in run]), np.concatenate([p[2] for p in run])


def _rows_of(buf: bytes, starts: np.ndarray, width: int) -> np.ndarray:
    k = len(starts)
    first = int(starts[0])
    step = int(starts[1] - starts[0]) if k > 1 else width
    data = np.frombuffer(buf, dtype=np.uint8)
    if k == 1 or (step >= width and (np.diff(starts) == step).all()):
        return np.lib.stride_tricks.as_strided(
            data[first:], shape=(k, width), strides=(step, 1), writeable=False
        )
    # Every ``width``-byte window of the buffer as a row (a view), then the rows
    # wanted: one copy of each, row by row.
    if not width:
        return np.zeros((k, 0), dtype=np.uint8)
    windows = np.lib.stride_tricks.as_strided(
        data, shape=(len(data) - width + 1, width), strides=(1, 1), writeable=False
    )
    out: np.ndarray = windows[starts]
    return out


def _boundaries(
    buf: Buffer, end: int, max_records: int, limit: Optional[int]
) -> tuple[np.ndarray, np.ndarray, int, int, bool]:
    """(starts, lengths, stop, need, claim) of the complete records from offset 0.

    ``starts`` and ``lengths`` are int64 arrays; ``claim`` is True when the
    incomplete record at ``stop`` claims more bytes than ``limit``.
    """
    head_starts = head_lengths = _NONE
    pos = 0
    if end >= HEADER_SIZE and max_records != 0:
        (first,) = LENGTH.unpack_from(buf, 0)
        step = first + OVERHEAD
        count = min(end // step, max_records if max_records > 0 else end)
        if first < end and count > 1:
            # Predict equal-length records: their length fields, every ``step`` bytes,
            # are a strided view of the buffer (no copy). A few are looked at first,
            # so a block of varying lengths costs next to nothing here.
            lens = np.ndarray((count,), dtype="<u8", buffer=buf, strides=(step,))
            same = lens[:_PREDICT] == first
            if same.all():
                same = lens == first
            good = count if same.all() else int(np.argmin(same))
            head_starts = np.arange(0, good * step, step, dtype=np.int64)
            head_lengths = np.full(good, first, dtype=np.int64)
            pos = good * step
    cap = max_records - len(head_starts) if max_records >= 0 else -1
    starts, stop, length = length_follower()(buf, pos, cap)
    need, claim = HEADER_SIZE, False
    if length is not None:
        # The incomplete record at ``stop`` has its whole header here. Bytes that
        # are here are fine even past ``limit`` (a file that grew since its size
        # was taken); a claim is an error only for bytes that are not.
        need = length + OVERHEAD
        claim = limit is not None and stop + need > limit
    if not len(starts):
        return head_starts, head_lengths, stop, need, claim
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:]
    ends[-1] = stop
    lengths = ends - starts - OVERHEAD
    if len(head_starts):
        starts = np.concatenate([head_starts, starts])
        lengths = np.concatenate([head_lengths, lengths])
    return starts, lengths, stop, need, claim


def unaligned(buf: np.ndarray, dtype: str) -> np.ndarray:
    """The byte array ``buf`` as overlapping words of ``dtype`` (e.g. ``"<u8"``), one
    starting at every byte: a strided view, no copy (writable when ``buf`` is)."""
    width = np.dtype(dtype).itemsize
    return np.ndarray((max(len(buf) - width + 1, 0),), dtype=dtype, buffer=buf, strides=(1,))


def _u32_at(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The little-endian uint32 at each offset of a byte array, as uint64."""
    out: np.ndarray = unaligned(data, "<u4")[offsets].astype(np.uint64)
    return out


@functools.lru_cache(maxsize=64)
def _valid_run_crc(header: bytes, count: int) -> int:
    """CRC of ``count`` valid records with this 12-byte header, of zero bytes, each
    followed by its unmasked CRC."""
    zeros = bytes(LENGTH.unpack_from(header)[0])
    one = header + zeros + crc32c(zeros).to_bytes(4, "little")
    return crc32c(one * count)


def scratch(name: str, size: int) -> np.ndarray:
    """A reused uint8 work array ``name`` of ``size`` bytes, one per thread.

    Its contents last only until the same thread asks for ``name`` again: nothing
    made from it may outlive that (copy out what is kept). Arrays up to
    :data:`SCRATCH_KEEP` bytes are kept for the next call; bigger ones are not.
    """
    held: dict[str, np.ndarray] = _scratch.__dict__
    buf = held.get(name)
    if buf is None or len(buf) < size:
        buf = np.empty(size, dtype=np.uint8)
        if size <= SCRATCH_KEEP:
            held[name] = buf
    return buf[:size]


@functools.lru_cache(maxsize=256)
def _zero_crc(length: int) -> int:
    return crc32c(bytes(length))


def _run_ok(
    data: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    stored: np.ndarray,
    distinct: Optional[tuple[np.ndarray, np.ndarray]],
) -> bool:
    """Whether the data CRCs of the records at ``starts`` (from offset 0, one after the
    other, their headers checked already) all match: one CRC over a copy of the run
    against that of a run of valid zero-filled records of the same lengths (module
    docstring).

    ``data`` is the buffer as bytes; ``stored`` the masked CRCs stored after each
    record (uint64); ``distinct``: the lengths' distinct values and each record's
    index among them, None when all are one. False means "check one by one", not
    "damaged".
    """
    count = len(starts)
    size = int(starts[-1] + lengths[-1]) + OVERHEAD
    run = scratch("run", size)
    run[:] = data[:size]
    raw = unmask_array(stored).astype("<u4")
    if distinct is None:
        one = int(lengths[0])
        slots = run.reshape(count, one + OVERHEAD)[:, HEADER_SIZE + one :]
        slots[:] = raw.view(np.uint8).reshape(count, 4)
        return crc32c(run.data) == _valid_run_crc(bytes(run[:HEADER_SIZE]), count)
    at = starts + HEADER_SIZE + lengths
    unaligned(run, "<u4")[at] = raw
    ref = scratch("ref", size)
    ref[:] = 0
    # The same headers (they are checked), zero data, and the CRC of zeros.
    unaligned(ref, "<u8")[starts] = unaligned(run, "<u8")[starts]
    unaligned(ref, "<u4")[starts + 8] = unaligned(run, "<u4")[starts + 8]
    sizes, which = distinct
    zero = np.array([_zero_crc(k) for k in sizes.tolist()], dtype="<u4")
    unaligned(ref, "<u4")[at] = zero[which]
    return crc32c(run.data) == crc32c(ref.data)


def _distinct(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct lengths, in order, and each record's index among them (what
    ``np.unique(lengths, return_inverse=True)`` gives): where the lengths are small
    next to their count, with a table of the lengths present (no sort)."""
    top = int(lengths.max())
    if top < 4 * len(lengths) + _TABLE_MIN:
        present = np.zeros(top + 1, dtype=bool)
        present[lengths] = True
        rank = np.cumsum(present, dtype=np.int64) - 1
        return np.flatnonzero(present).astype(np.int64), rank[lengths]
    uniq, inverse = np.unique(lengths, return_inverse=True)
    return uniq, inverse.reshape(-1)


def scan(
    buf: Buffer,
    *,
    verify: bool = True,
    max_records: int = -1,
    limit: Optional[int] = None,
    spans: bool = False,
) -> Scan:
    """Decode the complete records at the start of ``buf``.

    ``max_records`` (-1: no limit) caps how many are returned; ``limit`` is the
    number of bytes the whole stream has from ``buf[0]`` on, when known, so a
    length field claiming more is reported at once (``problem == "claim"``).
    ``spans``: the records come as :class:`RecordSpans` of ``buf`` (when it is
    ``bytes``), not copied out one by one.
    """
    end = len(buf)
    s, ln, stop, need, claim = _boundaries(buf, end, max_records, limit)
    n = len(s)
    bad_at = n  # index of the first bad record
    problem: Optional[str] = None
    first = s + HEADER_SIZE  # where each record's data starts
    records: Sequence[bytes]
    if spans and isinstance(buf, bytes):
        records = RecordSpans([(buf, first, ln)])
    else:
        records = _copy(buf, first.tolist(), (first + ln).tolist())
    if verify and n:
        data = np.frombuffer(buf, dtype=np.uint8)
        stored_hdr = _u32_at(data, s + 8)
        one = int(ln[0])
        distinct: Optional[tuple[np.ndarray, np.ndarray]] = None
        if bool(one == ln[-1]) and bool((ln == one).all()):
            # One length (one writer, fixed layout): one header CRC to compute.
            expected = np.array([length_crc(one)], dtype=np.uint64)
        else:
            distinct = _distinct(ln)
            uniq = distinct[0]
            expected = np.array([length_crc(u) for u in uniq.tolist()], dtype=np.uint64)[
                distinct[1]
            ]
        bad = np.flatnonzero(stored_hdr != expected)
        if len(bad):
            bad_at = int(bad[0])
            problem = "header"
        m = bad_at
        stored = _u32_at(data, first[:m] + ln[:m])
        if distinct is not None:
            distinct = (distinct[0], distinct[1][:m])
        below = RUN_CRC_BELOW if distinct is None else min(RUN_CRC_BELOW, VARIED_RUN_CRC_BELOW)
        run = m >= _RUN_MIN and int(ln[:m].sum()) < m * below
        if run and _run_ok(data, s[:m], ln[:m], stored, distinct):
            m = 0  # every data CRC of the run checked at once
        if m:
            if isinstance(records, RecordSpans):
                # Over views of the buffer, each dropped once checked: no record is copied.
                mv = memoryview(buf)
                a = first[:m]
                views = map(mv.__getitem__, map(slice, a.tolist(), (a + ln[:m]).tolist()))
                crcs = np.fromiter(map(crc32c, views), np.uint64, m)
            else:
                # Over the bytes objects handed out.
                crcs = np.fromiter(map(crc32c, records[:m] if m < n else records), np.uint64, m)
            bad = np.flatnonzero(mask_array(crcs) != stored)
            if len(bad):
                bad_at = int(bad[0])
                problem = "data"
    elif verify and not n and end >= HEADER_SIZE and not header_ok(buf, 0):
        return Scan([], 0, "header", HEADER_SIZE)
    # The record we stopped at is incomplete: its length CRC is checkable already,
    # and a damaged length must not make us wait for (or claim) absurd sizes.
    incomplete = claim or stop + need > end
    if problem is None and verify and incomplete and end - stop >= HEADER_SIZE:  # noqa: SIM102
        if not header_ok(buf, stop):
            bad_at, problem = n, "header"
    if problem is None and claim:
        return Scan(records, stop, "claim", need)
    if problem is not None:
        consumed = int(s[bad_at]) if bad_at < n else stop
        return Scan(records[:bad_at], consumed, problem, need)
    return Scan(records, stop, None, need)


def _copy(buf: Buffer, starts: list[int], ends: list[int]) -> list[bytes]:
    """``buf[a:b]`` for each (a, b), as ``bytes``."""
    if isinstance(buf, bytes):
        return list(map(buf.__getitem__, map(slice, starts, ends)))
    mv = memoryview(buf)
    return [bytes(mv[a:b]) for a, b in zip(starts, ends)]
