"""Index files (the vahidk/tfrecord and NVIDIA DALI text format) and TFRecordFile random access."""

from __future__ import annotations

import os
import pickle
import struct
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._errors import CorruptRecordError, TFRecordError, TruncatedRecordError
from tfrecord_lite._files._index import (
    StaleIndexError,
    TFRecordFile,
    create_index,
    default_index_path,
    find_index,
    read_index,
    write_index,
)


def records(n: int, seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 300, size=n)
    return [bytes([i % 251]) * int(s) + b"#%d" % i for i, s in enumerate(sizes)]


def write(path: os.PathLike[str] | str, recs: list[bytes], compression: str | None = None) -> str:
    with tfr.TFRecordWriter(path, compression) as w:
        w.write_all(recs)
    return os.fspath(path)


def dali_style_index(path: str) -> str:
    """The index DALI's and vahidk/tfrecord's ``tfrecord2idx`` write (their algorithm, re-typed)."""
    lines = []
    with open(path, "rb") as f:
        while True:
            current = f.tell()
            byte_len = f.read(8)
            if len(byte_len) == 0:
                break
            f.read(4)
            proto_len = struct.unpack("q", byte_len)[0]
            f.read(proto_len)
            f.read(4)
            lines.append(f"{current} {f.tell() - current}\n")
    return "".join(lines)


# --------------------------------------------------------------------------- the index file


def test_create_index_format_is_offset_and_framed_length(tmp_path):
    recs = [b"", b"foo", b"x" * 1000]
    path = write(tmp_path / "a.tfrecord", recs)
    index = create_index(path)
    assert index == path + ".index" == default_index_path(path)
    text = Path(index).read_text()
    assert text == "0 16\n16 19\n35 1016\n"
    assert os.path.getsize(path) == 35 + 1016


def test_index_is_byte_identical_to_dali_and_vahidk_tfrecord2idx(tmp_path):
    path = write(tmp_path / "a.tfrecord", records(500))
    assert Path(create_index(path)).read_text() == dali_style_index(path)


def test_their_index_works_with_us(tmp_path):
    recs = records(300)
    path = write(tmp_path / "a.tfrecord", recs)
    (tmp_path / "a.tfrecord.idx").write_text(dali_style_index(path))
    f = TFRecordFile(path)
    assert f.index_path == path + ".idx"
    assert list(f) == recs
    assert f[123] == recs[123]


def test_our_index_loads_the_way_vahidk_tfrecord_loads_it(tmp_path):
    path = write(tmp_path / "a.tfrecord", records(50))
    table = np.loadtxt(create_index(path), dtype=np.int64)  # vahidk: np.loadtxt(index)[:, 0]
    assert np.array_equal(table, read_index(path + ".index"))
    assert table[:, 0][0] == 0


@pytest.mark.parametrize(
    "text",
    ["0 16\n16 19\n", "0 16\n16 19", "0 16\r\n16 19\r\n", "\n0 16\n\n16 19\n\n", "0\t16\n16  19\n"],
)
def test_read_index_is_lenient_about_whitespace(tmp_path, text):
    p = tmp_path / "x.index"
    p.write_bytes(text.encode())
    assert read_index(p).tolist() == [[0, 16], [16, 19]]


def test_read_index_one_and_zero_records(tmp_path):
    """Peers' index loaders fail on a file with one record (np.loadtxt returns 1-D)."""
    one = write(tmp_path / "one.tfrecord", [b"foo"])
    assert read_index(create_index(one)).tolist() == [[0, 19]]
    assert TFRecordFile(one)[0] == b"foo"
    empty = write(tmp_path / "empty.tfrecord", [])
    assert Path(create_index(empty)).read_text() == ""
    assert read_index(empty + ".index").shape == (0, 2)
    f = TFRecordFile(empty)
    assert len(f) == 0 and list(f) == [] and f[0:5] == []
    with pytest.raises(IndexError):
        f[0]


def test_read_index_offsets_only(tmp_path):
    recs = [b"a", b"bb", b"ccc"]
    path = write(tmp_path / "a.tfrecord", recs)
    (tmp_path / "a.tfrecord.index").write_text("0\n17\n35\n")
    assert read_index(tmp_path / "a.tfrecord.index", data_size=os.path.getsize(path)).tolist() == [
        [0, 17],
        [17, 18],
        [35, 19],
    ]
    assert list(TFRecordFile(path)) == recs
    with pytest.raises(StaleIndexError, match="size"):
        read_index(tmp_path / "a.tfrecord.index")


@pytest.mark.parametrize("text", ["0 16 3\n", "zero 16\n", "0 16\n16\n", "-5 16\n"])
def test_read_index_rejects_garbage(tmp_path, text):
    p = tmp_path / "x.index"
    p.write_text(text)
    with pytest.raises(StaleIndexError):
        read_index(p)


