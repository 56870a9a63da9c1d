"""Reading a byte range of a compressed file's decompressed stream, from a seek point.

:class:`GzRanges` answers ``read(start, n)`` in decompressed offsets: it starts an
inflater at the last seek point of the index (:mod:`tfrecord_lite._files._gzindex`)
at or before ``start`` (a block: :func:`~tfrecord_lite._files._restart.restart`;
a GZIP member or the ZLIB stream: a fresh inflater), drops the output before
``start`` and returns the ``n`` bytes after it, crossing into following GZIP
members as needed. Output is made at most :data:`CHUNK` bytes per call, so memory
is bounded whatever the stream holds.

The inflater a read leaves off with is kept, so a read that starts at or after
where the last one ended (iterating, consecutive slices) goes on from there
instead of from a seek point. Each read takes the kept inflater for itself, so
threads can read at once (each from its own seek point).

Random reads (a shuffled ``MapDataset``, ``global_shuffle``) land anywhere: a read
that lies within one span between two seek points inflates that whole span and
keeps it in a per-process cache of spans, least recently used dropped first, up
to the ``gzip_span_cache`` setting's bytes (``TFRECORD_LITE_GZIP_SPAN_CACHE``; 0:
off), so the next records read from that span cost a slice. A span over a quarter
of the cache (a file without seek points inside its stream) is not kept; a span
that inflates short is never kept (the caller raises for the short read).
"""

from __future__ import annotations

import itertools
import os
import threading
import zlib
from collections import OrderedDict
from typing import Any, Callable, Optional

import numpy as np

from .. import _settings
from ._gzindex import START, GzIndex, SeekPoint
from ._restart import restart
from ._sniff import GZIP_MAGIC

__all__ = ["CHUNK", "GzRanges", "SeekPointError"]

#: At most this many output bytes per inflate call.
CHUNK = 1024 * 1024
#: Compressed bytes read at a time, at most; a cursor's first read is
#: :data:`_FIRST_READ` bytes, each next one twice the last (a read close after its
#: seek point, as with closely flushed files, reads and copies little).
_READ = 256 * 1024
_FIRST_READ = 16 * 1024

ReadAt = Callable[[int, int], bytes]


class SeekPointError(Exception):
    """Internal: inflating from a seek point failed or ended early (the index is
    not this file's, or is damaged); the caller raises StaleIndexError."""

    def __init__(self, message: str, point: int) -> None:
        super().__init__(message)
        self.point = point


class _Cursor:
    """An inflater standing at output offset ``out``."""

    def __init__(self, index: GzIndex, k: int, read_at: ReadAt) -> None:
        p: SeekPoint = index.points[k]
        self.point = k
        self.read_at = read_at
        self.step = _FIRST_READ
        self.gzip = index.compression == "GZIP"
        self.out = p.out
        byte, bit = divmod(p.bit, 8)
        self.raw = p.kind != START  # inside a deflate stream: raw inflate
        if self.raw:
            first = read_at(byte, 1) if bit else b""
            if bit and not first:
                raise SeekPointError("the seek point is past the end of the file", k)
            self.z, self.pending = restart(p.window, first[0] if bit else 0, bit)
            self.comp = byte + 1 if bit else byte
        else:
            self.z = zlib.decompressobj(31 if self.gzip else 15)
            self.pending = b""
            self.comp = byte
        self.ended = False

    def _more(self) -> bytes:
        data = self.read_at(self.comp, self.step)
        self.comp += len(data)
        self.step = min(_READ, 2 * self.step)
        return data

    def _next_stream(self) -> None:
        """After the end of a stream: the next GZIP member, or the end."""
        tail = self.z.unused_data
        if self.raw:  # the trailer a raw inflater leaves: CRC32 + size, or Adler-32
            need = 8 if self.gzip else 4
            while len(tail) < need:
                more = self._more()
                if not more:
                    break
                tail += more
            tail = tail[need:]
        self.raw = False
        if not self.gzip:
            self.ended = True
            return
        while len(tail) < 2:
            more = self._more()
            if not more:
                break
            tail += more
        if tail[:2] != GZIP_MAGIC:
            self.ended = True
            return
        self.z = zlib.decompressobj(31)
        self.pending = tail

    def produce(self, limit: int) -> bytes:
        """The next output bytes (at most ``limit``); ``b""`` at the end of the file."""
        while not self.ended:
            if self.z.eof:
                self._next_stream()
                continue
            if not self.pending:
                self.pending = self._more()
                if not self.pending:
                    self.ended = True  # cut short: the caller sees too few bytes
                    break
            try:
                got: bytes = self.z.decompress(self.pending, limit)
            except zlib.error as err:
                raise SeekPointError(f"inflating fails ({err})", self.point) from None
            self.pending = b"" if self.z.eof else self.z.unconsumed_tail
            if got:
                self.out += len(got)
                return got
        return b""


