"""tfr.data: the tf.data surface a ported script calls (Dataset, list_files, interleave, ...)."""

from __future__ import annotations

import os
import pathlib
import threading

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._examples._values import RaggedValue

Dataset = tfr.data.Dataset


def write_files(directory: pathlib.Path, counts: list[int]) -> list[str]:
    paths = []
    for k, n in enumerate(counts):
        path = os.fspath(directory / f"part-{k}.tfrecord")
        with tfr.TFRecordWriter(path) as w:
            for r in range(n):
                w.write(b"f%d-r%d" % (k, r))
        paths.append(path)
    return paths


def tf_interleave_order(lengths: list[int], cycle: int, block: int) -> list[bytes]:
    """tf.data's documented interleave order, written out from its definition."""
    pending = list(range(len(lengths)))
    slots: list[list[int] | None] = [None] * cycle  # [file, next record]
    out: list[bytes] = []
    while True:
        progressed = False
        for s in range(cycle):
            if slots[s] is None and pending:
                slots[s] = [pending.pop(0), 0]
            slot = slots[s]
            if slot is None:
                continue
            progressed = True
            f, r = slot
            taken = 0
            while taken < block and r < lengths[f]:
                out.append(b"f%d-r%d" % (f, r))
                r += 1
                taken += 1
            slot[1] = r
            if taken < block:
                slots[s] = None
        if not progressed and not pending:
            return out


def test_tf2_guide_parallel_read_ports_by_prefix(tmp_path):
    """list_files(...).interleave(lambda x: TFRecordDataset(x), ..., AUTOTUNE): TF's order."""
    lengths = [3, 1, 4, 2, 5]
    write_files(tmp_path, lengths)
    pattern = os.fspath(tmp_path / "part-*.tfrecord")
    for parallel in (None, tfr.data.AUTOTUNE, 2):
        for cycle, block in ((2, 1), (3, 2), (1, 1), (8, 3)):
            ds = Dataset.list_files(pattern, shuffle=False).interleave(
                lambda x: tfr.data.TFRecordDataset(x),
                cycle_length=cycle,
                block_length=block,
                num_parallel_calls=parallel,
                deterministic=True,
            )
            assert list(ds) == tf_interleave_order(lengths, cycle, block), (cycle, block)
    ds = (
        Dataset.list_files(pattern, seed=1)
        .interleave(tfr.data.TFRecordDataset, cycle_length=2, num_parallel_calls=tfr.AUTOTUNE)
        .batch(4)
        .prefetch(tfr.data.AUTOTUNE)
    )
    got = [r for batch in ds for r in batch]
    assert sorted(got) == sorted(tf_interleave_order(lengths, 1, 1))


def test_file_level_interleave_keeps_working(tmp_path):
    paths = write_files(tmp_path, [3, 1, 4])
    want = tf_interleave_order([3, 1, 4], 2, 2)
    assert list(tfr.TFRecordDataset(paths).interleave(2, 2)) == want
    assert list(tfr.TFRecordDataset(paths).interleave(2, block_length=2)) == want
    assert list(tfr.TFRecordDataset(paths).interleave(cycle_length=2, block_length=2)) == want
    assert list(tfr.TFRecordDataset(paths, num_parallel_reads=2)) == tf_interleave_order(
        [3, 1, 4], 2, 1
    )
    with pytest.raises(TypeError, match="must return a Dataset"):
        list(tfr.TFRecordDataset(paths).interleave(lambda r: [r]))


def test_interleave_stops_its_read_ahead_threads(tmp_path):
    paths = write_files(tmp_path, [50, 50, 50])
    before = threading.active_count()
    ds = Dataset.from_tensor_slices(paths).interleave(
        tfr.TFRecordDataset, cycle_length=3, num_parallel_calls=3
    )
    it = iter(ds)
    next(it)
    it.close()
    for _ in range(100):
        if threading.active_count() <= before:
            break
        threading.Event().wait(0.05)
    assert threading.active_count() <= before


