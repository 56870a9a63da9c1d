"""The compiled engine's per-key bookkeeping (:func:`tally_columns`, one row per key and
a summary of each column, and :func:`intern_columns`, every bytes key's values made
by one call): its columns are the NumPy engine's, its summaries what the columns
hold, and the parses that take the assembly's short cuts on them equal the NumPy
engine's, errors included."""

from __future__ import annotations

import importlib.util
import random
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._examples._engines import EngineState, _jit, extract_examples

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None, reason="numba is not installed (the jit extra)"
)

SPEC = {
    "i": tfr.FixedLenFeature([2], tfr.int64, default_value=[7, 8]),
    "f": tfr.FixedLenFeature([], tfr.float32, default_value=0.5),
    "s": tfr.FixedLenFeature([], tfr.string, default_value=b"none"),
    "vi": tfr.VarLenFeature(tfr.int64),
    "vs": tfr.VarLenFeature(tfr.string),
    "vf": tfr.VarLenFeature(tfr.float32),
}


def _records(seed: int, n: int, missing: float) -> list[bytes]:
    rng = random.Random(seed)
    words = [b"", b"a", b"Cash", b"Credit Card", b"\x00x\x00"]
    out = []
    for r in range(n):
        row: dict[str, Any] = {}
        if rng.random() >= missing:
            row["i"] = [rng.randrange(-(2**40), 2**40), r]
        if rng.random() >= missing:
            row["f"] = [rng.random()]
        if rng.random() >= missing:
            row["s"] = [rng.choice(words) if seed % 2 else b"id-%05d" % r]
        row["vi"] = [rng.randrange(100) for _ in range(rng.randrange(4))]
        row["vs"] = [rng.choice(words) for _ in range(rng.randrange(3))]
        if rng.random() >= missing:
            row["vf"] = [rng.random() for _ in range(rng.randrange(1, 3))]
        out.append(tfr.encode_example(row))
    return out


def _needed() -> dict[str, Any]:
    return {k: s.dtype for k, s in SPEC.items()}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_columns_and_summaries_are_what_the_records_hold(seed: int, missing: float) -> None:
    records = _records(seed, 300, missing)
    if seed % 3 == 2:  # records the walk leaves to the reference: a second features field
        records[5] = records[5] + records[6]
        records[100] = records[100] + records[7]
    found = _jit.jit_extract(records, _jit.jit_table(_needed()))
    assert found is not None
    handled, cols = found
    with tfr.options(engine="numpy"):
        ref = extract_examples(records, _needed(), EngineState(_needed()))
    assert ref is not None
    ref_handled, ref_cols = ref
    clean = seed % 3 != 2
    assert handled.all() == clean and (not clean or ref_handled.all())
    for key, col in cols.items():
        rows = np.flatnonzero(handled)
        want = ref_cols[key]
        if clean:
            assert col.present.tolist() == want.present.tolist(), key
            assert col.counts.tolist() == want.counts.tolist(), key
            assert col.values.tolist() == want.values.tolist(), key
        present, counts = col.present, col.counts
        assert len(present) == len(rows)
        assert col.summary == (
            int(present.sum()),
            int(counts[present].min()) if present.any() else 0,
            int(counts.max()) if len(counts) else 0,
        ), key


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("missing", [0.0, 0.3])
def test_parses_equal_the_numpy_engine(seed: int, missing: float, monkeypatch: Any) -> None:
    records = _records(seed, 200, missing)
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "jit")
    got = tfr.parse_example(records, SPEC)
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "numpy")
    want = tfr.parse_example(records, SPEC)
    for key in ("i", "f", "s"):
        assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape
        assert got[key].tolist() == want[key].tolist(), key
    for key in ("vi", "vs", "vf"):
        assert got[key].values.dtype == want[key].values.dtype
        assert got[key].values.tolist() == want[key].values.tolist(), key
        assert np.array_equal(got[key].indices, want[key].indices), key
        assert np.array_equal(got[key].dense_shape, want[key].dense_shape), key


@pytest.mark.parametrize("engine", ["jit", "numpy"])
def test_a_fixed_length_key_with_a_wrong_count_is_the_same_error(
    engine: str, monkeypatch: Any
) -> None:
    records = [tfr.encode_example({"i": [1, 2]}) for _ in range(100)]
    records[60] = tfr.encode_example({"i": [1, 2, 3]})
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    with pytest.raises(tfr.ParseError) as err:
        tfr.parse_example(records, {"i": tfr.FixedLenFeature([2], tfr.int64)})
    assert "Index: 60" in str(err.value) and "Number of int64 values != expected" in str(err.value)


def test_repeated_bytes_are_made_once_per_key_in_one_call(monkeypatch: Any) -> None:
    records = [
        tfr.encode_example({"a": [b"x" if r % 2 else b"yy"], "b": [b"x", b"z"]}) for r in range(64)
    ]
    made: list[int] = []
    real = _jit._made

    def spy(*args: Any) -> Any:
        made.append(len(args[3]))  # (the values made: their starts)
        return real(*args)

    monkeypatch.setattr(_jit, "_made", spy)
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "jit")
    out = tfr.parse_example(records, {k: tfr.VarLenFeature(tfr.string) for k in "ab"})
    assert made == [4]  # a: x, yy; b: x, z (a key's own repeats only)
    assert out["a"].values.tolist() == [b"x" if r % 2 else b"yy" for r in range(64)]
    assert out["b"].values.tolist() == [b"x", b"z"] * 64
    assert out["a"].values[1] is out["a"].values[3]
