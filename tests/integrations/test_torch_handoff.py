"""tfrecord_lite.torch: batches cross from DataLoader workers through shared-memory slots.

Every test compares what real worker processes deliver with what the same
pipeline gives in-process (types, dtypes, shapes, memory order, values), and
checks the slots really were used (or, where that is the point, not used), that
nothing is left in /dev/shm and that the main process lets go of the slots.
"""

from __future__ import annotations

import gc
import inspect
import os
import signal
import threading
import time
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

import tfrecord_lite as tfr  # noqa: E402
import tfrecord_lite.torch as tt  # noqa: E402
from tfrecord_lite._examples._values import RaggedValue, SparseValue  # noqa: E402
from tfrecord_lite.torch import _handoff as handoff  # noqa: E402

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork"), reason="the worker hand-off tests use fork-started workers"
)

N = 300
BATCH = 64


def _rows(i: int) -> dict[str, Any]:
    rng = np.random.default_rng(i)
    # bytes of varying length, with NULs at the end and empty values, so that any
    # fixed-width trick or trailing-NUL stripping would show
    raw = rng.integers(0, 256, int(rng.integers(0, 3000)), dtype=np.uint8).tobytes() + b"\0" * (
        i % 3
    )
    return {
        "id": i,
        "raw": raw,
        "pair": [b"a%d" % i, b"\0" * (i % 4)],
        "x": rng.standard_normal(300).astype(np.float32),
        "tags": [b"t"] * (i % 5),
        "ids": list(range(i % 7)),
    }


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("handoff") / "data.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        for i in range(N):
            w.write(tfr.encode_example(_rows(i)))
    return path


def _spec() -> dict[str, Any]:
    return {
        "id": tfr.FixedLenFeature([], tfr.int64),
        "raw": tfr.FixedLenFeature([], tfr.string),
        "pair": tfr.FixedLenFeature([2], tfr.string),
        "x": tfr.FixedLenFeature([300], tfr.float32),
        "tags": tfr.VarLenFeature(tfr.string),
        "ids": tfr.RaggedFeature(tfr.int64),
    }


def _extras(batch: dict[str, Any]) -> dict[str, Any]:
    """Arrays of every layout and dtype the hand-off has to reproduce."""
    x = batch["x"]
    out = dict(batch)
    out["x_f"] = np.asfortranarray(x)  # F-order, > 64 KiB
    out["x_t"] = x.T  # a transposed view (F-contiguous)
    out["x_strided"] = x[:, ::2]  # neither C nor F contiguous
    out["half"] = x.astype(np.float16)
    out["big_endian"] = x.astype(">f8")
    out["flags"] = np.repeat(x > 0, 4, axis=1)
    out["when"] = np.repeat(batch["id"].astype("datetime64[s]"), 2000)
    rec = np.zeros(len(x) * 200, dtype=[("a", "<i4"), ("b", "S3")])
    rec["a"] = np.arange(rec.size)
    rec["b"] = b"z\0"
    out["structured"] = rec
    out["scalar"] = np.float64(len(x))
    out["zero_d"] = np.array(7)
    out["empty"] = np.zeros((0, 5000), np.float32)
    out["texts"] = np.array(["é" * 2000] * len(x), dtype=object)  # objects that are not bytes
    out["mixed"] = np.array([b"b" * 2000, "s" * 2000] * (len(x) // 2), dtype=object)
    out["raw_f"] = np.asfortranarray(np.repeat(batch["raw"][:, None], 3, axis=1))
    out["nested"] = {"list": [x, x[:1]], "tuple": (batch["raw"], 3, "text")}
    return out


def _tensors(batch: dict[str, Any]) -> dict[str, Any]:
    batch = {k: v for k, v in batch.items() if k != "big_endian"}  # torch has no such tensors
    out = tt.to_tensors(batch)
    x = out["x"]
    out["grad"] = torch.ones(len(x), 100, requires_grad=True)  # torch's own path
    out["bf16"] = x.to(torch.bfloat16)  # no NumPy dtype: torch's own path
    shared = torch.arange(20000)
    shared.share_memory_()
    out["shared"] = shared
    out["slice"] = x[:, 10:200]  # a view into a larger storage
    return out


def same(a: Any, b: Any, where: str = "") -> None:
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)) and not isinstance(a, (SparseValue,)):
        assert len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{k}]")
    elif isinstance(a, SparseValue):
        for x, y in zip(a, b):
            same(x, y, where + ".sparse")
    elif isinstance(a, RaggedValue):
        same(a.values, b.values, where + ".values")
        same(a.row_splits, b.row_splits, where + ".row_splits")
    elif isinstance(a, np.ndarray):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), where
        assert a.flags.f_contiguous == b.flags.f_contiguous or a.ndim < 2, where
        if a.dtype == object:
            assert [type(v) for v in a.flat] == [type(v) for v in b.flat], where
            assert a.tolist() == b.tolist(), where
        else:
            assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), where
    elif isinstance(a, torch.Tensor):
        assert (a.dtype, a.shape, a.requires_grad) == (b.dtype, b.shape, b.requires_grad), where
        assert torch.equal(a.detach(), b.detach()), where
    else:
        assert a == b, where


