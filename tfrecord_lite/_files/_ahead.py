"""Iterating ahead: the items of an iterator, produced by a background thread.

One mechanism for every read-ahead of the library: GZIP/ZLIB streams inflated
ahead of the framing (:mod:`tfrecord_lite._files._compress`), ``Dataset.prefetch``, and
the blocks a parser reads ahead (:mod:`tfrecord_lite._data._dataset`).

:class:`ReadAhead` runs ``make()`` and iterates the result in a daemon thread,
keeping at most ``depth`` items in a queue for the reader:

* the reader gets every item in order, then the exception the source raised (if
  any), after the items before it; a ``KeyboardInterrupt`` in the source is
  forwarded the same way;
* :meth:`ReadAhead.close` (also on garbage collection) stops the thread and waits
  for it: the thread closes the source before it ends;
* the thread holds the queue and a stop flag, not the :class:`ReadAhead`, so a
  reader that is dropped unclosed is collected, and its ``__del__`` stops the thread;
* a reader used in the child of a ``fork`` (which has no copy of the thread) says
  so instead of waiting forever.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from collections.abc import Iterator
from typing import Callable, Generic, Optional, TypeVar, Union

__all__ = ["ReadAhead"]

T = TypeVar("T")

#: How long the reader waits on the queue before checking that the thread still runs.
_WAIT = 1.0


class _Failed:
    """The thread's exception, queued after the items before it."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_END = _Failed(StopIteration())  # queued when the source ended normally


def _produce(
    make: Callable[[], Iterator[T]],
    q: queue.Queue[Union[T, _Failed]],
    stop: threading.Event,
) -> None:
    """The thread of :class:`ReadAhead`: the source's items, then its end."""
    end: _Failed = _END
    source: Optional[Iterator[T]] = None
    try:
        source = make()
        for item in source:
            q.put(item)
            if stop.is_set():
                return
    except BaseException as err:  # handed to the reader, raised there
        end = _Failed(err)
    finally:
        close = getattr(source, "close", None)
        try:
            if close is not None:
                close()
        except BaseException as err:  # pragma: no cover - a generator's own cleanup
            if end is _END:
                end = _Failed(err)
    if not stop.is_set():
        q.put(end)


class ReadAhead(Generic[T]):
    """The items of ``source``, produced by a background thread ahead of the reader.

    ``source``: an iterator (the thread iterates it; nobody else may touch it
    meanwhile), or a function that makes one (called in the thread). At most
    ``depth`` items wait in the queue. ``name``: the thread's name. ``what`` and
    ``again``: how an error names this reader, and what to do when it is used in
    another process than the one that started it. ``close_timeout``: the longest
    :meth:`close` waits for a thread busy inside the source (None: until it stops;
    a daemon thread that outlives the wait stops after its current item).
    """

    def __init__(
        self,
        source: Union[Iterator[T], Callable[[], Iterator[T]]],
        depth: int = 1,
        *,
        name: str = "tfrecord_lite-ahead",
        what: str = "this reader",
        again: str = "open it again in this process",
        close_timeout: Optional[float] = None,
    ) -> None:
        if callable(source) and not hasattr(source, "__next__"):
            make: Callable[[], Iterator[T]] = source
        else:
            it: Iterator[T] = source  # type: ignore[assignment]

            def make() -> Iterator[T]:
                return it

        self._queue: queue.Queue[Union[T, _Failed]] = queue.Queue(max(1, depth))
        self._stop = threading.Event()
        self._done = False
        self._pid = os.getpid()
        self._what = what
        self._again = again
        self._close_timeout = close_timeout
        self._thread = threading.Thread(
            target=_produce, args=(make, self._queue, self._stop), name=name, daemon=True
        )
        self._thread.start()

    def __iter__(self) -> ReadAhead[T]:
        return self

    def __next__(self) -> T:
        if self._done:
            raise StopIteration
        get = self._queue.get
        while True:
            try:
                item = get(timeout=_WAIT)
                break
            except queue.Empty:
                if self._thread.is_alive() or not self._queue.empty():
                    continue
                if self._done:  # closed (by another thread) meanwhile
                    raise StopIteration from None
                self._done = True
                if self._pid != os.getpid():  # the child of a fork has no copy of the thread
                    raise RuntimeError(
                        f"{self._what} was started in another process (before a fork): "
                        f"its background thread is not in this one; {self._again}"
                    ) from None
                raise RuntimeError(  # pragma: no cover - _produce always queues its end
                    f"the background thread of {self._what} stopped without a result"
                ) from None
        if type(item) is _Failed:
            self._done = True
            self._thread.join()
            if item is _END:
                raise StopIteration
            raise item.error
        return item  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the thread (it closes the source) and wait for it. Idempotent."""
        self._done = True
        self._stop.set()
        thread = self._thread
        if thread.ident is None or thread is threading.current_thread() or sys.is_finalizing():
            return  # at interpreter exit a daemon thread may never run again: no wait
        q = self._queue
        limit = self._close_timeout
        deadline = None if limit is None else time.monotonic() + limit
        while thread.is_alive():
            try:  # make room: a put the thread is blocked in returns, it sees the stop
                while True:
                    q.get_nowait()
            except queue.Empty:
                pass
            if deadline is not None and time.monotonic() >= deadline:
                break
            thread.join(0.05)
        try:
            while True:
                q.get_nowait()  # drop the items nobody will read
        except queue.Empty:
            pass

    def __del__(self) -> None:
        try:  # noqa: SIM105 - contextlib may be gone when this runs at interpreter exit
            self.close()
        except Exception:
            pass
