"""Mapping ahead: a function over the items of an iterator, on a pool of threads, in order.

The companion of :mod:`._ahead` (one thread producing items ahead of the reader):
:func:`map_ahead` hands each item to a pool of ``workers`` threads as the reader
advances and gives the results back in the items' order, with at most
``2 * workers`` items in flight. It pays where the function spends its time
outside the GIL (the compiled parse kernels, inflating, building Arrow arrays):
the reader's own thread goes on producing items meanwhile.

What a caller can count on, as without threads:

* results come in the items' order, each once;
* an error raised by the function comes out where its result would have, after
  every result before it (later items may have been mapped already: their results
  are dropped);
* an error raised by the iterator itself comes out after the results of the items
  it gave before it;
* each call runs in a copy of the settings in force where the reader advanced
  (:func:`contextvars.copy_context`), so a ``tfr.options(...)`` block around the
  loop reaches the pool's threads;
* closing the generator (or an error) cancels what has not started, waits for the
  calls running, and closes the iterator.
"""

from __future__ import annotations

import contextvars
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, TypeVar

from .. import _settings

__all__ = ["cores", "map_ahead"]

T = TypeVar("T")
R = TypeVar("R")


def map_ahead(
    fn: Callable[[T], R],
    items: Iterator[T],
    workers: int,
    *,
    name: str = "tfrecord_lite-map",
) -> Iterator[R]:
    """``fn(item)`` for every item of ``items``, on ``workers`` threads, in order
    (module docstring). ``workers`` at most 1: in this thread, one at a time."""
    if workers <= 1:
        try:
            for item in items:
                yield fn(item)
        finally:
            _close(items)
        return
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
    ahead: deque[Future[R]] = deque()
    try:
        while True:
            try:
                item = next(items)
            except StopIteration:
                break
            except Exception:
                while ahead:  # the results before the iterator's error come out first
                    yield ahead.popleft().result()
                raise
            ahead.append(pool.submit(contextvars.copy_context().run, fn, item))
            if len(ahead) >= 2 * workers:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()
    finally:
        for future in ahead:
            future.cancel()
        pool.shutdown(wait=True)
        _close(items)


def cores() -> int:
    """The cores this process may run on, capped by the ``threads`` setting when set
    (``tfr.options(threads=...)``, else ``TFRECORD_LITE_THREADS``): how many threads
    the library's own pools use (compression, table reads).

    Processes that already fill every core (DataLoader workers, Ray or Dask tasks)
    can set it to 1: the library then starts no threads of its own for that work.
    """
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    limit = _settings.threads()
    return n if limit is None else min(n, limit)


def _close(items: Iterator[object]) -> None:
    close = getattr(items, "close", None)
    if close is not None:
        close()
