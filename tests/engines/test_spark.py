"""tfrecord_lite.spark on a real local Spark 4 session (``local[2,2]``, see conftest).

Reads must give every record exactly once, equal to the library's own parse, with one
partition per file (or per indexed record range); writes must leave exactly the final
``part-NNNNN-of-MMMMM`` shards, also when a task fails mid-write and Spark retries it,
and nothing under a final name when the job fails.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr

from ._engine_data import FEATURES, PER_FILE, local_rows, write_shards

pyspark = pytest.importorskip("pyspark")
# The functions below run in Spark's Python workers, which cannot import this test module.
pyspark.cloudpickle.register_pickle_by_value(sys.modules[__name__])

from tfrecord_lite import spark as tfspark  # noqa: E402


def spark_rows(df: Any) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for row in df.collect():
        assert int(row["id"]) not in out, f"record {row['id']} read twice"
        out[int(row["id"])] = {
            "label": int(row["label"]),
            "image": bytes(row["image"]),
            "vec": [float(v) for v in row["vec"]],
            "tags": [bytes(t) for t in row["tags"]],
        }
    return out


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# --------------------------------------------------------------------------- reading


def test_inferred_read_equals_the_local_parse(spark: Any, tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in")  # plain, GZIP and ZLIB
    df = spark.read.format("tfrecord").load(str(tmp_path / "in"))
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert types == {
        "id": "bigint",
        "label": "bigint",
        "image": "binary",  # bytes stay bytes
        "vec": "array<float>",
        "tags": "array<binary>",
    }
    # small files grouped: as many partitions as cores, at most one per file
    assert df.rdd.getNumPartitions() == min(3, os.cpu_count() or 1)
    assert spark_rows(df) == local_rows(paths)
    assert df.count() == 3 * PER_FILE


@pytest.mark.parametrize("partitions, expect", [("files", 3), ("2", 2), ("1", 1), ("9", 3)])
def test_the_partitions_option(spark: Any, tmp_path: Path, partitions: str, expect: int) -> None:
    paths = write_shards(tmp_path / "in")
    df = spark.read.format("tfrecord").option("partitions", partitions).load(paths)
    assert df.rdd.getNumPartitions() == expect
    assert spark_rows(df) == local_rows(paths)  # every record once, whatever the grouping
    with pytest.raises(Exception, match="option 'partitions' must be"):
        spark.read.format("tfrecord").option("partitions", "0").load(paths).count()


def test_read_with_a_given_spec_and_paths(spark: Any, tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in")
    features = {"id": FEATURES["id"], "vec": FEATURES["vec"]}
    df = tfspark.read_tfrecords(spark, paths[:2], features, include_paths=True)
    assert df.columns == ["id", "vec", "path"]
    rows = df.collect()
    assert sorted(int(r["id"]) for r in rows) == list(range(2 * PER_FILE))
    assert {r["path"] for r in rows} == set(paths[:2])
    # the same spec as the features option's JSON, through the plain reader
    df2 = spark.read.format("tfrecord").option("features", tfspark.features_json(features))
    assert df2.load(paths[0]).count() == PER_FILE
    assert tfspark.spark_schema(features) == df.drop("path").schema


def test_an_indexed_file_is_read_in_record_ranges(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "big.tfrecord")
    n = 1000
    tfr.write_examples(path, {"id": np.arange(n), "x": np.arange(n, dtype=np.float32) / 2})
    tfr.create_index(path)
    df = (
        spark.read.format("tfrecord")
        .option("records_per_task", "300")
        .option("partitions", "files")  # one partition per record range
        .load(path)
    )
    assert df.rdd.getNumPartitions() == 4
    ids = sorted(int(r["id"]) for r in df.select("id").collect())
    assert ids == list(range(n))  # every record exactly once across the ranges
    total = df.selectExpr("sum(x) as s").collect()[0]["s"]
    assert total == pytest.approx(float(np.arange(n, dtype=np.float32).sum() / 2))


def test_sequence_examples_are_arrays_of_arrays(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "seq.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        for i in range(20):
            w.write(
                tfr.encode_sequence_example(
                    {"id": [i]}, {"tokens": [[j, j + 1] for j in range(i % 3)]}
                )
            )
    df = spark.read.format("tfrecord").load(path)
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert types == {"id": "bigint", "tokens": "array<array<bigint>>"}
    got = {int(r["id"]): [list(s) for s in r["tokens"]] for r in df.collect()}
    assert got == {i: [[j, j + 1] for j in range(i % 3)] for i in range(20)}


def test_a_corrupt_record_fails_naming_file_and_record(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "bad.tfrecord"
    tfr.write_examples(str(path), {"id": np.arange(50)})
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # the last record's payload: its CRC no longer matches
    path.write_bytes(bytes(data))
    with pytest.raises(Exception) as info:
        spark.read.format("tfrecord").option("features", '{"id": "int64"}').load(
            str(path)
        ).collect()
    text = str(info.value)
    assert str(path) in text and "record 49" in text, text
    # verify=false reads the same file without the check
    reader = spark.read.format("tfrecord").option("features", '{"id": "int64"}')
    df = reader.option("verify", "false").load(str(path))
    assert df.count() == 50


def test_a_record_that_does_not_fit_the_spec_is_named(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "mixed.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        for i in range(30):
            w.write(tfr.encode_example({"id": [i], "v": [1.0] if i != 17 else [1.0, 2.0]}))
    opts = tfspark.features_json({"v": tfr.FixedLenFeature([], tfr.float32)})
    reader = spark.read.format("tfrecord").option("features", opts).option("batch_size", "8")
    with pytest.raises(Exception) as info:
        reader.load(path).collect()
    assert path in str(info.value) and "record 17" in str(info.value), str(info.value)


# --------------------------------------------------------------------------- writing


def test_write_then_read_back(spark: Any, tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in")
    df = spark.read.format("tfrecord").load(paths).repartition(4)
    out = tmp_path / "out"
    df.write.format("tfrecord").mode("append").option("compression", "gzip").save(str(out))
    assert files_in(out) == [f"part-{i:05d}-of-00004" for i in range(4)]
    shards = [str(out / name) for name in files_in(out)]
    assert all(Path(s).read_bytes()[:2] == b"\x1f\x8b" for s in shards)  # GZIP
    assert local_rows(shards) == local_rows(paths)
    # append into a directory that has shards of the same prefix: refused
    with pytest.raises(Exception, match="already holds shards"):
        df.write.format("tfrecord").mode("append").save(str(out))
    # overwrite: the new shards replace the old ones once they are complete
    df.coalesce(2).write.format("tfrecord").mode("overwrite").save(str(out))
    assert files_in(out) == ["part-00000-of-00002", "part-00001-of-00002"]
    assert local_rows([str(out / n) for n in files_in(out)]) == local_rows(paths)


def test_write_sequence_features(spark: Any, tmp_path: Path) -> None:
    rows = [(i, [[float(j)] * (j + 1) for j in range(i % 3)]) for i in range(12)]
    df = spark.createDataFrame(rows, "id long, steps array<array<float>>").coalesce(1)
    tfspark.write_tfrecords(df, str(tmp_path / "seq"), sequence_features=["steps"])
    back = spark.read.format("tfrecord").load(str(tmp_path / "seq"))
    got = {int(r["id"]): [list(s) for s in r["steps"]] for r in back.collect()}
    assert got == {i: [[float(j)] * (j + 1) for j in range(i % 3)] for i in range(12)}


def _fails_on_first_attempt(marker: Path) -> Any:
    """Yields a partition's first batch, then fails on the first attempt of task 1 only
    (after leaving ``marker``, so the test knows the failure happened)."""

    def run(batches: Any) -> Any:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        for i, batch in enumerate(batches):
            if i == 1 and ctx.partitionId() == 1 and ctx.attemptNumber() == 0:
                marker.write_text("failed once")
                raise RuntimeError("the first attempt of this task dies mid-write")
            yield batch

    return run


def test_a_task_that_fails_mid_write_is_retried_without_duplicates(
    spark: Any, tmp_path: Path
) -> None:
    paths = write_shards(tmp_path / "in")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "20")
    try:
        # 3 partitions of 120 records, one a file
        df = spark.read.format("tfrecord").option("partitions", "files").load(paths)
        marker = tmp_path / "failed-once"
        failing = df.mapInArrow(_fails_on_first_attempt(marker), df.schema)
        out = tmp_path / "out"
        failing.write.format("tfrecord").mode("append").save(str(out))
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert marker.exists()  # the first attempt of task 1 did fail mid-write
    # the final shards only: no staging or temporary file of either attempt is left
    assert files_in(out) == [f"part-{i:05d}-of-00003" for i in range(3)]
    shards = [str(out / n) for n in files_in(out)]
    ids = [int(tfr.parse_single_example(r, FEATURES)["id"]) for s in shards for r in
           tfr.tf_record_iterator(s)]  # fmt: skip
    assert sorted(ids) == list(range(3 * PER_FILE))  # every record exactly once
    assert local_rows(shards) == local_rows(paths)


def _always_fails(batches: Any) -> Any:
    from pyspark import TaskContext

    for i, batch in enumerate(batches):
        if i == 1 and TaskContext.get().partitionId() == 0:
            raise RuntimeError("this task always fails mid-write")
        yield batch


def test_a_failed_job_leaves_no_shard(spark: Any, tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "20")
    out = tmp_path / "out"
    try:
        df = spark.read.format("tfrecord").load(paths)
        with pytest.raises(Exception, match="always fails mid-write"):
            writer = df.mapInArrow(_always_fails, df.schema).write.format("tfrecord")
            writer.mode("append").save(str(out))
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    left = files_in(out) if out.exists() else []
    assert left == [], left  # nothing under a final name, no staging or temporary file


# --------------------------------------------------------------------------- S3


def test_read_and_write_s3(spark: Any, tmp_path: Path, s3_endpoint: str, s3_bucket: str) -> None:
    import json

    from _servers import boto_client, s3_options

    paths = write_shards(tmp_path / "in")
    client = boto_client(s3_endpoint)
    for p in paths:
        client.upload_file(p, s3_bucket, f"in/{os.path.basename(p)}")
    options = json.dumps(s3_options(s3_endpoint))
    df = (
        spark.read.format("tfrecord")
        .option("storage_options", options)
        .load(f"s3://{s3_bucket}/in/*.tfrecord")
    )
    assert df.rdd.getNumPartitions() == 3
    assert spark_rows(df) == local_rows(paths)
    writer = df.write.format("tfrecord").mode("append").option("storage_options", options)
    writer.save(f"s3://{s3_bucket}/out")
    keys = sorted(o["Key"] for o in client.list_objects_v2(Bucket=s3_bucket)["Contents"])
    assert [k for k in keys if k.startswith("out/")] == [
        f"out/part-{i:05d}-of-00003" for i in range(3)
    ]
