"""write_examples' fast path (columns encoded whole, records framed as array rows) equals
the reference path: ``encode_records([encode_example(row) ...])`` byte for byte, and
protobuf's own serialization of ``make_example(row)``."""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tfrecord_lite as tfr
import tfrecord_lite._examples._column_files as arrays_mod
from tfrecord_lite import example_pb2
from tfrecord_lite._examples._build import (
    bytes_rows,
    encode_example,
    int64_feature,
    make_example,
)
from tfrecord_lite._examples._encode_columns import _encode_columns_framed, encode_columns
from tfrecord_lite._record._crc import mask
from tfrecord_lite._record._framing import FramedRecords, frame_parts, frame_rows

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def _rows(columns: dict[str, Any], n: int) -> list[dict[str, Any]]:
    return [{k: v[i] for k, v in columns.items()} for i in range(n)]


def _reference(columns: dict[str, Any], n: int) -> bytes:
    """The framed stream built record by record (today's reference path)."""
    return b"".join(tfr.encode_record(encode_example(row)) for row in _rows(columns, n))


def _check(columns: dict[str, Any], n: int) -> bytes:
    framed = _encode_columns_framed(columns, n)
    assert isinstance(framed, FramedRecords)
    assert framed.count == len(framed) == n
    stream = bytes(framed.buffer)
    assert framed.nbytes == len(stream)
    assert stream == _reference(columns, n)
    assert stream == tfr.encode_records(encode_columns(columns, n))
    # protobuf's serialization of the same Example: map keys sorted (deterministic),
    # so the columns are given in sorted order here.
    if list(columns) == sorted(columns):
        records = list(tfr.iter_records(stream))
        for rec, row in zip(records, _rows(columns, n)):
            assert rec == make_example(row).SerializeToString(deterministic=True)
    return stream


