"""TFRecordDataset: files, sharding (exactly once), shuffle, interleave, batch, prefetch threads."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _helpers import run_in_fork

import tfrecord_lite as tfr
from tfrecord_lite._data import AUTOTUNE, TFRecordDataset, _source, collate
from tfrecord_lite._data._lists import _flatten_lists
from tfrecord_lite._data._ops_interleave import _interleave, _interleave_lists
from tfrecord_lite._errors import CorruptRecordError
from tfrecord_lite._examples._values import RaggedValue, SparseValue
from tfrecord_lite._files._index import create_index
from tfrecord_lite.example_pb2 import Example


def make_files(
    directory: Any, counts: list[int], compression: str | None = None, name: str = "part"
) -> list[str]:
    """Files whose records say where they come from: b"f<file>-r<record>"."""
    paths = []
    for f, n in enumerate(counts):
        path = os.path.join(directory, f"{name}-{f:05d}-of-{len(counts):05d}")
        with tfr.TFRecordWriter(path, compression) as w:
            w.write_all(b"f%d-r%d" % (f, r) for r in range(n))
        paths.append(path)
    return paths


def example(i: int) -> bytes:
    e = Example()
    feat = e.features.feature
    feat["id"].int64_list.value.append(i)
    feat["vals"].float_list.value.extend(float(j) / 2 for j in range(i % 5))
    feat["name"].bytes_list.value.append(b"n\x00%d" % i)
    if i % 3:
        feat["tags"].bytes_list.value.extend([b"t%d" % j for j in range(i % 3)])
    return e.SerializeToString()


@pytest.fixture
def example_file(tmp_path):
    path = os.fspath(tmp_path / "examples.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        w.write_all(example(i) for i in range(53))
    return path


def features() -> dict[str, Any]:
    from tfrecord_lite._examples._schema import (
        FixedLenFeature,
        RaggedFeature,
        VarLenFeature,
        float32,
        int64,
        string,
    )

    return {
        "id": FixedLenFeature([], int64),
        "name": FixedLenFeature([], string),
        "vals": VarLenFeature(float32),
        "tags": RaggedFeature(string),
    }


def assert_same_parsed(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, SparseValue):
            assert isinstance(y, SparseValue)
            for u, v in zip(x, y):
                assert np.array_equal(u, v) and u.dtype == v.dtype
        elif isinstance(x, RaggedValue):
            assert isinstance(y, RaggedValue) and x.to_list() == y.to_list()
        else:
            assert np.array_equal(x, y) and x.dtype == y.dtype and x.shape == y.shape


def thread_count_settles(baseline: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if threading.active_count() <= baseline:
            return True
        gc.collect()
        time.sleep(0.01)
    return threading.active_count() <= baseline


# --------------------------------------------------------------------------- files


def test_file_forms(tmp_path):
    paths = make_files(tmp_path, [3, 2, 4])
    create_index(paths[0])  # index files in the directory are not data
    everything = [r for p in paths for r in tfr.tf_record_iterator(p)]
    prefix = os.fspath(tmp_path / "part")
    for form in (
        paths,
        tuple(paths),
        os.fspath(tmp_path),
        tmp_path,
        f"{prefix}-*",
        f"{prefix}-?????-of-00003",
        f"{prefix}@3",
    ):
        assert list(TFRecordDataset(form)) == everything, form
    assert list(TFRecordDataset(paths[1])) == [b"f1-r0", b"f1-r1"]
    assert TFRecordDataset(f"{prefix}@3").files == paths


def test_reiterable_epochs(tmp_path):
    ds = TFRecordDataset(make_files(tmp_path, [5]))
    assert list(ds) == list(ds) == [b"f0-r%d" % i for i in range(5)]


def test_compression_auto_per_file_and_tf_names(tmp_path):
    a = make_files(tmp_path, [3], "GZIP", name="gz")
    b = make_files(tmp_path, [2], None, name="plain")
    c = make_files(tmp_path, [2], "ZLIB", name="zl")
    three, two = [b"f0-r0", b"f0-r1", b"f0-r2"], [b"f0-r0", b"f0-r1"]
    assert list(TFRecordDataset(a + b + c)) == three + two + two
    assert list(TFRecordDataset(a, compression_type="GZIP")) == [b"f0-r0", b"f0-r1", b"f0-r2"]
    assert list(TFRecordDataset(a, "GZIP", buffer_size=0)) == [b"f0-r0", b"f0-r1", b"f0-r2"]
    assert list(TFRecordDataset(a, buffer_size=7)) == [b"f0-r0", b"f0-r1", b"f0-r2"]
    with pytest.raises(TypeError):
        TFRecordDataset(a, "GZIP", compression_type="GZIP")
    assert list(TFRecordDataset(a, buffer_size=-1)) == list(TFRecordDataset(a))  # as tf.data
    with pytest.raises(ValueError):
        TFRecordDataset(a, buffer_size=-2)
    with pytest.raises(ValueError):
        TFRecordDataset(a, "BZ2")
    with pytest.raises(TypeError, match="paths"), open(a[0], "rb") as fh:
        TFRecordDataset(fh)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        TFRecordDataset(os.fspath(tmp_path / "nothing-*"))


def test_corrupt_record_raises_with_location(tmp_path):
    (path,) = make_files(tmp_path, [4])
    data = bytearray(Path(path).read_bytes())
    data[-6] ^= 0xFF
    Path(path).write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError) as info:
        list(TFRecordDataset(path))
    assert info.value.path == path and info.value.index == 3


# --------------------------------------------------------------------------- sharding: exactly once

COUNTS = [
    [10],
    [0],
    [1],
    [3, 0, 5],
    [1, 1, 1, 1, 1],
    [7, 0, 0, 2, 9, 4],
    [0, 0],
    [4] * 8,
    [5, 3],
    [2, 11],
]


def everything(paths: list[str]) -> Counter[bytes]:
    out = Counter(r for p in paths for r in tfr.tf_record_iterator(p))
    assert all(v == 1 for v in out.values())
    return out


@pytest.mark.parametrize("counts", COUNTS, ids=str)
def test_shards_cover_every_record_exactly_once(tmp_path, counts):
    paths = make_files(tmp_path, counts)
    want = everything(paths)
    for n in (1, 2, 3, 4, 5, 7, 8, 16, 40):
        for by in ("auto", "record"):
            shards = [list(TFRecordDataset(paths).shard(n, i, by=by)) for i in range(n)]
            got = Counter(r for s in shards for r in s)
            assert got == want, (n, by)


@pytest.mark.parametrize("counts", [[6, 0, 7, 3], [9], [2, 2, 2], [1] * 9], ids=str)
def test_shards_exactly_once_whatever_the_read_order(tmp_path, counts):
    """The shard of a record depends on the record, not on the order files are read in."""
    paths = make_files(tmp_path, counts)
    want = everything(paths)
    for n in (2, 3, 5, 12):
        variants = [
            lambda ds: ds.shuffle_files(),  # unseeded: a different order in every shard
            lambda ds: ds.interleave(3, 2),
            lambda ds: ds.shuffle_files(seed=None).interleave(2),
        ]
        for variant in variants:
            got = Counter(r for i in range(n) for r in variant(TFRecordDataset(paths).shard(n, i)))
            assert got == want
        # A list given in another order shards the same way.
        got = Counter(
            r
            for i in range(n)
            for r in TFRecordDataset(paths[::-1] if i % 2 else paths).shard(n, i)
        )
        assert got == want


@pytest.mark.parametrize("counts", [[5], [3, 0, 8], [4] * 6, [1, 2, 3, 4, 5, 6, 7]], ids=str)
def test_nested_shards_ranks_times_workers(tmp_path, counts):
    """shard(world, rank).shard(workers, w) and shard(world*workers, rank*workers + w): both exact."""
    paths = make_files(tmp_path, counts)
    want = everything(paths)
    for world in (1, 2, 3):
        for workers in (1, 2, 4):
            nested = Counter(
                r
                for rank in range(world)
                for w in range(workers)
                for r in TFRecordDataset(paths).shard(world, rank).shard(workers, w)
            )
            flat = Counter(
                r
                for rank in range(world)
                for w in range(workers)
                for r in TFRecordDataset(paths).shard(world * workers, rank * workers + w)
            )
            assert nested == want and flat == want, (world, workers)


def test_file_sharding_when_enough_files(tmp_path):
    paths = make_files(tmp_path, [2, 3, 4, 5, 6])
    for i in range(2):
        got = list(TFRecordDataset(paths).shard(2, i))
        files_seen = sorted({r.split(b"-")[0] for r in got})
        assert files_seen == [b"f%d" % f for f in range(i, 5, 2)]  # whole files: files[i::2]
        assert len(got) == sum([2, 3, 4, 5, 6][i::2])


def test_file_sharding_uses_sorted_names_not_list_order(tmp_path):
    paths = make_files(tmp_path, [1, 1, 1, 1])
    a = list(TFRecordDataset(paths).shard(2, 0))
    b = list(TFRecordDataset(paths[::-1]).shard(2, 0))
    assert sorted(a) == sorted(b) == [b"f0-r0", b"f2-r0"]
    assert b == [b"f2-r0", b"f0-r0"]  # but read in the order given


def test_record_sharding_is_balanced(tmp_path):
    paths = make_files(tmp_path, [10, 10, 10])
    for n in (4, 5, 7, 8):
        sizes = [len(list(TFRecordDataset(paths).shard(n, i, by="record"))) for i in range(n)]
        assert max(sizes) - min(sizes) <= 1 and sum(sizes) == 30, (n, sizes)
    (single,) = make_files(tmp_path, [10], name="one")
    assert list(TFRecordDataset(single).shard(3, 1)) == [b"f0-r%d" % r for r in (1, 4, 7)]


def test_record_sharding_skips_files_it_has_nothing_in(tmp_path, monkeypatch):
    paths = make_files(tmp_path, [6, 6])
    opened: list[str] = []
    real = _source.read_batches

    def spy(path: str, *args: Any, **kwargs: Any) -> Any:
        opened.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(_source, "read_batches", spy)
    for i in range(8):
        opened.clear()
        got = list(TFRecordDataset(paths).shard(8, i))
        assert len(opened) == 1  # 2 files, 8 shards: each shard reads one file
        assert {r.split(b"-")[0] for r in got} <= {b"f%d" % (i % 2)}


def test_record_sharding_reads_only_its_records_with_an_index(tmp_path, monkeypatch):
    paths = make_files(tmp_path, [40, 0, 9])
    expected = {n: [list(TFRecordDataset(paths).shard(n, i)) for i in range(n)] for n in (4, 7)}
    for p in paths:
        create_index(p)
    calls: list[str] = []
    real = _source.read_batches
    monkeypatch.setattr(
        _source, "read_batches", lambda p, *a, **k: calls.append(p) or real(p, *a, **k)
    )
    for n, shards in expected.items():
        assert [list(TFRecordDataset(paths).shard(n, i)) for i in range(n)] == shards
    assert calls == []  # random access through the index, no streaming
    with open(paths[0], "ab") as fh:  # the index is now stale: warn, stream, same records
        fh.write(tfr.encode_record(b"f0-r40"))
    with pytest.warns(RuntimeWarning, match="stale index"):
        got = list(TFRecordDataset(paths[0]).shard(3, 1))
    assert got == [b"f0-r%d" % r for r in range(1, 41, 3)] and calls == [paths[0]]


def test_shard_argument_errors(tmp_path):
    ds = TFRecordDataset(make_files(tmp_path, [1, 1]))
    with pytest.raises(ValueError):
        ds.shard(2, 2)
    with pytest.raises(ValueError):
        ds.shard(0, 0)
    with pytest.raises(TypeError):
        ds.shard(2.0, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="by"):
        ds.shard(2, 0, by="bytes")
    with pytest.raises(ValueError, match="at least 3 files"):
        ds.shard(3, 0, by="file")
    assert list(ds.shard(2, 1, by="file")) == [b"f1-r0"]


def test_shard_applies_to_input_records_wherever_it_is_called(tmp_path):
    paths = make_files(tmp_path, [20])
    a = list(TFRecordDataset(paths).shard(3, 1).map(bytes.upper))
    b = list(TFRecordDataset(paths).map(bytes.upper).shard(3, 1))
    assert a == b == [b"F0-R%d" % r for r in range(1, 20, 3)]


# --------------------------------------------------------------------------- shuffle


def test_shuffle_is_a_reproducible_permutation(tmp_path):
    paths = make_files(tmp_path, [300, 200])
    base = list(TFRecordDataset(paths))
    ds = TFRecordDataset(paths).shuffle(64, seed=7)
    e0, e1 = list(ds), list(ds)
    assert sorted(e0) == sorted(e1) == sorted(base)
    assert e0 != base and e1 != e0  # reshuffled each epoch
    again = TFRecordDataset(paths).shuffle(64, seed=7)  # a new pipeline, same seed
    assert list(again) == e0 and list(again) == e1
    assert list(again.iter_epoch(1)) == e1 and list(again.iter_epoch(0)) == e0
    again.set_epoch(1)
    assert list(again) == e1
    other = list(TFRecordDataset(paths).shuffle(64, seed=8))
    assert other != e0 and sorted(other) == sorted(base)


def test_shuffle_options(tmp_path):
    paths = make_files(tmp_path, [100])
    base = list(TFRecordDataset(paths))
    fixed = TFRecordDataset(paths).shuffle(10, seed=1, reshuffle_each_iteration=False)
    assert list(fixed) == list(fixed) != base
    assert list(TFRecordDataset(paths).shuffle(1, seed=3)) == base  # a buffer of one: no change
    unseeded = TFRecordDataset(paths).shuffle(1000)
    assert sorted(unseeded) == sorted(base)
    with pytest.raises(ValueError):
        TFRecordDataset(paths).shuffle(0)
    with pytest.raises(ValueError):
        TFRecordDataset(paths).shuffle(10, seed=-1)
    assert sorted(TFRecordDataset(paths).shuffle(AUTOTUNE, seed=0)) == sorted(base)


def test_shuffle_with_a_big_buffer_is_uniform_enough(tmp_path):
    paths = make_files(tmp_path, [8])
    firsts = Counter(next(iter(TFRecordDataset(paths).shuffle(100, seed=s))) for s in range(400))
    assert len(firsts) == 8 and min(firsts.values()) > 20  # every record can come first


def test_shuffle_memory_is_the_buffer(tmp_path):
    """At most buffer_size (+2 in flight) elements are alive, for any number of records/files."""
    paths = make_files(tmp_path, [300] * 5)
    alive = [0, 0]  # current, max

    class Tracked:
        def __init__(self, r: bytes) -> None:
            self.r = r
            alive[0] += 1
            alive[1] = max(alive[1], alive[0])

        def __del__(self) -> None:
            alive[0] -= 1

    ds = TFRecordDataset(paths).map(Tracked).shuffle(25, seed=0).map(lambda t: t.r)
    out = list(ds)
    assert sorted(out) == sorted(TFRecordDataset(paths))
    assert alive[1] <= 27


def test_shuffle_files(tmp_path):
    paths = make_files(tmp_path, [2] * 6)
    ds = TFRecordDataset(paths).shuffle_files(seed=5)
    e0, e1 = list(ds), list(ds)
    assert sorted(e0) == sorted(e1) == sorted(TFRecordDataset(paths))
    assert e0 != e1
    for out in (e0, e1):  # whole files, in order within each
        assert all(out[k].split(b"-")[0] == out[k + 1].split(b"-")[0] for k in range(0, 12, 2))
    assert list(TFRecordDataset(paths).shuffle_files(seed=5)) == e0


def test_repeat_reshuffles_each_repetition(tmp_path):
    paths = make_files(tmp_path, [30])
    out = list(TFRecordDataset(paths).shuffle(8, seed=2).repeat(3))
    reps = [out[0:30], out[30:60], out[60:90]]
    assert len(out) == 90 and all(sorted(r) == sorted(reps[0]) for r in reps)
    assert reps[0] != reps[1] != reps[2]
    assert out == list(TFRecordDataset(paths).shuffle(8, seed=2).repeat(3))


# --------------------------------------------------------------------------- interleave (orders checked with TensorFlow 2.21)


TF_INTERLEAVE = {
    (2, 2): "A0 A1 B0 B1 A2 A3 B2 A4 C0 C1 C2 C3 E0 E1",
    (3, 1): "A0 B0 C0 A1 B1 C1 A2 B2 C2 A3 C3 A4 E0 E1",
    (2, 3): "A0 A1 A2 B0 B1 B2 A3 A4 C0 C1 C2 C3 E0 E1",
    (1, 2): "A0 A1 A2 A3 A4 B0 B1 B2 C0 C1 C2 C3 E0 E1",
    (4, 2): "A0 A1 B0 B1 C0 C1 A2 A3 B2 C2 C3 E0 E1 A4",
}


@pytest.fixture
def lettered(tmp_path):
    paths = []
    for name, n in [("A", 5), ("B", 3), ("C", 4), ("D", 0), ("E", 2)]:
        path = os.fspath(tmp_path / f"il_{name}")
        with tfr.TFRecordWriter(path) as w:
            w.write_all(f"{name}{i}".encode() for i in range(n))
        paths.append(path)
    return paths


@pytest.mark.parametrize("cycle_block", sorted(TF_INTERLEAVE))
def test_interleave_order_is_tensorflows(lettered, cycle_block):
    got = TFRecordDataset(lettered).interleave(*cycle_block)
    assert b" ".join(got).decode() == TF_INTERLEAVE[cycle_block]


def test_num_parallel_reads_is_tf_interleave_cycle_n_block_1(lettered):
    got = b" ".join(TFRecordDataset(lettered, num_parallel_reads=3)).decode()
    assert got == TF_INTERLEAVE[(3, 1)]
    assert (
        b" ".join(TFRecordDataset(lettered, num_parallel_reads=AUTOTUNE)).decode().count(" ") == 13
    )


def _split_into_lists(records: list[str], rng: np.random.Generator) -> list[list[str]]:
    """Records cut into lists of random sizes (empty lists too), as a decoder hands them out."""
    lists, i = [], 0
    while i < len(records):
        n = int(rng.integers(0, 7))
        lists.append(records[i : i + n])
        i += n
    return lists


class _ListFile:
    """A file read a list at a time; records when it is opened, read and closed."""

    def __init__(self, lists: list[list[str]], log: list[str], name: str, fail: bool = False):
        self.lists, self.log, self.name, self.fail = lists, log, name, fail

    def lists_gen(self):
        self.log.append(f"open {self.name}")
        try:
            for lst in self.lists:
                self.log.append(f"read {self.name}")
                yield lst
            if self.fail:
                raise CorruptRecordError(f"{self.name} is damaged here")
        finally:
            self.log.append(f"close {self.name}")

    def records_gen(self):
        for lst in self.lists_gen():
            yield from lst


@pytest.mark.parametrize("seed", range(6))
def test_list_interleave_equals_record_by_record_interleave(seed):
    """Files handing out lists are merged in exactly the record-by-record order.

    Uneven files (0, 1, many records, cut into lists of any size) and several
    cycle and block lengths: the same records in the same order, the files
    opened, read and closed in the same order, errors after the same records.
    """
    rng = np.random.default_rng(seed)
    counts = [0, 1, 37, 5, 0, 64, 1, 12, 3, 200, 0, 9][: 4 + 2 * seed]
    rng.shuffle(counts)
    files = [[f"f{f}-r{r}" for r in range(n)] for f, n in enumerate(counts)]
    lists = [_split_into_lists(records, rng) for records in files]
    fail = int(rng.integers(0, len(files))) if seed % 2 else -1  # odd seeds: one file is damaged
    for cycle in (1, 2, 3, 5, 16):
        for block in (1, 2, 3, 7):
            runs = []
            for listwise in (False, True):
                log: list[str] = []
                srcs = [_ListFile(ls, log, f"f{f}", fail=f == fail) for f, ls in enumerate(lists)]
                if listwise:
                    makers = [s.lists_gen for s in srcs]
                    it = _flatten_lists(_interleave_lists(makers, cycle, block))
                else:
                    it = _interleave([s.records_gen for s in srcs], cycle, block)
                out: list[str] = []
                error = None
                try:
                    for record in it:
                        out.append(record)
                except CorruptRecordError as err:
                    error = str(err)
                runs.append((out, log, error))
            assert runs[1] == runs[0], (cycle, block)
            assert (runs[0][2] is None) == (fail < 0)
            if fail < 0:
                assert sorted(runs[0][0]) == sorted(r for records in files for r in records)


def test_list_interleave_closes_open_files_when_closed_early():
    log: list[str] = []
    srcs = [_ListFile([[f"f{f}-r{r}" for r in range(9)]], log, f"f{f}") for f in range(5)]
    it = _flatten_lists(_interleave_lists([s.lists_gen for s in srcs], 3, 1))
    assert [next(it) for _ in range(4)] == ["f0-r0", "f1-r0", "f2-r0", "f0-r1"]
    it.close()  # type: ignore[attr-defined]
    assert sorted(e for e in log if e.startswith("close")) == ["close f0", "close f1", "close f2"]
    assert not any(e.endswith(("f3", "f4")) for e in log)


def test_num_parallel_reads_same_records_as_tf_order_on_uneven_files(tmp_path):
    """Every cycle length over real files (GZIP too, small read blocks): tf.data's order."""
    counts = [0, 1, 700, 3, 0, 1500, 1]
    for compression in (None, "GZIP"):
        paths = make_files(tmp_path, counts, compression, name=f"u{compression}")
        files = [list(TFRecordDataset(p)) for p in paths]
        for cycle in (2, 3, 4, 7, 16):
            # the order of tf.data's interleave(cycle, block_length=1), one record at a time
            expected = list(
                _interleave([lambda f=f: iter(f) for f in files], cycle, 1)  # type: ignore[misc]
            )
            for buffer_size in (None, 1 << 16):
                ds = TFRecordDataset(paths, num_parallel_reads=cycle, buffer_size=buffer_size)
                assert list(ds) == expected, (compression, cycle, buffer_size)
            # 3 shards of the files: shard 2 reads files 2 and 5 only, interleaved
            shard = [iter(files[2]), iter(files[5])]
            assert list(TFRecordDataset(paths, num_parallel_reads=cycle).shard(3, 2)) == list(
                _interleave([lambda it=it: it for it in shard], cycle, 1)  # type: ignore[misc]
            )


