"""What ``parse_example`` does while holding the GIL, per call (issue 36, item 4).

The compiled kernels release the GIL; what a call does in Python around them is what
two user threads parsing at once take turns at. A call no longer compiles its spec
again: the plan of an equal spec is reused, as ``parse_single_example`` already did
(``python -m benchmarks.bench_threads --user`` measures the threads).
"""

from __future__ import annotations

import collections
import importlib.util
import platform
import subprocess
import sys
import threading
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._examples import _parse, _single

SPEC = {"a": tfr.FixedLenFeature([], tfr.int64), "s": tfr.VarLenFeature(tfr.string)}


def _records(n: int) -> list[bytes]:
    return [tfr.encode_example({"a": i, "s": [b"x"] * (i % 3)}) for i in range(n)]


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    made: list[Any] = []
    real = _parse.compile_features

    def counting(features: Any) -> Any:
        made.append(features)
        return real(features)

    monkeypatch.setattr(_parse, "compile_features", counting)
    monkeypatch.setattr(_single, "_plans", collections.OrderedDict())  # (other tests' plans)
    monkeypatch.setattr(_single, "_last", None)
    return made


def test_parse_example_compiles_a_spec_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _counting(monkeypatch)
    records = _records(100)
    spec = {"a": tfr.FixedLenFeature([], tfr.int64), "s": tfr.VarLenFeature(tfr.string)}
    for _ in range(5):
        out = tfr.parse_example(records, spec)
        assert np.asarray(out["a"]).tolist() == list(range(100))
    equal = {"s": tfr.VarLenFeature(tfr.string), "a": tfr.FixedLenFeature([], tfr.int64)}
    tfr.io.parse_example(records, dict(spec))  # an equal spec: the same plan
    assert len(made) == 1
    tfr.parse_example(records, equal)  # (another key order: another plan, its own columns)
    assert len(made) == 2
    changed = dict(spec, a=tfr.FixedLenFeature([], tfr.int64, default_value=7))
    assert (
        tfr.parse_example([tfr.encode_example({"s": [b"y"]})] * 3, changed)["a"].tolist() == [7] * 3
    )
    assert len(made) == 3


def test_a_spec_changed_in_place_is_compiled_again(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _counting(monkeypatch)
    spec: dict[str, Any] = {"a": tfr.FixedLenFeature([], tfr.int64)}
    records = _records(10)
    tfr.parse_example(records, spec)
    spec["a"] = tfr.FixedLenFeature([], tfr.int64, default_value=-1)
    spec["b"] = tfr.FixedLenFeature([], tfr.int64, default_value=5)
    out = tfr.parse_example(records, spec)
    assert np.asarray(out["b"]).tolist() == [5] * 10
    assert len(made) == 2


def test_threads_share_a_plan_and_get_their_own_results() -> None:
    records = [_records(300)[i:] for i in range(4)]
    got: dict[int, Any] = {}

    def parse(i: int) -> None:
        for _ in range(20):
            got[i] = tfr.parse_example(records[i], SPEC)

    threads = [threading.Thread(target=parse, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        assert np.asarray(got[i]["a"]).tolist() == list(range(i, 300))
        s = got[i]["s"]
        assert isinstance(s, tfr.SparseValue)
        assert s.dense_shape.tolist() == [300 - i, 2]


SETTLED = """
import os, resource
os.environ["TFRECORD_LITE_ENGINE"] = "jit"
import tfrecord_lite as tfr
from tfrecord_lite._examples._engines import _buffers as _extract, _kernels
_kernels.load()
records = [tfr.encode_example({"a": list(range(i % 50)), "s": [b"x" * (i % 7)]}) for i in range(4096)]
spec = {"a": tfr.VarLenFeature(tfr.int64), "s": tfr.VarLenFeature(tfr.string)}
print(_extract._heap_settled)
tfr.parse_example(records, spec)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    tfr.parse_example(records, spec)
print(_extract._heap_settled, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="numba not installed")
def test_the_compiled_engine_reuses_its_memory_instead_of_faulting_it_in() -> None:
    # The grids and joined records of a batch are blocks above glibc's first mmap
    # threshold: mapped and faulted in afresh for every batch (page faults of threads of
    # one process wait on each other) until a big block was freed once.
    out = subprocess.run([sys.executable, "-c", SETTLED], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    first, settled, faults = out.stdout.split()
    assert (first, settled) == ("False", "True")
    if sys.platform == "linux" and platform.libc_ver()[0] == "glibc":
        # 20 batches of 4096 records (about 1.3 MB of grids and records each): over
        # 5,000 page faults before
        assert int(faults) < 1500, faults
