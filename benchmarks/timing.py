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


def timed_rounds(
    fns: dict[str, Callable[[], Any]], reps: int
) -> dict[str, tuple[list[float], list[float]]]:
    """Wall-clock and CPU seconds of every ``fns`` entry in each of ``reps`` rounds, the
    entries taking turns within a round (so a change in the machine's load reaches all
    of them alike, and ratios can be taken round by round). Each runs once first as a
    warm-up."""
    for fn in fns.values():
        fn()
    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            t, c = time.perf_counter(), time.process_time()
            fn()
            out[name][0].append(time.perf_counter() - t)
            out[name][1].append(time.process_time() - c)
    return out


def round_ratios(base: list[float], other: list[float]) -> float:
    """The median over rounds of ``base / other`` (how many times faster ``other`` is)."""
    return statistics.median(b / o for b, o in zip(base, other))
