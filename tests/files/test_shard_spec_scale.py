"""``PREFIX@N`` costs one listing of the directory, not a look-up per named shard."""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

import pytest

import tfrecord_lite as tfr


def _write(path: Path, records: list[bytes]) -> None:
    with tfr.TFRecordWriter(str(path)) as w:
        for r in records:
            w.write(r)


def test_a_huge_count_says_no_shard_found_at_once(tmp_path: Path) -> None:
    _write(tmp_path / "train-00000-of-00003", [b"a"])  # another set's shard
    spec = str(tmp_path / "train@10000000")
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(FileNotFoundError, match=r"no shard of .*train-NNNNN-of-10000000"):
            tfr.expand_paths(spec)
        took = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Ten million look-ups took over 120 s and 1.1 GB; one listing takes milliseconds.
    assert took < 5.0, took
    assert peak < 20 * 1024 * 1024, peak


def test_a_huge_count_with_some_shards_names_the_first_missing(tmp_path: Path) -> None:
    for i in (0, 1, 3):
        _write(tmp_path / f"train-{i:05d}-of-1000000", [b"r%d" % i])
    start = time.perf_counter()
    with pytest.raises(FileNotFoundError) as info:
        tfr.expand_paths(str(tmp_path / "train@1000000"))
    assert time.perf_counter() - start < 5.0
    msg = str(info.value)
    assert "only 3 of 1000000 shards" in msg
    assert "train-00002-of-1000000" in msg  # the first missing


def test_only_files_of_the_exact_shard_name_count(tmp_path: Path) -> None:
    _write(tmp_path / "train-00000-of-00002", [b"a"])
    (tmp_path / "train-00001-of-00002").mkdir()  # a directory is not a shard
    _write(tmp_path / "train-0001-of-00002", [b"b"])  # four digits: another name
    _write(tmp_path / "xtrain-00001-of-00002", [b"c"])  # another prefix
    _write(tmp_path / "train-00001-of-00002.gz", [b"d"])  # another suffix
    with pytest.raises(FileNotFoundError, match=r"only 1 of 2 shards.*train-00001-of-00002'"):
        tfr.expand_paths(str(tmp_path / "train@2"))


def test_a_complete_set_reads_in_order_with_links_and_suffixes(tmp_path: Path) -> None:
    for i in range(3):
        _write(tmp_path / f"real-{i}", [b"r%d" % i])
    for i in range(3):
        os.symlink(tmp_path / f"real-{i}", tmp_path / f"data-{i:05d}-of-00003.tfrecord")
    spec = str(tmp_path / "data@3.tfrecord")
    assert tfr.expand_paths(spec) == [
        str(tmp_path / f"data-{i:05d}-of-00003.tfrecord") for i in range(3)
    ]
    assert list(tfr.tf_record_iterator(spec)) == [b"r0", b"r1", b"r2"]


def test_a_missing_directory_says_no_shard_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no shard of"):
        tfr.expand_paths(str(tmp_path / "nowhere" / "train@4"))
