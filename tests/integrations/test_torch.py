"""tfrecord_lite.torch: exactly-once over DataLoader workers x ranks, map-style access, tensors."""

from __future__ import annotations

import gc
import os
import threading
import time
from collections import Counter
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader, DistributedSampler  # noqa: E402

import tfrecord_lite as tfr  # noqa: E402
import tfrecord_lite.torch as tt  # noqa: E402
from tfrecord_lite._data import TFRecordDataset  # noqa: E402
from tfrecord_lite._files._index import create_index  # noqa: E402
from tfrecord_lite.example_pb2 import Example  # noqa: E402


def make_files(directory: Any, counts: list[int]) -> list[str]:
    paths = []
    for f, n in enumerate(counts):
        path = os.path.join(directory, f"part-{f:05d}-of-{len(counts):05d}")
        with tfr.TFRecordWriter(path) as w:
            w.write_all(b"f%d-r%d" % (f, r) for r in range(n))
        paths.append(path)
    return paths


def make_examples(path: str, ids: range) -> str:
    with tfr.TFRecordWriter(path) as w:
        for i in ids:
            e = Example()
            e.features.feature["id"].int64_list.value.append(i)
            e.features.feature["x"].float_list.value.extend([i / 2] * 3)
            e.features.feature["raw"].bytes_list.value.append(b"r%d" % i)
            w.write(e.SerializeToString())
    return path


def features() -> dict[str, Any]:
    from tfrecord_lite._examples._schema import FixedLenFeature, float32, int64, string

    return {
        "id": FixedLenFeature([], int64),
        "x": FixedLenFeature([3], float32),
        "raw": FixedLenFeature([], string),
    }


# --------------------------------------------------------------------------- many combinations, no processes


@pytest.mark.parametrize(
    "counts", [[9], [0], [3, 0, 5], [4] * 6, [1, 2, 3, 4, 5, 6, 7, 8, 9]], ids=str
)
def test_every_record_once_for_any_ranks_and_workers(tmp_path, monkeypatch, counts):
    paths = make_files(tmp_path, counts)
    want = Counter(r for p in paths for r in tfr.tf_record_iterator(p))
    for world in (1, 2, 3, 4):
        for workers in (1, 2, 3, 5):
            got: Counter[bytes] = Counter()
            for rank in range(world):
                for w in range(workers):
                    info = SimpleNamespace(num_workers=workers, id=w, seed=1000 + w)
                    monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda info=info: info)
                    ds = tt.IterableDataset(
                        TFRecordDataset(paths).shuffle_files().shuffle(4),
                        rank=rank,
                        world_size=world,
                    )
                    got.update(ds)
            assert got == want, (world, workers)


def test_worker_shard_formula(monkeypatch):
    monkeypatch.setattr(
        torch.utils.data, "get_worker_info", lambda: SimpleNamespace(num_workers=4, id=3, seed=0)
    )
    assert tt.worker_shard(rank=2, world_size=3) == (12, 11)
    monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: None)
    assert tt.worker_shard() == (1, 0)
    assert tt.worker_shard(rank=1, world_size=2) == (2, 1)
    with pytest.raises(ValueError):
        tt.worker_shard(rank=2, world_size=2)


# --------------------------------------------------------------------------- a real DataLoader, 2 workers


def test_dataloader_two_workers_two_ranks_exactly_once_per_epoch(tmp_path):
    for f in range(3):
        make_examples(
            os.fspath(tmp_path / f"train-{f:05d}-of-00003"), range(100 * f, 100 * f + 17 + f)
        )
    pattern = os.fspath(tmp_path / "train-?????-of-00003")
    all_ids = sorted(100 * f + i for f in range(3) for i in range(17 + f))
    ranks = [
        tt.IterableDataset(
            TFRecordDataset(pattern).shuffle(8, seed=0).parse(features()).batch(4).prefetch(2),
            rank=r,
            world_size=2,
        )
        for r in range(2)
    ]
    orders = []
    for epoch in range(2):
        ids = []
        for ds in ranks:
            ds.set_epoch(epoch)
            for batch in DataLoader(ds, batch_size=None, num_workers=2, collate_fn=tt.collate):
                assert isinstance(batch["id"], np.ndarray) and batch["x"].shape[1:] == (3,)
                assert all(isinstance(v, bytes) for v in batch["raw"])
                ids.extend(batch["id"].tolist())
        assert sorted(ids) == all_ids, epoch
        orders.append(ids)
    assert orders[0] != orders[1]  # reshuffled
    ranks[0].set_epoch(0)
    ranks[1].set_epoch(0)
    again = [
        i
        for ds in ranks
        for b in DataLoader(ds, batch_size=None, num_workers=2, collate_fn=tt.collate)
        for i in b["id"].tolist()
    ]
    assert again == orders[0]  # reproducible


