"""Writers in separate processes on one prefix or path: the second is refused before it
touches anything, the first keeps every record; a killed writer's lock blocks no one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files import FileInUseError
from tfrecord_lite._files._manifest import manifest_path, read_manifest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs flock")

_SHARDED = """
import sys
import tfrecord_lite as tfr
from tfrecord_lite._files import FileInUseError
prefix, kind = sys.argv[1], sys.argv[2]
try:
    if kind == "seq":
        w = tfr.ShardedWriter(prefix, records_per_shard=2)
    else:
        w = tfr.ShardedWriter(prefix, 2)
except FileInUseError as err:
    print("refused:", err.path, "|", err)
    sys.exit(3)
w.write_all([b"two0", b"two1", b"two2"])
if len(sys.argv) > 3:
    print("ready", flush=True)
    sys.stdin.readline()  # killed here
w.close()
"""

_PLAIN = """
import sys
import tfrecord_lite as tfr
from tfrecord_lite._files import FileInUseError
path, atomic = sys.argv[1], sys.argv[2] == "atomic"
try:
    w = tfr.TFRecordWriter(path, atomic=atomic)
except FileInUseError as err:
    print("refused:", err.path, "|", err)
    sys.exit(3)
w.write(b"other")
if len(sys.argv) > 3:
    w.flush()
    print("ready", flush=True)
    sys.stdin.readline()
w.close()
"""


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120
    )


def _start(script: str, *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args, "wait"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _finish(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.close()
    assert proc.wait(timeout=120) == 0


def _records(paths: list[str]) -> list[bytes]:
    return [bytes(r) for p in paths for r in tfr.read_records(p)]


def test_second_sequential_writer_on_a_prefix_is_refused(tmp_path: Path) -> None:
    prefix = str(tmp_path / "train")
    first = tfr.ShardedWriter(prefix, records_per_shard=2)
    first.write_all([b"one0", b"one1", b"one2"])  # shard 0 finished, not yet renamed
    before = sorted(os.listdir(tmp_path))
    out = _run(_SHARDED, prefix, "seq")
    assert out.returncode == 3, out
    assert out.stdout.startswith(f"refused: {prefix} |")
    assert "another writer" in out.stdout and "close" in out.stdout
    assert sorted(os.listdir(tmp_path)) == before  # the refused one touched nothing
    first.write(b"one3")
    paths = first.close()
    assert _records(paths) == [b"one0", b"one1", b"one2", b"one3"]
    assert _records(tfr.expand_paths(str(tmp_path))) == [b"one0", b"one1", b"one2", b"one3"]
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".lock")]  # released


def test_refused_num_shards_writer_leaves_the_first_ones_manifest(tmp_path: Path) -> None:
    prefix = str(tmp_path / "train")
    first = tfr.ShardedWriter(prefix, 2)
    first.write_all([b"one0", b"one1", b"one2"])
    out = _run(_SHARDED, prefix, "fixed")
    assert out.returncode == 3, out
    assert out.stdout.startswith(f"refused: {prefix} |")
    manifest = read_manifest(manifest_path(prefix))
    assert manifest is not None and not manifest.complete  # still says "not complete"
    # The first writer killed in close() with a shard already under its final name:
    # the set is still refused, as it would be without the second writer.
    os.rename(first._open[0].tmp_path, prefix + "-00000-of-00002")
    with pytest.raises(tfr.IncompleteShardSetError):
        tfr.expand_paths(str(tmp_path))


def test_sequential_writer_killed_mid_way_blocks_no_one(tmp_path: Path) -> None:
    prefix = str(tmp_path / "train")
    proc = _start(_SHARDED, prefix, "seq")
    with pytest.raises(FileInUseError) as info:  # alive: refused, in this process too
        tfr.ShardedWriter(prefix, records_per_shard=2)
    assert info.value.path == prefix
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    with tfr.ShardedWriter(prefix, records_per_shard=2) as again:  # the lock died with it
        again.write_all([b"a", b"b", b"c"])
    assert _records(again.paths) == [b"a", b"b", b"c"]


def test_atomic_writer_of_a_held_path_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord"
    holder = tfr.TFRecordWriter(path)
    for i in range(10):
        holder.write(b"rec%d" % i)
    holder.flush()
    out = _run(_PLAIN, str(path), "atomic")
    assert out.returncode == 3, out
    assert out.stdout.startswith(f"refused: {path} |")
    assert os.listdir(tmp_path) == ["data.tfrecord"]  # no temporary file either
    holder.close()
    assert _records([str(path)]) == [b"rec%d" % i for i in range(10)]
    out = _run(_PLAIN, str(path), "atomic")  # once closed, the path is free
    assert out.returncode == 0, out
    assert _records([str(path)]) == [b"other"]


def test_atomic_writer_holds_its_path_while_open(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord"
    path.write_bytes(b"")
    with tfr.TFRecordWriter(path, atomic=True) as w:
        w.write(b"mine")
        out = _run(_PLAIN, str(path), "plain")  # would write into the file replaced at close
        assert out.returncode == 3, out
        out = _run(_PLAIN, str(path), "atomic")
        assert out.returncode == 3, out
    assert _records([str(path)]) == [b"mine"]


def test_atomic_close_refuses_to_replace_a_file_opened_since(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord"
    w = tfr.TFRecordWriter(path, atomic=True)
    w.write(b"mine")
    proc = _start(_PLAIN, str(path), "plain")  # path did not exist: nothing to hold yet
    try:
        with pytest.raises(FileInUseError) as info:
            w.close()
        assert info.value.path == str(path)
        kept = [n for n in os.listdir(tmp_path) if n.startswith(".data.tfrecord.tmp-")]
        assert len(kept) == 1 and kept[0] in str(info.value)  # the records are kept, named
        assert _records([str(tmp_path / kept[0])]) == [b"mine"]
    finally:
        _finish(proc)
    assert _records([str(path)]) == [b"other"]  # the other writer's record is whole
