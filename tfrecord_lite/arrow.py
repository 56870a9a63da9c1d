"""Parsed records as Apache Arrow tables (and pandas, Parquet), and tables back into TFRecords.

Needs pyarrow: ``pip install "tfrecord-lite[arrow]"``. No TensorFlow involved::

    import tfrecord_lite as tfr
    from tfrecord_lite import arrow as tfa

    table = tfa.read_table("train-*.tfrecord")            # schema inferred
    df = table.to_pandas()
    tfa.write_table(table, "copy.tfrecord")

    parsed = tfr.parse_example(records, features)
    table = tfa.to_arrow(parsed, features)                # no per-row Python
    columns = tfa.from_arrow(table)                       # back to NumPy / RaggedValue

Type mapping (what :func:`parse_example` returns -> Arrow column):

==========================================  =============================================
``FixedLenFeature([], int64/float32)``      ``int64`` / ``float`` (float32) column
``FixedLenFeature([], string)``             ``binary`` (bytes stay bytes, never text)
``FixedLenFeature([k])``, ``([a, b])``      ``fixed_size_list<T, k>``, nested for each
                                            further dimension (``fixed_size_list<
                                            fixed_size_list<T, b>, a>``)
``VarLenFeature`` (:class:`SparseValue`)    ``list<T>``: one list of values per record
``RaggedFeature`` (:class:`RaggedValue`)    ``list<T>`` (``list<list<T>>`` for each
                                            further ragged dimension); the row splits
                                            *are* the Arrow offsets
``FixedLenSequenceFeature(shape)``          ``list<T>`` / ``list<fixed_size_list<T, k>>``
                                            with each record's own number of steps
SequenceExample feature list                ``list<list<T>>`` (VarLen / Ragged) or
                                            ``list<T>`` / ``list<fixed_size_list<T, k>>``
                                            (``FixedLenSequenceFeature``): one list of
                                            steps per record
==========================================  =============================================

Fixed-length shapes are plain ``fixed_size_list`` columns rather than Arrow's
fixed-shape tensor extension type: every Arrow consumer (Parquet, pandas, Ray
Data, Dask, DuckDB, Polars) reads ``fixed_size_list`` natively, while the
extension type is dropped to its storage by many of them, and it cannot hold
``bytes`` at all. :func:`from_arrow` turns nested fixed-size lists back into one
``(N, a, b)`` array, so nothing is lost.

Every conversion works on whole arrays: dense arrays are handed to Arrow as
they are (zero-copy for numbers), ragged and sparse values become offsets with
one NumPy operation. Which keys were SequenceExample feature lists is kept in
the schema metadata (``tfrecord_lite.feature_lists``), so :func:`write_table`
writes such a table back as SequenceExamples.

A ``SparseFeature`` (sparse values at stored indices) has no Arrow column type:
read its index and value keys as ``VarLenFeature`` columns instead.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from ._errors import ParseError
from ._examples import (
    DEFAULT_SAMPLE,
    FeatureSpec,
    FixedLenSequenceFeature,
    ParsedValue,
    RaggedFeature,
    RaggedValue,
    SparseFeature,
    SparseValue,
    VarLenFeature,
    encode_columns,
    encode_sequence_example,
    infer_schema,
    parse_example,
    parse_sequence_example,
    validate_features,
)
from ._files import PathOrFile, TFRecordOptions, TFRecordReader, TFRecordWriter

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "arrow_schema",
    "feature_lists_of",
    "from_arrow",
    "iter_tables",
    "read_table",
    "table_records",
    "to_arrow",
    "write_table",
]

#: Records parsed (and converted) per batch by :func:`read_table` and :func:`iter_tables`.
DEFAULT_BATCH_SIZE = 8192
#: Schema metadata key listing the columns that are SequenceExample feature lists.
FEATURE_LISTS_KEY = b"tfrecord_lite.feature_lists"
_INT32_MAX = 2**31 - 1


def _pa() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise ImportError(
            'tfrecord_lite.arrow needs pyarrow: pip install "tfrecord-lite[arrow]"'
        ) from None
    return pyarrow


# --------------------------------------------------------------------------- NumPy -> Arrow


def _flat_array(values: np.ndarray) -> Any:
    """A 1-D NumPy array as an Arrow array: bytes as ``binary``, numbers zero-copy."""
    pa = _pa()
    if values.dtype == object:
        items = values.tolist()
        try:
            data = b"".join(items)
        except TypeError:  # not all bytes (e.g. str from a user's array): let Arrow convert
            return pa.array(values, type=pa.binary())
        if len(data) > _INT32_MAX:
            return pa.array(values, type=pa.large_binary())
        # One join and one cumsum: the bytes are copied once, no per-value Arrow call.
        offsets = np.zeros(len(items) + 1, dtype=np.int32)
        np.cumsum(np.fromiter(map(len, items), np.int32, len(items)), out=offsets[1:])
        return pa.Array.from_buffers(
            pa.binary(), len(items), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
    return pa.array(np.ascontiguousarray(values))


def _fixed_lists(flat: Any, dims: Sequence[int]) -> Any:
    """Wrap a flat Arrow array into nested fixed-size lists of ``dims`` (outermost first)."""
    pa = _pa()
    arr = flat
    for d in reversed(dims):
        arr = pa.FixedSizeListArray.from_arrays(arr, d)
    return arr


def _dense_to_arrow(a: np.ndarray) -> Any:
    """``(N, *shape)`` -> primitive column (shape ``()``) or nested fixed-size lists."""
    n = a.shape[0]
    dims = [int(d) for d in a.shape[1:]]
    if 0 in dims:
        pa = _pa()
        typ = _flat_array(a.reshape(-1)[:0]).type
        for d in reversed(dims):
            typ = pa.list_(typ, d)
        empty_row = np.zeros(dims, dtype=np.int8).tolist()
        return pa.array([empty_row] * n, type=typ)
    return _fixed_lists(_flat_array(a.reshape(-1)), dims)


def _offsets(splits: np.ndarray) -> Any:
    """Row splits as Arrow offsets: int32 when they fit (``list``), else int64 (``large_list``)."""
    pa = _pa()
    splits = np.asarray(splits)
    if len(splits) == 0:
        splits = np.zeros(1, dtype=np.int64)
    if splits[0] != 0:
        raise ValueError("row splits must start at 0")
    if int(splits[-1]) <= _INT32_MAX:
        return pa.array(splits.astype(np.int32, copy=False))
    return pa.array(splits.astype(np.int64, copy=False))


def _list_array(offsets: Any, values: Any) -> Any:
    pa = _pa()
    if offsets.type == pa.int64():
        return pa.LargeListArray.from_arrays(offsets, values)
    return pa.ListArray.from_arrays(offsets, values)


def _ragged_to_arrow(rv: RaggedValue) -> Any:
    inner = rv.values
    if isinstance(inner, RaggedValue):
        values = _ragged_to_arrow(inner)
    else:
        values = _dense_to_arrow(inner) if inner.ndim > 1 else _flat_array(inner)
    splits = np.asarray(rv.row_splits)
    if len(splits) and splits[0] != 0:
        splits = splits - splits[0]
    return _list_array(_offsets(splits), values)


def _splits_of_counts(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _sparse_to_arrow(sv: SparseValue) -> Any:
    """A batch's ``SparseValue`` -> ``list<T>`` (2-D indices) or ``list<list<T>>`` (3-D)."""
    n = int(sv.dense_shape[0]) if len(sv.dense_shape) else 0
    idx = np.asarray(sv.indices)
    values = _flat_array(np.asarray(sv.values))
    ndim = idx.shape[1] if idx.ndim == 2 else 0
    if ndim == 2:
        counts = np.bincount(idx[:, 0], minlength=n) if len(idx) else np.zeros(n, np.int64)
        return _list_array(_offsets(_splits_of_counts(counts)), values)
    if ndim == 3:
        # Feature lists: (record, step, position). Steps without values are not in the
        # indices; a record's steps run up to its last step that has a value.
        steps = np.zeros(n, dtype=np.int64)
        if len(idx):
            np.maximum.at(steps, idx[:, 0], idx[:, 1] + 1)
        rec_splits = _splits_of_counts(steps)
        step_ids = rec_splits[idx[:, 0]] + idx[:, 1] if len(idx) else np.zeros(0, np.int64)
        per_step = np.bincount(step_ids, minlength=int(rec_splits[-1]))
        inner = _list_array(_offsets(_splits_of_counts(per_step)), values)
        return _list_array(_offsets(rec_splits), inner)
    raise ValueError(
        f"a SparseValue with {ndim}-D indices has no Arrow column type; "
        "parse the feature as a RaggedFeature"
    )


