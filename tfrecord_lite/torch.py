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

import atexit
import bisect
import math
import multiprocessing
import os
import pickle
import secrets
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from multiprocessing.reduction import ForkingPickler
from typing import Any, Callable, Literal, Optional, Union

import numpy as np

try:
    import torch
    import torch.utils.data as _tud
except ImportError as _err:  # pragma: no cover - exercised only without torch
    raise ImportError(
        "tfrecord_lite.torch needs PyTorch: pip install 'tfrecord-lite-np[torch]' (or install torch)"
    ) from _err

from ._data import TFRecordDataset
from ._data import collate as _collate
from ._files import PathOrFile, TFRecordFile, expand_paths

__all__ = [
    "IterableDataset",
    "MapDataset",
    "collate",
    "collate_tensors",
    "to_tensors",
    "worker_shard",
]


def to_tensors(value: Any) -> Any:
    """Numeric NumPy arrays (also inside dicts, lists, tuples) -> ``torch.Tensor``.

    ``bytes`` and object arrays of ``bytes`` stay as they are (torch has no string
    tensors), and so do :class:`SparseValue` and :class:`RaggedValue` (use their
    ``to_dense()`` / ``flat_values`` and ``row_splits`` to make tensors).
    """
    if isinstance(value, np.ndarray):
        if value.dtype == object or value.dtype.kind not in "biufc":
            return value
        if not value.flags.writeable:
            value = value.copy()
        return torch.from_numpy(value)
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        return torch.from_numpy(np.asarray(value))
    if isinstance(value, dict):
        return {k: to_tensors(v) for k, v in value.items()}
    if type(value) is tuple:
        return tuple(to_tensors(v) for v in value)
    if isinstance(value, list):
        return [to_tensors(v) for v in value]
    return value


def collate(batch: Any) -> Any:
    """A DataLoader ``collate_fn`` that keeps NumPy, ``bytes`` and ragged rows (RaggedValue); shapes it cannot stack raise ``ValueError`` naming the key.

    torch's default turns NumPy arrays into tensors and raises on object arrays
    (``bytes`` features) and ragged shapes. With ``batch_size=N``, this stacks the N
    samples as :meth:`TFRecordDataset.batch` does (:func:`tfrecord_lite._data._dataset.collate`);
    with ``batch_size=None`` it passes each element through unchanged.
    """
    return _collate(batch) if isinstance(batch, list) else batch


def collate_tensors(batch: Any) -> Any:
    """:func:`collate`, then :func:`to_tensors` (numeric arrays become tensors, bytes stay)."""
    return to_tensors(collate(batch))


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


# --------------------------------------------------------------------------- worker -> main hand-off
#
# A worker process owns a pool of slots: shared uint8 tensors (``share_memory_()``)
# of power-of-two capacities. Byte 0 of a slot's header is its state: the worker
# sets BUSY when it fills the slot, the main process sets FREE when it has copied
# the data out (each side only ever makes one of the two transitions). Byte 1 is
# set by the main process once it has mapped the slot; until then the worker
# sends the slot's storage along with the descriptor (torch passes its file
# descriptor once), afterwards only (worker token, slot id, layout).

_HEADER = 64
_FREE, _BUSY = 0, 1
#: Arrays with fewer bytes than this are pickled inline (cheaper than a slot).
INLINE_BYTES = 64 * 1024
_MIN_SLOT = 256 * 1024
#: Most shared memory one worker's pool may hold; past it arrays are pickled inline.
MAX_POOL_BYTES = 512 * 2**20
_SWEEP_SECONDS = 1.0
#: Hand out numeric arrays in their slot's memory (the slot is reused once they are gone).
LEND = True
_Order = Literal["C", "F"]


class _Slot:
    __slots__ = ("buf", "capacity", "id", "tensor")

    def __init__(self, slot_id: int, capacity: int) -> None:
        self.id = slot_id
        self.capacity = capacity
        self.tensor = torch.empty(_HEADER + capacity, dtype=torch.uint8)
        self.tensor.share_memory_()  # type: ignore[no-untyped-call]
        self.buf: np.ndarray = self.tensor.numpy()
        self.buf[:_HEADER] = 0


