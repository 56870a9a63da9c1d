"""Decoding TFRecord streams: records out of bytes, with no I/O (sans-I/O).

The layout and the reading rules are :mod:`tfrecord_lite._record._format`'s. That is
``on_error="raise"``. ``"skip"`` reports each problem as a
:class:`~tfrecord_lite.SkipReport` and resynchronises on the next intact record
(:mod:`tfrecord_lite._record._resync`); ``"stop"`` reports the first one and ends there.

Nothing here allocates according to a length field before the bytes it
describes have arrived, so a hostile 16-byte input that claims a 2**62-byte
record costs nothing.

API: :func:`iter_records` decodes a complete buffer; :class:`RecordDecoder` decodes
a stream fed in chunks of any size (the I/O layer uses it over file blocks and
decompressor output). The records of each chunk are found by the block scan of
:mod:`tfrecord_lite._record._scan`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Callable, NamedTuple, Optional, Union, cast

from .._errors import RecordTooLargeError, TFRecordError
from ._format import (
    CRC,
    HEADER_SIZE,
    LENGTH,
    RECORD_OVERHEAD,
    as_buffer,
    cut_short,
    data_error,
    data_ok,
    header_error,
    header_ok,
    too_large,
)
from ._resync import SkipReport, check_max_record_size, check_on_error, next_header
from ._scan import scan

__all__ = ["RecordDecoder", "iter_records"]

Buffer = Union[bytes, bytearray, memoryview]


def iter_records(
    buf: Buffer,
    *,
    verify: bool = True,
    offset: int = 0,
    index: int = 0,
    on_error: str = "raise",
    on_skip: Optional[Callable[[SkipReport], None]] = None,
) -> Iterator[bytes]:
    """Yield each record of a complete, in-memory TFRecord stream as ``bytes``.

    ``offset`` and ``index`` are added to the positions reported in errors (for
    a buffer that is a slice of a larger stream). A stream that ends inside a
    record raises :class:`TruncatedRecordError` after the complete records.
    ``on_error`` / ``on_skip``: as :class:`RecordDecoder`.
    """
    buf = as_buffer(buf)
    decoder = RecordDecoder(
        verify=verify,
        offset=offset,
        index=index,
        stream_size=len(buf),
        on_error=on_error,
        on_skip=on_skip,
    )
    # The caller's buffer is used in place (no copy); it must not change while iterating.
    decoder._feed(buf)
    while True:
        batch = decoder.records(max_records=1024)
        if not batch:
            break
        yield from batch
    yield from decoder.close()


class _OpenSkip(NamedTuple):
    start: int
    reason: str
    error: TFRecordError
    record: int  # the damaged record's index


class RecordDecoder:
    """Incremental TFRecord decoder: feed it bytes, take out complete records.

    >>> d = RecordDecoder()
    >>> d.feed(encode_record(b"foo")[:5])
    >>> d.records()
    []
    >>> d.feed(encode_record(b"foo")[5:])
    >>> d.records()
    [b'foo']
    >>> d.close()    # raises TruncatedRecordError if a partial record is left
    []

    Each record is an independent ``bytes`` object. :attr:`offset` is the stream
    offset of the next undecoded byte and :attr:`index` the index of the next
    record (both start at the values given to the constructor).

    When a bad record is found after some good ones in the same call, the good
    ones are returned and the error is raised by the next call, so no intact
    record is lost to an error that follows it.

    ``stream_size``, when known (a plain file's size), lets the decoder reject a
    length field that claims more bytes than the stream has as soon as it sees
    the header, instead of waiting for data that will never come.

    ``max_record_size`` (default ``None``: no limit): a length field claiming more
    data bytes is a :class:`RecordTooLargeError` as soon as the header is seen,
    before any of the record is buffered.

    ``on_error`` says what a damaged or truncated stream does:

    ``"raise"`` (default)
        raise the error (after the good records before it), as TensorFlow does.
    ``"skip"``
        report the damage and go on: after a record whose data CRC fails, at the
        next record when its header checks out (the length was intact), else at
        the next offset where a whole record verifies (header and data CRC). A
        stream that ends inside a record is reported too. Nothing is skipped
        silently: each skipped stretch is a :class:`SkipReport`, appended to
        :attr:`skipped` and passed to ``on_skip`` when given. Each skip counts as
        one record in :attr:`index`.
    ``"stop"``
        end the stream quietly at the first problem, reporting it the same way.

    In ``"skip"`` mode :meth:`close` returns the records that only the end of the
    stream lets it recover (rare: records after a false record start).
    """

    def __init__(
        self,
        *,
        verify: bool = True,
        offset: int = 0,
        index: int = 0,
        stream_size: Optional[int] = None,
        on_error: str = "raise",
        on_skip: Optional[Callable[[SkipReport], None]] = None,
        max_record_size: Optional[int] = None,
    ) -> None:
        self.verify = verify
        self.offset = offset
        self.index = index
        self.stream_size = None if stream_size is None else offset + stream_size
        self.on_error = check_on_error(on_error)
        self.max_record_size = check_max_record_size(max_record_size)
        #: Every :class:`SkipReport` so far (``on_error`` "skip" / "stop").
        self.skipped: list[SkipReport] = []
        self._on_skip = on_skip
        # A cap on the bytes buffered for one incomplete record, checked as they
        # arrive (the I/O layer's default for compressed streams): unlike
        # max_record_size it lets a stream that ends first report its truncation.
        self._soft_limit: Optional[int] = None
        # Bytes received but not yet decoded, in arrival order; joined only once
        # enough of them have arrived to make progress, so a huge record fed in
        # small chunks is joined once, not once per chunk.
        self._chunks: list[Buffer] = []
        self._pending = 0
        self._need = HEADER_SIZE
        self._error: Optional[Exception] = None
        self._closed = False
        self._eof = False
        self._stopped = False
        # on_error="skip": the damaged stretch being skipped, and how to get out of it.
        self._skip: Optional[_OpenSkip] = None
        self._scan_from = 0  # stream offset where the search for a record resumes
        self._prefer: Optional[int] = None  # try this record start first (length was intact)
        self._discard_to: Optional[int] = None  # drop bytes up to here unbuffered (too large)
        self._tentative: Optional[tuple[int, int]] = None  # (offset, length): header ok, data due
        self._cause: Optional[tuple[TFRecordError, str]] = None

    @property
    def pending(self) -> int:
        """Bytes fed but not yet returned as records (or skipped)."""
        return self._pending

    @property
    def stopped(self) -> bool:
        """True once ``on_error="stop"`` ended the stream: later bytes are ignored."""
        return self._stopped

    def feed(self, data: Buffer) -> None:
        """Add the next bytes of the stream.

        ``bytes`` are kept as they are; any other buffer is copied, so the caller may
        reuse it (e.g. with ``readinto``) as soon as ``feed`` returns.
        """
        data = as_buffer(data)
        self._feed(data if isinstance(data, bytes) else bytes(data))

    def _feed(self, data: Buffer) -> None:
        if self._closed:
            raise ValueError("RecordDecoder.feed() called after close()")
        if not data or self._stopped:
            return
        if self._discard_to is not None and not self._pending:
            # Skipping a record too large to buffer: its bytes go unkept.
            drop = min(self._discard_to - self.offset, len(data))
            if drop > 0:
                self.offset += drop
                if drop == len(data):
                    return
                data = memoryview(data)[drop:]
        self._chunks.append(data)
        self._pending += len(data)

    def _discard_ahead(self) -> int:
        """Bytes the decoder will drop unread next (the I/O layer may seek past them)."""
        if self._discard_to is None or self._pending:
            return 0
        return max(self._discard_to - self.offset, 0)

    def _advance(self, n: int) -> None:
        """``n`` bytes of the stream were passed over without being fed (after a seek)."""
        self.offset += n

    def _release_tail(self, block: int) -> int:
        """Give back the incomplete record at the end of the bytes fed: its length.

        For a source that can seek back (a plain local file): instead of keeping
        the tail of one block and joining it with the next (a copy of the whole
        next block), the caller seeks back by the returned number of bytes and
        reads the next block from the record's start. Only done when the decoder
        is waiting for more bytes (``on_error="raise"``, no error pending), the
        tail lies inside the last block fed, and the record fits in ``block``
        bytes; otherwise 0 (nothing released, decoding goes on as usual).
        """
        n = self._pending
        if (
            n == 0
            or n >= self._need
            or self._need > block
            or len(self._chunks) != 1
            or self.on_error != "raise"
            or self._error is not None
            or self._soft_limit is not None
        ):
            return 0
        self._chunks = []
        self._pending = 0
        self._need = HEADER_SIZE
        return n

    def records(self, max_records: Optional[int] = None) -> list[bytes]:
        """Return the records that are complete in the bytes fed so far (at most ``max_records``)."""
        if self._error is not None:
            raise self._error
        if self.on_error == "raise":
            return cast("list[bytes]", self._records_raise(max_records))
        out: list[bytes] = []
        while not self._stopped and not out:
            if self._pending < self._need and not self._eof:
                break
            if self._skip is not None:
                if self._resync():
                    continue
                break
            over = self._over_soft_limit()
            if over is not None:
                assert isinstance(over, RecordTooLargeError) and over.length is not None
                self._begin("too-large", over, over.length)
                continue
            out, problem = self._decode(max_records)
            if problem is None:
                break
            self._begin(*problem)
        return out

    # ------------------------------------------------------------------ decoding

    def _step(
        self, max_records: Optional[int], spans: bool = False
    ) -> tuple[Buffer, Sequence[bytes], int, Optional[TFRecordError], str, Optional[int], int]:
        """Scan the pending bytes: (buffer, records, end of them, error, reason, length, need).

        ``error`` is the problem at the end of the records, if any; ``reason`` its
        :class:`SkipReport` reason; ``length`` the bad record's length when its
        header was intact; ``need`` the bytes wanted before the next try.
        """
        chunks = self._chunks
        buf: Buffer = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        end = len(buf)
        limit = None if self.stream_size is None else self.stream_size - self.offset
        result = scan(
            buf,
            verify=self.verify,
            max_records=-1 if max_records is None else max_records,
            limit=limit,
            spans=spans,
        )
        out = result.records
        pos = result.consumed
        offset = self.offset + pos
        index = self.index + len(out)
        err: Optional[TFRecordError] = None
        reason = ""
        length: Optional[int] = None
        if result.problem == "header":
            err = header_error(buf, pos, index, offset)
            reason = "header"
        elif result.problem == "data":
            (length,) = LENGTH.unpack_from(buf, pos)
            data_end = pos + HEADER_SIZE + length
            (stored,) = CRC.unpack_from(buf, data_end)
            err = data_error(buf[pos + HEADER_SIZE : data_end], stored, index, offset + HEADER_SIZE)
            reason = "data"
        elif result.problem == "claim":
            assert limit is not None
            (claimed,) = LENGTH.unpack_from(buf, pos)
            err = cut_short(claimed, max(limit - pos, end - pos), offset, index)
            reason = "truncated"
        else:
            cap = self.max_record_size
            if cap is not None and out and end > cap + RECORD_OVERHEAD:
                # A complete record over the limit (fed in one piece): cut the batch there.
                for i, r in enumerate(out):
                    if len(r) > cap:
                        pos -= sum(len(x) for x in out[i:]) + RECORD_OVERHEAD * (len(out) - i)
                        length = len(r)
                        out = out[:i]
                        offset = self.offset + pos
                        index = self.index + i
                        err = too_large(length, cap, offset, index)
                        reason = "too-large"
                        break
            claim = result.need - RECORD_OVERHEAD  # the incomplete record's length, if any
            if err is None and result.need > HEADER_SIZE:
                soft = self._soft_limit
                if cap is not None and claim > cap:
                    err = too_large(claim, cap, offset, index)
                elif soft is not None and claim > soft and end - pos > soft + HEADER_SIZE:
                    err = too_large(claim, soft, offset, index, default=True)
                if err is not None:
                    length = claim
                    reason = "too-large"
        need = result.need
        soft = self._soft_limit
        if soft is not None and need > soft + HEADER_SIZE + 1:
            need = soft + HEADER_SIZE + 1  # look again once the limit is crossed
        return buf, out, pos, err, reason, length, need

    def _over_soft_limit(self) -> Optional[TFRecordError]:
        """The record at :attr:`offset` if it is incomplete and over the soft limit.

        Checked from its header alone: the pending bytes are not joined (that would
        double the memory a deflate bomb gets to use).
        """
        soft = self._soft_limit
        if soft is None or self._pending <= soft + HEADER_SIZE:
            return None
        head = b""
        for chunk in self._chunks:
            head += bytes(chunk[: HEADER_SIZE - len(head)])
            if len(head) == HEADER_SIZE:
                break
        (claim,) = LENGTH.unpack_from(head, 0)
        if claim <= soft or claim + RECORD_OVERHEAD <= self._pending:
            return None
        return too_large(claim, soft, self.offset, self.index, default=True)

    def _spans(self) -> Sequence[bytes]:
        """:meth:`records`, as :class:`RecordSpans` of the buffers read where it can.

        For a reader that hands the records straight to the parser (``on_error``
        "raise" only; other modes return a list as :meth:`records` does).
        """
        if self.on_error != "raise" or self._error is not None:
            return self.records()  # (which raises a pending error)
        return self._records_raise(None, spans=True)

    def _records_raise(self, max_records: Optional[int], spans: bool = False) -> Sequence[bytes]:
        if self._pending < self._need:
            return []
        over = self._over_soft_limit()
        if over is not None:
            self._error = over
            self._chunks, self._pending = [], 0  # nothing more will be read from them
            raise over
        buf, out, pos, err, _, _, need = self._step(max_records, spans)
        end = len(buf)
        offset = self.offset + pos
        index = self.index + len(out)
        if err is not None:
            # Remembered, so that later calls (and close()) raise this same error.
            self._error = err
            self._keep(buf, pos, end, offset, index, HEADER_SIZE)
            if not out:
                raise err
            return out
        self._keep(buf, pos, end, offset, index, need)
        return out

    def _decode(
        self, max_records: Optional[int]
    ) -> tuple[list[bytes], Optional[tuple[str, TFRecordError, Optional[int]]]]:
        """One scan in skip/stop mode: (records, problem at the end of them or None)."""
        buf, found, pos, err, reason, length, need = self._step(max_records)
        out = cast("list[bytes]", found)
        end = len(buf)
        offset = self.offset + pos
        index = self.index + len(out)
        if err is None and self._eof and pos < end and not out:
            # The stream ended inside this record.
            err, reason = self._end_error(buf, pos, end, offset, index), "truncated"
            length = None
            if self._cause is not None and self._cause[1] == "compression":
                err, reason = self._cause[0], "compression"
        if err is not None:
            self._keep(buf, pos, end, offset, index, HEADER_SIZE)
            # With records before it, the problem is met again (and handled) next call.
            return out, None if out else (reason, err, length)
        self._keep(buf, pos, end, offset, index, need)
        return out, None

    def _end_error(self, buf: Buffer, pos: int, end: int, offset: int, index: int) -> TFRecordError:
        have = end - pos
        length = LENGTH.unpack_from(buf, pos)[0] if have >= HEADER_SIZE else None
        return cut_short(length, have, offset, index)

    def _keep(self, buf: Buffer, pos: int, end: int, offset: int, index: int, need: int) -> None:
        self._chunks = [memoryview(buf)[pos:] if pos else buf] if pos < end else []
        self._pending = end - pos
        self.offset = offset
        self.index = index
        self._need = need

    def _drop(self) -> None:
        self.offset += self._pending
        self._chunks = []
        self._pending = 0
        self._need = HEADER_SIZE

    # ------------------------------------------------------------------ skipping

    def _report(
        self,
        start: int,
        length: Optional[int],
        skip: _OpenSkip,
        *,
        exact: bool,
        to_end: bool,
    ) -> None:
        report = SkipReport(
            None, start, length, skip.reason, skip.record, skip.error, exact=exact, to_end=to_end
        )
        self.skipped.append(report)
        if self._on_skip is not None:
            self._on_skip(report)

    def _begin(self, reason: str, err: TFRecordError, length: Optional[int]) -> None:
        """A problem at :attr:`offset`: stop there, or start skipping."""
        skip = _OpenSkip(self.offset, reason, err, self.index)
        if self.on_error == "stop":
            rest: Optional[int] = None
            if self._eof:
                rest = self._pending
            elif self.stream_size is not None:
                rest = max(self.stream_size - self.offset, self._pending)
            if reason == "compression":
                rest = None
            self._stopped = True
            self._report(self.offset, rest, skip, exact=False, to_end=True)
            self._drop()
            return
        self._skip = skip
        self._scan_from = self.offset + 1
        self._prefer = self._discard_to = self._tentative = None
        if length is not None and reason in ("data", "too-large"):
            # The header was intact: the next record should start right after this one.
            self._prefer = self.offset + RECORD_OVERHEAD + length
            if reason == "too-large":
                # Not buffered (that is the point): dropped as it streams past.
                self._discard_to = self._scan_from = self._prefer

    def _resync_max(self) -> Optional[int]:
        caps = [c for c in (self.max_record_size, self._soft_limit) if c is not None]
        return min(caps) if caps else None

    def _resync(self) -> bool:
        """Look for the end of the skipped stretch; True once decoding can go on."""
        skip = self._skip
        assert skip is not None
        eof = self._eof
        if self._discard_to is not None:
            if self._discard_to - self.offset > self._pending:
                if eof:
                    self._discard_to = self._prefer = None
                    return self._skip_to_end()
                self._drop()  # and _feed drops what follows, up to _discard_to
                return False
            self._discard_to = None
        base = self.offset
        chunks = self._chunks
        buf: Buffer = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        self._chunks = [buf] if buf else []
        end = len(buf)
        if self._prefer is not None:
            q = self._prefer - base
            if end - q >= HEADER_SIZE:
                self._prefer = None
                if header_ok(buf, q):
                    return self._resume(buf, q, exact=True)
            elif eof:
                self._prefer = None
                if q == end:
                    return self._resume(buf, q, exact=True)
            else:
                self._need = q + HEADER_SIZE
                return False
        limit = None if self.stream_size is None else self.stream_size - base
        max_length = self._resync_max()
        s = max(self._scan_from - base, 0)
        while True:
            if self._tentative is not None:
                c, length = self._tentative[0] - base, self._tentative[1]
                total = c + RECORD_OVERHEAD + length
                if total <= end:
                    self._tentative = None
                    if data_ok(buf, c, length):
                        return self._resume(buf, c, exact=False)
                    s = c + 1
                    continue
                if not eof:
                    # Header good, data still to come: wait for it (bounded by the length
                    # checks of next_header), then judge it by its data CRC.
                    self._scan_from = base + c + 1
                    self._keep(buf, c, end, base + c, self.index, total - c)
                    return False
                self._tentative = None
                s = c + 1
                continue
            hit = next_header(buf, s, stream_size=limit, max_length=max_length)
            if hit is None:
                if eof:
                    return self._skip_to_end()
                keep = min(max(s, end - (HEADER_SIZE - 1)), end)
                self._scan_from = base + keep
                self._keep(buf, keep, end, base + keep, self.index, end - keep + 1)
                return False
            c, length = hit
            if c + RECORD_OVERHEAD + length <= end:
                if data_ok(buf, c, length):
                    return self._resume(buf, c, exact=False)
                s = c + 1
                continue
            self._tentative = (base + c, length)

    def _resume(self, buf: Buffer, pos: int, *, exact: bool) -> bool:
        skip = self._skip
        assert skip is not None
        base = self.offset
        self._report(skip.start, base + pos - skip.start, skip, exact=exact, to_end=False)
        self._skip = None
        self._prefer = self._discard_to = self._tentative = None
        self._keep(buf, pos, len(buf), base + pos, skip.record + 1, HEADER_SIZE)
        return True

    def _skip_to_end(self) -> bool:
        skip = self._skip
        assert skip is not None
        self._drop()
        length = None if skip.reason == "compression" else self.offset - skip.start
        self._report(skip.start, length, skip, exact=False, to_end=True)
        self._skip = None
        self._prefer = self._discard_to = self._tentative = None
        self.index = skip.record + 1
        return False

    # ------------------------------------------------------------------ end

    def close(self) -> list[bytes]:
        """Declare the end of the stream.

        ``on_error="raise"``: raise if the stream ends inside a record (or a
        deferred error is pending); returns ``[]``. ``"skip"`` / ``"stop"``: report
        the end instead, and return any records that only the end of the stream
        made decodable (usually none).
        """
        return self._close()

    def _close(
        self, cause: Optional[TFRecordError] = None, cause_reason: str = "truncated"
    ) -> list[bytes]:
        """:meth:`close`, for a stream that ended because of ``cause`` (the I/O layer:
        a GZIP/ZLIB stream that is damaged or has no end marker). In skip/stop mode
        the end is reported with ``cause`` when nothing else reports it."""
        if self._closed:
            return []
        if self.on_error == "raise":
            self._closed = True
            self._close_raise()
            return []
        was_stopped = self._stopped
        self._eof = True
        self._cause = None if cause is None else (cause, cause_reason)
        first = len(self.skipped)
        out: list[bytes] = []
        while True:
            batch = self.records()
            if not batch:
                break
            out.extend(batch)
        self._closed = True
        reported = any(r.to_end and r.reason == cause_reason for r in self.skipped[first:])
        if cause is not None and not was_stopped and not reported:
            skip = _OpenSkip(self.offset, cause_reason, cause, self.index)
            length = 0 if cause_reason == "truncated" else None
            self._report(self.offset, length, skip, exact=False, to_end=True)
        return out

    def _close_raise(self) -> None:
        if self._error is not None:
            raise self._error
        have = self._pending
        if have == 0:
            return
        if have < HEADER_SIZE:
            raise cut_short(None, have, self.offset, self.index)
        buf = b"".join(self._chunks)
        if self.verify and not header_ok(buf):
            raise header_error(buf, 0, self.index, self.offset)
        raise cut_short(LENGTH.unpack_from(buf, 0)[0], have, self.offset, self.index)
