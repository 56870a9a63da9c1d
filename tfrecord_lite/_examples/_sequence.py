"""Parsing ``SequenceExample`` records: :func:`parse_sequence_example` and
:func:`parse_single_sequence_example`, as TensorFlow's.

A :class:`SequencePlan` (:func:`compile_sequence_features`) holds the validated
context and sequence specs; the context is extracted and assembled as an
Example's, the feature lists step by step (one column over every step of every
record), by the vectorized walk where it reads every record, else by protobuf.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from .. import example_pb2
from .._errors import ParseError
from ._assemble import (
    Column,
    ParsedValue,
    _empty,
    _filled,
    _row_starts,
    _unbatch,
    assemble,
    padding_value,
)
from ._engines import (
    EngineState,
    decode_records,
    extract_sequence_columns,
    reference_column,
    reference_columns,
)
from ._parse import (
    Serialized,
    _as_records,
    _keys_needed,
    _names,
    _sparse_keys,
)
from ._schema import (
    DType,
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    SparseFeature,
    VarLenFeature,
    dtype_of_kind,
    validate_features,
)
from ._values import RaggedValue, SparseValue
from ._where import _shape_str, _tf_name, _Where

__all__ = [
    "SequencePlan",
    "compile_sequence_features",
    "parse_sequence_example",
    "parse_single_sequence_example",
]


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
        return reference_column(step_maps, key, dtype, _Where(None, batch=False))
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
    and each parse engine's key tables (``engines``). ``fast`` is False
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
        #: Each parse engine's state of this plan (context and feature-list key
        #: tables), by engine name.
        self.engines = EngineState(self.context_needed, self.list_needed)
        self.fast = len(self.list_needed) == len(
            {(self.value_keys[k], spec.dtype) for k, spec in self.sequence.items()}
        )

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
    found = extract_sequence_columns(records, plan.context_needed, plan.list_needed, plan.engines)
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
    examples = decode_records(records, where, example_pb2.SequenceExample)
    cmaps = [ex.context.feature for ex in examples]
    cwhere = _Where(where.names, where.batch, plan.context_sparse_keys, section="context")
    ccols = reference_columns(cmaps, plan.context_needed, cwhere)
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
