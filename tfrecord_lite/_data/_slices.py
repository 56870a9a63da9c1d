"""``Dataset.from_tensor_slices``: a source of the rows of in-memory columns."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional

import numpy as np

from ._op import EpochKey
from ._state import _Level, bad, check_kind, field_int


class _Slices:
    """``Dataset.from_tensor_slices``: the rows of columns (arrays, or lists of objects)."""

    def __init__(self, tensors: Any) -> None:
        leaves: list[Any] = []
        self.structure = _flatten_structure(tensors, leaves)
        columns = [_as_column(x) for x in leaves]
        lengths = {len(c) for c in columns}
        if len(lengths) > 1:
            raise ValueError(
                "from_tensor_slices needs components with the same first dimension, "
                f"got lengths {sorted(len(c) for c in columns)}"
            )
        self.columns = columns
        self.length = lengths.pop() if lengths else 0

    def copy(self, **changes: Any) -> _Slices:  # nothing to change: a list is a list
        return self

    def cardinality(self) -> int:
        return self.length

    def describe(self) -> str:
        return f"Dataset.from_tensor_slices(<{self.length} elements>)"

    def iterate(
        self,
        key: EpochKey,
        extra_shards: tuple[tuple[int, int, str], ...] = (),
        lv: Optional[_Level] = None,
    ) -> Iterator[Any]:
        """The rows (of this shard). State: the number of rows handed out."""
        rows: Sequence[int] = range(self.length)
        for n, i, _ in extra_shards:  # DataLoader workers / ranks: disjoint slices
            rows = rows[i::n]
        kind = self.describe()
        lv = lv if lv is not None else _Level()
        saved = lv.take()
        k = 0
        if saved is not None:
            check_kind(saved, kind, kind)
            k = field_int(saved, "rows", kind)
            if k > len(rows):
                raise bad(kind, f"{k} rows handed out, it has {len(rows)}")

        done = [k]

        def state(behind: int) -> Optional[dict[str, Any]]:
            return None if behind > done[0] else {"kind": kind, "rows": done[0] - behind}

        lv.get = state
        return self._rows(rows, done)

    def _rows(self, rows: Sequence[int], done: list[int]) -> Iterator[Any]:
        columns, structure = self.columns, self.structure
        for j in rows[done[0] :]:
            done[0] += 1
            yield _rebuild_structure(structure, iter([c[j] for c in columns]))


def _flatten_structure(x: Any, leaves: list[Any]) -> Any:
    """A tuple / dict nest with its leaves replaced by None (and appended to ``leaves``)."""
    if isinstance(x, Mapping):
        return {k: _flatten_structure(v, leaves) for k, v in x.items()}
    if type(x) is tuple:
        return tuple(_flatten_structure(v, leaves) for v in x)
    leaves.append(x)
    return None


def _rebuild_structure(structure: Any, leaves: Iterator[Any]) -> Any:
    if isinstance(structure, dict):
        return {k: _rebuild_structure(v, leaves) for k, v in structure.items()}
    if isinstance(structure, tuple):
        return tuple(_rebuild_structure(v, leaves) for v in structure)
    return next(leaves)


def _as_column(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        if x.ndim == 0:
            raise ValueError(
                "from_tensor_slices needs components with a first dimension, got a scalar"
            )
        return x
    if isinstance(x, (list, range)) and all(isinstance(v, (str, bytes, os.PathLike)) for v in x):
        # Strings stay Python objects (np.asarray would cut trailing NUL bytes).
        return [os.fspath(v) if isinstance(v, os.PathLike) else v for v in x]
    if isinstance(x, (str, bytes)):
        raise ValueError("from_tensor_slices needs components with a first dimension, got a string")
    arr = np.asarray(x)
    if arr.ndim == 0:
        raise ValueError(f"from_tensor_slices needs components with a first dimension, got {x!r}")
    if arr.dtype.kind == "O" and isinstance(x, list):
        return list(x)
    return arr
