"""What every dataset op shares: the op protocol, epoch keys, tf.data's cardinality
constants, argument checks, and closing the iterators ops hand out.

An op (:class:`_Op`) builds its output iterator when an epoch starts, from an
``Upstream``: a function that builds the upstream's iterator for an epoch key (the
epoch number, then one number per enclosing ``repeat``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable, Optional

import numpy as np

if TYPE_CHECKING:
    from ._state import _Level

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]


#: ``tf.data.AUTOTUNE``: accepted where tf.data accepts it (means "the number of CPUs").
AUTOTUNE = -1
#: ``tf.data.INFINITE_CARDINALITY``: what :meth:`Dataset.cardinality` returns after ``repeat()``.
INFINITE_CARDINALITY = -1
#: ``tf.data.UNKNOWN_CARDINALITY``: the number of elements depends on the data.
UNKNOWN_CARDINALITY = -2

EpochKey = tuple[int, ...]
Upstream = Callable[[EpochKey], Iterator[Any]]


def _count(name: str, value: Any, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    return int(value)


def _threads(name: str, value: Optional[int]) -> int:
    if value is None:
        return 1
    if value == AUTOTUNE:
        return os.cpu_count() or 1
    return _count(name, value, 1)


def _close(it: object) -> None:
    """Close a generator (its ``finally`` blocks run now: files close, threads stop)."""
    close = getattr(it, "close", None)
    if close is not None:
        close()


class _Op:
    """One transformation: builds its output iterator from the upstream's."""

    #: Ops that do not look at elements: ``parse`` may move across them (see _rewrite).
    transparent = False

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        """The op's iterator for epoch ``key``: its state is published in ``lv`` (and a
        saved one taken from it), ``below`` is the level of ``upstream`` (see ._state)."""
        raise NotImplementedError

    def cardinality(self, n: int) -> int:
        """The number of elements out, given ``n`` in (one element per element by default)."""
        return n

    def describe(self) -> str:
        return type(self).__name__.strip("_").lower()