def test_dataloader_batching_as_tensors_and_early_break(tmp_path):
    path = make_examples(os.fspath(tmp_path / "a.tfrecord"), range(40))
    baseline = threading.active_count()
    ds = tt.IterableDataset(
        path, features(), lambda e: {"id": e["id"], "x": e["x"]}, as_tensors=True
    )
    ids = []
    for batch in DataLoader(ds, batch_size=8, num_workers=2):
        assert isinstance(batch["id"], torch.Tensor) and batch["x"].dtype == torch.float32
        ids.extend(batch["id"].tolist())
    assert sorted(ids) == list(range(40))
    loader = DataLoader(
        tt.IterableDataset(TFRecordDataset(path).prefetch(4)), batch_size=None, num_workers=2
    )
    for k, _ in enumerate(loader):
        if k == 3:
            break
    del loader
    gc.collect()
    # The loader's threads stop when it is dropped; under load that takes a moment.
    deadline = time.monotonic() + 20
    while threading.active_count() > baseline + 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= baseline + 1  # DataLoader's own watchdog may linger briefly


def test_collate_stacks_a_column_of_tensors_as_default_collate_does(tmp_path):
    """A transform that returns tensors: collate stacks them (it gave a list of tensors)."""
    from torch.utils.data import default_collate

    path = make_examples(os.fspath(tmp_path / "t.tfrecord"), range(10))

    def to_torch(e: dict[str, Any]) -> dict[str, Any]:
        return {"x": torch.from_numpy(e["x"]) * 2, "id": e["id"], "raw": e["raw"], "n": 3}

    ds = tt.IterableDataset(path, features(), to_torch)
    for collate_fn in (tt.collate, tt.collate_tensors):
        batches = list(DataLoader(ds, batch_size=4, collate_fn=collate_fn))
        assert [len(b["raw"]) for b in batches] == [4, 4, 2]
        for b in batches:
            assert isinstance(b["x"], torch.Tensor) and b["x"].dtype == torch.float32
            ids = torch.as_tensor(b["id"])
            assert torch.equal(b["x"], ids[:, None].float().repeat(1, 3))  # x = id / 2 * 2
            assert all(isinstance(r, bytes) for r in b["raw"])
        assert isinstance(
            batches[0]["id"], torch.Tensor if collate_fn is tt.collate_tensors else np.ndarray
        )
    rows = [to_torch(e) for e in TFRecordDataset(path).parse(features()).take(4)]
    assert torch.equal(tt.collate(rows)["x"], default_collate([r["x"] for r in rows]))
    # tensors in tuples, nested dicts and a batch of bare tensors
    pairs = [(torch.full((2,), i), {"y": torch.tensor(i)}) for i in range(3)]
    got = tt.collate(pairs)
    assert torch.equal(got[0], torch.tensor([[0, 0], [1, 1], [2, 2]]))
    assert torch.equal(got[1]["y"], torch.tensor([0, 1, 2]))
    assert torch.equal(
        tt.collate([torch.ones(2), torch.zeros(2)]), torch.tensor([[1.0, 1], [0, 0]])
    )