def same_but_byte_order(g: dict[str, Any], w: dict[str, Any]) -> None:
    """Plain pickling (NumPy's own) hands big-endian arrays back in native byte order."""
    g, w = dict(g), dict(w)
    a, b = g.pop("big_endian"), w.pop("big_endian")
    assert a.dtype == np.float64 and b.dtype == ">f8" and np.array_equal(a, b)
    same(g, w)


def _shm() -> set[str]:
    try:
        return set(os.listdir("/dev/shm"))
    except FileNotFoundError:
        return set()


def _wait_released(deadline: float = 30) -> None:
    """The main process drops a worker's slots once the worker has exited."""
    gc.collect()
    end = time.monotonic() + deadline
    while handoff.slot_count() and time.monotonic() < end:
        time.sleep(0.05)
    assert handoff.slot_count() == 0
    while handoff._SWEEPER is not None and time.monotonic() < end:
        time.sleep(0.05)
    assert handoff._SWEEPER is None  # the sweeper thread stops when nothing is held


def _loader(ds: Any, workers: int, **kwargs: Any) -> DataLoader:
    return DataLoader(
        ds,
        batch_size=None,
        num_workers=workers,
        collate_fn=tt.collate,
        multiprocessing_context="fork",
        **kwargs,
    )


# --------------------------------------------------------------------------- same values as in-process


