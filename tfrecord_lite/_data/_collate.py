"""Stacking elements into a batch: :func:`collate`, as ``batch()`` does after ``map``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["collate"]


def _is_plain_tuple(x: Any) -> bool:
    return type(x) is tuple


#: How ``batch`` / :func:`collate` treat elements whose shapes differ.
_RAGGED_MODES = ("auto", "error", "list")


def collate(items: Sequence[Any], ragged: str = "auto") -> Any:
    """Stack a list of elements into one batch, as ``batch()`` does after ``map``.

    * dicts (same keys) -> dict of batched values; tuples -> tuple of batched values
    * arrays and numbers of one shape -> ``np.stack`` (a new leading axis)
    * :class:`SparseValue` -> one SparseValue with a leading batch dimension, as
      ``parse_example`` returns for a ``VarLenFeature``
    * :class:`RaggedValue` -> a RaggedValue with one more ragged dimension
    * bytes, str and anything else -> a list

    Arrays whose shapes differ (``ragged``): with ``"auto"`` (default) arrays
    that differ only in their first dimension become a :class:`RaggedValue`
    (values + row_splits, as ``parse_example`` returns variable-length
    features) and any other difference raises ``ValueError`` naming the key and
    the shapes; ``"error"`` raises for any difference (tf.data's ``batch``);
    ``"list"`` returns a list of the values of that field instead. Dicts with
    different keys and tuples of different lengths raise too (a list with
    ``"list"``).
    """
    if ragged not in _RAGGED_MODES:
        raise ValueError(f"ragged must be one of {_RAGGED_MODES}, got {ragged!r}")
    return _collate(items, ragged, "")


def _collate(items: Sequence[Any], ragged: str, path: str) -> Any:
    from .._examples import RaggedValue, SparseValue

    if not items:
        return []
    first = items[0]
    if isinstance(first, dict):
        keys = list(first)
        for j, x in enumerate(items):
            if not (isinstance(x, dict) and len(x) == len(keys) and all(k in x for k in keys)):
                other = sorted(x) if isinstance(x, dict) else type(x).__name__
                return _mismatch(
                    items, ragged, path, f"element 0 has keys {sorted(keys)}, element {j} {other}"
                )
        return {k: _collate([x[k] for x in items], ragged, f"{path}[{k!r}]") for k in keys}
    if isinstance(first, SparseValue):
        if all(isinstance(x, SparseValue) for x in items):
            ndims = [len(x.dense_shape) for x in items]
            odd = next((j for j, d in enumerate(ndims) if d != ndims[0]), None)
            if odd is None:
                return _stack_sparse(items)
            return _mismatch(
                items,
                ragged,
                path,
                f"element 0 has rank {ndims[0]}, element {odd} rank {ndims[odd]}",
            )
        return _mismatch(items, ragged, path, "it mixes SparseValue and other values")
    if isinstance(first, RaggedValue):
        if all(isinstance(x, (RaggedValue, np.ndarray)) for x in items):
            return _stack_ragged(items)
        return _mismatch(items, ragged, path, "it mixes RaggedValue and other values")
    if _is_plain_tuple(first):
        for j, x in enumerate(items):
            if not (_is_plain_tuple(x) and len(x) == len(first)):
                size = len(x) if _is_plain_tuple(x) else type(x).__name__
                return _mismatch(
                    items, ragged, path, f"element 0 is a {len(first)}-tuple, element {j} {size}"
                )
        return tuple(
            _collate([x[j] for x in items], ragged, f"{path}[{j}]") for j in range(len(first))
        )
    numeric = (np.ndarray, np.generic, int, float, complex)
    if isinstance(first, numeric):
        if not all(isinstance(x, numeric) for x in items):
            return list(items)
        arrays = [np.asarray(x) for x in items]
        shape = arrays[0].shape
        odd = next((j for j, a in enumerate(arrays) if a.shape != shape), None)
        if odd is None:
            try:
                return np.stack(arrays)
            except (TypeError, ValueError):  # pragma: no cover - mixed incompatible dtypes
                return list(items)
        if ragged == "auto" and all(
            a.ndim >= 1 and a.ndim == arrays[0].ndim and a.shape[1:] == shape[1:] for a in arrays
        ):
            return _stack_ragged(arrays)
        return _mismatch(
            items,
            ragged,
            path,
            f"element 0 has shape {shape} and element {odd} has shape {arrays[odd].shape}",
        )
    return list(items)


def _mismatch(items: Sequence[Any], ragged: str, path: str, what: str) -> list[Any]:
    """A field whose elements cannot be stacked: a list if asked for, else an error."""
    if ragged == "list":
        return list(items)
    where = f"key {path}" if path.startswith("['") and path.count("[") == 1 else path
    raise ValueError(
        f"cannot batch {where or 'the elements'}: {what}. Make the shapes equal (e.g. in "
        "map()), pad them with padded_batch(), or get a list with batch(..., ragged='list')"
    )


def _stack_sparse(items: Sequence[Any]) -> Any:
    from .._examples import SparseValue

    ndim = len(items[0].dense_shape)
    parts = []
    for b, x in enumerate(items):
        idx = np.asarray(x.indices, dtype=np.int64).reshape(-1, ndim)
        parts.append(np.concatenate([np.full((len(idx), 1), b, dtype=np.int64), idx], axis=1))
    indices = np.concatenate(parts) if parts else np.zeros((0, ndim + 1), np.int64)
    values = np.concatenate([np.asarray(x.values) for x in items])
    dims = np.max(np.stack([np.asarray(x.dense_shape, dtype=np.int64) for x in items]), axis=0)
    dense_shape = np.concatenate([[len(items)], dims]).astype(np.int64)
    return SparseValue(indices, values, dense_shape)


def _stack_ragged(items: Sequence[Any]) -> Any:
    """Rows -> a RaggedValue whose row ``b`` is ``items[b]`` (arrays or RaggedValues)."""
    from .._examples import RaggedValue

    lengths = [len(x) for x in items]
    splits_dtype: Any = np.int64
    for x in items:
        if isinstance(x, RaggedValue):
            splits_dtype = x.row_splits.dtype
            break
    row_splits = np.concatenate([[0], np.cumsum(lengths)]).astype(splits_dtype)
    return RaggedValue(_concat_rows(items), row_splits)


def _concat_rows(items: Sequence[Any]) -> Any:
    """Concatenate arrays / RaggedValues along their first (row) dimension."""
    from .._examples import RaggedValue

    if all(isinstance(x, np.ndarray) for x in items):
        return np.concatenate(items) if items else np.zeros(0)
    if not all(isinstance(x, RaggedValue) for x in items):
        # Mixed plain arrays and RaggedValues: treat arrays as one ragged level.
        items = [x if isinstance(x, RaggedValue) else _as_ragged(x) for x in items]
    splits = []
    shift = 0
    for j, x in enumerate(items):
        s = np.asarray(x.row_splits)
        splits.append(s[:-1] + shift if j < len(items) - 1 else s + shift)
        shift += int(s[-1])
    row_splits = np.concatenate(splits).astype(items[0].row_splits.dtype)
    uniform = items[0].uniform_row_length
    if any(x.uniform_row_length != uniform for x in items):
        uniform = None
    return RaggedValue(_concat_rows([x.values for x in items]), row_splits, uniform)


def _as_ragged(x: np.ndarray) -> Any:
    from .._examples import RaggedValue

    rows = x.reshape(len(x), -1) if x.ndim >= 2 else x.reshape(-1, 1)
    width = rows.shape[1]
    return RaggedValue(rows.reshape(-1), np.arange(len(x) + 1, dtype=np.int64) * width, width)
