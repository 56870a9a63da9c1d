"""``interleave``: tf.data's deterministic interleave of datasets, and of files read
a list of records at a time (``num_parallel_reads``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

from ._op import UNKNOWN_CARDINALITY, EpochKey, Upstream, _close, _Op
from ._ops_map import _unpacking
from ._prefetch import _gated
from ._state import _Level, bad, decode_held, encode_held, field_int, resumed

if TYPE_CHECKING:
    from ._source_state import Watch

_T = TypeVar("_T")


#: Marks the end of an iterator in ``next(it, _EXHAUSTED)``.
_EXHAUSTED = object()


def _interleave(
    readers: Iterable[Callable[[], Iterator[Any]]], cycle_length: int, block_length: int
) -> Iterator[Any]:
    """tf.data's deterministic interleave: ``cycle_length`` files open, ``block_length`` records each in turn."""
    return _interleaved(
        iter(readers), lambda make, _lv: make(), cycle_length, block_length, _Level(), _Level(), ""
    )


#: One open input of an interleave: the element it was made from, its iterator, its level.
_Slot = tuple[Any, Iterator[Any], _Level]


def _interleaved(
    items: Iterator[Any],
    open_one: Callable[[Any, _Level], Iterator[Any]],
    cycle_length: int,
    block_length: int,
    lv: _Level,
    below: _Level,
    kind: str,
    saved: Optional[dict[str, Any]] = None,
) -> Iterator[Any]:
    """:func:`_interleave` of ``open_one(x, level)`` for each item ``x``, with its state.

    The state: which input is open in each slot (the element it was made from and
    its own state), the slot whose turn it is and how many elements of its block
    it gave, whether the inputs have run out, and the state of ``items``.
    """
    slots: list[Optional[_Slot]] = [None] * cycle_length
    s = taken = 0  # whose turn it is, and how many of its block it gave
    exhausted_input = False

    def state(behind: int) -> Optional[dict[str, Any]]:
        if behind:
            return None
        return {
            "kind": kind,
            "up": below.state(0),
            "slot": s,
            "taken": taken,
            "exhausted": exhausted_input,
            "open": [
                None if sl is None else {"input": encode_held([sl[0]])[0], "state": sl[2].state(0)}
                for sl in slots
            ],
        }

    try:
        if saved is not None:
            s, taken = field_int(saved, "slot", kind), field_int(saved, "taken", kind)
            opened = saved.get("open")
            if s >= cycle_length or taken > block_length:
                raise bad(kind, f"slot {s}, {taken} taken, for a cycle of {cycle_length}")
            if not isinstance(opened, list) or len(opened) != cycle_length:
                raise bad(kind, f"'open' is not a list of {cycle_length} slots")
            exhausted_input = saved.get("exhausted") is True
            for j, o in enumerate(opened):
                if o is not None:
                    if not isinstance(o, dict) or not isinstance(o.get("input"), str):
                        raise bad(kind, f"slot {j} is not valid")
                    (x,) = decode_held({"held": [o["input"]]}, kind)
                    sub = _Level(o.get("state"))
                    slots[j] = (x, open_one(x, sub), sub)
        lv.get = state
        active = saved is not None  # (a round resumed had an input open when saved)
        while True:
            while s < cycle_length:
                sl = slots[s]
                if sl is None and not exhausted_input:
                    x = next(items, _EXHAUSTED)
                    if x is _EXHAUSTED:
                        exhausted_input = True
                    else:
                        sub = _Level()
                        sl = slots[s] = (x, open_one(x, sub), sub)
                if sl is not None:
                    active = True
                    it = sl[1]
                    while taken < block_length:
                        record = next(it, _EXHAUSTED)
                        if record is _EXHAUSTED:
                            break
                        taken += 1
                        yield record
                    if taken < block_length:
                        # this input is done: its slot takes the next one on its turn
                        slots[s] = None
                        _close(it)
                taken = 0
                s += 1
            s = 0
            if not active and exhausted_input:
                return
            active = False
    finally:
        for sl in slots:
            if sl is not None:
                _close(sl[1])


def _interleave_lists(
    readers: Iterable[Callable[[], Iterator[Sequence[_T]]]],
    cycle_length: int,
    block_length: int,
    watch: Optional[Watch] = None,
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

    With ``watch`` (see ._source_state), the files open at the start (their
    readers in ``watch.opened``) and where each list handed out starts are noted.
    """
    pending = iter(readers)
    its: list[Optional[Iterator[Sequence[_T]]]] = [None] * cycle_length
    bufs: list[Sequence[_T]] = [[] for _ in range(cycle_length)]
    pos = [0] * cycle_length
    exhausted_input = False
    out: list[_T] = []
    if watch is not None:
        exhausted_input = watch.exhausted
        for s, opener in enumerate(watch.opened):
            if opener is not None:
                its[s] = opener()
    try:
        while True:
            out = []
            if watch is not None:
                watch.begin(its, pos, exhausted_input)
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
                        if watch is not None:
                            watch.opening(s)
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
                        if watch is not None:
                            watch.fetched(s, nxt)
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

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        fn, workers, kind = self.fn, self.workers, self.kind

        def open_one(x: Any, sub: _Level) -> Iterator[Any]:
            ds = fn(x)
            if not isinstance(ds, kind):
                raise TypeError(
                    f"interleave's map_func must return a Dataset, got {type(ds).__name__}"
                )
            if workers > 0:
                inner = _Level()
                saved = resumed(sub, inner, "read-ahead")
                held = [] if saved is None else decode_held(saved, "read-ahead")
                return _gated(
                    lambda: ds._iterate(key, (), inner),
                    2,
                    sub,
                    inner,
                    "read-ahead",
                    held,
                    _READ_AHEAD_CHUNK,
                )
            out: Iterator[Any] = ds._iterate(key, (), sub)
            return out

        what = self.describe()
        saved = resumed(lv, below, what)
        items = upstream(key)
        return _interleaved(items, open_one, self.cycle, self.block, lv, below, what, saved)

    def cardinality(self, n: int) -> int:
        return UNKNOWN_CARDINALITY

    def describe(self) -> str:
        return f"interleave(cycle_length={self.cycle}, block_length={self.block})"


#: Elements a read-ahead thread of ``interleave(num_parallel_calls=...)`` hands over at once.
_READ_AHEAD_CHUNK = 64
