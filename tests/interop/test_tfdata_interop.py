"""Real TensorFlow as the oracle for the tf.data surface (``make interop``).

``tfr.data`` pipelines and the same pipelines written with ``tf.data`` give the same
elements in the same order: interleave of file datasets (every cycle and block
length, with and without ``num_parallel_calls``), ``list_files(shuffle=False)``,
``padded_batch``, ``unbatch``, ``enumerate``, ``cardinality``, batching of rows of
different shapes, and ``tf_record_iterator`` tailing a growing file.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
tf.get_logger().setLevel("ERROR")
warnings.filterwarnings("ignore", message=".*tf_record_iterator.*")
warnings.filterwarnings("ignore", message=".*deterministic. argument has no effect.*")

import tfrecord_lite as tfr  # noqa: E402

LENGTHS = [3, 1, 4, 0, 2, 5, 1]


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    paths = []
    for k, n in enumerate(LENGTHS):
        p = os.fspath(tmp_path / f"part-{k:02d}.tfrecord")
        with tfr.TFRecordWriter(p) as w:
            for r in range(n):
                w.write(b"f%d-r%d" % (k, r))
        paths.append(p)
    return paths


def tf_list(ds: Any) -> list[Any]:
    return [_numpy(x) for x in ds.as_numpy_iterator()]


def _numpy(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _numpy(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(_numpy(v) for v in x)
    return x


def same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "OSU" or b.dtype.kind in "OSU":
        return a.shape == b.shape and [_b(x) for x in a.ravel()] == [_b(x) for x in b.ravel()]
    return a.shape == b.shape and np.array_equal(a, b)


def _b(x: Any) -> bytes:
    return x.encode() if isinstance(x, str) else bytes(x)


@pytest.mark.parametrize("parallel", [None, "autotune"])
@pytest.mark.parametrize("cycle,block", [(1, 1), (2, 1), (3, 2), (4, 3), (8, 1), (2, 5)])
def test_interleave_order_matches_tf(
    files: list[str], cycle: int, block: int, parallel: Any
) -> None:
    pattern = os.path.join(os.path.dirname(files[0]), "part-*.tfrecord")
    tf_par = None if parallel is None else tf.data.AUTOTUNE
    want = tf_list(
        tf.data.Dataset.list_files(pattern, shuffle=False).interleave(
            lambda x: tf.data.TFRecordDataset(x),
            cycle_length=cycle,
            block_length=block,
            num_parallel_calls=tf_par,
            deterministic=True,
        )
    )
    ours_par = None if parallel is None else tfr.data.AUTOTUNE
    got = list(
        tfr.data.Dataset.list_files(pattern, shuffle=False).interleave(
            lambda x: tfr.data.TFRecordDataset(x),
            cycle_length=cycle,
            block_length=block,
            num_parallel_calls=ours_par,
            deterministic=True,
        )
    )
    assert got == want
    # the file-level form and num_parallel_reads give the same order
    assert list(tfr.TFRecordDataset(sorted(files)).interleave(cycle, block)) == want
    if block == 1:
        want_reads = tf_list(tf.data.TFRecordDataset(sorted(files), num_parallel_reads=cycle))
        assert list(tfr.TFRecordDataset(sorted(files), num_parallel_reads=cycle)) == want_reads


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_num_parallel_reads_order_matches_tf_on_long_uneven_files(
    tmp_path: Path, compression: str
) -> None:
    """Files of 0, 1 and thousands of records, read in many blocks each: tf.data's order."""
    rng = np.random.default_rng(5)
    paths = []
    for k, n in enumerate([2500, 0, 1, 700, 6000, 1, 40]):
        p = os.fspath(tmp_path / f"long-{k:02d}.tfrecord")
        with tfr.TFRecordWriter(p, compression) as w:
            for r in range(n):
                w.write(b"f%d-r%d-" % (k, r) + rng.bytes(int(rng.integers(0, 300))))
        paths.append(p)
    for cycle in (2, 3, 5, 16):
        want = tf_list(tf.data.TFRecordDataset(paths, compression, num_parallel_reads=cycle))
        for buffer_size in (None, 1 << 16):
            got = tfr.TFRecordDataset(
                paths, compression, num_parallel_reads=cycle, buffer_size=buffer_size
            )
            assert list(got) == want, (cycle, buffer_size)


