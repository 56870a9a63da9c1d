"""Resuming tfrecord_lite.torch.IterableDataset mid-epoch: each worker's iterator gives
``state_dict()`` / ``load_state_dict()``, the protocol torchdata's StatefulDataLoader calls."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tfrecord_lite as tfr  # noqa: E402
import tfrecord_lite.torch as tt  # noqa: E402
from tfrecord_lite._data import IteratorStateError, TFRecordDataset  # noqa: E402
from tfrecord_lite.example_pb2 import Example  # noqa: E402

FEATURES = {"id": tfr.FixedLenFeature([], tfr.int64)}


@pytest.fixture
def files(tmp_path: Any) -> list[str]:
    paths = []
    for f, n in enumerate([41, 17, 60]):
        path = os.fspath(tmp_path / f"part-{f}.tfrecord")
        with tfr.TFRecordWriter(path, "GZIP" if f == 1 else None) as w:
            for r in range(n):
                e = Example()
                e.features.feature["id"].int64_list.value.append(1000 * f + r)
                w.write(e.SerializeToString())
        paths.append(path)
    return paths


def _dataset(files: list[str]) -> Any:
    pipeline = TFRecordDataset(files).shuffle(13, seed=3).parse(FEATURES)
    ds = tt.IterableDataset(pipeline, as_tensors=True)
    ds.set_epoch(2)
    return ds


def _ids(batches: list[Any]) -> list[int]:
    return [int(v) for b in batches for v in np.asarray(b["id"]).ravel()]


def test_the_iterator_resumes_through_its_state(files: list[str]) -> None:
    ds = _dataset(files)
    whole = _ids(list(iter(ds)))
    it = iter(ds)
    head = [next(it) for _ in range(25)]
    state = json.loads(json.dumps(it.state_dict()))
    it.close()
    again = iter(_dataset(files))
    again.load_state_dict(state)
    assert _ids(head + list(again)) == whole


def test_a_state_of_another_worker_shard_is_refused(files: list[str]) -> None:
    one = tt.IterableDataset(TFRecordDataset(files), rank=0, world_size=2)
    other = tt.IterableDataset(TFRecordDataset(files), rank=1, world_size=2)
    it = iter(one)
    next(it)
    with pytest.raises(IteratorStateError, match="shard"):
        iter(other).load_state_dict(it.state_dict())


@pytest.mark.parametrize("workers", [0, 2])
def test_stateful_dataloader_resumes_mid_epoch(files: list[str], workers: int) -> None:
    sdl = pytest.importorskip("torchdata.stateful_dataloader")

    def loader() -> Any:
        return sdl.StatefulDataLoader(_dataset(files), batch_size=4, num_workers=workers)

    whole = _ids(list(loader()))
    assert sorted(whole) == sorted(
        [r for r in range(41)] + [1000 + r for r in range(17)] + [2000 + r for r in range(60)]
    )
    first = loader()
    it = iter(first)
    head = [next(it) for _ in range(7)]
    state = first.state_dict()
    del it, first
    second = loader()
    second.load_state_dict(state)
    assert _ids(head + list(second)) == whole
