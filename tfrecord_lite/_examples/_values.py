"""Parsed values that are not dense arrays: sparse (VarLen/Sparse) and ragged features.

They hold exactly TensorFlow's components (``SparseTensor``'s ``indices``,
``values``, ``dense_shape``; ``RaggedTensor``'s ``values`` and ``row_splits``)
as NumPy arrays, plus conversions to what a training script usually wants.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Union

import numpy as np

__all__ = ["RaggedValue", "SparseValue"]


def _zero_of(values: np.ndarray) -> Any:
    return b"" if values.dtype == object else values.dtype.type(0)


class SparseValue(NamedTuple):
    """A sparse array: TensorFlow's ``SparseTensor`` as NumPy.

    ``indices`` is int64 ``(N, ndim)``, ``values`` is ``(N,)`` and ``dense_shape``
    is int64 ``(ndim,)``. It unpacks as a tuple: ``indices, values, shape = sv``.
    """

    indices: np.ndarray
    values: np.ndarray
    dense_shape: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        """``dense_shape`` as a tuple of ints."""
        return tuple(int(d) for d in self.dense_shape)

    def to_dense(self, default_value: Any = None) -> np.ndarray:
        """The dense array, missing entries set to ``default_value`` (0 / b"" by default)."""
        fill = _zero_of(self.values) if default_value is None else default_value
        dense = np.empty(self.shape, dtype=self.values.dtype)
        dense.fill(fill)  # not np.full: it drops a bytes fill's trailing NULs
        if len(self.values):
            dense[tuple(self.indices.T)] = self.values
        return dense

    def to_list(self) -> list[Any]:
        """Nested Python lists of the *present* values, one level per dimension but the last.

        For a batch from ``parse_example`` this is one list of values per record,
        which is usually what a variable-length feature means.
        """
        ndim = len(self.dense_shape)
        vals: list[Any] = self.values.tolist()
        if ndim <= 1:
            return vals
        outer = self.shape[: ndim - 1]
        nested = np.empty(outer, dtype=object) if outer else None
        if nested is None:  # pragma: no cover - ndim > 1 always has an outer shape
            return vals
        for pos in np.ndindex(*outer):
            nested[pos] = []
        for row, value in zip(self.indices[:, : ndim - 1].tolist(), vals):
            nested[tuple(row)].append(value)
        result: list[Any] = nested.tolist()
        return result

    def __repr__(self) -> str:
        return (
            f"SparseValue(indices={self.indices.tolist()!r}, values={self.values.tolist()!r}, "
            f"dense_shape={self.dense_shape.tolist()!r})"
        )


class RaggedValue:
    """A ragged array: TensorFlow's ``RaggedTensor`` as NumPy.

    Row ``i`` is ``values[row_splits[i]:row_splits[i + 1]]``; ``values`` is a NumPy
    array or, for several ragged dimensions, another :class:`RaggedValue`.
    ``uniform_row_length`` is set when every row has that length
    (``RaggedFeature.UniformRowLength``).
    """

    __slots__ = ("row_splits", "uniform_row_length", "values")

    def __init__(
        self,
        values: Union[np.ndarray, RaggedValue],
        row_splits: np.ndarray,
        uniform_row_length: Optional[int] = None,
    ) -> None:
        self.values = values
        self.row_splits = row_splits
        self.uniform_row_length = uniform_row_length

    @property
    def flat_values(self) -> np.ndarray:
        """The innermost values, as one flat array."""
        v = self.values
        while isinstance(v, RaggedValue):
            v = v.values
        return v

    @property
    def nested_row_splits(self) -> tuple[np.ndarray, ...]:
        """Row splits of every ragged dimension, outermost first."""
        out = [self.row_splits]
        v = self.values
        while isinstance(v, RaggedValue):
            out.append(v.row_splits)
            v = v.values
        return tuple(out)

    def row_lengths(self) -> np.ndarray:
        """Length of each row of the outermost dimension."""
        return np.diff(self.row_splits)

    @property
    def nrows(self) -> int:
        """Number of rows of the outermost dimension (``len(self)``)."""
        return int(len(self.row_splits) - 1)

    def __len__(self) -> int:
        return self.nrows

    def __getitem__(self, i: int) -> Union[np.ndarray, RaggedValue]:
        n = self.nrows
        if not -n <= i < n:
            raise IndexError(f"row {i} out of range for {n} rows")
        i %= n
        start, stop = int(self.row_splits[i]), int(self.row_splits[i + 1])
        if isinstance(self.values, RaggedValue):
            return self.values._rows(start, stop)
        return self.values[start:stop]

    def _rows(self, start: int, stop: int) -> RaggedValue:
        """Rows ``start:stop`` as a new RaggedValue (splits rebased to 0)."""
        splits = self.row_splits[start : stop + 1]
        lo, hi = int(splits[0]), int(splits[-1])
        values = (
            self.values._rows(lo, hi)
            if isinstance(self.values, RaggedValue)
            else self.values[lo:hi]
        )
        return RaggedValue(values, splits - splits[0], self.uniform_row_length)

    def to_list(self) -> list[Any]:
        """Nested Python lists."""
        out: list[Any] = []
        for i in range(self.nrows):
            row = self[i]
            out.append(row.to_list() if isinstance(row, RaggedValue) else row.tolist())
        return out

    def _sliced(self) -> RaggedValue:
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RaggedValue):
            return NotImplemented
        return self.to_list() == other.to_list() and all(
            np.array_equal(a, b) for a, b in zip(self.nested_row_splits, other.nested_row_splits)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        text = repr(self.to_list())
        if len(text) > 200:
            text = text[:197] + "..."
        return f"RaggedValue({text})"