def _sequence_dense_to_arrow(a: np.ndarray, lengths: Optional[np.ndarray]) -> Any:
    """``(N, steps, *shape)`` padded array -> ``list<...>`` of each record's real steps."""
    n, max_steps = int(a.shape[0]), int(a.shape[1])
    if lengths is None:
        lengths = np.full(n, max_steps, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) != n:
        raise ValueError(f"lengths has {len(lengths)} entries for {n} records")
    if max_steps and (lengths == max_steps).all():
        steps = a.reshape((n * max_steps, *a.shape[2:]))
    else:
        mask = np.arange(max_steps) < lengths[:, None]
        steps = a[mask]
    inner = _dense_to_arrow(steps) if steps.ndim > 1 else _flat_array(steps)
    return _list_array(_offsets(_splits_of_counts(lengths)), inner)


def _column_to_arrow(
    key: str,
    value: Any,
    spec: Optional[FeatureSpec],
    lengths: Optional[np.ndarray],
) -> Any:
    pa = _pa()
    if isinstance(spec, SparseFeature):
        raise ValueError(
            f"feature {key!r} is a SparseFeature, which has no Arrow column type: read its "
            "index and value keys as VarLenFeatures instead"
        )
    if isinstance(value, SparseValue):
        return _sparse_to_arrow(value)
    if isinstance(value, RaggedValue):
        return _ragged_to_arrow(value)
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            raise ValueError(f"column {key!r}: a 0-d array is one record; pass a batch")
        if isinstance(spec, FixedLenSequenceFeature) or (spec is None and lengths is not None):
            if value.ndim < 2:
                raise ValueError(f"column {key!r}: a sequence needs (N, steps, ...) values")
            return _sequence_dense_to_arrow(value, lengths)
        return _dense_to_arrow(value)
    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        return value
    raise TypeError(
        f"column {key!r}: expected a NumPy array, SparseValue or RaggedValue "
        f"(what parse_example returns), got {type(value).__name__}"
    )


