"""One epoch's iterator over a dataset."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any, Callable, Optional

from ._op import EpochKey, _close
from ._state import (
    STATE_FORMAT,
    STATE_VERSION,
    IteratorStateError,
    _Level,
    digest,
)

#: Builds an epoch's iterator for its key, resuming at the state in the level.
_Restart = Callable[[EpochKey, _Level], Iterator[Any]]


def _collided(err: ValueError) -> bool:
    """Whether ``err`` says another thread is inside the generator right now (raised by
    the call itself, before the generator ran: nothing was consumed)."""
    tb = err.__traceback__
    return (tb is None or tb.tb_next is None) and str(err) == "generator already executing"


#: What :meth:`_DatasetIterator._step` returns when another thread is inside the generator.
_COLLIDED = object()


class _DatasetIterator:
    """One epoch's iterator. ``close()`` (or leaving the loop) stops its threads and files.

    Thread-safe: threads sharing one iterator each get the next element in turn,
    every element goes to exactly one of them, and all of them see the end of the
    epoch only once it is reached. One thread pays nothing for this: the lock is
    taken only once a second thread has been seen in ``__next__``.
    """

    def __init__(
        self,
        restart: _Restart,
        key: EpochKey,
        pipeline: str,
        on_load: Optional[Callable[[EpochKey], None]] = None,
    ) -> None:
        self._restart = restart
        self._key = key
        self._pipeline = pipeline
        self._on_load = on_load
        self._level = _Level()
        self._it: Optional[Iterator[Any]] = restart(key, self._level)
        self._lock = threading.Lock()
        self._shared = False  # set when two threads met in __next__: take the lock
        self._closed = False
        self._failed = False  # the epoch ended with an error: no state to give

    def __iter__(self) -> _DatasetIterator:
        return self

    def __next__(self) -> Any:
        if not self._shared:
            x = self._step()
            if x is not _COLLIDED:
                return x
            self._shared = True
        return self._next_locked()

    def _next_locked(self) -> Any:
        with self._lock:
            while True:
                x = self._step()
                if x is not _COLLIDED:
                    return x
                time.sleep(0)  # a call begun before the lock was in use: let it end

    def _step(self) -> Any:
        """The next element, or :data:`_COLLIDED` when another thread is inside the
        generator (StopIteration at the end, or once the epoch ended)."""
        it = self._it
        if it is None:
            raise StopIteration
        try:
            return next(it)
        except ValueError as err:
            if _collided(err):
                return _COLLIDED
            self._end(it)
            raise
        except StopIteration:
            self._end(it, failed=False)
            raise
        except BaseException:
            self._end(it)
            raise

    def _end(self, it: Iterator[Any], failed: bool = True) -> None:
        """The epoch ends (with an error unless not ``failed``): every thread's next
        ``__next__`` stops."""
        self._it = None
        self._failed = failed
        with contextlib.suppress(ValueError):
            _close(it)

    def close(self) -> None:
        with self._lock:
            it, self._it = self._it, None
            self._closed = True
        _close(it)

    def state_dict(self) -> dict[str, Any]:
        """Where this iterator is in its epoch: a JSON-able dict that
        :meth:`load_state_dict` resumes from, in this process or another.

        The state describes the elements handed out so far (none are lost or
        repeated on resuming): the epoch, each stage's position (the file, record
        index and byte offset being read; shuffle buffers; random generators;
        interleave cursors), and the few elements a stage holds that cannot be
        found again in the files. See "Resuming mid-epoch" in docs/pipelines.md for
        what it holds and its size.
        """
        with self._lock:
            self._shared = True  # from now on every __next__ takes the lock
            if self._closed:
                raise ValueError("state_dict() of a closed iterator")
            if self._failed:
                raise ValueError(
                    "state_dict() of an iterator whose epoch ended with an error: where it "
                    "stopped is not a place to resume from; resume from a state saved before"
                )
            body = {
                "format": STATE_FORMAT,
                "version": STATE_VERSION,
                "pipeline": self._pipeline,
                "epoch": list(self._key),
                "state": self._level.state(0),
            }
        return {**body, "digest": digest(body)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at ``state`` (from :meth:`state_dict`): the next elements are those
        that followed when it was saved, to the end of that epoch.

        Raises :class:`~tfrecord_lite.IteratorStateError` when the state was saved
        from another pipeline, over other files (or files changed since), by
        another version, or was changed after it was saved.
        """
        key = _checked(state, self._pipeline)
        level = _Level(state["state"])
        it = self._restart(key, level)
        with self._lock:
            old, self._it = self._it, it
            self._key, self._level, self._closed, self._failed = key, level, False, False
        _close(old)
        if self._on_load is not None:
            self._on_load(key)

    def __enter__(self) -> _DatasetIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def _checked(state: Any, pipeline: str) -> EpochKey:
    """The epoch key of a saved state, after checking it fits (see load_state_dict)."""
    if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
        raise IteratorStateError(
            "load_state_dict() needs a dict made by state_dict() of a dataset iterator, got "
            + (
                f"a dict with keys {sorted(state)[:8]}"
                if isinstance(state, dict)
                else f"a {type(state).__name__}"
            )
        )
    if state.get("version") != STATE_VERSION:
        raise IteratorStateError(
            f"the iterator state is of version {state.get('version')!r}; this version of "
            f"tfrecord_lite reads version {STATE_VERSION}"
        )
    body = {k: v for k, v in state.items() if k != "digest"}
    if state.get("digest") != digest(body):
        raise IteratorStateError(
            "the iterator state was changed after state_dict() made it (its digest does "
            "not match its contents); load the state as saved"
        )
    if state.get("pipeline") != pipeline:
        raise IteratorStateError(
            f"the iterator state was saved from the pipeline {state.get('pipeline')!r}, "
            f"this iterator is over {pipeline!r}"
        )
    key = state.get("epoch")
    if (
        not isinstance(key, list)
        or not key
        or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in key)
    ):
        raise IteratorStateError(f"the iterator state's epoch {key!r} is not valid")
    return tuple(key)
