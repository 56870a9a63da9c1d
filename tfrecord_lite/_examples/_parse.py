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
extract step looks at records one by one: a parse engine (:mod:`._engines`)
extracts every record it can read with certainty, and the rest go through the
protobuf reference, with the same results.

A feature spec is compiled once into a :class:`ParsePlan` (validated
specs, the record keys read, each engine's key tables); every reader takes one.
This module holds the extract step and the Example entry points; the assemble
step is :mod:`._assemble`, chunked streams of batches :mod:`._batches`, and
SequenceExamples :mod:`._sequence`.

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

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional, Union

import numpy as np

from .. import example_pb2
from .._errors import ParseError
from .._record import RecordSpans
from ._assemble import Column, ParsedValue, _unbatch, assemble
from ._engines import (
    AnyColumn,
    EngineState,
    SparseColumn,
    decode_records,
    dense,
    enabled,
    extract_examples,
    merge_columns,
    merge_sparse,
    reference_columns,
)
from ._hints import missing_hint, record_keys, with_hint
from ._schema import (
    DType,
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    SparseFeature,
    UniformRowLength,
    int64,
    validate_features,
)
from ._single import cached_plan, parse_one
from ._where import _Where

__all__ = ["ParsePlan", "compile_features", "parse_example", "parse_single_example"]

Serialized = Union[bytes, bytearray, memoryview]


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


def _sparse_keys(specs: Mapping[str, FeatureSpec]) -> frozenset[str]:
    """Keys read only by VarLen/Sparse/Ragged specs (TensorFlow words their errors apart)."""
    dense = {
        k for k, s in specs.items() if isinstance(s, (FixedLenFeature, FixedLenSequenceFeature))
    }
    return frozenset(_keys_needed(specs)) - dense


class ParsePlan(Mapping[str, FeatureSpec]):
    """A feature spec compiled once for every parse that uses it.

    A read-only mapping of the validated specs (so it can be passed wherever a
    feature dict is expected), plus what parsing derives from them: every record
    key read and its dtype (``needed``), the keys read only by VarLen / Sparse /
    Ragged specs (``sparse_keys``, for TensorFlow's error wording) and each parse
    engine's key tables (``engines``, built on first use). Build one with
    :func:`compile_features`; ``parse_example``, the dataset ops, ``read_examples``
    and the PyTorch datasets all take one and skip validating the spec again.

    Readers that hold one plan for many batches call :meth:`parse` (a batch, as
    :func:`parse_example`) and :meth:`parse_single` (one record). Made with
    ``sequence_rows=True``, a batch's ``FixedLenSequenceFeature`` s come out
    unpadded, as a :class:`~tfrecord_lite.RaggedValue` of each record's rows
    (values of shape ``(rows, *shape)``, row splits per record): what Arrow's list
    columns and TFDS's sequences hold, with TensorFlow's checks and errors.
    """

    def __init__(
        self, features: Any, what: str = "features", *, sequence_rows: bool = False
    ) -> None:
        self.specs: dict[str, FeatureSpec] = validate_features(features, what)
        #: ``FixedLenSequenceFeature`` s of a batch come out as each record's rows, a
        #: :class:`RaggedValue` over values of shape ``(rows, *shape)``, not padded.
        self.sequence_rows = sequence_rows
        self.needed: dict[str, DType] = _keys_needed(self.specs)
        self.sparse_keys = _sparse_keys(self.specs)
        #: Raised when parsing Examples (TensorFlow raises it then, not when specs are made).
        self.unsupported: Optional[str] = None
        for spec in self.specs.values():
            if isinstance(spec, FixedLenSequenceFeature) and not spec.allow_missing:
                self.unsupported = (
                    "Unsupported: FixedLenSequenceFeature requires allow_missing to be True."
                )
        #: Each parse engine's state of this plan (its key tables), by engine name.
        self.engines = EngineState(self.needed)

    def parse(
        self, serialized: Sequence[Serialized], example_names: Optional[Sequence[Any]] = None
    ) -> dict[str, ParsedValue]:
        """A batch of serialized Examples parsed with this plan (:func:`parse_example`)."""
        return parse_example(serialized, self, example_names)

    def parse_single(self, serialized: Serialized) -> dict[str, ParsedValue]:
        """One serialized Example parsed with this plan (:func:`parse_single_example`)."""
        return parse_single_example(serialized, self)

    def __getitem__(self, key: str) -> FeatureSpec:
        return self.specs[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    def __repr__(self) -> str:
        rows = ", sequence_rows=True" if self.sequence_rows else ""
        return f"ParsePlan({self.specs!r}{rows})"


def compile_features(
    features: Any, what: str = "features", *, sequence_rows: Optional[bool] = None
) -> ParsePlan:
    """``features`` compiled into a :class:`ParsePlan`; a plan is returned as is
    (a new one where ``sequence_rows`` is given and differs from the plan's)."""
    if isinstance(features, ParsePlan):
        if sequence_rows is None or features.sequence_rows == sequence_rows:
            return features
        features = features.specs
    return ParsePlan(features, what, sequence_rows=bool(sequence_rows))


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


def _extract(records: Sequence[bytes], plan: ParsePlan, where: _Where) -> dict[str, Column]:
    """Columns for every needed key, one entry per record (:func:`_columns_of`)."""
    return {key: dense(col) for key, col in _columns_of(records, plan, where).items()}


def _columns_of(
    records: Sequence[bytes], plan: ParsePlan, where: _Where, sparse: bool = False
) -> Mapping[str, AnyColumn]:
    """Columns for every needed key: the engine chosen for the batch where it reads
    the records (:func:`~._engines.extract_examples`), else the protobuf reference.
    ``sparse``: a wide batch (:func:`~._engines.wide`) may give
    :class:`~._engines.SparseColumn` s."""
    n = len(records)
    needed = plan.needed
    fast = extract_examples(records, needed, plan.engines, sparse)
    if fast is None:
        maps = [ex.features.feature for ex in decode_records(records, where, example_pb2.Example)]
        return reference_columns(maps, needed, where)
    handled, fast_cols = fast
    if handled.all():
        return fast_cols
    rest = np.flatnonzero(~handled)
    rest_list = rest.tolist()
    examples = decode_records(
        [records[i] for i in rest_list], where, example_pb2.Example, rest_list
    )
    maps = [ex.features.feature for ex in examples]
    slow_cols = reference_columns(maps, needed, where, rest_list)
    done = np.flatnonzero(handled)
    merged: dict[str, AnyColumn] = {}
    for key in needed:
        fast_col, slow_col = fast_cols[key], slow_cols[key]
        if isinstance(fast_col, SparseColumn):
            merged[key] = merge_sparse(n, [(done, fast_col), (rest, slow_col)])
        else:
            merged[key] = merge_columns(n, [(done, fast_col), (rest, slow_col)], needed[key])
    return merged


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
    plan = cached_plan(features, compile_features)  # (compiled once per spec)
    records = _as_records(serialized, "parse_example")
    where = _Where(_names(example_names, len(records)), batch=True)
    return _parse_examples(records, plan, where, batch=True)


def _parse_examples(
    records: Sequence[bytes], plan: ParsePlan, where: _Where, batch: bool
) -> dict[str, ParsedValue]:
    if plan.unsupported:
        raise ValueError(plan.unsupported)
    where.sparse_keys = plan.sparse_keys
    columns = _columns_of(records, plan, where, sparse=True)
    try:
        return assemble(plan.specs, columns, where, batch, plan.sequence_rows)
    except ParseError as err:
        raise _explained(err, records, columns, plan) from None


def _explained(
    err: ParseError, records: Sequence[bytes], columns: Mapping[str, AnyColumn], plan: ParsePlan
) -> ParseError:
    """``err`` with a hint where a required key is missing: the close key the record
    has, or a default where other records have it (:mod:`._hints`)."""
    key, i = err.key, err.index
    if key is None or i is None or key not in columns or "is required but" not in err.message:
        return err
    column = columns[key]
    elsewhere = bool(len(column.rows) if isinstance(column, SparseColumn) else column.present.any())
    keys = [] if elsewhere else record_keys(bytes(records[i]))
    return with_hint(err, missing_hint(key, keys, plan.needed, elsewhere))


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
    plan = cached_plan(features, compile_features)
    specs = plan.specs
    if type(serialized) is bytes and not plan.unsupported and enabled():
        fast = parse_one(serialized, specs)
        if fast is not None:
            return fast
    records = _as_records([serialized], "parse_single_example")
    where = _Where(None, batch=False)
    parsed = _parse_examples(records, plan, where, batch=False)
    # Ragged features are built unbatched already (as TensorFlow's single-example parse).
    return {k: v if isinstance(specs[k], RaggedFeature) else _unbatch(v) for k, v in parsed.items()}
