"""Parsing records in a pipeline: ``parse`` (Examples), ``parse_sequence``
(SequenceExamples), and ``parse(...).batch(n)`` / ``parse_sequence(...).batch(n)`` as
one ``parse_example`` / ``parse_sequence_example`` per batch.

``parse(features)`` reads only an Example's features: the first record of each
epoch is looked at, and SequenceExamples with feature lists get a
:class:`FeatureListsIgnoredWarning` naming ``parse_sequence`` instead of losing
their lists silently.

With ``num_parallel_calls``, records are parsed on threads, each task in a copy of the
context of the thread iterating the dataset (:func:`contextvars.copy_context`, taken
as the task is handed out), so a ``tfr.options(...)`` block around the loop reaches
the parsing threads too."""

from __future__ import annotations

import contextvars
import warnings
from collections.abc import Iterator, Mapping
from typing import Any, Callable, Optional

from .._record import RecordSpans
from ._op import EpochKey, Upstream, _close, _Op
from ._ops_batch import _Batch
from ._origin import located_stream
from ._state import _Level, decode_held, replaying, resumed


class FeatureListsIgnoredWarning(UserWarning):
    """``parse(features)`` met SequenceExamples whose feature lists it does not read."""


def _feature_lists(item: Any) -> Optional[list[str]]:
    """The feature-list keys of ``item``'s first record, when it is a SequenceExample
    that has some (None for an Example, or anything that does not parse)."""
    from ..example_pb2 import SequenceExample

    record = item if isinstance(item, bytes) else (item[0] if len(item) else None)
    if not isinstance(record, bytes):
        return None
    try:
        keys = sorted(SequenceExample.FromString(record).feature_lists.feature_list)
    except Exception:  # not a SequenceExample: the parser says what it is
        return None
    return keys or None


def _check_not_sequences(item: Any) -> None:
    """Warn when the first record of an epoch parsed with ``parse`` has feature lists."""
    keys = _feature_lists(item)
    if keys:
        warnings.warn(
            f"these records are SequenceExamples with feature lists {keys}: "
            ".parse(features) reads only their context features; read the lists with "
            ".parse_sequence(context_features, sequence_features) (or pass .parse() the "
            "Schema infer_schema returns, which holds both)",
            FeatureListsIgnoredWarning,
            stacklevel=4,
        )


def _run_parse(
    parse: Callable[[Iterator[Any]], Iterator[Any]],
    upstream: Callable[[], Iterator[Any]],
    workers: int,
    levels: tuple[_Level, _Level, str],
    first: Optional[Callable[[Any], None]] = None,
) -> Iterator[Any]:
    """``parse`` over ``upstream()`` (on ``workers`` threads when more than one), its
    errors naming their records (see ._origin). Its state: the inputs read ahead
    and not yet parsed, rolled back below or saved (see ._state)."""
    lv, below, kind = levels
    saved = resumed(lv, below, kind)
    items = upstream()
    if saved is not None and "held" in saved:
        items = replaying(decode_held(saved, kind), items)
    if workers <= 1:
        return located_stream(parse, items, first, levels)
    return located_stream(
        lambda feed: _parsed_on_threads(lambda g: parse(iter(g)), feed, workers),
        items,
        first,
        levels,
    )


class _Parse(_Op):
    def __init__(self, features: Mapping[str, Any], workers: int = 1) -> None:
        self.features = features
        self.workers = workers  # num_parallel_calls

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        from .._examples import parse_stream

        # A list is a batch of raw records (``batch(n).parse(f)``): parsed as
        # ``parse_example`` would, consecutive batches extracted in large chunks.
        features = self.features
        return _run_parse(
            lambda items: parse_stream(items, features),
            lambda: upstream(key),
            self.workers,
            (lv, below, self.describe()),
            _check_not_sequences,
        )

    def describe(self) -> str:
        return f"parse({sorted(self.features)})"