# --------------------------------------------------------------------------- element ops


def test_take_skip_repeat_filter_map(tmp_path):
    paths = make_files(tmp_path, [10])
    base = list(TFRecordDataset(paths))
    ds = TFRecordDataset(paths)
    assert list(ds.take(3)) == base[:3]
    assert list(ds.take(-1)) == base
    assert list(ds.take(0)) == []
    assert list(ds.skip(7)) == base[7:]
    assert list(ds.skip(-1)) == []
    assert list(ds.repeat(2)) == base * 2
    assert list(ds.repeat(0)) == []
    assert list(ds.repeat().take(25)) == (base * 3)[:25]
    assert list(ds.repeat(-1).take(12)) == (base * 2)[:12]
    assert list(ds.filter(lambda r: r.endswith(b"5"))) == [b"f0-r5"]
    assert list(ds.map(len)) == [len(r) for r in base]
    assert list(ds.skip(2).take(3).map(bytes.upper)) == [r.upper() for r in base[2:5]]
    assert list(ds.filter(lambda r: False).repeat()) == []  # repeating nothing ends
    assert list(ds.apply(lambda d: d.take(1))) == base[:1]
    assert list(ds.as_numpy_iterator()) == base


def test_parallel_map_keeps_order_and_stops_threads(tmp_path):
    paths = make_files(tmp_path, [200])
    baseline = threading.active_count()

    def slow_upper(r: bytes) -> bytes:
        time.sleep(0.0005 * (r[-1] % 3))
        return r.upper()

    ds = TFRecordDataset(paths).map(slow_upper, num_parallel_calls=4)
    assert list(ds) == [r.upper() for r in TFRecordDataset(paths)]
    for _ in ds.map(bytes.lower, num_parallel_calls=AUTOTUNE):
        break
    assert thread_count_settles(baseline)
    with pytest.raises(ZeroDivisionError):
        list(TFRecordDataset(paths).map(lambda r: 1 / 0, num_parallel_calls=2))
    assert thread_count_settles(baseline)


