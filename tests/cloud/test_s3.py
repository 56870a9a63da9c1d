"""tfrecord_lite over s3:// against a real S3 protocol server (moto_server, see conftest).

Every entry point takes a URL the way it takes a local path; these tests check the
promises the README's "Cloud storage" section makes, over the wire.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from _servers import boto_client, enforce_iam, moto_server, s3_options

import tfrecord_lite as tfr

COMPRESSIONS = ("", "GZIP", "ZLIB")


def records(n: int, seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.bytes(int(k)) for k in rng.integers(0, 300, n)]


def examples(n: int) -> list[bytes]:
    return [
        tfr.encode_example({"id": [i], "x": [float(i) / 2, 1.0], "name": [f"r{i}".encode()]})
        for i in range(n)
    ]


def write(url: str, recs: list[bytes], so: dict[str, Any], compression: str = "") -> None:
    with tfr.TFRecordWriter(url, compression, storage_options=so) as w:
        for r in recs:
            w.write(r)


def keys(client: Any, bucket: str) -> list[str]:
    out = client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return sorted(o["Key"] for o in out)


# --------------------------------------------------------------------------- configuration


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_round_trip_with_storage_options(
    bucket: str, storage_options: dict[str, Any], compression: str
) -> None:
    url = f"s3://{bucket}/data.tfrecord"
    recs = records(200, seed=1)
    write(url, recs, storage_options, compression)
    assert list(tfr.tf_record_iterator(url, storage_options=storage_options)) == recs
    assert list(tfr.read_records(url, storage_options=storage_options)) == recs
    with tfr.open(url, storage_options=storage_options) as reader:
        assert list(reader) == recs
    assert list(tfr.TFRecordDataset(url, storage_options=storage_options)) == recs


def test_endpoint_and_credentials_from_the_environment(
    bucket: str, storage_options: dict[str, Any], s3_endpoint: str, tmp_path: Any
) -> None:
    # No storage_options at all: botocore reads AWS_ENDPOINT_URL and the keys.
    url = f"s3://{bucket}/env.tfrecord"
    recs = records(30, seed=2)
    write(url, recs, storage_options)
    script = textwrap.dedent(
        f"""
        import tfrecord_lite as tfr
        print(len(list(tfr.TFRecordDataset({url!r}))))
        """
    )
    env = {**os.environ, "AWS_ENDPOINT_URL": s3_endpoint}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "30"
    # And the command line tool, configured only by the environment.
    cli = [sys.executable, "-m", "tfrecord_lite", "count", url]
    out = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "30" in out.stdout


def test_missing_bucket_is_file_not_found_naming_the_url(
    bucket: str, storage_options: dict[str, Any]
) -> None:
    missing = f"s3://no-such-bucket-{bucket}/x.tfrecord"
    with pytest.raises(FileNotFoundError) as info:
        list(tfr.tf_record_iterator(missing, storage_options=storage_options))
    assert info.value.filename == missing
    assert "%s" not in str(info.value) and "Errno %" not in str(info.value)


# A second moto_server that checks every request's signature and IAM policy, as AWS does
# (the session's server accepts any key). Users and the bucket are made before checking starts.
IAM_BUCKET = "tfr-iam"
IAM_URL = f"s3://{IAM_BUCKET}/data.tfrecord"
IAM_RECORDS = [b"first", b"second"]


def _policy(actions: list[str]) -> str:
    resources = [f"arn:aws:s3:::{IAM_BUCKET}", f"arn:aws:s3:::{IAM_BUCKET}/*"]
    statement = {"Effect": "Allow", "Action": actions, "Resource": resources}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


@pytest.fixture(scope="module")
def iam_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Yield the endpoint and ``storage_options`` of users "admin" (s3:*), "reader"
    (get and list) and "nobody" (no policy), on a server that enforces IAM."""
    with moto_server(tmp_path_factory.mktemp("moto-iam")) as endpoint:
        boto_client(endpoint).create_bucket(Bucket=IAM_BUCKET)
        write(IAM_URL, IAM_RECORDS, s3_options(endpoint))
        iam = boto_client(endpoint, "iam")
        users: dict[str, Any] = {"endpoint": endpoint}
        for name, actions in [("admin", ["s3:*"]), ("reader", ["s3:GetObject", "s3:ListBucket"])]:
            iam.create_user(UserName=name)
            iam.put_user_policy(UserName=name, PolicyName="s3", PolicyDocument=_policy(actions))
        iam.create_user(UserName="nobody")
        for name in ("admin", "reader", "nobody"):
            k = iam.create_access_key(UserName=name)["AccessKey"]
            users[name] = s3_options(endpoint, k["AccessKeyId"], k["SecretAccessKey"])
        enforce_iam(endpoint)
        yield users


