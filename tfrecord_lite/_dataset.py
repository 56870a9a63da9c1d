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
import math
import os
import queue
import threading
import warnings
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Optional, Union

import numpy as np

from ._index import find_index
from ._io import READ_BLOCK_SIZE, _compression_name, read_records
from ._paths import PathOrFile, expand_paths, is_file_object

__all__ = ["AUTOTUNE", "TFRecordDataset"]

#: ``tf.data.AUTOTUNE``: accepted where tf.data accepts it (means "the number of CPUs").
AUTOTUNE = -1

EpochKey = tuple[int, ...]
Upstream = Callable[[EpochKey], Iterator[Any]]

#: Smallest read block per file when interleaving many files.
_MIN_BLOCK = 64 * 1024
#: How long a blocked producer thread waits before checking whether it must stop.
_POLL = 0.05
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
        self, key: EpochKey, extra_shards: tuple[tuple[int, int, str], ...] = ()
    ) -> Iterator[bytes]:
        src = self.copy(shards=self.shards + extra_shards) if extra_shards else self
        entries, n_files, n_rec, i_rec = src.plan()
        if src.file_shuffle is not None:
            entropy, reshuffle = src.file_shuffle
            perm = _rng(entropy, 1, key, reshuffle).permutation(len(entries))
            entries = [entries[j] for j in perm]
        readers: list[Callable[[], Iterator[bytes]]] = [
            functools.partial(src._read_file, path, f, n_files, n_rec, i_rec) for path, f in entries
        ]
        if src.cycle_length <= 1:
            return _chain_files(readers)
        return _interleave(readers, src.cycle_length, src.block_length)

    def block_size(self) -> int:
        """Read block per open file: 1 MiB, shared out when several files are open at once."""
        if self.buffer_size is not None:
            return self.buffer_size
        return max(_MIN_BLOCK, READ_BLOCK_SIZE // max(1, self.cycle_length))

    def _read_file(self, path: str, f: int, n_files: int, n: int, i: int) -> Iterator[bytes]:
        if n == 1:
            return self._stream(path)
        # Records r with r * F + f == i (mod n): r == r0 (mod n / gcd(F, n)), or none at all.
        g = math.gcd(n_files, n)
        d = (i - f) % n
        if d % g:
            return iter(())
        step = n // g
        r0 = ((d // g) * pow(n_files // g, -1, step)) % step if step > 1 else 0
        if step > 1 and self.compression in ("", "auto") and not self.windows:
            index_path = find_index(path)
            if index_path is not None:
                return self._read_indexed(path, index_path, r0, step)
        return _every(self._stream(path), r0, step)

    def _stream(self, path: str) -> Iterator[bytes]:
        records = read_records(
            path, self.compression, verify=self.verify, buffer_size=self.block_size()
        )
        window = self.windows.get(path) if self.windows else None
        if window is None:
            return records
        return _window(records, window[0], window[1])

    def _read_indexed(self, path: str, index_path: str, start: int, step: int) -> Iterator[bytes]:
        """Records ``start::step`` of a file with an index: read only those (one pread each)."""
        from ._index import RandomAccessError, StaleIndexError, TFRecordFile

        try:
            f = TFRecordFile(path, index_path, compression=self.compression, verify=self.verify)
        except RandomAccessError:  # compressed: stream it
            yield from _every(self._stream(path), start, step)
            return
        except StaleIndexError as err:
            warnings.warn(f"{err}; reading {path!r} without it", RuntimeWarning, stacklevel=2)
            yield from _every(self._stream(path), start, step)
            return
        try:
            n = len(f)
            chunk = 256 * step
            for first in range(start, n, chunk):
                yield from f.get_many(range(first, min(n, first + chunk), step))
        finally:
            f.close()


def _close(it: object) -> None:
    """Close a generator (its ``finally`` blocks run now: files close, threads stop)."""
    close = getattr(it, "close", None)
    if close is not None:
        close()


def _window(records: Iterator[bytes], skip: int, take: int) -> Iterator[bytes]:
    try:
        yield from itertools.islice(records, skip, skip + take)
    finally:
        _close(records)


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
            from ._parse import parse_single_example

            for x in items:
                if pred(parse_single_example(x, features)):
                    yield x
    finally:
        _close(items)


def _chain_files(readers: list[Callable[[], Iterator[bytes]]]) -> Iterator[bytes]:
    for make in readers:
        it = make()
        try:
            yield from it
        finally:
            _close(it)


def _interleave(
    readers: list[Callable[[], Iterator[bytes]]], cycle_length: int, block_length: int
) -> Iterator[bytes]:
    """tf.data's deterministic interleave: ``cycle_length`` files open, ``block_length`` records each in turn."""
    pending = iter(readers)
    slots: list[Optional[Iterator[bytes]]] = [None] * cycle_length
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
                taken = 0
                for taken, record in enumerate(itertools.islice(it, block_length), 1):  # noqa: B007
                    yield record
                if taken < block_length:  # this file is done: its slot takes the next file
                    _close(it)
                    slots[s] = None
            if not active and exhausted_input:
                return
    finally:
        for it in slots:
            _close(it)


# --------------------------------------------------------------------------- element ops


class _Op:
    """One transformation: builds its output iterator from the upstream's."""

    #: Ops that do not look at elements: ``parse`` may move across them (see _plan).
    transparent = False

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__.strip("_").lower()


class _Parse(_Op):
    def __init__(self, features: Mapping[str, Any]) -> None:
        self.features = features

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        from ._parse import parse_example, parse_single_example

        features = self.features

        def parse(r: Any) -> Any:
            # A list is a batch of raw records (``batch(n).parse(f)``): parse it as one.
            return (
                parse_example(r, features)
                if isinstance(r, list)
                else parse_single_example(r, features)
            )

        return _mapped(parse, upstream(key))

    def describe(self) -> str:
        return f"parse({sorted(self.features)})"


class _Map(_Op):
    def __init__(self, fn: Callable[[Any], Any], num_parallel_calls: int) -> None:
        self.fn = fn
        self.workers = num_parallel_calls

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        if self.workers <= 1:
            return _mapped(self.fn, upstream(key))
        return _parallel_map(self.fn, upstream(key), self.workers)

    def describe(self) -> str:
        return f"map({getattr(self.fn, '__name__', 'fn')})"


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
        return _kept(self.predicate, upstream(key), self.features)


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
    def __init__(self, batch_size: int, drop_remainder: bool) -> None:
        self.batch_size = batch_size
        self.drop_remainder = drop_remainder

    def batches(self, items: Iterator[Any]) -> Iterator[list[Any]]:
        n = self.batch_size
        try:
            while True:
                chunk = list(itertools.islice(items, n))
                if not chunk or (len(chunk) < n and self.drop_remainder):
                    return
                yield chunk
                if len(chunk) < n:
                    return
        finally:
            _close(items)

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return _mapped(collate, self.batches(upstream(key)))

    def describe(self) -> str:
        return f"batch({self.batch_size}, drop_remainder={self.drop_remainder})"


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
        from ._parse import parse_example

        features = self.features
        return _mapped(lambda chunk: parse_example(chunk, features), self.batches(upstream(key)))

    def describe(self) -> str:
        return f"parse({sorted(self.features)}).batch({self.batch_size})"


class _Take(_Op):
    transparent = True

    def __init__(self, count: int) -> None:
        self.count = count

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        return _closing_slice(upstream(key), 0, None if self.count < 0 else self.count)


class _Skip(_Op):
    transparent = True

    def __init__(self, count: int) -> None:
        self.count = count

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        if self.count < 0:  # tf.data: skip(-1) skips everything
            return _closing_slice(upstream(key), 0, 0)
        return _closing_slice(upstream(key), self.count, None)


def _closing_slice(items: Iterator[Any], start: int, stop: Optional[int]) -> Iterator[Any]:
    try:
        yield from itertools.islice(items, start, stop)
    finally:
        _close(items)


class _Repeat(_Op):
    transparent = True

    def __init__(self, count: Optional[int]) -> None:
        self.count = count

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


# --------------------------------------------------------------------------- prefetch


_ITEM, _END, _ERROR = 0, 1, 2


class _Prefetcher:
    """A daemon thread running the upstream pipeline into a bounded queue."""

    def __init__(self, make: Callable[[], Iterator[Any]], size: int) -> None:
        self._queue: queue.Queue[tuple[int, Any]] = queue.Queue(maxsize=size)
        self._stop = threading.Event()
        self._finished = False
        self._thread = threading.Thread(
            target=self._run, args=(make,), name="tfrecord_lite-prefetch", daemon=True
        )
        self._thread.start()

    def _put(self, message: tuple[int, Any]) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(message, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, make: Callable[[], Iterator[Any]]) -> None:
        try:
            it = make()
            try:
                for item in it:
                    if not self._put((_ITEM, item)):
                        return
            finally:
                _close(it)
            self._put((_END, None))
        except BaseException as err:
            self._put((_ERROR, err))

    def __iter__(self) -> _Prefetcher:
        return self

    def __next__(self) -> Any:
        if self._finished:
            raise StopIteration
        kind, value = self._queue.get()
        if kind == _ITEM:
            return value
        self._finished = True
        self._thread.join(_JOIN_TIMEOUT)
        if kind == _ERROR:
            raise value
        raise StopIteration

    def close(self) -> None:
        self._finished = True
        self._stop.set()
        while True:  # unblock a producer waiting on a full queue
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        if self._thread is not threading.current_thread():
            self._thread.join(_JOIN_TIMEOUT)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def _prefetch(make: Callable[[], Iterator[Any]], size: int) -> Iterator[Any]:
    fetcher = _Prefetcher(make, size)
    try:
        yield from fetcher
    finally:
        fetcher.close()


# --------------------------------------------------------------------------- collate


def _is_plain_tuple(x: Any) -> bool:
    return type(x) is tuple


def collate(items: Sequence[Any]) -> Any:
    """Stack a list of elements into one batch, as ``batch()`` does after ``map``.

    * dicts (same keys) -> dict of batched values; tuples -> tuple of batched values
    * arrays and numbers of one shape -> ``np.stack`` (a new leading axis)
    * arrays whose first dimension differs -> :class:`RaggedValue` (values + row_splits)
    * :class:`SparseValue` -> one SparseValue with a leading batch dimension, as
      ``parse_example`` returns for a ``VarLenFeature``
    * :class:`RaggedValue` -> a RaggedValue with one more ragged dimension
    * bytes, str and anything else -> a list

    Never raises on ragged data: what cannot be stacked comes back as a list.
    """
    from ._values import RaggedValue, SparseValue

    if not items:
        return []
    first = items[0]
    if isinstance(first, dict):
        keys = list(first)
        if all(
            isinstance(x, dict) and len(x) == len(keys) and all(k in x for k in keys) for x in items
        ):
            return {k: collate([x[k] for x in items]) for k in keys}
        return list(items)
    if isinstance(first, SparseValue):
        if all(isinstance(x, SparseValue) for x in items):
            return _stack_sparse(items)
        return list(items)
    if isinstance(first, RaggedValue):
        if all(isinstance(x, (RaggedValue, np.ndarray)) for x in items):
            return _stack_ragged(items)
        return list(items)
    if _is_plain_tuple(first):
        if all(_is_plain_tuple(x) and len(x) == len(first) for x in items):
            return tuple(collate([x[j] for x in items]) for j in range(len(first)))
        return list(items)
    numeric = (np.ndarray, np.generic, int, float, complex)
    if isinstance(first, numeric):
        if not all(isinstance(x, numeric) for x in items):
            return list(items)
        arrays = [np.asarray(x) for x in items]
        shape = arrays[0].shape
        if all(a.shape == shape for a in arrays):
            try:
                return np.stack(arrays)
            except (TypeError, ValueError):  # pragma: no cover - mixed incompatible dtypes
                return list(items)
        if all(
            a.ndim >= 1 and a.ndim == arrays[0].ndim and a.shape[1:] == shape[1:] for a in arrays
        ):
            return _stack_ragged(arrays)
        return list(items)
    return list(items)


def _stack_sparse(items: Sequence[Any]) -> Any:
    from ._values import SparseValue

    ndim = len(items[0].dense_shape)
    if any(len(x.dense_shape) != ndim for x in items):
        return list(items)
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
    from ._values import RaggedValue

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
    from ._values import RaggedValue

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
    from ._values import RaggedValue

    rows = x.reshape(len(x), -1) if x.ndim >= 2 else x.reshape(-1, 1)
    width = rows.shape[1]
    return RaggedValue(rows.reshape(-1), np.arange(len(x) + 1, dtype=np.int64) * width, width)


# --------------------------------------------------------------------------- the dataset


def _plan(ops: Sequence[_Op]) -> list[_Op]:
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
        elif k < 0:
            out[j] = _RawBatch(op.batch_size, op.drop_remainder)
    return [o for o in out if o is not None]


class TFRecordDataset:
    """The records of TFRecord files as a lazy, re-iterable, chainable pipeline.

    ``filenames``: a path, a list of paths, a glob (``"train-*.tfrecord"``), a
    directory, a shard pattern (``"train-?????-of-00016"``) or spec
    (``"train@16"``). ``compression``: ``"auto"`` or ``None`` (default: detected per
    file, plain files included), ``""`` (plain), ``"GZIP"`` or ``"ZLIB"``
    (``compression_type=`` is accepted as tf.data's name). ``buffer_size``: read block per file in bytes (default 1 MiB,
    divided among the files open at once when interleaving, at least 64 KiB).
    ``num_parallel_reads=N`` interleaves N files record by record, as tf.data does.
    ``verify=False`` skips CRC checks.

    Iterating yields each record's ``bytes``; chain :meth:`parse`, :meth:`map`,
    :meth:`filter`, :meth:`shuffle`, :meth:`batch` ... to transform them.
    """

    def __init__(
        self,
        filenames: Union[PathOrFile, Sequence[PathOrFile]],
        compression: Union[str, None] = "auto",
        buffer_size: Optional[int] = None,
        num_parallel_reads: Optional[int] = None,
        *,
        compression_type: Union[str, None] = None,
        verify: bool = True,
    ) -> None:
        if compression_type is not None:
            if compression != "auto":
                raise TypeError("pass either compression= or compression_type=, not both")
            compression = compression_type
        comp = "auto" if compression is None else _compression_name(compression, allow_auto=True)
        if buffer_size is None:
            size: Optional[int] = None
        elif buffer_size == 0:  # tf.data: unbuffered; we read small blocks
            size = _MIN_BLOCK
        else:
            size = _count("buffer_size", buffer_size, 1)
        files = expand_paths(filenames)
        for f in files:
            if is_file_object(f):
                raise TypeError(
                    "TFRecordDataset needs file paths (it reads the files again each epoch); "
                    "use tfrecord_lite.TFRecordReader for an open file object"
                )
        self._source = _Source(tuple(os.fspath(f) for f in files), comp, size, verify)  # type: ignore[arg-type]
        if num_parallel_reads is not None and num_parallel_reads != 1:
            self._source.cycle_length = _threads("num_parallel_reads", num_parallel_reads)
        self._ops: tuple[_Op, ...] = ()
        self._epoch = 0

    # -- plumbing

    def _derive(self, op: Optional[_Op] = None, **source_changes: Any) -> TFRecordDataset:
        new = TFRecordDataset.__new__(TFRecordDataset)
        new._source = self._source.copy(**source_changes) if source_changes else self._source
        new._ops = self._ops + ((op,) if op is not None else ())
        new._epoch = 0
        return new

    @property
    def files(self) -> list[str]:
        """The files, expanded from the patterns given, in the order given."""
        return list(self._source.files)

    def _iterate(
        self, key: EpochKey, extra_shards: tuple[tuple[int, int, str], ...] = ()
    ) -> Iterator[Any]:
        source = self._source
        ops = _plan(self._ops)

        def build(level: int) -> Upstream:
            if level == 0:
                return lambda k: source.iterate(k, extra_shards)
            op = ops[level - 1]
            below = build(level - 1)
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

    def apply(
        self, transformation: Callable[[TFRecordDataset], TFRecordDataset]
    ) -> TFRecordDataset:
        """``transformation(self)``, as tf.data's ``apply``."""
        return transformation(self)

    # -- reading options

    def shard(self, num_shards: int, index: int, *, by: str = "auto") -> TFRecordDataset:
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
        new = self._derive(shards=(*self._source.shards, (n, i, by)))
        new._source.plan()  # raises now if by="file" cannot be honoured
        return new

    def shuffle_files(
        self, seed: Optional[int] = None, reshuffle_each_iteration: bool = True
    ) -> TFRecordDataset:
        """Read the files in a random order (a new one each epoch unless told otherwise)."""
        return self._derive(file_shuffle=(_seed_entropy(seed), bool(reshuffle_each_iteration)))

    def interleave(self, cycle_length: int, block_length: int = 1) -> TFRecordDataset:
        """Read ``cycle_length`` files at a time, ``block_length`` records from each in turn.

        The order is deterministic, as tf.data's ``interleave``; memory is
        ``cycle_length`` read buffers. Applies to the files wherever it is called.
        """
        return self._derive(
            cycle_length=_threads("cycle_length", cycle_length),
            block_length=_count("block_length", block_length, 1),
        )

    # -- element transformations

    def parse(self, features: Mapping[str, Any]) -> TFRecordDataset:
        """Parse each record as a ``tf.train.Example`` with ``features`` (as ``parse_single_example``).

        Followed by :meth:`batch`, the raw records are batched first and each batch
        parsed with one ``parse_example`` call (faster, and its output is exactly
        ``parse_example``'s). After ``batch``, each batch of raw records is parsed
        with ``parse_example`` too.
        """
        if not isinstance(features, Mapping):
            raise TypeError(
                f"features must be a mapping of key -> feature spec, got {type(features).__name__}"
            )
        from ._schema import validate_features

        return self._derive(_Parse(validate_features(features)))

    def map(
        self,
        map_func: Callable[[Any], Any],
        num_parallel_calls: Optional[int] = None,
        deterministic: Optional[bool] = None,
    ) -> TFRecordDataset:
        """Apply ``map_func`` to each element.

        ``num_parallel_calls=N`` (or :data:`AUTOTUNE`) runs it on N threads, keeping the
        order (helps when ``map_func`` releases the GIL: NumPy, image decoding, I/O).
        ``deterministic`` is accepted for tf.data compatibility; order is always kept.
        """
        if not callable(map_func):
            raise TypeError("map_func must be callable")
        return self._derive(_Map(map_func, _threads("num_parallel_calls", num_parallel_calls)))

    def filter(self, predicate: Callable[[Any], Any]) -> TFRecordDataset:
        """Keep the elements for which ``predicate(element)`` is true."""
        if not callable(predicate):
            raise TypeError("predicate must be callable")
        return self._derive(_Filter(predicate))

    def shuffle(
        self,
        buffer_size: int,
        seed: Optional[int] = None,
        reshuffle_each_iteration: bool = True,
    ) -> TFRecordDataset:
        """Shuffle with a buffer of ``buffer_size`` elements, as tf.data.

        Memory holds ``buffer_size`` elements, whatever the number of files or
        records. With a ``seed`` the order is reproducible: epoch ``e`` of the same
        pipeline always gives the same order, and a different one for each ``e``
        unless ``reshuffle_each_iteration=False``. A buffer at least as large as the
        data gives a uniformly random permutation.
        """
        size = _count("buffer_size", buffer_size, 1) if buffer_size != AUTOTUNE else 1024
        return self._derive(_Shuffle(size, _seed_entropy(seed), bool(reshuffle_each_iteration)))

    def batch(self, batch_size: int, drop_remainder: bool = False) -> TFRecordDataset:
        """Group ``batch_size`` consecutive elements.

        After :meth:`parse`: the dict of columns ``parse_example`` returns. Records
        not yet parsed: a list of ``bytes``. After :meth:`map`: see :func:`collate`
        (arrays are stacked, ragged ones become RaggedValue, never an error).
        The last, smaller batch is kept unless ``drop_remainder``.
        """
        return self._derive(_Batch(_count("batch_size", batch_size, 1), bool(drop_remainder)))

    def take(self, count: int) -> TFRecordDataset:
        """At most ``count`` elements (``-1``: all)."""
        return self._derive(_Take(_count("count", count, -1)))

    def skip(self, count: int) -> TFRecordDataset:
        """Drop the first ``count`` elements (``-1``: all)."""
        return self._derive(_Skip(_count("count", count, -1)))

    def repeat(self, count: Optional[int] = None) -> TFRecordDataset:
        """Repeat ``count`` times (``None`` or ``-1``: forever). Each repetition reshuffles."""
        if count is not None and count == -1:
            count = None
        return self._derive(_Repeat(None if count is None else _count("count", count, 0)))

    def prefetch(self, buffer_size: int = 2) -> TFRecordDataset:
        """Prepare up to ``buffer_size`` elements ahead in a background thread.

        The thread stops as soon as the loop ends, breaks, or the iterator is
        garbage-collected; an error in the pipeline is raised in the loop.
        """
        size = 2 if buffer_size == AUTOTUNE else _count("buffer_size", buffer_size, 0)
        if size == 0:
            return self._derive()
        return self._derive(_Prefetch(size))

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
