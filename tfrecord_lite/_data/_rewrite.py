"""The chain rewriter: a dataset's chain of ops rewritten for speed before an epoch runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional, cast

from ._op import _Op
from ._ops_batch import _Batch, _RawBatch
from ._ops_errors import _IgnoreErrors, _skipping_op
from ._ops_map import _Filter
from ._ops_parse import _Parse, _ParseBatch, _ParseSequence, _ParseSequenceBatch

__all__ = ["chain_to_run", "ignoring"]


def chain_to_run(ops: Sequence[_Op], records: bool = True) -> list[_Op]:
    """The chain to run: the ops before the last ``ignore_errors()`` in skipping mode
    (see :mod:`._ops_errors`), the others rewritten for speed by :func:`_fused`."""
    last = _last_ignore(ops)
    if last < 0:
        return _fused(ops, records)
    log_warning = cast(_IgnoreErrors, ops[last]).log_warning
    before = [
        _skipping_op(op, log_warning) for op in ops[:last] if not isinstance(op, _IgnoreErrors)
    ]
    return before + _fused(ops[last + 1 :], records and not before)


def _last_ignore(ops: Sequence[_Op]) -> int:
    """The position of the last ``ignore_errors()`` in the chain, -1 if none."""
    return max((j for j, op in enumerate(ops) if isinstance(op, _IgnoreErrors)), default=-1)


def ignoring(ops: Sequence[_Op]) -> Optional[str]:
    """How the files' damaged records are read: ``"skip"`` / ``"warn"`` under an
    ``ignore_errors()`` (``log_warning`` or not), else None (as the dataset says)."""
    last = _last_ignore(ops)
    if last < 0:
        return None
    return "warn" if cast(_IgnoreErrors, ops[last]).log_warning else "skip"


def _fused(ops: Sequence[_Op], records: bool = True) -> list[_Op]:
    """Rewrite the chain for speed, without changing what it yields.

    ``parse(f)`` followed (through ops that do not look at elements: shuffle, take,
    skip, repeat, prefetch, and filters) by ``batch(n)`` becomes a raw batch and one
    ``parse_example`` call per batch; ``parse_sequence(...)`` followed (through those
    ops, no filter) by ``batch(n)``, one ``parse_sequence_example`` call per batch.
    Filters in between parse their element for the predicate only. A ``batch`` with no parse or map before it gives lists of bytes.
    """
    out: list[Optional[_Op]] = list(ops)
    for j, op in enumerate(out):
        if type(op) is not _Batch:
            continue
        k = j - 1
        while k >= 0 and (out[k] is None or out[k].transparent or type(out[k]) is _Filter):  # type: ignore[union-attr]
            k -= 1
        parse = out[k] if k >= 0 else None
        if isinstance(parse, _Parse):
            for m in range(k + 1, j):
                f = out[m]
                if isinstance(f, _Filter) and f.features is None:
                    out[m] = _Filter(f.predicate, parse.features)
            out[j] = _ParseBatch(op.batch_size, op.drop_remainder, parse.features, parse.workers)
            out[k] = None
        elif isinstance(parse, _ParseSequence) and not any(
            isinstance(out[m], _Filter) for m in range(k + 1, j)
        ):
            # As batch(n).parse_sequence(...): (context, feature_lists, lengths) per batch.
            out[j] = _ParseSequenceBatch(
                op.batch_size, op.drop_remainder, parse.plan, parse.workers
            )
            out[k] = None
        elif k < 0 and records:
            out[j] = _RawBatch(op.batch_size, op.drop_remainder)
    return [o for o in out if o is not None]
