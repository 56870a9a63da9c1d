"""Bytes columns of the compiled engine: repeated values (cut out once, shared) and values
alike at both ends (the repeat finder gives up) come out as the NumPy engine's."""

from __future__ import annotations

import importlib.util
import random
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._examples._engines import _jit

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None, reason="numba is not installed (the jit extra)"
)


def _parse(records: list[bytes], spec: Any, engine: str, monkeypatch: Any) -> Any:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    return tfr.parse_example(records, spec)


@pytest.mark.parametrize("values", ["categorical", "alike at both ends", "long", "mixed"])
def test_bytes_columns_equal_the_numpy_engine(values: str, monkeypatch: Any) -> None:
    rng = random.Random(values)
    words = [b"", b"Cash", b"Credit Card", b"x" * 20, "größe".encode()]

    def value(i: int) -> bytes:
        if values == "categorical":
            return rng.choice(words)
        if values == "alike at both ends":  # same length, first and last 8 bytes
            return b"A" * 10 + rng.randbytes(12) + b"Z" * 10
        if values == "long":
            return rng.randbytes(rng.randrange(60, 300))
        return rng.choice(words) if i % 2 else rng.randbytes(rng.randrange(40))

    records = [
        tfr.encode_example({"s": value(i), "v": [value(i), value(i + 1)][: i % 3]})
        for i in range(700)
    ]
    spec = {"s": tfr.FixedLenFeature([], tfr.string), "v": tfr.VarLenFeature(tfr.string)}
    seen = []
    real = _jit._made

    def spy(*args: Any) -> Any:
        seen.append(len(args[3]))  # (the values made: their starts)
        return real(*args)

    monkeypatch.setattr(_jit, "_made", spy)
    got = _parse(records, spec, "jit", monkeypatch)
    expect = _parse(records, spec, "numpy", monkeypatch)
    assert got["s"].dtype == object and got["s"].tolist() == expect["s"].tolist()
    assert got["v"].values.tolist() == expect["v"].values.tolist()
    assert np.array_equal(got["v"].indices, expect["v"].indices)
    # Both keys' values are made by one call.
    if values == "categorical":
        assert sum(seen) <= 2 * len(words)  # each key's distinct values cut out once
    elif values != "mixed":
        assert sum(seen) == 700 + len(got["v"].values)  # every value its own