def test_batch_raw_records(tmp_path):
    paths = make_files(tmp_path, [7])
    base = list(TFRecordDataset(paths))
    batches = list(TFRecordDataset(paths).batch(3))
    assert batches == [base[0:3], base[3:6], base[6:7]]
    assert all(isinstance(b, list) for b in batches)
    assert list(TFRecordDataset(paths).batch(3, drop_remainder=True)) == [base[0:3], base[3:6]]
    assert list(TFRecordDataset(paths).batch(10, drop_remainder=True)) == []
    assert list(TFRecordDataset(paths).filter(lambda r: True).batch(7)) == [base]
    with pytest.raises(ValueError):
        TFRecordDataset(paths).batch(0)


def test_parse_then_batch_is_parse_example_per_batch(example_file):
    from tfrecord_lite._examples import parse_example, parse_single_example

    records = list(TFRecordDataset(example_file))
    feats = features()
    batches = list(TFRecordDataset(example_file).parse(feats).batch(10))
    assert len(batches) == 6
    for k, b in enumerate(batches):
        assert_same_parsed(b, parse_example(records[10 * k : 10 * k + 10], feats))
    assert batches[0]["name"][0] == b"n\x000"  # bytes kept whole (NULs too)
    after = list(TFRecordDataset(example_file).batch(10).parse(feats))
    for a, b in zip(after, batches):
        assert_same_parsed(a, b)
    singles = list(TFRecordDataset(example_file).parse(feats))
    for r, s in zip(records, singles):
        assert_same_parsed(s, parse_single_example(r, feats))