def test_list_files_order_and_errors(files: list[str], tmp_path: Path) -> None:
    patterns = [os.fspath(tmp_path / "part-0*.tfrecord"), os.fspath(tmp_path / "part-00*")]
    for p in (patterns[0], patterns):
        want = [x.decode() for x in tf_list(tf.data.Dataset.list_files(p, shuffle=False))]
        assert list(tfr.data.Dataset.list_files(p, shuffle=False)) == want
    shuffled = tf.data.Dataset.list_files(patterns[0])
    assert sorted(x.decode() for x in tf_list(shuffled)) == sorted(
        tfr.data.Dataset.list_files(patterns[0])
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="No files matched pattern"):
        tf.data.Dataset.list_files(os.fspath(tmp_path / "nothing-*"))
    with pytest.raises(FileNotFoundError, match="No files matched pattern"):
        tfr.data.Dataset.list_files(os.fspath(tmp_path / "nothing-*"))


def rows(n: int) -> np.ndarray:
    return (np.arange(n, dtype=np.int64) + 1) * 10


@pytest.mark.parametrize(
    "shapes,values,drop",
    [(None, None, False), ([6], -1, False), ([None], 7, True)],
)
def test_padded_batch_matches_tf(shapes: Any, values: Any, drop: bool) -> None:
    lengths = [1, 3, 0, 2, 5]
    tf_ds = tf.data.Dataset.from_tensor_slices(np.array(lengths)).map(
        lambda n: (tf.range(n, dtype=tf.int64) + 1) * 10
    )
    tf_shapes = None if shapes is None else tf.TensorShape(shapes)
    tf_values = None if values is None else tf.constant(values, tf.int64)
    want = tf_list(tf_ds.padded_batch(2, tf_shapes, tf_values, drop))
    ours = tfr.data.Dataset.from_tensor_slices(np.array(lengths)).map(rows)
    got = list(ours.padded_batch(2, shapes, values, drop))
    assert same(got, want)
    assert ours.padded_batch(2, shapes, values, drop).cardinality() == int(
        tf_ds.padded_batch(2, tf_shapes, tf_values, drop).cardinality()
    )


def test_padded_batch_of_dicts_matches_tf() -> None:
    labels = np.array([4, 5, 6], np.int64)
    ids = [np.arange(n, dtype=np.int64) for n in (2, 0, 3)]
    tf_ds = tf.data.Dataset.from_generator(
        lambda: ({"ids": i, "label": lab} for i, lab in zip(ids, labels)),
        output_signature={
            "ids": tf.TensorSpec([None], tf.int64),
            "label": tf.TensorSpec([], tf.int64),
        },
    )
    want = tf_list(tf_ds.padded_batch(3))
    got = list(
        tfr.data.Dataset.from_tensor_slices({"n": np.array([2, 0, 3]), "label": labels})
        .map(lambda e: {"ids": np.arange(e["n"], dtype=np.int64), "label": e["label"]})
        .padded_batch(3)
    )
    assert same(got, want)


