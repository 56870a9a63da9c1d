"""tfrecord_lite.ray / .arrow against Ray Data's own TFRecord reader and TensorFlow (``make interop``).

* ``tfrecord_lite.ray.read_tfrecords`` gives the values ``ray.data.read_tfrecords``
  (which parses with TensorFlow) gives, on the real TFX taxi shards and on
  MNIST-like files; Ray turns one-value lists into scalars and leaves missing
  features out, so both sides are compared as lists of values;
* TensorFlow (``tf.data.TFRecordDataset`` + ``tf.io.parse_example``) reads back
  exactly what ``tfrecord_lite.ray.write_tfrecords`` and
  ``tfrecord_lite.arrow.write_table`` write, SequenceExamples included.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")

import tfrecord_lite as tfr  # noqa: E402
from tfrecord_lite import arrow as tfa  # noqa: E402
from tfrecord_lite import ray as tfray  # noqa: E402

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

TAXI = Path(__file__).resolve().parents[3] / "shared" / "data" / "tfx-taxi"


@pytest.fixture(scope="module")
def ray_local() -> Any:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


def as_list(v: Any) -> list[Any]:
    """A cell as a flat list of Python values (None, a scalar, or a list/array of them)."""
    if v is None:
        return []
    if isinstance(v, np.ndarray):
        return [x.item() if isinstance(x, np.generic) else x for x in v.reshape(-1)]
    if isinstance(v, (list, tuple)):
        return [y for x in v for y in as_list(x)]
    if isinstance(v, np.generic):
        return [v.item()]
    return [v]


def compare_with_ray(paths: list[str], key: str, **kw: Any) -> int:
    ours = tfray.read_tfrecords(paths, **kw).take_all()
    theirs = ray.data.read_tfrecords(paths).take_all()
    assert len(ours) == len(theirs)
    ours.sort(key=lambda r: (as_list(r[key]), repr(sorted((k, as_list(v)) for k, v in r.items()))))
    theirs.sort(
        key=lambda r: (as_list(r[key]), repr(sorted((k, as_list(v)) for k, v in r.items())))
    )
    for a, b in zip(ours, theirs):
        keys = set(a) | set(b)
        for k in keys:
            assert as_list(a.get(k)) == as_list(b.get(k)), k
    return len(ours)


@pytest.mark.skipif(not TAXI.is_dir(), reason="../shared/data/tfx-taxi is not beside the repo")
def test_taxi_values_equal_rays_reader(ray_local: Any, tmp_path: Path) -> None:
    # Ray cannot read GZIP without being told; give both the plain records.
    plain = []
    for src in sorted(TAXI.iterdir()):
        dst = tmp_path / src.name.replace(".gz", "")
        with tfr.TFRecordWriter(dst) as w:
            w.write_all(tfr.tf_record_iterator(str(src)))
        plain.append(str(dst))
    features = dict(tfr.infer_schema(str(TAXI), None))
    n = compare_with_ray(plain, "trip_start_timestamp", features=features)
    assert n == 15_000


def test_mnist_like_values_equal_rays_reader(ray_local: Any, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    paths = []
    for s in range(3):
        path = str(tmp_path / f"mnist-{s}.tfrecord")
        tfr.write_examples(
            path,
            {
                "id": np.arange(100) + 100 * s,
                "image_raw": tfr.bytes_rows(rng.integers(0, 256, (100, 784), dtype=np.uint8)),
                "dim": np.tile([28, 28, 1], (100, 1)),
                "score": rng.random(100).astype(np.float32),
            },
        )
        paths.append(path)
    assert compare_with_ray(paths, "id") == 300


def tf_parse(paths: list[str], features: dict[str, Any], compression: str = "") -> dict[str, Any]:
    ds = tf.data.TFRecordDataset(paths, compression_type=compression)
    records = [r.numpy() for r in ds]
    return {"records": records, "parsed": tf.io.parse_example(records, features)}


def test_tensorflow_reads_what_the_ray_datasink_writes(ray_local: Any, tmp_path: Path) -> None:
    rows = [
        {
            "id": i,
            "blob": bytes([i % 256, 0, 255]),
            "vec": np.array([i, -i], np.float32),
            "tags": [b"a"] * (i % 3),
        }
        for i in range(120)
    ]
    ds = ray.data.from_items(rows, override_num_blocks=3)
    paths = tfray.write_tfrecords(ds, str(tmp_path / "out"), compression="GZIP")
    assert [os.path.basename(p) for p in paths] == [f"part-{i:05d}-of-00003" for i in range(3)]
    got = tf_parse(
        paths,
        {
            "id": tf.io.FixedLenFeature([], tf.int64),
            "blob": tf.io.FixedLenFeature([], tf.string),
            "vec": tf.io.FixedLenFeature([2], tf.float32),
            "tags": tf.io.VarLenFeature(tf.string),
        },
        "GZIP",
    )["parsed"]
    order = np.argsort(got["id"].numpy())
    assert got["id"].numpy()[order].tolist() == list(range(120))
    assert [got["blob"].numpy()[j] for j in order] == [r["blob"] for r in rows]
    np.testing.assert_array_equal(got["vec"].numpy()[order], np.stack([r["vec"] for r in rows]))
    tags = tf.sparse.to_dense(got["tags"], default_value=b"").numpy()
    assert [[t for t in tags[j] if t] for j in order] == [r["tags"] for r in rows]


def test_tensorflow_reads_sequence_examples_from_write_table(tmp_path: Path) -> None:
    src = tmp_path / "seq.tfrecord"
    with tfr.TFRecordWriter(src) as w:
        for i in range(20):
            w.write(
                tfr.encode_sequence_example(
                    {"id": i}, {"tok": [list(range(j + 1)) for j in range(i % 4)]}
                )
            )
    table = tfa.read_table(src)
    out = tmp_path / "seq2.tfrecord"
    tfa.write_table(table, out)
    records = [r.numpy() for r in tf.data.TFRecordDataset([str(out)])]
    ctx, seq, _ = tf.io.parse_sequence_example(
        records,
        context_features={"id": tf.io.FixedLenFeature([], tf.int64)},
        sequence_features={"tok": tf.io.RaggedFeature(tf.int64)},
    )
    assert ctx["id"].numpy().tolist() == list(range(20))
    assert seq["tok"].to_list() == [[list(range(j + 1)) for j in range(i % 4)] for i in range(20)]
