"""``parse(..., num_parallel_calls=N)``: chunks parsed on N threads give exactly what
one thread gives, in order, and an error comes out where it would without threads."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr

F = {"x": tfr.FixedLenFeature([], tfr.int64), "v": tfr.VarLenFeature(tfr.float32)}
N = 30000


def _write(path: Path, n: int, bad: int = -1) -> str:
    with tfr.TFRecordWriter(os.fspath(path)) as w:
        for i in range(n):
            feats: dict[str, Any] = {"v": [float(i)] * (i % 4)}
            if i != bad:
                feats["x"] = [i]
            w.write(tfr.make_example(feats).SerializeToString())
    return os.fspath(path)


def _flat(batches: list[Any]) -> tuple[list[int], list[float]]:
    xs: list[int] = []
    vs: list[float] = []
    for b in batches:
        xs.extend(np.asarray(b["x"]).reshape(-1).tolist())
        vs.extend(np.asarray(b["v"].values).tolist())
    return xs, vs


@pytest.mark.slow
@pytest.mark.parametrize("workers", [2, 3, tfr.data.AUTOTUNE])
def test_threads_give_one_threads_batches_in_order(tmp_path: Path, workers: int) -> None:
    f = _write(tmp_path / "a.tfrecord", N)
    ds = tfr.TFRecordDataset(f)
    one = list(ds.parse(F).batch(100))
    many = list(ds.parse(F, num_parallel_calls=workers).batch(100))
    assert len(many) == len(one) == N // 100
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a["x"], b["x"])
        np.testing.assert_array_equal(a["v"].indices, b["v"].indices)
        np.testing.assert_array_equal(a["v"].values, b["v"].values)
    assert _flat(many)[0] == list(range(N))
    singles = list(ds.take(3000).parse(F, num_parallel_calls=workers, deterministic=True))
    assert [int(s["x"]) for s in singles] == list(range(3000))
    batched_first = list(ds.batch(64).parse(F, num_parallel_calls=workers))
    assert _flat(batched_first) == _flat(one)


@pytest.mark.slow
def test_sequences_parse_on_threads(tmp_path: Path) -> None:
    path = os.fspath(tmp_path / "s.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        for i in range(20000):
            w.write(
                tfr.make_sequence_example(
                    {"n": [i]}, {"v": [[i]] * (i % 3 + 1)}
                ).SerializeToString()
            )
    ctx = {"n": tfr.FixedLenFeature([], tfr.int64)}
    seq = {"v": tfr.FixedLenSequenceFeature([], tfr.int64)}
    ds = tfr.TFRecordDataset(path)
    one = list(ds.parse_sequence(ctx, seq).batch(50))
    two = list(ds.parse_sequence(ctx, seq, num_parallel_calls=2).batch(50))
    assert len(one) == len(two) == 400
    for a, b in zip(one, two):
        for part_a, part_b in zip(a, b):
            for k in part_a:
                np.testing.assert_array_equal(part_a[k], part_b[k])


@pytest.mark.slow
def test_an_error_on_a_thread_comes_after_the_batches_before_it(tmp_path: Path) -> None:
    bad = 20017
    f = _write(tmp_path / "b.tfrecord", N, bad)
    got: list[Any] = []
    with pytest.raises(tfr.ParseError) as info:
        for b in tfr.TFRecordDataset(f).parse(F, num_parallel_calls=2).batch(100):
            got.append(b)
    assert _flat(got)[0] == list(range(bad - bad % 100))
    assert (info.value.path, info.value.index) == (f, bad)


def test_bad_thread_counts_are_refused(tmp_path: Path) -> None:
    ds = tfr.TFRecordDataset(_write(tmp_path / "c.tfrecord", 3))
    with pytest.raises(ValueError, match="num_parallel_calls"):
        ds.parse(F, num_parallel_calls=0)
    with pytest.raises(TypeError, match="num_parallel_calls"):
        ds.parse(F, num_parallel_calls=1.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("batched", [False, True])
def test_an_options_block_reaches_the_parsing_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batched: bool
) -> None:
    from tfrecord_lite import _examples, _settings

    seen: list[tuple[str, Any]] = []
    name = "parse_batches" if batched else "parse_stream"
    real = getattr(_examples, name)

    def recording(items: Any, features: Any) -> Any:
        seen.append((threading.current_thread().name, _settings.threads()))
        return real(items, features)

    monkeypatch.setattr(_examples, name, recording)
    monkeypatch.delenv("TFRECORD_LITE_THREADS", raising=False)
    ds = tfr.TFRecordDataset(_write(tmp_path / "o.tfrecord", 50)).parse(F, num_parallel_calls=2)
    with tfr.options(threads=5):
        got = list(ds.batch(10) if batched else ds)
    assert len(got) == (5 if batched else 50)
    assert seen and all(thread.startswith("tfrecord_lite-map") for thread, _ in seen)
    assert {threads for _, threads in seen} == {5}
