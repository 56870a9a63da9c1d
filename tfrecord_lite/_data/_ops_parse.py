"""Parsing records in a pipeline: ``parse`` (Examples), ``parse_sequence``
(SequenceExamples), and ``parse(...).batch(n)`` as one ``parse_example`` per batch."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ._op import EpochKey, Upstream, _Op
from ._ops_batch import _Batch


class _Parse(_Op):
    def __init__(self, features: Mapping[str, Any]) -> None:
        self.features = features

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        from .._examples import parse_stream

        # A list is a batch of raw records (``batch(n).parse(f)``): parsed as
        # ``parse_example`` would, consecutive batches extracted in large chunks.
        return parse_stream(upstream(key), self.features)

    def describe(self) -> str:
        return f"parse({sorted(self.features)})"


class _ParseSequence(_Op):
    def __init__(self, plan: Any) -> None:
        self.plan = plan  # a compiled SequencePlan

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        from .._examples import parse_sequence_stream

        # A batch (``batch(n).parse_sequence(...)``) is parsed as
        # ``parse_sequence_example`` would, consecutive batches extracted in large chunks.
        return parse_sequence_stream(upstream(key), self.plan)

    def describe(self) -> str:
        return f"parse_sequence({sorted(self.plan.context)}, {sorted(self.plan.sequence)})"


class _ParseBatch(_Batch):
    """``parse(features).batch(n)``: batch the raw records, then one ``parse_example`` per batch."""

    def __init__(self, batch_size: int, drop_remainder: bool, features: Mapping[str, Any]) -> None:
        super().__init__(batch_size, drop_remainder)
        self.features = features

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        from .._examples import parse_batches

        # Each batch comes out as ``parse_example`` returns it; the records of
        # several batches are extracted at once (see ``parse_batches``).
        return parse_batches(self.batches(upstream(key)), self.features)

    def describe(self) -> str:
        return f"parse({sorted(self.features)}).batch({self.batch_size})"
