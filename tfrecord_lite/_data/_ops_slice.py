"""Ops that pick elements by position: ``take``, ``skip``, ``repeat`` and tf.data's
``shard`` of elements."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, Optional

from ._op import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, EpochKey, Upstream, _close, _Op
from ._state import _Level, bad, field_int, resumed


class _Take(_Op):
    transparent = True

    def __init__(self, count: int) -> None:
        self.count = count

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        stop = None if self.count < 0 else self.count
        return _closing_slice(upstream, key, 0, stop, lv, below, self.describe())

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

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        if self.count < 0:  # tf.data: skip(-1) skips everything
            return _closing_slice(upstream, key, 0, 0, lv, below, self.describe())
        return _closing_slice(upstream, key, self.count, None, lv, below, self.describe())

    def cardinality(self, n: int) -> int:
        if self.count < 0:
            return 0 if n != INFINITE_CARDINALITY else n
        return n if n < 0 else max(0, n - self.count)


def _closing_slice(
    upstream: Upstream,
    key: EpochKey,
    start: int,
    stop: Optional[int],
    lv: _Level,
    below: _Level,
    kind: str,
) -> Iterator[Any]:
    """Elements ``start`` to ``stop`` (as ``islice``). State: the inputs taken."""
    saved = resumed(lv, below, kind)
    pos = 0 if saved is None else field_int(saved, "taken", kind)
    if stop is not None and pos > stop:
        raise bad(kind, f"it took {pos} elements, more than {stop}")

    def state(behind: int) -> Optional[dict[str, Any]]:
        if behind > max(0, pos - start):
            return None
        up = below.state(behind)
        return None if up is None else {"kind": kind, "taken": pos - behind, "up": up}

    items = upstream(key)
    lv.get = state
    try:
        if stop is not None and pos >= stop:
            return
        if pos < start:
            for _ in itertools.islice(items, start - pos):
                pos += 1
            if pos < start:
                return
        for x in items:
            pos += 1
            yield x
            if stop is not None and pos >= stop:
                return
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

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        kind = self.describe()
        saved = resumed(lv, below, kind)
        first = 0 if saved is None else field_int(saved, "rep", kind)
        if self.count is not None and first > self.count:
            raise bad(kind, f"repetition {first} of {self.count}")
        rep = first
        n = 0 if saved is None else field_int(saved, "n", kind)  # elements of this repetition

        def state(behind: int) -> Optional[dict[str, Any]]:
            if behind > n:
                return None
            up = below.state(behind)
            return None if up is None else {"kind": kind, "rep": rep, "n": n - behind, "up": up}

        lv.get = state
        reps = itertools.count(first) if self.count is None else range(first, self.count)
        for rep in reps:
            if rep != first:
                below.forget()  # (a stage resumed may have ended before its input started)
            it = upstream((*key, rep))
            empty = n == 0
            try:
                for x in it:
                    empty = False
                    n += 1
                    yield x
            finally:
                _close(it)
            if empty:  # repeating nothing forever would hang
                return
            n = 0


def _every(
    upstream: Upstream, key: EpochKey, start: int, step: int, lv: _Level, below: _Level, kind: str
) -> Iterator[Any]:
    """Elements ``start::step``. State: the inputs taken, the elements handed out."""
    saved = resumed(lv, below, kind)
    pos = out = 0
    if saved is not None:
        pos, out = field_int(saved, "taken", kind), field_int(saved, "out", kind)
        if pos < (0 if out == 0 else start + (out - 1) * step + 1) or pos > start + out * step:
            raise bad(kind, f"{out} elements out after taking {pos}")

    def state(behind: int) -> Optional[dict[str, Any]]:
        if behind > out:
            return None
        m = out - behind
        at = pos if behind == 0 else (0 if m == 0 else start + (m - 1) * step + 1)
        up = below.state(pos - at)
        return None if up is None else {"kind": kind, "taken": at, "out": m, "up": up}

    items = upstream(key)
    lv.get = state
    try:
        for x in items:
            pos += 1
            if pos > start and (pos - 1 - start) % step == 0:
                out += 1
                yield x
    finally:
        _close(items)


class _ElementShard(_Op):
    """tf.data's ``shard`` on elements: every ``n``-th from ``i``."""

    def __init__(self, n: int, i: int) -> None:
        self.n = n
        self.i = i

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        return _every(upstream, key, self.i, self.n, lv, below, self.describe())

    def cardinality(self, n: int) -> int:
        if n < 0:
            return n
        return n // self.n + (1 if self.i < n % self.n else 0)

    def describe(self) -> str:
        return f"shard({self.n}, {self.i})"