def test_parse_moves_past_shuffle_filter_take(example_file):
    from tfrecord_lite._examples import parse_example

    feats = features()
    shuffled_raw = list(TFRecordDataset(example_file).shuffle(16, seed=4).take(40))
    kept = [
        r
        for r in shuffled_raw
        if Example.FromString(r).features.feature["id"].int64_list.value[0] % 2
    ]
    ds = (
        TFRecordDataset(example_file)
        .parse(feats)
        .shuffle(16, seed=4)
        .take(40)
        .filter(lambda e: e["id"] % 2 == 1)
        .prefetch(2)
        .batch(8)
    )
    batches = list(ds)
    assert [len(b["id"]) for b in batches] == [8, 8, 4]
    for k, b in enumerate(batches):
        assert_same_parsed(b, parse_example(kept[8 * k : 8 * k + 8], feats))


def test_map_then_batch_collates_like_parse_example(example_file):
    """parse -> map(identity) -> batch: stacked singles equal parse_example's columns."""
    from tfrecord_lite._examples import parse_example

    feats = features()
    records = list(TFRecordDataset(example_file))
    batches = list(TFRecordDataset(example_file).parse(feats).map(lambda e: e).batch(10))
    for k, b in enumerate(batches):
        want = parse_example(records[10 * k : 10 * k + 10], feats)
        assert_same_parsed(
            {k2: v for k2, v in b.items() if k2 != "tags"},
            {k2: v for k2, v in want.items() if k2 != "tags"},
        )
        assert isinstance(b["tags"], RaggedValue) and b["tags"].to_list() == want["tags"].to_list()


