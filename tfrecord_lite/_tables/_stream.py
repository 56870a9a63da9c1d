"""Streaming reads for query engines: a read plan narrowed to the columns asked for, and
its records converted batch by batch (at most one batch in memory), stopping once a
row limit is reached. ``arrow.record_batch_reader`` and ``polars.scan_tfrecord`` use it.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

from .._errors import ParseError, TFRecordError
from .._examples import DEFAULT_SAMPLE, FeatureSpec
from .._files import TFRecordFile, TFRecordReader, expand_paths, is_file_object
from ._plan import DEFAULT_BATCH_SIZE, ReadPlan

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


def projected_plan(
    plan: ReadPlan, columns: Optional[Iterable[str]], who: str = "columns"
) -> ReadPlan:
    """``plan`` narrowed to ``columns`` (in their order), so only those features are parsed.

    ``None`` keeps every column. A name the plan does not have is a ``KeyError``
    naming the columns there are.
    """
    if columns is None:
        return plan
    if isinstance(columns, str):
        raise TypeError(f"{who} must be a list of feature names, not one string {columns!r}")
    wanted = list(dict.fromkeys(columns))
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
) -> Generator[pa.Table, None, None]:
    """The records of ``paths`` as tables of ``plan``'s schema, ``batch_size`` rows each.

    With ``limit``, at most that many rows in all: batches shrink to what is still
    wanted, and the files are closed as soon as it is reached (nothing more is read).
    A record that does not parse is a :class:`ParseError` naming its file, its index
    in that file and, for an uncompressed local file, its byte offset.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if limit is not None and limit < 0:
        raise ValueError(f"the row limit must be at least 0, got {limit}")
    left = limit
    batch: list[bytes] = []
    parts: list[_Part] = []
    for source in expand_paths(paths):
        with TFRecordReader(source, compression, verify=verify, on_error=on_error) as reader:
            index = 0
            while left is None or left > 0:
                size = batch_size if left is None else min(batch_size, left)
                want = size - len(batch)
                got = list(islice(reader, want))  # the records, without a Python loop
                if got:
                    # after a skipped stretch the count no longer gives the record's index
                    first = None if reader.skipped else index
                    parts.append(_Part(len(batch), source, first))
                    batch.extend(got)
                    index += len(got)
                if len(batch) == size:
                    yield _convert(plan, batch, parts)
                    batch, parts = [], []
                    if left is not None:
                        left -= size
                if len(got) < want:
                    break  # this file is done
            if left is not None and left <= 0:
                return
    if batch:
        yield _convert(plan, batch, parts)


class _Part(NamedTuple):
    """Records of one file in a batch: where they start in the batch, the file, the
    index of the first in the file (``None`` when records were skipped before it)."""

    start: int
    source: Any
    first: Optional[int]


def _convert(plan: ReadPlan, batch: list[bytes], parts: list[_Part]) -> pa.Table:
    try:
        return plan.convert(batch)
    except ParseError as err:
        raise _located(err, parts) from None


def _located(err: ParseError, parts: list[_Part]) -> ParseError:
    """``err`` (its index counted in the batch) with the file, index and offset of its record."""
    if err.index is None or err.path is not None:
        return err
    part = next((p for p in reversed(parts) if p.start <= err.index), None)
    if part is None or is_file_object(part.source):
        return err
    path = str(part.source)
    if part.first is None:
        return ParseError(err.message, key=err.key, path=path)
    index = part.first + err.index - part.start
    return ParseError(err.message, key=err.key, path=path, index=index, offset=_offset(path, index))


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
