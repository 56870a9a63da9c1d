"""Assembling parse outputs from extracted columns, with whole-array NumPy operations.

The second step of a parse (:mod:`._parse`): each spec's output is built from
the :data:`Column` s of the keys it reads — dense arrays with defaults and
shapes (``FixedLenFeature``), padded arrays (``FixedLenSequenceFeature``),
:class:`~tfrecord_lite.SparseValue` (``VarLenFeature``, ``SparseFeature``) and
:class:`~tfrecord_lite.RaggedValue` with validated partitions (``RaggedFeature``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from typing import Any, Optional, Union

import numpy as np

from .._errors import ParseError
from ._engines import AnyColumn, FastColumn, SparseColumn, dense
from ._hints import count_hint, with_hint
from ._schema import (
    DType,
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RowLengths,
    RowLimits,
    RowSplits,
    RowStarts,
    SparseFeature,
    UniformRowLength,
    ValueRowIds,
    VarLenFeature,
    string,
)
from ._values import RaggedValue, SparseValue
from ._where import _count_name, _shape_str, _Where

__all__ = ["ParsedValue", "assemble", "padding_value"]


ParsedValue = Union[np.ndarray, SparseValue, RaggedValue]


#: One feature key's values over a batch (see :class:`~tfrecord_lite._examples._engines.FastColumn`).
Column = FastColumn


def _row_starts(counts: np.ndarray) -> np.ndarray:
    starts = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return starts


def _filled(shape: tuple[int, ...], fill: Any, dtype: DType) -> np.ndarray:
    """``np.full`` that keeps bytes intact (``np.full`` drops a bytes fill's trailing NULs)."""
    out = np.empty(shape, dtype=dtype.np_dtype)
    out.fill(fill)
    return out


def _empty(dtype: DType, n: int = 0) -> np.ndarray:
    return np.empty(n, dtype=dtype.np_dtype) if dtype is not string else np.empty(n, dtype=object)


def _fixed_len(key: str, spec: FixedLenFeature, col: Column, where: _Where) -> np.ndarray:
    n = len(col.present)
    shape = tuple(spec.shape)
    size = math.prod(shape)
    if size and col.summary is not None and col.summary == (n, size, size):
        return col.values.reshape((n, *shape))  # (every record has ``size`` values)
    bad = col.present & (col.counts != size)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        err = where.count_error(i, key, spec.dtype, int(col.counts[i]), shape)
        raise with_hint(err, count_hint(key, spec.dtype.name, size, col.counts[col.present]))
    missing = ~col.present
    # TensorFlow: a default with no elements (any default of a 0-size shape) means required.
    if missing.any() and (spec.default_value is None or size == 0):
        raise where.required_error(int(np.flatnonzero(missing)[0]), key, spec.dtype)
    if size == 0:
        return np.empty((n, *shape), dtype=spec.dtype.np_dtype)
    if not missing.any():
        return col.values.reshape((n, *shape))
    out = np.empty((n, size), dtype=col.values.dtype if len(col.values) else spec.dtype.np_dtype)
    out[col.present] = col.values.reshape(-1, size)
    out[missing] = np.asarray(spec.default_value).reshape(-1)
    return out.reshape((n, *shape))


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@functools.lru_cache(maxsize=256)
def _no_values(dtype: DType, n: int) -> SparseValue:
    """The ``VarLenFeature`` value of ``n`` records without a value: one, read-only,
    shared by every such key (a sparse schema's batch has thousands of them)."""
    return SparseValue(
        _read_only(np.zeros((0, 2), dtype=np.int64)),
        _read_only(_empty(dtype)),
        _read_only(np.array([n, 0], dtype=np.int64)),
    )


def _var_len(spec: VarLenFeature, col: AnyColumn) -> SparseValue:
    counts = col.counts
    if isinstance(col, SparseColumn):  # (the records that have the key)
        n, record = col.n, col.rows
    else:
        n, record = len(counts), None
    if isinstance(col, FastColumn) and col.summary is not None:
        width = col.summary[2]  # (the most values of any record)
    else:
        width = int(counts.max()) if len(counts) else 0
    if width == 0:
        return _no_values(spec.dtype, n)
    if width == 1:
        # At most one value a record (a scalar that may be missing): rows, position 0.
        rows = np.flatnonzero(counts)
        if record is not None:
            rows = record[rows]
        total = len(rows)
        indices = np.zeros((total, 2), dtype=np.int64)
        indices[:, 0] = rows
    else:
        starts = _row_starts(counts)
        total = int(starts[-1])
        indices = np.empty((total, 2), dtype=np.int64)
        records = np.arange(n, dtype=np.int64) if record is None else record
        indices[:, 0] = np.repeat(records, counts)
        indices[:, 1] = np.arange(total, dtype=np.int64) - np.repeat(starts[:-1], counts)
    return SparseValue(
        indices,
        col.values if total else _empty(spec.dtype),
        np.array([n, width], dtype=np.int64),
    )


def padding_value(spec: FixedLenSequenceFeature) -> Any:
    """What pads a ``FixedLenSequenceFeature`` batch: its default, else 0 / b""."""
    if spec.default_value is not None:
        return np.asarray(spec.default_value).reshape(()).item()
    return b"" if spec.dtype is string else 0


def _sequence_rows(
    key: str, spec: FixedLenSequenceFeature, col: Column, where: _Where
) -> np.ndarray:
    """Rows of ``spec.shape`` per record (checked: whole rows only, as TensorFlow)."""
    n = len(col.counts)
    shape = tuple(spec.shape)
    stride = math.prod(shape)
    if stride == 0:
        bad = col.counts != 0
    else:
        bad = col.counts % stride != 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise where.error(
            i,
            key,
            f"{where.key(i, key)}Number of {_count_name(spec.dtype)} values is not a multiple "
            f"of stride length. Saw {int(col.counts[i])} values but output shape is: "
            f"{_shape_str((None, *shape))}",
        )
    return col.counts // stride if stride else np.zeros(n, dtype=np.int64)


def _fixed_len_sequence_rows(
    key: str, spec: FixedLenSequenceFeature, col: Column, where: _Where
) -> RaggedValue:
    """A ``FixedLenSequenceFeature`` unpadded: each record's rows, as a
    :class:`RaggedValue` over values of shape ``(rows, *spec.shape)``."""
    rows = _sequence_rows(key, spec, col, where)
    values = col.values if len(col.values) else _empty(spec.dtype)
    return RaggedValue(values.reshape((-1, *spec.shape)), _row_starts(rows))


def _fixed_len_sequence(
    key: str, spec: FixedLenSequenceFeature, col: Column, where: _Where
) -> np.ndarray:
    n = len(col.counts)
    shape = tuple(spec.shape)
    stride = math.prod(shape)
    rows = _sequence_rows(key, spec, col, where)
    max_rows = int(rows.max()) if n else 0
    fill = padding_value(spec)
    out = _filled((n, max_rows * stride), fill, spec.dtype)
    if stride and len(col.values):
        # Row i's values go to out[i, :counts[i]]: flat positions i*width + 0..counts[i].
        starts = _row_starts(col.counts)
        flat_pos = np.arange(len(col.values), dtype=np.int64) - np.repeat(starts[:-1], col.counts)
        flat_pos += np.repeat(np.arange(n, dtype=np.int64) * (max_rows * stride), col.counts)
        out.reshape(-1)[flat_pos] = col.values
    return out.reshape((n, max_rows, *shape))


def _sparse(
    key: str, spec: SparseFeature, cols: Mapping[str, Column], where: _Where
) -> SparseValue:
    index_keys = [spec.index_key] if isinstance(spec.index_key, str) else list(spec.index_key)
    sizes = [spec.size] if isinstance(spec.size, int) else list(spec.size)
    vcol = cols[spec.value_key]
    n = len(vcol.counts)
    icols = [cols[k] for k in index_keys]
    for k, icol in zip(index_keys, icols):
        bad = icol.counts != vcol.counts
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise where.error(
                i,
                key,
                f"{where.key(i, key)}SparseFeature index feature {k!r} has "
                f"{int(icol.counts[i])} values but value feature {spec.value_key!r} has "
                f"{int(vcol.counts[i])}; they must have one index per value",
            )
    rows = np.repeat(np.arange(n, dtype=np.int64), vcol.counts)
    for k, icol, size in zip(index_keys, icols, sizes):
        out_of_range = (icol.values < 0) | (icol.values >= size)
        if out_of_range.any():
            j = int(np.flatnonzero(out_of_range)[0])
            i = int(rows[j])
            raise where.error(
                i,
                key,
                f"{where.key(i, key)}SparseFeature index {int(icol.values[j])} in "
                f"feature {k!r} is out of range [0, {size})",
            )
    indices = np.stack([rows, *[c.values.astype(np.int64) for c in icols]], axis=1)
    values = vcol.values if len(vcol.values) else _empty(spec.dtype)
    if not spec.already_sorted and len(values) > 1:
        order = np.lexsort(indices.T[::-1])
        indices = indices[order]
        values = values[order]
    if not len(indices):
        indices = np.zeros((0, 1 + len(sizes)), dtype=np.int64)
    return SparseValue(indices, values, np.array([n, *sizes], dtype=np.int64))


def _partition_splits(
    key: str, part: Any, pvals: np.ndarray, nvals: int, i: int, where: _Where
) -> tuple[np.ndarray, Optional[int]]:
    """Row splits of one partition of one record (values: ``nvals`` items)."""

    def fail(text: str) -> ParseError:
        return where.error(i, key, where.key(i, key) + text)

    pname = type(part).__name__
    if isinstance(part, UniformRowLength):
        length = int(part.length)
        if length == 0:
            if nvals:
                raise fail(f"UniformRowLength(0) cannot partition {nvals} values")
            return np.zeros(1, dtype=np.int64), 0
        if nvals % length:
            raise fail(f"{nvals} values cannot be split into rows of UniformRowLength({length})")
        return np.arange(0, nvals + 1, length, dtype=np.int64), length
    p = pvals.astype(np.int64)
    if isinstance(part, RowSplits):
        # No splits at all (a missing feature) is no rows, as TensorFlow's batch parse.
        splits = p if len(p) else np.zeros(1, dtype=np.int64)
    elif isinstance(part, RowLengths):
        if (p < 0).any():
            raise fail(f"row lengths in {part.key!r} must be non-negative")
        splits = _row_starts(p)
    elif isinstance(part, RowStarts):
        splits = np.concatenate([p, [nvals]]) if len(p) else np.zeros(1, dtype=np.int64)
        if len(p) and p[0] != 0:
            raise fail(f"row starts in {part.key!r} must begin with 0")
    elif isinstance(part, RowLimits):
        splits = np.concatenate([[0], p]).astype(np.int64)
    elif isinstance(part, ValueRowIds):
        if len(p) != nvals:
            raise fail(f"{pname} {part.key!r} has {len(p)} ids for {nvals} values")
        if len(p) and (p[0] < 0 or (np.diff(p) < 0).any()):
            raise fail(f"value row ids in {part.key!r} must be non-negative and sorted")
        nrows = int(p[-1]) + 1 if len(p) else 0
        splits = _row_starts(np.bincount(p, minlength=nrows))
    else:  # pragma: no cover - validated by the spec
        raise TypeError(f"unknown partition {part!r}")
    if not len(splits) or splits[0] != 0 or (np.diff(splits) < 0).any() or splits[-1] != nvals:
        raise fail(
            f"partition {pname}({part.key!r}) is not a valid row partition of {nvals} values"
        )
    return splits, None


def _ragged(
    key: str, spec: RaggedFeature, cols: Mapping[str, Column], where: _Where, batch: bool
) -> ParsedValue:
    vcol = cols[spec.value_key or key]
    n = len(vcol.counts)
    vstarts = _row_starts(vcol.counts)
    splits_dtype = np.dtype(spec.row_splits_dtype)
    parts = list(spec.partitions)
    if not parts:
        if not batch:
            return vcol.values if len(vcol.values) else _empty(spec.dtype)
        return RaggedValue(
            vcol.values if len(vcol.values) else _empty(spec.dtype),
            vstarts.astype(splits_dtype),
        )
    # Per record, partitions apply from the innermost outwards.
    pcols = [None if isinstance(p, UniformRowLength) else cols[p.key] for p in parts]
    pstarts = [None if c is None else _row_starts(c.counts) for c in pcols]
    level_splits: list[list[np.ndarray]] = [[] for _ in parts]
    uniform: list[Optional[int]] = [None] * len(parts)
    outer_rows = np.zeros(n, dtype=np.int64)
    for i in range(n):
        nvals = int(vcol.counts[i])
        for level in range(len(parts) - 1, -1, -1):
            pc, ps = pcols[level], pstarts[level]
            pvals = (
                np.zeros(0, dtype=np.int64)
                if pc is None or ps is None
                else pc.values[ps[i] : ps[i + 1]]
            )
            splits, u = _partition_splits(key, parts[level], pvals, nvals, i, where)
            level_splits[level].append(splits)
            uniform[level] = u
            nvals = len(splits) - 1
        outer_rows[i] = nvals
    # Innermost UniformRowLength partitions only reshape the values, as TensorFlow
    # does: values of shape (rows, len_1, ..., len_k), no ragged level for them.
    n_dense = 0
    while n_dense < len(parts) and isinstance(parts[len(parts) - 1 - n_dense], UniformRowLength):
        n_dense += 1
    n_ragged = len(parts) - n_dense
    flat = vcol.values if len(vcol.values) else _empty(spec.dtype)
    if n_dense:
        inner = tuple(int(p.length) for p in parts[n_ragged:])
        lead = sum(len(s) - 1 for s in level_splits[n_ragged])
        flat = flat.reshape((lead, *inner))
    result: Union[np.ndarray, RaggedValue] = flat
    # Stitch the records' splits together, ragged level by level.
    for level in range(n_ragged - 1, -1, -1):
        pieces = [np.zeros(1, dtype=np.int64)]
        offset = 0
        for s in level_splits[level]:
            pieces.append(s[1:] + offset)
            offset += int(s[-1])
        result = RaggedValue(result, np.concatenate(pieces).astype(splits_dtype), uniform[level])
    if not batch:
        return result
    return RaggedValue(result, _row_starts(outer_rows).astype(splits_dtype))


class _Dense(Mapping[str, FastColumn]):
    """Columns of either layout, each as a :class:`FastColumn` when looked up (the
    outputs other than ``VarLenFeature`` s' take a value per record anyway)."""

    def __init__(self, cols: Mapping[str, AnyColumn]) -> None:
        self._cols = cols

    def __getitem__(self, key: str) -> FastColumn:
        return dense(self._cols[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._cols)

    def __len__(self) -> int:
        return len(self._cols)


def assemble(
    specs: Mapping[str, FeatureSpec],
    columns: Mapping[str, AnyColumn],
    where: _Where,
    batch: bool,
    sequence_rows: bool = False,
) -> dict[str, ParsedValue]:
    """Build every spec's output from the extracted columns (``sequence_rows``:
    ``FixedLenSequenceFeature`` s as the rows of each record, unpadded)."""
    out: dict[str, ParsedValue] = {}
    sparse = columns
    cols = _Dense(columns)
    for key, spec in specs.items():
        if isinstance(spec, FixedLenFeature):
            out[key] = _fixed_len(key, spec, cols[key], where)
        elif isinstance(spec, VarLenFeature):
            out[key] = _var_len(spec, sparse[key])
        elif isinstance(spec, FixedLenSequenceFeature):
            if not spec.allow_missing:
                raise ValueError(
                    "Unsupported: FixedLenSequenceFeature requires allow_missing to be True."
                )
            out[key] = (
                _fixed_len_sequence_rows(key, spec, cols[key], where)
                if sequence_rows and batch
                else _fixed_len_sequence(key, spec, cols[key], where)
            )
        elif isinstance(spec, SparseFeature):
            out[key] = _sparse(key, spec, cols, where)
        elif isinstance(spec, RaggedFeature):
            out[key] = _ragged(key, spec, cols, where, batch)
    return out


def _unbatch(value: ParsedValue) -> ParsedValue:
    """Drop the batch dimension of a batch of one (``parse_single_example``)."""
    if isinstance(value, np.ndarray):
        return value[0, ...]  # a 0-d array for a scalar feature, never a bare scalar
    if isinstance(value, SparseValue):
        return SparseValue(
            np.ascontiguousarray(value.indices[:, 1:]), value.values, value.dense_shape[1:]
        )
    if isinstance(value, RaggedValue):
        return value
    return value  # pragma: no cover
