"""tfrecord_lite over gs:// against a GCS emulator (gcp-storage-emulator, see conftest)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import tfrecord_lite as tfr


@pytest.fixture
def base() -> str:
    return f"gs://tfr/{uuid.uuid4().hex[:10]}"


def _records(n: int) -> list[bytes]:
    return [b"gcs-%d" % i * (i % 7) for i in range(n)]


def test_round_trip_and_path_forms(base: str, gcs_options: dict[str, Any]) -> None:
    so = gcs_options
    recs = _records(60)
    with tfr.ShardedWriter(
        f"{base}/data_tfrecord", num_shards=3, suffix=".gz", compression="GZIP", storage_options=so
    ) as w:
        w.write_all(recs)
    expected = sorted(recs)
    for files in (f"{base}/data_tfrecord@3.gz", f"{base}/*.gz", base, w.paths):
        ds = tfr.TFRecordDataset(files, num_parallel_reads=3, storage_options=so)
        assert sorted(ds) == expected
    with pytest.raises(FileNotFoundError) as info:
        tfr.TFRecordDataset(f"{base}/nothing-*", storage_options=so)
    assert info.value.filename == f"{base}/nothing-*"


def test_atomic_write_and_random_access(base: str, gcs_options: dict[str, Any]) -> None:
    so = gcs_options
    url = f"{base}/f.tfrecord"
    with pytest.raises(KeyError), tfr.TFRecordWriter(url, atomic=True, storage_options=so) as w:
        w.write(b"never")
        raise KeyError("boom")
    with pytest.raises(FileNotFoundError):
        list(tfr.tf_record_iterator(url, storage_options=so))
    recs = _records(40)
    with tfr.TFRecordWriter(url, atomic=True, storage_options=so) as w:
        w.write_all(recs)
    assert tfr.create_index(url, storage_options=so) == url + ".index"
    f = tfr.TFRecordFile(url, storage_options=so)
    assert f.index_path == url + ".index"
    assert f[[5, 0, 39]] == [recs[5], recs[0], recs[39]]
    with tfr.TFRecordWriter(url, mode="a", storage_options=so) as w:
        w.write(b"appended")
    assert list(tfr.tf_record_iterator(url, storage_options=so)) == [*recs, b"appended"]
