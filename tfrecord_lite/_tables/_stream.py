"""Streaming reads, the one way every table is read: a read plan narrowed to the columns
asked for, and its records converted batch by batch (at most one batch in memory, the
records parsed where they lie in the blocks read), stopping once a row limit is reached.
``arrow.read_table`` / ``iter_tables`` / ``record_batch_reader``, ``polars.scan_tfrecord``
and the engines' read tasks (:class:`~._pieces.PieceReader`) use it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

from .._errors import ParseError, TFRecordError
from .._examples import DEFAULT_SAMPLE, FeatureSpec
from .._files import (
    READ_BLOCK_SIZE,
    TFRecordFile,
    expand_paths,
    is_file_object,
    map_ahead,
    read_batches,
    reader_compression,
)
from .._record import SkipReport, check_on_error, join_records, warn_skip
from ._plan import DEFAULT_BATCH_SIZE, ReadPlan

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


def projected_plan(
    plan: ReadPlan, columns: Optional[Iterable[str]], who: str = "columns"
) -> ReadPlan:
    """``plan`` narrowed to ``columns`` (in their order), so only those features are parsed.

    ``None`` keeps every column; an empty list is a ``ValueError``. A name the plan
    does not have is a ``KeyError`` naming the columns there are.
    """
    if columns is None:
        return plan
    if isinstance(columns, str):
        raise TypeError(f"{who} must be a list of feature names, not one string {columns!r}")
    wanted = list(dict.fromkeys(columns))
    if not wanted:
        raise ValueError(
            f"{who} names no feature: a table of no columns cannot hold its rows; "
            f"pass {who}=None for every feature, or name at least one"
        )
    known = [*plan.features, *plan.sequence_features]
    unknown = [c for c in wanted if c not in known]
    if unknown:
        raise KeyError(
            f"{who}: no feature {', '.join(map(repr, unknown))} in the records' schema "
            f"(its features: {', '.join(map(repr, known)) or 'none'})"
        )
    features = {k: plan.features[k] for k in wanted if k in plan.features}
    sequence = {k: plan.sequence_features[k] for k in wanted if k in plan.sequence_features}
    return ReadPlan(features, sequence if plan.sequence else None)


def make_plan(
    paths: Any,
    features: Optional[Mapping[str, FeatureSpec]],
    sequence_features: Optional[Mapping[str, FeatureSpec]],
    columns: Optional[Iterable[str]],
    *,
    compression: Any = "auto",
    sample: Optional[int] = DEFAULT_SAMPLE,
) -> ReadPlan:
    """The read plan of ``paths``: specs given or inferred, narrowed to ``columns``."""
    full = ReadPlan(features, sequence_features, paths, compression=compression, sample=sample)
    return projected_plan(full, columns)


def stream_tables(
    plan: ReadPlan,
    paths: Any,
    *,
    compression: Any = "auto",
    verify: bool = True,
    on_error: str = "raise",
    batch_size: int = DEFAULT_BATCH_SIZE,
    limit: Optional[int] = None,
    workers: int = 1,
) -> Generator[pa.Table, None, None]:
    """The records of ``paths`` as tables of ``plan``'s schema, ``batch_size`` rows each.

    With ``limit``, at most that many rows in all: batches shrink to what is still
    wanted, and the files are closed as soon as it is reached (nothing more is read).
    A record that does not parse is a :class:`ParseError` naming its file, its index
    in that file and, for an uncompressed local file, its byte offset.

    ``workers`` over 1: batches are converted on that many threads while this one
    reads on (:func:`~tfrecord_lite._files.map_ahead`): the same tables, in order,
    and the same first error, with up to ``2 * workers`` batches in memory at once.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if limit is not None and limit < 0:
        raise ValueError(f"the row limit must be at least 0, got {limit}")
    check_on_error(on_error)
    batches = _batches(
        expand_paths(paths), reader_compression(compression), verify, on_error, batch_size, limit
    )
    yield from map_ahead(
        lambda batch: _convert(plan, *batch), batches, workers, name="tfrecord_lite-table"
    )


def _batches(
    sources: Iterable[Any],
    kind: Any,
    verify: bool,
    on_error: str,
    batch_size: int,
    limit: Optional[int],
) -> Generator[tuple[Sequence[bytes], list[_Part]], None, None]:
    """The records of ``sources`` (the files, expanded) in batches
    (:func:`stream_tables`), each with where its records come from."""
    left = limit
    pieces: list[Sequence[bytes]] = []
    parts: list[_Part] = []
    have = 0
    for source in sources:
        skipped: list[SkipReport] = []
        # The records as they lie in the blocks read (RecordSpans, parsed where they are).
        lists = read_batches(
            source, kind, verify, READ_BLOCK_SIZE, on_error, _noting(skipped), None, True, True
        )
        index = 0
        try:
            for records in lists:
                pos = 0
                while pos < len(records):
                    size = batch_size if left is None else min(batch_size, left)
                    take = min(size - have, len(records) - pos)
                    # after a skipped stretch the count no longer gives the record's index
                    parts.append(_Part(have, source, None if skipped else index))
                    pieces.append(records[pos : pos + take])
                    have, pos, index = have + take, pos + take, index + take
                    if have == size:
                        yield join_records(pieces), parts
                        pieces, parts, have = [], [], 0
                        if left is not None:
                            left -= size
                            if left <= 0:
                                return
        finally:
            lists.close()  # type: ignore[attr-defined]
    if have:
        yield join_records(pieces), parts


def _noting(skipped: list[SkipReport]) -> Callable[[SkipReport], None]:
    """The skip callback: each stretch skipped is noted, and warned of as the reader warns."""

    def note(report: SkipReport) -> None:
        skipped.append(report)
        warn_skip(report)

    return note


class _Part(NamedTuple):
    """Records of one file in a batch: where they start in the batch, the file, the
    index of the first in the file (``None`` when records were skipped before it)."""

    start: int
    source: Any
    first: Optional[int]


def _convert(plan: ReadPlan, batch: Sequence[bytes], parts: list[_Part]) -> pa.Table:
    try:
        return plan.convert(batch)
    except ParseError as err:
        raise _located(err, parts) from None


def _located(err: ParseError, parts: list[_Part]) -> ParseError:
    """``err`` (its index counted in the batch) with the file, index and offset of its
    record (a file object: its name, if it has one, and the index)."""
    if err.index is None or err.path is not None:
        return err
    part = next((p for p in reversed(parts) if p.start <= err.index), None)
    if part is None:
        return err
    if is_file_object(part.source):
        name = getattr(part.source, "name", None)
        path: Optional[str] = name if isinstance(name, str) else None
    else:
        path = str(part.source)
    if part.first is None:
        return ParseError(err.message, key=err.key, path=path)
    index = part.first + err.index - part.start
    offset = None if path is None or is_file_object(part.source) else _offset(path, index)
    return ParseError(err.message, key=err.key, path=path, index=index, offset=offset)


def _offset(path: str, index: int) -> Optional[int]:
    """The byte offset of record ``index`` of an uncompressed local file (``None`` otherwise)."""
    try:
        f = TFRecordFile(path, compression="")
        try:
            return int(f.offsets[index])
        finally:
            f.close()
    except (TFRecordError, OSError, ValueError, IndexError):
        return None  # compressed, remote, or not readable again: the index and path say where
