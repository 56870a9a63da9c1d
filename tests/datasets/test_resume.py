"""Resuming a dataset iterator mid-epoch: ``state_dict()`` / ``load_state_dict()``.

For each chain of ops, over plain and GZIP files: iterate k elements, save the
state (through JSON), resume in a new iterator, and the elements handed out before
and after are exactly one uninterrupted epoch. Bad states are refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_lite as tfr
from tfrecord_lite._data import Dataset, IteratorStateError, TFRecordDataset
from tfrecord_lite.example_pb2 import Example

FEATURES = {"id": tfr.FixedLenFeature([], tfr.int64), "f": tfr.FixedLenFeature([], tfr.int64)}


def _example(f: int, r: int) -> bytes:
    e = Example()
    e.features.feature["id"].int64_list.value.append(r)
    e.features.feature["f"].int64_list.value.append(f)
    return e.SerializeToString()


@pytest.fixture(params=["", "GZIP"], ids=["plain", "gzip"])
def files(request: Any, tmp_path: Any) -> list[str]:
    paths = []
    for f, n in enumerate([37, 5, 61, 0, 23]):
        path = os.fspath(tmp_path / f"part-{f}.tfrecord")
        with tfr.TFRecordWriter(path, request.param or None) as w:
            w.write_all(_example(f, r) for r in range(n))
        paths.append(path)
    return paths


def _canon(x: Any) -> Any:
    """An element as plain comparable Python."""
    if isinstance(x, dict):
        return {k: _canon(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return [_canon(v) for v in x]
    if isinstance(x, np.ndarray):
        return ("arr", x.dtype.str, x.shape, x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    return x


CHAINS: dict[str, Callable[[list[str]], Dataset]] = {
    "records": lambda p: TFRecordDataset(p),
    "shuffle_files": lambda p: TFRecordDataset(p).shuffle_files(seed=3),
    "shuffle": lambda p: TFRecordDataset(p).shuffle(17, seed=1),
    "parse": lambda p: TFRecordDataset(p).parse(FEATURES),
    "parse_batch": lambda p: TFRecordDataset(p).parse(FEATURES).batch(8),
    "batch_parse": lambda p: TFRecordDataset(p).batch(6).parse(FEATURES),
    "raw_batch": lambda p: TFRecordDataset(p).batch(7, drop_remainder=True),
    "shuffle_parse_batch": lambda p: (
        TFRecordDataset(p).shuffle_files(seed=2).shuffle(29, seed=5).parse(FEATURES).batch(5)
    ),
    "interleave_files": lambda p: TFRecordDataset(p, num_parallel_reads=3).parse(FEATURES),
    "record_shard": lambda p: TFRecordDataset(p).shard(7, 3, by="record").parse(FEATURES),
    "file_shard": lambda p: TFRecordDataset(p).shard(2, 1),
    "map_filter_enumerate": lambda p: (
        TFRecordDataset(p)
        .parse(FEATURES)
        .map(lambda d: d["id"] * 10 + d["f"])
        .filter(lambda v: v % 3 != 0)
        .enumerate()
    ),
    "parallel_map": lambda p: TFRecordDataset(p).map(len, num_parallel_calls=3),
    "prefetch": lambda p: TFRecordDataset(p).parse(FEATURES).prefetch(4),
    "shuffle_prefetch": lambda p: TFRecordDataset(p).shuffle(11, seed=0).prefetch(3).batch(4),
    "take_skip_repeat": lambda p: TFRecordDataset(p).skip(9).take(80).repeat(2),
    "element_shard": lambda p: TFRecordDataset(p).shard(3, 2),
    "padded_unbatch": lambda p: (
        TFRecordDataset(p)
        .parse(FEATURES)
        .map(lambda d: np.arange(int(d["id"]) % 4))
        .padded_batch(3)
        .unbatch()
    ),
    "ignore_errors": lambda p: (
        TFRecordDataset(p).map(lambda r: r if len(r) % 5 else 1 / 0).ignore_errors().batch(3)
    ),
    "dataset_interleave": lambda p: (
        Dataset.from_tensor_slices(p)
        .shuffle(5, seed=4)
        .interleave(lambda f: TFRecordDataset(f).parse(FEATURES), cycle_length=2, block_length=3)
    ),
    "interleave_threads": lambda p: Dataset.from_tensor_slices(p).interleave(
        lambda f: TFRecordDataset(f), cycle_length=3, num_parallel_calls=2
    ),
    "cache": lambda p: TFRecordDataset(p).shuffle(13, seed=9).cache(),
    "parse_threads": lambda p: TFRecordDataset(p).parse(FEATURES, num_parallel_calls=2),
    "parse_batch_threads": lambda p: (
        TFRecordDataset(p).shuffle_files(seed=1).parse(FEATURES, num_parallel_calls=2).batch(4)
    ),
    "interleave_block": lambda p: TFRecordDataset(p).interleave(2, block_length=4).batch(5),
    "skip_errors_source": lambda p: TFRecordDataset(p, on_error="skip").take(70),
}


def _resumed_epoch(ds: Dataset, k: int) -> tuple[list[Any], list[Any]]:
    """The first ``k`` elements of an epoch, and the rest read by a resumed iterator."""
    it = iter(ds)
    head = [_canon(x) for _, x in zip(range(k), it)]
    state = json.loads(json.dumps(it.state_dict()))
    it.close()
    again = iter(ds)
    again.load_state_dict(state)
    return head, [_canon(x) for x in again]


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_resumed_epoch_is_the_epoch(chain: str, files: list[str]) -> None:
    make = CHAINS[chain]
    whole = [_canon(x) for x in make(files).iter_epoch(0)]
    assert len(whole) > 3
    for k in sorted({0, 1, 2, len(whole) // 3, len(whole) // 2, len(whole) - 1, len(whole)}):
        ds = make(files)
        head, rest = _resumed_epoch(ds, k)
        assert head + rest == whole, (chain, k)


def test_cache_replay_resumes(files: list[str]) -> None:
    ds = TFRecordDataset(files).shuffle(13, seed=9).cache()
    first = list(ds)
    head, rest = _resumed_epoch(ds, 40)
    assert head + rest == [_canon(x) for x in first]


def test_resume_twice_and_state_after_load(files: list[str]) -> None:
    ds = TFRecordDataset(files).shuffle(19, seed=2).parse(FEATURES).batch(4)
    whole = [_canon(x) for x in ds.iter_epoch(0)]
    it = iter(ds)
    out = [_canon(next(it)) for _ in range(5)]
    state = it.state_dict()
    it2 = iter(ds)
    it2.load_state_dict(state)
    assert it2.state_dict() == state  # nothing read yet: the same place
    out += [_canon(next(it2)) for _ in range(7)]
    it3 = iter(ds)
    it3.load_state_dict(json.loads(json.dumps(it2.state_dict())))
    out += [_canon(x) for x in it3]
    assert out == whole


def test_next_for_after_load_is_the_next_epoch(files: list[str]) -> None:
    ds = TFRecordDataset(files).shuffle(50, seed=1)
    it = ds.iter_epoch(4)
    next(it)
    state = it.state_dict()
    fresh = TFRecordDataset(files).shuffle(50, seed=1)
    resumed = iter(fresh)
    resumed.load_state_dict(state)
    list(resumed)
    assert list(iter(fresh)) == list(TFRecordDataset(files).shuffle(50, seed=1).iter_epoch(5))


def test_resume_in_another_process(files: list[str], tmp_path: Any) -> None:
    ds = TFRecordDataset(files).shuffle_files(seed=1).shuffle(23, seed=7).parse(FEATURES).batch(3)
    whole = [_canon(x) for x in ds.iter_epoch(0)]
    it = iter(ds)
    head = [_canon(next(it)) for _ in range(11)]
    state_path = tmp_path / "state.json"
    state_path.write_text(json.dumps(it.state_dict()))
    script = f"""