def test_collate_stacks_ragged_rows_and_names_what_cannot_be_stacked():
    same = collate([np.arange(3), np.arange(3)])
    assert same.shape == (2, 3)
    ragged = collate([np.arange(3), np.arange(1), np.arange(0)])
    assert isinstance(ragged, RaggedValue) and ragged.to_list() == [[0, 1, 2], [0], []]
    ragged2d = collate([np.zeros((2, 2)), np.ones((1, 2))])
    assert isinstance(ragged2d, RaggedValue) and ragged2d.to_list() == [[[0, 0], [0, 0]], [[1, 1]]]
    with pytest.raises(ValueError, match=r"element 1 has shape \(2, 4\)"):
        collate([np.zeros((2, 3)), np.zeros((2, 4))])
    mixed = collate([np.zeros((2, 3)), np.zeros((2, 4))], ragged="list")
    assert isinstance(mixed, list) and len(mixed) == 2
    assert collate([1, 2.5]).tolist() == [1.0, 2.5]
    assert collate([b"a", b"bb"]) == [b"a", b"bb"]
    assert collate(["a", "b"]) == ["a", "b"]
    assert collate([None, 1]) == [None, 1]
    assert collate([1, "x"]) == [1, "x"]
    d = collate([{"a": 1, "b": b"x"}, {"a": 2, "b": b"y"}])
    assert d["a"].tolist() == [1, 2] and d["b"] == [b"x", b"y"]
    with pytest.raises(ValueError, match="keys"):
        collate([{"a": 1}, {"b": 2}])
    assert collate([{"a": 1}, {"b": 2}], ragged="list") == [{"a": 1}, {"b": 2}]
    t = collate([(1, np.ones(2)), (2, np.zeros(2))])
    assert isinstance(t, tuple) and t[0].tolist() == [1, 2] and t[1].shape == (2, 2)
    sv = collate(
        [
            SparseValue(np.array([[0], [1]]), np.array([5, 6]), np.array([2])),
            SparseValue(np.zeros((0, 1), np.int64), np.zeros(0, np.int64), np.array([0])),
            SparseValue(np.array([[0], [1], [2]]), np.array([7, 8, 9]), np.array([3])),
        ]
    )
    assert sv.indices.tolist() == [[0, 0], [0, 1], [2, 0], [2, 1], [2, 2]]
    assert sv.values.tolist() == [5, 6, 7, 8, 9] and sv.dense_shape.tolist() == [3, 3]
    nested = collate(
        [
            RaggedValue(np.array([1, 2, 3]), np.array([0, 1, 3])),
            RaggedValue(np.array([4]), np.array([0, 0, 1])),
        ]
    )
    assert nested.to_list() == [[[1], [2, 3]], [[], [4]]]
    assert collate([]) == []


