"""``write_examples`` against TensorFlow (``make interop``): the same file bytes as
``tf.train.Example`` records written by ``tf.io.TFRecordWriter`` (plain and GZIP at
zlib's level), and ``tf.data`` parses our file back to the columns.

Keys are sorted and TensorFlow serializes with ``deterministic=True`` (sorted map
keys), so the bytes can be compared exactly.
"""

from __future__ import annotations

import gzip
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore", category=DeprecationWarning)

tf = pytest.importorskip("tensorflow")

import tfrecord_lite as tfr  # noqa: E402

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def _columns(n: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    edge = np.array([I64_MIN, I64_MAX, -1, 2**40, 300, 0, 127, -128], np.int64)
    labels[: min(n, 8)] = edge[: min(n, 8)]
    floats = rng.standard_normal((n, 2)).astype(np.float32)
    floats[: min(n, 3), 0] = np.array([np.nan, -0.0, np.inf], np.float32)[: min(n, 3)]
    return {
        "dim": np.tile(np.array([28, 28, 1]), (n, 1)),
        "image_raw": tfr.bytes_rows(rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)),
        "label": labels,
        "score": floats,
    }


def _tf_records(columns: dict[str, Any], n: int) -> list[bytes]:
    train = tf.train
    out = []
    for i in range(n):
        feature = {
            "dim": train.Feature(int64_list=train.Int64List(value=columns["dim"][i].tolist())),
            "image_raw": train.Feature(
                bytes_list=train.BytesList(value=[columns["image_raw"][i].tobytes()])
            ),
            "label": train.Feature(int64_list=train.Int64List(value=[int(columns["label"][i])])),
            "score": train.Feature(float_list=train.FloatList(value=columns["score"][i].tolist())),
        }
        ex = train.Example(features=train.Features(feature=feature))
        out.append(ex.SerializeToString(deterministic=True))
    return out


@pytest.mark.parametrize("n", [1, 9, 6000])
def test_write_examples_bytes_equal_tensorflow(tmp_path: Path, n: int) -> None:
    columns = _columns(n, n)
    ours, theirs = tmp_path / "ours.tfrecord", tmp_path / "theirs.tfrecord"
    assert tfr.write_examples(ours, columns) == n
    with tf.io.TFRecordWriter(str(theirs)) as w:
        for rec in _tf_records(columns, n):
            w.write(rec)
    assert ours.read_bytes() == theirs.read_bytes()


def test_write_examples_gzip_reads_in_tensorflow(tmp_path: Path) -> None:
    n = 3000
    columns = _columns(n, 1)
    path = tmp_path / "ours.tfrecord.gz"
    tfr.write_examples(path, columns, compression="GZIP")
    theirs = b"".join(tfr.encode_record(r) for r in _tf_records(columns, n))
    assert gzip.decompress(path.read_bytes()) == theirs
    spec = {
        "dim": tf.io.FixedLenFeature([3], tf.int64),
        "image_raw": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "score": tf.io.FixedLenFeature([2], tf.float32),
    }
    ds = tf.data.TFRecordDataset(str(path), compression_type="GZIP").batch(1024)
    parsed = [tf.io.parse_example(b, spec) for b in ds]
    got = {k: np.concatenate([p[k].numpy() for p in parsed]) for k in spec}
    np.testing.assert_array_equal(got["dim"], columns["dim"])
    np.testing.assert_array_equal(got["label"], columns["label"])
    np.testing.assert_array_equal(got["score"].view(np.uint32), columns["score"].view(np.uint32))
    assert got["image_raw"].tolist() == [r.tobytes() for r in columns["image_raw"]]