import json, sys
import tfrecord_lite as tfr
from tfrecord_lite._data import TFRecordDataset
features = {{"id": tfr.FixedLenFeature([], tfr.int64), "f": tfr.FixedLenFeature([], tfr.int64)}}
ds = TFRecordDataset({files!r}).shuffle_files(seed=1).shuffle(23, seed=7).parse(features).batch(3)
it = iter(ds)
it.load_state_dict(json.load(open({os.fspath(state_path)!r})))
print(json.dumps([{{k: v.tolist() for k, v in b.items()}} for b in it]))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    rest = json.loads(out)
    assert len(head) + len(rest) == len(whole)
    for got, want in zip(rest, whole[len(head) :]):
        assert got == {k: v[3] for k, v in want.items()}


def test_plain_file_resumes_at_its_byte_offset(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "a.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        w.write_all(b"x" * r for r in range(100))
    it = iter(TFRecordDataset(path))
    for _ in range(30):
        next(it)
    state = it.state_dict()["state"]
    assert state["index"] == 30
    assert state["seek"] == [30, sum(range(30)) + 16 * 30]


def _state(files: list[str]) -> dict[str, Any]:
    it = iter(TFRecordDataset(files).shuffle(7, seed=0).batch(2))
    for _ in range(9):
        next(it)
    return it.state_dict()


def test_tampered_state_is_refused(files: list[str]) -> None:
    state = _state(files)
    state["state"]["up"]["up"]["index"] = 3
    with pytest.raises(IteratorStateError, match="digest"):
        iter(TFRecordDataset(files).shuffle(7, seed=0).batch(2)).load_state_dict(state)


def test_state_of_another_pipeline_is_refused(files: list[str]) -> None:
    state = _state(files)
    with pytest.raises(IteratorStateError, match="pipeline"):
        iter(TFRecordDataset(files).shuffle(7, seed=0).batch(3)).load_state_dict(state)
    with pytest.raises(IteratorStateError, match="seed"):
        iter(TFRecordDataset(files).shuffle(7, seed=1).batch(2)).load_state_dict(state)


def test_state_over_other_files_is_refused(files: list[str]) -> None:
    state = _state(files)
    it = iter(TFRecordDataset(files[:-1]).shuffle(7, seed=0).batch(2))
    with pytest.raises(IteratorStateError, match="files"):
        it.load_state_dict(state)
        next(it)


def test_changed_file_is_refused(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "a.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        w.write_all(b"r%d" % r for r in range(20))
    it = iter(TFRecordDataset(path))
    next(it)
    state = it.state_dict()
    with tfr.TFRecordWriter(path) as w:
        w.write_all(b"other %d" % r for r in range(20))
    again = iter(TFRecordDataset(path))
    with pytest.raises(IteratorStateError, match="changed"):
        again.load_state_dict(state)
        next(again)


def test_not_a_state_is_refused(files: list[str]) -> None:
    it = iter(TFRecordDataset(files))
    for bad in ({}, {"format": "x"}, [1, 2]):
        with pytest.raises(IteratorStateError):
            it.load_state_dict(bad)  # type: ignore[arg-type]
    state = it.state_dict()
    state["version"] = 99
    with pytest.raises(IteratorStateError, match="version"):
        it.load_state_dict(state)
    assert isinstance(IteratorStateError("x"), (tfr.TFRecordError, ValueError))


def test_state_holds_at_most_the_shuffle_buffer(files: list[str]) -> None:
    it = iter(TFRecordDataset(files).shuffle(9, seed=0).parse(FEATURES))
    for _ in range(20):
        next(it)
    state = it.state_dict()["state"]
    shuffle = state["up"]
    assert shuffle["kind"] == "shuffle(9)"
    assert "held" not in state  # the parser's read-ahead is not saved
    assert len(shuffle["held"]) == 9
    assert shuffle["up"]["kind"] == "files"


def test_read_ahead_rolls_back_into_the_files(tmp_path: Any) -> None:
    # A parser reads ahead; its records are found again in the files, not saved.
    path = os.fspath(tmp_path / "a.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        w.write_all(_example(0, r) for r in range(5000))
    ds = TFRecordDataset(path).parse(FEATURES).batch(16)
    it = iter(ds)
    for _ in range(3):
        next(it)
    state = it.state_dict()
    assert "held" not in json.dumps(state)
    assert state["state"]["up"]["up"]["index"] == 48
    rest = [_canon(x) for x in _load(ds, state)]
    assert [_canon(x) for x in ds.iter_epoch(0)][3:] == rest


def _load(ds: Dataset, state: dict[str, Any]) -> Any:
    it = iter(ds)
    it.load_state_dict(state)
    return it


def _big_example(r: int) -> bytes:
    e = Example()
    e.features.feature["b"].bytes_list.value.append(bytes([r % 251]) * (20_000 + r))
    return e.SerializeToString()


@pytest.mark.parametrize("indexed", [False, True])
def test_big_records_and_indexed_shards_resume(tmp_path: Any, indexed: bool) -> None:
    # Big records are read ahead in a thread; shards of indexed files read by index.
    paths = []
    for f in range(2):
        path = os.fspath(tmp_path / f"big-{f}.tfrecord")
        with tfr.TFRecordWriter(path) as w:
            w.write_all(_big_example(r) for r in range(90))
        if indexed:
            tfr.create_index(path)
        paths.append(path)
    big = {"b": tfr.FixedLenFeature([], tfr.string)}
    for make in (
        lambda: TFRecordDataset(paths).batch(4).parse(big),
        lambda: TFRecordDataset(paths).shard(3, 1, by="record").batch(5),
    ):
        whole = [_canon(x) for x in make().iter_epoch(0)]
        for k in (1, 7, len(whole) - 2):
            head, rest = _resumed_epoch(make(), k)
            assert head + rest == whole


def test_damaged_file_skipping_resumes(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "d.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        w.write_all(b"record %03d" % r for r in range(60))
    with open(path, "r+b") as f:
        f.seek(26 * 10 + 14)  # a data byte of record 10
        byte = f.read(1)[0]
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte ^ 0xFF]))
    ds = TFRecordDataset(path, on_error="skip", on_skip=lambda rep: None)
    whole = list(ds.iter_epoch(0))
    assert len(whole) == 59
    for k in (5, 10, 30):
        head, rest = _resumed_epoch(ds, k)
        assert head + rest == whole


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stops=st.lists(st.integers(0, 60), min_size=1, max_size=3), gzip=st.booleans())
def test_resumed_at_any_points_in_a_long_chain(tmp_path: Any, stops: list[int], gzip: bool) -> None:
    # Stop and resume (through JSON) several times along one epoch.
    paths = []
    for f, n in enumerate([40, 3, 77, 25]):
        path = os.fspath(tmp_path / f"h-{f}-{int(gzip)}.tfrecord")
        if not os.path.exists(path):
            with tfr.TFRecordWriter(path, "GZIP" if gzip else None) as w:
                w.write_all(_example(f, r) for r in range(n))
        paths.append(path)

    def make() -> Dataset:
        return (
            TFRecordDataset(paths)
            .shuffle_files(seed=4)
            .shuffle(21, seed=8)
            .parse(FEATURES)
            .map(lambda d: {"v": d["id"] * 100 + d["f"]})
            .prefetch(2)
            .batch(3)
            .enumerate()
        )

    whole = [_canon(x) for x in make().iter_epoch(0)]
    got: list[Any] = []
    it = iter(make())
    for k in stops:
        got += [_canon(x) for _, x in zip(range(k), it)]
        state = json.loads(json.dumps(it.state_dict()))
        it.close()
        it = iter(make())
        it.load_state_dict(state)
    got += [_canon(x) for x in it]
    assert got == whole


