"""Records of many tiny features through the NumPy engine (issue 34, item 12).

The entry walk reads the n-th map entry of every record at once, a few NumPy
calls a step: for a batch of a few records of 200,000 features that was 200,000
steps (18x protobuf's time). Once few records are left, their remaining entries
are read in one loop each, and the equal-layout path leaves records of more than
``LAYOUT_MAX_KEYS`` features to the walk. Counted, not timed
(``python -m benchmarks.bench_wide_records`` times it).
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._examples._engines import _numpy_entries as _walk
from tfrecord_lite._examples._engines import _numpy_layout as _layout

FEATURES = 20_000


def _records(n: int) -> list[bytes]:
    return [tfr.encode_example({f"f{i}": [i * (r + 1)] for i in range(FEATURES)}) for r in range(n)]


@pytest.mark.slow
@pytest.mark.parametrize("which", ["few", "all"])
def test_a_batch_of_wide_records_takes_few_lockstep_steps(which: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "numpy")
    steps = []
    real = _walk._length_field

    def counting(*args: Any) -> Any:
        steps.append(1)
        return real(*args)

    monkeypatch.setattr(_walk, "_length_field", counting)
    records = _records(8)
    keys = range(FEATURES) if which == "all" else range(0, FEATURES, 997)
    spec = {f"f{i}": tfr.FixedLenFeature([], tfr.int64) for i in keys}
    out = tfr.parse_example(records, spec)
    assert all(out[f"f{i}"].tolist() == [i * (r + 1) for r in range(8)] for i in keys)
    # a step per entry was 20,000 steps; now the walk hands them over after REST_AFTER
    assert len(steps) < 4 * _walk.REST_AFTER
    monkeypatch.setenv("TFRECORD_LITE_FASTPATH", "0")
    slow = tfr.parse_example(records, spec)
    assert all(slow[k].tolist() == out[k].tolist() for k in spec)


def test_the_equal_layout_path_leaves_wide_records_to_the_walk() -> None:
    assert _layout.LAYOUT_MAX_KEYS < FEATURES
    with pytest.raises(_layout._GiveUp):
        _layout._regions(_records(1)[0])
    narrow = tfr.encode_example({f"k{i}": i for i in range(10)})
    assert len(_layout._regions(narrow)) == 10


@pytest.mark.slow
def test_wide_records_take_memory_proportional_to_their_bytes(monkeypatch: Any) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "numpy")
    records = _records(8)
    size = sum(map(len, records))
    spec = {f"f{i}": tfr.FixedLenFeature([], tfr.int64) for i in range(0, FEATURES, 997)}
    tfr.parse_example(records, spec)
    tracemalloc.start()
    tfr.parse_example(records, spec)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 12 * size  # (measured: 4.5x to 9.7x)


def test_damage_deep_in_a_wide_record_goes_the_reference_way(monkeypatch: Any) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "numpy")
    records = _records(8)
    bad = bytearray(records[3])
    bad[len(bad) // 2 :] = b"\x0a\x86\x80\x80\x80\x80\x00" + bytes(bad[len(bad) // 2 + 7 :])
    records[3] = bytes(bad)
    spec = {"f0": tfr.FixedLenFeature([], tfr.int64)}
    with pytest.raises(tfr.ParseError, match="Could not parse example input") as err:
        tfr.parse_example(records, spec)
    assert err.value.index == 3
