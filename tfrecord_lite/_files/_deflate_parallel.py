"""Deflate over threads: one standard GZIP/ZLIB stream, deflated a chunk at a time.

The way pigz does it: each :data:`DEFLATE_CHUNK` of input is deflated on its own
thread, primed with the 32 KiB of input before it (the deflate window; so sizes stay
within about 0.1% of one stream's), and ends with a sync flush; the chunks joined
behind zlib's header and followed by the CRC-32 and size (GZIP) or Adler-32 (ZLIB) of
the whole input are one ordinary deflate stream. :mod:`tfrecord_lite._files._compress`
chooses when (ISA-L or zlib-ng, more than one core, no per-record flush) and with
which backend.
"""

from __future__ import annotations

import struct
import zlib
from collections import deque
from typing import Any, Optional

__all__ = ["DEFLATE_CHUNK", "ChunkedDeflate", "raw_bits"]

#: Input bytes each thread of a chunked deflate compresses at a time.
DEFLATE_CHUNK = 1024 * 1024


def raw_bits(wbits: int) -> int:
    """The window bits (9-15) of a zlib ``wbits`` (raw, zlib or gzip form)."""
    bits = -wbits if wbits < 0 else wbits - 16 if wbits > 15 else wbits
    return max(bits, 9)


def _deflate_piece(
    mod: Any,
    level: int,
    bits: int,
    mem_level: int,
    strategy: int,
    zdict: bytes,
    parts: list[Any],
    mode: int,
) -> bytes:
    """Raw deflate of one chunk (``parts``, in order), primed with the bytes before it;
    it ends byte-aligned (``mode``: a sync or full flush) or ends the stream (Z_FINISH)."""
    if zdict:
        z = mod.compressobj(level, zlib.DEFLATED, -bits, mem_level, strategy, zdict=zdict)
    else:
        z = mod.compressobj(level, zlib.DEFLATED, -bits, mem_level, strategy)
    out = [z.compress(part) for part in parts]
    out.append(z.flush(mode))
    return b"".join(out)


