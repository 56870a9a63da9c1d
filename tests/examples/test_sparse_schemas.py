"""Sparse schemas: thousands of keys, each in a few records (issue 34, item 13).

An engine's (record, key) grid and the columns it gave grew with records x keys,
not with what the records hold: reading an 876 KiB file whose first 1,000 records
carry 20 keys of their own each (20,001 keys inferred) took 5.5 GB, then (the grid
capped at ``GRID_CELLS``) 584 MB. A wide batch (:func:`~._extracted.wide`) is now
walked entry by entry: each key's column holds the records that have it
(``SparseColumn``), and a key without values in a batch is one shared, read-only
``SparseValue``; the grid remains only for callers that take a column per record.
"""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._examples import _parse
from tfrecord_lite._examples._engines import _jit
from tfrecord_lite._examples._engines import _numpy as _extract
from tfrecord_lite._examples._engines import _output as _extracted
from tfrecord_lite._examples._where import _Where

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


def _grids(monkeypatch: Any) -> list[int]:
    """The cells of every grid the engines build from now on."""
    asked: list[int] = []
    real = _jit._key_arrays
    real_window = _extract._extract_window

    def counting(n: int, nkeys: int) -> Any:
        asked.append(n * nkeys)
        return real(n, nkeys)

    def windows(records: Any, lengths: Any, needed: Any, table: Any) -> Any:
        asked.append(len(records) * len(needed))
        return real_window(records, lengths, needed, table)

    monkeypatch.setattr(_jit, "_key_arrays", counting)
    monkeypatch.setattr(_extract, "_extract_window", windows)
    return asked


