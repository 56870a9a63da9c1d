"""``interleave``: tf.data's deterministic interleave of datasets, and of files read
a list of records at a time (``num_parallel_reads``)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Callable, Optional, TypeVar

from ._lists import _flatten_lists
from ._op import UNKNOWN_CARDINALITY, EpochKey, Upstream, _close, _Op
from ._ops_batch import _chunks
from ._ops_map import _unpacking
from ._prefetch import _prefetch

_T = TypeVar("_T")


#: Marks the end of an iterator in ``next(it, _EXHAUSTED)``.
_EXHAUSTED = object()


def _interleave(
    readers: Iterable[Callable[[], Iterator[Any]]], cycle_length: int, block_length: int
) -> Iterator[Any]:
    """tf.data's deterministic interleave: ``cycle_length`` files open, ``block_length`` records each in turn."""
    pending = iter(readers)
    slots: list[Optional[Iterator[Any]]] = [None] * cycle_length
    exhausted_input = False
    try:
        while True:
            active = False
            for s in range(cycle_length):
                it = slots[s]
                if it is None and not exhausted_input:
                    make = next(pending, None)
                    if make is None:
                        exhausted_input = True
                    else:
                        it = slots[s] = make()
                if it is None:
                    continue
                active = True
                if block_length == 1:
                    record = next(it, _EXHAUSTED)
                    if record is not _EXHAUSTED:
                        yield record
                        continue
                else:
                    taken = 0
                    for taken, record in enumerate(itertools.islice(it, block_length), 1):  # noqa: B007
                        yield record
                    if taken == block_length:
                        continue
                _close(it)  # this file is done: its slot takes the next file on its turn
                slots[s] = None
            if not active and exhausted_input:
                return
    finally:
        for it in slots:
            _close(it)


def _interleave_lists(
    readers: Iterable[Callable[[], Iterator[Sequence[_T]]]], cycle_length: int, block_length: int
) -> Iterator[list[_T]]:
    """:func:`_interleave` of files that hand out their records in lists, as lists.

    The records come out in exactly :func:`_interleave`'s order (over the
    flattened files), and each file is opened, read and closed at the same point
    of that order: a file's next list is fetched only when its turn needs a
    record its current list does not have. An error from a file is raised
    after every record before it (those gathered so far are handed out first).

    Rounds in which every open file still holds records in its current list
    (the usual case) are merged with slice arithmetic: for ``block_length`` 1,
    ``m`` rounds over ``k`` files put file ``j``'s next ``m`` records at
    positions ``j, j + k, j + 2k, ...`` of the output. Memory: one list per
    open file, plus the output list.
    """
    pending = iter(readers)
    its: list[Optional[Iterator[Sequence[_T]]]] = [None] * cycle_length
    bufs: list[Sequence[_T]] = [[] for _ in range(cycle_length)]
    pos = [0] * cycle_length
    exhausted_input = False
    out: list[_T] = []
    try:
        while True:
            out = []
            if block_length == 1 and (exhausted_input or None not in its):
                # Whole rounds: every open file's turn is served from its list.
                live = [s for s in range(cycle_length) if its[s] is not None]
                m = min((len(bufs[s]) - pos[s] for s in live), default=0)
                if m > 0:
                    k = len(live)
                    out = [None] * (m * k)  # type: ignore[list-item]
                    for j, s in enumerate(live):
                        p = pos[s]
                        out[j::k] = bufs[s][p : p + m]
                        pos[s] = p + m
            # One round record by record, fetching lists and opening files as needed.
            active = False
            for s in range(cycle_length):
                it = its[s]
                if it is None and not exhausted_input:
                    make = next(pending, None)
                    if make is None:
                        exhausted_input = True
                    else:
                        try:
                            it = its[s] = make()
                        except BaseException:
                            if out:
                                yield out
                            raise
                        bufs[s], pos[s] = [], 0
                if it is None:
                    continue
                active = True
                need = block_length
                while need:
                    buf, p = bufs[s], pos[s]
                    if p == len(buf):
                        try:
                            nxt = next(it, None)
                        except BaseException:
                            if out:
                                yield out
                            raise
                        if nxt is None:
                            break
                        bufs[s], pos[s] = nxt, 0
                        continue
                    take = min(need, len(buf) - p)
                    if take == 1:
                        out.append(buf[p])
                    else:
                        out.extend(buf[p : p + take])
                    pos[s] = p + take
                    need -= take
                if need:  # this file is done: its slot takes the next file on its turn
                    its[s] = None
                    bufs[s], pos[s] = [], 0
                    _close(it)
            if out:
                yield out
            if not active and exhausted_input:
                return
    finally:
        for it in its:
            _close(it)


class _Interleave(_Op):
    def __init__(
        self, fn: Callable[..., Any], cycle: int, block: int, workers: int, kind: type[Any]
    ) -> None:
        self.fn = _unpacking(fn)
        self.kind = kind  # what ``fn`` must return: Dataset
        self.cycle = cycle
        self.block = block
        self.workers = workers

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        fn, workers, kind = self.fn, self.workers, self.kind

        def open_one(x: Any) -> Iterator[Any]:
            ds = fn(x)
            if not isinstance(ds, kind):
                raise TypeError(
                    f"interleave's map_func must return a Dataset, got {type(ds).__name__}"
                )
            if workers > 0:
                return _flatten_lists(
                    _prefetch(lambda: _chunks(ds._iterate(key), _READ_AHEAD_CHUNK), 2)
                )
            out: Iterator[Any] = ds._iterate(key)
            return out

        items = upstream(key)
        readers = (functools.partial(open_one, x) for x in items)
        return _closing_after(_interleave(readers, self.cycle, self.block), items)

    def cardinality(self, n: int) -> int:
        return UNKNOWN_CARDINALITY

    def describe(self) -> str:
        return f"interleave(cycle_length={self.cycle}, block_length={self.block})"


#: Elements a read-ahead thread of ``interleave(num_parallel_calls=...)`` hands over at once.
_READ_AHEAD_CHUNK = 64


def _closing_after(items: Iterator[Any], other: Iterator[Any]) -> Iterator[Any]:
    try:
        yield from items
    finally:
        _close(items)
        _close(other)
