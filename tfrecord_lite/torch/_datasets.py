"""The PyTorch datasets: :class:`IterableDataset` (a pipeline, split across workers and ranks) and :class:`MapDataset` (random access), and :func:`worker_shard`."""

from __future__ import annotations

import bisect
import os
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional, Union

import numpy as np
import torch
import torch.utils.data as _tud

from .._data import TFRecordDataset
from .._examples import compile_features, parse_single_example
from .._files import PathOrFile, TFRecordFile, expand_paths
from . import _handoff
from ._collate import to_tensors

__all__ = ["IterableDataset", "MapDataset", "worker_shard"]


def worker_shard(rank: Optional[int] = None, world_size: Optional[int] = None) -> tuple[int, int]:
    """``(num_shards, index)`` of the calling DataLoader worker across all ranks.

    ``index = rank * num_workers + worker_id`` of ``world_size * num_workers``.
    ``rank``/``world_size`` default to the initialised ``torch.distributed`` process
    group, else to a single process.
    """
    if rank is None or world_size is None:
        dist_rank, dist_world = 0, 1
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            dist_rank, dist_world = dist.get_rank(), dist.get_world_size()
        rank = dist_rank if rank is None else rank
        world_size = dist_world if world_size is None else world_size
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
    info = _tud.get_worker_info()
    workers, worker_id = (1, 0) if info is None else (info.num_workers, info.id)
    return world_size * workers, rank * workers + worker_id


