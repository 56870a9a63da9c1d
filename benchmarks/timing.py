"""Timing shared by the benchmark scripts: medians of wall-clock and CPU seconds."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

__all__ = ["timed"]


def timed(fn: Callable[[], Any], reps: int) -> tuple[float, float]:
    """Median wall-clock and CPU seconds (all threads of the process) of ``fn``.

    ``fn`` runs once first as a warm-up (imports, compiles, the page cache), then
    ``reps`` times measured.
    """
    fn()  # warm-up
    walls, cpus = [], []
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)