def test_unbatch_enumerate_and_cardinality_match_tf() -> None:
    data = np.arange(14, dtype=np.int64).reshape(7, 2)
    tf_ds = tf.data.Dataset.from_tensor_slices(data)
    ours = tfr.data.Dataset.from_tensor_slices(data)
    pipelines = [
        (lambda d: d.batch(3).unbatch()),
        (lambda d: d.enumerate(start=4)),
        (lambda d: d.batch(2, drop_remainder=True).enumerate()),
        (lambda d: d.skip(2).take(3).repeat(2)),
        (lambda d: d.shard(3, 1)),
    ]
    for make in pipelines:
        assert same(list(make(ours)), tf_list(make(tf_ds)))
    cards = [
        lambda d: d,
        lambda d: d.batch(3),
        lambda d: d.batch(3, drop_remainder=True),
        lambda d: d.repeat(),
        lambda d: d.repeat().take(5),
        lambda d: d.repeat(3).skip(4),
        lambda d: d.filter(lambda x: True),
        lambda d: d.batch(3).unbatch(),
        lambda d: d.shard(3, 2),
        lambda d: d.enumerate().map(lambda i, x: x),
        lambda d: d.skip(-1),
        lambda d: d.take(0).repeat(),
    ]
    for make in cards:
        assert make(ours).cardinality() == int(make(tf_ds).cardinality())
    # unbatch: TF knows the count only from a static batch dimension (unbatch() of the
    # (7, 2) slices: 14); tfrecord_lite has no static shapes and says UNKNOWN there.
    assert int(tf_ds.unbatch().cardinality()) == 14
    assert ours.unbatch().cardinality() == tfr.data.UNKNOWN_CARDINALITY
    assert tfr.data.INFINITE_CARDINALITY == tf.data.INFINITE_CARDINALITY
    assert tfr.data.UNKNOWN_CARDINALITY == tf.data.UNKNOWN_CARDINALITY
    assert len(ours.batch(3)) == len(tf_ds.batch(3))


def test_tfrecord_dataset_cardinality_is_unknown_as_tf(files: list[str]) -> None:
    assert tfr.data.TFRecordDataset(files).cardinality() == int(
        tf.data.TFRecordDataset(files).cardinality()
    )
    with pytest.raises(TypeError):
        len(tf.data.TFRecordDataset(files))
    with pytest.raises(TypeError):
        len(tfr.data.TFRecordDataset(files))


def test_batch_of_different_shapes_raises_as_tf() -> None:
    shapes = [(2, 2, 3), (2, 2, 3), (2, 2)]
    tf_ds = tf.data.Dataset.from_generator(
        lambda: (np.zeros(s, np.uint8) for s in shapes),
        output_signature=tf.TensorSpec(None, tf.uint8),
    )
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf_list(tf_ds.batch(3))
    ours = tfr.data.Dataset.range(3).map(lambda i: np.zeros(shapes[int(i)], np.uint8))
    with pytest.raises(ValueError, match=r"\(2, 2, 3\).*\(2, 2\)"):
        list(ours.batch(3))


def test_tf_record_iterator_tailing_matches_tf(tmp_path: Path) -> None:
    """Append a file piece by piece; both iterators see the same records and errors."""
    fn = tmp_path / "grow.tfrecord"
    fn.write_bytes(b"")
    stream = b"".join(tfr.encode_record(b"x" * n) for n in (3, 0, 40, 7))
    theirs = tf.compat.v1.io.tf_record_iterator(os.fspath(fn))
    ours = tfr.tf_record_iterator(fn)

    def step(it: Any) -> Any:
        out = []
        while True:
            try:
                out.append(next(it))
            except StopIteration:
                return out, "stop"
            except (tf.errors.DataLossError, tfr.DataLossError):
                return out, "dataloss"

    with open(fn, "ab", buffering=0) as f:
        # cut points inside data and footers (TF raises there) and at record ends
        for cut in (3, 15, 19, 31, 35, 60, 91, 100, len(stream)):
            f.write(stream[f.tell() : cut])
            want, got = step(theirs), step(ours)
            assert got[0] == want[0], cut
            # TF stops silently inside a header; tfrecord_lite raises (documented)
            if want[1] == "stop" and got[1] == "dataloss":
                assert (cut - _record_start(stream, cut)) < 12
            else:
                assert got[1] == want[1], cut


def _record_start(stream: bytes, cut: int) -> int:
    pos = 0
    while True:
        length = int.from_bytes(stream[pos : pos + 8], "little")
        end = pos + 16 + length
        if end > cut:
            return pos
        pos = end