# --------------------------------------------------------------------------- prefetch and threads


def test_prefetch_yields_everything_and_stops(tmp_path):
    paths = make_files(tmp_path, [50, 50])
    baseline = threading.active_count()
    ds = TFRecordDataset(paths).prefetch(3)
    assert list(ds) == list(TFRecordDataset(paths))
    assert thread_count_settles(baseline)


@pytest.mark.parametrize("size", [1, 2, AUTOTUNE])
def test_breaking_out_of_the_loop_stops_the_thread(tmp_path, size):
    paths = make_files(tmp_path, [2000])
    baseline = threading.active_count()
    for epoch in range(3):
        for k, _ in enumerate(TFRecordDataset(paths).shuffle(100, seed=epoch).prefetch(size)):
            if k == 5:
                break
        assert thread_count_settles(baseline), epoch
    nested = TFRecordDataset(paths).prefetch(1).map(bytes.upper).prefetch(1).batch(4).prefetch(2)
    for _ in nested:
        break
    assert thread_count_settles(baseline)


def test_dropping_the_iterator_stops_the_thread(tmp_path):
    paths = make_files(tmp_path, [1000])
    baseline = threading.active_count()
    it = iter(TFRecordDataset(paths).prefetch(2))
    assert next(it) == b"f0-r0"
    assert threading.active_count() > baseline
    del it
    gc.collect()
    assert thread_count_settles(baseline)
    with iter(TFRecordDataset(paths).prefetch(2)) as it2:
        next(it2)
    assert thread_count_settles(baseline)
    it3 = iter(TFRecordDataset(paths).prefetch(2))
    next(it3)
    it3.close()
    assert thread_count_settles(baseline)
    assert list(it3) == []


