"""The compiled writer (``jit`` engine of encode_columns / write_examples): the same bytes
as the NumPy path, as the record-by-record reference and as protobuf's serializer, for
every kind of column; the engine is chosen as for parsing, and without numba (or with
its kernels unloadable) the NumPy path writes the same bytes."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tfrecord_lite as tfr
import tfrecord_lite._examples._column_files as columns_mod
import tfrecord_lite._examples._encode_columns as encode_mod
from tfrecord_lite import example_pb2
from tfrecord_lite._examples import _jit_encode
from tfrecord_lite._examples._build import bytes_rows, encode_example, int64_feature, make_example
from tfrecord_lite._examples._encode_columns import _encode_columns_framed, encode_columns
from tfrecord_lite._examples._engines import _choose, _kernels

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed (the jit extra)")
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


@contextlib.contextmanager
def _engine(name: str) -> Iterator[None]:
    old = os.environ.get(_choose.ENGINE_VARIABLE)
    os.environ[_choose.ENGINE_VARIABLE] = name
    try:
        yield
    finally:
        if old is None:
            del os.environ[_choose.ENGINE_VARIABLE]
        else:
            os.environ[_choose.ENGINE_VARIABLE] = old


def _rows(columns: dict[str, Any], n: int) -> list[dict[str, Any]]:
    return [{k: v[i] for k, v in columns.items()} for i in range(n)]


def _both(columns: dict[str, Any], n: int) -> tuple[bytes, list[bytes]]:
    """(framed stream, records) of the engine in force."""
    return bytes(_encode_columns_framed(columns, n).buffer), encode_columns(columns, n)


def _check(columns: dict[str, Any], n: int, *, same_order: bool = True) -> bytes:
    """The jit engine's bytes equal the NumPy engine's, the reference's and protobuf's
    (``same_order``: the keys are in the order protobuf writes them: short ASCII keys,
    sorted; otherwise protobuf reads the records back as the same message)."""
    with _engine("jit"):
        stream, records = _both(columns, n)
    with _engine("numpy"):
        assert _both(columns, n) == (stream, records)
    reference = [encode_example(row) for row in _rows(columns, n)]
    assert records == reference
    assert stream == tfr.encode_records(reference)
    for rec, row in zip(records, _rows(columns, n)):
        expect = make_example(row)
        if same_order:
            assert list(columns) == sorted(columns)
            assert rec == expect.SerializeToString(deterministic=True)
        else:
            again = example_pb2.Example.FromString(rec).SerializeToString(deterministic=True)
            assert again == expect.SerializeToString(deterministic=True)
    return stream


def _every_kind(n: int, seed: int) -> dict[str, Any]:
    """Columns of every kind the writer takes, edge values included, keys sorted."""
    rng = np.random.default_rng(seed)
    cycle = np.arange(n)
    ints = [0, -1, 1, I64_MIN, I64_MAX, 127, 128, 16383, 16384, -(2**31), 2**35, -128]
    floats = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-45, 3.4e38, -1.5]
    values = [b"", b"x" * 127, b"y" * 128, b"z" * 300, rng.bytes(16384)]
    columns: dict[str, Any] = {
        "a": np.array(ints, np.int64)[cycle % len(ints)],
        "b": rng.integers(I64_MIN, I64_MAX, (n, 3), dtype=np.int64, endpoint=True),
        "c": rng.integers(-128, 127, n, dtype=np.int8),
        "d": np.array([0, I64_MAX, 2**40], np.uint64)[cycle % 3],
        "e": cycle % 3 == 0,
        "f": np.array(floats, np.float32)[cycle % len(floats)],
        "g": np.array([0.5, -0.0, np.nan, 2.0**-149])[cycle % 4],
        "h": rng.standard_normal((n, 2)).astype(np.float16),
        "i": [values[i % len(values)] for i in range(n)],
        "j": bytes_rows(rng.integers(0, 256, (n, 2, 3), dtype=np.uint8)),
        "k": [f"s{i}é" for i in range(n)],
        "l": [list(range(-(i % 4), i % 3)) for i in range(n)],  # [] -> empty Feature
        "m": np.zeros((n, 0), np.int64),
        "n": np.array([b"x\x00", b""], dtype=object)[cycle % 2],
        "o": [int64_feature(i - 2) for i in range(n)],
        "p": [[float(i), -0.0] if i % 2 else [] for i in range(n)],
        "q": np.array([b"ab", b"c", b"d"])[cycle % 3],
        "r": np.zeros((n, 0), np.float32),
        "s": [[b"a", b""][: i % 3] for i in range(n)],
        "t": [int(v) for v in rng.integers(-5, 2**40, n)],
        "u": [float(v) for v in rng.standard_normal(n)],
    }
    return columns


@needs_numba
@pytest.mark.parametrize("n", [1, 2, 63, 64, 300])
def test_every_kind_of_column(n: int) -> None:
    _check(_every_kind(n, seed=n), n)


@needs_numba
def test_mnist_like_columns() -> None:
    n = 500
    rng = np.random.default_rng(5)
    columns = {
        "dim": np.tile(np.array([28, 28, 1]), (n, 1)),
        "image_raw": bytes_rows(rng.integers(0, 256, (n, 784), dtype=np.uint8)),
        "label": rng.integers(0, 10, n),
    }
    _check(columns, n)


@needs_numba
def test_records_of_128_bytes_and_more_and_long_keys() -> None:
    """Lengths whose varints take 1, 2 and 3 bytes: values, entries, records, keys."""
    sizes = [0, 1, 100, 120, 127, 128, 129, 16000, 16383, 16384, 16385, 70000]
    n = len(sizes)
    columns = {
        "k" * 200: [b"v" * s for s in sizes],
        "x": np.arange(n),
        "y" * 130: [list(range(s // 8)) for s in sizes],
    }
    _check(columns, n, same_order=False)


@pytest.mark.parametrize("engine", ["numpy", pytest.param("jit", marks=needs_numba)])
def test_lists_of_ints(engine: str) -> None:
    """Ragged int lists (an empty list: an empty Feature) are converted all at once;
    lists of anything else, and ints out of range, as before (same bytes, same error)."""
    n = 100
    edges = [0, -1, 127, 128, I64_MIN, I64_MAX, 2**35]
    columns: dict[str, Any] = {
        "a": [edges[: i % 8] for i in range(n)],
        "b": [[] for _ in range(n)],
        "c": [[True, 2] if i % 2 else [] for i in range(n)],  # bool: the generic path
        "d": [[i, float(i)] for i in range(n)],  # mixed: floats, the generic path
    }
    with _engine(engine):
        records = encode_columns(columns, n)
        stream = bytes(_encode_columns_framed(columns, n).buffer)
    reference = [encode_example(row) for row in _rows(columns, n)]
    assert records == reference
    assert stream == tfr.encode_records(reference)
    for rec, row in zip(records, _rows(columns, n)):
        assert rec == make_example(row).SerializeToString(deterministic=True)
    bad = {"a": [[1], [2, 2**63]] * 50}
    with pytest.raises(ValueError) as caught:
        encode_example({"a": [2, 2**63]})
    with _engine(engine), pytest.raises(ValueError, match="out of int64 range") as got:
        encode_columns(bad, n)
    assert str(got.value).startswith("feature 'a', record 1: ")
    assert str(got.value).endswith(str(caught.value).split(": ", 1)[1])


def _column_strategy(n: int) -> st.SearchStrategy[Any]:
    ints = st.integers(I64_MIN, I64_MAX)
    small = st.integers(-(2**20), 2**20)
    floats = st.floats(width=32, allow_nan=True, allow_infinity=True)
    blobs = st.binary(max_size=200)
    m = st.integers(0, 4)
    return st.one_of(
        m.flatmap(lambda k: hnp.arrays(np.int64, (n, k), elements=ints)),
        hnp.arrays(st.sampled_from([np.int8, np.uint16, np.int32, np.bool_]), n),
        hnp.arrays(np.uint64, n, elements=st.integers(0, I64_MAX)),
        m.flatmap(lambda k: hnp.arrays(np.float32, (n, k), elements=floats)),
        hnp.arrays(np.float64, n, elements=st.floats(allow_nan=True, width=32)),
        st.lists(blobs, min_size=n, max_size=n),
        st.lists(st.text(max_size=20), min_size=n, max_size=n),
        st.lists(st.lists(small, max_size=5), min_size=n, max_size=n),
        st.lists(st.lists(ints, max_size=3), min_size=n, max_size=n),
        st.lists(st.lists(floats, max_size=5), min_size=n, max_size=n),
        st.lists(st.lists(blobs, max_size=3), min_size=n, max_size=n),
        st.lists(ints, min_size=n, max_size=n),
        st.integers(0, 40).flatmap(
            lambda w: hnp.arrays(np.uint8, (n, w)).map(lambda a: bytes_rows(a))
        ),
        st.lists(blobs, min_size=n, max_size=n).map(lambda v: np.array(v, dtype=object)),
    )


@needs_numba
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_columns_equal_numpy_reference_and_protobuf(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 80), label="n")
    keys = data.draw(
        st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=5, unique=True),
        label="keys",
    )
    columns = {k: data.draw(_column_strategy(n), label=k) for k in keys}
    _check(columns, n, same_order=False)


@needs_numba
def test_crcs_without_the_crc_instruction_are_the_same(monkeypatch: Any) -> None:
    """Where the CRC kernel cannot be compiled, the backend's CRCs frame the records."""
    n = 200
    columns = _every_kind(n, seed=1)
    with _engine("jit"):
        expect = bytes(_encode_columns_framed(columns, n).buffer)
        monkeypatch.setattr(_jit_encode, "_hardware_crc", False)
        assert bytes(_encode_columns_framed(columns, n).buffer) == expect
    assert expect == tfr.encode_records(encode_example(row) for row in _rows(columns, n))


