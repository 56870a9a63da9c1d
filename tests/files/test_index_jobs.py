"""Indexes for big jobs: built by several processes at once, once when many ranks ask,
never torn; and record counts without a scan (index, shard-set manifest)."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from _cli_run import run_cli

import tfrecord_lite as tfr
from tfrecord_lite._files import _gzindex, ensure_index, indexed_count, known_count
from tfrecord_lite._files._indexonce import lock_path
from tfrecord_lite._files._lockfile import PathLock


def records(n: int, seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [
        rng.integers(0, 256, int(rng.integers(0, 400)), dtype=np.uint8).tobytes() for _ in range(n)
    ]


def write(path: Path, recs: list[bytes], compression: str = "") -> str:
    data = tfr.encode_records(recs)
    if compression:
        z = zlib.compressobj(6, zlib.DEFLATED, 31 if compression == "GZIP" else 15)
        data = z.compress(data) + z.flush()
    path.write_bytes(data)
    return os.fspath(path)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)  # (in this process: see tests/_cli_run.py; -j N spawns its workers)


# --------------------------------------------------------------------------- building


@pytest.mark.slow
def test_the_cli_indexes_many_files_in_processes(tmp_path: Path) -> None:
    files = {}
    for i, comp in enumerate(["", "GZIP", "ZLIB", "GZIP", "", "ZLIB"]):
        recs = records(50 + i, seed=i)
        files[write(tmp_path / f"f{i}.tfrecord", recs, comp)] = recs
    out = cli("index", "-j", "3", *files)
    assert out.returncode == 0, out.stderr
    for path, recs in files.items():
        assert f"{path}.index: {len(recs)} records" in out.stdout
        with tfr.TFRecordFile(path) as f:
            assert f.index_path == path + ".index" and f[len(recs) - 1] == recs[-1]
    again = cli("index", "--missing", "-j", "2", *files)
    assert again.returncode == 0 and again.stdout.count("(kept: up to date)") == len(files)


def test_the_cli_reports_a_bad_file_among_many(tmp_path: Path) -> None:
    good = write(tmp_path / "good.gz", records(20), "GZIP")
    blob = Path(write(tmp_path / "bad.gz", records(300), "GZIP")).read_bytes()
    (tmp_path / "bad.gz").write_bytes(blob[: len(blob) // 2])
    out = cli("index", "-j", "2", good, str(tmp_path / "bad.gz"))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "bad.gz" in out.stderr and "truncated" in out.stderr
    assert os.path.exists(good + ".index") and not os.path.exists(tmp_path / "bad.gz.index")


def test_text_format_for_a_compressed_file_from_the_cli(tmp_path: Path) -> None:
    recs = records(30)
    gz = write(tmp_path / "a.gz", recs, "GZIP")
    out = cli("index", "--format", "text", gz)
    assert out.returncode == 0 and "30 records" in out.stdout, out.stderr
    lines = Path(gz + ".index").read_text().splitlines()
    assert lines[1] == f"{len(recs[0]) + 16} {len(recs[1]) + 16}"
    plain = write(tmp_path / "p.tfrecord", recs)
    refused = cli("index", "--format", "binary", plain)
    assert refused.returncode == 1 and "binary index is for GZIP/ZLIB" in refused.stderr


def _rank(path: str, start: float) -> bool:
    time.sleep(max(0.0, start - time.time()))
    _, built = ensure_index(path)
    return built


@pytest.mark.slow
def test_many_ranks_at_once_build_the_index_once(tmp_path: Path) -> None:
    recs = records(20_000, seed=3)
    path = write(tmp_path / "big.gz", recs, "GZIP")
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        start = time.time() + 2.0  # all four ask at about the same moment
        built = pool.starmap(_rank, [(path, start)] * 4)
    assert sorted(built) == [False, False, False, True]
    assert indexed_count(path, path + ".index") == len(recs)
    assert not os.path.exists(lock_path(path + ".index"))


def test_a_reader_never_sees_a_torn_index(tmp_path: Path) -> None:
    recs = records(20_000, seed=4)
    path = write(tmp_path / "big.gz", recs, "GZIP")
    index = path + ".index"
    builder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\nfrom tfrecord_lite._files import ensure_index\n"
            "for _ in range(5): ensure_index(sys.argv[1], keep=False)",
            path,
        ]
    )
    seen = 0
    while builder.poll() is None or seen == 0:
        try:
            blob = Path(index).read_bytes()
        except FileNotFoundError:
            continue
        assert len(_gzindex.decode(blob).lengths) == len(recs)  # whole, every time
        seen += 1
    assert builder.wait() == 0 and seen > 0


def test_a_build_waits_for_the_lock_and_times_out(tmp_path: Path) -> None:
    path = write(tmp_path / "a.gz", records(10), "GZIP")
    lock = PathLock(lock_path(path + ".index"), "test", "")
    try:
        with pytest.raises(tfr.FileInUseError):
            ensure_index(path, timeout=0.3)
        assert not os.path.exists(path + ".index")
    finally:
        lock.release()
    assert ensure_index(path, timeout=0.3) == (path + ".index", True)


def test_missing_keeps_a_fitting_index_and_replaces_a_stale_one(tmp_path: Path) -> None:
    recs = records(40)
    path = write(tmp_path / "a.tfrecord", recs)
    assert ensure_index(path)[1] is True
    assert ensure_index(path)[1] is False
    write(tmp_path / "a.tfrecord", [*recs, b"more"])
    assert ensure_index(path)[1] is True
    assert indexed_count(path, path + ".index") == 41
    text = tfr.create_index(path, format="text")
    assert ensure_index(path, format="text")[1] is False and text == path + ".index"


# --------------------------------------------------------------------------- counting


def test_the_count_of_a_compressed_file_by_its_index_reads_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recs = records(500, seed=5)
    path = write(tmp_path / "a.gz", recs, "GZIP")
    tfr.create_index(path)

    def no_scan(*args: object, **kwargs: object) -> None:
        raise AssertionError("the file was scanned")

    monkeypatch.setattr(_gzindex, "build", no_scan)
    assert known_count(path) == (500, f"index {path}.index")
    with tfr.TFRecordFile(path) as f:
        assert len(f) == 500


def test_counts_from_index_manifest_or_reading(tmp_path: Path) -> None:
    with tfr.ShardedWriter(tmp_path / "set" / "train", num_shards=2) as w:
        w.write_all(records(9, seed=6))
    shards = sorted(str(p) for p in (tmp_path / "set").glob("train-*"))
    assert [known_count(s) for s in shards] == [
        (5, f"manifest {tmp_path / 'set' / '_train.shards.json'}"),
        (4, f"manifest {tmp_path / 'set' / '_train.shards.json'}"),
    ]
    plain = write(tmp_path / "p.tfrecord", records(7))
    assert known_count(plain) is None
    tfr.create_index(plain)
    gz = write(tmp_path / "g.gz", records(8), "GZIP")
    tfr.create_index(gz, format="text")  # cannot be checked without inflating: no count
    assert known_count(gz) is None
    out = cli("count", "--fast", *shards, plain, gz)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"5 {shards[0]} (from its manifest ")
    assert lines[2] == f"7 {plain} (from its index {plain}.index)"
    assert lines[3] == f"8 {gz} (read)"
    assert lines[-1] == "24 total"


def test_count_fast_with_a_stale_index_says_so_and_reads(tmp_path: Path) -> None:
    plain = write(tmp_path / "p.tfrecord", records(7))
    tfr.create_index(plain)
    write(tmp_path / "p.tfrecord", records(9))
    out = cli("count", "--fast", plain)
    assert out.returncode == 0
    assert out.stdout.splitlines() == [f"9 {plain} (read)"]
    assert "stale index" in out.stderr and "counting its records instead" in out.stderr
    plain_count = cli("count", plain)  # without --fast: read, as always
    assert plain_count.stdout.splitlines() == [f"9 {plain}"]