class _Spans:
    """The per-process cache of inflated spans: (reader, seek point) -> bytes."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self.nbytes = 0

    def get(self, key: tuple[int, int]) -> Optional[bytes]:
        with self.lock:
            span = self.spans.get(key)
            if span is not None:
                self.spans.move_to_end(key)
            return span

    def put(self, key: tuple[int, int], span: bytes, budget: int) -> None:
        with self.lock:
            if key in self.spans:
                return
            self.spans[key] = span
            self.nbytes += len(span)
            while self.nbytes > budget and self.spans:
                self.nbytes -= len(self.spans.popitem(last=False)[1])

    def forget(self, reader: int) -> None:
        with self.lock:
            for key in [k for k in self.spans if k[0] == reader]:
                self.nbytes -= len(self.spans.pop(key))


_SPANS = _Spans()
_READER_IDS = itertools.count()


def _after_fork() -> None:
    """A forked child gets a fresh lock (another thread may have held it at the fork)."""
    _SPANS.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class GzRanges:
    """``read(start, n)``: bytes of the decompressed stream (see the module docs)."""

    def __init__(self, index: GzIndex, read_at: ReadAt) -> None:
        self.index = index
        self.read_at = read_at
        self._outs = np.array([p.out for p in index.points], dtype=np.int64)
        self._lock = threading.Lock()
        self._kept: Optional[_Cursor] = None
        self._id = next(_READER_IDS)

    def _span(self, k: int) -> tuple[int, int]:
        """The output offsets of the span from seek point ``k`` to the next one."""
        lo = int(self._outs[k])
        hi = int(self._outs[k + 1]) if k + 1 < len(self._outs) else int(self.index.total_out)
        return lo, hi

    def caches(self, start: int) -> bool:
        """Whether the span ``start`` lies in is kept by the cache once read (so reads
        in it need not be joined into one)."""
        lo, hi = self._span(self.point_before(start))
        return 0 < 4 * (hi - lo) <= _settings.gzip_span_cache()

    def _cached(self, start: int, n: int) -> Optional[bytes]:
        """The bytes from the cached span ``start`` lies in (inflated and kept now if
        the read lies within one span the cache may hold); None: read as usual."""
        budget = _settings.gzip_span_cache()
        if budget <= 0:
            return None
        k = self.point_before(start)
        lo, hi = self._span(k)
        if start + n > hi or 4 * (hi - lo) > budget:
            return None
        key = (self._id, k)
        span = _SPANS.get(key)
        if span is None:
            cur = _Cursor(self.index, k, self.read_at)
            parts: list[bytes] = []
            while cur.out < hi:
                got = cur.produce(min(CHUNK, hi - cur.out))
                if not got:
                    break
                parts.append(got)
            span = b"".join(parts)
            if len(span) != hi - lo:
                return span[start - lo : start - lo + n]  # short: the caller raises
            _SPANS.put(key, span, budget)
        return span[start - lo : start - lo + n]

    def point_before(self, start: int) -> int:
        """The number of the last seek point at or before output offset ``start``."""
        return int(np.searchsorted(self._outs, start, side="right")) - 1

    def _cursor(self, start: int) -> _Cursor:
        k = self.point_before(start)
        with self._lock:
            kept, self._kept = self._kept, None
        if kept is not None and int(self._outs[k]) <= kept.out <= start:
            return kept
        return _Cursor(self.index, k, self.read_at)

    def read(self, start: int, n: int) -> bytes:
        """``n`` bytes from ``start`` (fewer only where the file ends early)."""
        with self._lock:
            kept = self._kept
        if kept is None or not int(self._outs[self.point_before(start)]) <= kept.out <= start:
            cached = self._cached(start, n)  # not just after where the last read left off
            if cached is not None:
                return cached
        cur = self._cursor(start)
        while cur.out < start:
            got = cur.produce(min(CHUNK, start - cur.out))
            if not got:
                break
        parts: list[bytes] = []
        have = 0
        if cur.out == start:
            while have < n:
                got = cur.produce(min(CHUNK, n - have))
                if not got:
                    break
                parts.append(got)
                have += len(got)
        if not cur.ended:
            with self._lock:
                self._kept = cur
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def drop(self) -> None:
        """Forget the kept inflater and the cached spans of this file (their memory)."""
        with self._lock:
            self._kept = None
        _SPANS.forget(self._id)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_lock"] = None
        state["_kept"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._id = next(_READER_IDS)