class _ParseSequence(_Op):
    def __init__(self, plan: Any, workers: int = 1) -> None:
        self.plan = plan  # a compiled SequencePlan
        self.workers = workers

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        from .._examples import parse_sequence_stream

        # A batch (``batch(n).parse_sequence(...)``) is parsed as
        # ``parse_sequence_example`` would, consecutive batches extracted in large chunks.
        plan = self.plan
        return _run_parse(
            lambda items: parse_sequence_stream(items, plan),
            lambda: upstream(key),
            self.workers,
            (lv, below, self.describe()),
        )

    def describe(self) -> str:
        return f"parse_sequence({sorted(self.plan.context)}, {sorted(self.plan.sequence)})"


class _ParseBatch(_Batch):
    """``parse(features).batch(n)``: batch the raw records, then one ``parse_example`` per batch."""

    def __init__(
        self,
        batch_size: int,
        drop_remainder: bool,
        features: Mapping[str, Any],
        workers: int = 1,
    ) -> None:
        super().__init__(batch_size, drop_remainder)
        self.features = features
        self.workers = workers

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        from .._examples import parse_batches

        # Each batch comes out as ``parse_example`` returns it; the records of
        # several batches are extracted at once (see ``parse_batches``).
        features = self.features
        mid = _Level()
        return _run_parse(
            lambda batches: parse_batches(batches, features),
            lambda: self.batches(upstream, key, mid, below),
            self.workers,
            (lv, mid, self.describe()),
            _check_not_sequences,
        )

    def describe(self) -> str:
        return f"parse({sorted(self.features)}).batch({self.batch_size})"


class _ParseSequenceBatch(_Batch):
    """``parse_sequence(...).batch(n)``: batch the raw records, then one
    ``parse_sequence_example`` per batch, as ``batch(n).parse_sequence(...)``."""

    def __init__(self, batch_size: int, drop_remainder: bool, plan: Any, workers: int = 1) -> None:
        super().__init__(batch_size, drop_remainder)
        self.plan = plan
        self.workers = workers

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        from .._examples import parse_sequence_stream

        plan = self.plan
        mid = _Level()
        return _run_parse(
            lambda batches: parse_sequence_stream(batches, plan),
            lambda: self.batches(upstream, key, mid, below),
            self.workers,
            (lv, mid, self.describe()),
        )

    def describe(self) -> str:
        return (
            f"parse_sequence({sorted(self.plan.context)}, {sorted(self.plan.sequence)})"
            f".batch({self.batch_size})"
        )


#: Records (or, for single records, items) a parsing task takes on a thread.
_TASK_RECORDS = 8192


def _parsed_on_threads(
    parse: Callable[[list[Any]], Iterator[Any]], items: Iterator[Any], workers: int
) -> Iterator[Any]:
    """``parse`` of consecutive groups of ``items`` on ``workers`` threads, in order.

    Each task parses a group of about :data:`_TASK_RECORDS` records (whole batches);
    at most ``2 * workers`` tasks run ahead. An error comes out where its element
    would have: after every element parsed before it, as without threads.
    """
    from ._ops_map import _parallel_map

    def parsed(group: list[Any]) -> tuple[list[Any], Optional[BaseException]]:
        done: list[Any] = []
        try:
            done.extend(parse(group))
        except Exception as err:  # raised in order by the consumer below
            return done, err
        return done, None

    def task(
        job: tuple[list[Any], contextvars.Context],
    ) -> tuple[list[Any], Optional[BaseException]]:
        group, context = job
        return context.run(parsed, group)

    # (each group with the iterating thread's settings, copied as it is handed out)
    jobs = ((group, contextvars.copy_context()) for group in _groups(items))
    try:
        for done, err in _parallel_map(task, jobs, workers):
            yield from done
            if err is not None:
                raise err
    finally:
        _close(items)


def _groups(items: Iterator[Any]) -> Iterator[list[Any]]:
    """Consecutive items in lists of about :data:`_TASK_RECORDS` records."""
    group: list[Any] = []
    records = 0
    for x in items:
        group.append(x)
        records += len(x) if isinstance(x, (list, RecordSpans)) else 1
        if records >= _TASK_RECORDS:
            yield group
            group, records = [], 0
    if group:
        yield group