@pytest.mark.parametrize("engine", ENGINES)
def test_a_wide_batch_builds_no_grid_and_a_dense_caller_gets_runs(
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
    asked = _grids(monkeypatch)
    fast = tfr.parse_example(records, spec)
    assert asked == []  # 200 x 400 cells for 600 entries: the entries only
    # A caller that takes one entry per record (a streamed parse) gets the grid, a run
    # of records at a time.
    plan = _parse.compile_features(spec)
    dense = _parse._extract(records, plan, _Where(None, batch=True))
    assert asked and all(cells <= 4096 for cells in asked)  # (200 x 400 before)
    monkeypatch.setenv("TFRECORD_LITE_FASTPATH", "0")
    slow = tfr.parse_example(records, spec)
    for k in keys:
        assert fast[k].indices.tolist() == slow[k].indices.tolist()
        assert fast[k].values.tolist() == slow[k].values.tolist()
        assert fast[k].dense_shape.tolist() == slow[k].dense_shape.tolist()
        assert int(dense[k].counts.sum()) == len(slow[k].values)


def _odd_records(rng: random.Random, keys: list[str], n: int) -> list[bytes]:
    """Records of a few keys each, of every kind and shape, some the engines leave to
    protobuf (a key given twice) and some with an empty ``Feature()``."""
    out = []
    for i in range(n):
        row: dict[str, Any] = {"id": i, "f": [float(i)]}
        for k in rng.sample(keys, rng.randrange(0, 4)):
            kind = int(k[1:]) % 3
            size = rng.randrange(0, 4)
            if kind == 0:
                row[k] = [float(rng.randrange(9)) / 2 for _ in range(size)]
            elif kind == 1:
                row[k] = [rng.randrange(-(2**40), 2**40) for _ in range(size)]
            else:
                row[k] = [rng.randbytes(rng.randrange(0, 5)) for _ in range(size)]
            if size == 0 and kind < 2 and rng.random() < 0.5:  # a list of no values
                row[k] = np.array([], dtype=np.float32 if kind == 0 else np.int64)
            # (else [] : an empty Feature(), which counts as absent)
        record = tfr.encode_example(row)
        if rng.random() < 0.02:  # a key twice (merged messages): protobuf reads the last
            record += tfr.encode_example({"id": -i})
        out.append(record)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_wide_batches_give_every_engine_the_reference_answer(seed: int, monkeypatch: Any) -> None:
    rng = random.Random(seed)
    keys = [f"k{i}" for i in range(300)]
    dtypes = [tfr.float32, tfr.int64, tfr.string]
    spec: dict[str, Any] = {k: tfr.VarLenFeature(dtypes[int(k[1:]) % 3]) for k in keys}
    spec["id"] = tfr.FixedLenFeature([], tfr.int64)
    spec["f"] = tfr.FixedLenFeature([1], tfr.float32, default_value=[0.5])
    spec["ragged"] = tfr.RaggedFeature(tfr.int64, value_key="k1")
    # (and specs the records do not fit: the engines word the same errors)
    strict = dict(spec)
    strict["k0"] = tfr.FixedLenFeature([2], tfr.float32, default_value=[1.0, 2.0])
    strict["pair"] = tfr.SparseFeature("k4", "k3", tfr.float32, 2**41)
    records = _odd_records(rng, keys, 700)
    assert _extracted.wide(len(records), len(keys), sum(map(len, records)))

    def parsed(engine: str, fastpath: str, batch: int, spec: Any) -> list[Any]:
        monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
        monkeypatch.setenv("TFRECORD_LITE_FASTPATH", fastpath)
        out = []
        for a in range(0, len(records), batch):
            try:
                out.append(tfr.parse_example(records[a : a + batch], spec))
            except tfr.ParseError as err:
                out.append(str(err))
        return out

    engines = ["numpy", "jit"] if HAS_NUMBA else ["numpy"]
    for batch, specs in ((700, spec), (300, spec), (700, strict), (300, strict)):
        reference = parsed("numpy", "0", batch, specs)
        if specs is spec:
            assert not any(isinstance(r, str) for r in reference)
        for engine in engines:
            got = parsed(engine, "1", batch, specs)
            assert len(got) == len(reference)
            for x, y in zip(got, reference):
                if isinstance(y, str):
                    assert x == y
                    continue
                assert x.keys() == y.keys()
                for k in y:
                    _same(x[k], y[k], (engine, batch, k))


def _same(x: Any, y: Any, where: Any) -> None:
    assert type(x) is type(y), where
    if isinstance(y, tfr.SparseValue):
        assert x.indices.tolist() == y.indices.tolist(), where
        assert x.values.dtype == y.values.dtype, where
        assert x.values.tolist() == y.values.tolist(), where
        assert x.dense_shape.tolist() == y.dense_shape.tolist(), where
    elif isinstance(y, tfr.RaggedValue):
        _same(x.values, y.values, where)
        assert x.row_splits.tolist() == y.row_splits.tolist(), where
    else:
        assert x.dtype == y.dtype and x.tolist() == y.tolist(), where


def test_keys_without_values_share_one_read_only_value() -> None:
    records = [tfr.encode_example({"a": [1], "b": []})] * 3  # ([]: an empty Feature())
    spec = {k: tfr.VarLenFeature(tfr.string) for k in "bcd"}
    out = tfr.parse_example(records, spec)
    assert out["b"] is out["c"] is out["d"]
    assert out["b"].dense_shape.tolist() == [3, 0] and out["b"].values.dtype == object
    with pytest.raises(ValueError, match="read-only"):
        out["b"].dense_shape[0] = 5
    assert tfr.parse_example(records[:2], spec)["b"].dense_shape.tolist() == [2, 0]


MEMORY = """
import os, resource, sys, tempfile
os.environ["TFRECORD_LITE_ENGINE"] = sys.argv[1]
import tfrecord_lite as tfr
from tfrecord_lite._examples._engines import _kernels
path = os.path.join(sys.argv[2], "sparse.tfrecord")
with tfr.TFRecordWriter(path) as w:
    for i in range(300):  # 20 keys of its own each: 6,001 keys
        w.write(tfr.encode_example({"id": i} | {f"u{20 * i + j:05d}": [1.5] for j in range(20)}))
    for i in range(300, 5300):
        w.write(tfr.encode_example({"id": i}))
if sys.argv[1] == "jit":
    _kernels.load()
tfr.read_examples(path, {"id": tfr.FixedLenFeature([], tfr.int64)})  # (warm)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = tfr.read_examples(path)
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
assert len(out) == 6001 and out["u00021"].indices.tolist() == [[1, 0]]
assert out["id"].tolist() == list(range(5300))
print(grown // 1024)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux")
@pytest.mark.parametrize("engine", ENGINES)
def test_a_sparse_schema_takes_memory_proportional_to_what_is_present(
    engine: str, tmp_path: Path
) -> None:
    # A 200 KiB file of 6,001 keys: the peak grew by 162 MB (numpy) and 289 MB (jit)
    # with the capped grid; its columns hold 6,000 values.
    out = subprocess.run(
        [sys.executable, "-c", MEMORY, engine, str(tmp_path)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[-1]) < 48, out.stdout
