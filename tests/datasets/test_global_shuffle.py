"""``TFRecordDataset.global_shuffle`` and ``shard(n, i, by="range")``: records read by
their number from indexed files (plain, GZIP and ZLIB, seekable or indexed after
writing), each record exactly once per epoch across shards, and resumable."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._data import IteratorStateError, TFRecordDataset

#: (records, compression, how the index is made) of each file: uneven counts, an empty file.
LAYOUT = [
    (37, "", "create"),
    (101, "GZIP", "writer"),
    (5, "ZLIB", "create"),
    (0, "", "create"),
    (64, "GZIP", "create"),
    (23, "ZLIB", "writer"),
]
TOTAL = sum(n for n, _, _ in LAYOUT)
FEATURES = {"id": tfr.FixedLenFeature([], tfr.int64)}


def write(folder: Path, layout: Any = LAYOUT, index: bool = True) -> list[str]:
    """The files of ``layout`` holding examples ``{"id": 0..}`` in sorted-path order."""
    paths, n = [], 0
    for k, (count, comp, how) in enumerate(layout):
        path = os.fspath(folder / f"part-{k:02d}.tfrecord")
        seekable = 4096 if how == "writer" else False
        with tfr.TFRecordWriter(path, comp, seekable=seekable) as w:
            for _ in range(count):
                w.write(tfr.encode_example({"id": n, "pad": os.urandom(n % 300)}))
                n += 1
        if index:
            tfr.create_index(path)
        paths.append(path)
    return paths[::-1]  # given in another order than the canonical one


def ids(items: Any) -> list[int]:
    return [int(np.asarray(tfr.parse_single_example(r, FEATURES)["id"])) for r in items]


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    return write(tmp_path)


def test_global_shuffle_is_a_permutation_of_every_record(files: list[str]) -> None:
    ds = TFRecordDataset(files).global_shuffle(seed=7)
    first, second = ids(ds), ids(ds)
    assert sorted(first) == sorted(second) == list(range(TOTAL))
    assert first != second  # a new order each epoch
    assert ids(TFRecordDataset(files).global_shuffle(seed=7)) == first  # the seed decides
    # any record may come first: the first 20 come from all over the files
    assert max(first[:20]) - min(first[:20]) > TOTAL // 2
    fixed = TFRecordDataset(files).global_shuffle(seed=3, reshuffle_each_iteration=False)
    assert ids(fixed) == ids(fixed) != list(range(TOTAL))
    unseeded = TFRecordDataset(files).global_shuffle()
    assert sorted(ids(unseeded)) == list(range(TOTAL))


def test_global_shuffle_after_parse_and_map(files: list[str]) -> None:
    ds = TFRecordDataset(files).parse(FEATURES).map(lambda e: int(e["id"]))
    got = list(ds.global_shuffle(seed=1))
    assert sorted(got) == list(range(TOTAL)) and got != list(range(TOTAL))
    batched = list(TFRecordDataset(files).global_shuffle(seed=1).parse(FEATURES).batch(16))
    assert [int(x) for b in batched for x in b["id"]] == got
    with pytest.raises(ValueError, match="before batch"):
        TFRecordDataset(files).batch(4).global_shuffle()
    with pytest.raises(ValueError, match="global_shuffle"):
        TFRecordDataset(files).filter(lambda r: True).global_shuffle()


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 300])
def test_range_shards_are_contiguous_and_exact(files: list[str], n: int) -> None:
    parts = [ids(TFRecordDataset(files).shard(n, i, by="range")) for i in range(n)]
    sizes = [len(p) for p in parts]
    assert sizes == [TOTAL // n + (1 if i < TOTAL % n else 0) for i in range(n)]
    assert [x for p in parts for x in p] == list(range(TOTAL))


def test_range_shards_with_global_shuffle_and_workers(files: list[str]) -> None:
    for epoch in range(2):
        seen: list[int] = []
        for rank in range(3):
            ds = TFRecordDataset(files).shard(3, rank, by="range").global_shuffle(seed=5)
            ds.set_epoch(epoch)
            mine = ids(ds)
            lo = rank * (TOTAL // 3) + min(rank, TOTAL % 3)
            assert sorted(mine) == list(range(lo, lo + len(mine)))  # its own range, shuffled
            for worker in range(2):  # DataLoader workers: a shard of the rank's shard
                w = TFRecordDataset(files).shard(3, rank, by="range").shard(2, worker)
                part = ids(w.global_shuffle(seed=5))
                assert set(part) <= set(mine)
                seen.extend(part)
        assert sorted(seen) == list(range(TOTAL))
    # a global shuffle first, then ranks by record (every n-th of the records)
    spread = [ids(TFRecordDataset(files).global_shuffle(seed=2).shard(4, r)) for r in range(4)]
    assert sorted(x for p in spread for x in p) == list(range(TOTAL))


def test_range_shards_follow_shuffled_files(files: list[str]) -> None:
    orders = set()
    for seed in range(8):
        got = ids(TFRecordDataset(files).shard(2, 0, by="range").shuffle_files(seed=seed))
        assert sorted(got) == list(range(TOTAL - TOTAL // 2))
        steps = [b - a for a, b in zip(got, got[1:])]
        assert len(steps) - steps.count(1) <= 1  # the two files' runs, whole
        orders.add(tuple(got))
    assert len(orders) == 2


def test_a_file_without_an_index_is_a_clear_error(tmp_path: Path) -> None:
    paths = write(tmp_path, [(10, "GZIP", "create"), (4, "", "create")], index=False)
    tfr.create_index(paths[0])  # part-01 (plain); part-00 (GZIP) has none
    for ds in (
        TFRecordDataset(paths).global_shuffle(seed=0),
        TFRecordDataset(paths).shard(2, 1, by="range"),
    ):
        with pytest.raises(tfr.RandomAccessError, match="create_index") as err:
            list(ds)
        assert err.value.path == paths[1] and "tfrecord-lite index" in str(err.value)


def test_a_stale_index_is_refused(tmp_path: Path) -> None:
    paths = write(tmp_path, [(30, "GZIP", "create")])
    with tfr.TFRecordWriter(paths[0], "GZIP") as w:  # rewritten: the index is stale
        for k in range(31):
            w.write(b"%d" % k)
    with pytest.raises(tfr.StaleIndexError):
        list(TFRecordDataset(paths).global_shuffle(seed=0))


def test_by_file_does_not_combine_and_by_is_checked(files: list[str]) -> None:
    with pytest.raises(ValueError, match="by='file'"):
        TFRecordDataset(files).global_shuffle().shard(2, 0, by="file")
    with pytest.raises(ValueError, match="'range'"):
        TFRecordDataset(files).shard(2, 0, by="ranges")
    with pytest.raises(ValueError, match="on_error"):
        list(TFRecordDataset(files, on_error="skip").global_shuffle())
    assert "by='range'" in repr(TFRecordDataset(files).shard(2, 1, by="range").global_shuffle())


@pytest.mark.parametrize("chain", ["records", "batch", "parse_batch", "prefetch"])
@pytest.mark.parametrize("k", [0, 1, 40, 150])
def test_resume_mid_epoch(files: list[str], chain: str, k: int) -> None:
    def make() -> Any:
        ds = TFRecordDataset(files).shard(2, 1, by="range").global_shuffle(seed=9)
        if chain == "batch":
            return ds.batch(7)
        if chain == "parse_batch":
            return ds.parse(FEATURES).batch(7)
        if chain == "prefetch":
            return ds.map(lambda r: r).prefetch(3)
        return ds

    def flat(items: list[Any]) -> list[Any]:
        if chain == "parse_batch":
            return [int(x) for b in items for x in b["id"]]
        if chain == "batch":
            return [r for b in items for r in b]
        return items

    ds = make()
    ds.set_epoch(3)
    whole = flat(list(ds))
    ds.set_epoch(3)
    it = iter(ds)
    head = []
    for _ in range(k):
        try:
            head.append(next(it))
        except StopIteration:
            break
    state = json.loads(json.dumps(it.state_dict()))
    again = iter(make())
    again.load_state_dict(state)
    assert flat(head) + flat(list(again)) == whole


def test_a_state_for_other_files_is_refused(tmp_path: Path, files: list[str]) -> None:
    it = iter(TFRecordDataset(files).global_shuffle(seed=1))
    next(it)
    state = it.state_dict()
    other = iter(TFRecordDataset(files[1:]).global_shuffle(seed=1))
    with pytest.raises(IteratorStateError):
        other.load_state_dict(state)
        next(other)
    ranks = iter(TFRecordDataset(files).shard(2, 0, by="range").global_shuffle(seed=1))
    with pytest.raises(IteratorStateError):
        ranks.load_state_dict(state)
        next(ranks)


def test_many_records_over_several_seek_points(tmp_path: Path) -> None:
    layout = [(3000, "GZIP", "writer"), (1500, "", "create"), (2500, "ZLIB", "create")]
    paths = write(tmp_path, layout)
    got = ids(TFRecordDataset(paths).global_shuffle(seed=0))
    assert sorted(got) == list(range(7000))
    assert np.corrcoef(np.arange(7000), got)[0, 1] < 0.1  # no trace of the file order


def test_torch_workers_and_ranks_split_a_global_shuffle(files: list[str]) -> None:
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    import tfrecord_lite.torch as tt

    seen: list[int] = []
    for rank in range(2):
        ds = TFRecordDataset(files).global_shuffle(seed=4).parse(FEATURES)
        it = tt.IterableDataset(ds, rank=rank, world_size=2)
        it.set_epoch(1)
        loader = DataLoader(it, batch_size=None, num_workers=2)
        seen.extend(int(e["id"]) for e in loader)
    assert sorted(seen) == list(range(TOTAL)) and seen != sorted(seen)
