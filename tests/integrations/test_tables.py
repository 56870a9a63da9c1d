"""tfrecord_lite._tables, the layer every table integration shares, without any engine:
specs as JSON, file pieces and reading them (errors named by file and record), and the
write job whose shards are named only when every task has succeeded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tfrecord_lite as tfr

pytest.importorskip("pyarrow")

from tfrecord_lite._tables import (
    Piece,
    PieceReader,
    ReadPlan,
    ShardJob,
    group_pieces,
    spec_from_json,
    specs_from_json,
    specs_to_json,
    split_file,
)

SPECS = {
    "a": tfr.FixedLenFeature([2], tfr.float32, [1.0, 2.0]),
    "b": tfr.VarLenFeature(tfr.string),
    "c": tfr.RaggedFeature(tfr.int64),
    "d": tfr.FixedLenSequenceFeature([3], tfr.int64, allow_missing=True),
    "e": tfr.FixedLenFeature([], tfr.int64),
}


def test_specs_round_trip_through_json() -> None:
    back = specs_from_json(specs_to_json(SPECS))
    assert back is not None
    a = back["a"]
    assert isinstance(a, tfr.FixedLenFeature) and list(a.shape) == [2] and a.dtype == tfr.float32
    assert np.array_equal(a.default_value, [1.0, 2.0])
    assert back["b"] == tfr.VarLenFeature(tfr.string)
    assert isinstance(back["c"], tfr.RaggedFeature) and back["c"].dtype == tfr.int64
    assert back["d"] == tfr.FixedLenSequenceFeature((3,), tfr.int64, allow_missing=True)
    assert back["e"] == tfr.FixedLenFeature((), tfr.int64)


def test_the_short_json_form_and_its_errors() -> None:
    assert spec_from_json("x", "float32") == tfr.FixedLenFeature([], tfr.float32)
    assert spec_from_json("x", "string[]") == tfr.VarLenFeature(tfr.string)
    assert specs_from_json(None) is None and specs_from_json("  ") is None
    with pytest.raises(ValueError, match="not valid JSON"):
        specs_from_json("{label: int64}")
    with pytest.raises(ValueError, match="'x': type 'SparseFeature'"):
        specs_from_json('{"x": {"type": "SparseFeature", "dtype": "int64"}}')
    with pytest.raises(ValueError, match="cannot be passed as a JSON feature spec"):
        specs_to_json({"s": tfr.SparseFeature("i", "v", tfr.float32, 10)})


def test_an_indexed_file_splits_into_record_ranges(tmp_path: Path) -> None:
    path = str(tmp_path / "big.tfrecord")
    tfr.write_examples(path, {"id": np.arange(1000)})
    assert [p.rows for p in split_file(path, 300)] == [None]  # no index: one piece
    tfr.create_index(path)
    pieces = split_file(path, 300)
    assert [(p.start, p.stop) for p in pieces] == [(0, 250), (250, 500), (500, 750), (750, 1000)]
    reader = PieceReader(ReadPlan({"id": tfr.FixedLenFeature([], tfr.int64)}, None))
    ids = [i for p in pieces for i in reader.table(p).column("id").to_pylist()]
    assert ids == list(range(1000))
    gz = str(tmp_path / "big.tfrecord.gz")
    tfr.write_examples(gz, {"id": np.arange(1000)}, compression="GZIP")
    assert len(split_file(gz, 300)) == 1  # compressed: read whole


def test_a_record_that_does_not_parse_is_named_by_file_and_index(tmp_path: Path) -> None:
    path = str(tmp_path / "mixed.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        for i in range(30):
            w.write(tfr.encode_example({"v": [1.0] if i != 17 else [1.0, 2.0]}))
    reader = PieceReader(ReadPlan({"v": tfr.FixedLenFeature([], tfr.float32)}, None), batch_size=8)
    [piece] = split_file(path, 100)
    with pytest.raises(tfr.ParseError) as info:
        reader.table(piece)
    assert info.value.path == path and info.value.index == 17
    assert f"file {path!r}, record 17" in str(info.value)


def _table(ids: range) -> object:
    import pyarrow as pa

    return pa.table({"id": pa.array(list(ids), pa.int64())})


def test_a_job_names_its_shards_only_at_commit(tmp_path: Path) -> None:
    job = ShardJob(tmp_path / "out", compression="GZIP")
    job.start()
    # task 1 writes twice (a retry): the same staging shard, rewritten whole
    messages = [job.write(1, [_table(range(10, 20))]), job.write(0, [_table(range(10))])]
    messages.append(job.write(1, [_table(range(10, 20))]))
    messages.append(job.write(2, []))  # a task without rows gives no shard
    assert not job.existing_shards()  # nothing has a final name yet
    paths = job.commit(messages)
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["part-00000-of-00002", "part-00001-of-00002"]
    assert [Path(p).name for p in paths] == names and job.shard_records == [10, 10]
    ids = [int(tfr.parse_single_example(r, {"id": tfr.FixedLenFeature([], tfr.int64)})["id"])
           for p in paths for r in tfr.tf_record_iterator(p, "auto")]  # fmt: skip
    assert ids == list(range(20))  # every row once, in task order
    with pytest.raises(FileExistsError, match="already holds shards"):
        ShardJob(tmp_path / "out").start()


def test_an_aborted_job_leaves_nothing_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "unrelated.txt").write_text("not the job's")
    job = ShardJob(tmp_path)
    job.start()
    job.write(0, [_table(range(5))])
    Path(job.staging(1) + ".tmp").write_bytes(b"a task killed mid-write")
    sleeps: list[float] = []

    class Clock:
        monotonic = staticmethod(lambda: 0.0)
        sleep = staticmethod(sleeps.append)

    job.clock = Clock()
    job.abort()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["unrelated.txt"]
    assert len(sleeps) == 4  # swept until four sweeps in a row found nothing


@pytest.mark.parametrize(
    ("module", "engine", "extra", "make"),
    [
        ("spark", "pyspark", "spark", lambda m: m.TFRecordDataSource({"path": "x"})),
        ("daft", "daft", "daft", lambda m: m.read_tfrecords("x")),
        ("hf", "datasets", "hf", lambda m: m.load_dataset("x")),
    ],
)
def test_the_engine_modules_import_without_their_engine(
    module: str, engine: str, extra: str, make: object
) -> None:
    import importlib
    import importlib.util

    if importlib.util.find_spec(engine) is not None:
        pytest.skip(f"{engine} is installed here (make test-engines runs tfrecord_lite.{module})")
    mod = importlib.import_module(f"tfrecord_lite.{module}")
    with pytest.raises(ImportError, match=rf'pip install "tfrecord-lite-np\[{extra}\]"'):
        make(mod)  # type: ignore[operator]


# --------------------------------------------------------------------------- grouping pieces


def _pieces(sizes: list[int]) -> list[Piece]:
    return [Piece(f"f{i}", s) for i, s in enumerate(sizes)]


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8, 20])
def test_group_pieces_puts_each_piece_in_one_group_in_order(count: int) -> None:
    rng = np.random.default_rng(count)
    pieces = _pieces(rng.integers(1, 10_000, 13).tolist())
    groups = group_pieces(pieces, count)
    assert len(groups) == min(count, len(pieces))
    assert all(groups)
    flat = [p for g in groups for p in g]
    assert sorted(p.path for p in flat) == sorted(p.path for p in pieces)  # each exactly once
    for g in groups:  # a group keeps the pieces' order
        assert [pieces.index(p) for p in g] == sorted(pieces.index(p) for p in g)
    # about equal bytes: no group exceeds the mean by more than the largest piece
    loads = [sum(p.size or 0 for p in g) for g in groups]
    mean = sum(loads) / len(loads)
    assert max(loads) <= mean + max(p.size or 0 for p in pieces)


def test_group_pieces_by_default_one_group_per_core_or_per_max_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert len(group_pieces(_pieces([10] * 16))) == 4
    assert len(group_pieces(_pieces([10] * 3))) == 3  # never more groups than pieces
    # 16 pieces of 100 bytes with at most 250 bytes a group: 7 groups, more than the cores
    assert len(group_pieces(_pieces([100] * 16), max_bytes=250)) == 7
    # a size that is not known counts as a whole partition's worth
    assert len(group_pieces([Piece(f"s3://b/{i}", None) for i in range(6)], max_bytes=1)) == 6
    assert group_pieces([]) == []
    with pytest.raises(ValueError, match="at least 1"):
        group_pieces(_pieces([1]), 0)
