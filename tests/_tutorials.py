"""The five classic TFRecord tutorial patterns, as TensorFlow script text.

Each script is written in TensorFlow's spelling and runs unchanged under real
TensorFlow (``tests/interop/test_tutorials_interop.py`` runs it there); the port to
tfrecord_lite changes only the import line and the ``tf.`` prefix (:func:`port`).
NumPy does what ``.numpy()``, ``tf.reshape`` and ``tf.cast`` did in the originals
(``np.asarray`` / ``np.reshape`` / ``int()`` take TensorFlow tensors and NumPy
arrays alike).

* TF1 scripts (``TF1_SCRIPTS``) use ``tf.python_io``, ``tf.parse_single_example``,
  ``tf.FixedLenFeature`` and ``tf.decode_raw``: under TensorFlow 2 they run as
  ``import tensorflow.compat.v1 as tf`` (:func:`tf1_original`), the usual way
  TF1 scripts run today.
* Inputs are made by :func:`make_inputs` (image folders drawn with Pillow); paths
  and sizes are the UPPER-CASE names each script reads from its globals.
* Each script leaves its outputs in ``RESULT`` (plain Python / NumPy values).
"""

from __future__ import annotations

import linecache
import re
from pathlib import Path
from typing import Any

import numpy as np

IMPORT_TF = "import tensorflow as tf\n"
IMPORT_TFR = "import tfrecord_lite as tfr\n"

# (a) TF1: an image folder of apples and oranges, label from the file name, raw
# pixels resized to 112 x 92 written with tf.python_io.TFRecordWriter.
SCRIPT_A = """\
import os

import numpy as np
import tensorflow as tf
from PIL import Image


def _int64_feature(value):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def _bytes_feature(value):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


classes = {"apple": 0, "orange": 1}
writer = tf.python_io.TFRecordWriter(RECORD_PATH)
names = []
for img_name in sorted(os.listdir(IMAGE_DIR)):
    label = classes[img_name.split("_")[0]]
    img = Image.open(os.path.join(IMAGE_DIR, img_name)).convert("L")
    img = img.resize((112, 92))
    img_raw = img.tobytes()
    example = tf.train.Example(
        features=tf.train.Features(
            feature={"label": _int64_feature(label), "img_raw": _bytes_feature(img_raw)}
        )
    )
    writer.write(example.SerializeToString())
    names.append(img_name)
writer.close()

records = list(tf.python_io.tf_record_iterator(RECORD_PATH))
first = tf.train.Example.FromString(records[0])
RESULT = {
    "names": names,
    "count": len(records),
    "first_label": first.features.feature["label"].int64_list.value[0],
    "first_raw": first.features.feature["img_raw"].bytes_list.value[0],
    "records": records,
}
"""

# (b) TF1: read (a)'s records back: parse_single_example + FixedLenFeature,
# decode_raw to uint8 and a reshape to (92, 112).
SCRIPT_B = """\
import numpy as np
import tensorflow as tf

images, labels = [], []
for serialized_example in tf.python_io.tf_record_iterator(RECORD_PATH):
    features = tf.parse_single_example(
        serialized_example,
        features={
            "label": tf.FixedLenFeature([], tf.int64),
            "img_raw": tf.FixedLenFeature([], tf.string),
        },
    )
    img = tf.decode_raw(features["img_raw"], tf.uint8)
    img = np.reshape(img, (92, 112))
    images.append(np.asarray(img))
    labels.append(int(features["label"]))

RESULT = {"images": np.stack(images), "labels": labels}
"""

