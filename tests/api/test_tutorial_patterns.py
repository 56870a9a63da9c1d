"""The five classic TFRecord tutorial patterns run with only the ``tf.`` prefix changed.

The scripts (``tests/_tutorials.py``) are TensorFlow's spelling; here they run
ported (``import tfrecord_lite as tfr``, ``tf.`` -> ``tfr.``) and their results are
checked against the inputs, computed independently with NumPy and Pillow.
``tests/interop/test_tutorials_interop.py`` runs the same text under real
TensorFlow and compares the two.

(a) an image folder of apples / oranges written with ``tf.python_io.TFRecordWriter``
and ``_int64_feature`` / ``_bytes_feature`` helpers, label from the file name;
(b) read back with ``parse_single_example`` + ``FixedLenFeature``, ``decode_raw`` to
uint8 and a reshape to (92, 112); (c) two writers filling a train and a
cross-validation file from class folders; (d) the TF2 guide (serialize_example,
``tf.io.TFRecordWriter``, ``TFRecordDataset.map``, ``encode_jpeg`` / ``decode_jpeg``,
GZIP via ``TFRecordOptions``, ``list_files`` + ``interleave`` + ``batch(32).prefetch``);
(e) MNIST as float64 images with a ``dimension`` feature, ``TFRecordDataset(file,
buffer_size=100)`` and ``decode_raw(..., out_type=float64, little_endian=True,
fixed_length=None, name=None)``.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr

pytest.importorskip("PIL", reason="the tutorials draw image folders with Pillow")

import _tutorials as tut
from PIL import Image

N = 40


def resolve(dotted: str) -> Any:
    obj: Any = tfr
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return tut.make_inputs(tmp_path_factory.mktemp("tutorials"), N)


@pytest.fixture(scope="module")
def results(inputs: dict[str, Any]) -> dict[str, Any]:
    """Each ported script's RESULT, or the exception it raised (b needs a's file)."""
    out: dict[str, Any] = {}
    for name, script in tut.SCRIPTS.items():
        try:
            out[name] = tut.run(tut.port(script), name, inputs)
        except Exception as e:  # reported by the pattern's own test
            out[name] = e
    return out


def result(results: dict[str, Any], name: str) -> dict[str, Any]:
    r = results[name]
    if isinstance(r, Exception):
        raise r
    assert isinstance(r, dict)
    return r


@pytest.mark.parametrize("name", sorted(tut.SCRIPTS))
def test_the_port_is_mechanical(name: str) -> None:
    script = tut.SCRIPTS[name]
    ported = tut.port(script)
    # "tf." only ever appears as the module prefix, so the replacement touches nothing else
    assert re.findall(r"[\w.]tf\.", script) == []
    assert "tfr" not in script and ".numpy()" not in script
    assert "tensorflow" not in ported
    changed = [(a, b) for a, b in zip(script.splitlines(), ported.splitlines()) if a != b]
    assert len(changed) >= 5
    for a, b in changed:
        assert b.replace("tfr.", "tf.").replace("tfrecord_lite as tfr", "tensorflow as tf") == a


@pytest.mark.parametrize("name", sorted(tut.SCRIPTS))
def test_every_tf_name_has_a_tfr_counterpart(name: str) -> None:
    missing = []
    for dotted in tut.tfr_names(tut.port(tut.SCRIPTS[name])):
        try:
            resolve(dotted)
        except AttributeError:
            missing.append(dotted)
    assert missing == []


def _fruit_pixels(inputs: dict[str, Any]) -> tuple[list[str], list[np.ndarray], list[int]]:
    names = sorted(os.listdir(inputs["IMAGE_DIR"]))
    pixels = []
    for n in names:
        img = Image.open(os.path.join(inputs["IMAGE_DIR"], n)).convert("L").resize((112, 92))
        pixels.append(np.asarray(img))
    labels = [0 if n.startswith("apple_") else 1 for n in names]
    return names, pixels, labels


def test_a_image_folder_with_python_io_writer(inputs: dict[str, Any], results: Any) -> None:
    r = result(results, "a")
    names, pixels, labels = _fruit_pixels(inputs)
    assert r["names"] == names and r["count"] == len(names) == 12
    assert r["first_label"] == labels[0] == 0
    assert r["first_raw"] == pixels[0].tobytes()
    # the records are plain Examples any reader parses: label from the file name
    parsed = tfr.parse_example(
        r["records"],
        {
            "label": tfr.FixedLenFeature([], tfr.int64),
            "img_raw": tfr.FixedLenFeature([], tfr.string),
        },
    )
    assert parsed["label"].tolist() == labels
    assert [bytes(b) for b in parsed["img_raw"]] == [p.tobytes() for p in pixels]


def test_b_decode_raw_and_reshape(inputs: dict[str, Any], results: Any) -> None:
    r = result(results, "b")
    _, pixels, labels = _fruit_pixels(inputs)
    assert r["images"].dtype == np.uint8 and r["images"].shape == (12, 92, 112)
    assert np.array_equal(r["images"], np.stack(pixels))
    assert r["labels"] == labels


def test_c_train_and_cross_validation_writers(inputs: dict[str, Any], results: Any) -> None:
    r = result(results, "c")
    assert r["classes"] == ["cat", "dog"]
    want: dict[str, tuple[list[int], list[int]]] = {"train": ([], []), "cv": ([], [])}
    for label, cls in enumerate(r["classes"]):
        folder = os.path.join(inputs["DATA_DIR"], cls)
        for i, n in enumerate(sorted(os.listdir(folder))):
            img = Image.open(os.path.join(folder, n)).convert("RGB").resize((64, 64))
            split = "cv" if i % 5 == 0 else "train"
            want[split][0].append(label)
            want[split][1].append(int(np.asarray(img, dtype=np.int64).sum()))
    assert tuple(r["train"]) == want["train"] and tuple(r["cv"]) == want["cv"]
    assert len(r["train"][0]) == 10 and len(r["cv"][0]) == 4


def test_d_tf2_guide(inputs: dict[str, Any], results: Any) -> None:
    r = result(results, "d")
    f0, f1, f3 = r["feature0"], r["feature1"], r["feature3"]
    strings = [b"cat", b"dog", b"chicken", b"horse", b"goat"]
    want_rows = [
        (int(a), int(b), strings[int(b)], float(np.float32(c))) for a, b, c in zip(f0, f1, f3)
    ]
    assert r["rows"] == want_rows
    assert r["gz_rows"] == f1.tolist()
    assert Path(inputs["GZ_PATH"]).read_bytes()[:2] == b"\x1f\x8b"
    # JPEG through encode_jpeg / decode_jpeg: the same pictures, within JPEG's loss
    assert [label for _, label in r["decoded"]] == [0, 1, 2, 3]
    for (image, _), picture in zip(r["decoded"], r["pictures"]):
        assert image.shape == picture.shape == (24, 32, 3) and image.dtype == np.uint8
        assert np.abs(image.astype(int) - picture.astype(int)).mean() < 3
    # list_files (sorted, not shuffled) + interleave(cycle_length=3) round-robin
    shards = 3
    per_shard = [list(range(s, N, shards)) for s in range(shards)]
    order = [
        per_shard[s][k]
        for k in range(max(map(len, per_shard)))
        for s in range(shards)
        if k < len(per_shard[s])
    ]
    got_f1 = np.concatenate([b[0] for b in r["batches"]])
    got_f3 = np.concatenate([b[1] for b in r["batches"]])
    assert [len(b[0]) for b in r["batches"]] == [32, N - 32]
    assert got_f1.tolist() == f1[order].tolist()
    assert np.array_equal(got_f3, f3[order].astype(np.float32))


def test_e_mnist_float64(inputs: dict[str, Any], results: Any) -> None:
    r = result(results, "e")
    assert r["images_back"].dtype == np.float64 and r["images_back"].shape == (N, 28, 28)
    assert np.array_equal(r["images_back"], r["images"])
    assert r["labels_back"] == r["labels"].tolist()


def test_jpeg_bytes_from_encode_jpeg_are_a_jpeg() -> None:
    picture = np.zeros((8, 8, 3), np.uint8)
    data = tfr.io.encode_jpeg(picture)
    assert Image.open(io.BytesIO(data)).format == "JPEG"
