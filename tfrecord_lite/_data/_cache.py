"""``cache``: the first complete epoch kept in memory, or in a cache file of this
library's own encoding (a TFRecord file of JSON descriptions and raw buffers, no
pickle) that later epochs and later processes read instead."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any, Optional

from ._encoding import _decode_element, _encode_element
from ._op import EpochKey, Upstream, _close, _Op
from ._state import _Level, bad, check_kind, field_int


class _Cache(_Op):
    """In memory: the first complete pass is kept and replayed.

    One cache per input: the source (a ``shard()`` or ``shuffle_files()`` after
    ``cache()`` makes a new one) and the extra shards of DataLoader workers.
    """

    def __init__(self, filename: str = "") -> None:
        self.filename = filename
        self._lock = threading.Lock()
        self._done: dict[Any, list[Any]] = {}

    def __getstate__(self) -> dict[str, Any]:
        # a copy in another process starts empty (and has its own lock)
        return {"filename": self.filename}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state.get("filename", ""))  # type: ignore[misc]

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        return self.cached(upstream, key, (None, ()), lv, below)

    def cached(
        self, upstream: Upstream, key: EpochKey, which: Any, lv: _Level, below: _Level
    ) -> Iterator[Any]:
        """The epoch: replayed from the cache when it is complete, else read from
        ``upstream`` and kept. State: the elements replayed, or the state below
        while filling (a resumed epoch passes its elements through without filling
        the cache, which keeps only whole epochs)."""
        kind = "cache"
        saved = lv.take()
        mode = None if saved is None else check_kind(saved, kind, kind).get("mode")
        if saved is not None and mode not in ("file", "memory", "fill"):
            raise bad(kind, f"mode {mode!r}")
        if mode == "fill":
            if "up" not in saved:  # type: ignore[operator]
                raise bad(kind, "the state of the stage below it is missing")
            below.saved = saved["up"]  # type: ignore[index]
            return _passing(upstream(key), lv, below)
        skip = 0 if saved is None else field_int(saved, "n", kind)
        if self.filename:
            path = _cache_path(self.filename, *which)
            if os.path.exists(path):
                return _replayed(_read_cache_file(path), "file", skip, lv)
            if mode == "file":
                raise bad(kind, f"the cache file {path!r} it was replaying is gone")
            return _passing(_write_cache_file(upstream(key), path), lv, below)
        with self._lock:
            done = self._done.get(which)
        if done is not None:
            return _replayed(iter(done), "memory", skip, lv)
        if mode == "memory":
            raise bad(
                kind,
                "it was replaying the in-memory cache, which this iterator does not have "
                "(it is kept per process); use cache(filename) to resume in another process",
            )
        return _passing(self._fill(upstream(key), which), lv, below)

    def _fill(self, items: Iterator[Any], shards: Any) -> Iterator[Any]:
        kept: list[Any] = []
        try:
            for x in items:
                kept.append(x)
                yield x
        finally:
            _close(items)
        with self._lock:  # reached only when the pass was complete
            self._done.setdefault(shards, kept)


def _passing(items: Iterator[Any], lv: _Level, below: _Level) -> Iterator[Any]:
    """``items`` (the input, being cached), the state the one below."""

    def state(behind: int) -> Optional[dict[str, Any]]:
        up = below.state(behind)
        return None if up is None else {"kind": "cache", "mode": "fill", "up": up}

    lv.get = state
    return items


def _replayed(items: Iterator[Any], mode: str, skip: int, lv: _Level) -> Iterator[Any]:
    """The cached elements after the first ``skip``; state: how many were handed out."""
    n = 0

    def state(behind: int) -> Optional[dict[str, Any]]:
        return None if behind > n else {"kind": "cache", "mode": mode, "n": n - behind}

    lv.get = state
    try:
        for x in items:
            n += 1
            if n > skip:
                yield x
        if n < skip:
            raise bad("cache", f"it replayed {skip} elements, the cache holds {n}")
    finally:
        _close(items)


#: The first record of a ``cache(filename)`` file.
_CACHE_MAGIC = b"tfrecord_lite cache v1"


def _cache_path(filename: str, source: Any, shards: tuple[tuple[int, int, str], ...]) -> str:
    """The cache file of one input: shards of it (``shard()``, DataLoader workers) get their own."""
    parts = [*getattr(source, "shards", ()), *shards]
    return filename + "".join(f".shard-{i}-of-{n}" for n, i, _ in parts)


def _read_cache_file(path: str) -> Iterator[Any]:
    from .._files import read_records

    records = read_records(path, "")
    try:
        if next(records, None) != _CACHE_MAGIC:
            raise ValueError(
                f"{path!r} is not a tfrecord_lite cache file; delete it or pick another filename"
            )
        for record in records:
            yield _decode_element(record, path)
    finally:
        _close(records)


def _write_cache_file(items: Iterator[Any], path: str) -> Iterator[Any]:
    """Pass ``items`` through, writing them to ``path``; the file appears only when complete."""
    from .._files import TFRecordWriter

    writer = TFRecordWriter(path, atomic=True)
    complete = False
    try:
        writer.write(_CACHE_MAGIC)
        for x in items:
            writer.write(_encode_element(x))
            yield x
        complete = True
    finally:
        _close(items)
        if complete:
            writer.close()
        else:
            writer._discard()