class _WorkerPool:
    """The slots of one worker process (used only by its queue's feeder thread)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.token = (self.pid, secrets.randbits(62))
        self.by_capacity: dict[int, list[_Slot]] = {}
        self.total = 0
        self.lock = threading.Lock()

    def acquire(self, nbytes: int) -> Optional[_Slot]:
        capacity = max(_MIN_SLOT, 1 << max(0, nbytes - 1).bit_length())
        with self.lock:
            slots = self.by_capacity.setdefault(capacity, [])
            for slot in slots:
                if slot.buf[0] == _FREE:
                    slot.buf[0] = _BUSY
                    return slot
            if self.total + capacity > MAX_POOL_BYTES:
                return None
            try:
                slot = _Slot(sum(len(v) for v in self.by_capacity.values()), capacity)
            except (RuntimeError, OSError):  # no shared memory left: pickle inline
                return None
            self.total += capacity
            slots.append(slot)
            slot.buf[0] = _BUSY
            return slot

    def describe(self, slot: _Slot) -> tuple[Any, ...]:
        # The storage goes along until the main process says it has mapped the slot.
        storage = None if slot.buf[1] else slot.tensor.untyped_storage()
        return (self.token, slot.id, storage)


_POOL: Optional[_WorkerPool] = None
_INSTALL_LOCK = threading.Lock()
_TORCH_REDUCE: Any = None


def _install_handoff() -> None:
    """Route arrays and tensors this worker process sends through shared-memory slots."""
    global _POOL, _TORCH_REDUCE
    if _POOL is not None and _POOL.pid == os.getpid():
        return
    with _INSTALL_LOCK:
        if _POOL is not None and _POOL.pid == os.getpid():
            return
        import torch.multiprocessing

        reducers = ForkingPickler._extra_reducers  # type: ignore[attr-defined]
        previous = reducers.get(torch.Tensor)
        if previous is not _reduce_tensor:
            _TORCH_REDUCE = previous
        _POOL = _WorkerPool()
        ForkingPickler.register(np.ndarray, _reduce_ndarray)
        ForkingPickler.register(torch.Tensor, _reduce_tensor)


def _in_worker() -> bool:
    """True in a DataLoader worker process (a child process with torch's worker info)."""
    return _tud.get_worker_info() is not None and multiprocessing.parent_process() is not None


def _order(a: np.ndarray) -> _Order:
    return "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"


class _SlotWriter:
    """A file-like ``write`` into a slot's memory, for the pickler."""

    __slots__ = ("mv", "pos")

    def __init__(self, mv: memoryview) -> None:
        self.mv = mv
        self.pos = 0

    def write(self, data: Any) -> int:
        n = len(data)
        end = self.pos + n
        if end > len(self.mv):
            raise ValueError("tfrecord_lite.torch: slot overflow")
        self.mv[self.pos : end] = data
        self.pos = end
        return n


def _pack(a: np.ndarray) -> Optional[tuple[Any, ...]]:
    """Copy ``a`` into a slot (or pack a small bytes array inline); None: pickle it as usual."""
    pool = _POOL
    if pool is None or pool.pid != os.getpid():
        return None
    if a.dtype.hasobject:
        if a.dtype != object or a.size == 0:
            return None
        order = _order(a)
        values = a.ravel(order=order).tolist()
        if set(map(type, values)) != {bytes}:
            return None
        # A pickle of the list of values, streamed by the C pickler straight into
        # the slot (protocol 4 frames of ~64 KiB, no memo, no temporary of the
        # whole stream): one opcode and a length per value, and read back by the
        # C unpickler straight into bytes objects.
        payload = sum(map(len, values))
        bound = payload + 20 * len(values) + 64  # opcodes, lengths, frame headers
        slot = pool.acquire(bound) if bound >= INLINE_BYTES else None
        if slot is not None:
            writer = _SlotWriter(slot.buf[_HEADER : _HEADER + bound].data)
            pickler = pickle.Pickler(writer, protocol=4)
            pickler.fast = True  # no memo: every value is written once anyway
            try:
                pickler.dump(values)
            except ValueError:  # pragma: no cover - the bound above always holds
                slot.buf[0] = _FREE
            else:
                return (_rebuild_bytes, (*pool.describe(slot), writer.pos, a.shape, order))
        return (_rebuild_bytes_inline, (pickle.dumps(values, protocol=4), a.shape, order))
    nbytes = a.nbytes
    if nbytes < INLINE_BYTES:
        return None
    slot = pool.acquire(nbytes)
    if slot is None:
        return None
    order = _order(a)
    dst = slot.buf[_HEADER : _HEADER + nbytes].view(a.dtype).reshape(a.shape, order=order)
    np.copyto(dst, a, casting="no")
    return (_rebuild_array, (*pool.describe(slot), a.dtype, a.shape, order))


def _reduce_ndarray(a: np.ndarray) -> Any:
    packed = _pack(a)
    return packed if packed is not None else a.__reduce_ex__(4)


def _reduce_tensor(t: Any) -> Any:
    fallback = _TORCH_REDUCE
    if (
        type(t) is torch.Tensor
        and t.device.type == "cpu"
        and t.layout == torch.strided
        and not t.requires_grad
        and not t.is_shared()  # type: ignore[no-untyped-call]
        and not t.is_quantized
    ):
        try:
            a = t.numpy()
        except (RuntimeError, TypeError):  # bfloat16, conjugate views...: torch's way
            pass
        else:
            packed = _pack(a)
            if packed is None:
                packed = (_inline_array, (a.copy(),))
            return (_rebuild_tensor, packed)
    if fallback is None:
        return t.__reduce_ex__(4)
    return fallback(t)


# main process side: the slots of each worker it has heard from
_MAPPED: dict[tuple[int, int], dict[int, np.ndarray]] = {}
_MAPPED_LOCK = threading.Lock()
_SWEEPER: Optional[threading.Thread] = None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. EPERM: it exists
        return True
    return True


def _sweep(new_token: Optional[tuple[int, int]] = None) -> None:
    """Let go of the slots of workers that have exited (their memory is freed then)."""
    with _MAPPED_LOCK:
        for token in list(_MAPPED):
            if token != new_token and (
                (new_token is not None and token[0] == new_token[0]) or not _alive(token[0])
            ):
                del _MAPPED[token]


_SWEEP_STOP = threading.Event()


def _sweeper() -> None:
    global _SWEEPER
    while not _SWEEP_STOP.wait(_SWEEP_SECONDS):
        _sweep()
        with _MAPPED_LOCK:
            if not _MAPPED:
                _SWEEPER = None
                return


@atexit.register
def _release_all() -> None:
    """At exit, stop the sweeper and drop every mapping while torch is still whole."""
    _SWEEP_STOP.set()
    sweeper = _SWEEPER
    if sweeper is not None:
        sweeper.join(timeout=5)
    with _MAPPED_LOCK:
        _MAPPED.clear()
    _LENT.clear()


def _attach(token: tuple[int, int], slot_id: int, storage: Any) -> np.ndarray:
    global _SWEEPER
    slots = _MAPPED.get(token)
    if slots is None:
        _sweep(token)
        with _MAPPED_LOCK:
            slots = _MAPPED.setdefault(token, {})
            if _SWEEPER is None:
                _SWEEPER = threading.Thread(
                    target=_sweeper, name="tfrecord_lite-slot-sweeper", daemon=True
                )
                _SWEEPER.start()
    if storage is not None:
        buf = torch.empty(0, dtype=torch.uint8).set_(storage).numpy()
        slots[slot_id] = buf
        buf[1] = 1
        return buf
    known = slots.get(slot_id)
    if known is None:
        raise RuntimeError(
            f"tfrecord_lite.torch: a batch refers to shared-memory slot {slot_id} of worker "
            f"process {token[0]}, which this process never received; the arrays were "
            "meant for the DataLoader's main process (pass shared_memory=False to the "
            "dataset to send them by plain pickling)"
        )
    return known


# Arrays lent out of slots: a weak reference to the object at the root of the
# array's memory (every view of it keeps that object alive) -> the slot's buffer,
# handed back (state FREE) when the last view is gone.
_LENT: dict[int, tuple[Any, np.ndarray]] = {}


def _give_back(ref: Any) -> None:
    lent = _LENT.pop(id(ref), None)
    if lent is not None:
        lent[1][0] = _FREE


def _rebuild_array(
    token: tuple[int, int],
    slot_id: int,
    storage: Any,
    dtype: np.dtype[Any],
    shape: tuple[int, ...],
    order: _Order,
) -> np.ndarray:
    buf = _attach(token, slot_id, storage)
    nbytes = dtype.itemsize * math.prod(shape)
    if LEND:
        # No copy: the array is the slot's memory, which the worker leaves alone
        # until every view of the array is gone (then the slot goes back to it).
        flat = np.frombuffer(buf[_HEADER : _HEADER + nbytes].data, np.uint8)
        root: Any = flat.base
        if type(root) is memoryview:  # NumPy's own (or ours): views end there
            ref = weakref.ref(root, _give_back)
            _LENT[id(ref)] = (ref, buf)
            return flat.view(dtype).reshape(shape, order=order)
    try:
        src = buf[_HEADER : _HEADER + nbytes].view(dtype).reshape(shape, order=order)
        return src.copy(order="K")
    finally:
        buf[0] = _FREE


def _bytes_array(values: list[bytes], shape: tuple[int, ...], order: _Order) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out.reshape(shape, order=order)


def _rebuild_bytes(
    token: tuple[int, int],
    slot_id: int,
    storage: Any,
    nbytes: int,
    shape: tuple[int, ...],
    order: _Order,
) -> np.ndarray:
    buf = _attach(token, slot_id, storage)
    try:
        values = _load_bytes(buf[_HEADER : _HEADER + nbytes])
    finally:
        buf[0] = _FREE
    return _bytes_array(values, shape, order)


def _load_bytes(stream: Any) -> list[bytes]:
    values = pickle.loads(stream)
    if type(values) is not list:  # pragma: no cover - written by _pack only
        raise RuntimeError("tfrecord_lite.torch: a damaged shared-memory slot")
    return values


def _rebuild_bytes_inline(stream: bytes, shape: tuple[int, ...], order: _Order) -> np.ndarray:
    return _bytes_array(_load_bytes(stream), shape, order)


def _inline_array(a: np.ndarray) -> np.ndarray:
    return a


def _rebuild_tensor(rebuild: Callable[..., np.ndarray], args: tuple[Any, ...]) -> Any:
    a = rebuild(*args)
    if not a.flags.writeable:
        a = a.copy()
    return torch.from_numpy(a)


def _slot_count() -> int:
    """Slots the main process holds mappings of (for tests)."""
    with _MAPPED_LOCK:
        return sum(len(v) for v in _MAPPED.values())


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

    def __iter__(self) -> Iterator[Any]:
        if self.shared_memory and _in_worker():
            _install_handoff()
        n, i = worker_shard(self.rank, self.world_size)
        extra = ((n, i, "auto"),) if n > 1 else ()
        it = self.dataset._iterate(self._epoch_key(), extra)
        try:
            if self.as_tensors:
                for item in it:
                    yield to_tensors(item)
            else:
                yield from it
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    def __repr__(self) -> str:
        return f"tfrecord_lite.torch.IterableDataset({self.dataset!r})"


class MapDataset(_tud.Dataset[Any]):
    """Random access over the records of one or more uncompressed TFRecord files.

    ``len(ds)`` is the total number of records and ``ds[i]`` the i-th in file
    order (parsed with ``features`` if given, then ``transform``). Uses each file's
    index (``file.index``/``file.idx``) when there is one, else builds it once,
    streaming. Works with any sampler: ``shuffle=True``, ``DistributedSampler``.
    ``decompress=True`` accepts GZIP/ZLIB files by decompressing each into a
    temporary file first. In DataLoader worker processes, batches reach the
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
            from ._examples import compile_features

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
        if self.shared_memory and (_POOL is None or _POOL.pid != os.getpid()) and _in_worker():
            _install_handoff()
        item: Any = record
        if self.features is not None:
            from ._examples import parse_single_example

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
