"""Ops that pick elements by position: ``take``, ``skip``, ``repeat`` and tf.data's
``shard`` of elements."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, Optional

from ._op import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, EpochKey, Upstream, _close, _Op


class _Take(_Op):
    transparent = True

    def __init__(self, count: int) -> None:
        self.count = count

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return _closing_slice(upstream(key), 0, None if self.count < 0 else self.count)

    def cardinality(self, n: int) -> int:
        if self.count < 0:
            return n
        if n == INFINITE_CARDINALITY:
            return self.count
        return n if n == UNKNOWN_CARDINALITY else min(n, self.count)


class _Skip(_Op):
    transparent = True

    def __init__(self, count: int) -> None:
        self.count = count

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        if self.count < 0:  # tf.data: skip(-1) skips everything
            return _closing_slice(upstream(key), 0, 0)
        return _closing_slice(upstream(key), self.count, None)

    def cardinality(self, n: int) -> int:
        if self.count < 0:
            return 0 if n != INFINITE_CARDINALITY else n
        return n if n < 0 else max(0, n - self.count)


def _closing_slice(items: Iterator[Any], start: int, stop: Optional[int]) -> Iterator[Any]:
    try:
        yield from itertools.islice(items, start, stop)
    finally:
        _close(items)


class _Repeat(_Op):
    transparent = True

    def __init__(self, count: Optional[int]) -> None:
        self.count = count

    def cardinality(self, n: int) -> int:
        if self.count is None:
            return 0 if n == 0 else INFINITE_CARDINALITY
        if self.count == 0:
            return 0
        return n if n < 0 else n * self.count

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        reps = itertools.count() if self.count is None else range(self.count)
        for rep in reps:
            it = upstream((*key, rep))
            empty = True
            try:
                for x in it:
                    empty = False
                    yield x
            finally:
                _close(it)
            if empty:  # repeating nothing forever would hang
                return


def _every(records: Iterator[bytes], start: int, step: int) -> Iterator[bytes]:
    try:
        yield from itertools.islice(records, start, None, step)
    finally:
        _close(records)


class _ElementShard(_Op):
    """tf.data's ``shard`` on elements: every ``n``-th from ``i``."""

    def __init__(self, n: int, i: int) -> None:
        self.n = n
        self.i = i

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return _every(upstream(key), self.i, self.n)

    def cardinality(self, n: int) -> int:
        if n < 0:
            return n
        return n // self.n + (1 if self.i < n % self.n else 0)

    def describe(self) -> str:
        return f"shard({self.n}, {self.i})"
