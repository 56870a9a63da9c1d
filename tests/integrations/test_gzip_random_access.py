"""Random access on GZIP/ZLIB shards everywhere it is used: ``tfrecord_lite.torch.MapDataset``
in a shuffled DataLoader and under ``DistributedSampler`` (each rank a range of the
records), and the TFDS / Grain data source (``as_data_source``) over compressed shards,
with their binary index beside them, made by a seekable ``ShardedWriter`` or by
``create_index``, or built once into the index cache."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
import tfrecord_lite.tfds as tfds
from tfrecord_lite._files import _gzindex

TABULAR = Path(__file__).resolve().parents[1] / "data" / "tfds" / "tfl_tabular" / "1.2.0"


def examples(n: int) -> list[bytes]:
    return [
        tfr.encode_example({"id": i, "blob": os.urandom(i % 90), "text": b"row %d" % i})
        for i in range(n)
    ]


def shards(folder: Path, compression: str, how: str, recs: list[bytes]) -> list[str]:
    """Three shards of ``recs``; ``how``: "writer" (seekable, its own index), "create"
    (written plain-style, then create_index) or "none" (no index file)."""
    with tfr.ShardedWriter(
        folder / "train",
        records_per_shard=len(recs) // 3 + 1,
        compression=compression,
        write_index=how == "writer",
        seekable=how == "writer",
    ) as w:
        w.write_all(recs)
    if how == "create":
        for p in w.paths:
            tfr.create_index(p)
    for p in w.paths:
        index = Path(p + ".index")
        assert index.exists() == (how != "none")
        if how != "none":
            assert index.read_bytes().startswith(_gzindex.MAGIC)
    return w.paths


@pytest.mark.parametrize("how", ["writer", "create", "none"])
@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_map_dataset_over_compressed_shards_in_a_shuffled_loader(
    tmp_path: Path, compression: str, how: str
) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    import tfrecord_lite.torch as tt

    recs = examples(900)
    paths = shards(tmp_path, compression, how, recs)
    ds = tt.MapDataset(paths)
    assert len(ds) == 900 and ds[-1] == recs[-1]
    assert [ds[i] for i in (899, 0, 450)] == [recs[899], recs[0], recs[450]]
    parsed = tt.MapDataset(paths, {"id": tfr.FixedLenFeature([], tfr.int64)})
    torch.manual_seed(0)
    loader = DataLoader(parsed, batch_size=64, shuffle=True, num_workers=2)
    ids = torch.cat([batch["id"] for batch in loader]).tolist()
    assert sorted(ids) == list(range(900)) and ids != list(range(900))


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_map_dataset_ranks_split_compressed_shards(tmp_path: Path, compression: str) -> None:
    pytest.importorskip("torch")
    from torch.utils.data import DistributedSampler

    import tfrecord_lite.torch as tt

    recs = examples(600)
    ds = tt.MapDataset(shards(tmp_path, compression, "writer", recs))
    seen: list[bytes] = []
    for rank in range(4):
        sampler: DistributedSampler[Any] = DistributedSampler(
            ds, num_replicas=4, rank=rank, shuffle=True, seed=3
        )
        sampler.set_epoch(1)
        picks = list(sampler)
        got = [ds[i] for i in picks]
        assert got == [recs[i] for i in picks]
        seen.extend(got)
    assert sorted(seen) == sorted(recs)
    clone = pickle.loads(pickle.dumps(ds))  # as handed to worker processes
    assert clone[599] == recs[599]


def gzip_copy(dest: Path, compression: str, index: bool) -> Path:
    """The tfl_tabular dataset with every shard rewritten as GZIP/ZLIB (same names)."""
    shutil.copytree(TABULAR, dest)
    for shard in dest.glob("*.tfrecord-*"):
        recs = list(tfr.tf_record_iterator(str(shard)))
        with tfr.TFRecordWriter(str(shard), compression, seekable=True) as w:
            w.write_all(recs)
        if index:
            tfr.create_index(str(shard))
    return dest


def ids(items: Any) -> list[int]:
    return [int(e["id"]) for e in items]


@pytest.mark.parametrize("index", [True, False])
@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_tfds_data_source_over_compressed_shards(
    tmp_path: Path, compression: str, index: bool
) -> None:
    data = gzip_copy(tmp_path / "ds", compression, index)
    plain = tfds.builder_from_directory(TABULAR).as_data_source("train", index_dir=str(tmp_path))
    cache = tmp_path / "cache"
    src = tfds.builder_from_directory(data).as_data_source("train", index_dir=str(cache))
    assert len(src) == len(plain) == 103
    want = ids(plain)
    assert ids(src) == want
    order = np.random.default_rng(0).permutation(103).tolist()
    assert ids(src[order]) == [want[i] for i in order]  # a global shuffle, batched
    assert [int(src[i]["id"]) for i in order[:20]] == [want[i] for i in order[:20]]
    assert ids(src[40:60]) == want[40:60]  # a range of records (a shard of them)
    cached = list(cache.rglob("*.index"))
    assert len(cached) == (0 if index else 3)
    assert all(p.read_bytes().startswith(_gzindex.MAGIC) for p in cached)
    clone = pickle.loads(pickle.dumps(src))
    assert int(clone[102]["id"]) == want[102]
    assert ids(tfds.builder_from_directory(data).as_data_source("train[10:30]")) == want[10:30]


def test_tfds_data_source_refuses_a_compressed_shard_of_another_length(tmp_path: Path) -> None:
    data = gzip_copy(tmp_path / "ds", "GZIP", True)
    shard = sorted(data.glob("*-train.tfrecord-*"))[0]
    recs = list(tfr.tf_record_iterator(str(shard)))
    with tfr.TFRecordWriter(str(shard), "GZIP", seekable=True) as w:
        w.write_all(recs[:-1])
    src = tfds.builder_from_directory(data).as_data_source("train", index_dir=str(tmp_path / "c"))
    with pytest.raises(tfr.StaleIndexError):
        src[0]
