"""``TFRecordDataset``: lazy, chainable input pipelines for training loops, as NumPy.

>>> ds = (TFRecordDataset("data/train-?????-of-00016")         # doctest: +SKIP
...       .shard(num_shards=world_size, index=rank)
...       .shuffle(buffer_size=10_000, seed=0)
...       .parse(features)
...       .batch(256)
...       .prefetch(2))
>>> for epoch in range(3):                                       # doctest: +SKIP
...     for batch in ds:            # dict of columns, as parse_example returns
...         ...

A dataset is a recipe: each method returns a new dataset and nothing is read
until it is iterated. Every ``for`` over it is a new epoch (and reshuffles, when
asked to). Names follow ``tf.data``.

Sharding (:meth:`TFRecordDataset.shard`) always splits the *input records*,
wherever it appears in the chain, and is exact: the shards are disjoint and
together hold every record once. Files are first put in a canonical order
(sorted by path); then

* while there are at least as many files as shards, shard ``i`` of ``n`` takes
  ``files[i::n]`` (whole files: no record is read twice);
* otherwise records are split. Record ``r`` (0-based, within its file) of file
  ``f`` (position in the canonical order, among the ``F`` files left) gets the
  label ``k = r * F + f`` -- its position if the files were read round-robin --
  and belongs to shard ``k % n``. The label depends only on *which* record it is,
  not on the order records are read in, so sharding stays exact with
  ``shuffle_files``, ``interleave`` and any seed (or none). Shards get equally
  many records (±1) when the files are equally long, and a shard skips, without
  opening it, every file where it owns nothing: with 2 files and 8 shards each
  shard reads one file, not both. When a plain file has an index file
  (``file.index``/``file.idx``, see :func:`create_index`), a shard reads only its
  own records from it instead of streaming the whole file.

Several ``shard`` calls nest (shard ``j`` of ``m`` of shard ``i`` of ``n``), which is
how :mod:`tfrecord_lite.torch` adds DataLoader workers and distributed ranks.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import math
import os
import struct
import threading
import warnings
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Optional, TypeVar, Union, cast

import numpy as np

from .._files import (
    READ_BLOCK_SIZE,
    PathOrFile,
    ReadAhead,
    expand_paths,
    find_index,
    fs,
    is_file_object,
    read_batches,
    reader_compression,
)
from .._record import RecordSpans

__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "Dataset",
    "TFRecordDataset",
]

#: ``tf.data.AUTOTUNE``: accepted where tf.data accepts it (means "the number of CPUs").
AUTOTUNE = -1
#: ``tf.data.INFINITE_CARDINALITY``: what :meth:`Dataset.cardinality` returns after ``repeat()``.
INFINITE_CARDINALITY = -1
#: ``tf.data.UNKNOWN_CARDINALITY``: the number of elements depends on the data.
UNKNOWN_CARDINALITY = -2

EpochKey = tuple[int, ...]
_D = TypeVar("_D", bound="Dataset")
_T = TypeVar("_T")
Upstream = Callable[[EpochKey], Iterator[Any]]

#: Smallest read block per file when interleaving many files (TensorFlow reads
#: 256 KiB per open file; smaller blocks cost more in per-block work than they save).
_MIN_BLOCK = 256 * 1024
#: How long closing an iterator waits for its background thread.
_JOIN_TIMEOUT = 5.0


def _count(name: str, value: Any, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    return int(value)


def _threads(name: str, value: Optional[int]) -> int:
    if value is None:
        return 1
    if value == AUTOTUNE:
        return os.cpu_count() or 1
    return _count(name, value, 1)


def _seed_entropy(seed: Optional[int]) -> int:
    """A shuffle's base entropy: the seed, or fresh randomness fixed when the op is made."""
    if seed is None:
        return int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    return int(seed)


def _rng(entropy: int, salt: int, key: EpochKey, reshuffle: bool) -> np.random.Generator:
    spawn_key = (salt, *key) if reshuffle else (salt,)
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=spawn_key))
    )


# --------------------------------------------------------------------------- source


