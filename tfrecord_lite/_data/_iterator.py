"""One epoch's iterator over a dataset."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Optional


class _DatasetIterator:
    """One epoch's iterator. ``close()`` (or leaving the loop) stops its threads and files."""

    def __init__(self, it: Iterator[Any]) -> None:
        self._it: Optional[Iterator[Any]] = it

    def __iter__(self) -> _DatasetIterator:
        return self

    def __next__(self) -> Any:
        if self._it is None:
            raise StopIteration
        try:
            return next(self._it)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        it, self._it = self._it, None
        close = getattr(it, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> _DatasetIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