def test_collate_refuses_tensors_it_cannot_stack_naming_the_key():
    ragged = [{"x": torch.ones(3)}, {"x": torch.ones(3)}, {"x": torch.ones(4)}]
    with pytest.raises(
        ValueError,
        match=r"cannot batch key \['x'\]: element 0 has shape \(3,\) "
        r"and element 2 has shape \(4,\)",
    ):
        tt.collate(ragged)
    with pytest.raises(ValueError, match=r"cannot batch key \['x'\]"):
        tt.collate_tensors(ragged)
    mixed = [{"x": torch.ones(3)}, {"x": np.ones(3)}]
    with pytest.raises(
        ValueError, match=r"cannot batch key \['x'\]: element 0 is a Tensor and element 1 a ndarray"
    ):
        tt.collate(mixed)
    nested = [(0, {"y": torch.ones(1)}), (1, {"y": torch.ones(2)})]
    with pytest.raises(ValueError, match=r"cannot batch \[1\]\['y'\]"):
        tt.collate(nested)


def test_main_process_epochs_reshuffle_without_set_epoch(tmp_path):
    (path,) = make_files(tmp_path, [50])
    ds = tt.IterableDataset(TFRecordDataset(path).shuffle(50, seed=1))
    a, b = list(ds), list(ds)
    assert sorted(a) == sorted(b) and a != b
    with pytest.raises(TypeError):
        tt.IterableDataset(TFRecordDataset(path), features())


def test_to_tensors():
    from tfrecord_lite._examples._values import SparseValue

    out = tt.to_tensors(
        {
            "a": np.arange(3),
            "b": np.array([b"x"], dtype=object),
            "c": (np.float32(1.5), [np.ones(2)]),
            "d": SparseValue(np.zeros((0, 1), np.int64), np.zeros(0), np.array([0])),
            "e": "text",
        }
    )
    assert isinstance(out["a"], torch.Tensor) and out["a"].tolist() == [0, 1, 2]
    assert isinstance(out["b"], np.ndarray)
    assert (
        isinstance(out["c"], tuple)
        and float(out["c"][0]) == 1.5
        and isinstance(out["c"][1][0], torch.Tensor)
    )
    assert isinstance(out["d"], SparseValue) and out["e"] == "text"
    ro = np.arange(3)
    ro.flags.writeable = False
    assert tt.to_tensors(ro).tolist() == [0, 1, 2]


# --------------------------------------------------------------------------- map-style


def test_map_dataset_random_access_and_samplers(tmp_path):
    paths = [
        make_examples(os.fspath(tmp_path / "m-0.tfrecord"), range(0, 13)),
        make_examples(os.fspath(tmp_path / "m-1.tfrecord"), range(13, 13)),
        make_examples(os.fspath(tmp_path / "m-2.tfrecord"), range(13, 30)),
    ]
    create_index(paths[2])
    ds = tt.MapDataset(paths, features())
    assert len(ds) == 30 and ds.files[2].index_path == paths[2] + ".index"
    streamed = list(TFRecordDataset(paths).parse(features()))
    for i in (0, 12, 13, 29, -1):
        assert int(ds[i]["id"]) == int(streamed[i]["id"])
    with pytest.raises(IndexError):
        ds[30]
    raw = tt.MapDataset(paths)
    assert raw[5] == next(iter(TFRecordDataset(paths).skip(5)))
    assert [int(e["id"]) for e in ds.__getitems__([29, 0, 14, 14])] == [29, 0, 14, 14]

    loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, collate_fn=tt.collate)
    ids = [i for batch in loader for i in batch["id"].tolist()]
    assert sorted(ids) == list(range(30))
    seen = []
    for rank in range(2):
        sampler = DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=True, seed=3)
        sampler.set_epoch(1)
        seen += [
            int(i)
            for b in DataLoader(ds, batch_size=5, sampler=sampler, collate_fn=tt.collate_tensors)
            for i in b["id"]
        ]
    assert sorted(seen) == list(range(30))
    t = tt.MapDataset(paths, features(), as_tensors=True)[3]
    assert isinstance(t["id"], torch.Tensor) and isinstance(t["raw"], np.ndarray)
    assert "records=30" in repr(ds)
    with pytest.raises(ValueError):
        tt.MapDataset(paths, index_paths=[None])