def _assert_permission_error_naming(err: BaseException, url: str, action: str) -> None:
    assert isinstance(err, PermissionError)
    assert err.filename == url
    text = str(err)
    assert url in text and f"Permission denied to {action}" in text, text
    assert "credentials" in text, text
    for internal in ("%s", "Errno %", "Traceback", "botocore", "ClientError", "s3fs", "aiohttp"):
        assert internal not in text, text
    assert err.__suppress_context__ and err.__cause__ is None  # no library traceback chained


def test_enforcing_server_accepts_a_permitted_user(iam_server: dict[str, Any]) -> None:
    # The refusals below are about permissions: the same server serves a user who has them.
    assert list(tfr.tf_record_iterator(IAM_URL, storage_options=iam_server["reader"])) == (
        IAM_RECORDS
    )
    url = f"s3://{IAM_BUCKET}/"
    assert list(tfr.TFRecordDataset(url, storage_options=iam_server["reader"])) == IAM_RECORDS
    admin = iam_server["admin"]
    write(f"s3://{IAM_BUCKET}/admin.tfrecord", [b"a"], admin)
    assert list(
        tfr.tf_record_iterator(f"s3://{IAM_BUCKET}/admin.tfrecord", storage_options=admin)
    ) == [b"a"]
    client = boto_client(iam_server["endpoint"], key=admin["key"], secret=admin["secret"])
    client.delete_object(Bucket=IAM_BUCKET, Key="admin.tfrecord")


@pytest.mark.parametrize("user", ["nobody", "reader", "wrong-secret", "unknown-key"])
def test_refused_credentials_are_a_permission_error_naming_the_url(
    iam_server: dict[str, Any], user: str
) -> None:
    import s3fs

    if user == "wrong-secret":
        so = {**iam_server["reader"], "secret": "not-the-secret"}
    elif user == "unknown-key":
        so = s3_options(iam_server["endpoint"], "AKIAUNKNOWNUNKNOWN00", "whatever")
    else:
        so = iam_server[user]
    may_read = user == "reader"
    if not may_read:
        with pytest.raises(PermissionError) as info:
            list(tfr.tf_record_iterator(IAM_URL, storage_options=so))
        _assert_permission_error_naming(info.value, IAM_URL, "read")
        listing = f"s3://{IAM_BUCKET}/"
        with pytest.raises(PermissionError) as info:
            list(tfr.TFRecordDataset(listing, storage_options=so))
        _assert_permission_error_naming(info.value, listing, "list")
        pattern = f"s3://{IAM_BUCKET}/*.tfrecord"
        with pytest.raises(PermissionError) as info:
            list(tfr.TFRecordDataset(pattern, storage_options=so))
        _assert_permission_error_naming(info.value, pattern, "read")
    # Nobody here may write: plain and atomic writers, new name and existing name.
    for url in (f"s3://{IAM_BUCKET}/new.tfrecord", IAM_URL):
        for atomic in (False, True):
            s3fs.S3FileSystem.clear_instance_cache()
            writer = tfr.TFRecordWriter
            with (
                pytest.raises(PermissionError) as info,
                writer(url, atomic=atomic, storage_options=so) as w,
            ):
                w.write(b"x" * 1000)
            _assert_permission_error_naming(info.value, url, "write")
    # The refused writes left nothing behind and did not touch the existing object.
    admin = boto_client(
        iam_server["endpoint"], key=iam_server["admin"]["key"], secret=iam_server["admin"]["secret"]
    )
    assert keys(admin, IAM_BUCKET) == ["data.tfrecord"]
    assert not admin.list_multipart_uploads(Bucket=IAM_BUCKET).get("Uploads")
    assert list(tfr.tf_record_iterator(IAM_URL, storage_options=iam_server["admin"])) == (
        IAM_RECORDS
    )