@needs_numba
def test_crc_kernels_that_cannot_load_leave_it_to_the_backend(monkeypatch: Any) -> None:
    n = 150
    columns = _every_kind(n, seed=6)
    with _engine("jit"):
        expect = bytes(_encode_columns_framed(columns, n).buffer)

        def refuse() -> Any:
            raise ImportError("no CRC kernels here")

        monkeypatch.setattr(_jit_encode, "crc_kernels", refuse)
        monkeypatch.setattr(_jit_encode, "_hardware_crc", True)
        assert bytes(_encode_columns_framed(columns, n).buffer) == expect
        assert _jit_encode._hardware_crc is False


@needs_numba
def test_crc_kernel_equals_crc32c() -> None:
    if not _jit_encode._crc_instruction():
        pytest.skip("numba does not compile for an x86-64 CPU with SSE4.2 here")
    kern, tables = _jit_encode.crc_kernels()
    rng = np.random.default_rng(0)
    buf = rng.integers(0, 256, 5000, dtype=np.uint8)
    block = kern.BLOCK
    sizes = [0, 1, 7, 8, 9, 3 * block - 1, 3 * block, 3 * block + 5, 6 * block + 13, 4096]
    for start in (0, 1, 7):
        for size in sizes:
            expect = tfr.crc32c(buf[start : start + size].tobytes())
            assert kern.crc32c(buf, start, size, tables) == expect, (start, size)
    nine = np.frombuffer(b"123456789", np.uint8).copy()
    assert kern.crc32c(nine, 0, 9, tables) == 0xE3069283