# (c) TF1: two writers, a training file and a cross-validation file, filled
# from class folders (every fifth image of a class goes to cross-validation).
SCRIPT_C = """\
import os

import numpy as np
import tensorflow as tf
from PIL import Image

CLASSES = sorted(os.listdir(DATA_DIR))
train_writer = tf.python_io.TFRecordWriter(TRAIN_PATH)
cv_writer = tf.python_io.TFRecordWriter(CV_PATH)
for index, name in enumerate(CLASSES):
    class_path = os.path.join(DATA_DIR, name)
    for i, img_name in enumerate(sorted(os.listdir(class_path))):
        img = Image.open(os.path.join(class_path, img_name)).convert("RGB")
        img = img.resize((64, 64))
        example = tf.train.Example(
            features=tf.train.Features(
                feature={
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[index])),
                    "img_raw": tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[img.tobytes()])
                    ),
                }
            )
        )
        if i % 5 == 0:
            cv_writer.write(example.SerializeToString())
        else:
            train_writer.write(example.SerializeToString())
train_writer.close()
cv_writer.close()

spec = {
    "label": tf.FixedLenFeature([], tf.int64),
    "img_raw": tf.FixedLenFeature([], tf.string),
}
out = {}
for split, path in (("train", TRAIN_PATH), ("cv", CV_PATH)):
    labels, sums = [], []
    for record in tf.python_io.tf_record_iterator(path):
        parsed = tf.parse_single_example(record, spec)
        image = np.reshape(tf.decode_raw(parsed["img_raw"], tf.uint8), (64, 64, 3))
        labels.append(int(parsed["label"]))
        sums.append(int(np.asarray(image, dtype=np.int64).sum()))
    out[split] = (labels, sums)
RESULT = {"classes": CLASSES, "train": out["train"], "cv": out["cv"]}
"""

# (d) TensorFlow 2's TFRecord guide: serialize_example with int, float and string
# features, tf.io.TFRecordWriter, TFRecordDataset(...).map(parse), JPEG bytes via
# tf.io.encode_jpeg / decode_jpeg, GZIP via TFRecordOptions, and the parallel read
# list_files + interleave + batch(32).prefetch(AUTOTUNE).
SCRIPT_D = """\
import numpy as np
import tensorflow as tf


def _bytes_feature(value):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _float_feature(value):
    return tf.train.Feature(float_list=tf.train.FloatList(value=[value]))


def _int64_feature(value):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def serialize_example(feature0, feature1, feature2, feature3):
    feature = {
        "feature0": _int64_feature(feature0),
        "feature1": _int64_feature(feature1),
        "feature2": _bytes_feature(feature2),
        "feature3": _float_feature(feature3),
    }
    example_proto = tf.train.Example(features=tf.train.Features(feature=feature))
    return example_proto.SerializeToString()


rng = np.random.default_rng(7)
n_observations = N
feature0 = rng.integers(0, 2, n_observations)
feature1 = rng.integers(0, 5, n_observations)
strings = np.array([b"cat", b"dog", b"chicken", b"horse", b"goat"])
feature2 = strings[feature1]
feature3 = rng.standard_normal(n_observations)

# Write: one plain file, one GZIP file, and SHARDS plain shards.
options = tf.io.TFRecordOptions(compression_type="GZIP")
with tf.io.TFRecordWriter(PATH) as writer, tf.io.TFRecordWriter(GZ_PATH, options) as gz:
    for i in range(n_observations):
        example = serialize_example(feature0[i], feature1[i], feature2[i], feature3[i])
        writer.write(example)
        gz.write(example)
for s in range(SHARDS):
    with tf.io.TFRecordWriter(SHARD_PATH % s) as writer:
        for i in range(s, n_observations, SHARDS):
            writer.write(serialize_example(feature0[i], feature1[i], feature2[i], feature3[i]))

feature_description = {
    "feature0": tf.io.FixedLenFeature([], tf.int64, default_value=0),
    "feature1": tf.io.FixedLenFeature([], tf.int64, default_value=0),
    "feature2": tf.io.FixedLenFeature([], tf.string, default_value=""),
    "feature3": tf.io.FixedLenFeature([], tf.float32, default_value=0.0),
}


def _parse_function(example_proto):
    return tf.io.parse_single_example(example_proto, feature_description)


raw_dataset = tf.data.TFRecordDataset([PATH])
parsed_dataset = raw_dataset.map(_parse_function)
rows = []
for parsed_record in parsed_dataset:
    rows.append(
        (
            int(parsed_record["feature0"]),
            int(parsed_record["feature1"]),
            np.asarray(parsed_record["feature2"]).item(),
            float(parsed_record["feature3"]),
        )
    )
gz_rows = [
    int(x["feature1"])
    for x in tf.data.TFRecordDataset(GZ_PATH, compression_type="GZIP").map(_parse_function)
]

# Images: JPEG bytes in a feature, decoded back.
y, x = np.mgrid[0:24, 0:32]
pictures = [
    np.stack([x * 4 + k * 40, y * 5 + k * 25, (x + y) * 4], -1).astype(np.uint8)
    for k in range(4)
]
with tf.io.TFRecordWriter(IMAGE_PATH) as writer:
    for k, picture in enumerate(pictures):
        image_string = np.asarray(tf.io.encode_jpeg(picture, quality=95)).item()
        feature = {
            "height": _int64_feature(picture.shape[0]),
            "width": _int64_feature(picture.shape[1]),
            "label": _int64_feature(k),
            "image_raw": _bytes_feature(image_string),
        }
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        writer.write(example.SerializeToString())
image_feature_description = {
    "height": tf.io.FixedLenFeature([], tf.int64),
    "width": tf.io.FixedLenFeature([], tf.int64),
    "label": tf.io.FixedLenFeature([], tf.int64),
    "image_raw": tf.io.FixedLenFeature([], tf.string),
}
decoded = []
for image_features in tf.data.TFRecordDataset(IMAGE_PATH).map(
    lambda example_proto: tf.io.parse_single_example(example_proto, image_feature_description)
):
    image = tf.io.decode_jpeg(image_features["image_raw"], channels=3)
    decoded.append((np.asarray(image), int(image_features["label"])))

# The parallel read: list_files + interleave + batch + prefetch.
files = tf.data.Dataset.list_files(SHARD_PATTERN, shuffle=False)
dataset = files.interleave(
    lambda filename: tf.data.TFRecordDataset(filename),
    cycle_length=SHARDS,
    num_parallel_calls=tf.data.AUTOTUNE,
    deterministic=True,
)
dataset = dataset.map(_parse_function, num_parallel_calls=tf.data.AUTOTUNE)
dataset = dataset.batch(32).prefetch(tf.data.AUTOTUNE)
batches = [(np.asarray(b["feature1"]), np.asarray(b["feature3"])) for b in dataset]

RESULT = {
    "feature0": feature0,
    "feature1": feature1,
    "feature3": feature3,
    "rows": rows,
    "gz_rows": gz_rows,
    "pictures": pictures,
    "decoded": decoded,
    "batches": batches,
}
"""

