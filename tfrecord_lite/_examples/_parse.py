"""Parsing serialized ``tf.train.Example`` / ``SequenceExample`` records into NumPy.

Semantics follow TensorFlow's ``tf.io.parse_example`` family
(``example_proto_fast_parsing.cc``): shapes, defaults, padding, and which inputs
are errors. Output types are stable:

* ``FixedLenFeature`` -> ``np.ndarray`` (int64, float32, or object holding ``bytes``)
* ``FixedLenSequenceFeature`` -> ``np.ndarray``, padded to the longest record
* ``VarLenFeature`` / ``SparseFeature`` -> :class:`~tfrecord_lite.SparseValue`
* ``RaggedFeature`` -> :class:`~tfrecord_lite.RaggedValue` (a plain array for one
  record without partitions, as TensorFlow)

Parsing is batch-first. It runs in two steps: *extract* turns the records into
one column per feature key (the flat values of every record, their per-record
counts, and which records have the feature at all), then *assemble* builds each
spec's output from its columns with whole-array NumPy operations. Only the
extract step looks at records one by one, and it can be replaced by a faster
extractor without changing the results (``_fastparse`` does, for every record it
can read with certainty; the rest go through protobuf here).

A feature spec is compiled once into a :class:`ParsePlan` (validated specs, the
record keys read, the extractor's key table); every reader takes one. Pipelines
that hand out small batches parse them through :func:`parse_batches`, which
extracts :data:`CHUNK_RECORDS` records at a time and slices each batch's result
out, so ``batch(32)`` costs about what ``batch(4096)`` does.

Error messages start with TensorFlow's own wording (``Name: <name>, Key: k, Index: i.
...`` in a batch, ``Key: k.  ...`` for one record); :class:`ParseError` then adds
``(record N)``. ``tests/interop/test_parse_interop.py`` checks all of this against
TensorFlow 2.21.

Differences from TensorFlow, on purpose:

* ragged partitions and sparse indices are always validated: TensorFlow's
  ``RaggedFeature(validate=False)`` and ``SparseFeature`` return malformed tensors
  for bad ones (even ``validate=True`` misses partitions that leave a record's
  values uncovered in a batch);
* packed and unpacked chunks of one list may be mixed, and every packed chunk
  counts (standard protobuf rules; TensorFlow's fast parser rejects the mix and
  keeps only the first packed chunk);
* an empty ``Feature()`` after a value for the same key (concatenated Examples)
  replaces it, so the key is missing (protobuf's last-wins); TensorFlow keeps the
  earlier value;
* a missing ``RowSplits`` feature is no rows in ``parse_single_example`` too
  (TensorFlow's batch parse agrees; its single-example parse fails);
* ``UniformRowLength(0)`` over no values is 0 rows (TensorFlow: one empty row for
  one record, a division by zero for a batch); a ``FixedLenSequenceFeature`` with
  a 0-size dimension is a ``ValueError`` when it is created (TensorFlow crashes);
* ``RaggedFeature`` partitions are not supported in ``sequence_features``
  (``ValueError``);
* allowed where TensorFlow raises ``ValueError``: a ``default_value`` for a
  ``FixedLenSequenceFeature`` in ``sequence_features``, a ``SparseFeature`` in
  ``context_features``, one key read by several specs (with the same dtype).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Callable, Optional, Union

import numpy as np
from google.protobuf.message import DecodeError

from .. import example_pb2
from .._errors import ParseError
from .._record import RecordSpans
from . import _extract as _fastparse
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
    dtype_of_kind,
    int64,
    string,
    validate_features,
)
from ._values import RaggedValue, SparseValue

__all__ = [
    "parse_example",
    "parse_sequence_example",
    "parse_single_example",
    "parse_single_sequence_example",
]

Serialized = Union[bytes, bytearray, memoryview]
ParsedValue = Union[np.ndarray, SparseValue, RaggedValue]

#: TensorFlow's names for the dtypes in error messages: DataTypeString, and the
#: shorter names its value-count messages use.
_TF_NAME = {"int64": "int64", "float32": "float", "string": "string"}
_TF_COUNT_NAME = {"int64": "int64", "float32": "float", "string": "bytes"}


# --------------------------------------------------------------------------- helpers


def _tf_name(dtype: DType) -> str:
    return _TF_NAME[dtype.name]


def _count_name(dtype: DType) -> str:
    return _TF_COUNT_NAME[dtype.name]


def _shape_str(shape: Sequence[Any]) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _preview(record: bytes, limit: int = 40) -> str:
    text = record[:limit].decode("latin-1").encode("unicode_escape").decode("ascii")
    return text + ("..." if len(record) > limit else "")


def _filled(shape: tuple[int, ...], fill: Any, dtype: DType) -> np.ndarray:
    """``np.full`` that keeps bytes intact (``np.full`` drops a bytes fill's trailing NULs)."""
    out = np.empty(shape, dtype=dtype.np_dtype)
    out.fill(fill)
    return out


def _empty(dtype: DType, n: int = 0) -> np.ndarray:
    return np.empty(n, dtype=dtype.np_dtype) if dtype is not string else np.empty(n, dtype=object)


def _as_records(serialized: Any, what: str) -> Sequence[bytes]:
    if isinstance(serialized, (bytes, bytearray, memoryview, str)):
        raise TypeError(
            f"{what} takes a batch (a list of serialized records); for one record use "
            f"{'parse_single_example' if 'sequence' not in what else 'parse_single_sequence_example'}"
        )
    if isinstance(serialized, list) and set(map(type, serialized)) <= {bytes}:
        return serialized  # the common case, checked at C speed
    if isinstance(serialized, RecordSpans):
        return serialized  # records left in the blocks a dataset read
    records = []
    for rec in serialized:
        if isinstance(rec, bytes):
            records.append(rec)
        elif isinstance(rec, (bytearray, memoryview, np.bytes_)):
            records.append(bytes(rec))
        elif isinstance(rec, np.ndarray) and rec.ndim == 0 and isinstance(rec.item(), bytes):
            records.append(rec.item())  # a 0-d array, as decode_json_example returns
        else:
            raise TypeError(f"serialized records must be bytes, got {type(rec).__name__}")
    return records


def _names(example_names: Optional[Sequence[Any]], n: int) -> Optional[list[str]]:
    if example_names is None:
        return None
    names = [n.decode() if isinstance(n, bytes) else str(n) for n in example_names]
    if len(names) not in (0, n):
        raise ValueError(f"example_names has {len(names)} names for {n} records")
    return names or None


class _Where:
    """Error-message context, worded as TensorFlow's parse ops word it.

    Batch errors start ``Name: <name>, `` and name the record as ``Key: k, Index: i.``;
    single-record errors say ``Key: k.``. ``sparse_keys`` are keys read only by
    VarLen/Sparse/Ragged specs, whose type errors TensorFlow words differently from
    dense ones; ``section`` is ``"context"`` for a SequenceExample's context, whose
    messages TensorFlow words in yet another way.
    """

    def __init__(
        self,
        names: Optional[list[str]],
        batch: bool,
        sparse_keys: frozenset[str] = frozenset(),
        section: str = "example",
    ) -> None:
        self.names = names
        self.batch = batch
        self.sparse_keys = sparse_keys
        self.section = section

    def name(self, i: int) -> str:
        return self.names[i] if self.names else "<unknown>"

    def prefix(self, i: int) -> str:
        if not self.batch:
            return ""
        return f"Name: {self.name(i)}, "

    def key(self, i: int, key: str) -> str:
        """``Key: k, Index: i.  `` (batch) or ``Key: k.  `` (one record)."""
        return f"Key: {key}, Index: {i}.  " if self.batch else f"Key: {key}.  "

    def error(self, i: int, key: str, text: str) -> ParseError:
        return ParseError(self.prefix(i) + text, key=key, index=i)

    def type_error(self, i: int, key: str, got: DType, expected: DType) -> ParseError:
        """A feature holds another kind of list than its spec's dtype."""
        if self.section == "context":
            return self.error(
                i,
                key,
                f"Context feature: {key}.  Data types don't match. Expected type: "
                f"{_tf_name(expected)}, Actual type: {_tf_name(got)}",
            )
        if key in self.sparse_keys:
            text = (
                f"Data types don't match. Expected type: {_tf_name(expected)}, "
                f"Actual type: {_tf_name(got)}"
            )
        else:
            text = (
                f"Data types don't match. Data type: {_tf_name(got)} "
                f"but expected type: {_tf_name(expected)}"
            )
        return self.error(i, key, self.key(i, key) + text)

    def required_error(self, i: int, key: str, dtype: DType) -> ParseError:
        text = f"Feature: {key} (data type: {_tf_name(dtype)}) is required but could not be found."
        if self.section == "context":  # TensorFlow names no record here
            return ParseError(text, key=key, index=i)
        return self.error(i, key, text)

    def count_error(
        self, i: int, key: str, dtype: DType, count: int, shape: Sequence[Any]
    ) -> ParseError:
        if self.section == "context":
            size = math.prod(shape)
            return ParseError(
                f"Inconsistent max number of elements for feature {key}: expected {size}, "
                f"but found {count}",
                key=key,
                index=i,
            )
        return self.error(
            i,
            key,
            f"{self.key(i, key)}Number of {_count_name(dtype)} values != expected.  "
            f"Values size: {count} but output shape: {_shape_str(shape)}",
        )


# --------------------------------------------------------------------------- extract


#: One feature key's values over a batch (see :class:`~tfrecord_lite._examples._extract.FastColumn`).
Column = _fastparse.FastColumn


def _decode(
    records: Sequence[bytes], where: _Where, message: Any, indices: Optional[Sequence[int]] = None
) -> list[Any]:
    """Parse each record with protobuf; ``indices`` are the records' batch positions."""
    out = []
    parse = message.FromString
    for i, rec in zip(range(len(records)) if indices is None else indices, records):
        try:
            out.append(parse(rec))
        except (DecodeError, RuntimeError, ValueError) as err:
            if message is example_pb2.Example:
                text = f"Could not parse example input, value: '{_preview(rec)}' ({err})"
            else:
                text = (
                    f"Invalid protocol message input, example id: {where.name(i)}: could not "
                    f"parse sequence example input, value: '{_preview(rec)}' ({err})"
                )
            raise ParseError(text, index=i) from None
    return out


def _feature_values(
    feature: Any, key: str, dtype: DType, i: int, where: _Where
) -> Optional[list[Any]]:
    """The values of one ``Feature`` if it has the right kind; ``None`` if it has none."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return None
    if kind != dtype.kind:
        raise where.type_error(i, key, dtype_of_kind(kind), dtype)
    return list(getattr(feature, kind).value)


def _column(
    feature_maps: list[Any],
    key: str,
    dtype: DType,
    where: _Where,
    indices: Optional[Sequence[int]] = None,
) -> Column:
    n = len(feature_maps)
    present = np.zeros(n, dtype=bool)
    counts = np.zeros(n, dtype=np.int64)
    chunks: list[list[Any]] = []
    for j, fmap in enumerate(feature_maps):
        feature = fmap.get(key)
        if feature is None:
            continue
        vals = _feature_values(feature, key, dtype, j if indices is None else indices[j], where)
        if vals is None:
            continue
        present[j] = True
        counts[j] = len(vals)
        chunks.append(vals)
    flat = [v for chunk in chunks for v in chunk]
    if dtype is string:
        values = np.empty(len(flat), dtype=object)
        values[:] = flat
    else:
        values = np.array(flat, dtype=dtype.np_dtype)
    return Column(present, counts, values)


def _sparse_keys(specs: Mapping[str, FeatureSpec]) -> frozenset[str]:
    """Keys read only by VarLen/Sparse/Ragged specs (TensorFlow words their errors apart)."""
    dense = {
        k for k, s in specs.items() if isinstance(s, (FixedLenFeature, FixedLenSequenceFeature))
    }
    return frozenset(_keys_needed(specs)) - dense


def _keys_needed(specs: Mapping[str, FeatureSpec]) -> dict[str, DType]:
    """Every record key the specs read, with the dtype it must hold."""
    needed: dict[str, DType] = {}

    def need(key: str, dtype: DType, owner: str) -> None:
        if needed.setdefault(key, dtype) is not dtype:
            raise ValueError(
                f"feature key {key!r} is read as both {needed[key]!r} and {dtype!r} (by {owner!r})"
            )

    for name, spec in specs.items():
        if isinstance(spec, SparseFeature):
            for k in [spec.index_key] if isinstance(spec.index_key, str) else spec.index_key:
                need(k, int64, name)
            need(spec.value_key, spec.dtype, name)
        elif isinstance(spec, RaggedFeature):
            need(spec.value_key or name, spec.dtype, name)
            for p in spec.partitions:
                if not isinstance(p, UniformRowLength):
                    need(p.key, int64, name)
        else:
            need(name, spec.dtype, name)
    return needed


class ParsePlan(Mapping[str, FeatureSpec]):
    """A feature spec compiled once for every parse that uses it.

    A read-only mapping of the validated specs (so it can be passed wherever a
    feature dict is expected), plus what parsing derives from them: every record
    key read and its dtype (``needed``), the keys read only by VarLen / Sparse /
    Ragged specs (``sparse_keys``, for TensorFlow's error wording) and the key
    table of the vectorized extractor (built on first use). Build one with
    :func:`compile_features`; ``parse_example``, the dataset ops, ``read_examples``
    and the PyTorch datasets all take one and skip validating the spec again.
    """

    def __init__(self, features: Any, what: str = "features") -> None:
        self.specs: dict[str, FeatureSpec] = validate_features(features, what)
        self.needed: dict[str, DType] = _keys_needed(self.specs)
        self.sparse_keys = _sparse_keys(self.specs)
        #: Raised when parsing Examples (TensorFlow raises it then, not when specs are made).
        self.unsupported: Optional[str] = None
        for spec in self.specs.values():
            if isinstance(spec, FixedLenSequenceFeature) and not spec.allow_missing:
                self.unsupported = (
                    "Unsupported: FixedLenSequenceFeature requires allow_missing to be True."
                )
        self._table: Optional[_fastparse.KeyTable] = None

    @property
    def table(self) -> _fastparse.KeyTable:
        """The key table of the vectorized extractor (compiled on first use)."""
        if self._table is None:
            self._table = _fastparse.key_table(self.needed)
        return self._table

    def __getitem__(self, key: str) -> FeatureSpec:
        return self.specs[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    def __repr__(self) -> str:
        return f"ParsePlan({self.specs!r})"


def compile_features(features: Any, what: str = "features") -> ParsePlan:
    """``features`` compiled into a :class:`ParsePlan` (returned as is if it is one)."""
    if isinstance(features, ParsePlan):
        return features
    return ParsePlan(features, what)


def extract_columns(
    feature_maps: list[Any],
    needed: Mapping[str, DType],
    where: _Where,
    indices: Optional[Sequence[int]] = None,
) -> dict[str, Column]:
    """The generic extractor: one :class:`Column` per key, from parsed protobuf maps."""
    return {key: _column(feature_maps, key, dtype, where, indices) for key, dtype in needed.items()}


def _extract(records: Sequence[bytes], plan: ParsePlan, where: _Where) -> dict[str, Column]:
    """Columns for every needed key: the vectorized path where it applies, else protobuf."""
    n = len(records)
    needed = plan.needed
    fast = (
        _fastparse.extract(records, needed, table=plan.table)
        if needed and len(records) >= _fastparse.MIN_BATCH and _fastparse.enabled()
        else None
    )
    if fast is None:
        maps = [ex.features.feature for ex in _decode(records, where, example_pb2.Example)]
        return extract_columns(maps, needed, where)
    handled, fast_cols = fast
    if handled.all():
        return fast_cols
    rest = np.flatnonzero(~handled)
    rest_list = rest.tolist()
    examples = _decode([records[i] for i in rest_list], where, example_pb2.Example, rest_list)
    maps = [ex.features.feature for ex in examples]
    slow_cols = extract_columns(maps, needed, where, rest_list)
    done = np.flatnonzero(handled)
    return {
        key: _fastparse.merge_columns(
            n, [(done, fast_cols[key]), (rest, slow_cols[key])], needed[key]
        )
        for key in needed
    }


# --------------------------------------------------------------------------- assemble


def _row_starts(counts: np.ndarray) -> np.ndarray:
    starts = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return starts


def _fixed_len(key: str, spec: FixedLenFeature, col: Column, where: _Where) -> np.ndarray:
    n = len(col.present)
    shape = tuple(spec.shape)
    size = math.prod(shape)
    bad = col.present & (col.counts != size)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise where.count_error(i, key, spec.dtype, int(col.counts[i]), shape)
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


def _var_len(spec: VarLenFeature, col: Column) -> SparseValue:
    counts = col.counts
    n = len(counts)
    width = int(counts.max()) if n else 0
    if width <= 1:
        # At most one value a record (a scalar that may be missing): rows, position 0.
        rows = np.flatnonzero(counts)
        total = len(rows)
        indices = np.zeros((total, 2), dtype=np.int64)
        indices[:, 0] = rows
    else:
        starts = _row_starts(counts)
        total = int(starts[-1])
        indices = np.empty((total, 2), dtype=np.int64)
        indices[:, 0] = np.repeat(np.arange(n, dtype=np.int64), counts)
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


def _fixed_len_sequence(
    key: str, spec: FixedLenSequenceFeature, col: Column, where: _Where
) -> np.ndarray:
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
    rows = col.counts // stride if stride else np.zeros(n, dtype=np.int64)
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


def assemble(
    specs: Mapping[str, FeatureSpec], cols: Mapping[str, Column], where: _Where, batch: bool
) -> dict[str, ParsedValue]:
    """Build every spec's output from the extracted columns."""
    out: dict[str, ParsedValue] = {}
    for key, spec in specs.items():
        if isinstance(spec, FixedLenFeature):
            out[key] = _fixed_len(key, spec, cols[key], where)
        elif isinstance(spec, VarLenFeature):
            out[key] = _var_len(spec, cols[key])
        elif isinstance(spec, FixedLenSequenceFeature):
            if not spec.allow_missing:
                raise ValueError(
                    "Unsupported: FixedLenSequenceFeature requires allow_missing to be True."
                )
            out[key] = _fixed_len_sequence(key, spec, cols[key], where)
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


# --------------------------------------------------------------------------- public API


def parse_example(
    serialized: Sequence[Serialized],
    features: Mapping[str, FeatureSpec],
    example_names: Optional[Sequence[Any]] = None,
    name: Optional[str] = None,
) -> dict[str, ParsedValue]:
    """Parse a batch of serialized ``Example`` records into columns.

    The counterpart of ``tf.io.parse_example``: ``features`` maps keys to specs;
    the result maps each key to a batch value (``(batch,) + shape`` arrays for
    fixed-length features). ``example_names`` label records in error messages.
    Raises :class:`~tfrecord_lite.ParseError` (a ``ValueError``) on records that
    are not Examples or do not fit the specs.
    """
    plan = compile_features(features)
    records = _as_records(serialized, "parse_example")
    where = _Where(_names(example_names, len(records)), batch=True)
    return _parse_examples(records, plan, where, batch=True)


def _parse_examples(
    records: Sequence[bytes], plan: ParsePlan, where: _Where, batch: bool
) -> dict[str, ParsedValue]:
    if plan.unsupported:
        raise ValueError(plan.unsupported)
    where.sparse_keys = plan.sparse_keys
    return assemble(plan.specs, _extract(records, plan, where), where, batch)


def parse_single_example(
    serialized: Serialized,
    features: Mapping[str, FeatureSpec],
    example_names: Optional[Any] = None,
    name: Optional[str] = None,
) -> dict[str, ParsedValue]:
    """Parse one serialized ``Example``, as ``tf.io.parse_single_example``.

    Fixed-length features come back with their spec's shape, variable-length
    ones as :class:`~tfrecord_lite.SparseValue` with 1-D indices.
    """
    plan = compile_features(features)
    specs = plan.specs
    records = _as_records([serialized], "parse_single_example")
    where = _Where(None, batch=False)
    parsed = _parse_examples(records, plan, where, batch=False)
    # Ragged features are built unbatched already (as TensorFlow's single-example parse).
    return {k: v if isinstance(specs[k], RaggedFeature) else _unbatch(v) for k, v in parsed.items()}


# --------------------------------------------------------------------------- batches in chunks

#: Records, and bytes, that :func:`parse_batches` extracts at once (whole user batches;
#: whichever is reached first). The byte bound keeps the extractor's work arrays in
#: the cache for records of many features; the record bound lets files of small
#: records spread each chunk's fixed NumPy cost over more of them.
CHUNK_RECORDS = 16384
CHUNK_BYTES = 2 << 20


def _joined_batches(group: list[Any], what: str) -> tuple[list[Sequence[bytes]], Sequence[bytes]]:
    """The batches of ``group`` as records, and all their records as one sequence
    (spans of the blocks read when every batch is)."""
    batches = [_as_records(b, what) for b in group]
    blocks = [b for b in batches if isinstance(b, RecordSpans)]
    flat: Sequence[bytes] = (
        RecordSpans.join(blocks) if len(blocks) == len(batches) else [r for b in batches for r in b]
    )
    return batches, flat


def _column_rows(col: Column, a: int, b: int, starts: np.ndarray) -> Column:
    """Rows ``a .. b-1`` of a column (``starts``: where each row's values start)."""
    return Column(col.present[a:b], col.counts[a:b], col.values[int(starts[a]) : int(starts[b])])


def _parse_group(group: list[Any], plan: ParsePlan) -> Iterator[dict[str, ParsedValue]]:
    """``parse_example`` of each batch of ``group``, with one extraction for all of them.

    Anything unusual (a record the extractor rejects with an error, a batch that is
    not a list of bytes) parses batch by batch instead, so results and errors (and
    which batches come out before an error) are exactly ``parse_example``'s.
    """
    if len(group) == 1 or plan.unsupported:
        for batch in group:
            yield parse_example(batch, plan)
        return
    try:
        batches, flat = _joined_batches(group, "parse_example")
        where = _Where(None, batch=True, sparse_keys=plan.sparse_keys)
        cols = _extract(flat, plan, where)
    except (ParseError, TypeError, ValueError):
        for batch in group:
            yield parse_example(batch, plan)
        return
    offsets = {key: _row_starts(col.counts) for key, col in cols.items()}
    # Specs whose per-batch output is a slice of one chunk-wide result (the same
    # arrays ``assemble`` would build batch by batch): VarLen specs, and FixedLen
    # specs that every record of the chunk fills. The others are assembled per batch.
    sliced: dict[str, Any] = {}
    for key, spec in plan.specs.items():
        if isinstance(spec, VarLenFeature):
            sliced[key] = _var_len(spec, cols[key]).indices
        elif isinstance(spec, FixedLenFeature):
            size = math.prod(spec.shape)
            col = cols[key]
            if size and col.present.all() and (col.counts == size).all():
                sliced[key] = size
    rest = {key: spec for key, spec in plan.specs.items() if key not in sliced}
    # Batch boundaries, and where each sliced spec's values of each batch start
    # (the other specs' columns are cut by _column_rows).
    bounds = np.zeros(len(batches) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in batches], out=bounds[1:])
    edges = bounds.tolist()
    spans = list(zip(edges[:-1], edges[1:]))
    at = {key: offsets[key][bounds].tolist() for key in sliced}
    rest_keys = list(_keys_needed(rest))  # the record keys the other specs read
    # Per VarLen spec, once for the chunk: its indices with each row counted from its
    # batch's first record, and every batch's dense shape; each batch gets slices.
    sizes = bounds[1:] - bounds[:-1]
    local: dict[str, np.ndarray] = {}
    shapes: dict[str, np.ndarray] = {}
    dims: dict[str, tuple[int, ...]] = {}
    for key in sliced:
        spec = plan.specs[key]
        if isinstance(spec, FixedLenFeature):
            dims[key] = tuple(spec.shape)
        elif isinstance(spec, VarLenFeature):
            indices = sliced[key]  # (a new array: made batch-local in place)
            if len(indices):
                indices[:, 0] -= np.repeat(bounds[:-1], sizes)[indices[:, 0]]
            local[key] = indices
            shape = np.zeros((len(batches), 2), dtype=np.int64)
            shape[:, 0] = sizes
            counts = cols[key].counts  # the width: the most values of a record in the batch
            if len(counts):
                shape[:, 1] = (
                    np.maximum.reduceat(counts, bounds[:-1])
                    if all(batches)
                    else [int(counts[a:b].max(initial=0)) for a, b in spans]
                )
            shapes[key] = shape
    for i, (start, stop) in enumerate(spans):
        built: dict[str, ParsedValue] = {}
        if rest:
            part = {key: _column_rows(cols[key], start, stop, offsets[key]) for key in rest_keys}
            where = _Where(None, batch=True, sparse_keys=plan.sparse_keys)
            built = assemble(rest, part, where, True)
        out: dict[str, ParsedValue] = {}
        for key, spec in plan.specs.items():
            if key not in sliced:
                out[key] = built[key]
                continue
            a, b = at[key][i], at[key][i + 1]
            values = cols[key].values
            if key in local:
                out[key] = (
                    SparseValue(local[key][a:b], values[a:b], shapes[key][i])
                    if b > a
                    else SparseValue(
                        np.zeros((0, 2), dtype=np.int64), _empty(spec.dtype), shapes[key][i]
                    )
                )
            else:
                out[key] = values[a:b].reshape((stop - start, *dims[key]))
        yield out


def _group_size(batch: Any) -> tuple[int, int]:
    """(records, bytes) of one batch, for chunking (0 bytes if they cannot be counted)."""
    if isinstance(batch, RecordSpans):
        return len(batch), batch.nbytes
    try:
        return len(batch), sum(map(len, batch))
    except TypeError:
        return 1, 0


def _is_batch(item: Any) -> bool:
    """A batch of raw records (a list, or the spans a reader cut from its blocks)."""
    return isinstance(item, (list, RecordSpans))


def _stream(
    items: Iterable[Any],
    group_parse: Callable[[list[Any]], Iterator[Any]],
    single_parse: Callable[[Any], Any],
    all_batches: bool,
) -> Iterator[Any]:
    """The loop of :func:`parse_stream` and :func:`parse_sequence_stream`: batches
    gathered into groups of :data:`CHUNK_RECORDS` records or :data:`CHUNK_BYTES`
    bytes, each group parsed by ``group_parse``; single records by ``single_parse``."""
    it = iter(items)
    group: list[Any] = []
    records = size = 0
    try:
        while True:
            try:
                item = next(it)
            except StopIteration:
                break
            except Exception:
                yield from group_parse(group)
                group = []
                raise
            if not (all_batches or _is_batch(item)):
                yield from group_parse(group)
                group, records, size = [], 0, 0
                yield single_parse(item)
                continue
            group.append(item)
            n, b = _group_size(item)
            records += n
            size += b
            if records >= CHUNK_RECORDS or size >= CHUNK_BYTES:
                yield from group_parse(group)
                group, records, size = [], 0, 0
        yield from group_parse(group)
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()


def parse_stream(items: Iterable[Any], features: Any, all_batches: bool = False) -> Iterator[Any]:
    """Parse a stream of batches (lists of records: ``parse_example``) and single records.

    Consecutive batches are extracted together, :data:`CHUNK_RECORDS` records or
    :data:`CHUNK_BYTES` bytes at a time, so small batches do not pay NumPy's
    per-call cost batch by batch; each comes out exactly as ``parse_example``
    would return it. A single record (``bytes``) is ``parse_single_example``'d,
    unless ``all_batches`` (then every item is a batch). An error from ``items``
    is raised after the batches read before it. ``items`` is closed at the end.
    """
    plan = compile_features(features)
    yield from _stream(
        items,
        lambda group: _parse_group(group, plan),
        lambda record: parse_single_example(record, plan),
        all_batches,
    )


def parse_batches(
    batches: Iterable[Sequence[Serialized]], features: Any
) -> Iterator[dict[str, ParsedValue]]:
    """``parse_example(batch, features)`` for each batch, extracted in large chunks.

    The results (and errors, with record indices within their batch) are exactly
    those of one ``parse_example`` call per batch; the speed is that of parsing
    :data:`CHUNK_RECORDS` records at a time. Memory: one chunk of records and
    columns. ``batches`` is closed when this generator is.
    """
    return parse_stream(batches, features, all_batches=True)


# --------------------------------------------------------------------------- SequenceExample


def _sequence_column(
    lists: list[Any], key: str, dtype: DType, where: _Where
) -> tuple[np.ndarray, np.ndarray, Column]:
    """For one feature-list key: (present per record, steps per record, per-step column)."""
    n = len(lists)
    present = np.zeros(n, dtype=bool)
    steps = np.zeros(n, dtype=np.int64)
    step_maps: list[dict[str, Any]] = []
    step_where = []
    for i, fl_map in enumerate(lists):
        fl = fl_map.get(key)
        if fl is None:
            continue
        present[i] = True
        steps[i] = len(fl.feature)
        for feature in fl.feature:
            step_maps.append({key: feature})
            step_where.append(i)
    col = _column_for_steps(step_maps, key, dtype, where, step_where)
    return present, steps, col


def _column_for_steps(
    step_maps: list[dict[str, Any]], key: str, dtype: DType, where: _Where, owner: list[int]
) -> Column:
    try:
        return _column(step_maps, key, dtype, _Where(None, batch=False))
    except ParseError as err:
        # Re-word as TensorFlow: its Index is the step within the record's list.
        s = err.index if err.index is not None else 0
        i = owner[s]
        t = s - owner.index(i)
        got = dtype_of_kind(step_maps[s][key].WhichOneof("kind"))
        raise where.error(
            i,
            key,
            f"Feature list: {key}, Index: {t}.  Data types don't match. Expected type: "
            f"{_tf_name(dtype)}, Actual type: {_tf_name(got)}",
        ) from None


def _sequence_assemble(
    key: str,
    spec: FeatureSpec,
    present: np.ndarray,
    steps: np.ndarray,
    col: Column,
    where: _Where,
    batch: bool,
) -> tuple[ParsedValue, Optional[np.ndarray]]:
    n = len(steps)
    step_rec = np.repeat(np.arange(n, dtype=np.int64), steps)
    if isinstance(spec, FixedLenSequenceFeature):
        if not spec.allow_missing and not present.all():
            i = int(np.flatnonzero(~present)[0])
            raise where.error(
                i,
                key,
                f"Feature list '{key}' is required but could not be found.  "
                "Use FixedLenSequenceFeature(..., allow_missing=True) to allow that.",
            )
        shape = tuple(spec.shape)
        size = math.prod(shape)
        bad = col.counts != size
        if bad.any():
            s = int(np.flatnonzero(bad)[0])
            i = int(step_rec[s])
            t = s - int(_row_starts(steps)[i])  # TensorFlow's Index: the step
            raise where.error(
                i,
                key,
                f"Key: {key}, Index: {t}.  Number of values != expected.  "
                f"values size: {int(col.counts[s])} but output shape: {_shape_str(shape)}",
            )
        max_steps = int(steps.max()) if n else 0
        fill = padding_value(spec)
        out = _filled((n, max_steps, size), fill, spec.dtype)
        if len(col.values):
            starts = _row_starts(steps)
            t = np.arange(len(step_rec), dtype=np.int64) - np.repeat(starts[:-1], steps)
            out[step_rec, t] = col.values.reshape(-1, size)
        return out.reshape((n, max_steps, *shape)), steps.copy()
    if isinstance(spec, VarLenFeature):
        step_starts = _row_starts(col.counts)
        total = int(step_starts[-1])
        # value j belongs to step s_j, which belongs to record r_j
        s_of_v = np.repeat(np.arange(len(col.counts), dtype=np.int64), col.counts)
        rec_starts = _row_starts(steps)
        t_of_s = np.arange(len(col.counts), dtype=np.int64) - np.repeat(rec_starts[:-1], steps)
        pos = np.arange(total, dtype=np.int64) - np.repeat(step_starts[:-1], col.counts)
        indices = (
            np.stack([step_rec[s_of_v], t_of_s[s_of_v], pos], axis=1)
            if total
            else np.zeros((0, 3), dtype=np.int64)
        )
        max_steps = int(steps.max()) if n else 0
        width = int(col.counts.max()) if len(col.counts) else 0
        return SparseValue(
            indices,
            col.values if total else _empty(spec.dtype),
            np.array([n, max_steps, width], dtype=np.int64),
        ), None
    if isinstance(spec, RaggedFeature):
        if spec.partitions:
            raise ValueError(
                f"RaggedFeature {key!r}: partitions are supported for context features only"
            )
        splits_dtype = np.dtype(spec.row_splits_dtype)
        inner = RaggedValue(
            col.values if len(col.values) else _empty(spec.dtype),
            _row_starts(col.counts).astype(splits_dtype),
        )
        return RaggedValue(inner, _row_starts(steps).astype(splits_dtype)), None
    raise ValueError(
        f"sequence feature {key!r}: expected FixedLenSequenceFeature, VarLenFeature or "
        f"RaggedFeature, got {type(spec).__name__}"
    )


def _value_key(key: str, spec: FeatureSpec) -> str:
    """The record key a sequence feature reads (a RaggedFeature may name another)."""
    return spec.value_key if isinstance(spec, RaggedFeature) and spec.value_key else key


class SequencePlan:
    """The specs of a SequenceExample parse, compiled once for every parse that uses them.

    Holds the validated ``context`` and ``sequence`` specs and what parsing derives
    from them: the context keys read (``context_needed``), the feature-list key
    each sequence feature reads (``value_keys``) and their dtypes (``list_needed``),
    and the key tables of the vectorized extractor (``tables``). ``fast`` is False
    when two specs read one list key as different dtypes (the generic path words
    that error). Build one with :func:`compile_sequence_features`.
    """

    def __init__(self, context_features: Any, sequence_features: Any) -> None:
        self.context: dict[str, FeatureSpec] = validate_features(
            context_features, "context_features"
        )
        self.sequence: dict[str, FeatureSpec] = validate_features(
            sequence_features, "sequence_features"
        )
        for key, spec in self.context.items():
            if isinstance(spec, FixedLenSequenceFeature):
                raise ValueError(
                    f"context feature {key!r}: FixedLenSequenceFeature belongs in sequence_features"
                )
        for key, spec in self.sequence.items():
            if isinstance(spec, (FixedLenFeature, SparseFeature)):
                raise ValueError(
                    f"sequence feature {key!r}: use FixedLenSequenceFeature, VarLenFeature or "
                    f"RaggedFeature, not {type(spec).__name__}"
                )
        self.context_needed = _keys_needed(self.context)
        self.context_sparse_keys = _sparse_keys(self.context)
        self.value_keys = {key: _value_key(key, spec) for key, spec in self.sequence.items()}
        self.list_needed = {self.value_keys[k]: spec.dtype for k, spec in self.sequence.items()}
        self._tables: Optional[tuple[_fastparse.KeyTable, _fastparse.KeyTable]] = None
        self.fast = len(self.list_needed) == len(
            {(self.value_keys[k], spec.dtype) for k, spec in self.sequence.items()}
        )

    @property
    def tables(self) -> tuple[_fastparse.KeyTable, _fastparse.KeyTable]:
        """The key tables (context, feature lists) of the vectorized extractor."""
        if self._tables is None:
            self._tables = (
                _fastparse.key_table(self.context_needed),
                _fastparse.key_table(self.list_needed),
            )
        return self._tables

    def __repr__(self) -> str:
        return f"SequencePlan(context={self.context!r}, sequence={self.sequence!r})"


def compile_sequence_features(
    context_features: Any = None, sequence_features: Any = None
) -> SequencePlan:
    """The specs of a SequenceExample parse compiled into a :class:`SequencePlan`."""
    return SequencePlan(context_features, sequence_features)


#: Per feature-list key: (has the key, steps per record, a column over every step).
_ListColumns = tuple[np.ndarray, np.ndarray, Column]


def _fast_sequence_columns(
    records: Sequence[bytes], plan: SequencePlan
) -> Optional[tuple[dict[str, Column], dict[str, _ListColumns]]]:
    """:func:`_sequence_columns` by the vectorized path; None where it does not
    read every record with certainty."""
    if not plan.fast:
        return None
    found = _fastparse.extract_sequences(
        records, plan.context_needed, plan.list_needed, plan.tables
    )
    if found is None:
        return None
    return dict(found.context), {k: found.lists[v] for k, v in plan.value_keys.items()}


def _sequence_columns(
    records: Sequence[bytes], plan: SequencePlan, where: _Where
) -> tuple[dict[str, Column], dict[str, _ListColumns]]:
    """The context columns and per sequence feature the list columns of ``records``:
    the vectorized path where it applies, else protobuf."""
    fast = _fast_sequence_columns(records, plan)
    if fast is not None:
        return fast
    examples = _decode(records, where, example_pb2.SequenceExample)
    cmaps = [ex.context.feature for ex in examples]
    cwhere = _Where(where.names, where.batch, plan.context_sparse_keys, section="context")
    ccols = extract_columns(cmaps, plan.context_needed, cwhere)
    # TensorFlow's SequenceExample parser counts an empty Feature() in the context
    # as present with no values (its Example parser counts it as missing).
    ccols = {
        k: c._replace(present=np.array([k in m for m in cmaps], dtype=bool))
        for k, c in ccols.items()
    }
    lists = [ex.feature_lists.feature_list for ex in examples]
    # Every kind is checked before any count, as TensorFlow does (its first pass
    # over the records checks kinds; shapes are checked as the outputs are built).
    columns = {
        key: _sequence_column(lists, plan.value_keys[key], spec.dtype, where)
        for key, spec in plan.sequence.items()
    }
    return ccols, columns


def _sequence_outputs(
    plan: SequencePlan,
    ccols: Mapping[str, Column],
    columns: Mapping[str, _ListColumns],
    where: _Where,
    batch: bool,
) -> tuple[dict[str, ParsedValue], dict[str, ParsedValue], dict[str, np.ndarray]]:
    """``parse_sequence_example``'s outputs, built from the columns of its records."""
    cwhere = _Where(where.names, where.batch, plan.context_sparse_keys, section="context")
    context = assemble(plan.context, ccols, cwhere, batch)
    seq: dict[str, ParsedValue] = {}
    lengths: dict[str, np.ndarray] = {}
    for key, spec in plan.sequence.items():
        present, steps, col = columns[key]
        value, length = _sequence_assemble(key, spec, present, steps, col, where, batch)
        seq[key] = value
        if length is not None:
            lengths[key] = length
    return context, seq, lengths


def _parse_sequences(
    records: Sequence[bytes], plan: SequencePlan, where: _Where, batch: bool
) -> tuple[dict[str, ParsedValue], dict[str, ParsedValue], dict[str, np.ndarray]]:
    ccols, columns = _sequence_columns(records, plan, where)
    return _sequence_outputs(plan, ccols, columns, where, batch)


def _parse_sequence_batch(
    serialized: Sequence[Serialized],
    plan: SequencePlan,
    example_names: Optional[Sequence[Any]] = None,
) -> tuple[dict[str, ParsedValue], dict[str, ParsedValue], dict[str, np.ndarray]]:
    """``parse_sequence_example`` with a compiled plan."""
    records = _as_records(serialized, "parse_sequence_example")
    where = _Where(_names(example_names, len(records)), batch=True)
    return _parse_sequences(records, plan, where, batch=True)


def _parse_sequence_group(
    group: list[Any], plan: SequencePlan
) -> Iterator[tuple[dict[str, ParsedValue], dict[str, ParsedValue], dict[str, np.ndarray]]]:
    """``parse_sequence_example`` of each batch of ``group``, with one extraction for
    all of them when the vectorized path reads every record (else batch by batch,
    so results and errors are exactly ``parse_sequence_example``'s)."""
    found = None
    batches: list[Sequence[bytes]] = []
    if len(group) > 1 and plan.fast:
        try:
            batches, flat = _joined_batches(group, "parse_sequence_example")
            found = _fast_sequence_columns(flat, plan)
        except (ParseError, TypeError, ValueError):
            found = None
    if found is None:
        for batch in group:
            yield _parse_sequence_batch(batch, plan)
        return
    ccols, columns = found
    # Where each record's values (context) and steps (lists) start, and where each
    # step's values start: every batch's columns are slices.
    cstarts = {k: _row_starts(c.counts) for k, c in ccols.items()}
    sstarts = {k: _row_starts(steps) for k, (_, steps, _) in columns.items()}
    vstarts = {k: _row_starts(col.counts) for k, (_, _, col) in columns.items()}
    a = 0
    for batch in batches:
        b = a + len(batch)
        part = {k: _column_rows(c, a, b, cstarts[k]) for k, c in ccols.items()}
        lists: dict[str, _ListColumns] = {}
        for k, (present, steps, col) in columns.items():
            s0, s1 = int(sstarts[k][a]), int(sstarts[k][b])
            lists[k] = (present[a:b], steps[a:b], _column_rows(col, s0, s1, vstarts[k]))
        yield _sequence_outputs(plan, part, lists, _Where(None, batch=True), True)
        a = b


def parse_sequence_stream(items: Iterable[Any], plan: SequencePlan) -> Iterator[Any]:
    """Parse a stream of batches (``parse_sequence_example``) and single records
    (``parse_single_sequence_example``) of SequenceExamples, consecutive batches
    extracted together (as :func:`parse_stream`). ``items`` is closed at the end."""
    yield from _stream(
        items,
        lambda group: _parse_sequence_group(group, plan),
        lambda record: _parse_single_sequence(record, plan),
        False,
    )


def parse_sequence_example(
    serialized: Sequence[Serialized],
    context_features: Optional[Mapping[str, FeatureSpec]] = None,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
    example_names: Optional[Sequence[Any]] = None,
    name: Optional[str] = None,
) -> tuple[dict[str, ParsedValue], dict[str, ParsedValue], dict[str, np.ndarray]]:
    """Parse a batch of ``SequenceExample`` records, as ``tf.io.parse_sequence_example``.

    Returns ``(context, feature_lists, lengths)``: ``lengths`` holds, for every
    ``FixedLenSequenceFeature``, the int64 number of steps of each record.
    """
    plan = compile_sequence_features(context_features, sequence_features)
    return _parse_sequence_batch(serialized, plan, example_names)


def parse_single_sequence_example(
    serialized: Serialized,
    context_features: Optional[Mapping[str, FeatureSpec]] = None,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
    example_name: Optional[Any] = None,
    name: Optional[str] = None,
) -> tuple[dict[str, ParsedValue], dict[str, ParsedValue]]:
    """Parse one ``SequenceExample``, as ``tf.io.parse_single_sequence_example``.

    Returns ``(context, feature_lists)``; sequence features have a leading
    steps dimension.
    """
    plan = compile_sequence_features(context_features, sequence_features)
    return _parse_single_sequence(serialized, plan)


def _parse_single_sequence(
    serialized: Serialized, plan: SequencePlan
) -> tuple[dict[str, ParsedValue], dict[str, ParsedValue]]:
    records = _as_records([serialized], "parse_single_sequence_example")
    where = _Where(None, batch=False)
    context, seq, _ = _parse_sequences(records, plan, where, False)
    # Ragged context features are built unbatched already (as in parse_single_example).
    context = {
        k: v if isinstance(plan.context[k], RaggedFeature) else _unbatch(v)
        for k, v in context.items()
    }
    out: dict[str, ParsedValue] = {}
    for k, v in seq.items():
        if isinstance(v, RaggedValue):
            inner = v.values
            out[k] = inner if isinstance(inner, RaggedValue) else v
        else:
            out[k] = _unbatch(v)
    return context, out
