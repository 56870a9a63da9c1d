"""``TFRecordDataset``: the records of TFRecord files as a :class:`Dataset`.

>>> ds = (TFRecordDataset("data/train-?????-of-00016")         # doctest: +SKIP
...       .shard(num_shards=world_size, index=rank)
...       .shuffle(buffer_size=10_000, seed=0)
...       .parse(features)
...       .batch(256)
...       .prefetch(2))
>>> for epoch in range(3):                                       # doctest: +SKIP
...     for batch in ds:            # dict of columns, as parse_example returns
...         ...

How ``shard`` splits files and records is told in :mod:`._source`; how
``global_shuffle`` and ``shard(by="range")`` read records by number, in
:mod:`._source_indexed`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional, Union

import numpy as np

from .._files import READ_BLOCK_SIZE, PathOrFile, expand_paths, is_file_object, reader_compression
from .._record import SkipReport
from ._dataset import Dataset
from ._op import _count, _threads
from ._ops_map import _Map
from ._ops_parse import _Parse, _ParseSequence
from ._ops_shuffle import _seed_entropy
from ._source import _Source
from ._source_indexed import _IndexedSource, indexed

__all__ = ["TFRecordDataset"]

#: What ``TFRecordDataset(on_error=...)`` does with a damaged record.
_ON_ERROR = ("raise", "skip", "warn")


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
    ``on_error``: what a damaged record (a CRC that does not match, a truncated
    file, a damaged GZIP/ZLIB stream) does: ``"raise"`` (default) raises it after
    the records before it; ``"skip"`` skips it and reads on (at the next record that
    verifies; the rest of a damaged compressed file), passing a
    :class:`~tfrecord_lite.SkipReport` (what, where, how many bytes) to ``on_skip``
    when given; ``"warn"`` does the same and issues a
    :class:`~tfrecord_lite.SkippedDataWarning` for each. Reading stays on the fast
    path: records are checked block by block as without it.
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
        on_error: str = "raise",
        on_skip: Optional[Callable[[SkipReport], None]] = None,
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
        if on_error not in _ON_ERROR:
            raise ValueError(f"on_error must be one of {_ON_ERROR}, got {on_error!r}")
        if on_skip is not None and not callable(on_skip):
            raise TypeError(f"on_skip must be callable, got {type(on_skip).__name__}")
        self._source = _Source(tuple(os.fspath(f) for f in files), comp, size, verify)  # type: ignore[arg-type]
        self._source.on_error = on_error
        self._source.on_skip = on_skip
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

        ``by="range"`` gives each shard one contiguous run of the records, the
        files taken in sorted order: exactly ``R // num_shards`` or one more of
        the ``R`` records (the first ``R % num_shards`` shards get one more), read
        by their number. It needs every file's index (:func:`create_index`,
        ``tfrecord-lite index``; GZIP/ZLIB files too), and
        :class:`~tfrecord_lite.RandomAccessError` says so when one has none.
        Records are then read in file order (``interleave`` does not apply;
        ``shuffle_files`` orders the files' runs); a later ``shard`` (DataLoader
        workers, ranks) splits the run record by record.
        """
        n = _count("num_shards", num_shards, 1)
        i = _count("index", index, 0)
        if i >= n:
            raise ValueError(f"shard index must be in [0, {n}), got {i}")
        if by not in ("auto", "file", "record", "range"):
            raise ValueError(f"by must be 'auto', 'file', 'record' or 'range', got {by!r}")
        new: TFRecordDataset = self._derive(shards=(*self._source.shards, (n, i, by)))
        if by == "range" and not isinstance(new._source, _IndexedSource):
            new._source = indexed(new._source)
        new._source.plan()  # raises now if by="file" cannot be honoured
        return new

    def global_shuffle(
        self,
        seed: Optional[int] = None,
        reshuffle_each_iteration: bool = True,
        name: Optional[str] = None,
    ) -> TFRecordDataset:
        """Every record in a random order: a permutation of all of them (tf.data's ``global_shuffle``).

        Unlike :meth:`shuffle`, which mixes a buffer of records as they are read,
        any record may come first; memory is 8 bytes a record (the permutation),
        not a buffer of records. Records are read by their number, so every file
        needs an index (:func:`create_index` or ``tfrecord-lite index``; a GZIP/ZLIB
        file's binary index with seek points, each record read inflates from the
        nearest seek point): :class:`~tfrecord_lite.RandomAccessError` says so when
        one has none. ``reshuffle_each_iteration=False`` keeps one order for every
        epoch; with ``seed=None`` the order is fixed when this is called.

        :meth:`shard` still splits the input records (applied before the
        permutation, each shard shuffling its own records: exact and disjoint);
        ``interleave`` does not apply. As in tf.data, it must come before anything
        that is not one record in, one element out: it may follow :meth:`parse`
        and :meth:`map`, not ``batch``, ``filter`` or ``shuffle``.
        """
        for op in self._ops:
            if not isinstance(op, (_Parse, _ParseSequence, _Map)):
                raise ValueError(
                    f"global_shuffle() shuffles records, and {op.describe()} comes before "
                    "it; call it before batch(), filter(), shuffle(), take() ..."
                )
        shuffle = (_seed_entropy(seed), bool(reshuffle_each_iteration))
        new: TFRecordDataset = self._derive()
        new._source = indexed(self._source, global_shuffle=shuffle)
        new._source.plan()
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

    def parse(
        self,
        features: Mapping[str, Any],
        num_parallel_calls: Optional[int] = None,
        deterministic: Optional[bool] = None,
    ) -> TFRecordDataset:
        """Parse each record as a ``tf.train.Example`` with ``features`` (as ``parse_single_example``).

        Followed by :meth:`batch`, the raw records are batched first and each batch
        parsed with one ``parse_example`` call (faster, and its output is exactly
        ``parse_example``'s). After ``batch``, each batch of raw records is parsed
        with ``parse_example`` too.

        ``num_parallel_calls=N`` (or :data:`AUTOTUNE`: the number of CPUs) parses
        chunks of about 8192 records on N threads, in order (``deterministic`` is
        accepted as in tf.data; the order is always kept). It pays where the parse
        engine releases the GIL (the compiled one, ``TFRECORD_LITE_ENGINE=jit``).

        A :class:`~tfrecord_lite.Schema` of SequenceExamples (``infer_schema`` of a
        SequenceExample file: its mapping is the context features, its
        ``sequence_features`` the feature lists) is parsed as
        :meth:`parse_sequence` would: ``(context, feature_lists)`` per record,
        ``(context, feature_lists, lengths)`` per batch. Plain ``features`` on
        SequenceExamples read only their context, with a
        ``FeatureListsIgnoredWarning`` (a ``UserWarning``) naming the lists left out.
        """
        _spec_mapping("features", features)
        lists = getattr(features, "sequence_features", None)
        if lists:
            return self.parse_sequence(dict(features), lists, num_parallel_calls)
        from .._examples import compile_features

        workers = _threads("num_parallel_calls", num_parallel_calls)
        new: TFRecordDataset = self._derive(_Parse(compile_features(features), workers))
        return new

    def parse_sequence(
        self,
        context_features: Optional[Mapping[str, Any]] = None,
        sequence_features: Optional[Mapping[str, Any]] = None,
        num_parallel_calls: Optional[int] = None,
        deterministic: Optional[bool] = None,
    ) -> TFRecordDataset:
        """Parse each record as a ``tf.train.SequenceExample`` (as ``parse_single_sequence_example``).

        Each element becomes ``(context, feature_lists)``. Batched, before or after
        (``.batch(n).parse_sequence(...)`` or ``.parse_sequence(...).batch(n)``), each
        batch of raw records is parsed with one ``parse_sequence_example`` call and
        becomes ``(context, feature_lists, lengths)``, exactly as
        ``tf.data.TFRecordDataset(files).batch(n).map(lambda x:
        tf.io.parse_sequence_example(x, context_features, sequence_features))``
        hands it out; the records of consecutive batches are extracted together.
        ``num_parallel_calls`` parses on threads, as in :meth:`parse`.

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
        workers = _threads("num_parallel_calls", num_parallel_calls)
        new: TFRecordDataset = self._derive(_ParseSequence(plan, workers))
        return new

    def __repr__(self) -> str:
        src = self._source
        parts = [f"TFRecordDataset(files={len(src.files)})"]
        for n, i, by in src.shards:
            parts.append(f"shard({n}, {i}, by='range')" if by == "range" else f"shard({n}, {i})")
        if src.file_shuffle is not None:
            parts.append("shuffle_files()")
        if getattr(src, "global_shuffle", None) is not None:
            parts.append("global_shuffle()")
        if src.cycle_length > 1:
            parts.append(f"interleave({src.cycle_length}, {src.block_length})")
        parts.extend(op.describe() for op in self._ops)
        return ".".join(parts)
