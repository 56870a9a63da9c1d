"""Reading a URL: large ranged requests, the next block fetched while the current one is read.

:class:`RemoteReader` is a seekable file over a URL that fetches it in blocks of
:data:`REMOTE_BLOCK_SIZE` bytes, requesting the next block in the background while
the current one is parsed; :func:`prefetch` starts fetching the first block of files
before they are opened (datasets use it to fetch ``num_parallel_reads`` objects at
once); :func:`fetch` is one ranged request, its answer checked. All of them share
one pool of :data:`MAX_FETCH_THREADS` threads a process.
"""

from __future__ import annotations

import errno
import io
import os
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Optional

from ._urls import errors, filesystem, is_url, object_size

__all__ = [
    "MAX_FETCH_THREADS",
    "REMOTE_BLOCK_SIZE",
    "RemoteReader",
    "fetch",
    "fetch_pool",
    "prefetch",
]

#: Bytes per ranged request when reading a URL front to back (and the read-ahead:
#: one such block is fetched in the background while the previous one is parsed).
REMOTE_BLOCK_SIZE = 4 * 1024 * 1024
#: Requests in flight at once in this process (all readers and prefetches together).
MAX_FETCH_THREADS = 32
#: Files whose first block may be fetched ahead of being opened (see :func:`prefetch`).
_MAX_WARM = 32


def fetch_pool() -> ThreadPoolExecutor:
    """The threads that fetch blocks for this process (made anew in a forked child)."""
    global _POOL, _POOL_PID
    pid = os.getpid()
    if _POOL is None or pid != _POOL_PID:  # a forked child makes its own threads
        with _POOL_LOCK:
            if _POOL is None or pid != _POOL_PID:
                _POOL = ThreadPoolExecutor(MAX_FETCH_THREADS, thread_name_prefix="tfrecord-fetch")
                _POOL_PID = pid
                _WARM.clear()
    return _POOL


_POOL: Optional[ThreadPoolExecutor] = None
_POOL_PID = -1
_POOL_LOCK = threading.Lock()
#: URL -> future of (size, first block), fetched ahead of opening (see prefetch()).
_WARM: OrderedDict[tuple[str, int], Future[tuple[int, bytes]]] = OrderedDict()


def fetch(url: str, start: int, end: int) -> bytes:
    """Bytes ``start`` to ``end`` of a URL: one ranged request, its answer checked.

    An answer longer than the range asked for means the server ignored ``Range``
    (HTTP 200 with the whole object): its bytes are not those asked for, so it is an
    ``OSError`` naming the URL and what the server did, never data. (Shorter answers
    are the end of the object: callers that know its size check them.)
    """
    fs, p = filesystem(url)
    with errors(url, "read"):
        data = bytes(fs.cat_file(p, start=start, end=end))
    if len(data) > end - start:
        raise OSError(
            errno.EIO,
            f"the server ignored the byte range of a ranged read: asked for bytes "
            f"{start}-{end - 1} ({end - start} bytes), it sent {len(data)} bytes (a server "
            "that does not honour Range answers HTTP 200 with the whole object). Reads "
            "at an offset cannot be trusted here: copy the file locally first, or serve "
            "it from a server that honours Range",
            str(url),
        )
    return data


def _first_block(url: str, block: int) -> tuple[int, bytes]:
    total = object_size(url)
    return total, fetch(url, 0, min(block, total)) if total else b""


def prefetch(paths: list[str], block_size: int = REMOTE_BLOCK_SIZE) -> None:
    """Start fetching the first block of each URL in ``paths`` in the background.

    :func:`open_read` of one of them then starts from that block. Local paths are
    ignored; at most 32 first blocks are held ahead (the oldest are dropped).
    """
    for path in paths:
        if not is_url(path):
            continue
        key = (str(path), block_size)
        if key in _WARM:
            continue
        pool = fetch_pool()
        _WARM[key] = pool.submit(_first_block, path, block_size)
        while len(_WARM) > _MAX_WARM:
            _WARM.popitem(last=False)


class RemoteReader(io.RawIOBase):
    """A read-only, seekable file over a URL, fetched in ranged requests of
    ``block_size`` bytes; the next block is requested while the current one is read."""

    def __init__(self, url: str, block_size: int = REMOTE_BLOCK_SIZE, read_ahead: int = 1) -> None:
        super().__init__()
        self.name = str(url)
        self._url = url
        self._block = max(64 * 1024, int(block_size))
        self._ahead = max(0, int(read_ahead))
        self._blocks: dict[int, Future[bytes]] = {}
        self._pos = 0
        warm = _WARM.pop((str(url), self._block), None)
        if warm is not None:
            self.size, first = warm.result()
            done: Future[bytes] = Future()
            done.set_result(first)
            self._blocks[0] = done
        else:
            self.size = object_size(url)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_SET:
            pos = offset
        elif whence == os.SEEK_CUR:
            pos = self._pos + offset
        elif whence == os.SEEK_END:
            pos = self.size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def _get(self, b: int) -> Future[bytes]:
        fut = self._blocks.get(b)
        if fut is None:
            start = b * self._block
            fut = fetch_pool().submit(fetch, self._url, start, min(start + self._block, self.size))
            self._blocks[b] = fut
        return fut

    def read(self, n: Optional[int] = -1) -> bytes:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        end = self.size if n is None or n < 0 else min(self.size, self._pos + n)
        if self._pos >= end:
            return b""
        first = self._pos // self._block
        last = (end - 1) // self._block
        nblocks = (self.size + self._block - 1) // self._block
        for b in list(self._blocks):
            if b < first or b > last + self._ahead:
                self._blocks.pop(b)  # behind us, or a window we sought away from
        for b in range(first, min(nblocks, last + 1 + self._ahead)):
            self._get(b)
        parts = []
        for b in range(first, last + 1):
            data = self._blocks[b].result()
            lo = max(self._pos, b * self._block) - b * self._block
            hi = min(end, (b + 1) * self._block) - b * self._block
            parts.append(data[lo:hi] if (lo, hi) != (0, len(data)) else data)
        out = parts[0] if len(parts) == 1 else b"".join(parts)
        if len(out) != end - self._pos:
            raise OSError(
                errno.EIO,
                f"the object changed while it was read (got {len(out)} of "
                f"{end - self._pos} bytes at byte {self._pos})",
                self.name,
            )
        self._pos = end
        return out

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._blocks.clear()
        super().close()