def test_write_index_roundtrip(tmp_path):
    table = np.array([[0, 16], [16, 20]])
    p = write_index(tmp_path / "t.index", table)
    assert Path(p).read_text() == "0 16\n16 20\n"
    assert np.array_equal(read_index(p), table)
    assert not [n for n in os.listdir(tmp_path) if "tmp" in n]


def test_create_index_explicit_path_and_find_index(tmp_path):
    path = write(tmp_path / "a.tfrecord", [b"x"])
    assert find_index(path) is None
    out = create_index(path, tmp_path / "elsewhere.idx")
    assert out == os.fspath(tmp_path / "elsewhere.idx")
    assert find_index(path) is None
    assert TFRecordFile(path, out).index_path == out
    create_index(path)
    assert find_index(path) == path + ".index"


def test_create_index_on_truncated_or_corrupt_file(tmp_path):
    path = write(tmp_path / "a.tfrecord", [b"hello", b"world"])
    data = Path(path).read_bytes()
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(data[:-3])
    with pytest.raises(TruncatedRecordError) as info:
        create_index(cut)
    assert info.value.index == 1 and info.value.offset == 21
    assert not os.path.exists(os.fspath(cut) + ".index")
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(data[:21] + b"\xff" + data[22:])
    with pytest.raises(CorruptRecordError) as info2:
        create_index(bad)
    assert info2.value.part == "header" and info2.value.index == 1
    short = tmp_path / "short.tfrecord"
    short.write_bytes(data + b"\x01\x02")
    with pytest.raises(TruncatedRecordError):
        create_index(short)


