"""The shared-memory hand-off of arrays and tensors from DataLoader workers to the main process.

A worker process owns a pool of slots: shared uint8 tensors (``share_memory_()``)
of power-of-two capacities. Byte 0 of a slot's header is its state: the worker
sets BUSY when it fills the slot, the main process sets FREE when it has copied
the data out (each side only ever makes one of the two transitions). Byte 1 is
set by the main process once it has mapped the slot; until then the worker
sends the slot's storage along with the descriptor (torch passes its file
descriptor once), afterwards only (worker token, slot id, layout).

:func:`install` (in a worker) registers the reducers of ``np.ndarray`` and
``torch.Tensor`` with the pickler of torch's queues; the ``_rebuild_*`` functions
run in the main process when it unpickles. What a user sees of it is described in
:mod:`tfrecord_lite.torch`.
"""

from __future__ import annotations

import atexit
import math
import multiprocessing
import os
import pickle
import secrets
import threading
import weakref
from multiprocessing.reduction import ForkingPickler
from typing import Any, Callable, Literal, Optional

import numpy as np
import torch
import torch.utils.data as _tud

__all__ = [
    "INLINE_BYTES",
    "LEND",
    "MAX_POOL_BYTES",
    "bind_tunables",
    "in_worker",
    "install",
    "install_in_worker",
    "slot_count",
]

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

#: Where the three tunables above are read, at each use: the package binds this to its
#: own namespace (:func:`bind_tunables`), so ``tfrecord_lite.torch.LEND = False`` (or
#: ``MAX_POOL_BYTES``, ``INLINE_BYTES``) set on the package takes effect, in worker
#: processes forked after it too.
_TUNABLES: dict[str, Any] = {
    "INLINE_BYTES": INLINE_BYTES,
    "MAX_POOL_BYTES": MAX_POOL_BYTES,
    "LEND": LEND,
}


def bind_tunables(namespace: dict[str, Any]) -> None:
    """Read ``INLINE_BYTES``, ``MAX_POOL_BYTES`` and ``LEND`` from ``namespace`` from now on."""
    global _TUNABLES
    for name, value in _TUNABLES.items():
        namespace.setdefault(name, value)
    _TUNABLES = namespace


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
            if self.total + capacity > _TUNABLES["MAX_POOL_BYTES"]:
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


def install() -> None:
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


def install_in_worker() -> None:
    """:func:`install` when called in a DataLoader worker process (cheap once installed)."""
    pool = _POOL
    if (pool is None or pool.pid != os.getpid()) and in_worker():
        install()


def in_worker() -> bool:
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
        slot = pool.acquire(bound) if bound >= _TUNABLES["INLINE_BYTES"] else None
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
    if nbytes < _TUNABLES["INLINE_BYTES"]:
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
    if _TUNABLES["LEND"]:
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


def slot_count() -> int:
    """Slots the main process holds mappings of (for tests)."""
    with _MAPPED_LOCK:
        return sum(len(v) for v in _MAPPED.values())
