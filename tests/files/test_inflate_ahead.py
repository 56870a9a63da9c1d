"""Inflating ahead in a background thread (``inflate_ahead``; the thread itself is
``_ahead.ReadAhead``, tested in ``test_ahead.py``).

The threaded path must give the same records, errors and error positions as
inflating inline, hold a bounded number of chunks, and never leave its thread
running: after the end, an error, an early close, an abandoned reader or a
KeyboardInterrupt.
"""

from __future__ import annotations

import gc
import io
import os
import pathlib
import threading
import zlib
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files import _compress, _inflate

ENV = _compress.ENV_VAR
BACKENDS = _compress.available_deflate_backends()
THREAD = _inflate.AHEAD_THREAD


def inflating_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD]


def no_thread_left() -> bool:
    """True once no inflating thread runs (close() joins; this only guards the assertion)."""
    gc.collect()
    return not inflating_threads()


@pytest.fixture
def threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every compressed stream is inflated ahead, local files included, whatever its
    size and the core count."""
    monkeypatch.setattr(_inflate, "AHEAD_MIN_BYTES", 0)
    monkeypatch.setattr(_inflate, "AHEAD_LOCAL", True)
    monkeypatch.setattr(_compress, "_cores", lambda: 2)


def inline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_inflate, "AHEAD_DEPTH", 0)


def records_for(n: int, seed: int = 3) -> list[bytes]:
    rng = __import__("random").Random(seed)
    words = [bytes(rng.choice(b"abcdefgh") for _ in range(rng.randint(2, 9))) for _ in range(50)]
    return [b" ".join(rng.choice(words) for _ in range(rng.randint(0, 400))) for _ in range(n)]


def write(path: pathlib.Path, records: list[bytes], compression: str) -> bytes:
    with tfr.TFRecordWriter(path, compression) as w:
        w.write_all(records)
    return path.read_bytes()


def outcome(path: Any, compression: str = "auto", **kw: Any) -> tuple[list[bytes], Any]:
    got: list[bytes] = []
    try:
        for r in tfr.tf_record_iterator(path, compression, **kw):
            got.append(r)
    except tfr.TFRecordError as err:
        return got, (type(err).__name__, str(err), err.path, err.offset, err.index)
    return got, None


# --------------------------------------------------------------------------- the reader


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_threaded_reads_equal_inline_reads(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, threaded: None, compression: str
) -> None:
    records = records_for(3000)
    path = tmp_path / "f.tfrecord"
    blob = write(path, records, compression)
    assert list(tfr.iter_records(zlib.decompress(blob, 47))) == records  # zlib's reading
    for name in BACKENDS:
        monkeypatch.setenv(ENV, name)
        assert list(tfr.tf_record_iterator(path)) == records, name
        assert list(tfr.TFRecordReader(io.BytesIO(blob), compression)) == records, name
        ds = tfr.TFRecordDataset([str(path)] * 2, compression_type=compression)
        assert list(ds) == records * 2, name
    assert no_thread_left()


def _damage(blob: bytes, where: float) -> bytes:
    out = bytearray(blob)
    i = int(len(out) * where)
    out[i] ^= 0x5A
    out[i + 1] ^= 0xA5
    return bytes(out)


@pytest.mark.parametrize("where", [0.01, 0.5, 0.97])
def test_threaded_damage_and_truncation_are_reported_as_inline(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, where: float
) -> None:
    records = records_for(2500, seed=5)
    good = write(tmp_path / "good.gz", records, "GZIP")
    bad, cut = tmp_path / "bad.gz", tmp_path / "cut.gz"
    bad.write_bytes(_damage(good, where))
    cut.write_bytes(good[: int(len(good) * where)])
    for name in BACKENDS:
        monkeypatch.setenv(ENV, name)
        for path in (bad, cut):
            inline(monkeypatch)
            expected = outcome(path)
            assert expected[1] is not None
            reports: list[Any] = []
            expected_skip = outcome(path, on_error="skip", on_skip=reports.append)
            monkeypatch.setattr(_inflate, "AHEAD_DEPTH", 3)
            monkeypatch.setattr(_inflate, "AHEAD_MIN_BYTES", 0)
            monkeypatch.setattr(_compress, "_cores", lambda: 2)
            assert outcome(path) == expected, (name, path.name)
            again: list[Any] = []
            assert outcome(path, on_error="skip", on_skip=again.append) == expected_skip
            assert [str(r) for r in again] == [str(r) for r in reports]
    assert no_thread_left()


def test_threads_end_when_readers_stop_early(tmp_path: pathlib.Path, threaded: None) -> None:
    records = records_for(3000, seed=7)
    path = tmp_path / "f.gz"
    write(path, records, "GZIP")

    # A generator closed after one record.
    gen = tfr.read_records(path)
    assert next(gen) == records[0]
    assert inflating_threads()
    gen.close()
    assert no_thread_left()

    # A reader abandoned mid-file (never closed, just dropped).
    it = tfr.tf_record_iterator(path)
    assert next(it) == records[0]
    del it
    assert no_thread_left()

    # A with-block left by an exception, as Ctrl-C would leave it.
    with pytest.raises(KeyboardInterrupt), tfr.TFRecordReader(path) as reader:
        for i, record in enumerate(reader):
            assert record == records[i]
            if i == 10:
                raise KeyboardInterrupt
    assert no_thread_left()

    # A consumer that breaks out of a for loop.
    for record in tfr.TFRecordDataset(str(path), compression_type="GZIP"):
        assert record == records[0]
        break
    assert no_thread_left()


def test_threaded_reader_leaves_the_callers_file_at_rest(
    tmp_path: pathlib.Path, threaded: None
) -> None:
    # The thread reads the caller's file object; once closed it has stopped touching it.
    records = records_for(3000, seed=8)
    path = tmp_path / "f.gz"
    write(path, records, "GZIP")
    with path.open("rb") as f:
        gen = tfr.read_records(f, "GZIP")
        assert next(gen) == records[0]
        gen.close()
        assert no_thread_left()
        pos = f.tell()
        threading.Event().wait(0.05)
        assert f.tell() == pos


def test_small_files_and_single_cores_stay_inline(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not _inflate.ahead_pays(_inflate.AHEAD_MIN_BYTES - 1) or _compress._cores() < 2
    monkeypatch.setattr(_compress, "_cores", lambda: 2)
    assert not _inflate.ahead_pays(_inflate.AHEAD_MIN_BYTES - 1)
    assert _inflate.ahead_pays(_inflate.AHEAD_MIN_BYTES)
    assert _inflate.ahead_pays(None)  # unknown size (a stream): ahead
    assert not _inflate.ahead_pays(10**9, local=True)  # a local file: inline
    assert not _inflate.ahead_pays(None, local=True)
    # ...unless a parser reads its records (and the file is big enough).
    assert _inflate.ahead_pays(10**9, local=True, parsed=True)
    assert not _inflate.ahead_pays(_inflate.AHEAD_MIN_BYTES - 1, local=True, parsed=True)
    monkeypatch.setattr(_inflate, "AHEAD_PARSED", False)
    assert not _inflate.ahead_pays(10**9, local=True, parsed=True)
    monkeypatch.setattr(_inflate, "AHEAD_LOCAL", True)
    assert _inflate.ahead_pays(10**9, local=True)
    monkeypatch.setattr(_compress, "_cores", lambda: 1)
    assert not _inflate.ahead_pays(None)
    assert not _inflate.ahead_pays(10**9)
    assert not _inflate.ahead_pays(10**9, local=True, parsed=True)
    # The inline path is a plain generator, no thread behind it.
    chunks = _inflate.inflate_ahead(iter([zlib.compress(b"abc")]), "ZLIB", None, None, 10**9)
    assert not isinstance(chunks, _inflate.ReadAhead)
    assert list(chunks) == [b"abc"]


def test_inflating_ahead_is_bounded(monkeypatch: pytest.MonkeyPatch, threaded: None) -> None:
    # 64 MiB of zeros from ~64 KB: every chunk handed over is at most AHEAD_CHUNK.
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    blob = b"".join(z.compress(bytes(2**20)) for _ in range(64)) + z.flush()
    for name in BACKENDS:
        monkeypatch.setenv(ENV, name)
        chunks = _inflate.inflate_ahead(iter([blob]), "GZIP", None, lambda o: iter([blob[o:]]))
        assert isinstance(chunks, _inflate.ReadAhead)
        total = biggest = 0
        for out in chunks:
            biggest = max(biggest, len(out))
            total += len(out)
        assert total == 64 * 2**20, name
        assert biggest <= _inflate.AHEAD_CHUNK < _inflate.INFLATE_CHUNK
    assert no_thread_left()


def test_threads_env_caps_the_compression_threads(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TFRECORD_LITE_THREADS=1: no inflate-ahead thread, deflate in the writer's thread.
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(_inflate, "AHEAD_LOCAL", True)  # local files as streams
    assert _compress._cores() == 4
    monkeypatch.setenv(_compress.THREADS_ENV, "2")
    assert _compress._cores() == 2 and _compress.deflate_threads() == 2
    monkeypatch.setenv(_compress.THREADS_ENV, "1")
    assert _compress._cores() == 1 and _compress.deflate_threads() == 1
    assert not _inflate.ahead_pays(None)
    records = [os.urandom(1500) + bytes(1500) for _ in range(2000)]  # ~3 MB compressed
    path = tmp_path / "one.gz"
    before = threading.active_count()
    with tfr.TFRecordWriter(str(path), "GZIP") as w:
        w.write_all(records)
        assert threading.active_count() == before
    reader = tfr.TFRecordReader(str(path))
    assert next(reader) == records[0]
    assert threading.active_count() == before
    assert list(reader) == records[1:]
    monkeypatch.setenv(_compress.THREADS_ENV, "2")  # the same file, read with a thread
    reader = tfr.TFRecordReader(str(path))
    assert next(reader) == records[0]
    assert threading.active_count() == before + 1
    reader.close()
    for bad in ("0", "-1", "two"):
        monkeypatch.setenv(_compress.THREADS_ENV, bad)
        with pytest.raises(ValueError, match="TFRECORD_LITE_THREADS"):
            _compress._cores()


def test_a_local_file_is_inflated_inline_and_a_file_object_ahead(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_compress, "_cores", lambda: 2)
    records = [os.urandom(400) + bytes(400) for _ in range(6000)]
    path = tmp_path / "local.gz"
    write(path, records, "GZIP")
    # (A file object's size is what is left after the first block read.)
    assert path.stat().st_size >= _inflate.AHEAD_MIN_BYTES + (1 << 20)
    it = tfr.tf_record_iterator(path)
    assert next(it) == records[0]
    assert not inflating_threads()  # a local file: inflated in this thread
    assert list(it) == records[1:]
    # A local file object too; the same bytes from a stream that is not a file of
    # this machine (a network stream, say): ahead.
    with path.open("rb") as f:
        it = tfr.tf_record_iterator(f)
        assert next(it) == records[0]
        assert not inflating_threads()
    it = tfr.tf_record_iterator(io.BytesIO(path.read_bytes()))
    assert next(it) == records[0]
    assert inflating_threads()
    assert list(it) == records[1:]
    assert no_thread_left()


def test_a_parsed_local_file_is_inflated_ahead(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A local GZIP file is inflated inline when its records are read as they are,
    # in a thread when the dataset parses them; the batches are the same either way.
    monkeypatch.setattr(_compress, "_cores", lambda: 2)
    rng = np.random.default_rng(5)
    path = str(tmp_path / "parsed.gz")
    with tfr.TFRecordWriter(path, "GZIP") as w:
        for i in range(3000):
            w.write(tfr.encode_example({"x": [i], "noise": rng.bytes(1500) + bytes(500)}))
    assert os.path.getsize(path) >= _inflate.AHEAD_MIN_BYTES
    spec = {"x": tfr.FixedLenFeature([], tfr.int64), "noise": tfr.FixedLenFeature([], tfr.string)}

    def first_batch_and_threads(ds: Any) -> tuple[Any, int]:
        it = iter(ds)
        first = next(it)
        seen = len(inflating_threads())
        rest = list(it)
        return [first, *rest], seen

    raw, seen = first_batch_and_threads(tfr.TFRecordDataset(path).batch(64))
    assert seen == 0
    parsed, seen = first_batch_and_threads(tfr.TFRecordDataset(path).parse(spec).batch(64))
    assert seen == 1
    assert no_thread_left()
    assert [b["x"].tolist() for b in parsed] == [
        list(range(i, min(i + 64, 3000))) for i in range(0, 3000, 64)
    ]
    for batch, records in zip(parsed, raw):
        assert batch["noise"].tolist() == tfr.parse_example(records, spec)["noise"].tolist()
    monkeypatch.setattr(_inflate, "AHEAD_PARSED", False)
    again, seen = first_batch_and_threads(tfr.TFRecordDataset(path).parse(spec).batch(64))
    assert seen == 0
    assert [b["x"].tolist() for b in again] == [b["x"].tolist() for b in parsed]
