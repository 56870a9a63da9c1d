"""One epoch's iterator over a dataset."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any, Optional

from ._op import _close


def _collided(err: ValueError) -> bool:
    """Whether ``err`` says another thread is inside the generator right now (raised by
    the call itself, before the generator ran: nothing was consumed)."""
    tb = err.__traceback__
    return (tb is None or tb.tb_next is None) and str(err) == "generator already executing"


#: What :meth:`_DatasetIterator._step` returns when another thread is inside the generator.
_COLLIDED = object()


class _DatasetIterator:
    """One epoch's iterator. ``close()`` (or leaving the loop) stops its threads and files.

    Thread-safe: threads sharing one iterator each get the next element in turn,
    every element goes to exactly one of them, and all of them see the end of the
    epoch only once it is reached. One thread pays nothing for this: the lock is
    taken only once a second thread has been seen in ``__next__``.
    """

    def __init__(self, it: Iterator[Any]) -> None:
        self._it: Optional[Iterator[Any]] = it
        self._lock = threading.Lock()
        self._shared = False  # set when two threads met in __next__: take the lock

    def __iter__(self) -> _DatasetIterator:
        return self

    def __next__(self) -> Any:
        if not self._shared:
            x = self._step()
            if x is not _COLLIDED:
                return x
            self._shared = True
        return self._next_locked()

    def _next_locked(self) -> Any:
        with self._lock:
            while True:
                x = self._step()
                if x is not _COLLIDED:
                    return x
                time.sleep(0)  # a call begun before the lock was in use: let it end

    def _step(self) -> Any:
        """The next element, or :data:`_COLLIDED` when another thread is inside the
        generator (StopIteration at the end, or once the epoch ended)."""
        it = self._it
        if it is None:
            raise StopIteration
        try:
            return next(it)
        except ValueError as err:
            if _collided(err):
                return _COLLIDED
            self._end(it)
            raise
        except BaseException:
            self._end(it)
            raise

    def _end(self, it: Iterator[Any]) -> None:
        """The epoch ends with an error: every thread's next ``__next__`` stops."""
        self._it = None
        with contextlib.suppress(ValueError):
            _close(it)

    def close(self) -> None:
        with self._lock:
            it, self._it = self._it, None
        _close(it)

    def __enter__(self) -> _DatasetIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
