"""tfrecord_lite.hf with Hugging Face ``datasets`` on local files: the Arrow-backed,
cached Dataset and the streaming IterableDataset equal the library's own parse, images
and class labels get their ``datasets`` features, and a Dataset writes back to shards."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr

from ._engine_data import FEATURES, PER_FILE, local_rows, write_shards

datasets = pytest.importorskip("datasets")

from tfrecord_lite import hf as tfhf  # noqa: E402


def hf_rows(rows: Any) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for row in rows:
        assert int(row["id"]) not in out, f"record {row['id']} read twice"
        out[int(row["id"])] = {
            "label": int(row["label"]),
            "image": bytes(row["image"]),
            "vec": [float(v) for v in row["vec"]],
            "tags": [bytes(t) for t in row["tags"]],
        }
    return out


def test_dataset_equals_the_local_parse_and_is_cached(tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in")
    cache = str(tmp_path / "cache")
    ds = tfhf.load_dataset(paths, cache_dir=cache)  # schema inferred
    assert isinstance(ds, datasets.Dataset)
    assert ds.features == datasets.Features(
        {
            "id": datasets.Value("int64"),
            "label": datasets.Value("int64"),
            "image": datasets.Value("binary"),  # bytes stay bytes
            "vec": datasets.List(datasets.Value("float32"), length=2),
            "tags": datasets.List(datasets.Value("binary")),
        }
    )
    assert len(ds) == 3 * PER_FILE
    assert hf_rows(ds) == local_rows(paths)
    # The same files and specs: the Arrow cache is opened, not built again.
    again = tfhf.load_dataset(paths, cache_dir=cache)
    assert [f["filename"] for f in again.cache_files] == [f["filename"] for f in ds.cache_files]
    # Other specs: another cache.
    fewer = tfhf.load_dataset(paths, {"id": FEATURES["id"]}, cache_dir=cache)
    assert fewer.column_names == ["id"]
    assert fewer.cache_files[0]["filename"] != ds.cache_files[0]["filename"]
    # A file that changed: rebuilt.
    tfr.write_examples(paths[0], {"id": np.arange(5), "label": np.arange(5)})
    changed = tfhf.load_dataset(paths[:1], {"id": FEATURES["id"]}, cache_dir=cache)
    assert changed["id"] == [0, 1, 2, 3, 4]


def test_streaming_equals_the_local_parse(tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in")
    stream = tfhf.load_dataset(paths, FEATURES, streaming=True, cache_dir=str(tmp_path / "c"))
    assert isinstance(stream, datasets.IterableDataset)
    assert hf_rows(stream) == local_rows(paths)
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").rglob("*.arrow"))


def _png(value: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.full((4, 5), value, np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def test_images_and_class_labels(tmp_path: Path) -> None:
    path = str(tmp_path / "digits.tfrecord")
    labels = np.arange(12) % 3
    tfr.write_examples(path, {"image/encoded": [_png(10 * i) for i in range(12)], "label": labels})
    names = ["zero", "one", "two"]
    ds = tfhf.load_dataset(
        path,
        images=["image/encoded"],
        class_labels={"label": names},
        cache_dir=str(tmp_path / "cache"),
    )
    assert ds.features["image/encoded"] == datasets.Image()
    assert ds.features["label"] == datasets.ClassLabel(names=names)
    image = ds[7]["image/encoded"]
    assert image.size == (5, 4) and np.asarray(image).max() == 70
    assert ds.features["label"].int2str(ds[7]["label"]) == "one"
    assert tfhf.hf_features(
        {"image/encoded": tfr.FixedLenFeature([], tfr.string)}, images=["image/encoded"]
    ) == datasets.Features({"image/encoded": datasets.Image()})
    # written back: the images as their encoded bytes, the labels as int64
    out = tfhf.write_tfrecords(ds, tmp_path / "out", shards=2)
    assert [os.path.basename(p) for p in out] == ["part-00000-of-00002", "part-00001-of-00002"]
    back = tfr.read_examples(out, {"image/encoded": tfr.FixedLenFeature([], tfr.string),
                                   "label": tfr.FixedLenFeature([], tfr.int64)})  # fmt: skip
    assert list(back["image/encoded"]) == [_png(10 * i) for i in range(12)]
    assert back["label"].tolist() == labels.tolist()


def test_write_a_dataset_then_read_it_back(tmp_path: Path) -> None:
    rows = {
        "id": list(range(30)),
        "text": [f"row {i}" for i in range(30)],
        "vec": [[float(i), float(-i)] for i in range(30)],
        "steps": [[[i] * j for j in range(i % 3)] for i in range(30)],
    }
    ds = datasets.Dataset.from_dict(rows).shuffle(seed=0)
    out = tfhf.write_tfrecords(ds, tmp_path / "out", shards=3, sequence_features=["steps"])
    assert sorted(os.listdir(tmp_path / "out")) == [f"part-{i:05d}-of-00003" for i in range(3)]
    back = tfhf.load_dataset(out, cache_dir=str(tmp_path / "cache"))
    got = {r["id"]: r for r in back}
    assert sorted(got) == list(range(30))  # every row exactly once
    for i in range(30):
        assert got[i]["text"] == f"row {i}".encode()  # text is written as its UTF-8 bytes
        assert got[i]["vec"] == [float(i), float(-i)]
        assert got[i]["steps"] == [[i] * j for j in range(i % 3)]
    assert [r["id"] for r in back] == list(ds["id"])  # the shards keep the rows' order
    with pytest.raises(FileExistsError, match="already holds shards"):
        tfhf.write_tfrecords(ds, tmp_path / "out")


def test_a_tfds_directory(tmp_path: Path) -> None:
    from tfrecord_lite import tfds

    root = Path(__file__).resolve().parents[1] / "data" / "tfds" / "tfl_digits" / "small" / "3.0.1"
    builder = tfds.builder_from_directory(root)
    ds = tfhf.load_tfds(builder, "train", cache_dir=str(tmp_path / "cache"))
    names = builder.info.features["label"].names
    assert ds.features["image"] == datasets.Image()
    assert ds.features["label"] == datasets.ClassLabel(names=names)
    reference = list(builder.as_dataset(split="train", read_config=tfds.ReadConfig(
        interleave_cycle_length=1)))  # fmt: skip
    assert len(ds) == builder.info.splits["train"].num_examples == len(reference)
    for row, ref in zip(ds, reference):  # the TFDS decode of the same records, in order
        assert np.array_equal(np.asarray(row["image"]).reshape(ref["image"].shape), ref["image"])
        assert row["label"] == int(ref["label"])
    stream = tfhf.load_tfds(builder, "test", streaming=True)
    assert sum(1 for _ in stream) == builder.info.splits["test"].num_examples
    with pytest.raises(KeyError, match="no split 'nope'"):
        tfhf.load_tfds(builder, "nope")
