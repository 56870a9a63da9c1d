"""Real TensorFlow reads every GZIP/ZLIB file tfrecord_lite writes, with every deflate backend.

The fast backend (ISA-L, the ``fast`` extra) writes different deflate data
than zlib; the stream must stay standard: ``tf.data.TFRecordDataset`` and
``tf.compat.v1.io.tf_record_iterator`` read every level, window size, flush mode
and appended member record for record. Files TensorFlow writes are read by
tfrecord_lite with every backend. ``make interop`` installs the ``fast`` extra
into the interop environment so that ISA-L is tested here.
"""

from __future__ import annotations

import os
import random
import warnings
import zlib
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
tf.get_logger().setLevel("ERROR")
warnings.filterwarnings("ignore", message=".*tf_record_iterator.*")

import tfrecord_lite as tfr  # noqa: E402
from tfrecord_lite._files import _compress, _deflate_parallel  # noqa: E402

ENV = _compress.ENV_VAR
BACKENDS = _compress.available_deflate_backends()


def records_for(seed: int, n: int = 300, max_len: int = 4000) -> list[bytes]:
    """Compressible and incompressible records of varied sizes, empty ones included."""
    rng = random.Random(seed)
    words = [bytes(rng.choice(b"abcdefgh") for _ in range(rng.randint(2, 9))) for _ in range(40)]
    out = []
    for i in range(n):
        k = rng.randint(0, max_len)
        if i % 5 == 0:
            out.append(rng.randbytes(k))
        else:
            out.append(b" ".join(rng.choice(words) for _ in range(k // 6))[:k])
    return out


def tf_read(path: Path, compression: str) -> list[bytes]:
    got = [x.numpy() for x in tf.data.TFRecordDataset(str(path), compression_type=compression)]
    options = tf.io.TFRecordOptions(compression_type=compression)
    it = list(tf.compat.v1.io.tf_record_iterator(str(path), options))
    assert it == got
    return got


@pytest.fixture(params=["auto", *BACKENDS])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(ENV, request.param)
    return str(request.param)


def test_the_fast_backend_is_installed() -> None:
    # Without it this module would test zlib only: `make interop` installs the fast extra.
    assert "isal" in BACKENDS


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_tensorflow_reads_every_level(tmp_path: Path, backend: str, compression: str) -> None:
    records = records_for(1)
    for level in range(-1, 10):
        path = tmp_path / f"l{level}"
        opts = tfr.TFRecordOptions(compression, compression_level=level)
        with tfr.TFRecordWriter(path, opts) as w:
            w.write_all(records)
        assert tf_read(path, compression) == records, (backend, level)


@pytest.mark.parametrize(
    "options",
    [
        {"window_bits": 9},
        {"window_bits": 13},
        {"mem_level": 1},
        {"compression_strategy": 1},
        {"flush_mode": zlib.Z_SYNC_FLUSH},
        {"flush_mode": zlib.Z_FULL_FLUSH},
        {"flush_mode": zlib.Z_PARTIAL_FLUSH},
        {"output_buffer_size": 100},
    ],
)
@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_tensorflow_reads_every_option(
    tmp_path: Path, backend: str, compression: str, options: dict[str, Any]
) -> None:
    records = records_for(2, n=80)
    path = tmp_path / "f"
    with tfr.TFRecordWriter(path, tfr.TFRecordOptions(compression, **options)) as w:
        for r in records:
            w.write(r)
    assert tf_read(path, compression) == records


def test_tensorflow_reads_flushed_and_appended_gzip(tmp_path: Path, backend: str) -> None:
    a, b = records_for(3, n=100), records_for(4, n=100)
    path = tmp_path / "f.gz"
    with tfr.TFRecordWriter(path, "GZIP") as w:
        for i, r in enumerate(a):
            w.write(r)
            if i % 17 == 0:
                w.flush()
    with tfr.TFRecordWriter(path, "GZIP", mode="a") as w:
        w.write_all(b)
    assert tf_read(path, "GZIP") == a + b


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_we_read_what_tensorflow_writes(tmp_path: Path, backend: str, compression: str) -> None:
    records = records_for(5, n=2000, max_len=2000)
    path = tmp_path / "tf"
    for level in (1, 6, 9):
        options = tf.io.TFRecordOptions(compression_type=compression, compression_level=level)
        with tf.io.TFRecordWriter(str(path), options) as w:
            for r in records:
                w.write(r)
        assert list(tfr.tf_record_iterator(path)) == records
        assert list(tfr.TFRecordDataset(str(path), compression)) == records


@pytest.mark.parametrize("name", ["auto", *[b for b in BACKENDS if b != "isal"]])
def test_default_size_close_to_tensorflows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # The README's claim at default options (ISA-L forced by name makes no such promise).
    monkeypatch.setenv(ENV, name)
    records = records_for(6, n=1000)
    ours, theirs = tmp_path / "ours.gz", tmp_path / "tf.gz"
    with tfr.TFRecordWriter(ours, "GZIP") as w:
        w.write_all(records)
    with tf.io.TFRecordWriter(str(theirs), tf.io.TFRecordOptions(compression_type="GZIP")) as w:
        for r in records:
            w.write(r)
    ratio = ours.stat().st_size / theirs.stat().st_size
    assert ratio <= _compress.SIZE_TOLERANCE, ratio
    if name == "zlib":
        assert ours.read_bytes() == theirs.read_bytes()


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
@pytest.mark.parametrize("backend_name", [b for b in BACKENDS if b != "zlib"])
def test_tensorflow_reads_chunked_deflate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str, backend_name: str
) -> None:
    # Deflate over threads, a chunk at a time (small chunks: many of them, matches
    # across their boundaries), joined into one stream: TensorFlow reads it whole,
    # after flushes, at every level and window size.
    monkeypatch.setenv(ENV, backend_name)
    monkeypatch.setattr(_deflate_parallel, "DEFLATE_CHUNK", 20_000)
    monkeypatch.setattr(_compress, "deflate_threads", lambda: 2)
    records = records_for(7, n=400)
    for level, window_bits in ((-1, None), (1, None), (6, 10), (9, 15)):
        path = tmp_path / f"c{level}"
        opts = tfr.TFRecordOptions(compression, compression_level=level, window_bits=window_bits)
        with tfr.TFRecordWriter(path, opts) as w:
            w.write_all(records[:150])
            w.flush()
            w.write_all(records[150:])
            assert w._zobj.backend == "zlib" or w._zobj.threads == 2  # isal: no level 9
        assert tf_read(path, compression) == records, (level, window_bits)
