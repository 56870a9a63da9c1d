"""Arrow tables back into NumPy columns and into serialized Examples / SequenceExamples.

The Arrow -> NumPy half of the type mapping of :mod:`tfrecord_lite.arrow`
(:func:`from_arrow`, the inverse of :func:`~tfrecord_lite.arrow.to_arrow`), and
the rows of a table as records (:func:`table_records`), which every table
integration's writer uses.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from .._examples import RaggedValue, encode_columns, encode_sequence_example
from ._extras import require_pyarrow
from ._to_arrow import FEATURE_LISTS_KEY

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


# --------------------------------------------------------------------------- Arrow -> NumPy


def _check_no_nulls(key: str, arr: Any) -> None:
    if arr.null_count:
        raise ValueError(
            f"column {key!r} has {arr.null_count} null values, which a TFRecord feature "
            "cannot hold: fill them (e.g. table.fill_null) or drop those rows first"
        )


def _leaf_to_numpy(key: str, arr: Any) -> np.ndarray:
    pa = require_pyarrow()
    _check_no_nulls(key, arr)
    t = arr.type
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=object)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        # Text columns (from pandas, CSV, ...) are stored as their UTF-8 bytes.
        return np.asarray(arr.cast(pa.large_binary()).to_numpy(zero_copy_only=False), object)
    if pa.types.is_dictionary(t):
        return _leaf_to_numpy(key, arr.dictionary_decode())
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t):
        return np.asarray(arr.to_numpy(zero_copy_only=False))
    raise TypeError(
        f"column {key!r}: Arrow type {t} has no TFRecord feature type (int64, float or "
        "bytes values); cast it first"
    )


def _array_to_numpy(key: str, arr: Any) -> Union[np.ndarray, RaggedValue]:
    """One Arrow array -> dense array (primitive / fixed-size lists) or RaggedValue (lists)."""
    pa = require_pyarrow()
    t = arr.type
    if isinstance(t, pa.BaseExtensionType):
        return _extension_to_numpy(key, arr)
    if pa.types.is_fixed_size_list(t):
        _check_no_nulls(key, arr)
        n = len(arr)
        inner = _array_to_numpy(key, arr.flatten())
        if isinstance(inner, RaggedValue):
            raise TypeError(
                f"column {key!r}: a fixed-size list of variable-length lists ({t}) has no "
                "TFRecord feature type"
            )
        return inner.reshape((n, t.list_size, *inner.shape[1:]))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        _check_no_nulls(key, arr)
        offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        start, stop = int(offsets[0]), int(offsets[-1])
        values = arr.values.slice(start, stop - start)
        splits = offsets - start
        return RaggedValue(_array_to_numpy(key, values), splits)
    return _leaf_to_numpy(key, arr)


def _extension_to_numpy(key: str, arr: Any) -> Union[np.ndarray, RaggedValue]:
    """Tensor extension types (Arrow's fixed-shape tensor, Ray Data's tensor columns)."""
    _check_no_nulls(key, arr)
    for method in ("to_numpy_ndarray", "to_numpy"):  # pyarrow's, then Ray's
        convert = getattr(arr, method, None)
        if convert is None:
            continue
        try:
            out = np.asarray(convert() if method == "to_numpy_ndarray" else convert(False))
        except (TypeError, ValueError, NotImplementedError):
            continue
        if len(out) == len(arr):
            return out
    return _array_to_numpy(key, arr.storage)


def from_arrow(table: pa.Table) -> dict[str, Union[np.ndarray, RaggedValue]]:
    """A table's columns as NumPy: the inverse of :func:`to_arrow`.

    Primitive columns become 1-D arrays (``binary`` as an object array of
    ``bytes``; ``string`` as its UTF-8 bytes), nested fixed-size lists one
    ``(N, a, b, ...)`` array, and ``list`` columns a :class:`RaggedValue`
    whose row splits are the Arrow offsets (nested for lists of lists).
    Null values are an error: a TFRecord feature has no null.
    """
    pa = require_pyarrow()
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        raise TypeError(f"expected a pyarrow.Table, got {type(table).__name__}")
    out: dict[str, Union[np.ndarray, RaggedValue]] = {}
    for key, col in zip(table.column_names, table.columns):
        arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        out[key] = _array_to_numpy(key, arr)
    return out


def feature_lists_of(table: pa.Table) -> list[str]:
    """The columns a table's metadata marks as SequenceExample feature lists."""
    meta = table.schema.metadata or {}
    raw = meta.get(FEATURE_LISTS_KEY)
    if not raw:
        return []
    try:
        keys = json.loads(raw)
    except ValueError:
        return []
    return [k for k in keys if isinstance(k, str) and k in table.column_names]


