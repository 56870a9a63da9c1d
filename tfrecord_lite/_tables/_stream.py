"""Streaming reads for query engines: a read plan narrowed to the columns asked for, and
its records converted batch by batch (at most one batch in memory), stopping once a
row limit is reached. ``arrow.record_batch_reader`` and ``polars.scan_tfrecord`` use it.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any, Optional

from .._examples import DEFAULT_SAMPLE, FeatureSpec
from .._files import TFRecordReader
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
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if limit is not None and limit < 0:
        raise ValueError(f"the row limit must be at least 0, got {limit}")
    left = limit
    with TFRecordReader(paths, compression, verify=verify, on_error=on_error) as reader:
        while left is None or left > 0:
            size = batch_size if left is None else min(batch_size, left)
            batch = list(islice(reader, size))  # the records, without a Python loop
            if not batch:
                return
            yield plan.convert(batch)
            if len(batch) < size:
                return
            if left is not None:
                left -= size
