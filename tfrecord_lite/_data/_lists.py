"""A file's records handed out a list at a time: flattening lists back into records
(closing the input when done)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

from ._op import _close

_T = TypeVar("_T")


def _flatten_lists(lists: Iterator[Sequence[_T]]) -> Iterator[_T]:
    """The items of each list in turn; closing it closes ``lists``."""
    try:
        for lst in lists:
            yield from lst
    finally:
        _close(lists)
