"""An iterator run ahead in a thread of its own, so ``convert``'s stages overlap: the
records are read (and inflated) in one thread, parsed into tables in another, while the
calling thread writes the tables (pyarrow's Parquet and IPC writers, zlib and the
parse engine release the GIL for their work).

A bounded queue between the stages keeps memory to a few batches. An error in the
thread is raised in the caller at the point its item would have come, and closing the
prefetcher (also when the caller fails or is interrupted) stops the thread before it
reads further.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

__all__ = ["Prefetch"]

T = TypeVar("T")

_DONE = object()
#: How often (seconds) a thread waiting on a full queue looks whether it was closed.
_POLL = 0.1


class Prefetch(Generic[T]):
    """Iterate ``items`` in a daemon thread, up to ``depth`` items ahead of the caller."""

    def __init__(self, items: Iterable[T], depth: int = 2, name: str = "convert") -> None:
        self._items = items
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"tfrecord-lite {name}")
        self._thread.daemon = True
        self._started = False

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        it = iter(self._items)
        try:
            for item in it:
                if not self._put(item):
                    return
            self._put(_DONE)
        except BaseException as e:  # handed to the caller, raised there
            self._put(_Failed(e))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    def start(self) -> None:
        """Start reading ahead now (else: on the first ``iter``)."""
        if not self._started:
            self._started = True
            self._thread.start()

    def __iter__(self) -> Iterator[T]:
        self.start()
        while True:
            item = self._queue.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item

    def close(self) -> None:
        """Stop the thread (it finishes the item it is on) and wait for it."""
        self._stop.set()
        if self._started:
            while self._thread.is_alive():
                with contextlib.suppress(queue.Empty):  # make room for a put it waits on
                    self._queue.get(timeout=_POLL)
            self._thread.join()

    def __enter__(self) -> Prefetch[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Failed:
    """An error raised in the thread, on its way to the caller."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
