"""Writes TFRecord shards with Spark, Daft and Hugging Face ``datasets`` (no TensorFlow).

Run by tests/interop/test_engines_interop.py with the engine suite's Python
(``.venv-engines``: PySpark 4 on the machine's Java 17, Daft, datasets), so that
TensorFlow, in the interop venv, reads what each engine's writer wrote::

    python tests/interop/_engines_writer.py OUT_DIR N

Every engine writes the same ``N`` rows (see :func:`rows`) to ``OUT_DIR/<engine>/``;
Spark writes a second set with a ``steps`` column of feature lists
(SequenceExamples) to ``OUT_DIR/spark-seq/``.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def rows(n: int) -> dict[str, list[Any]]:
    """The columns every engine writes (the interop test builds the same)."""
    return {
        "id": list(range(n)),
        "score": [i * 0.5 for i in range(n)],
        "name": [f"row {i}" for i in range(n)],
        "vec": [list(range(i % 4)) for i in range(n)],
    }


def steps(n: int) -> list[list[list[float]]]:
    """The feature list of row ``i``: ``i % 3`` steps, step ``j`` holding ``j + 1`` floats."""
    return [[[float(j)] * (j + 1) for j in range(i % 3)] for i in range(n)]


def spark(out: str, n: int) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from tfrecord_lite import spark as tfspark

    session = (
        SparkSession.builder.master("local[2]")
        .appName("tfrecord-lite-interop")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        cols = rows(n)
        data = list(zip(cols["id"], cols["score"], cols["name"], cols["vec"]))
        df = session.createDataFrame(data, "id long, score float, name string, vec array<long>")
        tfspark.write_tfrecords(df.repartition(3), os.path.join(out, "spark"), compression="gzip")
        seq = session.createDataFrame(
            list(zip(cols["id"], steps(n))), "id long, steps array<array<float>>"
        )
        tfspark.write_tfrecords(
            seq.repartition(2), os.path.join(out, "spark-seq"), sequence_features=["steps"]
        )
    finally:
        session.stop()


def daft(out: str, n: int) -> None:
    import daft as dft

    from tfrecord_lite import daft as tfdaft

    df = dft.from_pydict(rows(n)).into_partitions(2)
    tfdaft.write_tfrecords(df, os.path.join(out, "daft"), compression="GZIP")


def hf(out: str, n: int) -> None:
    import datasets

    from tfrecord_lite import hf as tfhf

    ds = datasets.Dataset.from_dict(rows(n))
    tfhf.write_tfrecords(ds, os.path.join(out, "hf"), shards=2)


if __name__ == "__main__":
    where, count = sys.argv[1], int(sys.argv[2])
    for write in (spark, daft, hf):
        write(where, count)
