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
taxi       TFX Chicago-taxi-like: 17 int64 / float / bytes features, values
           missing (empty ``Feature``, absent key or empty list), varint
           widths 1-5 bytes, ~500 B records, GZIP shards named
           ``data_tfrecord-0000N-of-0000M.gz`` as TFX writes them
transformed the same features, each record's map entries in its own random order
           (as tf.Transform output), GZIP shards
sequence   ``SequenceExample``: context ids, per step 4 floats and a JPEG
tfx_taxi   the real TFX Chicago-taxi GZIP shards, copied in when a directory of
           them is given (:func:`prepare`'s ``real_taxi``; not generated)
========== ================================================================

:func:`describe` summarizes TFRecord files (feature kinds, missing rates, record
sizes); ``python -m benchmarks.data --check-taxi DIR`` compares the taxi-like
generator with real TFX shards (the report includes that comparison).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

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

# Taxi-like: (name, kind, missing rate). Missing values take TFX's forms: mostly an
# empty ``Feature`` (no list set), sometimes an absent key or an empty typed list.
TAXI_FEATURES: list[tuple[str, str, float]] = [
    ("company", "bytes", 0.30),
    ("dropoff_census_tract", "float32", 0.25),
    ("dropoff_community_area", "float32", 0.04),
    ("dropoff_latitude", "float32", 0.05),
    ("dropoff_longitude", "float32", 0.05),
    ("fare", "float32", 0.0),
    ("payment_type", "bytes", 0.0),
    ("pickup_census_tract", "float32", 1.0),
    ("pickup_community_area", "int64", 0.0),
    ("pickup_latitude", "float32", 0.0),
    ("pickup_longitude", "float32", 0.0),
    ("tips", "float32", 0.0),
    ("trip_miles", "float32", 0.0),
    ("trip_seconds", "float32", 0.03),
    ("trip_start_day", "int64", 0.0),
    ("trip_start_hour", "int64", 0.0),
    ("trip_start_month", "int64", 0.0),
    ("trip_start_timestamp", "int64", 0.0),
]
# Eighteen entries as in TFX's file; ``pickup_census_tract`` is always empty there
# too, so 17 carry values.
#: Parse specs of the Example data sets that are not all fixed-length: kind "var" is
#: ``VarLenFeature`` (the features that can be missing), else ``FixedLenFeature([])``.
TAXI_SPEC: list[tuple[str, str, str]] = [
    (name, kind, "var" if missing else "fixed") for name, kind, missing in TAXI_FEATURES
]
SEQUENCE_CONTEXT = [Feature("id", "int64", ()), Feature("label", "int64", ())]
SEQUENCE_STEPS = [Feature("sensor", "float32", (4,)), Feature("frame", "bytes", ())]

CHECK_KEY = {
    "mnist": "label",
    "mnist_gzip": "label",
    "tabular": "ints",
    "imagenet": "image/class/label",
    "big": "image/class/label",
    "taxi": "trip_start_timestamp",
    "transformed": "trip_start_timestamp",
    "sequence": "label",
    "tfx_taxi": "trip_start_timestamp",
}

#: The data sets read as the taxi-like spec (:data:`TAXI_SPEC`).
TAXI_SETS = ("taxi", "transformed", "tfx_taxi")


def sizes(quick: bool) -> dict[str, int]:
    """Record counts (and the big file's byte size) for a full or a quick run."""
    return {
        "mnist": MNIST_RECORDS,
        "tabular": 50_000 if quick else 200_000,
        "imagenet": 300 if quick else 1_000,
        "big_bytes": (256 if quick else 1024) * 2**20,
        "taxi": 20_000 if quick else 60_000,
        "sequence": 1_000 if quick else 3_000,
    }


#: Shards of the taxi-like and transformed sets.
TAXI_SHARDS = 4


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


# --------------------------------------------------------------------------- wire format
#
# The taxi-like, transformed and sequence records are written field by field, so
# that the order of map entries and the form of a missing value are exactly as
# chosen (protobuf's own serializer decides map order itself).


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _ld(tag: int, payload: bytes) -> bytes:
    return bytes([tag]) + _varint(len(payload)) + payload


def _feature(kind: str, values: list[Any]) -> bytes:
    """A serialized ``Feature``; ``kind`` "" is an empty Feature (no list set)."""
    if kind == "":
        return b""
    if kind == "bytes":
        return _ld(0x0A, b"".join(_ld(0x0A, v) for v in values))
    if kind == "float32":
        body = np.asarray(values, "<f4").tobytes()
        return _ld(0x12, _ld(0x0A, body) if values else b"")
    body = b"".join(_varint(int(v)) for v in values)
    return _ld(0x1A, _ld(0x0A, body) if values else b"")


def _features(entries: list[tuple[str, bytes]]) -> bytes:
    """A serialized ``Features`` map with its entries in the given order."""
    return b"".join(_ld(0x0A, _ld(0x0A, k.encode()) + _ld(0x12, f)) for k, f in entries)


def _wire_example(entries: list[tuple[str, bytes]]) -> bytes:
    return _ld(0x0A, _features(entries))


_COMPANIES = [
    b"Taxi Affiliation Services",
    b"Dispatch Taxi Affiliation",
    b"Choice Taxi Association",
    b"Northwest Management LLC",
    b"Blue Ribbon Taxi Association Inc.",
    b"KOAM Taxi Association",
    b"Chicago Carriage Cab Corp",
    b"Top Cab Affiliation",
    b"Chicago Medallion Leasing INC",
    b"0118 - 42111 Godfrey S.Awir",
    b"3201 - C&D Cab Co Inc",
    b"5074 - 54002 Ahzmi Inc",
]
_PAYMENTS = [b"Cash", b"Credit Card", b"No Charge", b"Unknown", b"Dispute", b"Prcard"]


def taxi_rows(n: int, seed: int = 3) -> tuple[list[list[tuple[str, bytes]]], int]:
    """Taxi-like records as lists of (key, serialized Feature), in TFX's key order.

    Returns them and the checksum (sum of ``trip_start_timestamp``).
    """
    rng = np.random.default_rng(seed)
    ts = rng.integers(1_356_998_400, 1_483_228_800, n)  # 2013-2016: 5-byte varints
    check = int(ts.sum())
    area = rng.integers(1, 78, n)
    d_area = rng.integers(1, 78, n).astype(np.float32)
    lat = rng.normal(41.90, 0.04, (n, 2)).astype(np.float32)
    lon = rng.normal(-87.66, 0.05, (n, 2)).astype(np.float32)
    seconds = (rng.gamma(2.0, 400.0, n) // 60 * 60).astype(np.float32)
    miles = np.round(rng.gamma(1.5, 2.0, n), 1).astype(np.float32)
    fare = np.round(3.25 + miles * 2.25 + seconds / 180, 2).astype(np.float32)
    tips = np.where(rng.random(n) < 0.6, 0.0, np.round(fare * 0.2, 2)).astype(np.float32)
    tract = rng.integers(17031010100, 17031990000, n).astype(np.float32)
    company = rng.integers(0, len(_COMPANIES), n)
    payment = rng.choice(len(_PAYMENTS), n, p=[0.55, 0.4, 0.02, 0.01, 0.01, 0.01])
    day = rng.integers(1, 8, n)
    hour = rng.integers(0, 24, n)
    month = rng.integers(1, 13, n)
    missing = {name: rng.random(n) < rate for name, _, rate in TAXI_FEATURES}
    form = rng.random(n)  # how a missing value is missing (one draw per record)
    kinds = {name: kind for name, kind, _ in TAXI_FEATURES}
    rows = []
    for i in range(n):
        values: dict[str, list[Any]] = {
            "company": [_COMPANIES[company[i]]],
            "dropoff_census_tract": [tract[i]],
            "dropoff_community_area": [d_area[i]],
            "dropoff_latitude": [lat[i, 1]],
            "dropoff_longitude": [lon[i, 1]],
            "fare": [fare[i]],
            "payment_type": [_PAYMENTS[payment[i]]],
            "pickup_census_tract": [],
            "pickup_community_area": [area[i]],
            "pickup_latitude": [lat[i, 0]],
            "pickup_longitude": [lon[i, 0]],
            "tips": [tips[i]],
            "trip_miles": [miles[i]],
            "trip_seconds": [seconds[i]],
            "trip_start_day": [day[i]],
            "trip_start_hour": [hour[i]],
            "trip_start_month": [month[i]],
            "trip_start_timestamp": [ts[i]],
        }
        row = []
        for name, kind, _ in TAXI_FEATURES:
            if missing[name][i]:
                if form[i] < 0.7:
                    row.append((name, _feature("", [])))  # empty Feature, as TFX writes
                elif form[i] < 0.85:
                    continue  # absent key
                else:
                    row.append((name, _feature(kinds[name], [])))  # empty list
            else:
                row.append((name, _feature(kind, values[name])))
        rows.append(row)
    return rows, check


def taxi_records(n: int, seed: int = 3) -> tuple[list[bytes], int]:
    """Taxi-like serialized Examples (every record's keys in the same order)."""
    rows, check = taxi_rows(n, seed)
    return [_wire_example(row) for row in rows], check


def transformed_records(n: int, seed: int = 3) -> tuple[list[bytes], int]:
    """The taxi-like records with each record's map entries in its own random order."""
    rows, check = taxi_rows(n, seed)
    rng = np.random.default_rng(seed + 100)
    out = []
    for row in rows:
        order = rng.permutation(len(row))
        out.append(_wire_example([row[j] for j in order]))
    return out, check


def _jpeg(rng: np.random.Generator, size: int) -> bytes:
    """JPEG-shaped bytes: SOI, a JFIF APP0 segment, entropy-coded-like noise, EOI."""
    app0 = b"\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    return b"\xff\xd8" + app0 + rng.bytes(max(size - 24, 0)) + b"\xff\xd9"


def sequence_records(n: int, seed: int = 4) -> tuple[list[bytes], int]:
    """SequenceExamples: context ``id``, ``label``; per step ``sensor`` (4 floats), ``frame``."""
    rng = np.random.default_rng(seed)
    check = 0
    out = []
    for i in range(n):
        label = int(rng.integers(0, 100))
        check += label
        steps = int(rng.integers(4, 13))
        sensor = rng.standard_normal((steps, 4)).astype(np.float32)
        frames = [_jpeg(rng, int(rng.integers(600, 2400))) for _ in range(steps)]
        context = _features([("id", _feature("int64", [i])), ("label", _feature("int64", [label]))])
        lists = b"".join(
            _ld(
                0x0A,
                _ld(0x0A, key.encode()) + _ld(0x12, b"".join(_ld(0x0A, f) for f in feats)),
            )
            for key, feats in (
                ("sensor", [_feature("float32", list(row)) for row in sensor]),
                ("frame", [_feature("bytes", [fr]) for fr in frames]),
            )
        )
        out.append(_ld(0x0A, context) + _ld(0x12, lists))
    return out, check


# --------------------------------------------------------------------------- describing


def describe(paths: list[Path], limit: Optional[int] = None) -> dict[str, Any]:
    """Feature kinds, missing rates and record sizes of TFRecord files of Examples.

    A value is *missing* in a record when its key is absent, its ``Feature`` is
    empty, or its list has no values.
    """
    import tfrecord_lite as tfr
    from tfrecord_lite import example_pb2

    sizes: list[int] = []
    kinds: dict[str, set[str]] = {}
    present: dict[str, int] = {}
    for path in paths:
        for record in tfr.tf_record_iterator(str(path)):
            if limit is not None and len(sizes) >= limit:
                break
            sizes.append(len(record))
            fmap = example_pb2.Example.FromString(record).features.feature
            for key, feature in fmap.items():
                kind = feature.WhichOneof("kind")
                kinds.setdefault(key, set())
                if kind:
                    kinds[key].add(kind.replace("_list", ""))
                    if len(getattr(feature, kind).value):
                        present[key] = present.get(key, 0) + 1
    n = len(sizes)
    arr = np.asarray(sizes)
    return {
        "records": n,
        "size_mean": float(arr.mean()) if n else 0.0,
        "size_p5": float(np.percentile(arr, 5)) if n else 0.0,
        "size_p95": float(np.percentile(arr, 95)) if n else 0.0,
        "features": {
            k: {"kinds": sorted(kinds[k]), "missing": 1 - present.get(k, 0) / max(n, 1)}
            for k in sorted(kinds)
        },
    }


def compare_taxi(real_dir: Path, data_dir: Path = DATA_DIR) -> dict[str, Any]:
    """The taxi-like shards beside real TFX shards: per feature, kinds and missing rates.

    ``ok`` is True when both have the same feature names with the same value kinds,
    the same set of features that are sometimes missing, and mean record sizes
    within 25% of each other (the generator is not tuned to one file's exact rates).
    """
    real = describe(sorted(real_dir.glob("*.gz")))
    ours = describe(sorted(data_dir.glob("data_tfrecord-*.gz")), limit=real["records"] or None)
    rows = []
    same_kinds = set(real["features"]) == set(ours["features"])
    for key in sorted(set(real["features"]) | set(ours["features"])):
        r, o = real["features"].get(key), ours["features"].get(key)
        if r is None or o is None or (r["kinds"] and o["kinds"] and r["kinds"] != o["kinds"]):
            same_kinds = False
        rows.append((key, r, o))
    sometimes = {k for k, v in real["features"].items() if v["missing"] > 0}
    ours_sometimes = {k for k, v in ours["features"].items() if v["missing"] > 0}
    size_ratio = ours["size_mean"] / real["size_mean"] if real["size_mean"] else 0.0
    ok = same_kinds and sometimes == ours_sometimes and 0.75 <= size_ratio <= 1.25
    return {"real": real, "ours": ours, "rows": rows, "size_ratio": size_ratio, "ok": ok}


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


def prepare(
    quick: bool = False,
    data_dir: Path = DATA_DIR,
    log: Any = print,
    real_taxi: Optional[Path] = None,
) -> dict[str, Any]:
    """Build the data files that are missing or stale; return the manifest.

    ``real_taxi``: a directory of real TFX taxi shards (``*.gz``), copied in as
    the ``tfx_taxi`` set when it exists (the set is left out otherwise).
    """
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
    for name, make in (("taxi", taxi_records), ("transformed", transformed_records)):
        want = n["taxi"]
        if not _fresh_shards(sets.get(name), data_dir, want):
            prefix = "data_tfrecord" if name == "taxi" else "transformed_examples"
            log(f"generating {prefix}-*-of-{TAXI_SHARDS:05d}.gz ({want} records)")
            records, check = make(want)
            sets[name] = _write_shards(data_dir, prefix, records, check)
            save()

    seq_path = data_dir / f"sequence-{n['sequence']}.tfrecord"
    if not _fresh(sets.get("sequence"), seq_path, n["sequence"]):
        log(f"generating {seq_path.name}")
        records, check = sequence_records(n["sequence"])
        _write(seq_path, records)
        sets["sequence"] = _entry(seq_path, records, check)
        save()

    real = sorted(real_taxi.glob("*.gz")) if real_taxi is not None and real_taxi.is_dir() else []
    if real:
        if not _fresh_copies(sets.get("tfx_taxi"), data_dir, real):
            log(f"copying {len(real)} real TFX taxi shards from {real_taxi}")
            sets["tfx_taxi"] = _copy_shards(data_dir, "tfx_taxi", real)
            save()
    elif sets.pop("tfx_taxi", None) is not None:
        save()
    return manifest


def _copy_shards(data_dir: Path, prefix: str, sources: list[Path]) -> dict[str, Any]:
    """Copy third-party GZIP shards in as ``<prefix>-0000N-of-0000M.gz``; returns the
    manifest entry, its checksum read with protobuf (not the parser under test)."""
    import tfrecord_lite as tfr
    from tfrecord_lite import example_pb2

    for old in data_dir.glob(f"{prefix}-*.gz"):
        old.unlink()
    files, payload, records, check = [], 0, 0, 0
    key = CHECK_KEY[prefix]
    for k, src in enumerate(sources):
        name = f"{prefix}-{k:05d}-of-{len(sources):05d}.gz"
        (data_dir / name).write_bytes(src.read_bytes())
        files.append(name)
        for record in tfr.tf_record_iterator(str(data_dir / name), "GZIP"):
            records += 1
            payload += len(record)
            check += int(
                example_pb2.Example.FromString(record).features.feature[key].int64_list.value[0]
            )
    entry = _shards_entry(data_dir, files, records, payload, check)
    entry["sources"] = [str(p) for p in sources]
    return entry


def _fresh_copies(entry: Any, data_dir: Path, sources: list[Path]) -> bool:
    return (
        isinstance(entry, dict)
        and entry.get("sources") == [str(p) for p in sources]
        and _fresh_shards(entry, data_dir, entry.get("records", -1))
        and entry.get("file_bytes") == sum(p.stat().st_size for p in sources)
    )


def _write_shards(data_dir: Path, prefix: str, records: list[bytes], check: int) -> dict[str, Any]:
    """GZIP shards named as TFX names them; returns the manifest entry."""
    for old in data_dir.glob(f"{prefix}-*.gz"):
        old.unlink()
    files = []
    per = -(-len(records) // TAXI_SHARDS)
    for k in range(TAXI_SHARDS):
        path = data_dir / f"{prefix}-{k:05d}-of-{TAXI_SHARDS:05d}.gz"
        _write(path, records[k * per : (k + 1) * per], "GZIP")
        files.append(path.name)
    return _shards_entry(data_dir, files, len(records), sum(map(len, records)), check)


def _shards_entry(
    data_dir: Path, files: list[str], records: int, payload: int, check: int
) -> dict[str, Any]:
    """The manifest entry of GZIP shards ``files`` (``payload``: their records' bytes)."""
    return {
        "file": files[0],
        "files": files,
        "records": records,
        "file_bytes": sum((data_dir / f).stat().st_size for f in files),
        "payload_bytes": payload,
        "framed_bytes": payload + 16 * records,
        "check": check,
        "compression": "GZIP",
    }


def _fresh_shards(entry: Any, data_dir: Path, records: int) -> bool:
    return (
        isinstance(entry, dict)
        and entry.get("records") == records
        and all((data_dir / f).exists() for f in entry.get("files", []))
        and sum(
            (data_dir / f).stat().st_size
            for f in entry.get("files", ["-"])
            if (data_dir / f).exists()
        )
        == entry.get("file_bytes")
    )


def main(argv: Optional[list[str]] = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description="Generate the benchmark data, or check it.")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--check-taxi", type=Path, metavar="DIR", help="real TFX taxi shards")
    args = p.parse_args(argv)
    prepare(args.quick, args.data_dir)
    if args.check_taxi:
        cmp = compare_taxi(args.check_taxi, args.data_dir)
        print(taxi_table(cmp))
        return 0 if cmp["ok"] else 1
    return 0


def taxi_table(cmp: dict[str, Any]) -> str:
    """A Markdown table of :func:`compare_taxi`'s result."""
    real, ours = cmp["real"], cmp["ours"]
    lines = [
        "| Feature | kind (real) | kind (generated) | missing (real) | missing (generated) |",
        "|---|---|---|---|---|",
    ]
    for key, r, o in cmp["rows"]:
        rk = ",".join(r["kinds"]) or "(always empty)" if r else "absent"
        ok_ = ",".join(o["kinds"]) or "(always empty)" if o else "absent"
        rm = f"{r['missing']:.2%}" if r else "–"
        om = f"{o['missing']:.2%}" if o else "–"
        lines.append(f"| {key} | {rk} | {ok_} | {rm} | {om} |")
    lines.append(
        f"| record size mean [p5 – p95] | {real['size_mean']:.0f} B "
        f"[{real['size_p5']:.0f} – {real['size_p95']:.0f}] | {ours['size_mean']:.0f} B "
        f"[{ours['size_p5']:.0f} – {ours['size_p95']:.0f}] | records: {real['records']:,} | "
        f"{ours['records']:,} |"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