class IterableDataset(_tud.IterableDataset[Any]):
    """A :class:`TFRecordDataset` pipeline as a ``torch.utils.data.IterableDataset``.

    ``source`` is a :class:`TFRecordDataset` (with any transformations) or files
    (anything :class:`TFRecordDataset` accepts); with files, ``features`` parses
    each record and ``transform`` is applied after. Each DataLoader worker of each
    rank reads its own shard of the records (see :func:`worker_shard`): every
    record is seen exactly once per epoch. Do not also ``.shard()`` the pipeline by
    rank yourself (pass ``rank=0, world_size=1`` if you must).

    Epochs: call :meth:`set_epoch` before each epoch for a reproducible, different
    shuffle order each epoch (as with ``DistributedSampler``). Without it, orders
    still differ per epoch: they follow torch's seed (``torch.manual_seed``) in
    worker processes, and a counter in the main process or persistent workers.

    In DataLoader worker processes, batches reach the main process through
    shared-memory slots (see the module documentation); ``shared_memory=False``
    sends them by torch's plain pickling instead.
    """

    def __init__(
        self,
        source: Union[TFRecordDataset, PathOrFile, Sequence[PathOrFile]],
        features: Optional[Mapping[str, Any]] = None,
        transform: Optional[Callable[[Any], Any]] = None,
        *,
        as_tensors: bool = False,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        shared_memory: bool = True,
        storage_options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__()
        if isinstance(source, TFRecordDataset):
            if features is not None or transform is not None:
                raise TypeError(
                    "features= and transform= are for files; chain .parse()/.map() on the dataset"
                )
            dataset = source
        else:
            dataset = TFRecordDataset(source, storage_options=storage_options)
            if features is not None:
                dataset = dataset.parse(features)
            if transform is not None:
                dataset = dataset.map(transform)
        self.dataset = dataset
        self.as_tensors = as_tensors
        self.rank = rank
        self.world_size = world_size
        self.shared_memory = shared_memory
        # [set?, epoch] in shared memory: persistent workers see set_epoch() too
        self._epoch = torch.zeros(2, dtype=torch.int64)
        self._epoch.share_memory_()  # type: ignore[no-untyped-call]
        self._count = 0

    def set_epoch(self, epoch: int) -> None:
        """Use epoch number ``epoch`` for the next iterations' shuffle order.

        The order then depends only on ``epoch`` (and the pipeline's seeds), in the
        main process and in DataLoader workers alike, persistent ones included.
        """
        self._epoch[1] = int(epoch)
        self._epoch[0] = 1

    def _epoch_key(self) -> tuple[int, ...]:
        count = self._count
        self._count += 1
        if int(self._epoch[0]):
            return (int(self._epoch[1]), 0)
        info = _tud.get_worker_info()
        if info is None:
            return (count,)
        # Same for every worker of this epoch, new each epoch (the DataLoader draws it).
        base_seed = int(info.seed) - int(info.id)
        return (base_seed % 2**63, count)

    def __iter__(self) -> _EpochIterator:
        """This worker's epoch. Its ``state_dict()`` / ``load_state_dict()`` save and
        resume it (torchdata's ``StatefulDataLoader`` calls them in each worker)."""
        if self.shared_memory:
            _handoff.install_in_worker()
        n, i = worker_shard(self.rank, self.world_size)
        extra = ((n, i, "auto"),) if n > 1 else ()
        return _EpochIterator(
            self.dataset._iterator(self._epoch_key(), None, extra), self.as_tensors
        )

    def __repr__(self) -> str:
        return f"tfrecord_lite.torch.IterableDataset({self.dataset!r})"


class _EpochIterator:
    """One worker's epoch of an :class:`IterableDataset`, resumable: the
    ``state_dict()`` / ``load_state_dict()`` protocol of torchdata's
    ``StatefulDataLoader`` (a JSON-able dict: see "Resuming mid-epoch" in
    docs/pipelines.md; a state of another worker's shard is refused)."""

    def __init__(self, inner: Any, as_tensors: bool) -> None:
        self._inner = inner
        self._as_tensors = as_tensors

    def __iter__(self) -> _EpochIterator:
        return self

    def __next__(self) -> Any:
        item = next(self._inner)
        return to_tensors(item) if self._as_tensors else item

    def state_dict(self) -> dict[str, Any]:
        """Where this worker is in its epoch (see :meth:`load_state_dict`)."""
        state: dict[str, Any] = self._inner.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at ``state``, from :meth:`state_dict` of the same worker's iterator."""
        self._inner.load_state_dict(state)

    def close(self) -> None:
        """Stop the epoch: its files close and its threads end."""
        self._inner.close()


class MapDataset(_tud.Dataset[Any]):
    """Random access over the records of one or more TFRecord files.

    ``len(ds)`` is the total number of records and ``ds[i]`` the i-th in file
    order (parsed with ``features`` if given, then ``transform``). Uses each file's
    index (``file.index``/``file.idx``) when there is one, else builds it once,
    streaming. Works with any sampler: ``shuffle=True``, ``DistributedSampler``.
    GZIP/ZLIB files are read through the seek points of their binary index
    (:func:`~tfrecord_lite.create_index`, or ``ShardedWriter(..., seekable=True,
    write_index=True)``; without one they are inflated once on opening, the seek
    points kept in memory); ``decompress=True`` decompresses each into a temporary
    file first instead. In DataLoader worker processes, batches reach the
    main process through shared-memory slots unless ``shared_memory=False`` (see
    the module documentation).
    """

    def __init__(
        self,
        files: Union[PathOrFile, Sequence[PathOrFile]],
        features: Optional[Mapping[str, Any]] = None,
        transform: Optional[Callable[[Any], Any]] = None,
        *,
        index_paths: Optional[Sequence[Optional[Union[str, os.PathLike[str]]]]] = None,
        as_tensors: bool = False,
        verify: bool = True,
        decompress: bool = False,
        shared_memory: bool = True,
        storage_options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__()
        paths = [
            os.fspath(p)  # type: ignore[arg-type]
            for p in expand_paths(files, storage_options=storage_options)
        ]
        if index_paths is not None and len(index_paths) != len(paths):
            raise ValueError(f"got {len(index_paths)} index paths for {len(paths)} files")
        self.files = [
            TFRecordFile(
                p,
                None if index_paths is None else index_paths[j],
                verify=verify,
                decompress=decompress,
            )
            for j, p in enumerate(paths)
        ]
        self._starts = [0]
        for f in self.files:
            self._starts.append(self._starts[-1] + len(f))
        if features is not None:
            features = compile_features(features)
        self.features = features
        self.transform = transform
        self.as_tensors = as_tensors
        self.shared_memory = shared_memory

    def __len__(self) -> int:
        return self._starts[-1]

    def _locate(self, i: int) -> tuple[int, int]:
        n = len(self)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"index must be an int, got {type(i).__name__}")
        k = int(i) + n if i < 0 else int(i)
        if not 0 <= k < n:
            raise IndexError(f"index {i} out of range for {n} records")
        j = bisect.bisect_right(self._starts, k) - 1
        return j, k - self._starts[j]

    def _finish(self, record: bytes) -> Any:
        if self.shared_memory:
            _handoff.install_in_worker()
        item: Any = record
        if self.features is not None:
            item = parse_single_example(record, self.features)
        if self.transform is not None:
            item = self.transform(item)
        return to_tensors(item) if self.as_tensors else item

    def __getitem__(self, i: int) -> Any:
        j, k = self._locate(i)
        return self._finish(self.files[j][k])

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        """A batch of items at once (what DataLoader calls when batching): fewer reads."""
        by_file: dict[int, list[tuple[int, int]]] = {}
        for pos, i in enumerate(indices):
            j, k = self._locate(i)
            by_file.setdefault(j, []).append((pos, k))
        out: list[Any] = [None] * len(indices)
        for j, wanted in by_file.items():
            records = self.files[j].get_many([k for _, k in wanted])
            for (pos, _), record in zip(wanted, records):
                out[pos] = self._finish(record)
        return out

    def __repr__(self) -> str:
        return f"tfrecord_lite.torch.MapDataset(files={len(self.files)}, records={len(self)})"