class _Source:
    """The files and how to read them: compression, sharding, file order, interleave."""

    def __init__(
        self,
        files: tuple[str, ...],
        compression: str,
        buffer_size: Optional[int],
        verify: bool,
    ) -> None:
        self.files = files
        self.compression = compression
        self.buffer_size = buffer_size  # None: chosen from the number of files open at once
        self.verify = verify
        self.cycle_length = 1
        self.block_length = 1
        self.shards: tuple[tuple[int, int, str], ...] = ()
        self.file_shuffle: Optional[tuple[int, bool]] = None  # (entropy, reshuffle)
        # path -> (skip, take): read only records skip..skip+take-1 of that file
        # (tfrecord_lite.tfds split slices such as "train[10%:20%]").
        self.windows: Optional[dict[str, tuple[int, int]]] = None

    def cardinality(self) -> int:
        return UNKNOWN_CARDINALITY  # the number of records is in the files

    def describe(self) -> str:
        return f"TFRecordDataset(files={len(self.files)})"

    def copy(self, **changes: Any) -> _Source:
        new = _Source.__new__(_Source)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def plan(self) -> tuple[list[tuple[str, int]], int, int, int]:
        """Apply the shard stages: the files to read ``(path, label f)`` in reading order, F, N, I.

        A record ``r`` of the file labelled ``f`` is read iff ``(r * F + f) % N == I``.
        """
        canonical = sorted(range(len(self.files)), key=lambda j: (self.files[j], j))
        selected = canonical  # user positions, in canonical order
        n_rec, i_rec = 1, 0
        for n, i, by in self.shards:
            if n_rec == 1 and by != "record" and len(selected) >= n:
                selected = selected[i::n]
            elif by == "file":
                raise ValueError(
                    f"shard(by='file') needs at least {n} files to split, have {len(selected)}"
                )
            else:
                i_rec += n_rec * i
                n_rec *= n
        label = {pos: f for f, pos in enumerate(selected)}
        order = sorted(selected)  # the user's order among the selected files
        return [(self.files[pos], label[pos]) for pos in order], len(selected), n_rec, i_rec

    def iterate(
        self,
        key: EpochKey,
        extra_shards: tuple[tuple[int, int, str], ...] = (),
        lists: bool = False,
        spans: bool = False,
    ) -> Iterator[Any]:
        """The records (``lists``: lists of records, in the same order).

        ``spans`` (with ``lists``, for a parser): files read one after the other
        hand out :class:`~tfrecord_lite._record._scan.RecordSpans` of their blocks where
        they can, so no record is copied out on its own.
        """
        src = self.copy(shards=self.shards + extra_shards) if extra_shards else self
        entries, n_files, n_rec, i_rec = src.plan()
        if src.file_shuffle is not None:
            entropy, reshuffle = src.file_shuffle
            perm = _rng(entropy, 1, key, reshuffle).permutation(len(entries))
            entries = [entries[j] for j in perm]
        # Each file hands out its records a list at a time (as its decoder
        # produces them); the files' lists are merged in tf.data's order, and
        # only the last step hands out single records.
        # (Interleaving several files puts their records in lists of its own.)
        spans = spans and lists and src.cycle_length <= 1
        readers: list[Callable[[], Iterator[Sequence[bytes]]]] = [
            functools.partial(src._read_file, path, f, n_files, n_rec, i_rec, spans)
            for path, f in entries
        ]
        paths = [path for path, _ in entries]
        if any(fs.is_url(p) for p in paths):
            # Object stores: fetch the next files' first blocks while these are read,
            # so that num_parallel_reads objects (at least 2) are in flight at once.
            ahead = max(2, src.cycle_length)
            fs.prefetch(paths[:ahead])
            readers = [
                functools.partial(_warming, make, paths[k + 1 : k + 1 + ahead])
                for k, make in enumerate(readers)
            ]
        if src.cycle_length <= 1:
            merged = _chain_files(readers)
        else:
            merged = _interleave_lists(readers, src.cycle_length, src.block_length)
        if spans:
            merged = _read_ahead_when_big(merged)
        return merged if lists else _flatten_lists(merged)

    def block_size(self) -> int:
        """Read block per open file: 1 MiB, shared out when several files are open at once."""
        if self.buffer_size is not None:
            return self.buffer_size
        return max(_MIN_BLOCK, READ_BLOCK_SIZE // max(1, self.cycle_length))

    def _read_file(
        self, path: str, f: int, n_files: int, n: int, i: int, spans: bool = False
    ) -> Iterator[Sequence[bytes]]:
        if n == 1:
            return self._stream(path, spans)
        # Records r with r * F + f == i (mod n): r == r0 (mod n / gcd(F, n)), or none at all.
        g = math.gcd(n_files, n)
        d = (i - f) % n
        if d % g:
            return iter(())  # no record of this file is in this shard
        step = n // g
        r0 = ((d // g) * pow(n_files // g, -1, step)) % step if step > 1 else 0
        if step > 1 and self.compression in ("", "auto") and not self.windows:
            index_path = find_index(path)
            if index_path is not None:
                return self._read_indexed(path, index_path, r0, step)
        return _every_list(self._stream(path, spans), r0, step)

    def _stream(self, path: str, spans: bool = False) -> Iterator[Sequence[bytes]]:
        """The file's records (CRCs checked, errors raised), a list (or spans) at a time."""
        lists = read_batches(
            fs.bind(path, None),
            reader_compression(self.compression),
            self.verify,
            self.block_size(),
            "raise",
            None,
            None,
            spans,
            grow=spans and self.buffer_size is None,
        )
        window = self.windows.get(path) if self.windows else None
        if window is None:
            return lists
        return _window_list(lists, window[0], window[1])

    def _read_indexed(
        self, path: str, index_path: str, start: int, step: int
    ) -> Iterator[Sequence[bytes]]:
        """Records ``start::step`` of a file with an index: read only those (one pread each)."""
        from .._files import RandomAccessError, StaleIndexError, TFRecordFile

        try:
            f = TFRecordFile(path, index_path, compression=self.compression, verify=self.verify)
        except RandomAccessError:  # compressed: stream it
            yield from _every_list(self._stream(path), start, step)
            return
        except StaleIndexError as err:
            warnings.warn(f"{err}; reading {path!r} without it", RuntimeWarning, stacklevel=2)
            yield from _every_list(self._stream(path), start, step)
            return
        try:
            n = len(f)
            chunk = 256 * step
            for first in range(start, n, chunk):
                yield f.get_many(range(first, min(n, first + chunk), step))
        finally:
            f.close()


#: Records this big on average are read ahead in a background thread while the
#: parser works: reading and checking the CRC of a big record release the GIL.
_AHEAD_FROM = 16 << 10


def _read_ahead_when_big(lists: Iterator[Sequence[bytes]]) -> Iterator[Sequence[bytes]]:
    """The lists, in order; once they prove to hold big records (spans of at least
    :data:`_AHEAD_FROM` bytes a record), the rest are read in a background thread,
    two blocks ahead of the parser. Closing it closes ``lists``."""
    handed = False
    try:
        for lst in lists:
            yield lst
            if isinstance(lst, RecordSpans) and lst.nbytes >= len(lst) * _AHEAD_FROM:
                break
        else:
            return
        handed = True  # the thread reads (and finally closes) ``lists`` from here on
        yield from _prefetch(lambda: lists, 2)
    finally:
        if not handed:
            _close(lists)


def _warming(make: Callable[[], Iterator[_T]], upcoming: list[str]) -> Iterator[_T]:
    """Open a file's reader, and start fetching the files that follow it (URLs)."""
    fs.prefetch(upcoming)
    return make()


def _close(it: object) -> None:
    """Close a generator (its ``finally`` blocks run now: files close, threads stop)."""
    close = getattr(it, "close", None)
    if close is not None:
        close()


def _window_list(
    lists: Iterator[Sequence[bytes]], skip: int, take: int
) -> Iterator[Sequence[bytes]]:
    """Records ``skip .. skip + take - 1`` of a file read as lists (stops reading after them)."""
    start, stop = skip, skip + take
    base = 0  # the file index of the first record of ``lst``
    try:
        if take <= 0:
            return
        for lst in lists:
            end = base + len(lst)
            if end > start:
                yield lst[max(0, start - base) : stop - base]
            if end >= stop:
                return
            base = end
    finally:
        _close(lists)


def _every_list(
    lists: Iterator[Sequence[bytes]], start: int, step: int
) -> Iterator[Sequence[bytes]]:
    """Records ``start::step`` of a file read as lists."""
    base = 0  # the file index of the first record of ``lst``
    try:
        for lst in lists:
            first = start - base if base <= start else (start - base) % step
            if first < len(lst):
                yield lst[first::step]
            base += len(lst)
    finally:
        _close(lists)


def _flatten_lists(lists: Iterator[Sequence[_T]]) -> Iterator[_T]:
    """The items of each list in turn; closing it closes ``lists``."""
    try:
        for lst in lists:
            yield from lst
    finally:
        _close(lists)


def _every(records: Iterator[bytes], start: int, step: int) -> Iterator[bytes]:
    try:
        yield from itertools.islice(records, start, None, step)
    finally:
        _close(records)


def _mapped(fn: Callable[[Any], Any], items: Iterator[Any]) -> Iterator[Any]:
    try:
        for x in items:
            yield fn(x)
    finally:
        _close(items)


def _kept(
    pred: Callable[[Any], Any], items: Iterator[Any], features: Optional[Mapping[str, Any]]
) -> Iterator[Any]:
    try:
        if features is None:
            for x in items:
                if pred(x):
                    yield x
        else:
            from .._examples import parse_single_example

            for x in items:
                if pred(parse_single_example(x, features)):
                    yield x
    finally:
        _close(items)


def _chain_files(readers: list[Callable[[], Iterator[_T]]]) -> Iterator[_T]:
    for make in readers:
        it = make()
        try:
            yield from it
        finally:
            _close(it)


#: Marks the end of an iterator in ``next(it, _EXHAUSTED)``.
_EXHAUSTED = object()


def _interleave(
    readers: Iterable[Callable[[], Iterator[Any]]], cycle_length: int, block_length: int
) -> Iterator[Any]:
    """tf.data's deterministic interleave: ``cycle_length`` files open, ``block_length`` records each in turn."""
    pending = iter(readers)
    slots: list[Optional[Iterator[Any]]] = [None] * cycle_length
    exhausted_input = False
    try:
        while True:
            active = False
            for s in range(cycle_length):
                it = slots[s]
                if it is None and not exhausted_input:
                    make = next(pending, None)
                    if make is None:
                        exhausted_input = True
                    else:
                        it = slots[s] = make()
                if it is None:
                    continue
                active = True
                if block_length == 1:
                    record = next(it, _EXHAUSTED)
                    if record is not _EXHAUSTED:
                        yield record
                        continue
                else:
                    taken = 0
                    for taken, record in enumerate(itertools.islice(it, block_length), 1):  # noqa: B007
                        yield record
                    if taken == block_length:
                        continue
                _close(it)  # this file is done: its slot takes the next file on its turn
                slots[s] = None
            if not active and exhausted_input:
                return
    finally:
        for it in slots:
            _close(it)


def _interleave_lists(
    readers: Iterable[Callable[[], Iterator[Sequence[_T]]]], cycle_length: int, block_length: int
) -> Iterator[list[_T]]:
    """:func:`_interleave` of files that hand out their records in lists, as lists.

    The records come out in exactly :func:`_interleave`'s order (over the
    flattened files), and each file is opened, read and closed at the same point
    of that order: a file's next list is fetched only when its turn needs a
    record its current list does not have. An error from a file is raised
    after every record before it (those gathered so far are handed out first).

    Rounds in which every open file still holds records in its current list
    (the usual case) are merged with slice arithmetic: for ``block_length`` 1,
    ``m`` rounds over ``k`` files put file ``j``'s next ``m`` records at
    positions ``j, j + k, j + 2k, ...`` of the output. Memory: one list per
    open file, plus the output list.
    """
    pending = iter(readers)
    its: list[Optional[Iterator[Sequence[_T]]]] = [None] * cycle_length
    bufs: list[Sequence[_T]] = [[] for _ in range(cycle_length)]
    pos = [0] * cycle_length
    exhausted_input = False
    out: list[_T] = []
    try:
        while True:
            out = []
            if block_length == 1 and (exhausted_input or None not in its):
                # Whole rounds: every open file's turn is served from its list.
                live = [s for s in range(cycle_length) if its[s] is not None]
                m = min((len(bufs[s]) - pos[s] for s in live), default=0)
                if m > 0:
                    k = len(live)
                    out = [None] * (m * k)  # type: ignore[list-item]
                    for j, s in enumerate(live):
                        p = pos[s]
                        out[j::k] = bufs[s][p : p + m]
                        pos[s] = p + m
            # One round record by record, fetching lists and opening files as needed.
            active = False
            for s in range(cycle_length):
                it = its[s]
                if it is None and not exhausted_input:
                    make = next(pending, None)
                    if make is None:
                        exhausted_input = True
                    else:
                        try:
                            it = its[s] = make()
                        except BaseException:
                            if out:
                                yield out
                            raise
                        bufs[s], pos[s] = [], 0
                if it is None:
                    continue
                active = True
                need = block_length
                while need:
                    buf, p = bufs[s], pos[s]
                    if p == len(buf):
                        try:
                            nxt = next(it, None)
                        except BaseException:
                            if out:
                                yield out
                            raise
                        if nxt is None:
                            break
                        bufs[s], pos[s] = nxt, 0
                        continue
                    take = min(need, len(buf) - p)
                    if take == 1:
                        out.append(buf[p])
                    else:
                        out.extend(buf[p : p + take])
                    pos[s] = p + take
                    need -= take
                if need:  # this file is done: its slot takes the next file on its turn
                    its[s] = None
                    bufs[s], pos[s] = [], 0
                    _close(it)
            if out:
                yield out
            if not active and exhausted_input:
                return
    finally:
        for it in its:
            _close(it)


# --------------------------------------------------------------------------- element ops


class _Op:
    """One transformation: builds its output iterator from the upstream's."""

    #: Ops that do not look at elements: ``parse`` may move across them (see _plan).
    transparent = False

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        raise NotImplementedError

    def cardinality(self, n: int) -> int:
        """The number of elements out, given ``n`` in (one element per element by default)."""
        return n

    def describe(self) -> str:
        return type(self).__name__.strip("_").lower()


class _Parse(_Op):
    def __init__(self, features: Mapping[str, Any]) -> None:
        self.features = features

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        from .._examples import parse_stream

        # A list is a batch of raw records (``batch(n).parse(f)``): parsed as
        # ``parse_example`` would, consecutive batches extracted in large chunks.
        return parse_stream(upstream(key), self.features)

    def describe(self) -> str:
        return f"parse({sorted(self.features)})"


class _ParseSequence(_Op):
    def __init__(self, plan: Any) -> None:
        self.plan = plan  # a compiled SequencePlan

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        from .._examples import parse_sequence_stream

        # A batch (``batch(n).parse_sequence(...)``) is parsed as
        # ``parse_sequence_example`` would, consecutive batches extracted in large chunks.
        return parse_sequence_stream(upstream(key), self.plan)

    def describe(self) -> str:
        return f"parse_sequence({sorted(self.plan.context)}, {sorted(self.plan.sequence)})"


class _Map(_Op):
    def __init__(self, fn: Callable[..., Any], num_parallel_calls: int) -> None:
        self.fn = _unpacking(fn)
        self.name = getattr(fn, "__name__", "fn")
        self.workers = num_parallel_calls

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        if self.workers <= 1:
            return _mapped(self.fn, upstream(key))
        return _parallel_map(self.fn, upstream(key), self.workers)

    def describe(self) -> str:
        return f"map({self.name})"


def _parallel_map(fn: Callable[[Any], Any], items: Iterator[Any], workers: int) -> Iterator[Any]:
    """``map`` on a thread pool, in order, with at most ``2 * workers`` calls in flight."""
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tfrecord_lite-map")
    inflight: deque[Future[Any]] = deque()
    try:
        for x in items:
            inflight.append(pool.submit(fn, x))
            if len(inflight) >= 2 * workers:
                yield inflight.popleft().result()
        while inflight:
            yield inflight.popleft().result()
    finally:
        for fut in inflight:
            fut.cancel()
        pool.shutdown(wait=True)
        _close(items)


class _Filter(_Op):
    def __init__(
        self, predicate: Callable[[Any], Any], features: Optional[Mapping[str, Any]] = None
    ) -> None:
        self.predicate = predicate
        self.features = features  # set when planning moved a parse past this filter

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return _kept(_unpacking(self.predicate), upstream(key), self.features)

    def cardinality(self, n: int) -> int:
        return UNKNOWN_CARDINALITY


class _Shuffle(_Op):
    transparent = True

    def __init__(self, buffer_size: int, entropy: int, reshuffle: bool) -> None:
        self.buffer_size = buffer_size
        self.entropy = entropy
        self.reshuffle = reshuffle

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        rng = _rng(self.entropy, 0, key, self.reshuffle)
        return _shuffle(upstream(key), self.buffer_size, rng)

    def describe(self) -> str:
        return f"shuffle({self.buffer_size})"


def _shuffle(items: Iterator[Any], buffer_size: int, rng: np.random.Generator) -> Iterator[Any]:
    """tf.data's shuffle buffer: memory is ``buffer_size`` elements, whatever the input's size.

    Fill the buffer; then for each new element, emit a uniformly chosen buffered one
    and put the new one in its place; at the end emit the rest in random order.
    """
    try:
        buf = list(itertools.islice(items, buffer_size))
        if len(buf) == buffer_size:
            picks: Iterator[int] = iter(())
            for x in items:
                j = next(picks, -1)
                if j < 0:
                    picks = iter(rng.integers(0, buffer_size, size=4096).tolist())
                    j = next(picks)
                out = buf[j]
                buf[j] = x
                yield out
        for j in rng.permutation(len(buf)).tolist():
            out = buf[j]
            buf[j] = None
            yield out
    finally:
        _close(items)


class _Batch(_Op):
    #: Set when the upstream hands out the files' records a list at a time
    #: (the batch follows the source directly): batches are cut from those lists.
    takes_lists = False

    def __init__(self, batch_size: int, drop_remainder: bool, ragged: str = "auto") -> None:
        self.batch_size = batch_size
        self.drop_remainder = drop_remainder
        self.ragged = ragged

    def cardinality(self, n: int) -> int:
        return _batch_cardinality(n, self.batch_size, self.drop_remainder)

    def batches(self, items: Iterator[Any]) -> Iterator[Sequence[Any]]:
        if self.takes_lists:
            return _rebatched(items, self.batch_size, self.drop_remainder)
        return _chunks(items, self.batch_size, self.drop_remainder)

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return _mapped(functools.partial(collate, ragged=self.ragged), self.batches(upstream(key)))

    def describe(self) -> str:
        return f"batch({self.batch_size}, drop_remainder={self.drop_remainder})"


def _chunks(items: Iterator[_T], n: int, drop_remainder: bool = False) -> Iterator[list[_T]]:
    """Lists of ``n`` items in order (the last one shorter unless ``drop_remainder``);
    closing it closes ``items``."""
    try:
        while True:
            chunk = list(itertools.islice(items, n))
            if not chunk or (len(chunk) < n and drop_remainder):
                return
            yield chunk
            if len(chunk) < n:
                return
    finally:
        _close(items)


def _rebatched(
    lists: Iterator[Sequence[_T]], n: int, drop_remainder: bool
) -> Iterator[Sequence[_T]]:
    """Batches of ``n`` items cut from lists of any length, in order (the last one
    shorter unless ``drop_remainder``); closing it closes ``lists``. Lists give
    lists; :class:`~tfrecord_lite._record._scan.RecordSpans` give spans."""
    try:
        pieces: list[Sequence[_T]] = []  # the next batch so far
        have = 0
        for lst in lists:
            i = 0
            if have:
                i = n - have
                pieces.append(lst[:i])
                have += len(pieces[-1])
                if have < n:
                    continue
                yield _concatenated(pieces)
                pieces, have = [], 0
            end = len(lst) - n
            while i <= end:
                yield lst[i : i + n]
                i += n
            if i < len(lst):
                pieces, have = [lst[i:]], len(lst) - i
        if have and not drop_remainder:
            yield _concatenated(pieces)
    finally:
        _close(lists)


def _concatenated(pieces: list[Sequence[_T]]) -> Sequence[_T]:
    """The items of ``pieces`` as one list (or as one ``RecordSpans``, if all are)."""
    if len(pieces) == 1:
        return pieces[0]
    if all(isinstance(p, RecordSpans) for p in pieces):
        return cast("Sequence[_T]", RecordSpans.join(cast("list[RecordSpans]", pieces)))
    return [x for p in pieces for x in p]


class _RawBatch(_Batch):
    """``batch`` straight after the source: lists of the records' bytes."""

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return self.batches(upstream(key))


class _ParseBatch(_Batch):
    """``parse(features).batch(n)``: batch the raw records, then one ``parse_example`` per batch."""

    def __init__(self, batch_size: int, drop_remainder: bool, features: Mapping[str, Any]) -> None:
        super().__init__(batch_size, drop_remainder)
        self.features = features

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        from .._examples import parse_batches

        # Each batch comes out as ``parse_example`` returns it; the records of
        # several batches are extracted at once (see ``parse_batches``).
        return parse_batches(self.batches(upstream(key)), self.features)

    def describe(self) -> str:
        return f"parse({sorted(self.features)}).batch({self.batch_size})"


class _Take(_Op):
    transparent = True

    def __init__(self, count: int) -> None:
        self.count = count

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return _closing_slice(upstream(key), 0, None if self.count < 0 else self.count)

    def cardinality(self, n: int) -> int:
        if self.count < 0:
            return n
        if n == INFINITE_CARDINALITY:
            return self.count
        return n if n == UNKNOWN_CARDINALITY else min(n, self.count)


class _Skip(_Op):
    transparent = True

    def __init__(self, count: int) -> None:
        self.count = count

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        if self.count < 0:  # tf.data: skip(-1) skips everything
            return _closing_slice(upstream(key), 0, 0)
        return _closing_slice(upstream(key), self.count, None)

    def cardinality(self, n: int) -> int:
        if self.count < 0:
            return 0 if n != INFINITE_CARDINALITY else n
        return n if n < 0 else max(0, n - self.count)


def _closing_slice(items: Iterator[Any], start: int, stop: Optional[int]) -> Iterator[Any]:
    try:
        yield from itertools.islice(items, start, stop)
    finally:
        _close(items)


class _Repeat(_Op):
    transparent = True

    def __init__(self, count: Optional[int]) -> None:
        self.count = count

    def cardinality(self, n: int) -> int:
        if self.count is None:
            return 0 if n == 0 else INFINITE_CARDINALITY
        if self.count == 0:
            return 0
        return n if n < 0 else n * self.count

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        reps = itertools.count() if self.count is None else range(self.count)
        for rep in reps:
            it = upstream((*key, rep))
            empty = True
            try:
                for x in it:
                    empty = False
                    yield x
            finally:
                _close(it)
            if empty:  # repeating nothing forever would hang
                return


class _Prefetch(_Op):
    transparent = True

    def __init__(self, size: int) -> None:
        self.size = size

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return _prefetch(lambda: upstream(key), self.size)

    def describe(self) -> str:
        return f"prefetch({self.size})"


# --------------------------------------------------------------------------- generic sources


class _Slices:
    """``Dataset.from_tensor_slices``: the rows of columns (arrays, or lists of objects)."""

    def __init__(self, tensors: Any) -> None:
        leaves: list[Any] = []
        self.structure = _flatten_structure(tensors, leaves)
        columns = [_as_column(x) for x in leaves]
        lengths = {len(c) for c in columns}
        if len(lengths) > 1:
            raise ValueError(
                "from_tensor_slices needs components with the same first dimension, "
                f"got lengths {sorted(len(c) for c in columns)}"
            )
        self.columns = columns
        self.length = lengths.pop() if lengths else 0

    def copy(self, **changes: Any) -> _Slices:  # nothing to change: a list is a list
        return self

    def cardinality(self) -> int:
        return self.length

    def describe(self) -> str:
        return f"Dataset.from_tensor_slices(<{self.length} elements>)"

    def iterate(
        self, key: EpochKey, extra_shards: tuple[tuple[int, int, str], ...] = ()
    ) -> Iterator[Any]:
        rows: Sequence[int] = range(self.length)
        for n, i, _ in extra_shards:  # DataLoader workers / ranks: disjoint slices
            rows = rows[i::n]
        columns, structure = self.columns, self.structure
        for j in rows:
            yield _rebuild_structure(structure, iter([c[j] for c in columns]))


def _flatten_structure(x: Any, leaves: list[Any]) -> Any:
    """A tuple / dict nest with its leaves replaced by None (and appended to ``leaves``)."""
    if isinstance(x, Mapping):
        return {k: _flatten_structure(v, leaves) for k, v in x.items()}
    if type(x) is tuple:
        return tuple(_flatten_structure(v, leaves) for v in x)
    leaves.append(x)
    return None


def _rebuild_structure(structure: Any, leaves: Iterator[Any]) -> Any:
    if isinstance(structure, dict):
        return {k: _rebuild_structure(v, leaves) for k, v in structure.items()}
    if isinstance(structure, tuple):
        return tuple(_rebuild_structure(v, leaves) for v in structure)
    return next(leaves)


def _as_column(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        if x.ndim == 0:
            raise ValueError(
                "from_tensor_slices needs components with a first dimension, got a scalar"
            )
        return x
    if isinstance(x, (list, range)) and all(isinstance(v, (str, bytes, os.PathLike)) for v in x):
        # Strings stay Python objects (np.asarray would cut trailing NUL bytes).
        return [os.fspath(v) if isinstance(v, os.PathLike) else v for v in x]
    if isinstance(x, (str, bytes)):
        raise ValueError("from_tensor_slices needs components with a first dimension, got a string")
    arr = np.asarray(x)
    if arr.ndim == 0:
        raise ValueError(f"from_tensor_slices needs components with a first dimension, got {x!r}")
    if arr.dtype.kind == "O" and isinstance(x, list):
        return list(x)
    return arr


def _unpacking(fn: Callable[..., Any]) -> Callable[[Any], Any]:
    """tf.data calls a function on a tuple element with the tuple's components."""

    def call(x: Any) -> Any:
        return fn(*x) if type(x) is tuple else fn(x)

    return call


class _PaddedBatch(_Op):
    def __init__(self, batch_size: int, drop_remainder: bool, shapes: Any, values: Any) -> None:
        self.batch_size = batch_size
        self.drop_remainder = drop_remainder
        self.shapes = shapes
        self.values = values

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        chunks = _chunks(upstream(key), self.batch_size, self.drop_remainder)
        return _mapped(lambda c: _pad_collate(c, self.shapes, self.values, ""), chunks)

    def cardinality(self, n: int) -> int:
        return _batch_cardinality(n, self.batch_size, self.drop_remainder)

    def describe(self) -> str:
        return f"padded_batch({self.batch_size})"


def _pad_collate(items: Sequence[Any], shapes: Any, values: Any, path: str) -> Any:
    first = items[0]
    if isinstance(first, Mapping):
        keys = list(first)
        for x in items:
            if not isinstance(x, Mapping) or list(x) != keys:
                raise ValueError(f"padded_batch: elements have different keys at {path or 'top'}")
        return {
            k: _pad_collate(
                [x[k] for x in items],
                _sub(shapes, k),
                _sub(values, k),
                f"{path}[{k!r}]",
            )
            for k in keys
        }
    if type(first) is tuple:
        return tuple(
            _pad_collate([x[j] for x in items], _sub(shapes, j), _sub(values, j), f"{path}[{j}]")
            for j in range(len(first))
        )
    arrays = [
        np.asarray(x, dtype=object) if isinstance(x, (bytes, str)) else np.asarray(x) for x in items
    ]
    ndim = arrays[0].ndim
    where = f" {path}" if path else ""
    if any(a.ndim != ndim for a in arrays):
        raise ValueError(
            f"padded_batch: component{where} has elements of different ranks: "
            f"{sorted({a.shape for a in arrays})}"
        )
    target = [max(a.shape[d] for a in arrays) for d in range(ndim)]
    if shapes is not None:
        want = list(np.atleast_1d(np.asarray(shapes, dtype=object))) if ndim else []
        if len(want) != ndim:
            raise ValueError(
                f"padded_batch: padded shape {shapes} of component{where} has rank "
                f"{len(want)}, its elements have rank {ndim}"
            )
        for d, w in enumerate(want):
            if w is not None and int(w) >= 0:
                if target[d] > int(w):
                    raise ValueError(
                        f"padded_batch: component{where} has an element of shape "
                        f"{max(arrays, key=lambda a: a.shape[d]).shape}, larger than its "
                        f"padded shape {list(shapes)} in dimension {d}"
                    )
                target[d] = int(w)
    dtype = np.result_type(*arrays) if arrays[0].dtype != object else np.dtype(object)
    if values is None:
        pad: Any = b"" if dtype.kind in "OSU" else 0
    else:
        pad = values
    out = np.full((len(arrays), *target), pad, dtype=dtype)
    for b, a in enumerate(arrays):
        index: tuple[Any, ...] = (b, *(slice(0, s) for s in a.shape))
        out[index] = a
    return out


def _sub(spec: Any, k: Any) -> Any:
    """The part of a padded_shapes / padding_values structure for key or position ``k``."""
    if isinstance(spec, Mapping):
        return spec.get(k)
    if type(spec) is tuple:
        return spec[k]
    return spec if not isinstance(spec, (list, np.ndarray)) else None


class _Unbatch(_Op):
    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return _unbatched(upstream(key))

    def cardinality(self, n: int) -> int:
        return n if n == INFINITE_CARDINALITY else UNKNOWN_CARDINALITY


def _unbatched(items: Iterator[Any]) -> Iterator[Any]:
    try:
        for x in items:
            yield from _rows(x, "")
    finally:
        _close(items)


def _rows(x: Any, path: str) -> list[Any]:
    """The rows of a batch (its slices along the first dimension)."""
    from .._examples import RaggedValue, SparseValue

    if isinstance(x, Mapping):
        cols = {k: _rows(v, f"{path}[{k!r}]") for k, v in x.items()}
        n = _same_length(cols.values(), path)
        return [{k: c[j] for k, c in cols.items()} for j in range(n)]
    if type(x) is tuple:
        parts = [_rows(v, f"{path}[{j}]") for j, v in enumerate(x)]
        n = _same_length(parts, path)
        return [tuple(p[j] for p in parts) for j in range(n)]
    if isinstance(x, list):
        return list(x)
    if isinstance(x, RaggedValue):
        return [x[j] for j in range(len(x))]
    if isinstance(x, SparseValue):
        idx = np.asarray(x.indices).reshape(len(x.indices), -1)
        vals = np.asarray(x.values)
        shape = np.asarray(x.dense_shape, dtype=np.int64)
        out = []
        for j in range(int(shape[0])):
            keep = idx[:, 0] == j
            out.append(SparseValue(idx[keep, 1:], vals[keep], shape[1:].copy()))
        return out
    arr = np.asarray(x)
    if arr.ndim == 0:
        raise ValueError(f"unbatch: component{' ' + path if path else ''} is a scalar, not a batch")
    return list(arr)


def _same_length(parts: Any, path: str) -> int:
    lengths = {len(p) for p in parts}
    if len(lengths) > 1:
        raise ValueError(
            f"unbatch: the components of {path or 'the element'} have different batch sizes {sorted(lengths)}"
        )
    return lengths.pop() if lengths else 0


class _Enumerate(_Op):
    def __init__(self, start: int) -> None:
        self.start = start

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return _enumerated(upstream(key), self.start)


def _enumerated(items: Iterator[Any], start: int) -> Iterator[Any]:
    try:
        for i, x in enumerate(items, start):
            yield (np.int64(i), x)
    finally:
        _close(items)


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

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return self.cached(upstream, key, (None, ()))

    def cached(self, upstream: Upstream, key: EpochKey, which: Any) -> Iterator[Any]:
        if self.filename:
            path = _cache_path(self.filename, *which)
            if os.path.exists(path):
                return _read_cache_file(path)
            return _write_cache_file(upstream(key), path)
        with self._lock:
            done = self._done.get(which)
        if done is not None:
            return iter(done)
        return self._fill(upstream(key), which)

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


class _Interleave(_Op):
    def __init__(self, fn: Callable[..., Any], cycle: int, block: int, workers: int) -> None:
        self.fn = _unpacking(fn)
        self.cycle = cycle
        self.block = block
        self.workers = workers

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        fn, workers = self.fn, self.workers

        def open_one(x: Any) -> Iterator[Any]:
            ds = fn(x)
            if not isinstance(ds, Dataset):
                raise TypeError(
                    f"interleave's map_func must return a Dataset, got {type(ds).__name__}"
                )
            if workers > 0:
                return _flatten_lists(
                    _prefetch(lambda: _chunks(ds._iterate(key), _READ_AHEAD_CHUNK), 2)
                )
            return ds._iterate(key)

        items = upstream(key)
        readers = (functools.partial(open_one, x) for x in items)
        return _closing_after(_interleave(readers, self.cycle, self.block), items)

    def cardinality(self, n: int) -> int:
        return UNKNOWN_CARDINALITY

    def describe(self) -> str:
        return f"interleave(cycle_length={self.cycle}, block_length={self.block})"


#: Elements a read-ahead thread of ``interleave(num_parallel_calls=...)`` hands over at once.
_READ_AHEAD_CHUNK = 64


def _closing_after(items: Iterator[Any], other: Iterator[Any]) -> Iterator[Any]:
    try:
        yield from items
    finally:
        _close(items)
        _close(other)


class _ElementShard(_Op):
    """tf.data's ``shard`` on elements: every ``n``-th from ``i``."""

    def __init__(self, n: int, i: int) -> None:
        self.n = n
        self.i = i

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return _every(upstream(key), self.i, self.n)

    def cardinality(self, n: int) -> int:
        if n < 0:
            return n
        return n // self.n + (1 if self.i < n % self.n else 0)

    def describe(self) -> str:
        return f"shard({self.n}, {self.i})"


def _batch_cardinality(n: int, size: int, drop: bool) -> int:
    if n < 0:
        return n
    return n // size if drop else -(-n // size)


# --------------------------------------------------------------------------- cache files

#: The first record of a ``cache(filename)`` file.
_CACHE_MAGIC = b"tfrecord_lite cache v1"
_U32 = struct.Struct("<I")


def _encode_element(x: Any) -> bytes:
    """One element as a record: a JSON description, then its raw buffers (no pickle)."""
    blobs: list[bytes] = []
    meta = _describe_value(x, blobs)
    head = json.dumps({"m": meta, "L": [len(b) for b in blobs]}, separators=(",", ":")).encode()
    return b"".join([_U32.pack(len(head)), head, *blobs])


def _describe_value(x: Any, blobs: list[bytes]) -> Any:
    from .._examples import RaggedValue, SparseValue

    def blob(data: bytes) -> int:
        blobs.append(data)
        return len(blobs) - 1

    if isinstance(x, dict):
        if not all(isinstance(k, str) for k in x):
            raise TypeError("cache(filename) needs dicts with str keys")
        return {"d": [[k, _describe_value(v, blobs)] for k, v in x.items()]}
    if type(x) is tuple:
        return {"t": [_describe_value(v, blobs) for v in x]}
    if isinstance(x, list):
        return {"l": [_describe_value(v, blobs) for v in x]}
    if isinstance(x, SparseValue):
        return {"sp": [_describe_value(np.asarray(v), blobs) for v in x]}
    if isinstance(x, RaggedValue):
        return {
            "r": [_describe_value(x.values, blobs), _describe_value(x.row_splits, blobs)],
            "u": x.uniform_row_length,
        }
    if isinstance(x, (np.ndarray, np.generic)):
        arr = np.asarray(x)
        if arr.dtype.kind == "O":
            return {"o": [_describe_value(v, blobs) for v in arr.ravel()], "s": list(arr.shape)}
        kind = "a" if isinstance(x, np.ndarray) else "g"
        return {
            kind: blob(np.ascontiguousarray(arr).tobytes()),
            "dt": arr.dtype.str,
            "s": list(arr.shape),
        }
    if isinstance(x, (bytes, bytearray, memoryview)):
        return {"b": blob(bytes(x))}
    if isinstance(x, str):
        return {"u": blob(x.encode())}
    if isinstance(x, bool):
        return {"z": x}
    if isinstance(x, int):
        return {"i": str(x)}
    if isinstance(x, float):
        return {"f": x.hex()}
    if x is None:
        return {"n": 0}
    raise TypeError(
        f"cache(filename) cannot store a {type(x).__name__}; use cache() to keep it in memory"
    )


def _decode_element(record: bytes, path: str) -> Any:
    try:
        (n,) = _U32.unpack_from(record, 0)
        head = json.loads(record[4 : 4 + n])
        pos = 4 + n
        blobs = []
        for length in head["L"]:
            if length < 0 or pos + length > len(record):
                raise ValueError("a buffer runs past the end of its record")
            blobs.append(record[pos : pos + length])
            pos += length
        return _rebuild_value(head["m"], blobs)
    except (ValueError, TypeError, KeyError, IndexError, struct.error) as err:
        raise ValueError(
            f"{path!r} is not a cache file this version wrote, or it is damaged ({err}); "
            "delete it to rebuild the cache"
        ) from None


def _rebuild_value(m: Any, blobs: list[bytes]) -> Any:
    from .._examples import RaggedValue, SparseValue

    if "d" in m:
        return {str(k): _rebuild_value(v, blobs) for k, v in m["d"]}
    if "t" in m:
        return tuple(_rebuild_value(v, blobs) for v in m["t"])
    if "l" in m:
        return [_rebuild_value(v, blobs) for v in m["l"]]
    if "sp" in m:
        return SparseValue(*(_rebuild_value(v, blobs) for v in m["sp"]))
    if "r" in m:
        values, splits = (_rebuild_value(v, blobs) for v in m["r"])
        return RaggedValue(values, splits, m["u"])
    if "o" in m:
        out = np.empty(len(m["o"]), dtype=object)
        out[:] = [_rebuild_value(v, blobs) for v in m["o"]]
        return out.reshape([int(d) for d in m["s"]])
    if "a" in m or "g" in m:
        dtype = np.dtype(m["dt"])
        if dtype.kind == "O" or dtype.hasobject:
            raise ValueError("object dtype in a cache file")
        arr = np.frombuffer(blobs[int(m["a"] if "a" in m else m["g"])], dtype=dtype).copy()
        arr = arr.reshape([int(d) for d in m["s"]])
        return arr if "a" in m else arr[()]
    if "b" in m:
        return blobs[int(m["b"])]
    if "u" in m:
        return blobs[int(m["u"])].decode()
    if "z" in m:
        return bool(m["z"])
    if "i" in m:
        return int(m["i"])
    if "f" in m:
        return float.fromhex(m["f"])
    if "n" in m:
        return None
    raise ValueError(f"unknown value kind {sorted(m)}")


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


# --------------------------------------------------------------------------- prefetch


#: The name of a thread that runs a pipeline ahead of its reader.
PREFETCH_THREAD = "tfrecord_lite-prefetch"


def _prefetch(make: Callable[[], Iterator[Any]], size: int) -> Iterator[Any]:
    """``make()``'s items, run in a thread at most ``size`` items ahead of the reader."""
    ahead: ReadAhead[Any] = ReadAhead(
        make,
        size,
        name=PREFETCH_THREAD,
        what="this prefetching iterator",
        again="iterate the dataset again in this process",
        close_timeout=_JOIN_TIMEOUT,
    )
    try:
        yield from ahead
    finally:
        ahead.close()


# --------------------------------------------------------------------------- collate


def _is_plain_tuple(x: Any) -> bool:
    return type(x) is tuple


#: How ``batch`` / :func:`collate` treat elements whose shapes differ.
_RAGGED_MODES = ("auto", "error", "list")


def collate(items: Sequence[Any], ragged: str = "auto") -> Any:
    """Stack a list of elements into one batch, as ``batch()`` does after ``map``.

    * dicts (same keys) -> dict of batched values; tuples -> tuple of batched values
    * arrays and numbers of one shape -> ``np.stack`` (a new leading axis)
    * :class:`SparseValue` -> one SparseValue with a leading batch dimension, as
      ``parse_example`` returns for a ``VarLenFeature``
    * :class:`RaggedValue` -> a RaggedValue with one more ragged dimension
    * bytes, str and anything else -> a list

    Arrays whose shapes differ (``ragged``): with ``"auto"`` (default) arrays
    that differ only in their first dimension become a :class:`RaggedValue`
    (values + row_splits, as ``parse_example`` returns variable-length
    features) and any other difference raises ``ValueError`` naming the key and
    the shapes; ``"error"`` raises for any difference (tf.data's ``batch``);
    ``"list"`` returns a list of the values of that field instead. Dicts with
    different keys and tuples of different lengths raise too (a list with
    ``"list"``).
    """
    if ragged not in _RAGGED_MODES:
        raise ValueError(f"ragged must be one of {_RAGGED_MODES}, got {ragged!r}")
    return _collate(items, ragged, "")


def _collate(items: Sequence[Any], ragged: str, path: str) -> Any:
    from .._examples import RaggedValue, SparseValue

    if not items:
        return []
    first = items[0]
    if isinstance(first, dict):
        keys = list(first)
        for j, x in enumerate(items):
            if not (isinstance(x, dict) and len(x) == len(keys) and all(k in x for k in keys)):
                other = sorted(x) if isinstance(x, dict) else type(x).__name__
                return _mismatch(
                    items, ragged, path, f"element 0 has keys {sorted(keys)}, element {j} {other}"
                )
        return {k: _collate([x[k] for x in items], ragged, f"{path}[{k!r}]") for k in keys}
    if isinstance(first, SparseValue):
        if all(isinstance(x, SparseValue) for x in items):
            ndims = [len(x.dense_shape) for x in items]
            odd = next((j for j, d in enumerate(ndims) if d != ndims[0]), None)
            if odd is None:
                return _stack_sparse(items)
            return _mismatch(
                items,
                ragged,
                path,
                f"element 0 has rank {ndims[0]}, element {odd} rank {ndims[odd]}",
            )
        return _mismatch(items, ragged, path, "it mixes SparseValue and other values")
    if isinstance(first, RaggedValue):
        if all(isinstance(x, (RaggedValue, np.ndarray)) for x in items):
            return _stack_ragged(items)
        return _mismatch(items, ragged, path, "it mixes RaggedValue and other values")
    if _is_plain_tuple(first):
        for j, x in enumerate(items):
            if not (_is_plain_tuple(x) and len(x) == len(first)):
                size = len(x) if _is_plain_tuple(x) else type(x).__name__
                return _mismatch(
                    items, ragged, path, f"element 0 is a {len(first)}-tuple, element {j} {size}"
                )
        return tuple(
            _collate([x[j] for x in items], ragged, f"{path}[{j}]") for j in range(len(first))
        )
    numeric = (np.ndarray, np.generic, int, float, complex)
    if isinstance(first, numeric):
        if not all(isinstance(x, numeric) for x in items):
            return list(items)
        arrays = [np.asarray(x) for x in items]
        shape = arrays[0].shape
        odd = next((j for j, a in enumerate(arrays) if a.shape != shape), None)
        if odd is None:
            try:
                return np.stack(arrays)
            except (TypeError, ValueError):  # pragma: no cover - mixed incompatible dtypes
                return list(items)
        if ragged == "auto" and all(
            a.ndim >= 1 and a.ndim == arrays[0].ndim and a.shape[1:] == shape[1:] for a in arrays
        ):
            return _stack_ragged(arrays)
        return _mismatch(
            items,
            ragged,
            path,
            f"element 0 has shape {shape} and element {odd} has shape {arrays[odd].shape}",
        )
    return list(items)


def _mismatch(items: Sequence[Any], ragged: str, path: str, what: str) -> list[Any]:
    """A field whose elements cannot be stacked: a list if asked for, else an error."""
    if ragged == "list":
        return list(items)
    where = f"key {path}" if path.startswith("['") and path.count("[") == 1 else path
    raise ValueError(
        f"cannot batch {where or 'the elements'}: {what}. Make the shapes equal (e.g. in "
        "map()), pad them with padded_batch(), or get a list with batch(..., ragged='list')"
    )


def _stack_sparse(items: Sequence[Any]) -> Any:
    from .._examples import SparseValue

    ndim = len(items[0].dense_shape)
    parts = []
    for b, x in enumerate(items):
        idx = np.asarray(x.indices, dtype=np.int64).reshape(-1, ndim)
        parts.append(np.concatenate([np.full((len(idx), 1), b, dtype=np.int64), idx], axis=1))
    indices = np.concatenate(parts) if parts else np.zeros((0, ndim + 1), np.int64)
    values = np.concatenate([np.asarray(x.values) for x in items])
    dims = np.max(np.stack([np.asarray(x.dense_shape, dtype=np.int64) for x in items]), axis=0)
    dense_shape = np.concatenate([[len(items)], dims]).astype(np.int64)
    return SparseValue(indices, values, dense_shape)


def _stack_ragged(items: Sequence[Any]) -> Any:
    """Rows -> a RaggedValue whose row ``b`` is ``items[b]`` (arrays or RaggedValues)."""
    from .._examples import RaggedValue

    lengths = [len(x) for x in items]
    splits_dtype: Any = np.int64
    for x in items:
        if isinstance(x, RaggedValue):
            splits_dtype = x.row_splits.dtype
            break
    row_splits = np.concatenate([[0], np.cumsum(lengths)]).astype(splits_dtype)
    return RaggedValue(_concat_rows(items), row_splits)


def _concat_rows(items: Sequence[Any]) -> Any:
    """Concatenate arrays / RaggedValues along their first (row) dimension."""
    from .._examples import RaggedValue

    if all(isinstance(x, np.ndarray) for x in items):
        return np.concatenate(items) if items else np.zeros(0)
    if not all(isinstance(x, RaggedValue) for x in items):
        # Mixed plain arrays and RaggedValues: treat arrays as one ragged level.
        items = [x if isinstance(x, RaggedValue) else _as_ragged(x) for x in items]
    splits = []
    shift = 0
    for j, x in enumerate(items):
        s = np.asarray(x.row_splits)
        splits.append(s[:-1] + shift if j < len(items) - 1 else s + shift)
        shift += int(s[-1])
    row_splits = np.concatenate(splits).astype(items[0].row_splits.dtype)
    uniform = items[0].uniform_row_length
    if any(x.uniform_row_length != uniform for x in items):
        uniform = None
    return RaggedValue(_concat_rows([x.values for x in items]), row_splits, uniform)


def _as_ragged(x: np.ndarray) -> Any:
    from .._examples import RaggedValue

    rows = x.reshape(len(x), -1) if x.ndim >= 2 else x.reshape(-1, 1)
    width = rows.shape[1]
    return RaggedValue(rows.reshape(-1), np.arange(len(x) + 1, dtype=np.int64) * width, width)


# --------------------------------------------------------------------------- the dataset


def _plan(ops: Sequence[_Op], records: bool = True) -> list[_Op]:
    """Rewrite the chain for speed, without changing what it yields.

    ``parse(f)`` followed (through ops that do not look at elements: shuffle, take,
    skip, repeat, prefetch, and filters) by ``batch(n)`` becomes a raw batch and one
    ``parse_example`` call per batch. Filters in between parse their element for the
    predicate only. A ``batch`` with no parse or map before it gives lists of bytes.
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
            out[j] = _ParseBatch(op.batch_size, op.drop_remainder, parse.features)
            out[k] = None
        elif k < 0 and records:
            out[j] = _RawBatch(op.batch_size, op.drop_remainder)
    return [o for o in out if o is not None]


def _spec_mapping(name: str, specs: Any) -> None:
    """Raise ``TypeError`` unless ``specs`` (argument ``name``) maps keys to feature specs."""
    if not isinstance(specs, Mapping):
        raise TypeError(
            f"{name} must be a mapping of key -> feature spec, got {type(specs).__name__}"
        )


def _no_file_objects(files: Sequence[Any]) -> None:
    for f in files:
        if is_file_object(f):
            raise TypeError(
                "TFRecordDataset needs file paths (it reads the files again each epoch); "
                "use tfrecord_lite.TFRecordReader for an open file object"
            )


class Dataset:
    """A lazy, re-iterable pipeline of elements, as ``tf.data.Dataset``, yielding NumPy.

    Make one with :meth:`from_tensor_slices`, :meth:`list_files`, :meth:`range` or
    :class:`TFRecordDataset` (a ``Dataset`` of the records of TFRecord files), then
    chain transformations: each returns a new dataset, nothing runs until it is
    iterated, and every ``for`` over it is a new epoch (reshuffled when asked to).
    Elements are NumPy arrays and scalars, ``bytes``/``str``, and dicts and tuples
    of them.

    ``name=`` is accepted wherever tf.data takes it (it names the op in a
    TensorFlow graph; here it has no effect).
    """

    _source: Any
    _ops: tuple[_Op, ...]
    _epoch: int

    def __init__(self) -> None:
        raise TypeError(
            "make a Dataset with Dataset.from_tensor_slices(...), Dataset.list_files(...), "
            "Dataset.range(...) or TFRecordDataset(...)"
        )

    @classmethod
    def _of(cls, source: Any) -> Dataset:
        new = object.__new__(Dataset)
        new._source = source
        new._ops = ()
        new._epoch = 0
        return new

    # -- creating datasets

    @staticmethod
    def from_tensor_slices(tensors: Any, name: Optional[str] = None) -> Dataset:
        """The slices of ``tensors`` along their first dimension, one element each.

        ``tensors`` is an array (or anything ``np.asarray`` takes), a list of file
        names or other strings (kept as Python objects), or a dict or tuple of
        those, all of the same length: then each element is a dict / tuple of
        their slices, as tf.data's. ``Dataset.from_tensor_slices(files)`` followed by
        ``interleave(lambda f: TFRecordDataset(f), ...)`` reads files in parallel.
        """
        return Dataset._of(_Slices(tensors))

    @staticmethod
    def list_files(
        file_pattern: Union[str, os.PathLike[str], Sequence[Union[str, os.PathLike[str]]]],
        shuffle: Optional[bool] = None,
        seed: Optional[int] = None,
        name: Optional[str] = None,
    ) -> Dataset:
        """The file names matching ``file_pattern`` (a glob, or a list of globs), as ``str``.

        As tf.data: the names are sorted; ``shuffle`` (default ``True``) shuffles
        them, anew each epoch (reproducibly with ``seed``); a pattern that matches
        nothing raises ``FileNotFoundError`` ("No files matched pattern"). A
        directory, a shard spec ``name@N`` and URLs work as in
        :func:`~tfrecord_lite.expand_paths`.
        """
        patterns = [file_pattern] if isinstance(file_pattern, (str, os.PathLike)) else file_pattern
        names: list[str] = []
        for p in patterns:
            try:
                found = expand_paths(p)
            except FileNotFoundError:
                raise FileNotFoundError(f"No files matched pattern: {os.fspath(p)}") from None
            if not found:
                raise FileNotFoundError(f"No files matched pattern: {os.fspath(p)}")
            names.extend(os.fspath(f) for f in found)  # type: ignore[arg-type]
        names.sort()
        ds = Dataset.from_tensor_slices(names)
        if shuffle is None or shuffle:
            ds = ds.shuffle(max(1, len(names)), seed=seed)
        return ds

    @staticmethod
    def range(*args: int, dtype: Any = np.int64, name: Optional[str] = None) -> Dataset:
        """``range(stop)``, ``range(start, stop[, step])`` as NumPy scalars of ``dtype``."""
        return Dataset.from_tensor_slices(np.arange(*args, dtype=np.dtype(dtype)))

    # -- plumbing

    def _derive(self: _D, op: Optional[_Op] = None, **source_changes: Any) -> _D:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._source = self._source.copy(**source_changes) if source_changes else self._source
        new._ops = self._ops + ((op,) if op is not None else ())
        new._epoch = 0
        return new

    def _iterate(
        self, key: EpochKey, extra_shards: tuple[tuple[int, int, str], ...] = ()
    ) -> Iterator[Any]:
        source = self._source
        ops = _plan(self._ops, isinstance(source, _Source))

        first = ops[0] if ops else None
        lists = isinstance(source, _Source) and isinstance(first, (_RawBatch, _ParseBatch))
        if isinstance(first, (_RawBatch, _ParseBatch)) and lists:
            first.takes_lists = True  # cut the batches from the files' lists
        # Batches that only the parser sees are cut from the blocks read, uncopied.
        spans = isinstance(first, _ParseBatch) or (
            isinstance(first, _RawBatch)
            and lists
            and len(ops) > 1
            and isinstance(ops[1], (_Parse, _ParseSequence))
        )

        def build(level: int) -> Upstream:
            if level == 0:
                if lists:
                    return lambda k: source.iterate(k, extra_shards, lists=True, spans=spans)
                return lambda k: source.iterate(k, extra_shards)
            op = ops[level - 1]
            below = build(level - 1)
            if isinstance(op, _Cache):
                return lambda k: op.cached(below, k, (source, extra_shards))
            return lambda k: op.run(below, k)

        return build(len(ops))(key)

    def __iter__(self) -> _DatasetIterator:
        """A new epoch: every ``for`` reads the data again (and reshuffles if asked to)."""
        key = (self._epoch,)
        self._epoch += 1
        return _DatasetIterator(self._iterate(key))

    def iter_epoch(self, epoch: int) -> _DatasetIterator:
        """Iterate epoch ``epoch`` (its shuffle order depends on the seed and this number)."""
        return _DatasetIterator(self._iterate((_count("epoch", epoch),)))

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``for`` epoch number ``epoch`` (like ``DistributedSampler.set_epoch``)."""
        self._epoch = _count("epoch", epoch)

    def as_numpy_iterator(self) -> _DatasetIterator:
        """tf.data's name for iterating: elements are NumPy already."""
        return iter(self)

    def apply(self, transformation: Callable[[Any], Any]) -> Any:
        """``transformation(self)``, as tf.data's ``apply``."""
        return transformation(self)

    def cardinality(self) -> int:
        """The number of elements when it is known without reading the data.

        :data:`INFINITE_CARDINALITY` (-1) after ``repeat()``,
        :data:`UNKNOWN_CARDINALITY` (-2) when it depends on the data (the records
        of files, ``filter``, ``interleave``, ``unbatch``), as tf.data's.
        """
        n: int = self._source.cardinality()
        for op in _plan(self._ops, isinstance(self._source, _Source)):
            n = op.cardinality(n)
        return n

    def __len__(self) -> int:
        """The number of elements; ``TypeError`` when it is infinite or unknown, as tf.data."""
        n = self.cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n < 0:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self) -> bool:
        return True  # not len(): a dataset of unknown length is still a dataset

    # -- transformations

    def map(
        self: _D,
        map_func: Callable[..., Any],
        num_parallel_calls: Optional[int] = None,
        deterministic: Optional[bool] = None,
        name: Optional[str] = None,
    ) -> _D:
        """Apply ``map_func`` to each element (a tuple element is passed unpacked, as tf.data).

        ``num_parallel_calls=N`` (or :data:`AUTOTUNE`) runs it on N threads, keeping the
        order (helps when ``map_func`` releases the GIL: NumPy, image decoding, I/O).
        ``deterministic`` is accepted for tf.data compatibility; order is always kept.
        """
        if not callable(map_func):
            raise TypeError("map_func must be callable")
        return self._derive(_Map(map_func, _threads("num_parallel_calls", num_parallel_calls)))

    def filter(self: _D, predicate: Callable[[Any], Any], name: Optional[str] = None) -> _D:
        """Keep the elements for which ``predicate(element)`` is true."""
        if not callable(predicate):
            raise TypeError("predicate must be callable")
        return self._derive(_Filter(predicate))

    def shuffle(
        self: _D,
        buffer_size: int,
        seed: Optional[int] = None,
        reshuffle_each_iteration: bool = True,
        name: Optional[str] = None,
    ) -> _D:
        """Shuffle with a buffer of ``buffer_size`` elements, as tf.data.

        Memory holds ``buffer_size`` elements, whatever the number of files or
        records. With a ``seed`` the order is reproducible: epoch ``e`` of the same
        pipeline always gives the same order, and a different one for each ``e``
        unless ``reshuffle_each_iteration=False``. A buffer at least as large as the
        data gives a uniformly random permutation.
        """
        size = _count("buffer_size", buffer_size, 1) if buffer_size != AUTOTUNE else 1024
        return self._derive(_Shuffle(size, _seed_entropy(seed), bool(reshuffle_each_iteration)))

    def batch(
        self: _D,
        batch_size: int,
        drop_remainder: bool = False,
        num_parallel_calls: Optional[int] = None,
        deterministic: Optional[bool] = None,
        name: Optional[str] = None,
        *,
        ragged: str = "auto",
    ) -> _D:
        """Group ``batch_size`` consecutive elements.

        After :meth:`TFRecordDataset.parse`: the dict of columns ``parse_example``
        returns. Records not yet parsed: a list of ``bytes``. Other elements are
        stacked by :func:`collate`: arrays of one shape with ``np.stack``, dicts
        and tuples field by field. When shapes differ, ``ragged`` decides:

        * ``"auto"`` (default): arrays that differ only in their first dimension
          (variable-length features) become a :class:`RaggedValue`, as
          ``parse_example`` returns them; any other difference (e.g. a grayscale
          image among RGB ones) raises ``ValueError`` naming the key and the shapes;
        * ``"error"``: any difference raises, as tf.data's ``batch``;
        * ``"list"``: a field whose shapes differ becomes a list of its values.

        Use :meth:`padded_batch` to pad instead. The last, smaller batch is kept
        unless ``drop_remainder``. ``num_parallel_calls`` and ``deterministic`` are
        accepted for tf.data compatibility (batches are always in order).
        """
        if ragged not in _RAGGED_MODES:
            raise ValueError(f"ragged must be one of {_RAGGED_MODES}, got {ragged!r}")
        _threads("num_parallel_calls", num_parallel_calls)
        return self._derive(
            _Batch(_count("batch_size", batch_size, 1), bool(drop_remainder), ragged)
        )

    def padded_batch(
        self: _D,
        batch_size: int,
        padded_shapes: Any = None,
        padding_values: Any = None,
        drop_remainder: bool = False,
        name: Optional[str] = None,
    ) -> _D:
        """Group ``batch_size`` elements, padding each array to a common shape, as tf.data.

        ``padded_shapes`` (optional, with the elements' structure: a dict, tuple or
        one shape) gives each array's shape; ``None`` or ``-1`` in it (or no shape at
        all) means "the largest in the batch". An element larger than its padded
        shape raises ``ValueError``. ``padding_values`` (same structure, or one
        value) default to 0, ``b""`` for strings.
        """
        return self._derive(
            _PaddedBatch(
                _count("batch_size", batch_size, 1),
                bool(drop_remainder),
                padded_shapes,
                padding_values,
            )
        )

    def unbatch(self: _D, name: Optional[str] = None) -> _D:
        """Split each element along its first dimension: the inverse of :meth:`batch`."""
        return self._derive(_Unbatch())

    def enumerate(self: _D, start: int = 0, name: Optional[str] = None) -> _D:
        """Pair each element with its position: ``(np.int64(i), element)`` from ``start``."""
        if isinstance(start, bool) or not isinstance(start, (int, np.integer)):
            raise TypeError(f"start must be an int, got {type(start).__name__}")
        return self._derive(_Enumerate(int(start)))

    def cache(self: _D, filename: str = "", name: Optional[str] = None) -> _D:
        """Keep the elements of the first complete epoch; later epochs replay them.

        As tf.data's cache: an epoch that stops early caches nothing, and what is
        before ``cache()`` (a shuffle, say) runs only once. ``filename=""`` keeps
        the elements in memory. With a ``filename`` they are written to that file
        (a TFRecord file of this library's own encoding, no pickle; it appears
        only once an epoch is complete), and every later epoch, in this process
        or a later one, reads that file instead of the pipeline before
        ``cache()``, until the file is deleted. Shards of the input (``shard()``
        on a :class:`TFRecordDataset`, DataLoader workers) get their own file,
        ``filename.shard-I-of-N``. Elements must be NumPy values, numbers,
        ``bytes``/``str``, ``SparseValue``/``RaggedValue`` and dicts, tuples and
        lists of them.
        """
        if not isinstance(filename, (str, os.PathLike)):
            raise TypeError(f"filename must be a string, got {type(filename).__name__}")
        return self._derive(_Cache(os.fspath(filename)))

    def interleave(
        self: _D,
        map_func: Callable[[Any], Dataset],
        cycle_length: Optional[int] = None,
        block_length: Optional[int] = None,
        num_parallel_calls: Optional[int] = None,
        deterministic: Optional[bool] = None,
        name: Optional[str] = None,
    ) -> _D:
        """Map each element to a dataset and interleave them, in tf.data's order.

        ``cycle_length`` (default: the number of CPUs) datasets are open at once;
        ``block_length`` (default 1) consecutive elements are taken from each in
        turn; when one ends, the next input element takes its place when its turn
        comes. ``num_parallel_calls=N`` (or :data:`AUTOTUNE`) reads ahead in each
        open dataset on a background thread; the order stays tf.data's
        deterministic one whatever ``deterministic`` says.

        >>> files = Dataset.list_files("train-*.tfrecord", shuffle=False)   # doctest: +SKIP
        >>> ds = files.interleave(lambda f: TFRecordDataset(f), cycle_length=4,
        ...                       num_parallel_calls=AUTOTUNE)              # doctest: +SKIP
        """
        if not callable(map_func):
            raise TypeError(f"map_func must be callable, got {type(map_func).__name__}")
        cycle = _threads("cycle_length", AUTOTUNE if cycle_length is None else cycle_length)
        block = 1 if block_length is None else _count("block_length", block_length, 1)
        workers = (
            0 if num_parallel_calls is None else _threads("num_parallel_calls", num_parallel_calls)
        )
        return self._derive(_Interleave(map_func, cycle, block, workers))

    def flat_map(self: _D, map_func: Callable[[Any], Dataset], name: Optional[str] = None) -> _D:
        """Map each element to a dataset and chain them (``interleave`` with cycle 1)."""
        return self.interleave(map_func, cycle_length=1)

    def shard(self: _D, num_shards: int, index: int, name: Optional[str] = None) -> _D:
        """Keep elements ``index, index + num_shards, ...``, as tf.data's ``shard``.

        (On a :class:`TFRecordDataset` ``shard`` splits the input records instead,
        wherever it is called; see there.)
        """
        n = _count("num_shards", num_shards, 1)
        i = _count("index", index, 0)
        if i >= n:
            raise ValueError(f"shard index must be in [0, {n}), got {i}")
        return self._derive(_ElementShard(n, i))

    def take(self: _D, count: int, name: Optional[str] = None) -> _D:
        """At most ``count`` elements (``-1``: all)."""
        return self._derive(_Take(_count("count", count, -1)))

    def skip(self: _D, count: int, name: Optional[str] = None) -> _D:
        """Drop the first ``count`` elements (``-1``: all)."""
        return self._derive(_Skip(_count("count", count, -1)))

    def repeat(self: _D, count: Optional[int] = None, name: Optional[str] = None) -> _D:
        """Repeat ``count`` times (``None`` or ``-1``: forever). Each repetition reshuffles."""
        if count is not None and count == -1:
            count = None
        return self._derive(_Repeat(None if count is None else _count("count", count, 0)))

    def prefetch(self: _D, buffer_size: int = 2, name: Optional[str] = None) -> _D:
        """Prepare up to ``buffer_size`` elements ahead in a background thread.

        The thread stops as soon as the loop ends, breaks, or the iterator is
        garbage-collected; an error in the pipeline is raised in the loop.
        """
        size = 2 if buffer_size == AUTOTUNE else _count("buffer_size", buffer_size, 0)
        if size == 0:
            return self._derive()
        return self._derive(_Prefetch(size))

    def __repr__(self) -> str:
        return ".".join([self._source.describe(), *(op.describe() for op in self._ops)])


class TFRecordDataset(Dataset):
    """The records of TFRecord files as a lazy, re-iterable, chainable :class:`Dataset`.

    ``filenames``: a path, a list of paths, a glob (``"train-*.tfrecord"``), a
    directory, a shard pattern (``"train-?????-of-00016"``) or spec
    (``"train@16"``). ``compression_type`` (positional, or ``compression=``):
    ``"auto"``/``None`` (default: detected per file, plain files included),
    ``""`` (plain), ``"GZIP"`` or ``"ZLIB"``. ``buffer_size``: the read-ahead per
    file in bytes, as tf.data's. The default reads 1 MiB blocks, shared among
    the files open at once when interleaving (at least 256 KiB each, as
    TensorFlow's per-file buffer); for ``parse(...).batch(n)`` straight after
    it, blocks grow up to 4 MiB while the records are big. Values up
    to 1 MiB (the MNIST tutorial's ``buffer_size=100``, 0 for "unbuffered", -1)
    mean that default, since smaller reads would only be slower; larger values
    are used as given. ``num_parallel_reads=N`` interleaves N
    files record by record, as tf.data does. ``verify=False`` skips CRC checks.
    ``name`` is accepted as in tf.data. Files may be URLs (``s3://``, ``gs://``
    ...; ``storage_options`` go to their fsspec filesystem): objects are read in
    large ranged requests with read-ahead, ``num_parallel_reads`` of them at once.

    Iterating yields each record's ``bytes``; chain :meth:`parse`, :meth:`map`,
    :meth:`filter`, :meth:`shuffle`, :meth:`batch` ... to transform them. A
    transformed ``TFRecordDataset`` is still one: :meth:`shard`,
    :meth:`shuffle_files` and :meth:`parse` work anywhere in the chain.
    """

    def __init__(
        self,
        filenames: Union[PathOrFile, Sequence[PathOrFile]],
        compression_type: Union[str, int, None] = "auto",
        buffer_size: Optional[int] = None,
        num_parallel_reads: Optional[int] = None,
        name: Optional[str] = None,
        *,
        compression: Union[str, int, None] = None,
        verify: bool = True,
        storage_options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if compression is not None:
            if compression_type != "auto":
                raise TypeError("pass either compression= or compression_type=, not both")
            compression_type = compression
        comp = reader_compression(compression_type)
        size: Optional[int] = None
        if buffer_size is not None and not (buffer_size == -1 and type(buffer_size) is not bool):
            size = _count("buffer_size", buffer_size, 0)
            if size <= READ_BLOCK_SIZE:  # a smaller read-ahead would only read slower
                size = None
        if isinstance(filenames, Dataset):
            raise TypeError(
                "TFRecordDataset takes file names, not a Dataset: use "
                "files.interleave(lambda f: TFRecordDataset(f)) (or flat_map)"
            )
        files = expand_paths(filenames, storage_options=storage_options)
        _no_file_objects(files)
        self._source = _Source(tuple(os.fspath(f) for f in files), comp, size, verify)  # type: ignore[arg-type]
        if num_parallel_reads is not None and num_parallel_reads != 1:
            self._source.cycle_length = _threads("num_parallel_reads", num_parallel_reads)
        self._ops = ()
        self._epoch = 0

    @property
    def files(self) -> list[str]:
        """The files, expanded from the patterns given, in the order given."""
        return list(self._source.files)

    # -- reading options

    def shard(
        self, num_shards: int, index: int, name: Optional[str] = None, *, by: str = "auto"
    ) -> TFRecordDataset:
        """Keep only shard ``index`` of ``num_shards``: disjoint shards that cover every record once.

        It always splits the input records, wherever it is called in the chain.
        ``by="auto"`` splits whole files while there are at least ``num_shards``
        files, else records (see the module documentation); ``by="file"`` insists
        on whole files (error if too few), ``by="record"`` always splits records
        (balanced to ±1 record per file-length difference, but every shard reads
        every file it has records in).
        """
        n = _count("num_shards", num_shards, 1)
        i = _count("index", index, 0)
        if i >= n:
            raise ValueError(f"shard index must be in [0, {n}), got {i}")
        if by not in ("auto", "file", "record"):
            raise ValueError(f"by must be 'auto', 'file' or 'record', got {by!r}")
        new: TFRecordDataset = self._derive(shards=(*self._source.shards, (n, i, by)))
        new._source.plan()  # raises now if by="file" cannot be honoured
        return new

    def shuffle_files(
        self, seed: Optional[int] = None, reshuffle_each_iteration: bool = True
    ) -> TFRecordDataset:
        """Read the files in a random order (a new one each epoch unless told otherwise)."""
        new: TFRecordDataset = self._derive(
            file_shuffle=(_seed_entropy(seed), bool(reshuffle_each_iteration))
        )
        return new

    def interleave(
        self,
        map_func: Union[Callable[[Any], Dataset], int, None] = None,
        cycle_length: Optional[int] = None,
        block_length: Optional[int] = None,
        num_parallel_calls: Optional[int] = None,
        deterministic: Optional[bool] = None,
        name: Optional[str] = None,
    ) -> Any:
        """tf.data's :meth:`Dataset.interleave`, or the files' read order: ``interleave(cycle_length, block_length=1)``.

        With an int first (or only keyword) argument, read ``cycle_length`` files
        at a time, ``block_length`` records from each in turn, in tf.data's
        deterministic order; memory is ``cycle_length`` read buffers. It applies
        to the files wherever it is called. With a function, see
        :meth:`Dataset.interleave`.
        """
        if map_func is None or (
            isinstance(map_func, (int, np.integer)) and not isinstance(map_func, bool)
        ):
            cycle = map_func if map_func is not None else cycle_length
            if cycle is None:
                raise TypeError("interleave() needs map_func or cycle_length")
            block = block_length
            if block is None:
                block = cycle_length if map_func is not None and cycle_length is not None else 1
            new: TFRecordDataset = self._derive(
                cycle_length=_threads("cycle_length", cycle),
                block_length=_count("block_length", block, 1),
            )
            return new
        if isinstance(map_func, bool):
            raise TypeError("map_func must be callable, got bool")
        return super().interleave(
            map_func, cycle_length, block_length, num_parallel_calls, deterministic, name
        )

    # -- element transformations

    def parse(self, features: Mapping[str, Any]) -> TFRecordDataset:
        """Parse each record as a ``tf.train.Example`` with ``features`` (as ``parse_single_example``).

        Followed by :meth:`batch`, the raw records are batched first and each batch
        parsed with one ``parse_example`` call (faster, and its output is exactly
        ``parse_example``'s). After ``batch``, each batch of raw records is parsed
        with ``parse_example`` too.
        """
        _spec_mapping("features", features)
        from .._examples import compile_features

        new: TFRecordDataset = self._derive(_Parse(compile_features(features)))
        return new

    def parse_sequence(
        self,
        context_features: Optional[Mapping[str, Any]] = None,
        sequence_features: Optional[Mapping[str, Any]] = None,
    ) -> TFRecordDataset:
        """Parse each record as a ``tf.train.SequenceExample`` (as ``parse_single_sequence_example``).

        Each element becomes ``(context, feature_lists)``. After :meth:`batch`, each
        batch of raw records is parsed with one ``parse_sequence_example`` call and
        becomes ``(context, feature_lists, lengths)``, exactly as
        ``tf.data.TFRecordDataset(files).batch(n).map(lambda x:
        tf.io.parse_sequence_example(x, context_features, sequence_features))``
        hands it out; the records of consecutive batches are extracted together.

        >>> ds = tfrecord_lite.TFRecordDataset("clips.tfrecord")         # doctest: +SKIP
        >>> for context, lists, lengths in ds.batch(32).parse_sequence(  # doctest: +SKIP
        ...         {"label": tfrecord_lite.FixedLenFeature([], tfrecord_lite.int64)},
        ...         {"frame": tfrecord_lite.FixedLenSequenceFeature([], tfrecord_lite.string)}):
        ...     ...
        """
        for name, specs in (
            ("context_features", context_features),
            ("sequence_features", sequence_features),
        ):
            if specs is not None:
                _spec_mapping(name, specs)
        from .._examples import compile_sequence_features

        plan = compile_sequence_features(context_features, sequence_features)
        new: TFRecordDataset = self._derive(_ParseSequence(plan))
        return new

    def __repr__(self) -> str:
        src = self._source
        parts = [f"TFRecordDataset(files={len(src.files)})"]
        for n, i, _ in src.shards:
            parts.append(f"shard({n}, {i})")
        if src.file_shuffle is not None:
            parts.append("shuffle_files()")
        if src.cycle_length > 1:
            parts.append(f"interleave({src.cycle_length}, {src.block_length})")
        parts.extend(op.describe() for op in self._ops)
        return ".".join(parts)


class _DatasetIterator:
    """One epoch's iterator. ``close()`` (or leaving the loop) stops its threads and files."""

    def __init__(self, it: Iterator[Any]) -> None:
        self._it: Optional[Iterator[Any]] = it

    def __iter__(self) -> _DatasetIterator:
        return self

    def __next__(self) -> Any:
        if self._it is None:
            raise StopIteration
        try:
            return next(self._it)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        it, self._it = self._it, None
        close = getattr(it, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> _DatasetIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
