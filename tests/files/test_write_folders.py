"""Writers create the folders they write into, and their errors name the user's path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import tfrecord_lite as tfr


@pytest.mark.parametrize("atomic", [False, True])
@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_a_writer_creates_missing_folders(tmp_path: Path, atomic: bool, compression: str) -> None:
    path = tmp_path / "out" / "api" / "train.tfrecord"
    with tfr.TFRecordWriter(path, compression, atomic=atomic) as w:
        w.write(b"a")
    assert list(tfr.tf_record_iterator(path)) == [b"a"]
    with tfr.TFRecordWriter(tmp_path / "new" / "more.tfrecord", mode="a") as w:
        w.write(b"b")
    assert list(tfr.tf_record_iterator(tmp_path / "new" / "more.tfrecord")) == [b"b"]


@pytest.mark.parametrize("split", [{"num_shards": 2}, {"records_per_shard": 2}])
def test_a_sharded_writer_creates_missing_folders(tmp_path: Path, split: dict[str, int]) -> None:
    prefix = tmp_path / "out" / "api" / "train"
    with tfr.ShardedWriter(prefix, **split) as w:
        w.write_all([b"a", b"b", b"c"])
    assert sorted(os.listdir(prefix.parent)) == [
        "_train.shards.json",
        "train-00000-of-00002",
        "train-00001-of-00002",
    ]
    assert sorted(tfr.tf_record_iterator(str(prefix) + "@2")) == [b"a", b"b", b"c"]


def test_a_folder_that_cannot_be_made_is_an_error_naming_the_users_path(tmp_path: Path) -> None:
    blocker = tmp_path / "out"
    blocker.write_bytes(b"a file where the folder should be")
    for atomic in (False, True):
        with pytest.raises(OSError) as info:
            tfr.TFRecordWriter(blocker / "api" / "train.tfrecord", atomic=atomic)
        assert info.value.filename == str(blocker / "api" / "train.tfrecord")
        assert "cannot create the folder" in str(info.value)
    for split in ({"num_shards": 2}, {"records_per_shard": 2}):
        with (
            pytest.raises(OSError) as info,
            tfr.ShardedWriter(blocker / "api" / "train", **split) as w,
        ):
            w.write(b"x")
        assert info.value.filename == str(blocker / "api" / "train")
        assert ".inprogress" not in info.value.filename
