"""Parsing several chunks of records at once, on threads.

The compiled kernels (:mod:`._jit_kernels`) release the GIL while they walk and
fill, and a :class:`~._parse.ParsePlan` is safe to share: :meth:`ParsePlan.parse`
keeps no state between calls (its key tables are built once, the first build
that finishes wins), so threads can parse chunks of one stream at the same time.
:func:`parse_chunks` maps chunks over a thread pool and yields the results in
the chunks' order, at most ``2 * threads`` chunks ahead of the consumer.

Each chunk is parsed in a copy of the settings in force where the iterator is
advanced (:func:`contextvars.copy_context`), so a ``tfr.options(engine=...)`` block
around the loop applies to the chunks the pool's threads parse too.

A dataset's ``num_parallel_calls`` hooks in here: give it the plan and the
iterator of batches (lists of records, or the ``RecordSpans`` a reader yields).
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Optional

from ._assemble import ParsedValue
from ._parse import ParsePlan, compile_features

__all__ = ["parse_chunks"]


def parse_chunks(
    features: Any,
    chunks: Iterable[Sequence[bytes]],
    threads: int,
    pool: Optional[ThreadPoolExecutor] = None,
) -> Iterator[dict[str, ParsedValue]]:
    """``parse_example(chunk, features)`` of every chunk, in order, ``threads`` at
    a time (``pool``: an executor to use instead of one made here). An error is
    raised where its chunk's result would have been yielded."""
    plan: ParsePlan = compile_features(features)
    if threads <= 1 and pool is None:
        for chunk in chunks:
            yield plan.parse(chunk)
        return
    own = pool is None
    executor = pool if pool is not None else ThreadPoolExecutor(threads)
    ahead: deque[Future[dict[str, ParsedValue]]] = deque()
    try:
        for chunk in chunks:
            # (a copy each: one context cannot be entered by two threads at once)
            context = contextvars.copy_context()
            ahead.append(executor.submit(context.run, plan.parse, chunk))
            if len(ahead) >= 2 * max(threads, 1):
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()
    finally:
        for future in ahead:
            future.cancel()
        if own:
            executor.shutdown(wait=True)
