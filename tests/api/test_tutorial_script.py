"""A TensorFlow-tutorial script runs with only the ``tf.`` -> ``tfr.`` prefix changed.

``TF_SCRIPT`` is written against TensorFlow 2 (every ``tf.`` name in it exists in
TensorFlow; it runs as is under ``tensorflow``): it writes MNIST-like images and
labels as ``tf.train.Example`` records, reads them back three ways (the TF 1.x
record iterator, ``tf.data.TFRecordDataset`` + ``map``, and batches), parses them,
and turns the raw bytes back into images with ``tf.io.decode_raw`` and a reshape.
Results are compared with NumPy (``np.asarray`` / ``np.reshape`` accept TensorFlow
tensors and NumPy arrays alike, so no ``.numpy()`` is needed).

The test ports it mechanically -- ``import tensorflow as tf`` becomes
``import tfrecord_lite as tfr`` and every ``tf.`` becomes ``tfr.`` -- and runs it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

import tfrecord_lite as tfr

TF_SCRIPT = """\
import numpy as np
import tensorflow as tf

# MNIST-like data: N 28x28 uint8 images and their labels.
rng = np.random.default_rng(0)
images = rng.integers(0, 256, size=(N, 28, 28), dtype=np.uint8)
labels = rng.integers(0, 10, size=N)