def test_list_files(tmp_path):
    paths = write_files(tmp_path, [1, 1, 1, 1])
    pattern = os.fspath(tmp_path / "part-*.tfrecord")
    assert list(Dataset.list_files(pattern, shuffle=False)) == sorted(paths)
    # shuffle defaults to True (as tf.data): a permutation, a new one each epoch.
    ds = Dataset.list_files(pattern, seed=3)
    epochs = [list(ds) for _ in range(6)]
    assert all(sorted(e) == sorted(paths) for e in epochs)
    assert len({tuple(e) for e in epochs}) > 1
    assert list(Dataset.list_files(pattern, seed=3)) == epochs[0]  # reproducible
    assert Dataset.list_files(pattern).cardinality() == 4
    with pytest.raises(FileNotFoundError, match="No files matched pattern"):
        Dataset.list_files(os.fspath(tmp_path / "nothing-*"))
    both = Dataset.list_files([pattern, pattern], shuffle=False)
    assert list(both) == sorted(paths + paths)


def test_from_tensor_slices():
    assert list(Dataset.from_tensor_slices(["a.tfrecord", "b.tfrecord"])) == [
        "a.tfrecord",
        "b.tfrecord",
    ]
    # bytes stay whole (np.asarray would drop a trailing NUL)
    assert list(Dataset.from_tensor_slices([b"x\x00", b"y"])) == [b"x\x00", b"y"]
    cols = Dataset.from_tensor_slices({"x": np.arange(6).reshape(3, 2), "y": [1.5, 2.5, 3.5]})
    got = list(cols)
    assert [e["x"].tolist() for e in got] == [[0, 1], [2, 3], [4, 5]]
    assert [float(e["y"]) for e in got] == [1.5, 2.5, 3.5]
    pairs = list(Dataset.from_tensor_slices((np.arange(2), np.array([5, 6]))))
    assert [(int(a), int(b)) for a, b in pairs] == [(0, 5), (1, 6)]
    with pytest.raises(ValueError, match="same first dimension"):
        Dataset.from_tensor_slices({"a": np.arange(2), "b": np.arange(3)})
    with pytest.raises(ValueError, match="first dimension"):
        Dataset.from_tensor_slices(np.int64(3))
    with pytest.raises(TypeError, match="from_tensor_slices"):
        Dataset()


def test_map_and_filter_unpack_tuples_like_tf_data():
    ds = Dataset.from_tensor_slices((np.arange(4), np.arange(4) * 10))
    assert [int(v) for v in ds.map(lambda a, b: a + b)] == [0, 11, 22, 33]
    assert [int(a) for a, _ in ds.filter(lambda a, b: b > 15)] == [2, 3]


def test_enumerate():
    got = list(Dataset.from_tensor_slices(["a", "b"]).enumerate(start=5))
    assert got == [(5, "a"), (6, "b")]
    assert all(type(i) is np.int64 for i, _ in got)
    assert [int(i) for i, _ in Dataset.range(3).repeat(2).enumerate()] == list(range(6))


def test_unbatch_inverts_batch(tmp_path):
    ds = Dataset.range(7).map(lambda x: {"x": x, "sq": np.array([x, x * x])})
    back = list(ds.batch(3).unbatch())
    assert [int(e["x"]) for e in back] == list(range(7))
    assert [e["sq"].tolist() for e in back] == [[i, i * i] for i in range(7)]
    paths = write_files(tmp_path, [5])
    assert list(tfr.TFRecordDataset(paths).batch(2).unbatch()) == list(tfr.TFRecordDataset(paths))
    ragged = Dataset.range(4).map(lambda n: np.arange(n)).batch(4).unbatch()
    assert [r.tolist() for r in ragged] == [[], [0], [0, 1], [0, 1, 2]]
    with pytest.raises(ValueError, match="scalar"):
        list(Dataset.range(3).unbatch())


def test_padded_batch():
    ds = Dataset.range(1, 5).map(lambda n: np.arange(n) + 1)
    got = list(ds.padded_batch(2))
    assert [b.tolist() for b in got] == [[[1, 0], [1, 2]], [[1, 2, 3, 0], [1, 2, 3, 4]]]
    fixed = list(ds.padded_batch(3, padded_shapes=[5], padding_values=-1, drop_remainder=True))
    assert [b.tolist() for b in fixed] == [
        [[1, -1, -1, -1, -1], [1, 2, -1, -1, -1], [1, 2, 3, -1, -1]]
    ]
    with pytest.raises(ValueError, match="larger than its padded shape"):
        list(ds.padded_batch(4, padded_shapes=[2]))
    pairs = Dataset.range(1, 4).map(lambda n: {"ids": np.arange(n), "label": n})
    b = next(iter(pairs.padded_batch(3, padded_shapes={"ids": [None], "label": []})))
    assert b["ids"].tolist() == [[0, 0, 0], [0, 1, 0], [0, 1, 2]]
    assert b["label"].tolist() == [1, 2, 3]
    assert ds.padded_batch(3).cardinality() == 2


