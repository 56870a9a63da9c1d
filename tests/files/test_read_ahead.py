"""``_ahead.ReadAhead``: an iterator's items produced by a background thread.

It must hand out every item in order, then the source's exception after the items
before it; hold at most ``depth`` items; and never leave its thread running: after
the end, an error, an early close, an abandoned reader, a KeyboardInterrupt, or in
the child of a fork (which says so instead of waiting).
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Iterator

import pytest
from _helpers import run_in_fork

import tfrecord_lite as tfr
from tfrecord_lite._files._ahead import ReadAhead

THREAD = "tfrecord_lite-test-ahead"


def ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD]


def no_thread_left() -> bool:
    """True once no such thread runs (close() joins; this only guards the assertion)."""
    gc.collect()
    return not ahead_threads()


def test_read_ahead_hands_out_every_chunk_in_order() -> None:
    chunks = [bytes([i]) * (i + 1) for i in range(50)]
    ahead = ReadAhead(iter(chunks), depth=3, name=THREAD)
    assert list(ahead) == chunks
    assert list(ahead) == []  # ended: stays ended
    assert no_thread_left()


def test_read_ahead_holds_at_most_depth_chunks() -> None:
    produced = 0

    def source() -> Iterator[bytes]:
        nonlocal produced
        while True:
            produced += 1
            yield b"x" * 1000

    depth = 3
    ahead = ReadAhead(source(), depth=depth, name=THREAD)
    # Wait until the queue is full: the thread is then blocked handing over one more.
    for _ in range(2000):
        if ahead._queue.full():
            break
        threading.Event().wait(0.005)
    assert ahead._queue.full()
    assert produced <= depth + 1
    assert next(ahead) == b"x" * 1000
    ahead.close()
    assert not ahead._thread.is_alive()
    with pytest.raises(StopIteration):
        next(ahead)  # closed: ends
    assert no_thread_left()


def test_read_ahead_raises_the_sources_exception_after_its_chunks() -> None:
    closed = []

    def source() -> Iterator[bytes]:
        try:
            yield b"a"
            yield b"b"
            raise tfr.CompressionError("damaged here", path="p", offset=7)
        finally:
            closed.append(threading.current_thread().name)

    ahead = ReadAhead(source(), name=THREAD)
    assert next(ahead) == b"a"
    assert next(ahead) == b"b"
    with pytest.raises(tfr.CompressionError, match="damaged here") as info:
        next(ahead)
    assert info.value.path == "p" and info.value.offset == 7
    assert closed == [THREAD]  # the generator was finished in its own thread
    assert no_thread_left()


def test_read_ahead_forwards_a_keyboard_interrupt_from_the_source() -> None:
    def source() -> Iterator[bytes]:
        yield b"a"
        raise KeyboardInterrupt

    ahead = ReadAhead(source(), name=THREAD)
    assert next(ahead) == b"a"
    with pytest.raises(KeyboardInterrupt):
        next(ahead)
    assert no_thread_left()


def test_read_ahead_close_stops_a_blocked_thread_and_closes_the_source() -> None:
    closed = threading.Event()

    def source() -> Iterator[bytes]:
        try:
            while True:
                yield b"y" * 100
        finally:
            closed.set()

    ahead = ReadAhead(source(), depth=1, name=THREAD)
    assert next(ahead) == b"y" * 100
    ahead.close()
    ahead.close()  # idempotent
    assert closed.is_set()
    assert no_thread_left()


def test_read_ahead_dropped_unread_stops_its_thread() -> None:
    def source() -> Iterator[bytes]:
        while True:
            yield b"z"

    ahead = ReadAhead(source(), depth=2, name=THREAD)
    thread = ahead._thread
    del ahead
    gc.collect()
    assert not thread.is_alive()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_read_ahead_continued_after_a_fork_says_so() -> None:
    # A forked child has no copy of the thread: its next() explains instead of hanging.
    def source() -> Iterator[bytes]:
        while True:
            yield b"w" * 10

    ahead = ReadAhead(source(), depth=1, name=THREAD, what="this test reader", again="redo it")
    assert next(ahead) == b"w" * 10

    def child() -> int:
        try:
            for _ in range(3):
                next(ahead)
        except RuntimeError as err:
            said = str(err)
            return 0 if "this test reader" in said and said.endswith("; redo it") else 2
        return 1

    assert run_in_fork(child) == 0
    assert next(ahead) == b"w" * 10  # the parent's reader goes on
    ahead.close()
    assert no_thread_left()


def test_read_ahead_makes_its_source_in_its_thread() -> None:
    # A function is called in the thread: a pipeline is built where it runs.
    made_in = []

    def make() -> Iterator[int]:
        made_in.append(threading.current_thread().name)
        return iter(range(5))

    ahead = ReadAhead(make, 2, name=THREAD)
    assert list(ahead) == [0, 1, 2, 3, 4]
    assert made_in == [THREAD]
    assert no_thread_left()


def test_read_ahead_reports_an_error_making_its_source() -> None:
    def make() -> Iterator[int]:
        raise ValueError("no source")

    with pytest.raises(ValueError, match="no source"):
        next(ReadAhead(make, name=THREAD))
    assert no_thread_left()


def test_read_ahead_close_waits_at_most_its_timeout_for_a_busy_source() -> None:
    # The source is inside a slow item when the reader closes: close returns after
    # about ``close_timeout``; the thread stops after that item and closes the source.
    release = threading.Event()
    closed = threading.Event()

    def source() -> Iterator[int]:
        try:
            yield 1
            release.wait(10)
            yield 2
            yield 3
        finally:
            closed.set()

    ahead = ReadAhead(source(), 1, name=THREAD, close_timeout=0.2)
    assert next(ahead) == 1
    time.sleep(0.05)  # the thread is now waiting inside the source
    start = time.monotonic()
    ahead.close()
    assert 0.15 <= time.monotonic() - start < 5
    assert not closed.is_set() and ahead_threads()
    release.set()
    assert closed.wait(5)
    for t in ahead_threads():
        t.join(5)
    assert no_thread_left()
