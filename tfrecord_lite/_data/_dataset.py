"""``Dataset``: lazy, chainable, re-iterable input pipelines as ``tf.data``'s, in NumPy.

A dataset is a recipe: a source and a chain of ops. Each method returns a new
dataset and nothing is read until it is iterated. Every ``for`` over it is a new
epoch (and reshuffles, when asked to). Names follow ``tf.data``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any, Callable, Optional, TypeVar, Union

import numpy as np

from .._files import expand_paths
from ._cache import _Cache
from ._collate import _RAGGED_MODES
from ._iterator import _DatasetIterator
from ._op import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    EpochKey,
    Upstream,
    _count,
    _Op,
    _threads,
)
from ._ops_batch import _Batch, _PaddedBatch, _RawBatch, _Unbatch
from ._ops_errors import _IgnoreErrors
from ._ops_interleave import _Interleave
from ._ops_map import _Enumerate, _Filter, _Map
from ._ops_parse import _Parse, _ParseBatch, _ParseSequence, _ParseSequenceBatch
from ._ops_shuffle import _seed_entropy, _Shuffle
from ._ops_slice import _ElementShard, _Repeat, _Skip, _Take
from ._prefetch import _Prefetch
from ._rewrite import chain_to_run, ignoring
from ._slices import _Slices
from ._source import _Source
from ._state import _Level

__all__ = ["Dataset"]

_D = TypeVar("_D", bound="Dataset")


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
        self,
        key: EpochKey,
        extra_shards: tuple[tuple[int, int, str], ...] = (),
        lv: Optional[_Level] = None,
    ) -> Iterator[Any]:
        """The iterator of epoch ``key``; its state is read from (and a state to
        resume from is taken from) ``lv`` (see ._state)."""
        source = self._source
        ops = chain_to_run(self._ops, isinstance(source, _Source))
        skip = ignoring(self._ops)
        if skip is not None and isinstance(source, _Source) and source.on_error == "raise":
            source = source.copy(on_error=skip)

        first = ops[0] if ops else None
        batching = (_RawBatch, _ParseBatch, _ParseSequenceBatch)
        lists = isinstance(source, _Source) and isinstance(first, batching)
        if isinstance(first, batching) and lists:
            first.takes_lists = True  # cut the batches from the files' lists
        # Batches that only the parser sees are cut from the blocks read, uncopied.
        spans = isinstance(first, (_ParseBatch, _ParseSequenceBatch)) or (
            isinstance(first, _RawBatch)
            and lists
            and len(ops) > 1
            and isinstance(ops[1], (_Parse, _ParseSequence))
        )

        def build(level: int, here: _Level) -> Upstream:
            if level == 0:
                if lists:
                    return lambda k: source.iterate(
                        k, extra_shards, lists=True, spans=spans, lv=here
                    )
                return lambda k: source.iterate(k, extra_shards, lv=here)
            op = ops[level - 1]
            below_lv = _Level()
            below = build(level - 1, below_lv)
            if isinstance(op, _Cache):
                return lambda k: op.cached(below, k, (source, extra_shards), here, below_lv)
            return lambda k: op.run(below, k, here, below_lv)

        return build(len(ops), lv if lv is not None else _Level())(key)

    def _iterator(
        self,
        key: EpochKey,
        on_load: Optional[Callable[[EpochKey], None]] = None,
        extra_shards: tuple[tuple[int, int, str], ...] = (),
    ) -> _DatasetIterator:
        """The resumable iterator of epoch ``key`` (of the input shards ``extra_shards``
        adds: DataLoader workers, ranks); ``on_load`` is told the epoch a state loads."""
        where = "".join(f" (input shard {i} of {n})" for n, i, _ in extra_shards)
        return _DatasetIterator(
            lambda k, lv: self._iterate(k, extra_shards, lv), key, repr(self) + where, on_load
        )

    def __iter__(self) -> _DatasetIterator:
        """A new epoch: every ``for`` reads the data again (and reshuffles if asked to).

        The iterator's ``state_dict()`` saves where it is; ``load_state_dict(state)``
        on a new iterator resumes there (see "Resuming mid-epoch" in docs/pipelines.md).
        After a load, the next ``for`` is the epoch after the resumed one.
        """
        key = (self._epoch,)
        self._epoch += 1
        return self._iterator(key, self._resumed)

    def _resumed(self, key: EpochKey) -> None:
        self._epoch = key[0] + 1

    def iter_epoch(self, epoch: int) -> _DatasetIterator:
        """Iterate epoch ``epoch`` (its shuffle order depends on the seed and this number)."""
        return self._iterator((_count("epoch", epoch),))

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
        for op in chain_to_run(self._ops, isinstance(self._source, _Source)):
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
        return self._derive(_Interleave(map_func, cycle, block, workers, Dataset))

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

    def ignore_errors(self: _D, log_warning: bool = False, name: Optional[str] = None) -> _D:
        """Drop the elements whose making raised an error, as tf.data's ``ignore_errors``.

        Everything before it in the chain skips instead of raising: the files'
        damaged records are skipped (as ``TFRecordDataset(..., on_error="skip")``;
        ``"warn"`` with ``log_warning``), and an element that ``map``, ``filter``,
        ``parse``, ``parse_sequence``, ``batch`` or ``padded_batch`` fails on is
        dropped (for the batching ops, the whole batch). Those ops then run element
        by element (a chain without ``ignore_errors`` keeps its fast paths). With
        ``log_warning=True`` each drop is a :class:`~tfrecord_lite.SkippedDataWarning`
        naming the error.
        """
        return self._derive(_IgnoreErrors(bool(log_warning)))

    def __repr__(self) -> str:
        return ".".join([self._source.describe(), *(op.describe() for op in self._ops)])
