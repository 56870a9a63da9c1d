"""A file's records handed out a list at a time: windows and strides of them, and
flattening lists back into records (closing each input when done)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

from ._op import _close

_T = TypeVar("_T")


def _window_list(
    lists: Iterator[Sequence[bytes]], skip: int, take: int
) -> Iterator[Sequence[bytes]]:
    """Records ``skip .. skip + take - 1`` of a file read as lists (stops reading after them)."""
    start, stop = skip, skip + take
    base = 0  # the file index of the first record of ``lst``
    try:
        if take <= 0:
            return
        for lst in lists:
            end = base + len(lst)
            if end > start:
                yield lst[max(0, start - base) : stop - base]
            if end >= stop:
                return
            base = end
    finally:
        _close(lists)


def _every_list(
    lists: Iterator[Sequence[bytes]], start: int, step: int
) -> Iterator[Sequence[bytes]]:
    """Records ``start::step`` of a file read as lists."""
    base = 0  # the file index of the first record of ``lst``
    try:
        for lst in lists:
            first = start - base if base <= start else (start - base) % step
            if first < len(lst):
                yield lst[first::step]
            base += len(lst)
    finally:
        _close(lists)


def _flatten_lists(lists: Iterator[Sequence[_T]]) -> Iterator[_T]:
    """The items of each list in turn; closing it closes ``lists``."""
    try:
        for lst in lists:
            yield from lst
    finally:
        _close(lists)
