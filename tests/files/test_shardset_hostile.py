"""Shard-set manifests that lie, and manifests that are hostile.

A complete manifest lists each shard's record count (and, for a local set, its size):
a shard cut at a record boundary, emptied, or swapped for another valid file is
refused (``IncompleteShardSetError`` naming the shard, expected and found), by the
readers and by ``tfrecord-lite count`` / ``verify``. A manifest that is a FIFO, a
device, huge, deeply nested or of the wrong types is an ``InvalidManifestError``:
never a hang, an unbounded read, a ``RecursionError`` or a ``TypeError``.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from _cli_run import run_cli

import tfrecord_lite as tfr
from tfrecord_lite._files import IncompleteShardSetError, InvalidManifestError
from tfrecord_lite._files._manifest import MAX_MANIFEST_BYTES, read_manifest

RECORDS = [b"rec%03d" % i for i in range(15)]
MANIFEST = "_train.shards.json"


def _write(d: Path) -> list[str]:
    with tfr.ShardedWriter(d / "train", records_per_shard=5) as w:
        w.write_all(RECORDS)
    return w.paths


def _read(source: str) -> list[bytes]:
    return list(tfr.tf_record_iterator(source))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)  # (in this process: see tests/_cli_run.py)


def _rewrite(path: str, records: list[bytes]) -> None:
    """Replace a file by a valid plain TFRecord file of ``records``."""
    os.remove(path)
    with tfr.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)


def test_the_manifest_lists_each_shards_size(tmp_path: Path) -> None:
    paths = _write(tmp_path)
    body = json.loads((tmp_path / MANIFEST).read_text())
    assert [s["bytes"] for s in body["shards"]] == [os.path.getsize(p) for p in paths]
    assert [s["records"] for s in body["shards"]] == [5, 5, 5]
    assert _read(str(tmp_path)) == RECORDS


# ----------------------------------------------------------------- manifests that lie


def _cut_at_record_boundary(p: str) -> None:
    with open(p, "r+b") as f:
        f.truncate(2 * (16 + len(RECORDS[0])))


def _empty(p: str) -> None:
    with open(p, "wb"):
        pass


def _swap(p: str) -> None:
    _rewrite(p, [b"other%02d" % i for i in range(2)])


@pytest.mark.parametrize("damage", [_cut_at_record_boundary, _empty, _swap])
@pytest.mark.parametrize("naming", ["dir", "glob", "spec"])
def test_a_shard_that_differs_from_the_manifest_is_refused(
    tmp_path: Path, damage: Any, naming: str
) -> None:
    paths = _write(tmp_path)
    damage(paths[1])
    source = {"dir": str(tmp_path), "glob": str(tmp_path / "train-*"), "spec": "train@3"}[naming]
    if naming == "spec":
        source = str(tmp_path / source)
    with pytest.raises(IncompleteShardSetError) as info:
        _read(source)
    assert info.value.path == paths[1]
    assert "train-00001-of-00003" in str(info.value)
    assert str(os.path.getsize(paths[1])) in str(info.value)  # the size found


def test_a_shard_of_the_same_size_but_other_records_is_refused_when_read(
    tmp_path: Path,
) -> None:
    # Same size, other count: only reading tells; the read fails at the shard's end.
    paths = _write(tmp_path)
    size = os.path.getsize(paths[2])
    # 5 records of 6 bytes (22 bytes each) = 110 bytes = 2 records of 39 + 1 of 16 bytes
    _rewrite(paths[2], [b"x" * 23, b"y" * 23, b"z" * 16])
    assert os.path.getsize(paths[2]) == size
    reader = tfr.TFRecordReader(str(tmp_path))
    got: list[bytes] = []
    with pytest.raises(IncompleteShardSetError) as info:
        for r in reader:
            got.append(r)
    assert got[:10] == RECORDS[:10] and len(got) == 13  # failed at the end of the shard
    msg = str(info.value)
    assert info.value.path == paths[2]
    assert "holds 3 records" in msg and "the 5" in msg
    # Every reader shares the check: the dataset and read_examples too.
    with pytest.raises(IncompleteShardSetError):
        list(tfr.data.TFRecordDataset(str(tmp_path)))
    with pytest.raises(IncompleteShardSetError):
        list(tfr.read_records(paths[2]))  # the set was checked in this process


def test_a_longer_shard_is_refused_too(tmp_path: Path) -> None:
    paths = _write(tmp_path)
    size = os.path.getsize(paths[0])
    _rewrite(paths[0], [b"ab"] * 5 + [b"abcd"])
    assert os.path.getsize(paths[0]) == size  # 6 records in the same 110 bytes
    with pytest.raises(IncompleteShardSetError, match="holds 6 records, more than the 5"):
        _read(str(tmp_path))


def test_a_set_written_again_is_read_by_its_new_manifest(tmp_path: Path) -> None:
    _write(tmp_path)
    reader_paths = tfr.expand_paths(str(tmp_path))  # the old counts are kept...
    for p in reader_paths:
        os.remove(p)  # type: ignore[arg-type]
    with tfr.ShardedWriter(tmp_path / "train", num_shards=3) as w:
        w.write_all(RECORDS[:6])  # ...but the set is written again: 2 a shard
    assert sorted(_read(str(reader_paths[0]))) == sorted(RECORDS[:6:3])


@pytest.mark.parametrize("command", [["count"], ["verify", "--no-parse"]])
def test_the_cli_exits_non_zero_on_a_shard_that_differs(tmp_path: Path, command: list[str]) -> None:
    paths = _write(tmp_path)
    assert _cli(*command, str(tmp_path)).returncode == 0
    _cut_at_record_boundary(paths[1])
    done = _cli(*command, str(tmp_path))
    assert done.returncode != 0
    assert "train-00001-of-00003" in done.stderr + done.stdout
    # Same size, other count: the CLI reads the shard and says so.
    paths = _write(tmp_path)
    _rewrite(paths[2], [b"x" * 23, b"y" * 23, b"z" * 16])
    done = _cli(*command, str(tmp_path))
    assert done.returncode != 0, done.stdout
    assert "holds 3 records" in done.stderr + done.stdout


# ----------------------------------------------------------------- hostile manifests


def _manifest(tmp_path: Path) -> Path:
    _write(tmp_path)
    return tmp_path / MANIFEST


def _refused(tmp_path: Path, what: str) -> InvalidManifestError:
    for source in (str(tmp_path), str(tmp_path / "train-*"), str(tmp_path / "train@3")):
        with pytest.raises(InvalidManifestError, match=what) as info:
            tfr.expand_paths(source)
        err = info.value
        assert isinstance(err, IncompleteShardSetError) and isinstance(err, ValueError)
        assert err.path == str(tmp_path / MANIFEST)
        assert "delete the manifest" in str(err)  # what to do
    return err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_manifest_is_refused_without_blocking(tmp_path: Path) -> None:
    m = _manifest(tmp_path)
    m.unlink()
    os.mkfifo(m)
    start = time.monotonic()
    _refused(tmp_path, "not a regular file")
    assert time.monotonic() - start < 5


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_symlink_to_dev_zero_is_refused_without_reading(tmp_path: Path) -> None:
    m = _manifest(tmp_path)
    m.unlink()
    m.symlink_to("/dev/zero")
    _refused(tmp_path, "not a regular file")


def test_a_symlink_to_a_directory_or_a_huge_file_is_refused(tmp_path: Path) -> None:
    m = _manifest(tmp_path)
    m.unlink()
    m.mkdir()
    _refused(tmp_path, "not a regular file")
    m.rmdir()
    with open(m, "wb") as f:
        f.truncate(MAX_MANIFEST_BYTES + 1)  # sparse: costs no disk
    _refused(tmp_path, "over")


def test_a_symlink_to_a_real_manifest_is_followed(tmp_path: Path) -> None:
    m = _manifest(tmp_path)
    (tmp_path / ".real.json").write_bytes(m.read_bytes())
    m.unlink()
    m.symlink_to(tmp_path / ".real.json")
    assert _read(str(tmp_path)) == RECORDS


def test_deeply_nested_json_is_refused_without_recursion_error(tmp_path: Path) -> None:
    m = _manifest(tmp_path)
    m.write_text("[" * 100_000 + "]" * 100_000)
    _refused(tmp_path, "nested deeper")
    m.write_text('{"format": ' + "[" * 10_000 + "]" * 10_000 + "}")
    _refused(tmp_path, "nested deeper")


def test_brackets_inside_names_are_not_nesting(tmp_path: Path) -> None:
    with tfr.ShardedWriter(tmp_path / "t[[[[[[[[[[[[[[[[[[[[[[[[[[[[x", num_shards=2) as w:
        w.write_all(RECORDS)
    assert sorted(_read(str(tmp_path))) == sorted(RECORDS)


def _body(tmp_path: Path) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(_manifest(tmp_path).read_text())
    return body


BAD_FIELDS: list[tuple[str, Any, str]] = [
    ("complete", "false", '"complete" must be true or false'),
    ("complete", 1, '"complete" must be true or false'),
    ("complete", None, '"complete" must be true or false'),
    ("shards", None, '"shards" must be a list'),
    ("shards", {"a": 1}, '"shards" must be a list'),
    ("shards", [1, 2, 3], "not an object"),
    ("version", True, '"version" must be 1'),
    ("version", 2, '"version" must be 1'),
    ("format", "something else", "not a manifest written by ShardedWriter"),
]


@pytest.mark.parametrize("field,value,what", BAD_FIELDS)
def test_fields_of_the_wrong_type_are_refused(
    tmp_path: Path, field: str, value: Any, what: str
) -> None:
    body = _body(tmp_path)
    body[field] = value
    (tmp_path / MANIFEST).write_text(json.dumps(body))
    _refused(tmp_path, what)


BAD_SHARDS: list[tuple[str, Any, str]] = [
    ("records", True, "records must be a whole number"),
    ("records", 5.0, "records must be a whole number"),
    ("records", -1, "records must be a whole number"),
    ("records", "5", "records must be a whole number"),
    ("bytes", False, "bytes must be a whole number"),
    ("bytes", [], "bytes must be a whole number"),
    ("name", None, "is not a shard file name"),
    ("name", 7, "is not a shard file name"),
    ("name", "../train-00000-of-00003", "is not a shard file name"),
    ("name", "/etc/train-00000-of-00003", "is not a shard file name"),
    ("name", "sub/train-00000-of-00003", "is not a shard file name"),
    ("name", "sub\\train-00000-of-00003", "is not a shard file name"),
    ("name", "train-00000-of-00003\0", "is not a shard file name"),
    ("name", "..", "is not a shard file name"),
    ("name", "passwd", "is not a shard file name"),
    ("name", "train-00001-of-00003", "listed twice"),
]


@pytest.mark.parametrize("field,value,what", BAD_SHARDS)
def test_shard_entries_of_the_wrong_type_are_refused(
    tmp_path: Path, field: str, value: Any, what: str
) -> None:
    body = _body(tmp_path)
    body["shards"][0][field] = value
    (tmp_path / MANIFEST).write_text(json.dumps(body))
    _refused(tmp_path, what)


@pytest.mark.parametrize(
    "text",
    [b"", b"\xff\xfe garbage", b"null", b"[]", b'{"format": NaN}', b"1" * 5000, b"{" * 20],
)
def test_text_that_is_not_a_manifest_is_refused(tmp_path: Path, text: bytes) -> None:
    _manifest(tmp_path).write_bytes(text)
    _refused(tmp_path, "is not valid")


def test_an_incomplete_manifest_needs_no_shard_list(tmp_path: Path) -> None:
    m = _manifest(tmp_path)
    m.write_text(json.dumps({"format": "tfrecord-lite shard set", "version": 1, "complete": False}))
    with pytest.raises(IncompleteShardSetError, match="did not finish"):
        tfr.expand_paths(str(tmp_path))
    got = read_manifest(str(m))
    assert got is not None and got.complete is False


def test_the_cli_reports_a_hostile_manifest_and_exits_non_zero(tmp_path: Path) -> None:
    _manifest(tmp_path).write_text(
        '{"format": "tfrecord-lite shard set", "version": 1, "complete": "false"}'
    )
    for command in ("count", "verify"):
        done = _cli(command, str(tmp_path))
        assert done.returncode != 0
        assert "_train.shards.json" in done.stderr and "is not valid" in done.stderr