# (e) MNIST as float64 images with a "dimension" feature, read with
# TFRecordDataset(file, buffer_size=100) and decode_raw(..., out_type=float64,
# little_endian=True, fixed_length=None, name=None) and a reshape.
SCRIPT_E = """\
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(3)
images = rng.random((N, 28, 28))
labels = rng.integers(0, 10, N)


def _int64_feature(value):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def _bytes_feature(value):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


with tf.io.TFRecordWriter(PATH) as writer:
    for index in range(N):
        image_raw = images[index].tobytes()
        example = tf.train.Example(
            features=tf.train.Features(
                feature={
                    "dimension": _int64_feature(images.shape[1]),
                    "label": _int64_feature(int(labels[index])),
                    "image_raw": _bytes_feature(image_raw),
                }
            )
        )
        writer.write(example.SerializeToString())


def decode(serialized_example):
    features = tf.io.parse_single_example(
        serialized_example,
        features={
            "image_raw": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64),
            "dimension": tf.io.FixedLenFeature([], tf.int64),
        },
    )
    image = tf.io.decode_raw(
        features["image_raw"], out_type=tf.float64, little_endian=True, fixed_length=None, name=None
    )
    return image, features["label"], features["dimension"]


dataset = tf.data.TFRecordDataset(PATH, buffer_size=100)
images_back, labels_back = [], []
for image, label, dimension in dataset.map(decode):
    d = int(dimension)
    images_back.append(np.reshape(image, (d, d)))
    labels_back.append(int(label))

RESULT = {
    "images": images,
    "labels": labels,
    "images_back": np.stack(images_back),
    "labels_back": labels_back,
}
"""

