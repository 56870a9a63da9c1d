"""A fresh process never waits for the compiled kernels: not for a compile (an empty
cache), not for a load (numba's import and the cached kernels), and a short one never
imports numba at all.

The ``auto`` engine parses with NumPy until the kernels are loaded. A background load
held the kernels' lock for its whole import (about a second), and every batch's
``warm()`` call took that lock, so the batches waited for it: ``tfrecord-lite schema``
on a taxi shard took 1.8 s with a warm cache against 0.6 s without numba, and the
demo's first write went at 18k records/s instead of 190k+. These tests assert the
mechanism (which lock, which thread, whether numba is imported), not wall-clock bounds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import pytest

from tfrecord_lite._examples._engines import _kernels

HAS_NUMBA = importlib.util.find_spec("numba") is not None
NO_NUMBA = "numba is not installed (the jit extra): the compiled engine is not tested here"


@pytest.fixture
def slow_load(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The kernels' import replaced by one that holds (as a long numba import would)
    until the test lets it go; nothing loaded, nothing asked for, nothing compiled."""
    entered, release = threading.Event(), threading.Event()
    module = types.ModuleType("_jit_kernels")

    def held_import(name: str, where: str) -> Any:
        entered.set()
        release.wait(30)
        return module

    monkeypatch.setattr(_kernels, "_import_kernels", held_import)
    monkeypatch.setattr(_kernels, "_modules", {})
    monkeypatch.setattr(_kernels, "_warming", {})
    monkeypatch.setattr(_kernels, "_asked", {}, raising=False)
    monkeypatch.setattr(_kernels, "_compiling", {}, raising=False)
    monkeypatch.setattr(_kernels, "_found", True)
    monkeypatch.setattr(_kernels, "_broken", None)
    monkeypatch.setattr(_kernels, "_in_cache", lambda name, root: True)
    monkeypatch.setattr(_kernels, "_start_compile", lambda names, where: None)
    yield entered, release, module
    release.set()


def _returns_while_held(call: Any) -> bool:
    """Whether ``call()``, made on another thread, returns within 10 s."""
    done = threading.Thread(target=call, daemon=True)
    done.start()
    done.join(10)
    return not done.is_alive()


def test_a_batch_never_waits_for_a_load_under_way(
    slow_load: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, release, module = slow_load
    monkeypatch.setattr(_kernels, "LOAD_AFTER", 0.0, raising=False)
    _kernels.warm()  # the background load starts, and holds while it imports
    assert entered.wait(10), "no background load started"
    # Every later batch asks again: it must return at once, the load still under way.
    assert _returns_while_held(_kernels.warm)
    assert not _kernels.loaded()
    release.set()
    assert _kernels.wait(timeout=10)
    assert _kernels.load() is module


def test_the_first_batches_import_nothing(slow_load: Any) -> None:
    entered, release, _ = slow_load
    # The first call and those soon after start no load in this process (a short
    # command would pay for numba's import and get nothing for it) ...
    for _ in range(3):
        _kernels.warm()
    assert not entered.is_set()
    assert not any(t.name == "tfrecord_lite-kernels" for t in threading.enumerate())
    # ... a call LOAD_AFTER seconds after the first does.
    time.sleep(_kernels.LOAD_AFTER)
    _kernels.warm()
    assert entered.wait(10)
    release.set()
    assert _kernels.wait(timeout=10)


FIRST_PARSE = (
    "import json, sys, threading, time\n"
    "import tfrecord_lite as tfr\n"
    "from tfrecord_lite._examples._engines import _choose, _kernels\n"
    "rs = [tfr.encode_example({'a': list(range(i % 7)), 'b': b'x' * (i % 5)})\n"
    "      for i in range(1024)]\n"
    "spec = {'a': tfr.VarLenFeature(tfr.int64), 'b': tfr.FixedLenFeature([], tfr.string)}\n"
    "out = tfr.parse_example(rs, spec)\n"
    "first = {'numba': 'numba' in sys.modules, 'loaded': _kernels.loaded(),\n"
    "         'threads': [t.name for t in threading.enumerate()]}\n"
    "assert out['a'].values.tolist() == [v for i in range(1024) for v in range(i % 7)]\n"
)
# A longer process: it keeps parsing, and the kernels are loaded and taken, with the
# same results.
KEEPS_PARSING = (
    "deadline = time.monotonic() + 120\n"
    "while not _kernels.loaded() and time.monotonic() < deadline:\n"
    "    tfr.parse_example(rs, spec)\n"
    "    time.sleep(0.05)\n"
    "first['later'] = _kernels.loaded() and _choose.choose(1024) == 'jit'\n"
    "again = tfr.parse_example(rs, spec)\n"
    "first['same'] = (again['a'].values.tolist() == out['a'].values.tolist()\n"
    "                 and again['a'].indices.tolist() == out['a'].indices.tolist()\n"
    "                 and again['b'].tolist() == out['b'].tolist())\n"
)


def _run(code: str, cache: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "TFRECORD_LITE"))}
    env["NUMBA_CACHE_DIR"] = str(cache)
    out = subprocess.run(
        [sys.executable, "-c", code + "print(json.dumps(first))\n"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    found: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.slow
@pytest.mark.skipif(not HAS_NUMBA, reason=NO_NUMBA)
def test_a_fresh_process_parses_before_numba_is_imported(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    # An empty cache: the first result comes from the NumPy engine with numba not even
    # imported here; the compile runs in a process of its own, which fills the cache.
    cold = _run(FIRST_PARSE, cache)
    assert cold["numba"] is False and cold["loaded"] is False
    assert "tfrecord_lite-kernels" not in cold["threads"]
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not list(cache.rglob("_jit_kernels.*.nbi")):
        time.sleep(0.5)
    assert list(cache.rglob("_jit_kernels.*.nbi")), "the compile left no cache behind"
    time.sleep(1)  # (its last index file written)
    # A filled cache: the first result still comes without numba's import in the way
    # (the load used to start at the first batch and hold every later one) ...
    warm = _run(FIRST_PARSE, cache)
    assert warm["numba"] is False and "tfrecord_lite-kernels" not in warm["threads"]
    # ... and a process that goes on parsing loads the kernels, takes them, and gets
    # the same results.
    later = _run(FIRST_PARSE + KEEPS_PARSING, cache)
    assert later["numba"] is False
    assert later["later"] is True and later["same"] is True