def _calls(monkeypatch: Any) -> list[int]:
    """Records handed to the compiled writer, call by call."""
    seen: list[int] = []
    real_framed, real_records = encode_mod.jit_framed, encode_mod.jit_records

    def framed(columns: Any, n: int) -> Any:
        seen.append(n)
        return real_framed(columns, n)

    def records(columns: Any, n: int) -> Any:
        seen.append(n)
        return real_records(columns, n)

    monkeypatch.setattr(encode_mod, "jit_framed", framed)
    monkeypatch.setattr(encode_mod, "jit_records", records)
    return seen


@needs_numba
def test_engine_choice(monkeypatch: Any) -> None:
    seen = _calls(monkeypatch)
    m = _choose.JIT_MIN_RECORDS
    big = {"a": np.arange(m) * 1000, "b": [b"x" * (i % 7) for i in range(m)]}
    small = {"a": np.arange(3) * 1000, "b": [b"x", b"", b"yy"]}
    uniform = {"a": np.arange(m) % 100, "b": [b"x"] * m}  # records of one size
    monkeypatch.delenv(_choose.ENGINE_VARIABLE, raising=False)
    _encode_columns_framed(big, m)
    encode_columns(big, m)
    assert seen == [m] * 2  # auto: jit for a large enough batch
    _encode_columns_framed(small, 3)
    assert len(seen) == 2  # a small one: NumPy, no compile
    encode_columns(uniform, m)
    assert len(seen) == 2  # records of one size, not framed: NumPy's rows
    _encode_columns_framed(uniform, m)
    assert len(seen) == 3  # framed: jit
    monkeypatch.setenv(_choose.ENGINE_VARIABLE, "jit")
    encode_columns(small, 3)
    assert seen[-1] == 3
    monkeypatch.setenv(_choose.ENGINE_VARIABLE, "numpy")
    _encode_columns_framed(big, m)
    encode_columns(big, m)
    assert len(seen) == 4
    monkeypatch.setenv(_choose.ENGINE_VARIABLE, "fast")
    with pytest.raises(ValueError, match="auto, numpy or jit"):
        encode_columns(big, m)


