"""Running a pipeline ahead of its reader in a background thread: ``prefetch`` and
the read-ahead of big records and of ``interleave(num_parallel_calls=...)``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

from .._files import ReadAhead
from ._op import EpochKey, Upstream, _Op

#: How long closing an iterator waits for its background thread.
_JOIN_TIMEOUT = 5.0


#: The name of a thread that runs a pipeline ahead of its reader.
PREFETCH_THREAD = "tfrecord_lite-prefetch"


def _prefetch(make: Callable[[], Iterator[Any]], size: int) -> Iterator[Any]:
    """``make()``'s items, run in a thread at most ``size`` items ahead of the reader."""
    ahead: ReadAhead[Any] = ReadAhead(
        make,
        size,
        name=PREFETCH_THREAD,
        what="this prefetching iterator",
        again="iterate the dataset again in this process",
        close_timeout=_JOIN_TIMEOUT,
    )
    try:
        yield from ahead
    finally:
        ahead.close()


class _Prefetch(_Op):
    transparent = True

    def __init__(self, size: int) -> None:
        self.size = size

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return _prefetch(lambda: upstream(key), self.size)

    def describe(self) -> str:
        return f"prefetch({self.size})"
