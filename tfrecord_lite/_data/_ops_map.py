"""Functions applied element by element: ``map`` (in order, optionally on threads),
``filter`` and ``enumerate``."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Optional

import numpy as np

from .._errors import TFRecordError
from ._op import UNKNOWN_CARDINALITY, EpochKey, Upstream, _close, _Op
from ._origin import _LAST, FRESH, failing, handed, made_from, noted, release
from ._state import _Level, decode_held, field_int, replaying, resumed, up_state


def _unpacking(fn: Callable[..., Any]) -> Callable[[Any], Any]:
    """tf.data calls a function on a tuple element with the tuple's components."""

    def call(x: Any) -> Any:
        return fn(*x) if type(x) is tuple else fn(x)

    return call


def _one_to_one(lv: _Level, below: _Level, kind: str) -> None:
    """Publish the state of a stage that answers each input at once with one output."""

    def state(behind: int) -> Optional[dict[str, Any]]:
        up = below.state(behind)
        return None if up is None else {"kind": kind, "up": up}

    lv.get = state


def _mapped(fn: Callable[[Any], Any], items: Iterator[Any]) -> Iterator[Any]:
    """``fn`` of each item; an error names the item's record (see _origin), and each
    result is handed out with the records of its item."""
    last = _LAST
    y: Any = None
    fresh = True  # False once fn gave the same object twice (a constant: never entered)
    try:
        for x in items:
            try:
                y_ = fn(x)
            except TFRecordError as err:
                raise failing(err, x) from None
            except Exception as err:
                noted(err, x)
                raise
            if fresh and type(y_) in FRESH:
                h = last[0]
                if y_ is y:
                    fresh = False
                elif type(x) is bytes:
                    last[0] = (y_, x)  # a record read from a file
                elif h is not None and h[0] is x:
                    last[0] = (y_, h[1])  # (see _origin.handed)
            y = y_
            yield y
    finally:
        release(y)
        _close(items)


def _kept(
    pred: Callable[[Any], Any], items: Iterator[Any], features: Optional[Mapping[str, Any]]
) -> Iterator[Any]:
    try:
        if features is None:
            for x in items:
                try:
                    keep = pred(x)
                except TFRecordError as err:
                    raise failing(err, x) from None
                except Exception as err:
                    noted(err, x)
                    raise
                if keep:
                    yield x
        else:
            from .._examples import parse_single_example

            for x in items:
                try:
                    keep = pred(parse_single_example(x, features))
                except TFRecordError as err:
                    raise failing(err, x) from None
                except Exception as err:
                    noted(err, x)
                    raise
                if keep:
                    yield x
    finally:
        _close(items)


class _Map(_Op):
    def __init__(self, fn: Callable[..., Any], num_parallel_calls: int) -> None:
        self.fn = _unpacking(fn)
        self.name = getattr(fn, "__name__", "fn")
        self.workers = num_parallel_calls

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        kind = self.describe()
        saved = resumed(lv, below, kind)
        if self.workers <= 1:
            _one_to_one(lv, below, kind)
            return _mapped(self.fn, upstream(key))
        items = upstream(key)
        if saved is not None:
            items = replaying(decode_held(saved, kind), items)
        return _parallel_map(self.fn, items, self.workers, (lv, below, kind))

    def describe(self) -> str:
        return f"map({self.name})"


def _parallel_map(
    fn: Callable[[Any], Any],
    items: Iterator[Any],
    workers: int,
    levels: Optional[tuple[_Level, _Level, str]] = None,
) -> Iterator[Any]:
    """``map`` on a thread pool, in order, with at most ``2 * workers`` calls in flight.

    With ``levels`` (its level, the level below, its kind) it publishes its state:
    the inputs in flight are rolled back below, or saved (see ._state).
    """
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tfrecord_lite-map")
    inflight: deque[tuple[Any, Any, Future[Any]]] = deque()
    if levels is not None:
        lv, below, kind = levels

        def state(behind: int) -> Optional[dict[str, Any]]:
            held = [x for x, _, _ in inflight]
            if behind:
                up = below.state(behind + len(held))
                return None if up is None else {"kind": kind, "up": up}
            return {"kind": kind, **up_state(below, held)}

        lv.get = state
    try:
        for x in items:
            # The records ``x`` was made from, known now (the slot changes as we read on).
            records = made_from(x) if type(x) is not bytes else x
            inflight.append((x, records, pool.submit(fn, x)))
            if len(inflight) >= 2 * workers:
                yield _answer(*inflight.popleft())
        while inflight:
            yield _answer(*inflight.popleft())
    finally:
        for _, _, fut in inflight:
            fut.cancel()
        pool.shutdown(wait=True)
        _close(items)


def _answer(x: Any, records: Any, fut: Future[Any]) -> Any:
    """The result of ``fn(x)`` computed on a thread, its errors placed by ``records``
    (what ``x`` was made from), and handed out with them."""
    if records is not None:
        handed(x, records)  # (so that an error is placed as without threads)
    try:
        y = fut.result()
    except TFRecordError as err:
        raise failing(err, x) from None
    except Exception as err:
        noted(err, x)
        raise
    if records is not None and type(y) in FRESH:
        handed(y, records)
    return y


class _Filter(_Op):
    def __init__(
        self, predicate: Callable[[Any], Any], features: Optional[Mapping[str, Any]] = None
    ) -> None:
        self.predicate = predicate
        self.features = features  # set when planning moved a parse past this filter

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        kind = self.describe()
        resumed(lv, below, kind)

        def state(behind: int) -> Optional[dict[str, Any]]:
            return None if behind else {"kind": kind, "up": below.state(0)}

        lv.get = state
        return _kept(_unpacking(self.predicate), upstream(key), self.features)

    def cardinality(self, n: int) -> int:
        return UNKNOWN_CARDINALITY


class _Enumerate(_Op):
    def __init__(self, start: int) -> None:
        self.start = start

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        kind = self.describe()
        saved = resumed(lv, below, kind)
        n = 0 if saved is None else field_int(saved, "n", kind)
        return _enumerated(upstream(key), self.start, n, lv, below, kind)


def _enumerated(
    items: Iterator[Any], start: int, n: int, lv: _Level, below: _Level, kind: str
) -> Iterator[Any]:
    """``(start + i, x)`` for the ``i``-th item, from item ``n`` on. State: ``n``."""

    def state(behind: int) -> Optional[dict[str, Any]]:
        up = below.state(behind)
        return None if up is None or behind > n else {"kind": kind, "n": n - behind, "up": up}

    lv.get = state
    try:
        for x in items:
            n += 1
            yield (np.int64(start + n - 1), x)
    finally:
        _close(items)
