"""tfrecord_lite.ray and tfrecord_lite.dask reading and writing s3:// URLs on the local
clusters, against a real S3 protocol server (moto_server on 127.0.0.1, see conftest).

The read and write tasks run in worker processes that share nothing with the driver but
what the call sends them: the endpoint and keys travel in ``storage_options`` (or in the
environment Ray gives the workers). Every record must arrive exactly once and equal the
local parse of the same files; a write leaves exactly the final shards in the bucket.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _servers import KEY, REGION, SECRET, boto_client, s3_options

import tfrecord_lite as tfr
from tfrecord_lite import arrow as tfa

ray = pytest.importorskip("ray")
dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("s3fs")
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

from tfrecord_lite import dask as tfdask  # noqa: E402
from tfrecord_lite import ray as tfray  # noqa: E402

N_FILES, PER_FILE = 3, 150


def write_shards(root: Path) -> list[str]:
    """Local shards (one GZIP): id, label, raw bytes, a float vector, a variable-length list."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for s in range(N_FILES):
        ids = np.arange(PER_FILE) + s * PER_FILE
        path = str(root / f"data-{s}.tfrecord")
        tfr.write_examples(
            path,
            {
                "id": ids,
                "label": ids % 10,
                "image": tfr.bytes_rows(rng.integers(0, 255, (PER_FILE, 64), np.uint8)),
                "vec": np.stack([ids, -ids], 1).astype(np.float32),
                "tags": [[b"t%d" % j for j in range(i % 4)] for i in ids],
            },
            compression="GZIP" if s == 1 else None,
        )
        paths.append(path)
    return paths


def upload(client: Any, bucket: str, paths: list[str], prefix: str) -> None:
    for p in paths:
        client.upload_file(p, bucket, f"{prefix}/{os.path.basename(p)}")


def keys(client: Any, bucket: str) -> list[str]:
    out = client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return sorted(o["Key"] for o in out)


def plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def assert_rows_equal(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    got = sorted(got, key=lambda r: r["id"])
    assert [r["id"] for r in got] == list(range(N_FILES * PER_FILE))  # each record once
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert set(g) == set(w)
        for key in w:
            assert plain(g[key]) == plain(w[key]), key


@pytest.fixture
def on_s3(tmp_path: Path, s3_endpoint: str, s3_bucket: str) -> tuple[str, list[dict[str, Any]]]:
    """The shards uploaded under ``s3://<bucket>/in/``; their rows as parsed locally."""
    paths = write_shards(tmp_path / "in")
    upload(boto_client(s3_endpoint), s3_bucket, paths, "in")
    return f"s3://{s3_bucket}/in", tfa.read_table(paths).to_pylist()


def test_ray_read_from_s3_equals_the_local_parse(
    ray_cluster: Any, s3_endpoint: str, on_s3: tuple[str, list[dict[str, Any]]]
) -> None:
    prefix, want = on_s3
    so = s3_options(s3_endpoint)
    ds = tfray.read_tfrecords(f"{prefix}/*", storage_options=so, include_paths=True)
    rows = ds.take_all()
    assert {r.pop("path") for r in rows} == {f"{prefix}/data-{s}.tfrecord" for s in range(3)}
    assert_rows_equal(rows, want)
    # the directory form lists the same objects
    assert ds.count() == tfray.read_tfrecords(prefix, storage_options=so).count()


def test_ray_read_from_s3_with_the_endpoint_and_keys_in_the_environment(
    ray_cluster: Any,
    s3_endpoint: str,
    on_s3: tuple[str, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import s3fs

    prefix, want = on_s3
    env = {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    for k, v in env.items():  # the driver lists and infers the schema
        monkeypatch.setenv(k, v)
    s3fs.S3FileSystem.clear_instance_cache()
    # the workers get the same environment from Ray, and no storage_options at all
    ds = tfray.read_tfrecords(f"{prefix}/*", ray_remote_args={"runtime_env": {"env_vars": env}})
    assert_rows_equal(ds.take_all(), want)


def test_ray_write_to_s3_leaves_exactly_the_final_shards(
    ray_cluster: Any, s3_endpoint: str, s3_bucket: str, on_s3: tuple[str, list[dict[str, Any]]]
) -> None:
    prefix, want = on_s3
    so = s3_options(s3_endpoint)
    client = boto_client(s3_endpoint)
    before = keys(client, s3_bucket)
    # one block per file (Ray would otherwise split 450 rows into ~200 one-shard blocks)
    ds = tfray.read_tfrecords(f"{prefix}/*", storage_options=so, override_num_blocks=N_FILES)
    out = f"s3://{s3_bucket}/out"
    paths = tfray.write_tfrecords(ds, out, compression="GZIP", storage_options=so)
    assert 1 <= len(paths) <= N_FILES and all(p.startswith(f"{out}/part-") for p in paths), paths
    written = sorted(k for k in keys(client, s3_bucket) if k not in before)
    n = len(paths)
    assert written == [f"out/part-{i:05d}-of-{n:05d}" for i in range(n)]  # nothing else
    assert not client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads")
    assert before == keys(client, s3_bucket)[: len(before)] and all(
        k.startswith("in/") for k in before
    )
    # read back over S3 on the cluster: the same rows
    back = tfray.read_tfrecords(out, storage_options=so).take_all()
    assert_rows_equal(back, want)
    # existing shards are refused: the bucket is not touched
    with pytest.raises(Exception, match="already holds shards"):
        tfray.write_tfrecords(ds, out, storage_options=so)
    assert sorted(k for k in keys(client, s3_bucket) if k not in before) == written


def test_dask_read_from_s3_equals_the_local_parse(
    dask_client: Any, s3_endpoint: str, on_s3: tuple[str, list[dict[str, Any]]]
) -> None:
    prefix, want = on_s3
    df = tfdask.read_tfrecords(f"{prefix}/data-*.tfrecord", storage_options=s3_options(s3_endpoint))
    assert df.npartitions == N_FILES
    got = df.compute().to_dict("records")
    assert all(isinstance(r["image"], bytes) for r in got)
    assert_rows_equal(got, want)


BIG = 3 * 2**20  # with 5 MiB upload parts, a shard of three rows is a multipart upload


def test_ray_failed_write_to_s3_leaves_no_object_and_no_unfinished_upload(
    ray_cluster: Any, s3_endpoint: str, s3_bucket: str
) -> None:
    # 5 MiB parts (S3's smallest): the last block's task has sent a part of its shard (rows 9
    # and 10) when row 11 fails; the other tasks' shards are complete, under staging names
    so = {**s3_options(s3_endpoint), "default_block_size": 5 * 2**20}
    rows = [{"id": i, "blob": bytes([i]) * BIG} for i in range(12)]

    def fails_late(batch: dict[str, Any]) -> dict[str, Any]:
        if 11 in set(batch["id"].tolist()):
            raise RuntimeError("this row cannot be written")
        return batch

    # small blocks: each row reaches the writer as it is made (a dataset keeps its context)
    ctx = ray.data.DataContext.get_current()
    saved = ctx.target_max_block_size
    ctx.target_max_block_size = 2**20
    try:
        ds = ray.data.from_items(rows, override_num_blocks=4)
        ds = ds.map_batches(fails_late, batch_size=1)
        with pytest.raises(Exception, match="cannot be written"):
            tfray.write_tfrecords(ds, f"s3://{s3_bucket}/out", storage_options=so)
    finally:
        ctx.target_max_block_size = saved
    client = boto_client(s3_endpoint)
    assert keys(client, s3_bucket) == []
    assert not client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads")
    # the same rows without the failure: exactly the final shards, each row once
    ok = ray.data.from_items(rows, override_num_blocks=4)
    paths = tfray.write_tfrecords(ok, f"s3://{s3_bucket}/out", storage_options=so)
    n = len(paths)
    assert keys(client, s3_bucket) == [f"out/part-{i:05d}-of-{n:05d}" for i in range(n)]
    assert not client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads")
    got = tfray.read_tfrecords(f"s3://{s3_bucket}/out", storage_options=so).take_all()
    assert sorted((r["id"], r["blob"]) for r in got) == [(r["id"], r["blob"]) for r in rows]
