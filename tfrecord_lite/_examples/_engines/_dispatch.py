"""The dispatcher: a batch of records to the engine :func:`~._choose.choose` picks, with
what each engine keeps of a plan (:class:`EngineState`).

Parsing calls :func:`extract_examples` (Examples) or :func:`extract_sequence_columns`
(SequenceExamples) once per batch; the engine taken extracts it a window of at most
:data:`~._buffers.WINDOW_BYTES` of records at a time (:func:`~._buffers.by_windows`)
and leaves what it cannot read with certainty to the protobuf reference. Should the
compiled engine not run (its kernels could not be loaded), the NumPy engine does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from ..._record import record_lengths
from .._schema import DType
from ._choose import SEQUENCE_KERNELS, choose
from ._jit import jit_extract, jit_extract_sequences, jit_table
from ._numpy import extract, extract_sequences
from ._numpy_keys import key_table
from ._output import MIN_BATCH, AnyColumn, SequenceColumns, enabled

__all__ = ["ENGINES", "EngineState", "extract_examples", "extract_sequence_columns"]

#: Each engine's state of a plan: one table per group of keys, built from it.
ENGINES: dict[str, Any] = {"numpy": key_table, "jit": jit_table}


class EngineState:
    """What each engine keeps of a plan, by engine name, built on first use: the key
    tables of its groups of keys (an Example plan: one group, the keys read; a
    SequenceExample plan: the context's and the feature lists'). ``state["numpy"]``
    is a tuple of :class:`~._numpy_keys.KeyTable` s, ``state["jit"]`` of
    :class:`~._jit.JitTable` s. Tables are shared by plans of equal keys."""

    def __init__(self, *groups: Mapping[str, DType]) -> None:
        self.groups = groups
        self._built: dict[str, tuple[Any, ...]] = {}

    def __getitem__(self, engine: str) -> tuple[Any, ...]:
        built = self._built.get(engine)
        if built is None:
            make = ENGINES[engine]
            built = self._built[engine] = tuple(make(group) for group in self.groups)
        return built

    def __repr__(self) -> str:
        return f"EngineState(built={sorted(self._built)})"


def extract_examples(
    records: Sequence[bytes],
    needed: Mapping[str, DType],
    state: EngineState,
    sparse: bool = False,
) -> Optional[tuple[np.ndarray, Mapping[str, AnyColumn]]]:
    """The columns of ``needed`` keys of an Example batch, by the engine chosen for it:
    ``(handled, columns)`` (each column over the handled records, in order), or None
    when no engine handled a record (or the fast path is off). ``state``: the plan's
    (one group: ``needed``). ``sparse``: a wide batch may give
    :class:`~._output.SparseColumn` s."""
    n = len(records)
    if not (needed and n and enabled()):
        return None
    lengths = record_lengths(records) if n >= MIN_BATCH else None
    found = None
    if choose(n, records=records, lengths=lengths) == "jit":
        found = jit_extract(records, state["jit"][0], lengths, sparse)
    if found is None and n >= MIN_BATCH:
        found = extract(records, needed, table=state["numpy"][0], lengths=lengths, sparse=sparse)
    return found


def extract_sequence_columns(
    records: Sequence[bytes],
    context: Mapping[str, DType],
    lists: Mapping[str, DType],
    state: EngineState,
) -> Optional[SequenceColumns]:
    """The context and feature-list columns of a SequenceExample batch, by the engine
    chosen for it, or None when any record needs the reference. ``state``: the plan's
    (two groups: ``context``, ``lists``)."""
    n = len(records)
    found = None
    if n and enabled() and choose(n, SEQUENCE_KERNELS) == "jit":
        found = jit_extract_sequences(records, *state["jit"])
    if found is None:
        found = extract_sequences(records, context, lists, state["numpy"])
    return found