SCRIPTS = {"a": SCRIPT_A, "b": SCRIPT_B, "c": SCRIPT_C, "d": SCRIPT_D, "e": SCRIPT_E}
TF1_SCRIPTS = frozenset({"a", "b", "c"})


def port(script: str) -> str:
    """The mechanical port: the import line, then every ``tf.`` prefix."""
    assert script.count(IMPORT_TF) == 1
    return script.replace(IMPORT_TF, IMPORT_TFR).replace("tf.", "tfr.")


def tf1_original(script: str) -> str:
    """A TF1 script as it runs under TensorFlow 2: ``import tensorflow.compat.v1 as tf``."""
    assert script.count(IMPORT_TF) == 1
    return script.replace(IMPORT_TF, "import tensorflow.compat.v1 as tf\n")


def tfr_names(source: str) -> list[str]:
    """Every dotted ``tfr.x.y`` name a ported script uses."""
    return sorted(set(re.findall(r"(?<![\w.])tfr(?:\.[A-Za-z_]\w*)+", source)))


def _smooth_image(h: int, w: int, seed: int, tint: tuple[int, int, int]) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack(
        [
            np.sin(x / (5.0 + c) + seed) * 60 + np.cos(y / (7.0 + c)) * 40 + t
            for c, t in enumerate(tint)
        ],
        -1,
    )
    base += rng.normal(0, 6, base.shape)
    out: np.ndarray = np.clip(base, 0, 255).astype(np.uint8)
    return out


def make_inputs(work: Path, n: int = 40) -> dict[str, Any]:
    """Inputs of all five scripts under ``work``; returns the globals each script reads."""
    from PIL import Image

    fruit = work / "fruit"
    fruit.mkdir(parents=True, exist_ok=True)
    for i in range(6):
        for kind, tint, ext in (("apple", (170, 60, 60), "jpg"), ("orange", (200, 140, 40), "png")):
            arr = _smooth_image(100 + 3 * i, 120 + 2 * i, i + (0 if kind == "apple" else 50), tint)
            Image.fromarray(arr).save(fruit / f"{kind}_{i:03d}.{ext}")
    data = work / "classes"
    for label, (cls, tint) in enumerate((("cat", (90, 90, 90)), ("dog", (150, 110, 70)))):
        folder = data / cls
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(7):
            arr = _smooth_image(50 + i, 70, 100 * label + i, tint)
            Image.fromarray(arr).save(folder / f"{cls}.{i:04d}.jpg", quality=90)
    shards = work / "shards"
    shards.mkdir(exist_ok=True)
    return {
        "__name__": "tutorial",
        "N": n,
        "IMAGE_DIR": str(fruit),
        "RECORD_PATH": str(work / "fruit.tfrecords"),
        "DATA_DIR": str(data),
        "TRAIN_PATH": str(work / "train.tfrecords"),
        "CV_PATH": str(work / "cv.tfrecords"),
        "PATH": str(work / "data.tfrecord"),
        "GZ_PATH": str(work / "data.tfrecord.gz"),
        "IMAGE_PATH": str(work / "images.tfrecord"),
        "SHARDS": 3,
        "SHARD_PATH": str(shards / "part-%05d.tfrecord"),
        "SHARD_PATTERN": str(shards / "part-*.tfrecord"),
    }


def run(source: str, name: str, consts: dict[str, Any]) -> dict[str, Any]:
    """Execute one script text with ``consts`` as its globals; its ``RESULT``."""
    ns = dict(consts)
    filename = f"<tutorial_{name}>"
    # Registered with linecache so inspect.getsource (TensorFlow's autograph) finds it.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)
    result: dict[str, Any] = ns["RESULT"]
    return result


def run_all(work: Path, ported: bool, n: int = 40) -> dict[str, dict[str, Any]]:
    """Run the five scripts in order (b reads a's file): ported, or under TensorFlow."""
    consts = make_inputs(work, n)
    out = {}
    for name, script in SCRIPTS.items():
        if ported:
            source = port(script)
        else:
            source = tf1_original(script) if name in TF1_SCRIPTS else script
        out[name] = run(source, name, consts)
    return out
