"""The cache of inflated GZIP/ZLIB spans (setting ``gzip_span_cache``): random reads that
fall in a span read before take a slice of it instead of inflating from the seek point
again; the cache stays within its bytes; results are those without it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files import _gzread

SPACING = 64 * 1024


def records(n: int) -> list[bytes]:
    rng = np.random.default_rng(0)
    return [b"%06d" % i + rng.bytes(100) + b"z" * 200 for i in range(n)]


@pytest.fixture(params=["GZIP", "ZLIB"])
def indexed(tmp_path: Path, request: Any) -> tuple[str, list[bytes]]:
    path = os.fspath(tmp_path / "f.tfrecord")
    recs = records(4000)  # ~1.2 MB out: about 19 spans
    with tfr.TFRecordWriter(path, request.param, seekable=SPACING) as w:
        w.write_all(recs)
    tfr.create_index(path, spacing=SPACING)
    return path, recs


def read_counted(path: str, picks: list[int]) -> tuple[list[bytes], int]:
    """The records at ``picks`` read one by one, and the compressed bytes read for them."""
    f = tfr.TFRecordFile(path)
    gz = f._gz
    assert gz is not None
    read_at = gz.read_at
    total = [0]

    def counted(start: int, n: int) -> bytes:
        data = read_at(start, n)
        total[0] += len(data)
        return data

    gz.read_at = counted
    try:
        return [f[i] for i in picks], total[0]
    finally:
        f.close()


def test_records_of_a_cached_span_are_not_inflated_again(indexed: Any) -> None:
    path, recs = indexed
    picks = np.random.default_rng(1).permutation(len(recs)).tolist()[:1500]
    size = os.path.getsize(path)
    with tfr.options(gzip_span_cache=64 << 20):
        cached, read_cached = read_counted(path, picks)
    with tfr.options(gzip_span_cache=0):
        plain, read_plain = read_counted(path, picks)
    assert cached == plain == [recs[i] for i in picks]
    assert read_cached <= 3 * size  # each span fetched once (reads overshoot its end)
    assert read_plain > 5 * read_cached  # each record inflated from its seek point


def test_the_cache_stays_within_its_bytes(indexed: Any) -> None:
    path, recs = indexed
    picks = np.random.default_rng(2).permutation(len(recs)).tolist()
    budget = 8 * SPACING  # a span is ~64 KiB out: at most ~8 kept
    f = tfr.TFRecordFile(path)
    with tfr.options(gzip_span_cache=budget):
        assert [f[i] for i in picks] == [recs[i] for i in picks]
        assert 4 * SPACING < _gzread._SPANS.nbytes <= budget
    assert f._gz is not None
    mine = sum(len(v) for k, v in _gzread._SPANS.spans.items() if k[0] == f._gz._id)
    before = _gzread._SPANS.nbytes
    f.close()  # closing forgets the file's spans
    assert mine > 0 and _gzread._SPANS.nbytes == before - mine


def test_a_span_bigger_than_a_quarter_of_the_cache_is_not_kept(indexed: Any) -> None:
    path, recs = indexed
    held = _gzread._SPANS.nbytes
    with tfr.options(gzip_span_cache=2 * SPACING):
        got, _ = read_counted(path, [3000, 10, 2000])
    assert got == [recs[3000], recs[10], recs[2000]]
    assert _gzread._SPANS.nbytes <= held


def test_the_setting_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises((TypeError, ValueError)), tfr.options(gzip_span_cache=-1):
        pass
    monkeypatch.setenv("TFRECORD_LITE_GZIP_SPAN_CACHE", "1024")
    from tfrecord_lite import _settings

    assert _settings.gzip_span_cache() == 1024


def test_get_many_takes_only_the_records_asked_for_from_cached_spans(
    indexed: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, recs = indexed
    handed: list[int] = []
    real = _gzread.GzRanges.read

    def counting(gz: _gzread.GzRanges, start: int, n: int) -> bytes:
        data = real(gz, start, n)
        handed.append(len(data))
        return data

    picks = np.random.default_rng(3).permutation(len(recs)).tolist()[:600]
    with tfr.options(gzip_span_cache=64 << 20), tfr.TFRecordFile(path) as f:
        monkeypatch.setattr(_gzread.GzRanges, "read", counting)
        for a in range(0, len(picks), 64):  # as a shuffled DataLoader asks
            batch = picks[a : a + 64]
            assert f.get_many(batch) == [recs[i] for i in batch]
    # the records asked for (and their framing), not the runs of records between them
    assert sum(handed) <= sum(len(recs[i]) + 16 for i in picks) + 64
