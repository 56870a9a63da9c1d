"""Deterministic benchmark data: the files every task reads, and their feature specs.

Everything is generated from fixed seeds and written with tfrecord_lite's own
writer (``tfr.TFRecordWriter`` + the ``tf.train.Example`` messages) into
``benchmarks/_data/`` (git-ignored). :func:`prepare` builds what is missing and
returns the manifest: per data set its file, record count, file size, total
payload bytes and a checksum of its label column, which the runner uses to check
that every implementation read everything.

========== ================================================================
mnist      60,000 records of ~846 B: ``image_raw`` (784 bytes), ``label``, ``dim``
mnist_gzip the same records, GZIP-compressed (TensorFlow's GZIP framing)
tabular    ~170 B records: 16 float32, 8 int64, a short string
imagenet   ~110 KB records: an incompressible "JPEG" plus ImageNet's scalar fields
big        the imagenet file repeated to >= 1 GiB (256 MiB with ``--quick``)
========== ================================================================
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: Bump when the generated content changes, so stale files are rebuilt.
GENERATOR_VERSION = 1
DATA_DIR = Path(__file__).resolve().parent / "_data"
MANIFEST = "manifest.json"

MNIST_RECORDS = 60_000


@dataclass(frozen=True)
class Feature:
    """One fixed-length feature of a data set."""

    name: str
    kind: str  # "bytes", "int64" or "float32"
    shape: tuple[int, ...]


#: Feature specs, and the column whose first value is summed as a checksum.
SPECS: dict[str, list[Feature]] = {
    "mnist": [
        Feature("image_raw", "bytes", ()),
        Feature("label", "int64", ()),
        Feature("dim", "int64", (3,)),
    ],
    "tabular": [
        Feature("floats", "float32", (16,)),
        Feature("ints", "int64", (8,)),
        Feature("name", "bytes", ()),
    ],
    "imagenet": [
        Feature("image/encoded", "bytes", ()),
        Feature("image/format", "bytes", ()),
        Feature("image/filename", "bytes", ()),
        Feature("image/class/synset", "bytes", ()),
        Feature("image/class/label", "int64", ()),
        Feature("image/height", "int64", ()),
        Feature("image/width", "int64", ()),
        Feature("image/channels", "int64", ()),
    ],
}
SPECS["mnist_gzip"] = SPECS["mnist"]
SPECS["big"] = SPECS["imagenet"]

CHECK_KEY = {
    "mnist": "label",
    "mnist_gzip": "label",
    "tabular": "ints",
    "imagenet": "image/class/label",
    "big": "image/class/label",
}


def sizes(quick: bool) -> dict[str, int]:
    """Record counts (and the big file's byte size) for a full or a quick run."""
    return {
        "mnist": MNIST_RECORDS,
        "tabular": 50_000 if quick else 200_000,
        "imagenet": 300 if quick else 1_000,
        "big_bytes": (256 if quick else 1024) * 2**20,
    }


# --------------------------------------------------------------------------- generators


def mnist_arrays(n: int = MNIST_RECORDS, seed: int = 0) -> dict[str, np.ndarray]:
    """MNIST-like columns: ``image_raw`` uint8 (n, 784), ``label`` int64 (n,), ``dim`` (n, 3).

    Each image is a noisy ring on a black background (~20% ink, like MNIST), so
    the GZIP file compresses about as well as real MNIST does.
    """
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n, dtype=np.int64)
    yy, xx = np.mgrid[0:28, 0:28].astype(np.float32)
    images = np.empty((n, 28, 28), np.uint8)
    step = 5_000
    for start in range(0, n, step):
        m = min(step, n - start)
        cy = rng.uniform(11, 17, (m, 1, 1)).astype(np.float32)
        cx = rng.uniform(11, 17, (m, 1, 1)).astype(np.float32)
        ry = rng.uniform(5, 9, (m, 1, 1)).astype(np.float32)
        rx = rng.uniform(3, 7, (m, 1, 1)).astype(np.float32)
        r = np.sqrt(((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2)
        ink = np.clip(1.0 - np.abs(r - 1.0) / 0.3, 0.0, 1.0)
        noise = rng.uniform(0.6, 1.0, (m, 28, 28)).astype(np.float32)
        images[start : start + m] = (ink * noise * 255.0).astype(np.uint8)
    dims = np.tile(np.array([28, 28, 1], np.int64), (n, 1))
    return {"image_raw": images.reshape(n, 784), "label": labels, "dim": dims}


def _example(values: dict[str, tuple[str, Any]]) -> bytes:
    from tfrecord_lite import example_pb2

    ex = example_pb2.Example()
    fmap = ex.features.feature
    for key, (kind, vals) in values.items():
        if kind == "bytes":
            fmap[key].bytes_list.value.extend(vals)
        elif kind == "int64":
            fmap[key].int64_list.value.extend(vals)
        else:
            fmap[key].float_list.value.extend(vals)
    return ex.SerializeToString()


def mnist_records(cols: dict[str, np.ndarray]) -> list[bytes]:
    images, labels, dims = cols["image_raw"], cols["label"].tolist(), cols["dim"].tolist()
    return [
        _example(
            {
                "image_raw": ("bytes", [images[i].tobytes()]),
                "label": ("int64", [labels[i]]),
                "dim": ("int64", dims[i]),
            }
        )
        for i in range(len(labels))
    ]


def tabular_records(n: int, seed: int = 1) -> tuple[list[bytes], int]:
    """~170-byte records; returns them and the checksum (sum of ``ints[:, 0]``)."""
    rng = np.random.default_rng(seed)
    floats = rng.standard_normal((n, 16)).astype(np.float32).tolist()
    ints = rng.integers(0, 2**40, (n, 8), dtype=np.int64)
    check = int(ints[:, 0].sum())
    int_rows = ints.tolist()
    records = [
        _example(
            {
                "floats": ("float32", floats[i]),
                "ints": ("int64", int_rows[i]),
                "name": ("bytes", [b"item-%06d" % i]),
            }
        )
        for i in range(n)
    ]
    return records, check


def imagenet_records(n: int, seed: int = 2) -> tuple[list[bytes], int]:
    """~110 KB records; returns them and the checksum (sum of labels)."""
    rng = np.random.default_rng(seed)
    records = []
    check = 0
    for i in range(n):
        size = int(rng.integers(90_000, 130_001))
        label = int(rng.integers(1, 1001))
        check += label
        records.append(
            _example(
                {
                    "image/encoded": ("bytes", [rng.bytes(size)]),
                    "image/format": ("bytes", [b"JPEG"]),
                    "image/filename": ("bytes", [b"n%08d_%d.JPEG" % (label, i)]),
                    "image/class/synset": ("bytes", [b"n%08d" % label]),
                    "image/class/label": ("int64", [label]),
                    "image/height": ("int64", [int(rng.integers(200, 500))]),
                    "image/width": ("int64", [int(rng.integers(200, 500))]),
                    "image/channels": ("int64", [3]),
                }
            )
        )
    return records, check


# --------------------------------------------------------------------------- files


def _write(path: Path, records: list[bytes], compression: str = "") -> None:
    import tfrecord_lite as tfr

    tmp = path.with_name(path.name + ".tmp")
    with tfr.TFRecordWriter(str(tmp), compression or None) as w:
        w.write_all(records)
    os.replace(tmp, path)


def _entry(path: Path, records: list[bytes], check: int, compression: str = "") -> dict[str, Any]:
    return {
        "file": path.name,
        "records": len(records),
        "file_bytes": path.stat().st_size,
        "payload_bytes": sum(len(r) for r in records),
        "check": check,
        "compression": compression,
    }


def _fresh(entry: Any, path: Path, records: int) -> bool:
    return (
        isinstance(entry, dict)
        and entry.get("records") == records
        and path.exists()
        and path.stat().st_size == entry.get("file_bytes")
    )


def prepare(quick: bool = False, data_dir: Path = DATA_DIR, log: Any = print) -> dict[str, Any]:
    """Build the data files that are missing or stale; return the manifest."""
    data_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = data_dir / MANIFEST
    manifest: dict[str, Any]
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        manifest = {}
    if manifest.get("version") != GENERATOR_VERSION:
        manifest = {"version": GENERATOR_VERSION, "datasets": {}}
    sets: dict[str, Any] = manifest["datasets"]
    n = sizes(quick)

    def save() -> None:
        manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))

    mnist_path = data_dir / "mnist.tfrecord"
    gzip_path = data_dir / "mnist.tfrecord.gz"
    arrays_path = data_dir / "mnist_columns.npz"
    if not (
        _fresh(sets.get("mnist"), mnist_path, n["mnist"])
        and _fresh(sets.get("mnist_gzip"), gzip_path, n["mnist"])
        and arrays_path.exists()
    ):
        log(f"generating {mnist_path.name}, {gzip_path.name} ({n['mnist']} records)")
        cols = mnist_arrays(n["mnist"])
        np.savez(arrays_path, image_raw=cols["image_raw"], label=cols["label"], dim=cols["dim"])
        records = mnist_records(cols)
        check = int(cols["label"].sum())
        _write(mnist_path, records)
        _write(gzip_path, records, "GZIP")
        sets["mnist"] = _entry(mnist_path, records, check)
        sets["mnist_gzip"] = _entry(gzip_path, records, check, "GZIP")
        save()

    tab_path = data_dir / f"tabular-{n['tabular']}.tfrecord"
    if not _fresh(sets.get("tabular"), tab_path, n["tabular"]):
        log(f"generating {tab_path.name}")
        records, check = tabular_records(n["tabular"])
        _write(tab_path, records)
        sets["tabular"] = _entry(tab_path, records, check)
        save()

    img_path = data_dir / f"imagenet-{n['imagenet']}.tfrecord"
    big_path = data_dir / f"big-{n['big_bytes'] >> 20}MiB.tfrecord"
    img_fresh = _fresh(sets.get("imagenet"), img_path, n["imagenet"])
    if not img_fresh:
        log(f"generating {img_path.name}")
        records, check = imagenet_records(n["imagenet"])
        _write(img_path, records)
        sets["imagenet"] = _entry(img_path, records, check)
        save()
    img = sets["imagenet"]
    copies = -(-n["big_bytes"] // img["file_bytes"])
    if not (img_fresh and _fresh(sets.get("big"), big_path, img["records"] * copies)):
        log(f"generating {big_path.name} ({copies} copies of {img_path.name})")
        blob = img_path.read_bytes()
        tmp = big_path.with_name(big_path.name + ".tmp")
        with open(tmp, "wb") as f:
            for _ in range(copies):
                f.write(blob)
        os.replace(tmp, big_path)
        sets["big"] = {
            "file": big_path.name,
            "records": img["records"] * copies,
            "file_bytes": big_path.stat().st_size,
            "payload_bytes": img["payload_bytes"] * copies,
            "check": img["check"] * copies,
            "compression": "",
        }
        save()
    return manifest