def test_create_index_memory_does_not_grow_with_record_size(tmp_path):
    """The index pass reads headers only: an 8 MiB record is skipped, not loaded."""
    big = b"\x07" * (8 * 1024 * 1024)
    path = write(tmp_path / "big.tfrecord", [big, b"small", big])
    tracemalloc.start()
    try:
        assert len(TFRecordFile(path)) == 3  # builds its index by scanning
        create_index(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * 1024 * 1024
    assert read_index(path + ".index")[:, 1].tolist() == [len(big) + 16, 21, len(big) + 16]


# --------------------------------------------------------------------------- random access


@pytest.mark.parametrize("with_index", [False, True])
def test_random_access_equals_streaming(tmp_path, with_index):
    recs = records(700, seed=3)
    path = write(tmp_path / "a.tfrecord", recs)
    if with_index:
        create_index(path)
    f = TFRecordFile(path)
    assert (f.index_path is not None) == with_index
    streamed = list(tfr.tf_record_iterator(path))
    assert len(f) == len(streamed) == 700
    for i in range(len(f)):
        assert f[i] == streamed[i]
    assert f[-1] == streamed[-1] and f[-700] == streamed[0]
    assert f[10:20] == streamed[10:20]
    assert f[::37] == streamed[::37]
    assert f[::-5] == streamed[::-5]
    assert f[650:2000] == streamed[650:]
    assert f[5:5] == []
    wanted = [699, 0, 5, 5, 6, 7, 300, -1]
    assert f[wanted] == [streamed[i] for i in wanted]
    assert f[np.array([3, 2, 1])] == streamed[3:0:-1]
    assert list(f) == streamed
    assert f.offsets.tolist() == read_index(create_index(path)).T[0].tolist()
    assert (f.lengths == np.array([len(r) + 16 for r in recs])).all()


def test_random_access_bad_indices(tmp_path):
    f = TFRecordFile(write(tmp_path / "a.tfrecord", [b"a", b"b"]))
    for bad in (2, -3, [0, 2]):
        with pytest.raises(IndexError):
            f[bad]
    for bad in ("0", 1.0, None, True, b"x"):
        with pytest.raises(TypeError):
            f[bad]


def test_random_access_reads_big_runs_in_pieces(tmp_path):
    recs = [bytes([i]) * 700_000 for i in range(60)]  # 42 MB: several 16 MiB spans
    path = write(tmp_path / "big.tfrecord", recs)
    f = TFRecordFile(path)
    got = f[0:60]
    assert [g[:1] for g in got] == [r[:1] for r in recs] and got == recs


def test_random_access_checks_crc(tmp_path):
    path = write(tmp_path / "a.tfrecord", [b"hello", b"world", b"again"])
    data = bytearray(Path(path).read_bytes())
    data[21 + 12] ^= 0x01  # first data byte of record 1
    Path(path).write_bytes(bytes(data))
    f = TFRecordFile(path)
    assert f[0] == b"hello" and f[2] == b"again"
    with pytest.raises(CorruptRecordError) as info:
        f[1]
    err = info.value
    assert err.path == path and err.index == 1 and err.offset == 21 + 12 and err.part == "data"
    assert TFRecordFile(path, verify=False)[1] == b"world"[:0] + bytes([ord("w") ^ 1]) + b"orld"


# --------------------------------------------------------------------------- stale indexes


def test_stale_index_in_the_middle_is_detected_on_read(tmp_path):
    recs = [b"aa", b"b", b"c", b"dd"]
    path = write(tmp_path / "a.tfrecord", recs)
    # Records 1 and 2 swapped in size: same total, first and last record right.
    (tmp_path / "a.tfrecord.index").write_text("0 18\n18 18\n36 16\n52 18\n")
    f = TFRecordFile(path)
    assert f[0] == b"aa" and f[3] == b"dd"
    with pytest.raises(StaleIndexError, match="rebuild"):
        f[1]
    with pytest.raises(CorruptRecordError, match=r"index .* is stale"):
        f[2]  # starts mid-record: a header CRC fails, and the index is named as a suspect


def test_stale_index_after_append_is_detected(tmp_path):
    path = write(tmp_path / "a.tfrecord", [b"a", b"b"])
    create_index(path)
    with open(path, "ab") as fh:
        fh.write(tfr.encode_record(b"c"))
    with pytest.raises(StaleIndexError, match="stale index") as info:
        TFRecordFile(path)
    assert isinstance(info.value, TFRecordError) and isinstance(info.value, ValueError)
    assert "create_index" in str(info.value)
    create_index(path)
    assert list(TFRecordFile(path)) == [b"a", b"b", b"c"]


def test_index_of_another_file_is_detected(tmp_path):
    a = write(tmp_path / "a.tfrecord", [b"aaaa", b"b"])
    b = write(tmp_path / "b.tfrecord", [b"a", b"bbbb"])  # same size, other boundaries
    assert os.path.getsize(a) == os.path.getsize(b)
    with pytest.raises(StaleIndexError, match="another version"):
        TFRecordFile(b, create_index(a))


@pytest.mark.parametrize("text", ["", "0 17\n", "0 17\n17 16\n", "1 16\n17 18\n", "0 33\n"])
def test_wrong_index_is_detected(tmp_path, text):
    path = write(tmp_path / "a.tfrecord", [b"", b"x"])  # 0 16 / 16 17
    (tmp_path / "a.tfrecord.index").write_text(text)
    with pytest.raises(StaleIndexError):
        TFRecordFile(path)


# --------------------------------------------------------------------------- compressed files


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_file_random_access_without_an_index(tmp_path, compression):
    recs = records(300, seed=4)
    path = write(tmp_path / "a.tfrecord", recs, compression)
    with TFRecordFile(path) as f:
        assert f.compression == compression and f.index_path is None
        assert len(f) == 300 and f[299] == recs[299] and f[-300] == recs[0]
        assert f[10:20] == recs[10:20] and f[[7, 3, 7]] == [recs[7], recs[3], recs[7]]
    with TFRecordFile(path, compression=compression) as f:
        assert list(f) == recs


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_file_decompressed_on_demand(tmp_path, compression):
    recs = records(200, seed=1)
    path = write(tmp_path / "a.tfrecord", recs, compression)
    with TFRecordFile(path, decompress=True) as f:
        tmp = f._tmp
        assert tmp is not None and os.path.exists(tmp)
        assert len(f) == 200 and f[150] == recs[150] and f[[3, 1]] == [recs[3], recs[1]]
        assert f.compression == compression
    assert not os.path.exists(tmp)


def test_index_of_compressed_file_uses_decompressed_offsets(tmp_path):
    recs = records(100)
    plain = write(tmp_path / "p.tfrecord", recs)
    gz = write(tmp_path / "g.tfrecord.gz", recs, "GZIP")
    text = create_index(gz, format="text")
    assert Path(text).read_text() == Path(create_index(plain)).read_text()
    f = TFRecordFile(gz, decompress=True)
    assert f.index_path == gz + ".index" and list(f) == recs


# --------------------------------------------------------------------------- sharing


def test_pickle_and_threads(tmp_path):
    recs = records(400)
    path = write(tmp_path / "a.tfrecord", recs)
    f = TFRecordFile(path)
    f[0]  # opens the file
    g = pickle.loads(pickle.dumps(f))
    assert g[399] == recs[399] and len(g) == 400
    errors: list[BaseException] = []

    def reader(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for i in rng.integers(0, 400, size=300):
                assert f[int(i)] == recs[int(i)]
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    f.close()
    f.close()


def test_repr_and_type_errors(tmp_path):
    path = write(tmp_path / "a.tfrecord", [b"x"])
    assert "records=1" in repr(TFRecordFile(path))
    with pytest.raises(TypeError), open(path, "rb") as fh:
        TFRecordFile(fh)  # type: ignore[arg-type]
