"""``ignore_errors``: the elements whose making raised an error are dropped, as tf.data's.

``ignore_errors()`` puts everything before it in the chain in skipping mode (see
:func:`._rewrite.chain_to_run`): the files' damaged records are skipped
(``on_error="skip"``), and each op that can fail on an element (``map``, ``filter``, ``parse``,
``parse_sequence``, ``batch``, ``padded_batch``) runs element by element, dropping
an element (a batch, for the batching ops) whose function raised. With
``log_warning=True`` each drop is a :class:`~tfrecord_lite.SkippedDataWarning`
naming the error.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any, Callable, Optional

from .._record import SkippedDataWarning
from ._op import UNKNOWN_CARDINALITY, EpochKey, Upstream, _close, _Op
from ._ops_batch import _Batch, _chunks, _pad_collate, _PaddedBatch
from ._ops_map import _Filter, _Map, _unpacking
from ._ops_parse import _Parse, _ParseSequence
from ._state import _Level, resumed

#: What an element function returns for an element a filter drops.
_DROPPED = object()


class _IgnoreErrors(_Op):
    """Marks where ``ignore_errors()`` was called; planning removes it."""

    def __init__(self, log_warning: bool) -> None:
        self.log_warning = log_warning

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        resumed(lv, below, "ignore_errors")

        def state(behind: int) -> Optional[dict[str, Any]]:
            up = below.state(behind)
            return None if up is None else {"kind": "ignore_errors", "up": up}

        lv.get = state
        return upstream(key)

    def cardinality(self, n: int) -> int:
        return UNKNOWN_CARDINALITY

    def describe(self) -> str:
        return f"ignore_errors(log_warning={self.log_warning})"


class _Skipping(_Op):
    """An op run element by element, dropping what raises (see the module)."""

    def __init__(self, op: _Op, fn: Callable[[Any], Any], batch: int, log_warning: bool) -> None:
        self.op = op
        self.fn = fn
        self.batch = batch  # > 0: ``fn`` takes lists of this many elements
        self.log_warning = log_warning

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        kind = f"{self.op.describe()} (skipping errors)"
        inner = _Level() if self.batch else below
        resumed(lv, inner, kind)
        if self.batch:
            chunked = f"batch({self.batch})"
            resumed(inner, below, chunked)
            drop = getattr(self.op, "drop_remainder", False)
            items = _chunks(upstream(key), self.batch, drop, (inner, below, chunked))
        else:
            items = upstream(key)

        def state(behind: int) -> Optional[dict[str, Any]]:
            return None if behind else {"kind": kind, "up": inner.state(0)}

        lv.get = state
        return _skipping(self.fn, items, self.op.describe(), self.log_warning)

    def cardinality(self, n: int) -> int:
        return UNKNOWN_CARDINALITY

    def describe(self) -> str:
        return self.op.describe()


def _skipping(
    fn: Callable[[Any], Any], items: Iterator[Any], what: str, log_warning: bool
) -> Iterator[Any]:
    try:
        for x in items:
            try:
                y = fn(x)
            except Exception as err:  # tf.data's ignore_errors drops on any error
                if log_warning:
                    warnings.warn(
                        f"ignore_errors: dropped an element that {what} failed on: "
                        f"{type(err).__name__}: {err}",
                        SkippedDataWarning,
                        stacklevel=2,
                    )
                continue
            if y is not _DROPPED:
                yield y
    finally:
        _close(items)


def _skipping_op(op: _Op, log_warning: bool) -> _Op:
    """``op`` in skipping mode (ops that cannot fail on an element stay as they are)."""
    if isinstance(op, _Map):
        return _Skipping(op, op.fn, 0, log_warning)
    if isinstance(op, _Filter):
        keep = _unpacking(op.predicate)
        return _Skipping(op, lambda x: x if keep(x) else _DROPPED, 0, log_warning)
    if isinstance(op, _Parse):
        from .._examples import parse_stream

        features = op.features
        return _Skipping(op, lambda x: next(parse_stream([x], features)), 0, log_warning)
    if isinstance(op, _ParseSequence):
        from .._examples import parse_sequence_stream

        plan = op.plan
        return _Skipping(op, lambda x: next(parse_sequence_stream([x], plan)), 0, log_warning)
    if type(op) is _Batch:
        return _Skipping(op, op.collate, op.batch_size, log_warning)
    if isinstance(op, _PaddedBatch):
        shapes, values = op.shapes, op.values
        return _Skipping(
            op, lambda c: _pad_collate(c, shapes, values, ""), op.batch_size, log_warning
        )
    return op
