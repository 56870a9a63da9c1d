"""A batch of Examples parsed into columns (:func:`parse_example_columns`) as an Arrow table.

The table readers' fast path: each feature's flat values become the Arrow values
(numbers wrapped without a copy, ``bytes`` in one call), its per-record counts the
list offsets (one cumulative sum), fixed-length features their fixed-size lists. No
TensorFlow-shaped value (sparse indices, padded arrays) is built on the way, and the
table is the one :func:`~._to_arrow.to_arrow` makes of ``parse_example``'s output.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import ParseError
from .._examples import (
    ColumnarValue,
    ExampleColumn,
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
)
from ._extras import require_pyarrow
from ._to_arrow import _column_to_arrow, _dense_to_arrow, _flat_array, _list_array, _offsets

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


def _splits(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _rows(key: str, spec: FixedLenSequenceFeature, col: ExampleColumn) -> Any:
    """An Example's ``FixedLenSequenceFeature``: ``list<fixed_size_list<...>>`` of each
    record's own rows (whole rows only)."""
    shape = tuple(spec.shape)
    size = math.prod(shape)
    counts = col.counts
    bad = np.flatnonzero(counts % size) if size else np.flatnonzero(counts)
    if len(bad):
        i = int(bad[0])
        dims = ",".join(str(d) for d in shape)
        raise ParseError(
            f"Name: <unknown>, Key: {key}, Index: {i}.  Number of values is not a "
            f"multiple of the row size: values size: {int(counts[i])} but output "
            f"shape: [?{',' if dims else ''}{dims}]",
            index=i,
            key=key,
        )
    rows = counts // size if size else np.zeros_like(counts)
    values = col.values.reshape((-1, *shape))
    inner = _dense_to_arrow(values) if values.ndim > 1 else _flat_array(values)
    return _list_array(_offsets(_splits(rows)), inner)


def _array(key: str, value: ColumnarValue, spec: FeatureSpec, rows_of: Any) -> Any:
    if not isinstance(value, ExampleColumn):
        return _column_to_arrow(key, value, spec, None)  # partitioned ragged values
    if key in rows_of:
        return _rows(key, rows_of[key], value)
    if isinstance(spec, FixedLenFeature):
        n = len(value.present)
        return _dense_to_arrow(value.values.reshape((n, *spec.shape)))
    # VarLenFeature, RaggedFeature without partitions: one list of values per record.
    return _list_array(_offsets(_splits(value.counts)), _flat_array(value.values))


def columns_table(
    columns: Mapping[str, ColumnarValue],
    specs: Mapping[str, FeatureSpec],
    rows_of: Mapping[str, FixedLenSequenceFeature],
) -> pa.Table:
    """The table of a batch's columns: one Arrow column per spec of ``specs`` (the specs
    the table's schema was made from). ``rows_of``: the Example's
    ``FixedLenSequenceFeature`` s, parsed as flat values, each record a list of its rows."""
    pa = require_pyarrow()
    names = list(columns)
    arrays = [_array(k, columns[k], specs[k], rows_of) for k in names]
    return pa.Table.from_arrays(arrays, names=names)