# --------------------------------------------------------------------------- path forms


def test_globs_directories_lists_and_shard_specs(
    bucket: str, storage_options: dict[str, Any]
) -> None:
    so = storage_options
    base = f"s3://{bucket}/ds"
    shards = [f"{base}/data_tfrecord-{i:05d}-of-00003.gz" for i in range(3)]
    per = [records(20, seed=10 + i) for i in range(3)]
    for url, recs in zip(shards, per):
        write(url, recs, so, "GZIP")
    everything = [r for recs in per for r in recs]
    # sidecars, markers and hidden files the directory rule skips
    import fsspec

    fs = fsspec.filesystem("s3", **so)
    fs.pipe(f"{bucket}/ds/labels.txt", b"cat\ndog\n")
    fs.pipe(f"{bucket}/ds/_SUCCESS", b"")
    fs.pipe(f"{bucket}/ds/.hidden", b"not data")
    tfr.create_index(shards[0], storage_options=so)  # an index beside a shard
    fs.invalidate_cache()

    assert tfr.expand_paths(f"{base}/data_tfrecord@3.gz", storage_options=so) == shards
    assert tfr.expand_paths(f"{base}/*.gz", storage_options=so) == shards
    assert tfr.expand_paths(base, storage_options=so) == shards
    assert tfr.expand_paths(base + "/", storage_options=so) == shards
    for spec in (f"{base}/data_tfrecord@3.gz", f"{base}/data_tfrecord-*", base, shards):
        ds = tfr.TFRecordDataset(spec, storage_options=so)
        assert list(ds) == everything
    # a directory holding a file that is not TFRecord: an error naming it and the rule
    fs.pipe(f"{bucket}/ds/notes.csv", b"a,b\n1,2\n")
    fs.invalidate_cache()
    with pytest.raises(tfr.CorruptRecordError, match=r"notes\.csv.*hidden files"):
        tfr.TFRecordDataset(base, storage_options=so)


def test_nothing_matched_is_file_not_found_naming_the_url(
    bucket: str, storage_options: dict[str, Any]
) -> None:
    so = storage_options
    write(f"s3://{bucket}/a/train-00000-of-00002", records(2), so)
    for url in (f"s3://{bucket}/a/nothing-*", f"s3://{bucket}/a/train@2", f"s3://{bucket}/b/"):
        with pytest.raises(FileNotFoundError) as info:
            tfr.TFRecordDataset(url, storage_options=so)
        assert info.value.filename == url
        assert "%s" not in str(info.value) and "expand=True" not in str(info.value)
    with pytest.raises(FileNotFoundError) as info:
        list(tfr.tf_record_iterator(f"s3://{bucket}/a/missing", storage_options=so))
    assert info.value.filename == f"s3://{bucket}/a/missing"


def test_a_real_object_named_like_a_spec_is_that_object(
    bucket: str, storage_options: dict[str, Any]
) -> None:
    url = f"s3://{bucket}/model@2"
    write(url, records(4), storage_options)
    assert tfr.expand_paths(url, storage_options=storage_options) == [url]


# --------------------------------------------------------------------------- datasets


def test_dataset_shard_interleave_and_parallel_reads(
    bucket: str, storage_options: dict[str, Any]
) -> None:
    so = storage_options
    per = [records(40, seed=20 + i) for i in range(5)]
    with tfr.ShardedWriter(f"s3://{bucket}/t/train", num_shards=5, storage_options=so) as w:
        for i, recs in enumerate(per):
            for r in recs:
                w.write(r, shard=i)
    spec = f"s3://{bucket}/t/train@5"
    everything = sorted(r for recs in per for r in recs)
    for reads in (1, 3, 16):
        ds = tfr.TFRecordDataset(spec, num_parallel_reads=reads, storage_options=so)
        assert sorted(ds) == everything
    # tf.data's deterministic interleave order, as for local files
    ds = tfr.TFRecordDataset(spec, storage_options=so).interleave(cycle_length=2)
    got = list(ds)
    assert got[:4] == [per[0][0], per[1][0], per[0][1], per[1][1]]
    # shards are disjoint and cover every record, by file and by record
    for n in (2, 8):
        parts = [list(tfr.TFRecordDataset(spec, storage_options=so).shard(n, i)) for i in range(n)]
        assert sorted(r for p in parts for r in p) == everything


