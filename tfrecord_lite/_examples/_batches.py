"""Parsing streams of batches in large chunks: :func:`parse_stream`,
:func:`parse_batches` and :func:`parse_sequence_stream`.

Pipelines that hand out small batches parse them here: consecutive batches are
extracted together, :data:`CHUNK_RECORDS` records or :data:`CHUNK_BYTES` bytes at
a time, and each batch's result is sliced out, so ``batch(32)`` costs about what
``batch(4096)`` does. Every batch comes out exactly (results and errors) as one
``parse_example`` / ``parse_sequence_example`` call would return it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Callable

import numpy as np

from .._errors import ParseError
from .._record import RecordSpans
from ._assemble import Column, ParsedValue, _empty, _row_starts, _var_len, assemble
from ._parse import (
    ParsePlan,
    Serialized,
    _as_records,
    _extract,
    _keys_needed,
    compile_features,
    parse_example,
    parse_single_example,
)
from ._schema import (
    FixedLenFeature,
    VarLenFeature,
)
from ._sequence import (
    SequencePlan,
    _fast_sequence_columns,
    _ListColumns,
    _parse_sequence_batch,
    _parse_single_sequence,
    _sequence_outputs,
)
from ._values import SparseValue
from ._where import _Where

__all__ = ["parse_batches", "parse_sequence_stream", "parse_stream"]


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
            built = assemble(rest, part, where, True, plan.sequence_rows)
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
