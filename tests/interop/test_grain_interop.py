"""tfrecord_lite.tfds data sources with the real Grain (``make interop``).

``builder.as_data_source(split)`` is a Grain ``RandomAccessDataSource``: Grain's
map-style dataset shuffles (seeded) and batches it, and its ``DataLoader`` reads it
in 2 worker processes, every record exactly once per epoch.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

grain = pytest.importorskip("grain")
pytest.importorskip("PIL")

import tfrecord_lite.tfds as tfds  # noqa: E402

ROOT = Path(__file__).resolve().parents[1] / "data" / "tfds"
TABULAR = ROOT / "tfl_tabular" / "1.2.0"
DIGITS = ROOT / "tfl_digits" / "small" / "3.0.1"


class AddPid(grain.transforms.Map):
    """Tag each example with the process that decoded it."""

    def map(self, element: dict[str, Any]) -> dict[str, Any]:
        return {**element, "pid": np.int64(os.getpid())}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tfds.DataSource:
    index_dir = tmp_path_factory.mktemp("index")
    return tfds.builder_from_directory(TABULAR).as_data_source("train", index_dir=str(index_dir))


def test_it_is_a_grain_random_access_source(source: tfds.DataSource) -> None:
    from grain._src.python.dataset import base

    assert isinstance(source, base.RandomAccessDataSource)
    assert isinstance(source, base.SupportsBatchedReadRandomAccessDataSource)
    ds = grain.MapDataset.source(source)
    assert len(ds) == 103
    assert int(ds[5]["id"]) == int(source[5]["id"])


def _ids(batches: Any) -> list[int]:
    return [int(i) for b in batches for i in b["id"]]


def test_map_dataset_seeded_shuffle_and_batch(source: tfds.DataSource) -> None:
    def pipeline(seed: int) -> Any:
        return grain.MapDataset.source(source).shuffle(seed=seed).batch(batch_size=16)

    batches = list(pipeline(42))
    assert [len(b["id"]) for b in batches] == [16] * 6 + [7]
    assert batches[0]["x"].shape == (16, 3) and batches[0]["x"].dtype == np.float32
    ids = _ids(batches)
    everything = sorted(int(e["id"]) for e in source)
    assert sorted(ids) == everything and len(set(ids)) == 103
    assert ids != everything  # shuffled
    assert _ids(pipeline(42)) == ids  # the seed decides the order
    assert _ids(pipeline(7)) != ids


def test_data_loader_two_workers_reads_each_record_once_per_epoch(source: tfds.DataSource) -> None:
    everything = sorted(int(e["id"]) for e in source)
    for seed in (3, 4):  # one epoch per loader; two epochs with different shuffles
        sampler = grain.samplers.IndexSampler(
            num_records=len(source), shuffle=True, num_epochs=1, seed=seed
        )
        loader = grain.DataLoader(
            data_source=source,
            sampler=sampler,
            operations=[AddPid(), grain.transforms.Batch(batch_size=10)],
            worker_count=2,
        )
        seen: list[int] = []
        pids: set[int] = set()
        for batch in loader:
            seen += [int(i) for i in batch["id"]]
            pids |= {int(p) for p in batch["pid"]}
        assert sorted(seen) == everything  # every record, exactly once
        assert seen != everything  # shuffled
        assert len(pids) == 2 and os.getpid() not in pids  # decoded in the 2 workers


def test_images_through_grain() -> None:
    src = tfds.builder_from_directory(DIGITS).as_data_source("train")

    def normalize(ex: dict[str, Any]) -> dict[str, Any]:
        return {"image": ex["image"].astype(np.float32) / 255.0, "label": ex["label"]}

    ds = grain.MapDataset.source(src).shuffle(seed=0).map(normalize).batch(8)
    batch = ds[0]
    assert batch["image"].shape == (8, 28, 28, 1) and batch["image"].dtype == np.float32
    assert batch["label"].shape == (8,)
    labels = sorted(int(label) for b in ds for label in b["label"])
    assert labels == sorted(int(e["label"]) for e in src)