def _bytes_feature(value):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _int64_feature(value):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def image_example(image, label):
    feature = {
        "height": _int64_feature(image.shape[0]),
        "width": _int64_feature(image.shape[1]),
        "label": _int64_feature(int(label)),
        "image_raw": _bytes_feature(image.tobytes()),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


# Write: a plain file and a GZIP one.
options = tf.io.TFRecordOptions(compression_type="GZIP")
with tf.io.TFRecordWriter(PATH) as writer, tf.io.TFRecordWriter(GZ_PATH, options) as gz:
    for image, label in zip(images, labels):
        tf_example = image_example(image, label)
        writer.write(tf_example.SerializeToString())
        gz.write(tf_example.SerializeToString())

image_feature_description = {
    "height": tf.io.FixedLenFeature([], tf.int64),
    "width": tf.io.FixedLenFeature([], tf.int64),
    "label": tf.io.FixedLenFeature([], tf.int64),
    "image_raw": tf.io.FixedLenFeature([], tf.string),
}

# Read 1: record by record, parse_single_example, decode_raw + reshape.
records = list(tf.compat.v1.io.tf_record_iterator(PATH))
single = []
for record in records:
    parsed = tf.io.parse_single_example(record, image_feature_description)
    shape = (int(parsed["height"]), int(parsed["width"]))
    image = np.reshape(tf.io.decode_raw(parsed["image_raw"], tf.uint8), shape)
    single.append((image, int(parsed["label"])))
first = tf.train.Example.FromString(records[0])
first_label = first.features.feature["label"].int64_list.value[0]
gz_records = list(tf.compat.v1.io.tf_record_iterator(GZ_PATH, options))

# Read 2: a dataset, one parsed record at a time.
raw_image_dataset = tf.data.TFRecordDataset(GZ_PATH, compression_type="GZIP")


def _parse_image_function(example_proto):
    return tf.io.parse_single_example(example_proto, image_feature_description)


mapped = []
for image_features in raw_image_dataset.map(_parse_image_function):
    image_raw = tf.io.decode_raw(image_features["image_raw"], tf.uint8)
    mapped.append((np.reshape(image_raw, (28, 28)), int(image_features["label"])))

# Read 3: batches of serialized records through parse_example.
batch_images, batch_labels = [], []
for batch in tf.data.TFRecordDataset([PATH]).batch(BATCH):
    parsed = tf.io.parse_example(batch, image_feature_description)
    batch_images.append(np.reshape(tf.io.decode_raw(parsed["image_raw"], tf.uint8), (-1, 28, 28)))
    batch_labels.append(np.asarray(parsed["label"]))
images_back = np.concatenate(batch_images)
labels_back = np.concatenate(batch_labels)
"""

IMPORT_TF = "import tensorflow as tf\n"
IMPORT_TFR = "import tfrecord_lite as tfr\n"


def port(script: str) -> str:
    """The mechanical port: the import line, then every ``tf.`` prefix."""
    assert script.count(IMPORT_TF) == 1
    return script.replace(IMPORT_TF, IMPORT_TFR).replace("tf.", "tfr.")


PORTED = port(TF_SCRIPT)


def tfr_names(source: str) -> list[str]:
    """Every dotted ``tfr.x.y`` name the ported script uses (attribute chains only)."""
    return sorted(set(re.findall(r"(?<![\w.])tfr(?:\.[A-Za-z_]\w*)+", source)))


def resolve(dotted: str) -> Any:
    obj: Any = tfr
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def test_the_port_is_mechanical() -> None:
    # "tf." only ever appears as the module prefix, so the replacement touches nothing else
    assert re.findall(r"[\w.]tf\.", TF_SCRIPT) == []
    assert "tfr" not in TF_SCRIPT
    tf_lines, tfr_lines = TF_SCRIPT.splitlines(), PORTED.splitlines()
    assert len(tf_lines) == len(tfr_lines)
    changed = [(a, b) for a, b in zip(tf_lines, tfr_lines) if a != b]
    assert len(changed) > 20
    for a, b in changed:
        assert b.replace("tfr.", "tf.").replace("tfrecord_lite as tfr", "tensorflow as tf") == a
    assert "tensorflow" not in PORTED


def test_every_tf_name_has_a_tfr_counterpart() -> None:
    names = tfr_names(PORTED)
    assert "tfr.io.decode_raw" in names and "tfr.train.Example.FromString" in names
    missing = []
    for name in names:
        try:
            resolve(name)
        except AttributeError:
            missing.append(name)
    assert missing == [], (
        "names TensorFlow's tutorial uses that tfrecord_lite lacks (a mechanical port "
        f"needs them): {missing}"
    )


def test_tutorial_script_runs_with_only_the_prefix_changed(tmp_path: Path) -> None:
    n, batch = 300, 64
    ns: dict[str, Any] = {
        "__name__": "tutorial",
        "N": n,
        "BATCH": batch,
        "PATH": str(tmp_path / "mnist.tfrecord"),
        "GZ_PATH": str(tmp_path / "mnist.tfrecord.gz"),
    }
    exec(compile(PORTED, "tutorial.py", "exec"), ns)
    assert ns["tfr"] is tfr
    images, labels = ns["images"], ns["labels"]
    assert images.shape == (n, 28, 28) and images.dtype == np.uint8

    # read 1: one record at a time
    assert len(ns["records"]) == n and all(type(r) is bytes for r in ns["records"])
    assert ns["gz_records"] == ns["records"]
    assert (tmp_path / "mnist.tfrecord.gz").read_bytes()[:2] == b"\x1f\x8b"
    single = ns["single"]
    assert len(single) == n
    for i in (0, 1, n // 2, n - 1):
        image, label = single[i]
        assert image.dtype == np.uint8 and image.shape == (28, 28)
        assert np.array_equal(image, images[i]) and label == labels[i]
    assert ns["first_label"] == labels[0]

    # read 2: dataset.map(parse_single_example)
    mapped = ns["mapped"]
    assert len(mapped) == n
    assert np.array_equal(np.stack([m[0] for m in mapped]), images)
    assert [m[1] for m in mapped] == labels.tolist()

    # read 3: batches through parse_example
    assert [len(b) for b in ns["batch_labels"]] == [64, 64, 64, 64, 44]
    images_back, labels_back = ns["images_back"], ns["labels_back"]
    assert images_back.dtype == np.uint8 and images_back.shape == (n, 28, 28)
    assert np.array_equal(images_back, images)
    assert labels_back.dtype == np.int64 and np.array_equal(labels_back, labels)

    # the files are the ones write_examples' readers understand too
    assert np.array_equal(tfr.read_examples(ns["PATH"])["label"], labels)
