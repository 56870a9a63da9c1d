"""Parsing several chunks of records at once, on threads.

The compiled kernels (:mod:`._jit_kernels`) release the GIL while they walk and
fill, and a :class:`~._parse.ParsePlan` is safe to share: :meth:`ParsePlan.parse`
keeps no state between calls (its key tables are built once, the first build
that finishes wins), so threads can parse chunks of one stream at the same time.
:func:`parse_chunks` maps chunks over a thread pool and yields the results in
the chunks' order, at most ``2 * threads`` chunks ahead of the consumer (with
:func:`~tfrecord_lite._files.map_ahead`).

Each chunk is parsed in a copy of the settings in force where the iterator is
advanced (:func:`contextvars.copy_context`), so a ``tfr.options(engine=...)`` block
around the loop applies to the chunks the pool's threads parse too.

Chunks are lists of records or the ``RecordSpans`` a reader yields. (A dataset's
``num_parallel_calls`` has a map of its own, which also saves the batches in flight
when an iterator's state is saved.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .._files import map_ahead
from ._assemble import ParsedValue
from ._parse import ParsePlan, compile_features

__all__ = ["parse_chunks"]


def parse_chunks(
    features: Any, chunks: Iterable[Sequence[bytes]], threads: int
) -> Iterator[dict[str, ParsedValue]]:
    """``parse_example(chunk, features)`` of every chunk, in order, ``threads`` at
    a time (:func:`~tfrecord_lite._files.map_ahead`). An error is raised where its
    chunk's result would have been yielded."""
    plan: ParsePlan = compile_features(features)
    return map_ahead(plan.parse, iter(chunks), threads, name="tfrecord_lite-parse")