def test_cache_replays_the_first_complete_epoch():
    calls = []

    def record(x):
        calls.append(int(x))
        return x

    ds = Dataset.range(5).map(record).shuffle(5, seed=0).cache()
    first = [int(x) for x in ds]
    assert [int(x) for x in ds] == first and len(calls) == 5
    partial = Dataset.range(5).map(record).cache()
    calls.clear()
    assert [int(x) for x in partial.take(2)] == [0, 1]
    assert [int(x) for x in partial] == list(range(5))
    assert len(calls) == 2 + 5  # the interrupted epoch cached nothing


def test_cardinality_and_len(tmp_path):
    assert tfr.data.INFINITE_CARDINALITY == -1 and tfr.data.UNKNOWN_CARDINALITY == -2
    assert tfr.data.experimental.AUTOTUNE == tfr.data.AUTOTUNE
    ds = Dataset.range(10)
    assert len(ds) == 10
    assert ds.batch(3).cardinality() == 4 and ds.batch(3, drop_remainder=True).cardinality() == 3
    assert ds.take(4).cardinality() == 4 and ds.skip(4).cardinality() == 6
    assert ds.repeat(3).cardinality() == 30
    assert ds.repeat().cardinality() == tfr.data.INFINITE_CARDINALITY
    assert ds.repeat().take(7).cardinality() == 7
    assert ds.filter(bool).cardinality() == tfr.data.UNKNOWN_CARDINALITY
    assert ds.shard(3, 1).cardinality() == 3 and len(list(ds.shard(3, 1))) == 3
    assert ds.map(lambda x: x).enumerate().prefetch(1).shuffle(2).cardinality() == 10
    assert tfr.data.experimental.cardinality(ds.unbatch()) == tfr.data.UNKNOWN_CARDINALITY
    records = tfr.data.TFRecordDataset(write_files(tmp_path, [3]))
    assert records.cardinality() == tfr.data.UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match="unknown"):
        len(records)
    with pytest.raises(TypeError, match="infinite"):
        len(ds.repeat())
    assert bool(records)


def test_name_is_accepted_where_tf_data_takes_it(tmp_path):
    paths = write_files(tmp_path, [4])
    ds = (
        tfr.data.TFRecordDataset(paths, None, None, None, name="read")
        .map(lambda r: r, num_parallel_calls=2, deterministic=True, name="m")
        .filter(lambda r: True, name="f")
        .shuffle(4, seed=0, name="s")
        .repeat(1, name="r")
        .skip(0, name="k")
        .take(4, name="t")
        .shard(1, 0, name="sh")
        .batch(2, False, tfr.data.AUTOTUNE, True, name="b")
        .prefetch(1, name="p")
    )
    assert sorted(r for b in ds for r in b) == sorted(list(tfr.TFRecordDataset(paths)))


def test_tiny_buffer_size_is_raised_to_a_sane_read_block(tmp_path):
    """The MNIST tutorial's buffer_size=100 must not mean 100-byte reads."""
    paths = write_files(tmp_path, [3])
    default = tfr.data.TFRecordDataset(paths)._source.block_size()
    assert default == 1 << 20
    for size in (0, 1, 100, 65535, -1):
        ds = tfr.data.TFRecordDataset(paths, buffer_size=size)
        assert ds._source.block_size() == default
        assert list(ds) == list(tfr.TFRecordDataset(paths))
    assert tfr.TFRecordDataset(paths, buffer_size=4 << 20)._source.block_size() == 4 << 20
    with pytest.raises(ValueError):
        tfr.TFRecordDataset(paths, buffer_size=-2)


# --------------------------------------------------------------------------- ragged batches