class ChunkedDeflate:
    """One standard GZIP/ZLIB stream, deflated a :data:`DEFLATE_CHUNK` at a time by threads.

    Each chunk is deflated independently, primed with the window of input before
    it (so matches still reach back as far as one stream's would), and ends with
    a sync flush (byte-aligned, not final); the last ends the stream. Joined in
    order behind zlib's header and followed by the checksum of all the input
    (CRC-32 and size for GZIP, Adler-32 for ZLIB), they are one ordinary deflate
    stream that any inflater reads. At most two chunks per thread are in flight,
    so memory stays flat; a file of one chunk is deflated in the caller's thread.
    """

    def __init__(
        self,
        backend: str,
        module: Any,
        backend_level: int,
        wbits: int,
        mem_level: int,
        strategy: int,
        threads: int,
        header: bytes,
    ) -> None:
        """``module`` is the backend's (zlib's interface); ``header`` starts the stream."""
        #: The backend deflating (``"isal"`` or ``"zlib-ng"``) and its level.
        self.backend = backend
        self.level = 6 if backend_level == -1 else backend_level  # -1 is zlib's 6
        #: Threads deflating.
        self.threads = threads
        self._mod = module
        self._bits = raw_bits(wbits)
        self._window = 1 << self._bits
        self._opts = (backend_level, mem_level, 0 if backend == "isal" else strategy)
        self._form = "gzip" if wbits > 15 else "zlib" if wbits > 0 else "raw"
        self._head = header
        self._check = 0 if self._form == "gzip" else 1
        self._size = 0
        self._pieces: list[bytes] = []
        self._n = 0
        self._zdict = b""
        self._pool: Any = None
        self._running: deque[Any] = deque()
        self._done: list[bytes] = []
        self._finished = False

    def _submit(self, parts: list[Any], mode: int) -> None:
        """Deflate ``parts`` (bytes, or views of bytes) after everything submitted so far."""
        mod, check = self._mod, self._check
        for part in parts:
            if self._form == "gzip":
                check = mod.crc32(part, check)
            elif self._form == "zlib":
                check = mod.adler32(part, check)
            self._size += len(part)
        self._check = check
        level, mem_level, strategy = self._opts
        args = (mod, level, self._bits, mem_level, strategy, self._zdict, parts, mode)
        window = self._window
        if mode == zlib.Z_FULL_FLUSH:
            self._zdict = b""
        else:  # the last ``window`` bytes of input so far prime the next chunk
            tail: list[bytes] = []
            need = window
            for part in reversed(parts):
                take = bytes(part[-need:]) if len(part) > need else bytes(part)
                tail.append(take)
                need -= len(take)
                if need <= 0:
                    break
            tail.append(self._zdict[-need:] if need > 0 else b"")
            self._zdict = b"".join(reversed(tail))[-window:]
        if self._pool is None and mode == zlib.Z_FINISH and not self._running:
            self._done.append(_deflate_piece(*args))  # all in one chunk: no thread needed
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(
                self.threads, thread_name_prefix="tfrecord_lite-deflate"
            )
        while len(self._running) >= 2 * self.threads:
            self._done.append(self._running.popleft().result())
        try:
            self._running.append(self._pool.submit(_deflate_piece, *args))
        except RuntimeError:
            # The interpreter is exiting (a writer finished by its __del__): the
            # chunks submitted so far are done; this one is deflated here.
            while self._running:
                self._done.append(self._running.popleft().result())
            self._done.append(_deflate_piece(*args))

    def _take(self, wait: bool) -> bytes:
        """The output ready so far, in order (``wait``: of everything submitted)."""
        running, done = self._running, self._done
        while running and (wait or running[0].done()):
            done.append(running.popleft().result())
        if not done:
            return b""
        if self._head:
            done.insert(0, self._head)
            self._head = b""
        out = b"".join(done)
        done.clear()
        return out

    def _cut(self, mode: Optional[int]) -> None:
        """Submit the buffered input a chunk at a time; the rest is submitted with
        ``mode`` at its end, or (``None``) stays buffered."""
        step = DEFLATE_CHUNK
        group: list[Any] = []
        size = 0
        piece: Any
        for piece in self._pieces:
            while size + len(piece) >= step:
                cut = step - size
                view = memoryview(piece)
                group.append(view[:cut] if cut < len(piece) else piece)
                self._submit(group, zlib.Z_SYNC_FLUSH)
                group, size = [], 0
                piece = view[cut:]
            if len(piece):
                group.append(piece)
                size += len(piece)
        if mode is None:
            self._pieces, self._n = group, size
        else:
            self._pieces, self._n = [], 0
            self._submit(group, mode)

    def compress(self, data: Any) -> bytes:
        if self._finished:
            raise zlib.error("compress() after the stream was finished")
        piece = data if type(data) is bytes else bytes(data)  # the caller may reuse its buffer
        if piece:
            self._pieces.append(piece)
            self._n += len(piece)
            if self._n >= DEFLATE_CHUNK:
                self._cut(None)
        return self._take(False)

    def flush(self, mode: int = zlib.Z_FINISH) -> bytes:
        if self._finished:
            return b""
        if mode == zlib.Z_NO_FLUSH:
            return self._take(False)
        if mode == zlib.Z_FINISH:
            self._cut(zlib.Z_FINISH)
            out = self._take(True)
            self._finished = True
            self.close()
            if self._form == "gzip":
                return out + struct.pack("<II", self._check & 0xFFFFFFFF, self._size & 0xFFFFFFFF)
            if self._form == "zlib":
                return out + struct.pack(">I", self._check & 0xFFFFFFFF)
            return out
        # Z_SYNC_FLUSH, Z_FULL_FLUSH (and the rest): everything so far, byte-aligned.
        self._cut(zlib.Z_FULL_FLUSH if mode == zlib.Z_FULL_FLUSH else zlib.Z_SYNC_FLUSH)
        return self._take(True)

    def close(self) -> None:
        """Stop the threads (waiting for the chunks they are on). Idempotent."""
        pool, self._pool = self._pool, None
        self._running.clear()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __del__(self) -> None:
        try:  # noqa: SIM105 - contextlib may be gone when this runs at interpreter exit
            self.close()
        except Exception:
            pass