def _varied(n: int, seed: int = 0) -> dict[str, Any]:
    """Columns of every kind, with edge values, all in sorted key order."""
    rng = np.random.default_rng(seed)
    edge_ints = np.array([0, -1, 1, I64_MIN, I64_MAX, 127, 128, -128, 2**31, -(2**31)], np.int64)
    edge_floats = np.array(
        [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-45, 3.4e38, -1.5, 0.1, 3e38], np.float32
    )
    return {
        "a_int64": np.resize(edge_ints, n),
        "b_int2d": rng.integers(I64_MIN, I64_MAX, (n, 3), dtype=np.int64, endpoint=True),
        "c_int8": rng.integers(-128, 127, n, dtype=np.int8),
        "d_uint64": np.resize(np.array([0, 2**63 - 1, 2**40], np.uint64), n),
        "e_bool": np.arange(n) % 3 == 0,
        "f_float32": np.resize(edge_floats, n),
        "g_float64": np.resize(np.array([0.5, -0.0, np.nan, 2.0**-149]), n),
        "h_float2d": rng.standard_normal((n, 2)).astype(np.float16),
        "i_bytes": [rng.bytes(int(k)) for k in rng.integers(0, 5, n)],  # empty ones too
        "j_rows": bytes_rows(rng.integers(0, 256, (n, 2, 3), dtype=np.uint8)),
        "k_str": [f"s{i}é" for i in range(n)],
        "l_varlen": [list(range(-(i % 4), i % 3)) for i in range(n)],  # [] -> empty Feature
        "m_empty2d": np.zeros((n, 0), np.int64),
        "n_objbytes": np.array([b"x\x00", b""] * (n // 2) + [b"z"] * (n % 2), dtype=object),
        "o_feature": [int64_feature(i - 2) for i in range(n)],
        "p_listfloats": [[float(i), -0.0] if i % 2 else [] for i in range(n)],
        "q_S": np.array([b"ab", b"c"] * (n // 2) + [b"d"] * (n % 2)),
    }


@pytest.mark.parametrize("n", [1, 2, 7, 100])
def test_varied_columns_join_path(n: int) -> None:
    _check(_varied(n, n), n)


# Array-backed columns only: the records are laid out as rows (one group, or one per
# size pattern), the path write_examples takes for NumPy data.
def _array_columns(n: int, high: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {
        "a_label": rng.integers(-high, high, n),
        "b_image": bytes_rows(rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)),
        "c_dim": np.tile(np.array([28, 28, 1]), (n, 1)),
        "d_f": np.resize(np.array([np.nan, -0.0, 1.0, np.inf], np.float32), (n, 2)),
        "e_bool": np.arange(n) % 2 == 1,
        "f_small": np.resize(np.array([b"a", b"bc", b""], dtype=object), n),
    }


@pytest.mark.parametrize("high", [1, 100, 2**20, 2**62])
@pytest.mark.parametrize("n", [1, 64, 700])
def test_array_columns_rows_paths(n: int, high: int) -> None:
    _check(_array_columns(n, high, seed=high + n), n)


def test_one_group_is_framed_in_an_array() -> None:
    """Equal sizes everywhere: the buffer is a view of one 2-D array (no bytes per record)."""
    n = 500
    columns = {
        "image": bytes_rows(np.arange(n * 784, dtype=np.uint64).astype(np.uint8).reshape(n, 784)),
        "label": np.arange(n) % 10,
        "dim": np.tile(np.array([28, 28, 1]), (n, 1)),
    }
    framed = _encode_columns_framed(columns, n)
    assert isinstance(framed.buffer, memoryview)
    assert bytes(framed.buffer) == _reference(columns, n)
    assert list(framed) == encode_columns(columns, n)


def test_several_size_groups_keep_record_order() -> None:
    n = 3000
    labels = np.where(np.arange(n) % 7 == 0, 2**40, np.arange(n) % 5)  # 1- and 6-byte varints
    stream = _check({"label": labels, "x": np.ones((n, 2), np.float32)}, n)
    lengths = {len(r) for r in tfr.iter_records(stream)}
    assert len(lengths) == 2


def test_empty_and_no_columns() -> None:
    assert bytes(_encode_columns_framed({"a": np.zeros(0)}, 0).buffer) == b""
    framed = _encode_columns_framed({}, 3)
    assert bytes(framed.buffer) == tfr.encode_records([b"\x0a\x00"] * 3)


def test_errors_are_the_reference_errors() -> None:
    with pytest.raises(ValueError, match="out of int64 range"):
        _encode_columns_framed({"a": np.array([2**63], dtype=np.uint64)}, 1)
    with pytest.raises(TypeError, match=r"feature 'a': record 2 is a float_list"):
        _encode_columns_framed({"a": [1, 2, 0.5]}, 3)
    with pytest.raises(ValueError, match=">= 0"):
        _encode_columns_framed({}, -1)


_COLUMN = st.one_of(
    hnp.arrays(
        dtype=st.sampled_from([np.int64, np.int8, np.uint8, np.float32, np.float64, bool]),
        shape=st.tuples(st.just(0), st.integers(0, 3)),
    ),
    hnp.arrays(dtype=np.int64, shape=st.just((0,))),
    st.just("bytes_rows"),
    st.just("bytes_list"),
    st.just("int_list"),
)


def _materialize(spec: Any, n: int, rng: np.random.Generator) -> Any:
    """A column of ``n`` rows after hypothesis chose its kind (arrays: dtype and width)."""
    if isinstance(spec, str):
        if spec == "bytes_rows":
            return bytes_rows(rng.integers(0, 256, (n, int(rng.integers(0, 9))), dtype=np.uint8))
        if spec == "bytes_list":
            return [rng.bytes(int(k)) for k in rng.integers(0, 4, n)]
        return rng.integers(I64_MIN, I64_MAX, n, endpoint=True).tolist()
    dtype, width = spec.dtype, spec.shape[1:] if spec.ndim == 2 else ()
    shape = (n, *width)
    if dtype.kind == "f":
        vals = rng.choice(np.array([0.0, -0.0, np.nan, np.inf, 1.5, -3e38, 1e-40]), shape)
        return vals.astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dtype)
    # Mostly small values (a few size groups), some at the extremes.
    small = rng.integers(max(info.min, -3), min(info.max, 200), shape, endpoint=True)
    extreme = rng.choice(np.array([info.min, info.max], dtype=dtype), shape)
    return np.where(rng.random(shape) < 0.05, extreme, small).astype(dtype)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([1, 5, 130, 900]),
    st.dictionaries(st.sampled_from(list("abcdef")), _COLUMN, min_size=1, max_size=4),
    st.integers(0, 2**32 - 1),
)
def test_framed_equals_reference_property(n: int, specs: dict[str, Any], seed: int) -> None:
    rng = np.random.default_rng(seed)
    columns = {k: _materialize(specs[k], n, rng) for k in sorted(specs)}
    _check(columns, n)


# --------------------------------------------------------------------------- framing


def _frame_one(data: bytes) -> bytes:
    return (
        struct.pack("<Q", len(data))
        + struct.pack("<I", mask(tfr.crc32c(struct.pack("<Q", len(data)))))
        + data
        + struct.pack("<I", mask(tfr.crc32c(data)))
    )


@pytest.mark.parametrize("size", [0, 1, 5, 300])
def test_frame_rows(size: int) -> None:
    rng = np.random.default_rng(size)
    data = rng.integers(0, 256, (9, size), dtype=np.uint8)
    rows = np.full((9, size + 16), 0xEE, dtype=np.uint8)
    rows[:, 12 : 12 + size] = data
    frame_rows(rows)
    assert rows.tobytes() == b"".join(_frame_one(d.tobytes()) for d in data)
    frame_rows(np.zeros((0, 16), np.uint8))  # no rows: nothing to do
    with pytest.raises(ValueError, match="16 framing bytes"):
        frame_rows(np.zeros((2, 15), np.uint8))


def test_frame_parts_matches_record_by_record() -> None:
    rng = np.random.default_rng(3)
    cases = [
        [b""],
        [b"a"] * 5,
        [rng.bytes(int(k)) for k in rng.integers(0, 700, 300)],  # many distinct lengths
        [b"", b"x" * 200, b"", b"y" * 70000],  # 1-, 2- and 3-byte lengths
    ]
    for records in cases:
        parts, size = frame_parts(records)
        stream = b"".join(parts)
        assert stream == b"".join(_frame_one(r) for r in records)
        assert size == len(stream)
        assert tfr.encode_records(records) == stream
        assert list(tfr.iter_records(stream)) == records
    assert frame_parts([]) == ([], 0)
    views: list[Any] = [memoryview(b"abc"), bytearray(b"de"), np.arange(6, dtype=np.uint8)]
    assert tfr.encode_records(views) == b"".join(
        _frame_one(bytes(v)) for v in (b"abc", b"de", bytes(range(6)))
    )


def test_framed_records_iterate_and_repr() -> None:
    records = [b"one", b"", b"three"]
    framed = FramedRecords(tfr.encode_records(records), 3)
    assert list(framed) == records
    assert len(framed) == 3
    assert framed.nbytes == sum(map(len, records)) + 48
    assert repr(framed) == "FramedRecords(count=3, nbytes=56)"


# --------------------------------------------------------------------------- writers


@pytest.mark.parametrize("chunk_bytes", [600, 4 << 20])
@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_write_examples_file_equals_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: Any, chunk_bytes: int
) -> None:
    """Many chunks (tiny chunk size) or one; plain and compressed: the same stream."""
    monkeypatch.setattr(arrays_mod, "WRITE_CHUNK_BYTES", chunk_bytes)
    n = 1500
    rng = np.random.default_rng(5)
    columns = {
        "image": bytes_rows(rng.integers(0, 256, (n, 8, 8), dtype=np.uint8)),
        "label": rng.integers(-3, 300, n),  # several varint widths
        "score": rng.standard_normal(n),
    }
    path = tmp_path / "x.tfrecord"
    with pytest.warns(RuntimeWarning, match="narrowed to float32"):
        assert tfr.write_examples(path, columns, compression=compression) == n
    blob = path.read_bytes()
    if compression == "GZIP":
        blob = gzip.decompress(blob)
    elif compression == "ZLIB":
        blob = zlib.decompress(blob)
    assert blob == _reference(columns, n)
    assert len(tfr.read_examples(path)["label"]) == n


def test_writer_write_all_framed(tmp_path: Path) -> None:
    """Small framed batches are buffered in order with single records; big ones go out whole."""
    small = [b"s1", b"s2"]
    big = [bytes([i % 251]) * 1000 for i in range(400)]  # > the writer's 256 KiB buffer
    path = tmp_path / "w.tfrecord"
    with tfr.TFRecordWriter(path) as w:
        w.write(b"first")
        assert w.write_all(FramedRecords(tfr.encode_records(small), 2)) == 2
        assert w.write_all(FramedRecords(tfr.encode_records(big), 400)) == 400
        w.write(b"last")
        assert w.records_written == 404
    assert path.read_bytes() == tfr.encode_records([b"first", *small, *big, b"last"])
    # A writer flushing every record takes them one by one (the same stream, compressed).
    opts = tfr.TFRecordOptions("GZIP", flush_mode=zlib.Z_SYNC_FLUSH)
    with tfr.TFRecordWriter(tmp_path / "f.gz", opts) as w:
        assert w.write_all(FramedRecords(tfr.encode_records(small), 2)) == 2
    assert gzip.decompress((tmp_path / "f.gz").read_bytes()) == tfr.encode_records(small)
    # Other writers iterate it as records.
    with tfr.ShardedWriter(tmp_path / "sh", num_shards=2) as sw:
        assert sw.write_all(FramedRecords(tfr.encode_records(small), 2)) == 2
    assert sorted(r for p in sorted(tmp_path.glob("sh*")) for r in tfr.tf_record_iterator(p)) == (
        small
    )


def test_parsed_back_equal_to_make_example(tmp_path: Path) -> None:
    n = 64
    columns = _array_columns(n, 1000, 9)
    path = tmp_path / "p.tfrecord"
    tfr.write_examples(path, columns)
    for rec, row in zip(tfr.tf_record_iterator(path), _rows(columns, n)):
        parsed = example_pb2.Example.FromString(rec)
        expected = make_example(row)
        assert parsed.SerializeToString(deterministic=True) == expected.SerializeToString(
            deterministic=True
        )


def test_chunks_hold_about_write_chunk_bytes() -> None:
    """Rows per chunk follow the records' size, lists of big values included."""
    n = 70000
    mnist = {
        "image": bytes_rows(np.zeros((n, 784), np.uint8)),
        "label": np.zeros(n, np.int64),
        "dim": np.zeros((n, 3), np.int64),
    }
    rows = arrays_mod._chunk_rows(mnist)
    assert 3000 < rows < 6000  # ~850-byte records in 4 MiB
    jpegs = {"jpeg": [b"x" * 50_000] * 1000, "label": list(range(1000))}
    assert arrays_mod._chunk_rows(jpegs) == 256  # the floor: 256 records of 50 kB
    objects = {"o": np.array([b"y" * 4000] * 100, dtype=object), "v": [[1, 2]] * 100}
    assert 900 < arrays_mod._chunk_rows(objects) < 1100
    assert arrays_mod._chunk_rows({"x": np.zeros(n, np.int8)}) == arrays_mod.WRITE_CHUNK


def test_prefix_cache_bounded_and_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Prefixes are shared between chunks and calls; a full cache starts over, same bytes."""
    import tfrecord_lite._examples._encode_columns as example_mod

    monkeypatch.setattr(example_mod, "_PREFIX_SIZES_MAX", 5)
    monkeypatch.setattr(example_mod, "_PREFIX_KEYS_MAX", 2)
    monkeypatch.setattr(example_mod, "_PREFIXES", {})
    rng = np.random.default_rng(11)
    n = 80
    for key in ("a", "b", "c", "a"):
        columns = {key: [rng.bytes(int(k)) for k in rng.integers(0, 200, n)], "z": np.arange(n)}
        _check(columns, n)
        assert len(example_mod._PREFIXES) <= 2
        # a column adds the sizes of its chunk to a cache that had room when it started
        assert all(len(c) <= 5 + n for c in example_mod._PREFIXES.values())
