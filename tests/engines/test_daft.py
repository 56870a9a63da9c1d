"""tfrecord_lite.daft on Daft's local runner: every record exactly once and equal to the
library's own parse; writes leave exactly the final shards, and nothing when they fail."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr

from ._engine_data import FEATURES, PER_FILE, local_rows, write_shards

daft = pytest.importorskip("daft")

from tfrecord_lite import daft as tfdaft  # noqa: E402


def daft_rows(df: Any) -> dict[int, dict[str, Any]]:
    table = df.to_arrow()
    out: dict[int, dict[str, Any]] = {}
    for row in table.to_pylist():
        assert int(row["id"]) not in out, f"record {row['id']} read twice"
        out[int(row["id"])] = {
            "label": int(row["label"]),
            "image": bytes(row["image"]),
            "vec": [float(v) for v in row["vec"]],
            "tags": [bytes(t) for t in row["tags"]],
        }
    return out


def test_inferred_read_equals_the_local_parse(tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in")  # plain, GZIP and ZLIB
    df = tfdaft.read_tfrecords(str(tmp_path / "in"))
    dt = daft.DataType
    types = {f.name: f.dtype for f in df.schema()}
    assert types == {
        "id": dt.int64(),
        "label": dt.int64(),
        "image": dt.binary(),  # bytes stay bytes
        "vec": dt.fixed_size_list(dt.float32(), 2),
        "tags": dt.list(dt.binary()),
    }
    assert daft_rows(df) == local_rows(paths)


def test_read_with_a_given_spec_and_a_query(tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in")
    df = tfdaft.read_tfrecords(paths, {"id": FEATURES["id"], "label": FEATURES["label"]})
    got = df.where(df["label"] == 3).sort("id").to_pydict()
    assert got["id"] == [i for i in range(3 * PER_FILE) if i % 10 == 3]
    assert tfdaft.read_tfrecords(paths, FEATURES, include_paths=True).count_rows() == 360


def test_an_indexed_file_is_read_in_record_ranges(tmp_path: Path) -> None:
    path = str(tmp_path / "big.tfrecord")
    n = 1000
    tfr.write_examples(path, {"id": np.arange(n)})
    tfr.create_index(path)
    source = tfdaft.TFRecordDataSource(path, records_per_task=300)
    assert [p.rows for p in source.pieces] == [250, 250, 250, 250]
    ids = sorted(source.read().to_pydict()["id"])
    assert ids == list(range(n))  # every record exactly once across the ranges


def test_a_corrupt_record_fails_naming_file_and_record(tmp_path: Path) -> None:
    path = tmp_path / "bad.tfrecord"
    tfr.write_examples(str(path), {"id": np.arange(50)})
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))
    df = tfdaft.read_tfrecords(str(path), {"id": FEATURES["id"]})
    with pytest.raises(Exception) as info:
        df.collect()
    assert str(path) in str(info.value) and "record 49" in str(info.value), str(info.value)


def test_write_then_read_back(tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in")
    df = tfdaft.read_tfrecords(paths).into_partitions(3)
    out = tmp_path / "out"
    written = tfdaft.write_tfrecords(df, out, compression="GZIP")
    names = sorted(os.listdir(out))
    assert names == [os.path.basename(p) for p in written]
    assert names[0].startswith("part-00000-of-0000") and all(".staging" not in n for n in names)
    assert local_rows(written) == local_rows(paths)
    with pytest.raises(FileExistsError, match="already holds shards"):
        tfdaft.write_tfrecords(df, out)
    # overwrite: the new shards replace the old ones once they are complete
    tfr.write_examples(str(out / "part-00007-of-00009"), {"id": np.arange(3)})  # a stale one
    again = tfdaft.write_tfrecords(df, out, overwrite=True)
    n = len(again)
    assert sorted(os.listdir(out)) == [f"part-{i:05d}-of-{n:05d}" for i in range(n)]
    assert local_rows(again) == local_rows(paths)


def test_a_failed_write_leaves_no_file(tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in")

    @daft.func(return_dtype=daft.DataType.int64())
    def fails_late(i: int) -> int:
        if i == 2 * PER_FILE + 50:
            raise RuntimeError("this row cannot be written")
        return i

    df = tfdaft.read_tfrecords(paths).with_column("id", fails_late(daft.col("id")))
    out = tmp_path / "out"
    with pytest.raises(Exception, match="cannot be written"):
        tfdaft.write_tfrecords(df, out)
    assert sorted(os.listdir(out)) == []  # no shard, no staging or temporary file


def test_read_s3(tmp_path: Path, s3_endpoint: str, s3_bucket: str) -> None:
    from _servers import boto_client, s3_options

    paths = write_shards(tmp_path / "in")
    client = boto_client(s3_endpoint)
    for p in paths:
        client.upload_file(p, s3_bucket, f"in/{os.path.basename(p)}")
    df = tfdaft.read_tfrecords(
        f"s3://{s3_bucket}/in/*.tfrecord", storage_options=s3_options(s3_endpoint)
    )
    assert daft_rows(df) == local_rows(paths)
    assert json.dumps(sorted(daft_rows(df))) == json.dumps(list(range(3 * PER_FILE)))