def to_arrow(
    columns: Union[Mapping[str, ParsedValue], tuple[Any, ...]],
    features: Optional[Mapping[str, FeatureSpec]] = None,
    *,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
    lengths: Optional[Mapping[str, np.ndarray]] = None,
) -> pa.Table:
    """A ``pyarrow.Table`` from what :func:`~tfrecord_lite.parse_example` returns.

    ``columns`` is the dict of a batch parse, or the ``(context, feature_lists,
    lengths)`` tuple of :func:`~tfrecord_lite.parse_sequence_example` (its
    feature lists become ``list`` columns beside the context columns). Pass the
    ``features`` (and ``sequence_features``) the batch was parsed with: then
    every batch of the same specs gets the same Arrow schema (a
    ``FixedLenSequenceFeature`` becomes a ``list`` column instead of a
    fixed-size list of the batch's longest record). ``lengths`` (the third item
    of ``parse_sequence_example``) gives each record's real number of steps.
    See the module documentation for the type mapping.
    """
    pa = _pa()
    seq_cols: Mapping[str, ParsedValue] = {}
    if isinstance(columns, tuple):
        if len(columns) != 3:
            raise TypeError(
                "to_arrow takes a dict of columns or the (context, feature_lists, lengths) "
                "tuple of parse_sequence_example"
            )
        ctx, seq_cols, seq_lengths = columns
        if lengths is None:
            lengths = seq_lengths
        columns = ctx
    if not isinstance(columns, Mapping):
        raise TypeError(f"columns must be a dict of parsed columns, got {type(columns).__name__}")
    specs = validate_features(features) if features is not None else {}
    sspecs = validate_features(sequence_features, "sequence_features") if sequence_features else {}
    lengths = dict(lengths or {})
    names: list[str] = []
    arrays: list[Any] = []
    for key, value in columns.items():
        spec = specs.get(key)
        ln = lengths.get(key) if isinstance(spec, FixedLenSequenceFeature) else None
        names.append(key)
        arrays.append(_column_to_arrow(key, value, spec, ln))
    feature_lists: list[str] = []
    for key, value in seq_cols.items():
        if key in columns:
            raise ValueError(
                f"{key!r} is both a context feature and a feature list; rename one of them"
            )
        spec = sspecs.get(key)
        if isinstance(value, np.ndarray):
            arr = _sequence_dense_to_arrow(value, lengths.get(key))
        else:
            arr = _column_to_arrow(key, value, spec, None)
        names.append(key)
        arrays.append(arr)
        feature_lists.append(key)
    n_rows = {len(a) for a in arrays}
    if len(n_rows) > 1:
        raise ValueError(
            "columns have different numbers of records: "
            + ", ".join(f"{k!r}: {len(a)}" for k, a in zip(names, arrays))
        )
    metadata = {FEATURE_LISTS_KEY: json.dumps(feature_lists).encode()} if feature_lists else None
    return pa.Table.from_arrays(arrays, names=names, metadata=metadata)