def test_parse_infer_and_columns(bucket: str, storage_options: dict[str, Any]) -> None:
    so = storage_options
    url = f"s3://{bucket}/cols.tfrecord"
    n = tfr.write_examples(
        url, {"id": np.arange(10), "v": np.ones((10, 3), np.float32)}, storage_options=so
    )
    assert n == 10
    cols = tfr.read_examples(url, storage_options=so)
    assert cols["id"].tolist() == list(range(10))
    assert cols["v"].shape == (10, 3)
    schema = tfr.infer_schema(url, storage_options=so)
    assert set(schema) >= {"id", "v"}
    batches = list(tfr.TFRecordDataset(url, storage_options=so).parse(schema).batch(4))
    assert [len(b["id"]) for b in batches] == [4, 4, 2]


# --------------------------------------------------------------------------- random access


def test_random_access_and_remote_index(bucket: str, storage_options: dict[str, Any]) -> None:
    so = storage_options
    url = f"s3://{bucket}/ra.tfrecord"
    recs = records(500, seed=3)
    write(url, recs, so)
    f = tfr.TFRecordFile(url, storage_options=so)  # no index: built by a streaming scan
    assert f.index_path is None
    assert len(f) == 500 and f[7] == recs[7] and f[-1] == recs[-1]
    assert f[[9, 2, 400]] == [recs[9], recs[2], recs[400]]
    assert f[10:20] == recs[10:20]
    dest = tfr.create_index(url, storage_options=so)
    assert dest == url + ".index"
    g = tfr.TFRecordFile(url, storage_options=so)
    assert g.index_path == url + ".index"
    assert g[123] == recs[123]
    assert np.array_equal(g.offsets, f.offsets)
    # a GZIP object: refused, or decompressed once with decompress=True
    gz = f"s3://{bucket}/ra.tfrecord.gz"
    write(gz, recs, so, "GZIP")
    with pytest.raises(tfr.RandomAccessError):
        tfr.TFRecordFile(gz, storage_options=so)
    with tfr.TFRecordFile(gz, storage_options=so, decompress=True) as h:
        assert h[250] == recs[250]


def test_dataset_shards_by_index_over_ranged_reads(
    bucket: str, storage_options: dict[str, Any]
) -> None:
    so = storage_options
    url = f"s3://{bucket}/idx/one.tfrecord"
    recs = records(100, seed=4)
    write(url, recs, so)
    tfr.create_index(url, storage_options=so)
    parts = [list(tfr.TFRecordDataset(url, storage_options=so).shard(3, i)) for i in range(3)]
    assert parts[1] == recs[1::3]


# --------------------------------------------------------------------------- writing safely


def test_atomic_writer_exception_leaves_nothing_and_keeps_the_old_object(
    bucket: str, storage_options: dict[str, Any], s3_client: Any
) -> None:
    so = storage_options
    url = f"s3://{bucket}/atomic.tfrecord"
    old = records(5, seed=5)
    write(url, old, so)
    big = os.urandom(6 * 1024 * 1024)  # more than one upload part
    with pytest.raises(KeyError), tfr.TFRecordWriter(url, atomic=True, storage_options=so) as w:
        w.write(big)
        w.write(big)
        raise KeyError("boom")
    assert list(tfr.tf_record_iterator(url, storage_options=so)) == old
    new_url = f"s3://{bucket}/atomic-new.tfrecord"
    with pytest.raises(KeyError), tfr.TFRecordWriter(new_url, atomic=True, storage_options=so) as w:
        w.write(big)
        w.write(big)
        raise KeyError("boom")
    assert keys(s3_client, bucket) == ["atomic.tfrecord"]
    # the aborted multipart uploads are gone too
    assert not s3_client.list_multipart_uploads(Bucket=bucket).get("Uploads")
    with tfr.TFRecordWriter(new_url, "GZIP", atomic=True, storage_options=so) as w:
        w.write(b"done")
    assert list(tfr.tf_record_iterator(new_url, storage_options=so)) == [b"done"]


