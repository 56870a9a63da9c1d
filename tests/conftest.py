"""Shared fixtures and helpers for the whole test suite (keep it small and generic).

* ``make_records(n, seed=0, max_len=300)``: ``n`` deterministic pseudo-random records
  of varied lengths (including a zero-length one when ``n`` > 2).
* ``write_tfrecord(path_or_file, records, compression=None, **options)``: write a file
  with the library's writer and return ``path_or_file``.
* ``read_all(source, compression="auto", **kw)``: ``list(tf_record_iterator(...))``.
* ``tfr_path`` fixture: a fresh file path (``pathlib.Path``) inside ``tmp_path``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

import tfrecord_lite as tfr

COMPRESSIONS = ("", "GZIP", "ZLIB")

# tests/interop/ needs real TensorFlow and runs only under `make interop`, which sets
# this variable; elsewhere it is not collected at all (never reported as skipped).
if not os.environ.get("TFRECORD_LITE_INTEROP"):
    collect_ignore = ["interop"]
# tests/cloud/ starts local object-store servers from its own venv (`make test-cloud`,
# which sets TFRECORD_LITE_CLOUD); elsewhere it is not collected.
if not os.environ.get("TFRECORD_LITE_CLOUD"):
    collect_ignore = [*globals().get("collect_ignore", []), "cloud"]
# tests/engines/ needs Spark, Daft and datasets from its own venv (`make test-engines`, which
# sets TFRECORD_LITE_ENGINES); elsewhere it is not collected.
if not os.environ.get("TFRECORD_LITE_ENGINES"):
    collect_ignore = [*globals().get("collect_ignore", []), "engines"]


def make_records(n: int, seed: int = 0, max_len: int = 300) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        length = 0 if i == 2 else rng.randint(0, max_len)
        out.append(rng.randbytes(length))
    return out


def write_tfrecord(
    target: Any, records: list[bytes], compression: Any = None, **options: Any
) -> Any:
    opts: Any = compression
    if options:
        opts = tfr.TFRecordOptions(compression_type=compression, **options)
    with tfr.TFRecordWriter(target, opts) as writer:
        for record in records:
            writer.write(record)
    return target


def read_all(source: Any, compression: Any = "auto", **kwargs: Any) -> list[bytes]:
    return list(tfr.tf_record_iterator(source, compression, **kwargs))


@pytest.fixture
def tfr_path(tmp_path: Path) -> Path:
    return tmp_path / "data.tfrecord"
