"""The parse engines ask ``tfrecord_lite._settings`` for their settings, at each batch:
``engine`` and ``fastpath`` (their environment variables, or a ``tfr.options(...)``
block), ``numba_cache_dir`` and ``cache_home`` for the compiled kernels' cache; and
chunks parsed on the library's threads see the block of the code that asked for them."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite import _settings
from tfrecord_lite._examples import _parse, _threads
from tfrecord_lite._examples._engines import _choose, _dispatch
from tfrecord_lite._examples._engines import _numpy as _extract
from tfrecord_lite._examples._engines import _output as _extracted

HAS_NUMBA = importlib.util.find_spec("numba") is not None
NO_NUMBA = "numba is not installed (the jit extra): the compiled engine is not tested here"
SPEC = {"a": tfr.FixedLenFeature([], tfr.int64), "s": tfr.VarLenFeature(tfr.string)}


@pytest.fixture(autouse=True)
def _defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("TFRECORD_LITE_ENGINE", "TFRECORD_LITE_FASTPATH"):
        monkeypatch.delenv(variable, raising=False)


def test_a_block_chooses_the_engine_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "jit")
    with tfr.options(engine="numpy"):
        assert _choose.choose(10**6) == "numpy"
        assert _choose.choose(100, records=[b""] * 100) == "numpy"
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "numpy")
    if HAS_NUMBA:
        with tfr.options(engine="jit"):
            assert _choose.choose(1) == "jit"  # forced: even one record
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", " NumPy ")  # as the settings read it
    assert _choose.choose(10**6) == "numpy"
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "fast")
    with pytest.raises(ValueError, match=r"TFRECORD_LITE_ENGINE='fast'.*auto, numpy or jit"):
        _choose.choose(10)
    with tfr.options(engine="auto"):  # the block comes first: the variable is not read
        _choose.choose(10)


def test_fastpath_is_read_at_each_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    records = [tfr.encode_example({"a": i, "s": [b"x"] * (i % 3)}) for i in range(100)]
    walked: list[int] = []
    real = _extract.extract

    def spy(*args: Any, **kwargs: Any) -> Any:
        walked.append(len(args[0]))
        return real(*args, **kwargs)

    expect = tfr.parse_example(records, SPEC)
    monkeypatch.setattr(_dispatch, "extract", spy)
    with tfr.options(fastpath=False, engine="numpy"):
        assert not _extracted.enabled()
        off = tfr.parse_example(records, SPEC)
    assert walked == []  # the block: every record through protobuf
    monkeypatch.setenv("TFRECORD_LITE_FASTPATH", "off")
    tfr.parse_example(records, SPEC)
    assert walked == []
    monkeypatch.setenv("TFRECORD_LITE_FASTPATH", "1")
    with tfr.options(engine="numpy"):
        tfr.parse_example(records, SPEC)
    assert walked == [100]
    assert np.asarray(off["a"]).tolist() == np.asarray(expect["a"]).tolist() == list(range(100))
    off_s, expect_s = off["s"], expect["s"]
    assert isinstance(off_s, tfr.SparseValue) and isinstance(expect_s, tfr.SparseValue)
    assert off_s.values.tolist() == expect_s.values.tolist()
    monkeypatch.setenv("TFRECORD_LITE_FASTPATH", "maybe")
    with pytest.raises(ValueError, match="TFRECORD_LITE_FASTPATH='maybe'"):
        tfr.parse_example(records, SPEC)


def test_chunks_parsed_on_threads_see_the_callers_block(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, bool, bool]] = []
    lock = threading.Lock()
    real = _parse.compile_features

    class Watched:
        def __init__(self, features: Any) -> None:
            self.plan = real(features)

        def parse(self, chunk: Any) -> Any:
            with lock:
                seen.append(
                    (
                        _settings.engine(),
                        _settings.fastpath(),
                        threading.current_thread() is threading.main_thread(),
                    )
                )
            return self.plan.parse(chunk)

    monkeypatch.setattr(_threads, "compile_features", Watched)
    records = [tfr.encode_example({"a": i, "s": [b"y"]}) for i in range(400)]
    chunks = [records[i : i + 100] for i in range(0, 400, 100)]
    with tfr.options(engine="numpy", fastpath=False):
        got = list(_threads.parse_chunks(SPEC, chunks, 2))
    assert [np.asarray(p["a"]).tolist() for p in got] == [
        list(range(i, i + 100)) for i in (0, 100, 200, 300)
    ]
    assert len(seen) == 4 and not any(main for *_, main in seen)  # (on the pool's threads)
    assert {(e, f) for e, f, _ in seen} == {("numpy", False)}
    seen.clear()
    assert len(list(_threads.parse_chunks(SPEC, chunks, 2))) == 4  # outside: the defaults
    assert {(e, f) for e, f, _ in seen} == {("auto", True)}


KERNELS_IN_A_BLOCK = (
    "import sys, tfrecord_lite as tfr\n"
    "from tfrecord_lite._examples._engines import _kernels\n"
    "rs = [tfr.encode_example({'a': [i, -i]}) for i in range(100)]\n"
    "with tfr.options(numba_cache_dir=sys.argv[1], engine='jit'):\n"
    "    out = tfr.parse_example(rs, {'a': tfr.VarLenFeature(tfr.int64)})\n"
    "assert out['a'].values.tolist() == [v for i in range(100) for v in (i, -i)]\n"
    "print(_kernels._cache_dir())\n"
)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_NUMBA, reason=NO_NUMBA)
def test_the_kernels_cache_follows_the_block_around_the_first_parse(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "TFRECORD_LITE"))}
    asked = tmp_path / "asked"
    out = subprocess.run(
        [sys.executable, "-c", KERNELS_IN_A_BLOCK, str(asked)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    from tfrecord_lite._examples._engines import _kernels

    folder = asked / f"kernels-{_kernels.kernels_hash()}"
    assert out.stdout.split()[-1] == str(folder)
    assert list(folder.rglob("_jit_kernels.*.nbi"))