def test_non_atomic_writer_is_not_visible_until_close(
    bucket: str, storage_options: dict[str, Any], s3_client: Any
) -> None:
    url = f"s3://{bucket}/plain.tfrecord"
    w = tfr.TFRecordWriter(url, storage_options=storage_options)
    w.write(os.urandom(6 * 1024 * 1024))
    w.flush()
    assert keys(s3_client, bucket) == []  # parts uploaded, nothing visible
    w.close()
    assert keys(s3_client, bucket) == ["plain.tfrecord"]


_KILLED_WRITER = """
import os, sys, time
import tfrecord_lite as tfr
so = {"key": "testing-key", "secret": "testing-secret",
      "client_kwargs": {"endpoint_url": sys.argv[1]}}
kind = sys.argv[3]
if kind == "sharded":
    w = tfr.ShardedWriter(sys.argv[2], num_shards=2, storage_options=so)
else:
    w = tfr.TFRecordWriter(sys.argv[2], atomic=(kind == "atomic"), storage_options=so)
block = os.urandom(1024 * 1024)
i = 0
while True:  # until killed: parts keep being uploaded
    w.write(block)
    i += 1
    if i == 12:
        print("uploading", flush=True)
    if i > 12:
        time.sleep(0.05)
"""


@pytest.mark.parametrize("kind", ["atomic", "plain", "sharded"])
def test_writer_killed_mid_upload_leaves_nothing_under_the_final_name(
    bucket: str, s3_endpoint: str, s3_client: Any, kind: str, tmp_path: Any
) -> None:
    script = tmp_path / "writer.py"
    script.write_text(_KILLED_WRITER)
    target = f"s3://{bucket}/killed/train" + ("" if kind == "sharded" else ".tfrecord")
    proc = subprocess.Popen(
        [sys.executable, str(script), s3_endpoint, target, kind],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "uploading"
        # wait until the server holds parts of an unfinished multipart upload
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if s3_client.list_multipart_uploads(Bucket=bucket).get("Uploads"):
                break
            time.sleep(0.1)
        else:
            pytest.fail("the writer never started a multipart upload")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    if kind != "sharded":
        assert keys(s3_client, bucket) == []
        return
    # No shard; only the set's manifest, written when the writer opened, which says that
    # the set is not complete (the writer never got to replace it).
    assert keys(s3_client, bucket) == ["killed/_train.shards.json"]
    body = s3_client.get_object(Bucket=bucket, Key="killed/_train.shards.json")["Body"].read()
    assert json.loads(body)["complete"] is False


def test_sharded_writer_on_s3(bucket: str, storage_options: dict[str, Any], s3_client: Any) -> None:
    so = storage_options
    recs = records(50, seed=6)
    prefix = f"s3://{bucket}/sh/train"
    with pytest.raises(KeyError), tfr.ShardedWriter(prefix, num_shards=3, storage_options=so) as w:
        w.write_all(recs)
        raise KeyError("boom")
    assert keys(s3_client, bucket) == []  # aborted uploads: nothing at all
    with tfr.ShardedWriter(
        prefix, num_shards=3, suffix=".gz", compression="GZIP", write_index=True, storage_options=so
    ) as w:
        w.write_all(recs)
    assert keys(s3_client, bucket) == [
        "sh/_train.gz.shards.json",  # the manifest: complete, listing the three shards
        *[f"sh/train-0000{i}-of-00003.gz{x}" for i in range(3) for x in ("", ".index")],
    ]
    manifest = s3_client.get_object(Bucket=bucket, Key="sh/_train.gz.shards.json")["Body"].read()
    assert json.loads(manifest)["complete"] is True
    assert [s["records"] for s in json.loads(manifest)["shards"]] == [17, 17, 16]
    got = tfr.TFRecordDataset(f"{prefix}@3.gz", storage_options=so)
    assert sorted(got) == sorted(recs)
    # sequential mode: hidden temporary objects, copied to their final names at close
    seq = f"s3://{bucket}/seq/part"
    with (
        pytest.raises(KeyError),
        tfr.ShardedWriter(seq, records_per_shard=20, storage_options=so) as w,
    ):
        w.write_all(recs)
        raise KeyError("boom")
    assert not [k for k in keys(s3_client, bucket) if k.startswith("seq/part-")]
    with tfr.ShardedWriter(seq, records_per_shard=20, storage_options=so) as w:
        w.write_all(recs)
    assert w.paths == [f"{seq}-0000{i}-of-00003" for i in range(3)]
    assert [k for k in keys(s3_client, bucket) if k.startswith("seq/")][-3:] == [
        f"seq/part-0000{i}-of-00003" for i in range(3)
    ]
    assert list(tfr.TFRecordDataset(f"{seq}@3", storage_options=so)) == recs


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_append_rewrites_the_object(
    bucket: str, storage_options: dict[str, Any], compression: str
) -> None:
    so = storage_options
    url = f"s3://{bucket}/log.tfrecord"
    first, second = records(10, seed=7), records(5, seed=8)
    write(url, first, so, compression)
    with tfr.TFRecordWriter(url, compression, mode="a", storage_options=so) as w:
        for r in second:
            w.write(r)
    assert list(tfr.tf_record_iterator(url, storage_options=so)) == first + second
    # an exception inside the block: the object stays as it was
    with (
        pytest.raises(KeyError),
        tfr.TFRecordWriter(url, compression, mode="a", storage_options=so) as w,
    ):
        w.write(b"lost")
        raise KeyError("boom")
    assert list(tfr.tf_record_iterator(url, storage_options=so)) == first + second
    # a damaged object is refused, naming the URL
    import fsspec

    fs = fsspec.filesystem("s3", **so)
    data = fs.cat_file(f"{bucket}/log.tfrecord")
    fs.pipe(f"{bucket}/cut.tfrecord", data[:-3])
    cut = f"s3://{bucket}/cut.tfrecord"
    with pytest.raises(tfr.DataLossError) as info:
        tfr.TFRecordWriter(cut, compression, mode="a", storage_options=so)
    assert info.value.path == cut


# --------------------------------------------------------------------------- command line


def test_command_line_over_s3(
    bucket: str, storage_options: dict[str, Any], s3_endpoint: str
) -> None:
    so = storage_options
    url = f"s3://{bucket}/cli/data.tfrecord"
    write(url, examples(25), so)
    env = {**os.environ, "AWS_ENDPOINT_URL": s3_endpoint}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tfrecord_lite", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    for args in (("count", url), ("verify", url), ("info", url), ("head", "-n", "2", url)):
        out = run(*args)
        assert out.returncode == 0, (args, out.stderr)
        assert "URLs are not supported" not in out.stderr
    out = run("schema", "--format", "json", url)
    assert out.returncode == 0, out.stderr
    assert "id" in json.dumps(json.loads(out.stdout))
    out = run("index", url)
    assert out.returncode == 0, out.stderr
    assert tfr.TFRecordFile(url, storage_options=so).index_path == url + ".index"
    dest = f"s3://{bucket}/cli/out.tfrecord.gz"
    out = run("convert", "--compression", "GZIP", url, dest)
    assert out.returncode == 0, out.stderr
    assert list(tfr.tf_record_iterator(dest, storage_options=so)) == examples(25)
    out = run("count", f"s3://{bucket}/cli/nothing-*")
    assert out.returncode != 0
    assert f"s3://{bucket}/cli/nothing-*" in out.stderr
    assert "Traceback" not in out.stderr


def test_abort_uploads_aborts_only_the_named_unfinished_uploads(
    bucket: str, storage_options: dict[str, Any]
) -> None:
    # A writer killed mid-upload leaves its multipart upload unfinished; a job's clean-up
    # aborts the ones of its own names in its own directory, nothing else.
    from tfrecord_lite._files import _fs

    client = boto_client(storage_options["client_kwargs"]["endpoint_url"])
    mine = ["out/.part-job1-000000.staging", "out/.part-job1-000001.staging"]
    others = ["out/.part-job2-000000.staging", "out/sub/.part-job1-000000.staging", "x/job1"]
    for key in mine + others:
        client.create_multipart_upload(Bucket=bucket, Key=key)
    out = _fs.bind(f"s3://{bucket}/out", storage_options)
    assert _fs.abort_uploads(out, "job1") == 2
    left = client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    assert sorted(u["Key"] for u in left) == sorted(others)
    assert _fs.abort_uploads(_fs.bind(f"s3://{bucket}/out/", storage_options), "job1") == 0
    assert _fs.abort_uploads("memory://out", "job1") is None  # nothing to list there
    for u in left:
        client.abort_multipart_upload(Bucket=bucket, Key=u["Key"], UploadId=u["UploadId"])