@pytest.mark.parametrize("as_tensors", [False, True], ids=["numpy", "tensors"])
def test_one_worker_gives_exactly_the_in_process_batches(data: str, as_tensors: bool) -> None:
    before = _shm()
    pipeline = tfr.TFRecordDataset(data).shuffle(50, seed=3).parse(_spec()).batch(BATCH)
    pipeline = pipeline.map(_extras)
    if as_tensors:
        pipeline = pipeline.map(_tensors)
    ds = tt.IterableDataset(pipeline)
    loader = _loader(ds, 1, persistent_workers=True)
    for epoch in (0, 1):
        ds.set_epoch(epoch)
        got = list(loader)
        assert handoff.slot_count() > 0  # the slots were used (the worker is still alive)
        ds.set_epoch(epoch)
        want = list(ds)  # in-process, same epoch
        assert len(got) == len(want) == -(-N // BATCH)
        for k, (g, w) in enumerate(zip(got, want)):
            same(g, w, f"epoch {epoch} batch {k}")
        assert sorted(i for b in got for i in b["id"].tolist()) == list(range(N))
        if as_tensors:
            x = got[0]["x"]
            assert isinstance(x, torch.Tensor)
            x.add_(1)  # a tensor the user owns: writable, no other batch changes
            assert got[0]["shared"].is_shared()  # went torch's way, as asked
    del loader
    _wait_released()
    assert _shm() - before == set()


def test_two_workers_every_record_once_and_slots_reused(data: str) -> None:
    ds = tt.IterableDataset(tfr.TFRecordDataset(data).parse(_spec()).batch(16).map(_extras))
    loader = _loader(ds, 2, persistent_workers=True, prefetch_factor=2)
    for epoch in range(3):
        ds.set_epoch(epoch)
        ids = [i for b in loader for i in b["id"].tolist()]
        assert sorted(ids) == list(range(N)), epoch
    # 19 batches x 3 epochs, ~12 large arrays each: slots are reused, not one per array
    assert 0 < handoff.slot_count() <= 2 * 12 * 6
    del loader
    _wait_released()


def test_shared_memory_false_and_a_full_pool_pickle_as_usual(
    data: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = tfr.TFRecordDataset(data).parse(_spec()).batch(BATCH).map(_extras)
    want = list(tt.IterableDataset(pipeline))
    off = _loader(tt.IterableDataset(pipeline, shared_memory=False), 1, persistent_workers=True)
    it = iter(off)
    got = list(it)
    assert handoff.slot_count() == 0
    for g, w in zip(got, want):
        same_but_byte_order(g, w)
    del it, off
    monkeypatch.setattr(tt, "MAX_POOL_BYTES", 0)  # fork: the workers see it too
    full = _loader(tt.IterableDataset(pipeline), 1, persistent_workers=True)
    got = list(full)
    assert handoff.slot_count() == 0
    for g, w in zip(got, want):
        same_but_byte_order(g, w)
    del full
    _wait_released()


# --------------------------------------------------------------------------- break, crash, clean-up


def test_early_break_then_a_full_epoch(data: str) -> None:
    before = _shm()
    ds = tt.IterableDataset(tfr.TFRecordDataset(data).parse(_spec()).batch(16).map(_extras))
    loader = _loader(ds, 2, persistent_workers=True, prefetch_factor=4)
    ds.set_epoch(0)
    for k, _ in enumerate(loader):
        if k == 2:
            break  # batches in flight are still in the queue
    ds.set_epoch(1)
    got = list(loader)
    assert sorted(i for b in got for i in b["id"].tolist()) == list(range(N))
    want = {i: raw for b in ds for i, raw in zip(b["id"].tolist(), b["raw"].tolist())}
    for b in got:
        assert b["raw"].tolist() == [want[i] for i in b["id"].tolist()]
    # breaking out of a non-persistent loader shuts its workers down
    for k, _ in enumerate(_loader(ds, 2)):
        if k == 1:
            break
    del loader
    _wait_released()
    assert _shm() - before == set()


def _die_in_worker(batch: dict[str, Any]) -> dict[str, Any]:
    info = torch.utils.data.get_worker_info()
    if info is not None and info.id == 1 and int(batch["id"][0]) >= 64:
        os.kill(os.getpid(), signal.SIGKILL)
    return batch


def test_worker_killed_mid_epoch_leaves_nothing_behind(data: str) -> None:
    before = _shm()
    threads = threading.active_count()
    ds = tt.IterableDataset(
        tfr.TFRecordDataset(data).parse(_spec()).batch(16).map(_extras).map(_die_in_worker)
    )
    loader = _loader(ds, 2, persistent_workers=True)
    seen = 0
    # Usually torch's own report. But a worker killed right after queueing a batch
    # whose slot goes across for the first time (an fd its resource-sharer thread
    # hands over) can close that connection before it reaps as dead: torch then
    # re-raises the EOFError (or ConnectionError) of fetching the fd.
    with pytest.raises((RuntimeError, EOFError, ConnectionError)) as raised:
        for _ in loader:
            seen += 1
    if raised.type is RuntimeError:
        assert "DataLoader worker" in str(raised.value)
    del raised  # (its traceback holds the loop's frames, and with them batches)
    assert seen >= 1
    # torch's SIGCHLD handler raises again for the dead worker whenever another
    # child exits, until the iterator has shut down: here it would interrupt that
    # shutdown (in ``__del__``) when the other worker exits. Not what is tested.
    handler = signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        del loader
        _wait_released()
    finally:
        signal.signal(signal.SIGCHLD, handler)
    assert _shm() - before == set()
    end = time.monotonic() + 20
    while threading.active_count() > threads + 1 and time.monotonic() < end:
        time.sleep(0.05)
    assert threading.active_count() <= threads + 1


def test_map_dataset_batches_through_slots(data: str) -> None:
    index_data = data  # uncompressed: MapDataset builds the index itself
    ds = tt.MapDataset(index_data, _spec())
    want = tt.collate([ds[i] for i in range(N)])
    loader = DataLoader(
        ds,
        batch_size=100,
        num_workers=1,
        collate_fn=tt.collate,
        persistent_workers=True,
        multiprocessing_context="fork",
    )
    got = list(loader)
    assert handoff.slot_count() > 0
    same(tfr.concat_parsed(got, _spec()), tfr.concat_parsed([want], _spec()))
    del loader
    _wait_released()


@pytest.mark.parametrize("as_tensors", [False, True], ids=["numpy", "tensors"])
def test_lent_arrays_stay_intact_while_held_and_their_slots_come_back(
    data: str, as_tensors: bool
) -> None:
    """Arrays are handed out in their slot's memory: a slot goes back to the worker
    only when the array and every view of it are gone, never while one is held."""
    # x: 64 x 300 float32 = 75 KiB per batch, so it crosses in a slot
    ds = tt.IterableDataset(
        tfr.TFRecordDataset(data).parse(_spec()).batch(BATCH), as_tensors=as_tensors
    )
    ds.set_epoch(0)
    want = list(ds)  # in-process
    loader = _loader(ds, 1, persistent_workers=True, prefetch_factor=2)
    ds.set_epoch(0)
    held = list(loader)  # every batch kept
    same(held, want)
    mapped = handoff.slot_count()
    assert mapped >= len(held)  # one slot per held x at least
    # views (NumPy slices, transposes; tensor slices) outlive the batches they came from
    views = [b["x"][2:, ::3] for b in held]
    views += [b["x"].T for b in held]
    want_views = [np.asarray(w["x"])[2:, ::3] for w in want] + [np.asarray(w["x"]).T for w in want]
    first = held[0]
    del held
    gc.collect()
    for epoch in range(1, 5):
        ds.set_epoch(epoch)
        for b in loader:
            b["x"][:] = -1  # writable; the worker does not see or reuse it while it lives
    for v, w in zip(views, want_views):
        assert np.array_equal(np.asarray(v), w)
    same(first, want[0])
    # the batches of epochs 1-4 were dropped one by one: their slots were reused,
    # not one new slot per batch (4 epochs x 5 batches)
    assert handoff.slot_count() <= mapped + 2 * 4
    del first, views, b
    del loader
    _wait_released()


def test_lend_false_set_on_the_package_copies_arrays_out_of_their_slots(
    data: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tfrecord_lite.torch.LEND = False`` reaches the hand-off: arrays still cross in
    slots, but are copied out of them, so none is lent while the batches are held."""
    monkeypatch.setattr(tt, "LEND", False)
    ds = tt.IterableDataset(tfr.TFRecordDataset(data).parse(_spec()).batch(BATCH))
    ds.set_epoch(0)
    want = list(ds)
    loader = _loader(ds, 1)
    ds.set_epoch(0)
    held = list(loader)
    same(held, want)
    assert handoff.slot_count() > 0  # x (75 KiB a batch) crossed in a slot
    assert not handoff._LENT  # and was copied out of it
    monkeypatch.setattr(tt, "LEND", True)
    ds.set_epoch(0)
    lent = list(loader)
    same(lent, want)
    assert handoff._LENT  # the default: held arrays are their slots' memory
    del held, lent, loader
    _wait_released()


def _tag_worker(batch: dict[str, Any]) -> dict[str, Any]:
    info = torch.utils.data.get_worker_info()
    return {**batch, "worker": -1 if info is None else info.id}


@pytest.mark.parametrize("in_order", [True, False], ids=["in_order", "out_of_order"])
def test_each_worker_gives_its_documented_shard_in_its_order(data: str, in_order: bool) -> None:
    """Worker w reads shard w of 2 (here one file: every other record), in file order,
    whatever order the DataLoader interleaves the workers' batches in."""
    order = {}
    if not in_order:
        if "in_order" not in inspect.signature(DataLoader).parameters:
            pytest.skip("DataLoader(in_order=...) needs torch >= 2.6")
        order["in_order"] = False
    spec = _spec()
    ds = tt.IterableDataset(tfr.TFRecordDataset(data).parse(spec).batch(8).map(_tag_worker))
    loader = _loader(ds, 2, persistent_workers=True, prefetch_factor=4, **order)
    for epoch in range(2):
        ds.set_epoch(epoch)
        got = list(loader)
        for w in range(2):
            want = list(tfr.TFRecordDataset(data).shard(2, w).parse(spec).batch(8))
            mine = [{k: v for k, v in b.items() if k != "worker"} for b in got if b["worker"] == w]
            assert len(mine) == len(want) > 0, (epoch, w)
            for k, (g, x) in enumerate(zip(mine, want)):
                same(g, x, f"epoch {epoch} worker {w} batch {k}")
        assert sorted(i for b in got for i in b["id"].tolist()) == list(range(N))
    del loader
    _wait_released()