# --------------------------------------------------------------------------- Arrow -> NumPy


def _check_no_nulls(key: str, arr: Any) -> None:
    if arr.null_count:
        raise ValueError(
            f"column {key!r} has {arr.null_count} null values, which a TFRecord feature "
            "cannot hold: fill them (e.g. table.fill_null) or drop those rows first"
        )


def _leaf_to_numpy(key: str, arr: Any) -> np.ndarray:
    pa = _pa()
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
    pa = _pa()
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
    pa = _pa()
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


def write_table(
    table: pa.Table,
    path: PathOrFile,
    *,
    compression: Union[str, TFRecordOptions, None] = None,
    sequence_features: Optional[Sequence[str]] = None,
    atomic: bool = False,
    batch_size: int = 65536,
) -> int:
    """Write every row of ``table`` as one record of a TFRecord file; return the count.

    Rows are ``Example`` records, or ``SequenceExample`` when some columns are
    feature lists (``sequence_features``, or the table's metadata). The mapping
    is the reverse of :func:`to_arrow`; a file written from a table that
    :func:`read_table` returned parses back to the same values.
    ``atomic=True`` writes a temporary file renamed onto ``path`` at the end.
    """
    pa = _pa()
    if not isinstance(table, pa.Table):
        raise TypeError(f"expected a pyarrow.Table, got {type(table).__name__}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    seq = list(sequence_features) if sequence_features is not None else feature_lists_of(table)
    n = 0
    with TFRecordWriter(path, compression, atomic=atomic) as writer:
        for start in range(0, table.num_rows, batch_size):
            chunk = table.slice(start, batch_size)
            n += writer.write_all(table_records(chunk, sequence_features=seq))
    return n


# --------------------------------------------------------------------------- reading


class _ReadPlan:
    """What to parse and how: the specs, inferred when not given, and the Arrow schema."""

    def __init__(
        self,
        features: Optional[Mapping[str, FeatureSpec]],
        sequence_features: Optional[Mapping[str, FeatureSpec]],
        sample_source: Any = None,
        *,
        compression: Any = "auto",
        sample: Optional[int] = DEFAULT_SAMPLE,
    ) -> None:
        if features is None and sequence_features is None:
            if sample_source is None:
                raise ValueError("features=None needs files to infer the schema from")
            schema = infer_schema(sample_source, sample, compression=compression)
            if not dict(schema) and not schema.is_sequence:
                raise ValueError(
                    "could not infer a schema: the sampled records hold no features; "
                    "pass features= yourself"
                )
            features = dict(schema)
            sequence_features = dict(schema.sequence_features) if schema.is_sequence else None
        self.features = validate_features(features or {})
        self.sequence = sequence_features is not None
        seq = validate_features(sequence_features or {}, "sequence_features")
        # Feature lists parse as RaggedFeature: unlike VarLenFeature's sparse value it keeps
        # steps without values, and its splits are the Arrow offsets as they are.
        self.sequence_features = {
            k: RaggedFeature(s.dtype) if isinstance(s, VarLenFeature) else s for k, s in seq.items()
        }
        for key, spec in self.features.items():
            if isinstance(spec, SparseFeature):
                raise ValueError(
                    f"feature {key!r} is a SparseFeature, which has no Arrow column type: "
                    "read its index and value keys as VarLenFeatures instead"
                )
        # An Example's FixedLenSequenceFeature parses padded to the batch's longest record;
        # read as ragged values, each record keeps its own number of rows.
        self._rows_of = {
            k: s for k, s in self.features.items() if isinstance(s, FixedLenSequenceFeature)
        }
        self._parse_specs = {
            k: RaggedFeature(s.dtype) if k in self._rows_of else s for k, s in self.features.items()
        }
        self.schema = self.convert([]).schema

    def _unpad(self, parsed: dict[str, ParsedValue]) -> dict[str, ParsedValue]:
        for key, spec in self._rows_of.items():
            rv = parsed[key]
            assert isinstance(rv, RaggedValue) and isinstance(rv.values, np.ndarray)
            shape = tuple(spec.shape)
            size = int(np.prod(shape, dtype=np.int64))
            counts = np.diff(rv.row_splits)
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
            splits = rv.row_splits // size if size else np.zeros_like(rv.row_splits)
            parsed[key] = RaggedValue(rv.values.reshape((-1, *shape)), splits)
        return parsed

    def convert(self, records: Sequence[bytes]) -> pa.Table:
        """Parse a batch of records into a table of this plan's schema."""
        if self.sequence:
            ctx, seq, lengths = parse_sequence_example(
                records, self.features, self.sequence_features
            )
            return to_arrow(
                (ctx, seq, lengths),
                self.features,
                sequence_features=self.sequence_features,
            )
        parsed = parse_example(records, self._parse_specs)
        return to_arrow(self._unpad(parsed) if self._rows_of else parsed, self.features)


def _batches(records: Iterator[bytes], size: int) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    for r in records:
        batch.append(r)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def iter_tables(
    paths: Union[PathOrFile, Sequence[PathOrFile]],
    features: Optional[Mapping[str, FeatureSpec]] = None,
    *,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
    compression: Union[str, TFRecordOptions, None] = "auto",
    verify: bool = True,
    on_error: str = "raise",
    batch_size: int = DEFAULT_BATCH_SIZE,
    sample: Optional[int] = DEFAULT_SAMPLE,
) -> Iterator[pa.Table]:
    """Yield the records of ``paths`` as tables of ``batch_size`` rows (the last may be shorter).

    Arguments as :func:`read_table`; every table has the same schema.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    plan = _ReadPlan(features, sequence_features, paths, compression=compression, sample=sample)
    with TFRecordReader(paths, compression, verify=verify, on_error=on_error) as reader:
        for batch in _batches(reader, batch_size):
            yield plan.convert(batch)


def read_table(
    paths: Union[PathOrFile, Sequence[PathOrFile]],
    features: Optional[Mapping[str, FeatureSpec]] = None,
    *,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
    compression: Union[str, TFRecordOptions, None] = "auto",
    verify: bool = True,
    on_error: str = "raise",
    batch_size: int = DEFAULT_BATCH_SIZE,
    sample: Optional[int] = DEFAULT_SAMPLE,
) -> pa.Table:
    """Read the records of one or more TFRecord files into one ``pyarrow.Table``.

    ``paths`` is anything :class:`~tfrecord_lite.TFRecordReader` takes (paths,
    globs, directories, ``name@N`` shard specs, URLs, file objects).
    ``features`` are the Example's specs (for SequenceExamples, the context
    specs, with ``sequence_features`` for the feature lists). When both are
    ``None`` the schema is inferred from the first ``sample`` records
    (:func:`~tfrecord_lite.infer_schema`), SequenceExamples included.
    ``compression``, ``verify`` and ``on_error`` are the reader's.
    """
    pa = _pa()
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    plan = _ReadPlan(features, sequence_features, paths, compression=compression, sample=sample)
    tables = [plan.schema.empty_table()]
    with TFRecordReader(paths, compression, verify=verify, on_error=on_error) as reader:
        for batch in _batches(reader, batch_size):
            tables.append(plan.convert(batch))
    return pa.concat_tables(tables)


def arrow_schema(
    features: Optional[Mapping[str, FeatureSpec]] = None,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
) -> pa.Schema:
    """The Arrow schema :func:`read_table` gives for these specs (see the type mapping)."""
    if features is None and sequence_features is None:
        raise ValueError("arrow_schema needs features= and/or sequence_features=")
    return _ReadPlan(features or {}, sequence_features).schema
