"""ShardedWriter: TensorFlow-style shard names, the three ways to split, index files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._data import TFRecordDataset
from tfrecord_lite._errors import ClosedError
from tfrecord_lite._files._index import TFRecordFile, create_index
from tfrecord_lite._files._sharded import ShardedWriter


def recs(n: int) -> list[bytes]:
    return [b"record-%04d" % i + b"." * (i % 13) for i in range(n)]


def read(path: str) -> list[bytes]:
    return list(tfr.tf_record_iterator(path))


def test_num_shards_names_and_round_robin(tmp_path):
    prefix = tmp_path / "train"
    data = recs(23)
    with ShardedWriter(prefix, num_shards=4) as w:
        assert w.num_shards == 4
        w.write_all(data)
    names = [f"{prefix}-{i:05d}-of-00004" for i in range(4)]
    assert w.paths == names
    manifest = ["_train.shards.json"]
    assert sorted(os.listdir(tmp_path)) == manifest + [os.path.basename(n) for n in names]
    for i, name in enumerate(names):
        assert read(name) == data[i::4]
    assert w.shard_records == [6, 6, 6, 5] and w.records_written == 23
    assert sorted(TFRecordDataset(f"{prefix}@4")) == sorted(data)
    assert sorted(TFRecordDataset(f"{prefix}-?????-of-00004")) == sorted(data)


def test_num_shards_explicit_shard_and_empty_shards(tmp_path):
    w = ShardedWriter(tmp_path / "x", 3)
    w.write(b"a", shard=2)
    w.write(b"b", shard=2)
    paths = w.close()
    assert [read(p) for p in paths] == [[], [], [b"a", b"b"]]
    assert os.path.getsize(paths[0]) == 0  # an empty TFRecord file is 0 bytes
    assert w.close() == paths  # idempotent
    with pytest.raises(ClosedError):
        w.write(b"c")


def test_records_per_shard_renames_at_close(tmp_path):
    prefix = os.fspath(tmp_path / "ds")
    data = recs(10)
    w = ShardedWriter(prefix, records_per_shard=3)
    w.write_all(data[:7])
    assert w.num_shards is None
    assert not [n for n in os.listdir(tmp_path) if n[0] not in "._"]  # nothing final yet
    w.write_all(data[7:])
    paths = w.close()
    assert paths == [f"{prefix}-{i:05d}-of-00004" for i in range(4)]
    assert w.num_shards == 4
    assert [read(p) for p in paths] == [data[0:3], data[3:6], data[6:9], data[9:]]
    assert sorted(os.listdir(tmp_path)) == ["_ds.shards.json"] + [
        os.path.basename(p) for p in paths
    ]


def test_exact_multiple_makes_no_empty_last_shard(tmp_path):
    w = ShardedWriter(tmp_path / "ds", records_per_shard=5)
    w.write_all(recs(10))
    assert [len(read(p)) for p in w.close()] == [5, 5]
    assert w.paths[-1].endswith("-00001-of-00002")


def test_max_bytes_per_shard(tmp_path):
    data = [b"x" * n for n in (10, 20, 30, 5, 100, 1, 1, 1)]  # framed: 26 36 46 21 116 17 17 17
    w = ShardedWriter(tmp_path / "b", max_bytes_per_shard=64)
    w.write_all(data)
    paths = w.close()
    sizes = [os.path.getsize(p) for p in paths]
    assert [read(p) for p in paths] == [data[0:2], data[2:3], data[3:4], data[4:5], data[5:]]
    assert sizes == [62, 46, 21, 116, 51]  # each <= 64, but the 116-byte record alone


def test_both_limits_combined(tmp_path):
    w = ShardedWriter(tmp_path / "c", records_per_shard=3, max_bytes_per_shard=40)
    w.write_all([b"a", b"b", b"c", b"d", b"e" * 30, b"f"])  # 17-byte records; the long one is 46
    assert [read(p) for p in w.close()] == [[b"a", b"b"], [b"c", b"d"], [b"e" * 30], [b"f"]]


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_shards(tmp_path, compression):
    data = recs(50)
    with ShardedWriter(tmp_path / "z", records_per_shard=20, compression=compression) as w:
        w.write_all(data)
    assert len(w.paths) == 3
    head = Path(w.paths[0]).read_bytes()[:2]
    assert head == (b"\x1f\x8b" if compression == "GZIP" else b"\x78\x9c")
    assert [r for p in w.paths for r in read(p)] == data
    opts = tfr.TFRecordOptions(compression)
    w2 = ShardedWriter(tmp_path / "o", num_shards=2, options=opts)
    w2.write(b"x")
    assert read(w2.close()[0]) == [b"x"]


@pytest.mark.parametrize("mode", [{"num_shards": 3}, {"records_per_shard": 7}])
@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_index_files_written_as_we_go_match_create_index(tmp_path, mode, compression):
    data = recs(20)
    with ShardedWriter(tmp_path / "i", compression=compression, write_index=True, **mode) as w:
        w.write_all(data)
    assert w.index_paths == [p + ".index" for p in w.paths]
    for path, index in zip(w.paths, w.index_paths):
        ours = Path(index).read_text()
        # the text index (offsets in the decompressed stream for a compressed shard)
        check = create_index(path, tmp_path / "check.index", format="text")
        assert ours == Path(check).read_text()
        f = TFRecordFile(path)
        assert list(f) == read(path)
        if compression is None:
            assert f.index_path == index


def test_suffix_and_shard_name_order(tmp_path):
    with ShardedWriter(tmp_path / "train", 2, suffix=".tfrecord") as w:
        w.write_all([b"a", b"b"])
    assert [os.path.basename(p) for p in w.paths] == [
        "train-00000-of-00002.tfrecord",
        "train-00001-of-00002.tfrecord",
    ]
    with pytest.raises(ValueError):
        ShardedWriter(tmp_path / "t", 2, suffix="/x")


def test_nothing_written_gives_one_empty_shard(tmp_path):
    w = ShardedWriter(tmp_path / "e", records_per_shard=10)
    assert w.close() == [os.fspath(tmp_path / "e-00000-of-00001")]
    assert read(w.paths[0]) == [] and w.shard_records == [0]


def test_error_in_with_block_leaves_no_final_names(tmp_path):
    with pytest.raises(RuntimeError), ShardedWriter(tmp_path / "f", records_per_shard=2) as w:
        w.write_all(recs(5))
        raise RuntimeError("job died")
    names = os.listdir(tmp_path)
    assert names and all(n.startswith(".") and n.endswith(".inprogress") for n in names)
    assert w.paths == [] and w.closed
    with pytest.raises(FileNotFoundError):
        TFRecordDataset(os.fspath(tmp_path))  # a directory of hidden files only: no data


def test_argument_errors(tmp_path):
    p = tmp_path / "a"
    with pytest.raises(ValueError, match="either"):
        ShardedWriter(p)
    with pytest.raises(ValueError, match="either"):
        ShardedWriter(p, 2, records_per_shard=3)
    with pytest.raises(ValueError):
        ShardedWriter(p, 0)
    with pytest.raises(TypeError):
        ShardedWriter(p, 2.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ShardedWriter(p, 2, compression="GZIP", options="GZIP")
    w = ShardedWriter(p, records_per_shard=2)
    with pytest.raises(ValueError, match="num_shards"):
        w.write(b"x", shard=0)
    w.close()
    w = ShardedWriter(p, 2)
    for bad in (2, -1, True):
        with pytest.raises(ValueError):
            w.write(b"x", shard=bad)
    w.flush()
    assert "shards=2" in repr(w)
    w.close()


def test_failed_construction_leaves_no_files(tmp_path):
    (tmp_path / "blocked").write_bytes(b"")  # a file where the folder should be
    with pytest.raises(FileExistsError, match="cannot create the folder"):
        ShardedWriter(tmp_path / "blocked" / "x", 3)
    assert os.listdir(tmp_path) == ["blocked"]
    os.remove(tmp_path / "blocked")
    (tmp_path / ".y-00002.inprogress").mkdir()  # the third shard cannot be created
    with pytest.raises(OSError):
        ShardedWriter(tmp_path / "y", 3)
    assert os.listdir(tmp_path) == [".y-00002.inprogress"]
