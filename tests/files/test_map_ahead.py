"""map_ahead: a function over an iterator's items on a pool of threads, in order."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files import cores, map_ahead


class Items:
    """An iterator of 0..n-1 that notes whether it was closed, and can fail at ``fail_at``."""

    def __init__(self, n: int, fail_at: int = -1) -> None:
        self.n, self.fail_at, self.i, self.closed = n, fail_at, 0, False

    def __iter__(self) -> Items:
        return self

    def __next__(self) -> int:
        if self.i == self.fail_at:
            raise OSError(f"item {self.i} could not be read")
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.i - 1

    def close(self) -> None:
        self.closed = True


def slow_square(x: int) -> int:
    time.sleep(0.002 * (x % 3))  # later items often finish first
    return x * x


@pytest.mark.parametrize("workers", [0, 1, 2, 5])
def test_results_come_in_order_each_once(workers: int) -> None:
    items = Items(40)
    assert list(map_ahead(slow_square, items, workers)) == [x * x for x in range(40)]
    assert items.closed


def test_calls_run_on_the_pool_threads() -> None:
    names = list(map_ahead(lambda _: threading.current_thread().name, Items(8), 2, name="tfl-x"))
    assert all(n.startswith("tfl-x") for n in names)
    assert (
        list(map_ahead(lambda _: threading.current_thread().name, Items(3), 1))
        == [threading.current_thread().name] * 3
    )


def test_an_error_of_the_function_comes_where_its_result_would_have() -> None:
    def f(x: int) -> int:
        if x == 7:
            raise ValueError("seven")
        return slow_square(x)

    items = Items(30)
    got: list[int] = []
    with pytest.raises(ValueError, match="seven"):
        for y in map_ahead(f, items, 3):
            got.append(y)
    assert got == [x * x for x in range(7)]
    assert items.closed


def test_an_error_of_the_iterator_comes_after_the_results_before_it() -> None:
    items = Items(30, fail_at=11)
    got: list[int] = []
    with pytest.raises(OSError, match="item 11"):
        for y in map_ahead(slow_square, items, 3):
            got.append(y)
    assert got == [x * x for x in range(11)]
    assert items.closed


def test_an_earlier_error_of_the_function_wins_over_the_iterators() -> None:
    def f(x: int) -> int:
        if x == 9:
            raise ValueError("nine")
        return x

    # item 9 is still in flight when the iterator fails at 10: its error comes first
    with pytest.raises(ValueError, match="nine"):
        list(map_ahead(f, Items(30, fail_at=10), 4))


def test_closing_early_stops_the_pool_and_closes_the_iterator() -> None:
    items = Items(1000)
    started: list[int] = []

    def f(x: int) -> int:
        started.append(x)
        return x

    gen = map_ahead(f, items, 2)
    assert next(gen) == 0
    gen.close()
    assert items.closed
    assert len(started) <= 4  # at most 2 * workers handed out
    assert not any(t.name.startswith("tfrecord_lite-map") for t in threading.enumerate())


def test_each_call_sees_the_settings_where_the_reader_advanced() -> None:
    with tfr.options(threads=1):
        inside = list(map_ahead(lambda _: cores(), Items(6), 2))
    assert inside == [1] * 6


def test_cores_is_capped_by_the_threads_setting(monkeypatch: Any) -> None:
    monkeypatch.delenv("TFRECORD_LITE_THREADS", raising=False)
    everything = cores()
    assert everything >= 1
    with tfr.options(threads=1):
        assert cores() == 1
    monkeypatch.setenv("TFRECORD_LITE_THREADS", "1")
    assert cores() == 1


def _gen(n: int) -> Iterator[int]:
    yield from range(n)


def test_a_generator_source_is_closed_when_done() -> None:
    source = _gen(5)
    assert list(map_ahead(lambda x: x + 1, source, 2)) == [1, 2, 3, 4, 5]
    with pytest.raises(StopIteration):
        next(source)
