"""Sparse schemas: thousands of keys, each in a few records (issue 34, item 13).

The engines and the columns they give hold a (record, key) grid, so a batch's
memory grows with records x keys, not with what the records hold: reading an
876 KiB file whose first 1,000 records carry 20 keys of their own each (20,001
keys inferred) took 5.5 GB. Batches are now cut so that records x keys stays
under ``GRID_CELLS`` (the compiled walk's grid, the NumPy walk's, the columns'),
in ``read_examples``, in ``infer_schema`` 's check of the later records, and in
a ``parse_example`` call given such a batch.
"""

from __future__ import annotations

import importlib.util
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._examples import _extract, _extracted, _jit

HAS_NUMBA = importlib.util.find_spec("numba") is not None
ENGINES = [
    "numpy",
    pytest.param("jit", marks=pytest.mark.skipif(not HAS_NUMBA, reason="numba not installed")),
]
CELLS = 1 << 18


def _write(path: Path, own: int = 100, plain: int = 6000) -> None:
    with tfr.TFRecordWriter(str(path)) as w:
        for i in range(own):  # 20 keys of its own each
            w.write(
                tfr.encode_example(
                    {"id": i} | {f"u{20 * i + j:05d}": [float(j)] for j in range(20)}
                )
            )
        for i in range(own, own + plain):
            w.write(tfr.encode_example({"id": i}))


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_reading_a_sparse_schema_takes_memory_bounded_by_the_grid(
    tmp_path: Path, engine: str, monkeypatch: Any
) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    monkeypatch.setattr(_extracted, "GRID_CELLS", CELLS)
    path = tmp_path / "sparse.tfrecord"
    _write(path)
    warm = tmp_path / "warm.tfrecord"  # (the kernels loaded before memory is traced)
    _write(warm, own=2, plain=100)
    tfr.read_examples(str(warm))
    tracemalloc.start()
    out = tfr.read_examples(str(path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(out) == 2001
    assert out["u00021"].values.tolist() == [1.0] and out["u00021"].indices.tolist() == [[1, 0]]
    assert out["id"].tolist() == list(range(6100))
    # records x keys x 9 bytes (present, count): 110 MB for the columns alone
    dense = 6100 * 2001 * 9
    assert peak < dense / 4, peak


@pytest.mark.parametrize("engine", ENGINES)
def test_a_batch_of_records_by_keys_over_the_grid_is_extracted_in_runs(
    engine: str, monkeypatch: Any
) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    monkeypatch.setattr(_extracted, "GRID_CELLS", 4096)
    keys = [f"k{i}" for i in range(400)]
    rng = np.random.default_rng(0)
    records = [
        tfr.encode_example({k: [i] for k in rng.choice(keys, 3, replace=False)}) for i in range(200)
    ]
    spec = {k: tfr.VarLenFeature(tfr.int64) for k in keys}
    asked: list[int] = []
    real = _jit._key_arrays

    def counting(n: int, nkeys: int) -> Any:
        asked.append(n * nkeys)
        return real(n, nkeys)

    def windows(records: Any, lengths: Any, needed: Any, table: Any) -> Any:
        asked.append(len(records) * len(needed))
        return real_window(records, lengths, needed, table)

    real_window = _extract._extract_window
    monkeypatch.setattr(_jit, "_key_arrays", counting)
    monkeypatch.setattr(_extract, "_extract_window", windows)
    fast = tfr.parse_example(records, spec)
    assert asked and all(cells <= 4096 for cells in asked)  # (200 x 400 before)
    monkeypatch.setenv("TFRECORD_LITE_FASTPATH", "0")
    slow = tfr.parse_example(records, spec)
    for k in keys:
        assert fast[k].indices.tolist() == slow[k].indices.tolist()
        assert fast[k].values.tolist() == slow[k].values.tolist()
