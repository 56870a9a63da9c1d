"""PyTorch datasets over TFRecord files (needs the ``torch`` extra: ``pip install tfrecord-lite-np[torch]``).

* :class:`IterableDataset` streams a :class:`~tfrecord_lite.TFRecordDataset`
  pipeline and splits it across DataLoader workers *and* distributed ranks with
  no record lost or repeated: worker ``w`` of rank ``r`` reads shard
  ``r * num_workers + w`` of ``world_size * num_workers`` (see
  :meth:`TFRecordDataset.shard` for how shards are cut).
* :class:`MapDataset` gives random access (``len``, ``[i]``) over indexed files,
  for samplers (``shuffle=True``, ``DistributedSampler``).

Elements are NumPy (as everywhere in tfrecord_lite); ``as_tensors=True`` turns
numeric arrays into ``torch.Tensor`` (``bytes``, SparseValue and RaggedValue stay
as they are). Note that a DataLoader's default ``collate_fn`` turns NumPy arrays
into tensors itself and fails on ``bytes`` features and ragged shapes: pass
``collate_fn=tfrecord_lite.torch.collate`` (keeps NumPy) or
:func:`collate_tensors` (tensors), which batch like :meth:`TFRecordDataset.batch`.

>>> from torch.utils.data import DataLoader                          # doctest: +SKIP
>>> ds = tfrecord_lite.torch.IterableDataset(
...     tfr.TFRecordDataset("train@16").shuffle(10_000, seed=0).parse(features).batch(256))
>>> loader = DataLoader(ds, batch_size=None, num_workers=4, collate_fn=tfrecord_lite.torch.collate)
>>> for epoch in range(3):
...     ds.set_epoch(epoch)        # a new, reproducible order each epoch
...     for batch in loader:
...         ...

**Worker hand-off.** In DataLoader worker processes, NumPy arrays and tensors
on their way to the main process do not go through pickle byte by byte: each
worker keeps a pool of shared-memory slots (torch's own shared memory,
``share_memory_()``), reused batch after batch; an array is copied into a free
slot and torch's queue carries only a small descriptor (the slot's memory goes
across once, the first time the slot is used). An object array of ``bytes`` (a
``string`` feature) is written into a slot as one flat stream of lengths and
values (a pickle of the list of values that the C pickler writes straight into
the slot, and the C unpickler turns back into ``bytes`` objects at memcpy
speed). The main process does not copy numeric arrays out: an array (or
tensor) it hands you *is* its slot's memory, lent to you alone; the worker
reuses the slot only once the array and every view of it are gone (so a batch
you keep stays intact, and a pool grows only while you keep batches). A
``bytes`` column is rebuilt from its slot and the slot handed back at once.
What you get is exactly what the same pipeline gives in-process: writable
arrays and tensors of the same dtypes, shapes and memory order, object arrays
of ``bytes``, SparseValue and RaggedValue with their arrays intact.
Arrays under 64 KiB stay inline in the pickle, and when a worker's pool is full
(512 MiB) or an array cannot take this path (subclasses, objects that are not
``bytes``, tensors that need grad, have no NumPy dtype or are shared already)
it is pickled as usual.
Slots are anonymous (unlinked at creation): nothing is left in ``/dev/shm`` if
a worker crashes, and the main process lets go of a worker's slots once that
process has exited. ``shared_memory=False`` turns all of this off.
"""

from __future__ import annotations

try:
    import torch as _torch  # noqa: F401
except ImportError as _err:  # pragma: no cover - exercised only without torch
    raise ImportError(
        "tfrecord_lite.torch needs PyTorch: pip install 'tfrecord-lite-np[torch]' (or install torch)"
    ) from _err

from . import _handoff
from ._collate import collate, collate_tensors, to_tensors
from ._datasets import IterableDataset, MapDataset, worker_shard

# The worker hand-off's tunables, read at each use from here (the module
# documentation above says what they do): arrays under INLINE_BYTES are pickled
# inline, a worker's pool holds at most MAX_POOL_BYTES, and LEND = False copies
# arrays out of their slot instead of lending the slot's memory.
INLINE_BYTES = _handoff.INLINE_BYTES
MAX_POOL_BYTES = _handoff.MAX_POOL_BYTES
LEND = _handoff.LEND
_handoff.bind_tunables(globals())

__all__ = [
    "IterableDataset",
    "MapDataset",
    "collate",
    "collate_tensors",
    "to_tensors",
    "worker_shard",
]
