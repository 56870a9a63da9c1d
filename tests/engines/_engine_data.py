"""The data of the engine suite: shards written by the library, and their local parse
(the reference every engine's rows are compared with)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import tfrecord_lite as tfr

#: Records per file of :func:`write_shards`, and the features written.
PER_FILE = 120
FEATURES = {
    "id": tfr.FixedLenFeature([], tfr.int64),
    "label": tfr.FixedLenFeature([], tfr.int64),
    "image": tfr.FixedLenFeature([], tfr.string),
    "vec": tfr.FixedLenFeature([2], tfr.float32),
    "tags": tfr.VarLenFeature(tfr.string),
}


def write_shards(root: Path, n_files: int = 3, per_file: int = PER_FILE) -> list[str]:
    """Shards of Examples (the second one GZIP, the third ZLIB): an id unique over all
    of them, a label, raw bytes, a float vector and a variable-length list of bytes."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for s in range(n_files):
        ids = np.arange(per_file) + s * per_file
        path = str(root / f"data-{s}.tfrecord")
        tfr.write_examples(
            path,
            {
                "id": ids,
                "label": ids % 10,
                "image": tfr.bytes_rows(rng.integers(0, 255, (per_file, 16), np.uint8)),
                "vec": np.stack([ids, -ids], 1).astype(np.float32),
                "tags": [[b"t%d" % j for j in range(i % 4)] for i in ids],
            },
            compression=[None, "GZIP", "ZLIB"][s % 3],
        )
        paths.append(path)
    return paths


def local_rows(paths: list[str]) -> dict[int, dict[str, Any]]:
    """Every record's values by id, from the library's own parse (the reference)."""
    out: dict[int, dict[str, Any]] = {}
    for path in paths:
        for record in tfr.tf_record_iterator(path, "auto"):
            ex = tfr.parse_single_example(record, FEATURES)
            out[int(ex["id"])] = {
                "label": int(ex["label"]),
                "image": ex["image"].item(),
                "vec": [float(v) for v in ex["vec"]],
                "tags": [bytes(t) for t in ex["tags"].values],
            }
    return out