# --------------------------------------------------------------------------- Arrow -> records


def _ragged_rows(rv: RaggedValue) -> list[Any]:
    """One value per record: the record's slice (an array, or a list of step arrays)."""
    splits = np.asarray(rv.row_splits, dtype=np.int64)
    inner = rv.values
    if isinstance(inner, RaggedValue):
        steps = _ragged_rows(inner)
        return [steps[a:b] for a, b in zip(splits[:-1].tolist(), splits[1:].tolist())]
    return np.split(inner, splits[1:-1]) if len(splits) > 1 else []


def _warn_narrowed(key: str, values: np.ndarray) -> None:
    if values.dtype.kind == "f" and values.dtype.itemsize > 4 and values.size:
        with np.errstate(over="ignore", invalid="ignore"):
            narrowed = values.astype(np.float32)
            lost = np.count_nonzero(
                (narrowed.astype(values.dtype) != values) & ~(np.isnan(values) & np.isnan(narrowed))
            )
        if lost:
            warnings.warn(
                f"column {key!r}: {values.dtype} narrowed to float32 (TFRecord floats are "
                f"float32); {lost} of {values.size} values changed",
                RuntimeWarning,
                stacklevel=4,
            )


def table_records(
    table: pa.Table, *, sequence_features: Optional[Sequence[str]] = None
) -> list[bytes]:
    """Serialize each row of ``table`` as a ``tf.train.Example`` (or ``SequenceExample``).

    Columns named in ``sequence_features`` (default: those the table's metadata
    marks, see :func:`to_arrow`) become feature lists of a ``SequenceExample``,
    one step per item of the row's list. Without feature lists every row is an
    ``Example`` and is encoded a whole column at a time.
    """
    columns = from_arrow(table)
    n = table.num_rows
    seq = list(sequence_features) if sequence_features is not None else feature_lists_of(table)
    unknown = [k for k in seq if k not in columns]
    if unknown:
        raise ValueError(f"sequence_features names columns the table does not have: {unknown}")
    for key, value in columns.items():
        if isinstance(value, np.ndarray):
            _warn_narrowed(key, value)
        elif isinstance(value.flat_values, np.ndarray):
            _warn_narrowed(key, value.flat_values)
    if not seq:
        for key, value in columns.items():
            if isinstance(value, RaggedValue) and isinstance(value.values, RaggedValue):
                raise ValueError(
                    f"column {key!r} is a list of lists ({table.schema.field(key).type}), which "
                    "an Example cannot hold: write it as a SequenceExample feature list "
                    f"(sequence_features=[{key!r}])"
                )
        plain = {
            k: (_ragged_rows(v) if isinstance(v, RaggedValue) else v) for k, v in columns.items()
        }
        return encode_columns(plain, n)
    context = {k: v for k, v in columns.items() if k not in seq}
    ctx_rows = {
        k: (_ragged_rows(v) if isinstance(v, RaggedValue) else list(v)) for k, v in context.items()
    }
    lists: dict[str, list[Any]] = {}
    for key in seq:
        value = columns[key]
        if not isinstance(value, RaggedValue):
            raise ValueError(
                f"feature list {key!r} must be a list column (one list of steps per row), "
                f"got {table.schema.field(key).type}"
            )
        lists[key] = _ragged_rows(value)
    records = []
    for i in range(n):
        steps = {k: [np.asarray(s).reshape(-1) for s in v[i]] for k, v in lists.items()}
        records.append(encode_sequence_example({k: v[i] for k, v in ctx_rows.items()}, steps))
    return records