def test_ragged_batch_is_an_error_naming_the_key_and_shapes():
    images = [np.zeros((4, 4, 3), np.uint8)] * 2 + [np.zeros((4, 4), np.uint8)]
    ds = (
        Dataset.from_tensor_slices({"label": [0, 1, 2]})
        .enumerate()
        .map(lambda i, e: {"image": images[int(i)], "label": e["label"]})
    )
    with pytest.raises(ValueError, match=r"key \['image'\].*\(4, 4, 3\).*\(4, 4\)"):
        list(ds.batch(3))
    listed = next(iter(ds.batch(3, ragged="list")))
    assert isinstance(listed["image"], list) and listed["label"].tolist() == [0, 1, 2]
    # rows of different lengths stay a RaggedValue (as parse_example's), or raise if asked
    rows = Dataset.range(1, 4).map(lambda n: np.arange(n))
    batch = next(iter(rows.batch(3)))
    assert isinstance(batch, RaggedValue) and batch.to_list() == [[0], [0, 1], [0, 1, 2]]
    with pytest.raises(ValueError, match="shape"):
        list(rows.batch(3, ragged="error"))
    with pytest.raises(ValueError, match="ragged must be"):
        rows.batch(3, ragged="pad")


def test_collate_raises_for_mismatched_shapes():
    from tfrecord_lite._data import collate

    with pytest.raises(ValueError, match=r"\[0\]"):
        collate([(np.zeros((2, 3)), 1), (np.zeros((3, 2)), 2)])
    assert isinstance(collate([np.zeros((2, 3)), np.zeros((3, 2))], ragged="list"), list)


def test_cache_is_per_input_and_pickles(tmp_path):
    import pickle

    paths = write_files(tmp_path, [4, 4])
    cached = tfr.TFRecordDataset(paths).cache()
    everything = list(cached)
    assert len(everything) == 8
    half = cached.shard(2, 0)  # a new input: not the whole data set's cache
    assert list(half) == list(tfr.TFRecordDataset(paths).shard(2, 0))
    copy = pickle.loads(pickle.dumps(cached))
    assert list(copy) == everything


def test_cache_to_a_file_is_reused_by_later_pipelines(tmp_path):
    from tfrecord_lite._examples._values import RaggedValue, SparseValue

    calls = []

    def make(i):
        calls.append(int(i))
        return {
            "x": np.arange(int(i), dtype=np.float32),
            "n": int(i),
            "f": 0.1 * int(i),
            "s": f"s{int(i)}",
            "b": b"b\x00",
            "t": (np.int64(i), np.array([b"a", b"bc"], dtype=object)),
            "r": RaggedValue(np.arange(3), np.array([0, 1, 3])),
            "sp": SparseValue(np.array([[0]]), np.array([7]), np.array([2])),
            "none": None,
        }

    cache = os.fspath(tmp_path / "cache")

    def pipeline():
        return Dataset.range(4).map(make).cache(cache)

    first = pipeline()
    it = iter(first)
    next(it)
    it.close()
    assert not os.path.exists(cache)  # an interrupted epoch leaves no cache file
    a = list(first)
    assert os.path.exists(cache) and len(calls) == 1 + 4
    b = list(pipeline())  # a new pipeline (a later run) reads the file
    assert len(calls) == 5
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        assert x["x"].dtype == y["x"].dtype and x["x"].tolist() == y["x"].tolist()
        assert (x["n"], x["f"], x["s"], x["b"], x["none"]) == (y["n"], y["f"], y["s"], y["b"], None)
        assert type(y["t"][0]) is np.int64 and y["t"][1].tolist() == [b"a", b"bc"]
        assert y["r"].to_list() == [[0], [1, 2]] and y["sp"].values.tolist() == [7]
    with open(cache, "r+b") as f:
        f.seek(40)
        f.write(b"\xff")
    with pytest.raises(tfr.DataLossError):
        list(pipeline())
    other = os.fspath(tmp_path / "plain.tfrecord")
    write_files(tmp_path, [1])
    with pytest.raises(ValueError, match="not a tfrecord_lite cache file"):
        list(Dataset.range(2).cache(os.fspath(tmp_path / "part-0.tfrecord")))
    with pytest.raises(TypeError, match="cannot store"):
        list(Dataset.range(2).map(lambda i: object()).cache(other))
    assert not os.path.exists(other)