def test_interleaved_files_resume_at_their_cursors(tmp_path: Any) -> None:
    # Interleaved files save a cursor per open file, not a count from the epoch's start.
    paths = []
    for f in range(4):
        path = os.fspath(tmp_path / f"i-{f}.tfrecord")
        with tfr.TFRecordWriter(path) as w:
            w.write_all(b"f%d-r%05d" % (f, r) for r in range(3000 + 500 * f))
        paths.append(path)
    ds = TFRecordDataset(paths, num_parallel_reads=2, buffer_size=4096 * 16)
    it = iter(ds)
    head = [next(it) for _ in range(5001)]
    state = it.state_dict()
    files = state["state"]
    assert [s["entry"] for s in files["slots"]] == [0, 1]
    assert files["next"] == 2
    assert all(s["seek"] is not None and s["index"] > 0 for s in files["slots"])
    assert files["skip"] < 8192  # at most one merged list is read again
    rest = list(_load(ds, json.loads(json.dumps(state))))
    assert head + rest == list(ds.iter_epoch(0))


def test_an_offset_that_is_not_a_record_start_is_refused(tmp_path: Any) -> None:
    from tfrecord_lite._data._state import digest

    path = os.fspath(tmp_path / "a.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        w.write_all(b"record %d" % r for r in range(50))
    it = iter(TFRecordDataset(path))
    for _ in range(20):
        next(it)
    state = it.state_dict()
    del state["digest"]
    state["state"]["seek"][1] += 3  # edited, its digest made again: still refused
    state["digest"] = digest(state)
    again = iter(TFRecordDataset(path))
    again.load_state_dict(state)
    with pytest.raises(IteratorStateError, match="not where record 20 starts"):
        next(again)


def _leaves(x: Any, path: tuple[Any, ...] = ()) -> Any:
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(x, list):
        for j, v in enumerate(x):
            yield from _leaves(v, (*path, j))
    if path:
        yield path


def test_edited_states_raise_only_the_state_error(files: list[str]) -> None:
    # Any field of a state set to a value of another type or range (its digest made
    # again) resumes or raises IteratorStateError: never another exception.
    import random

    from tfrecord_lite._data._state import digest

    rnd = random.Random(5)
    values = [None, -1, 0, 1, 7, 10**9, "x", [], {}, True, 2.5, [0, 0], {"kind": "files"}]
    chains = [CHAINS["shuffle_parse_batch"], CHAINS["interleave_threads"], CHAINS["prefetch"]]
    for trial in range(150):
        make = chains[trial % len(chains)]
        it = iter(make(files))
        for _ in range(rnd.randint(0, 30)):
            next(it, None)
        state = it.state_dict()
        it.close()
        target: Any = state["state"]
        *parents, last = rnd.choice(list(_leaves(target)))
        for k in parents:
            target = target[k]
        target[last] = rnd.choice(values)
        del state["digest"]
        state["digest"] = digest(state)
        try:
            again = iter(make(files))
            again.load_state_dict(state)
            for _ in range(200):
                if next(again, None) is None:
                    break
        except IteratorStateError:
            pass


@pytest.mark.parametrize("batched", [False, True])
def test_sequence_examples_resume(tmp_path: Any, batched: bool) -> None:
    from tfrecord_lite.example_pb2 import SequenceExample

    path = os.fspath(tmp_path / "seq.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        for r in range(45):
            s = SequenceExample()
            s.context.feature["id"].int64_list.value.append(r)
            frames = s.feature_lists.feature_list["v"].feature
            for j in range(r % 4 + 1):
                frames.add().int64_list.value.append(r * 10 + j)
            w.write(s.SerializeToString())
    context = {"id": tfr.FixedLenFeature([], tfr.int64)}
    lists = {"v": tfr.FixedLenSequenceFeature([], tfr.int64)}

    def make() -> Dataset:
        ds = TFRecordDataset(path).shuffle(6, seed=2).parse_sequence(context, lists)
        return ds.batch(4) if batched else ds

    whole = [_canon(x) for x in make().iter_epoch(0)]
    for k in (1, 5, len(whole) - 1):
        head, rest = _resumed_epoch(make(), k)
        assert head + rest == whole


def test_no_state_after_the_epoch_failed(files: list[str]) -> None:
    def boom(r: bytes) -> bytes:
        if r == first[5]:
            raise KeyError("bad record")
        return r

    first = list(TFRecordDataset(files).iter_epoch(0))
    it = iter(TFRecordDataset(files).map(boom))
    state = None
    with pytest.raises(KeyError):
        for _ in it:
            state = it.state_dict()
    with pytest.raises(ValueError, match="ended with an error"):
        it.state_dict()
    assert state is not None  # the last one saved resumes at the failing record
    again = iter(TFRecordDataset(files).map(boom))
    again.load_state_dict(state)
    with pytest.raises(KeyError):
        next(again)


def test_cache_file_replay_resumes_in_a_new_pipeline(files: list[str], tmp_path: Any) -> None:
    cache = os.fspath(tmp_path / "cache.bin")

    def make() -> Dataset:
        return TFRecordDataset(files).shuffle(11, seed=4).parse(FEATURES).cache(cache)

    first = [_canon(x) for x in make()]  # writes the cache file
    it = iter(make())
    head = [_canon(next(it)) for _ in range(30)]
    state = json.loads(json.dumps(it.state_dict()))
    assert state["state"]["mode"] == "file"
    assert head + [_canon(x) for x in _load(make(), state)] == first
    os.remove(cache)
    with pytest.raises(IteratorStateError, match="gone"):
        list(_load(make(), state))


def test_range_and_list_files_pipelines_resume(files: list[str]) -> None:
    for make in (
        lambda: Dataset.range(100).shuffle(30, seed=1).map(lambda v: v * 2).batch(7),
        lambda: Dataset.list_files(files, seed=3).interleave(
            lambda f: TFRecordDataset(f).parse(FEATURES), cycle_length=2
        ),
    ):
        whole = [_canon(x) for x in make().iter_epoch(0)]
        for k in (1, len(whole) // 2, len(whole) - 1):
            head, rest = _resumed_epoch(make(), k)
            assert head + rest == whole