def test_without_numba_the_numpy_path_writes_the_same(monkeypatch: Any, tmp_path: Path) -> None:
    """numba not installed: auto takes the NumPy path (nothing imported), jit is refused."""
    n = 300
    columns = _every_kind(n, seed=3)
    reference = tfr.encode_records(encode_example(row) for row in _rows(columns, n))
    monkeypatch.setattr(_kernels, "_found", False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    seen = _calls(monkeypatch)
    monkeypatch.delenv(_choose.ENGINE_VARIABLE, raising=False)
    assert bytes(_encode_columns_framed(columns, n).buffer) == reference
    assert tfr.write_examples(tmp_path / "a.tfrecord", columns) == n
    assert (tmp_path / "a.tfrecord").read_bytes() == reference
    assert seen == []
    monkeypatch.setenv(_choose.ENGINE_VARIABLE, "jit")
    with pytest.raises(ImportError, match="needs numba"):
        encode_columns(columns, n)


@needs_numba
def test_kernels_that_cannot_load_leave_it_to_numpy(monkeypatch: Any) -> None:
    n = 100
    columns = _every_kind(n, seed=4)
    with _engine("numpy"):
        expect = _both(columns, n)

    def refuse(name: str = "") -> Any:
        raise ImportError("no kernels here")

    monkeypatch.setattr(_jit_encode, "_load", refuse)
    with _engine("jit"):
        assert _both(columns, n) == expect


@needs_numba
def test_write_examples_files_are_the_same(tmp_path: Path) -> None:
    n = 3000
    rng = np.random.default_rng(9)
    columns = {
        "image": rng.integers(0, 256, (n, 8, 8), dtype=np.uint8),  # raw: image, shape, dtype
        "label": rng.integers(0, 10, n),
        "name": [b"n%d" % i for i in range(n)],
        "score": rng.standard_normal(n).astype(np.float32),
    }
    paths = {}
    for name in ("numpy", "jit"):
        paths[name] = tmp_path / f"{name}.tfrecord"
        with _engine(name):
            assert tfr.write_examples(paths[name], columns) == n
    assert paths["jit"].read_bytes() == paths["numpy"].read_bytes()
    back = tfr.read_examples(paths["jit"])
    assert np.array_equal(back["image"], columns["image"])
    assert back["name"].tolist() == columns["name"]


def _chunked_columns(n: int, bad: int = -1) -> dict[str, Any]:
    rng = np.random.default_rng(n)
    return {
        "image": bytes_rows(rng.integers(0, 256, (n, 30), dtype=np.uint8)),
        "label": rng.integers(-(2**40), 2**40, n),
        "score": rng.standard_normal((n, 2)).astype(np.float32),
        "tags": [["x", 1] if i == bad else [b"t"] * (i % 3) for i in range(n)],
    }


@needs_numba
def test_chunks_encoded_ahead_on_a_thread(monkeypatch: Any, tmp_path: Path) -> None:
    """Many chunks with the jit engine: encoded on a thread, ahead of the writes; the
    file is the NumPy engine's, written chunk by chunk in the calling thread."""
    monkeypatch.setattr(columns_mod, "WRITE_CHUNK_BYTES", 1)  # 256 records a chunk
    n = 3000
    columns = _chunked_columns(n)
    used: list[int] = []
    real = columns_mod._ahead

    def spy(pool: Any, encode: Any, starts: Any) -> Any:
        used.append(len(starts))
        return real(pool, encode, starts)

    monkeypatch.setattr(columns_mod, "_ahead", spy)
    files = {}
    for name in ("numpy", "jit"):
        files[name] = tmp_path / f"{name}.tfrecord"
        with _engine(name):
            assert tfr.write_examples(files[name], columns) == n
    assert used == [-(-n // 256)]  # (the numpy engine writes in the calling thread)
    assert files["jit"].read_bytes() == files["numpy"].read_bytes()
    assert files["jit"].read_bytes() == tfr.encode_records(
        encode_example(row) for row in _rows(columns, n)
    )


@needs_numba
@pytest.mark.parametrize("bad", [0, 1000, 2999])
def test_an_error_in_a_chunk_ahead(monkeypatch: Any, tmp_path: Path, bad: int) -> None:
    """A record that cannot be encoded: the same error as the NumPy engine's, raised
    once the chunks before it are written, which the file then holds."""
    monkeypatch.setattr(columns_mod, "WRITE_CHUNK_BYTES", 1)
    columns = _chunked_columns(3000, bad)
    errors, files = {}, {}
    for name in ("numpy", "jit"):
        files[name] = tmp_path / f"{name}.tfrecord"
        with _engine(name), pytest.raises(TypeError) as caught:
            tfr.write_examples(files[name], columns)
        errors[name] = str(caught.value)
    assert errors["jit"] == errors["numpy"]
    assert "record" in errors["jit"]
    assert files["jit"].read_bytes() == files["numpy"].read_bytes()
    assert len(list(tfr.tf_record_iterator(str(files["jit"])))) == bad // 256 * 256


@needs_numba
def test_a_file_that_cannot_be_opened_leaves_no_thread(monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.setattr(columns_mod, "WRITE_CHUNK_BYTES", 1)
    columns = _chunked_columns(2000)
    before = threading.active_count()
    with _engine("jit"), pytest.raises(IsADirectoryError):
        tfr.write_examples(tmp_path, columns)  # a directory
    assert threading.active_count() == before
