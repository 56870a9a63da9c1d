"""A batch of Examples parsed into columns: per feature, which records have it, how many
values each holds, and all the values in one flat array.

:func:`parse_example_columns` is :func:`~tfrecord_lite.parse_example` without the
TensorFlow-shaped outputs: the same engine call per batch (compiled, NumPy or protobuf,
as ``parse_example`` chooses), the same defaults, shape checks and errors, but no
:class:`~tfrecord_lite.SparseValue` indices, no padded arrays and no per-record
slices. Columnar consumers (Arrow tables and everything built on them) turn the flat
values and counts into their own buffers and offsets in one operation.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Union

import numpy as np

from .._errors import ParseError
from ._assemble import ParsedValue, _empty, _fixed_len, _sequence_rows, assemble
from ._engines import AnyColumn, FastColumn, SparseColumn, dense
from ._parse import ParsePlan, Serialized, _as_records, _columns_of, _explained, compile_features
from ._schema import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    VarLenFeature,
)
from ._single import cached_plan
from ._where import _Where

__all__ = ["ColumnarValue", "ExampleColumn", "ExampleColumns", "parse_example_columns"]


class ExampleColumn(NamedTuple):
    """One feature of a batch of records, as columns.

    ``present[i]``: record ``i`` holds the feature (for a ``FixedLenFeature``, the
    records without it hold its default); ``counts[i]``: its number of values
    (``math.prod(shape)`` for every record of a ``FixedLenFeature``, defaults
    included; values, not rows, for a ``FixedLenSequenceFeature``); ``values``: the
    values of every record, one after the other (int64, float32, or an object array
    of ``bytes``).
    """

    present: np.ndarray
    counts: np.ndarray
    values: np.ndarray


#: What :func:`parse_example_columns` gives a feature: its columns, or (a ``SparseFeature``,
#: a ``RaggedFeature`` with partitions) the value :func:`parse_example` returns.
ColumnarValue = Union[ExampleColumn, ParsedValue]


class ExampleColumns(Mapping[str, ColumnarValue]):
    """The features of one batch, in spec order, each an :class:`ExampleColumn` (or
    ``parse_example``'s value where it has no flat columns).

    In a wide batch (many keys, each in few records) a ``VarLenFeature`` or
    ``RaggedFeature`` column is held by the records that have the key, and made one
    entry per record only when it is looked up (not kept): a reader that converts the
    features one by one holds one of them per record at a time, not all of them.
    """

    def __init__(self) -> None:
        self._ready: dict[str, ColumnarValue] = {}
        self._held: dict[str, tuple[Any, SparseColumn]] = {}
        self._order: list[str] = []

    def _add(self, key: str, value: ColumnarValue) -> None:
        self._order.append(key)
        self._ready[key] = value

    def _hold(self, key: str, spec: Any, col: AnyColumn) -> None:
        if isinstance(col, SparseColumn):
            self._order.append(key)
            self._held[key] = (spec, col)
        else:
            self._add(key, _flat(spec, col))

    def __getitem__(self, key: str) -> ColumnarValue:
        held = self._held.get(key)
        if held is not None:
            return _flat(held[0], held[1].dense())
        return self._ready[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)


def parse_example_columns(
    serialized: Sequence[Serialized], features: Mapping[str, FeatureSpec]
) -> ExampleColumns:
    """Parse a batch of serialized ``Example`` records into one :class:`ExampleColumn` per
    feature.

    Exactly :func:`~tfrecord_lite.parse_example`'s semantics: a ``FixedLenFeature``
    missing from a record gets its default (and without one is the same
    :class:`~tfrecord_lite.ParseError`), a wrong number of values or a wrong kind is the
    same error naming the same record, and a ``FixedLenSequenceFeature`` must hold
    whole rows. ``VarLenFeature`` s and ``RaggedFeature`` s without partitions are
    the values as the records hold them. A ``SparseFeature`` or a partitioned
    ``RaggedFeature`` has no flat columns: its entry is the value ``parse_example``
    returns for it. ``features`` may be a compiled :class:`ParsePlan`.
    """
    plan: ParsePlan = cached_plan(features, compile_features)
    records = _as_records(serialized, "parse_example")
    if plan.unsupported:
        raise ValueError(plan.unsupported)
    where = _Where(None, batch=True, sparse_keys=plan.sparse_keys)
    columns = _columns_of(records, plan, where, sparse=True)
    try:
        return _columnar(plan, columns, where)
    except ParseError as err:
        raise _explained(err, records, columns, plan) from None


def _columnar(plan: ParsePlan, columns: Mapping[str, AnyColumn], where: _Where) -> ExampleColumns:
    """Each spec's columns, checked in spec order as :func:`assemble` checks them (so
    the first error is the one ``parse_example`` raises)."""
    out = ExampleColumns()
    for key, spec in plan.specs.items():
        if isinstance(spec, FixedLenFeature):
            col = dense(columns[key])
            filled = _fixed_len(key, spec, col, where)
            size = math.prod(spec.shape)
            counts = np.full(len(col.present), size, dtype=np.int64)
            out._add(key, ExampleColumn(col.present, counts, filled.reshape(-1)))
        elif isinstance(spec, VarLenFeature):
            out._hold(key, spec, columns[key])
        elif isinstance(spec, FixedLenSequenceFeature):
            col = dense(columns[key])
            _sequence_rows(key, spec, col, where)  # (whole rows only, as TensorFlow)
            out._add(key, _flat(spec, col))
        elif isinstance(spec, RaggedFeature) and not spec.partitions:
            out._hold(key, spec, columns[spec.value_key or key])
        else:
            out._add(key, assemble({key: spec}, columns, where, True, plan.sequence_rows)[key])
    return out


def _flat(spec: Any, col: FastColumn) -> ExampleColumn:
    """A column as the records hold it (no values: an empty array of the spec's dtype)."""
    values = col.values if len(col.values) else _empty(spec.dtype)
    return ExampleColumn(col.present, col.counts, values)