def test_errors_in_the_prefetch_thread_reach_the_loop(tmp_path):
    (path,) = make_files(tmp_path, [20])
    data = bytearray(Path(path).read_bytes())
    data[-3] ^= 0x10
    Path(path).write_bytes(bytes(data))
    baseline = threading.active_count()
    seen = []
    with pytest.raises(CorruptRecordError) as info:
        for r in TFRecordDataset(path).prefetch(2):
            seen.append(r)
    assert info.value.index == 19 and len(seen) == 19
    assert thread_count_settles(baseline)

    def boom(r: bytes) -> bytes:
        if r.endswith(b"r3"):
            raise KeyError("bad record")
        return r

    with pytest.raises(KeyError, match="bad record"):
        list(TFRecordDataset(path).take(10).map(boom).prefetch(1))
    assert thread_count_settles(baseline)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_prefetching_iterator_continued_after_a_fork_says_so(tmp_path):
    # The forked child has no copy of the prefetch thread: once the items already
    # queued are read, its next() explains instead of waiting forever.
    paths = make_files(tmp_path, [50])
    it = iter(TFRecordDataset(paths).prefetch(1))
    first = next(it)

    def child() -> int:
        try:
            for _ in range(50):
                next(it)
        except RuntimeError as err:
            said = str(err)
            return 0 if "prefetching iterator" in said and "another process" in said else 2
        return 1

    assert run_in_fork(child) == 0
    rest = list(it)  # the parent's iterator goes on
    assert [first, *rest] == list(TFRecordDataset(paths))


def test_prefetch_zero_is_no_prefetch(tmp_path):
    paths = make_files(tmp_path, [3])
    assert list(TFRecordDataset(paths).prefetch(0)) == list(TFRecordDataset(paths))
    with pytest.raises(ValueError):
        TFRecordDataset(paths).prefetch(-5)


# --------------------------------------------------------------------------- the whole pipeline


