"""A prepared TFDS dataset directory: :class:`Builder` and ``as_dataset`` (a
:class:`~tfrecord_lite.TFRecordDataset` pipeline that yields what
``tfds.as_numpy(builder.as_dataset(...))`` yields).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, NamedTuple, Optional, Union

from .._data import TFRecordDataset
from ._dataset_info import DatasetInfo, DatasetNotFoundError
from ._decoder import _Decode, make_decode
from ._features import UnsupportedFeatureError
from ._source import DataSource, open_shard
from ._splits import check_files, file_instructions
from ._steps import EpisodeSteps, holds_dataset, steps_feature

DEFAULT_CYCLE_LENGTH = 16
DEFAULT_BLOCK_LENGTH = 16
#: Records parsed together by ``as_dataset`` (one vectorized ``parse_example`` call).
DECODE_BATCH = 64
#: The same for datasets of episodes (a ``Dataset`` feature): an episode is one record of
#: many steps, so episodes are decoded one at a time to keep memory to one episode each.
EPISODE_DECODE_BATCH = 1


class ReadConfig(NamedTuple):
    """The parts of ``tfds.ReadConfig`` that apply here.

    ``shuffle_seed``: the file order seed with ``shuffle_files=True``;
    ``interleave_cycle_length`` / ``interleave_block_length``: how files are
    interleaved (TFDS's defaults: 16 and 16; cycle length 1 reads files in turn).
    """

    shuffle_seed: Optional[int] = None
    interleave_cycle_length: int = DEFAULT_CYCLE_LENGTH
    interleave_block_length: int = DEFAULT_BLOCK_LENGTH


class Builder:
    """A prepared TFDS dataset directory (mirrors ``tfds.core.ReadOnlyBuilder``)."""

    def __init__(self, data_dir: Union[str, os.PathLike[str]]) -> None:
        path = os.path.abspath(os.path.expanduser(os.fspath(data_dir)))
        if not os.path.isfile(os.path.join(path, "dataset_info.json")):
            raise DatasetNotFoundError(
                f"{path} is not a prepared TFDS dataset directory (no dataset_info.json); it "
                "is the directory holding dataset_info.json and the shards, such as "
                "~/tensorflow_datasets/mnist/3.0.1",
                path=path,
            )
        self.data_dir = path
        self.info = DatasetInfo(path)
        if self.info.file_format != "tfrecord":
            raise UnsupportedFeatureError(
                f"{path}: file format {self.info.file_format!r}; tfrecord_lite reads TFDS "
                "datasets prepared as tfrecord (the default; `tfds build --file_format=tfrecord`)"
            )

    @property
    def name(self) -> str:
        """The dataset name."""
        return self.info.name

    @property
    def version(self) -> str:
        """The dataset version."""
        return self.info.version

    def _decode_fn(self, decoders: Any, as_supervised: bool) -> _Decode:
        return make_decode(self.info, decoders, as_supervised)

    def _check_shard_lengths(self, files: list[str]) -> None:
        """:class:`StaleIndexError` unless each shard of the splits read holds its length."""
        wanted = set(files)
        for info in self.info.splits.values():
            if wanted.isdisjoint(info.filepaths):
                continue
            for path, n in zip(info.filepaths, info.shard_lengths):
                open_shard(path, n).close()

    def as_dataset(
        self,
        split: str,
        shuffle_files: bool = False,
        decoders: Any = None,
        as_supervised: bool = False,
        read_config: Optional[ReadConfig] = None,
        batch_size: Optional[int] = None,
        num_parallel_calls: Optional[int] = None,
    ) -> TFRecordDataset:
        """The examples of ``split`` (``"train"``, ``"train[:10%]"``, ``"train+test"``...) as a pipeline.

        Yields what ``tfds.as_numpy(builder.as_dataset(...))`` yields, in the same
        order: nested dicts of NumPy arrays, NumPy scalars and ``bytes``
        (``as_supervised=True``: the ``supervised_keys`` tuple; a ragged feature is a
        :class:`~tfrecord_lite.RaggedValue`). Files are interleaved as TFDS does
        (16 at a time, 16 records each); ``shuffle_files`` shuffles the file order
        (``read_config.shuffle_seed``). ``decoders={"image": SkipDecoding()}``
        leaves a feature encoded. ``batch_size`` batches (``.batch()``).
        The result is a :class:`~tfrecord_lite.TFRecordDataset`: chain ``shuffle``,
        ``batch``, ``prefetch``, ``shard`` ... on it. ``num_parallel_calls=N`` (or
        :data:`~tfrecord_lite.AUTOTUNE`) decodes on N threads, keeping the order
        (worth it for images: Pillow releases the GIL while decoding). Shards may be
        GZIP or ZLIB files (TFDS names them alike): the compression is detected per file.
        """
        rc = read_config or ReadConfig()
        instructions = file_instructions(split, self.info.splits)
        if not instructions:
            raise ValueError(f"split {split!r} of {self.info.name} holds no examples")
        files = [fi.filename for fi in instructions]
        check_files(files)
        ds: TFRecordDataset = TFRecordDataset(files, compression="auto")
        windows = {
            fi.filename: (fi.skip, fi.take)
            for fi in instructions
            if fi.skip or fi.take != fi.num_examples
        }
        if windows:
            # A slice is cut by the shard lengths of dataset_info.json: check that they
            # describe the shards (their indexes are kept, so this is a header walk once).
            self._check_shard_lengths(files)
            ds = ds._derive(windows=windows)
        if shuffle_files:
            ds = ds.shuffle_files(seed=rc.shuffle_seed)
        cycle = 1 if self.info.disable_shuffling else rc.interleave_cycle_length
        if len(files) > 1 and cycle > 1:
            ds = ds.interleave(cycle, rc.interleave_block_length)
        # Records are parsed DECODE_BATCH at a time (one vectorized parse_example), then
        # handed out one example at a time again.
        decode = make_decode(self.info, decoders, as_supervised, files)
        size = EPISODE_DECODE_BATCH if holds_dataset(self.info.features) else DECODE_BATCH
        ds = ds.batch(size).map(decode.many, num_parallel_calls=num_parallel_calls)
        ds = ds.unbatch()
        if batch_size is not None:
            ds = ds.batch(batch_size)
        return ds

    def as_steps(
        self,
        split: str,
        *,
        steps: Optional[str] = None,
        episode_keys: Sequence[str] = (),
        shuffle_files: bool = False,
        decoders: Any = None,
        read_config: Optional[ReadConfig] = None,
        num_parallel_calls: Optional[int] = None,
    ) -> TFRecordDataset:
        """The steps of every episode of ``split``, one element per step (frame-level training).

        For episodic datasets (RLDS, Open X-Embodiment), whose ``steps`` feature is a
        ``tfds.features.Dataset``. Each element is a dict of the step's features, as
        TFDS yields the elements of an episode's ``steps`` dataset (``observation``
        dicts, images ``(H, W, C)``, NumPy scalars, ``bytes``), plus
        ``episode_index`` (the episode's position in this read: in ``as_dataset(split)``'s
        order, or in the shuffled file order with ``shuffle_files``; ``np.int64``) and
        ``step_index`` (the step's position in its episode). ``episode_keys``
        names episode features to copy into every step (``("episode_metadata",)``).
        ``steps`` names the Dataset feature when there are several. Episodes are read
        and decoded one at a time, in ``as_dataset``'s order; chain ``shuffle`` and
        ``batch`` on the result for training. ``shuffle_files``, ``decoders``,
        ``read_config`` and ``num_parallel_calls`` are those of :meth:`as_dataset`.
        """
        key = steps_feature(self.info.features, steps, self.info.name)
        flatten = EpisodeSteps(self.info.features, key, episode_keys)
        episodes = self.as_dataset(
            split,
            shuffle_files=shuffle_files,
            decoders=decoders,
            read_config=read_config,
            num_parallel_calls=num_parallel_calls,
        )
        return episodes.enumerate().map(flatten).unbatch()

    def as_data_source(
        self,
        split: str,
        *,
        decoders: Any = None,
        as_supervised: bool = False,
        index_dir: Optional[str] = None,
    ) -> DataSource:
        """Random access to ``split``: ``len(src)``, ``src[i]``, ``src[a:b]``, ``src[[i, j]]``.

        A Grain ``RandomAccessDataSource`` (picklable for worker processes). Needs an
        index of each shard: ``<shard>.index`` beside it if present, else one built
        once (a streaming pass over the record headers) and kept in ``index_dir``
        (default: ``$TFRECORD_LITE_CACHE_DIR`` or ``~/.cache/tfrecord_lite/tfds``), so a
        read-only dataset directory works; if that is not writable either, the index
        is kept in memory.
        """
        return DataSource(
            self, split, decoders=decoders, as_supervised=as_supervised, index_dir=index_dir
        )

    def __repr__(self) -> str:
        return f"<tfrecord_lite.tfds.Builder {self.info.name} {self.info.version} at {self.data_dir!r}>"
