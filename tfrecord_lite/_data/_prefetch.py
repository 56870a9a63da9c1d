"""Running a pipeline ahead of its reader in a background thread: ``prefetch`` and
the read-ahead of big records and of ``interleave(num_parallel_calls=...)``."""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any, Callable, Optional

from .._files import ReadAhead
from ._op import EpochKey, Upstream, _close, _Op
from ._state import _Level, decode_held, encode_held, resumed

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


def _gated(
    make: Callable[[], Iterator[Any]],
    size: int,
    lv: _Level,
    below: _Level,
    kind: str,
    held: list[Any],
    chunk: int = 1,
) -> Iterator[Any]:
    """:func:`_prefetch` of ``make()``'s items (``chunk`` at a time), with its state.

    The thread takes each item under a lock, which reading the state holds: the
    stages below are then still, and the items taken but not yet handed out are
    known. The state is the one below rolled back by them, or with them saved
    (see ._state). ``held``: items saved so, handed out first.
    """
    lock = threading.Lock()
    taken: deque[Any] = deque()  # items taken from below, not yet handed out

    def produce() -> Iterator[list[Any]]:
        it = make()
        try:
            while True:
                with lock:
                    group = list(itertools.islice(it, chunk))
                    taken.extend(group)
                if not group:
                    return
                yield group
        finally:
            _close(it)

    def state(behind: int) -> Optional[dict[str, Any]]:
        items = list(taken)
        up = below.state(behind + len(items)) if behind or items else below.state(0)
        if up is not None:
            return {"kind": kind, "up": up}
        if behind:
            return None
        return {"kind": kind, "up": below.state(0), "held": encode_held(items)}

    lv.lock = lock
    lv.get = state
    taken.extend(held)
    pop = taken.popleft
    for x in held:
        pop()
        yield x
    for group in _prefetch(produce, size):
        for x in group:
            pop()
            yield x


class _Prefetch(_Op):
    transparent = True

    def __init__(self, size: int) -> None:
        self.size = size

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        kind = self.describe()
        saved = resumed(lv, below, kind)
        held = [] if saved is None else decode_held(saved, kind)
        return _gated(lambda: upstream(key), self.size, lv, below, kind, held)

    def describe(self) -> str:
        return f"prefetch({self.size})"
