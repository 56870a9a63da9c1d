"""TensorFlow reads the shards that Spark, Daft and Hugging Face ``datasets`` write.

The engines live in ``.venv-engines`` (PySpark 4 on Java 17, Daft, datasets: no
TensorFlow), TensorFlow in the interop venv; ``make interop`` builds both and passes
the engine venv's Python as ``TFR_ENGINES_PYTHON``. tests/interop/_engines_writer.py
writes the same rows with each engine's writer (``tfrecord_lite.spark`` through
``df.write.format("tfrecord")``, ``tfrecord_lite.daft.write_tfrecords``,
``tfrecord_lite.hf.write_tfrecords``); ``tf.data.TFRecordDataset`` and
``tf.io.parse_single_example`` / ``parse_single_sequence_example`` read them back.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

sys.path.insert(0, str(Path(__file__).parent))
from _engines_writer import rows, steps  # noqa: E402

N = 50
ENGINES_PYTHON = os.environ.get("TFR_ENGINES_PYTHON")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not ENGINES_PYTHON:
        pytest.skip("TFR_ENGINES_PYTHON is not set: make interop sets it to .venv-engines's Python")
    out = tmp_path_factory.mktemp("engines")
    script = Path(__file__).parent / "_engines_writer.py"
    run = subprocess.run(
        [ENGINES_PYTHON, str(script), str(out), str(N)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return out


def shards(folder: Path) -> list[str]:
    names = sorted(os.listdir(folder))
    assert names and all(n.startswith("part-") and "-of-" in n for n in names), names
    return [str(folder / n) for n in names]


def tf_records(files: list[str]) -> list[bytes]:
    """Every record of the shards, read by ``tf.data`` (GZIP where the shard is)."""
    out: list[bytes] = []
    for f in files:
        gzip = Path(f).read_bytes()[:2] == b"\x1f\x8b"
        ds = tf.data.TFRecordDataset([f], compression_type="GZIP" if gzip else "")
        out.extend(r.numpy() for r in ds)
    return out


@pytest.mark.parametrize("engine", ["spark", "daft", "hf"])
def test_tensorflow_reads_what_the_engine_wrote(written: Path, engine: str) -> None:
    files = shards(written / engine)
    if engine in ("spark", "daft"):  # written with compression gzip
        assert all(Path(f).read_bytes()[:2] == b"\x1f\x8b" for f in files)
    spec = {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "score": tf.io.FixedLenFeature([], tf.float32),
        "name": tf.io.FixedLenFeature([], tf.string),
        "vec": tf.io.VarLenFeature(tf.int64),
    }
    got: dict[int, Any] = {}
    for record in tf_records(files):
        ex = tf.io.parse_single_example(record, spec)
        i = int(ex["id"])
        assert i not in got, f"row {i} twice"
        got[i] = (float(ex["score"]), ex["name"].numpy(), ex["vec"].values.numpy().tolist())
    want = rows(N)
    assert sorted(got) == want["id"]  # every row exactly once
    for i in want["id"]:
        assert got[i] == (
            float(np.float32(want["score"][i])),
            want["name"][i].encode(),
            want["vec"][i],
        ), i


def test_tensorflow_reads_spark_sequence_examples(written: Path) -> None:
    files = shards(written / "spark-seq")
    context = {"id": tf.io.FixedLenFeature([], tf.int64)}
    lists = {"steps": tf.io.RaggedFeature(tf.float32)}
    want = steps(N)
    seen = set()
    for record in tf_records(files):
        ctx, seq = tf.io.parse_single_sequence_example(record, context, lists)
        i = int(ctx["id"])
        seen.add(i)
        assert seq["steps"].to_list() == want[i], i
    assert seen == set(range(N))