def test_issue_pipeline_is_deterministic_and_exact(tmp_path):
    from tfrecord_lite._examples import parse_example

    for f in range(4):
        with tfr.TFRecordWriter(
            tmp_path / f"train-{f:05d}-of-00004.tfrecord", "GZIP" if f % 2 else None
        ) as w:
            w.write_all(example(1000 * f + i) for i in range(25 + 5 * f))
    pattern = os.fspath(tmp_path / "train-?????-of-00004.tfrecord")
    feats = features()
    all_ids = sorted(1000 * f + i for f in range(4) for i in range(25 + 5 * f))

    def pipeline(world: int, rank: int) -> TFRecordDataset:
        return (
            TFRecordDataset(pattern, compression="auto")
            .shard(num_shards=world, index=rank)
            .shuffle(buffer_size=16, seed=0)
            .parse(feats)
            .batch(8, drop_remainder=False)
            .prefetch(2)
        )

    for world in (1, 2, 3, 8):
        ds = [pipeline(world, r) for r in range(world)]
        for _epoch in range(2):
            ids = []
            for d in ds:
                for batch in d:
                    assert set(batch) == set(feats) and isinstance(batch["vals"], SparseValue)
                    ids.extend(batch["id"].tolist())
            assert sorted(ids) == all_ids, world
    a = [b["id"].tolist() for b in pipeline(2, 1)]
    b = [b["id"].tolist() for b in pipeline(2, 1)]
    assert a == b
    assert repr(pipeline(2, 1)).startswith("TFRecordDataset(files=4).shard(2, 1).shuffle(16)")
    one = next(iter(pipeline(1, 0)))
    assert parse_example is not None and one["id"].shape == (8,)


# --------------------------------------------------------------------------- bounded memory (subprocess)


def test_shuffle_peak_memory_is_bounded_by_the_buffer(tmp_path):
    """Shuffling a file 20x larger than the buffer: peak RSS grows by about the buffer, not the file."""
    record = 4096
    buffer_records = 500  # ~2 MB of records in the buffer
    n = 20 * buffer_records  # a 40 MB file
    path = os.fspath(tmp_path / "big.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        w.write_all(i.to_bytes(4, "little") + os.urandom(record - 4) for i in range(n))
    script = textwrap.dedent(
        f"""
        import resource, sys
        from tfrecord_lite._data import TFRecordDataset
        ds = TFRecordDataset({path!r}).shuffle({buffer_records}, seed=0)
        next(iter(TFRecordDataset({path!r})))  # warm up imports and buffers
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        seen = 0
        for r in ds:
            seen += 1
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(seen, before, after)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    seen, before, after = (int(x) for x in out.stdout.split())
    assert seen == n
    file_kib = os.path.getsize(path) // 1024
    grew = after - before  # KiB on Linux
    assert grew < file_kib // 4, (grew, file_kib)


def _closing_source(lists: list[list[int]], closed: list[bool]) -> Any:
    try:
        yield from lists
    finally:
        closed.append(True)


@pytest.mark.parametrize("drop_remainder", [False, True])
def test_batches_cut_from_the_files_lists_equal_record_by_record_batching(
    drop_remainder: bool,
) -> None:
    # batch() straight after the source cuts batches from the decoder's lists;
    # any list lengths (empty ones included) give the batches of the record stream.
    from tfrecord_lite._data._ops_batch import _chunks, _rebatched

    rng = np.random.default_rng(7)
    for _ in range(300):
        lengths = rng.integers(0, 9, size=int(rng.integers(0, 8))).tolist()
        lists, k = [], 0
        for n in lengths:
            lists.append(list(range(k, k + n)))
            k += n
        size = int(rng.integers(1, 7))
        want = list(_chunks(iter(range(k)), size, drop_remainder))
        closed: list[bool] = []
        got = list(_rebatched(_closing_source(lists, closed), size, drop_remainder))
        assert got == want, (lengths, size)
        assert closed == [True]


def test_batch_after_the_source_across_blocks_and_files(tmp_path: Path) -> None:
    records = [b"%d" % i * (i % 7) for i in range(500)]
    paths = []
    for k in range(3):
        paths.append(str(tmp_path / f"f{k}.tfrecord"))
        with tfr.TFRecordWriter(paths[-1]) as w:
            w.write_all(records[k * 200 : (k + 1) * 200])
    for n in (1, 7, 64, 1000):
        ds = tfr.TFRecordDataset(paths, buffer_size=64).batch(n)
        assert [r for b in ds for r in b] == records
        assert [len(b) for b in ds] == [len(records[i : i + n]) for i in range(0, 500, n)]
        spec = {"x": tfr.FixedLenFeature([], tfr.int64)}
        examples = [tfr.encode_example({"x": i}) for i in range(500)]
        ex_path = str(tmp_path / f"ex{n}.tfrecord")
        with tfr.TFRecordWriter(ex_path) as w:
            w.write_all(examples)
        got = [b["x"] for b in tfr.TFRecordDataset(ex_path, buffer_size=256).parse(spec).batch(n)]
        assert np.concatenate(got).tolist() == list(range(500))
        assert [len(g) for g in got] == [len(records[i : i + n]) for i in range(0, 500, n)]
