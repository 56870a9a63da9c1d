"""Real TensorFlow reads the seekable GZIP/ZLIB files tfrecord_lite writes.

``seekable=True`` (``TFRecordWriter``, ``ShardedWriter``, ``write_examples``) ends a
deflate block with a full flush at a record boundary every few MiB; the file must
stay one standard stream: ``tf.data.TFRecordDataset`` reads every record, equal, with
every deflate backend, and the seek points the index keeps are those flush points.
The spacing is made small here so that each file has many of them. Grain's global
shuffle and range shards read a TFDS data source of such shards as they read plain ones.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
tf.get_logger().setLevel("ERROR")

import tfrecord_lite as tfr  # noqa: E402
from tfrecord_lite._files import _compress, _gzindex, _writer  # noqa: E402

BACKENDS = _compress.available_deflate_backends()


@pytest.fixture(autouse=True)
def small_spacing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_writer, "SEEKABLE_SPACING", 32 * 1024)


@pytest.fixture(params=["auto", *BACKENDS])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(_compress.ENV_VAR, request.param)
    return str(request.param)


def records_for(seed: int, n: int = 4000) -> list[bytes]:
    """Text-like and random records, empty ones included."""
    rng = random.Random(seed)
    words = [bytes(rng.choice(b"abcdefgh") for _ in range(rng.randint(2, 9))) for _ in range(40)]
    out = []
    for i in range(n):
        k = rng.randint(0, 600)
        if i % 7 == 0:
            out.append(rng.randbytes(k))
        else:
            out.append(b" ".join(rng.choice(words) for _ in range(k // 6))[:k])
    return out


def tf_read(path: str, compression: str) -> list[bytes]:
    dataset = tf.data.TFRecordDataset(path, compression_type=compression)
    return [x.numpy() for x in dataset]


def flush_points(index: str) -> int:
    points = _gzindex.decode(Path(index).read_bytes()).points
    return sum(p.kind == _gzindex.FLUSH for p in points)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_tensorflow_reads_a_seekable_file(tmp_path: Path, compression: str, backend: str) -> None:
    recs = records_for(1)
    path = str(tmp_path / "seekable.tfrecord")
    with tfr.TFRecordWriter(path, compression, seekable=True) as w:
        for r in recs[:2000]:
            w.write(r)
        w.flush()  # a sync flush among the full ones
        w.write_all(recs[2000:])
    assert tf_read(path, compression) == recs
    assert flush_points(tfr.create_index(path, spacing=64 * 1024)) >= 3
    with tfr.TFRecordFile(path) as f:
        assert f[[3999, 0, 2500]] == [recs[3999], recs[0], recs[2500]]


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_tensorflow_reads_seekable_shards(tmp_path: Path, compression: str, backend: str) -> None:
    recs = records_for(2, 12000)
    with tfr.ShardedWriter(
        tmp_path / "train", 2, compression=compression, write_index=True, seekable=True
    ) as w:
        w.write_all(recs)
    for k, (path, index) in enumerate(zip(w.paths, w.index_paths)):
        assert tf_read(path, compression) == recs[k::2]
        assert flush_points(index) >= 3
        with tfr.TFRecordFile(path) as f:
            assert f[::-1] == recs[k::2][::-1]
    files = tf.data.Dataset.list_files(str(tmp_path / "train-*-of-00002"), shuffle=False)
    both = tf.data.TFRecordDataset(files, compression_type=compression)
    assert sorted(x.numpy() for x in both) == sorted(recs)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_tensorflow_parses_seekable_write_examples(
    tmp_path: Path, compression: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfrecord_lite._examples import _column_files as _columns

    monkeypatch.setattr(_columns, "WRITE_CHUNK_BYTES", 32 * 1024)
    n = 20000
    rng = np.random.default_rng(3)
    columns = {
        "id": np.arange(n, dtype=np.int64),
        "vec": rng.standard_normal((n, 16)).astype(np.float32),
        "name": [b"row %d" % i for i in range(n)],
    }
    path = str(tmp_path / "examples.tfrecord")
    tfr.write_examples(path, columns, compression=compression, seekable=True)
    spec = {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "vec": tf.io.FixedLenFeature([16], tf.float32),
        "name": tf.io.FixedLenFeature([], tf.string),
    }
    dataset = tf.data.TFRecordDataset(path, compression_type=compression).batch(n)
    parsed = tf.io.parse_example(next(iter(dataset)), spec)
    assert (parsed["id"].numpy() == columns["id"]).all()
    assert (parsed["vec"].numpy() == columns["vec"]).all()
    assert parsed["name"].numpy().tolist() == columns["name"]
    assert flush_points(tfr.create_index(path, spacing=64 * 1024)) >= 3


TABULAR = Path(__file__).resolve().parents[1] / "data" / "tfds" / "tfl_tabular" / "1.2.0"


def compressed_tabular(dest: Path, compression: str) -> Path:
    """tfl_tabular with every shard rewritten as a seekable GZIP/ZLIB file (same names)
    and its binary index beside it."""
    import shutil

    shutil.copytree(TABULAR, dest)
    for shard in dest.glob("*.tfrecord-*"):
        recs = list(tfr.tf_record_iterator(str(shard)))
        with tfr.TFRecordWriter(str(shard), compression, seekable=True) as w:
            w.write_all(recs)
        tfr.create_index(str(shard))
    return dest


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_grain_shuffles_and_shards_a_compressed_data_source(
    tmp_path: Path, compression: str
) -> None:
    grain = pytest.importorskip("grain")
    import tfrecord_lite.tfds as tfds

    data = compressed_tabular(tmp_path / "ds", compression)
    src = tfds.builder_from_directory(data).as_data_source("train")
    plain = tfds.builder_from_directory(TABULAR).as_data_source("train", index_dir=str(tmp_path))
    everything = [int(e["id"]) for e in plain]
    assert [int(e["id"]) for e in src] == everything
    # Grain's global shuffle: a seeded permutation of the indices, read at random.
    shuffled = grain.MapDataset.source(src).shuffle(seed=5).batch(batch_size=16)
    ids = [int(i) for b in shuffled for i in b["id"]]
    assert sorted(ids) == sorted(everything) and ids != everything
    again = grain.MapDataset.source(plain).shuffle(seed=5).batch(batch_size=16)
    assert ids == [int(i) for b in again for i in b["id"]]  # the same order as plain shards
    # Range shards (ShardOptions: each shard a contiguous range of the records), read
    # in worker processes: the same records as from the plain shards.
    seen: list[int] = []
    for shard in range(3):
        parts = []
        for source in (src, plain):
            sampler = grain.samplers.IndexSampler(
                num_records=len(source),
                shard_options=grain.sharding.ShardOptions(shard_index=shard, shard_count=3),
                shuffle=False,
                num_epochs=1,
            )
            loader = grain.DataLoader(
                data_source=source,
                sampler=sampler,
                operations=[grain.transforms.Batch(batch_size=8)],
                worker_count=2,
            )
            parts.append([int(i) for b in loader for i in b["id"]])
        assert parts[0] == parts[1]
        where = sorted(everything.index(i) for i in parts[0])
        assert where == list(range(where[0], where[0] + len(where)))  # one range
        assert 30 <= len(where) <= 40
        seen += parts[0]
    assert len(set(seen)) == len(seen)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_tensorflow_reads_a_file_flushed_every_4_kib(
    tmp_path: Path, compression: str, backend: str
) -> None:
    recs = records_for(4, 3000)
    path = str(tmp_path / "dense.tfrecord")
    tfr.write_examples(path, {"r": recs}, compression=compression, seekable=4096)
    got = tf_read(path, compression)
    spec = {"r": tf.io.FixedLenFeature([], tf.string)}
    parsed = tf.io.parse_example(tf.constant(got), spec)["r"].numpy().tolist()
    assert parsed == recs
    assert flush_points(tfr.create_index(path, spacing=4096)) >= 100
