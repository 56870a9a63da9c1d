"""Every fuzz target, run over its seed corpus in the ordinary test suite.

``make fuzz`` runs the targets under libFuzzer (atheris, in a venv of its own) and is not
part of CI. This test replays each target's seeds from ``make_corpus.seeds()`` through its
``TestOneInput`` in ``make test``, with a stand-in for atheris (no instrumentation), so a
target that no longer imports, a check that no longer holds on a known input, or a seed
that crashes the library fails here, on every change.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent


def _stand_in_atheris() -> types.ModuleType:
    fake = types.ModuleType("atheris")

    def instrument_imports(*args: Any, **kwargs: Any) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def _trace_cmp(a: Any, b: Any, op: int, counter: int, is_const: bool) -> Any:
        raise AssertionError("not called without instrumentation")

    fake.instrument_imports = instrument_imports  # type: ignore[attr-defined]
    fake.Setup = lambda *a, **k: None  # type: ignore[attr-defined]
    fake.Fuzz = lambda: None  # type: ignore[attr-defined]
    fake._trace_cmp = _trace_cmp  # type: ignore[attr-defined]
    fake.FuzzedDataProvider = None  # type: ignore[attr-defined]
    version = types.ModuleType("atheris.version_dependent")
    version.CMP_OP_SHIFT_AMOUNT = 0  # type: ignore[attr-defined]
    fake.version_dependent = version  # type: ignore[attr-defined]
    return fake


@pytest.fixture()
def fuzz_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """tests/fuzz on sys.path (its modules import each other by plain name), atheris stood in."""
    if "atheris" not in sys.modules:
        fake = _stand_in_atheris()
        monkeypatch.setitem(sys.modules, "atheris", fake)
        monkeypatch.setitem(sys.modules, "atheris.version_dependent", fake.version_dependent)
    monkeypatch.syspath_prepend(str(HERE))
    yield


def _targets() -> list[str]:
    sys.path.insert(0, str(HERE))
    try:
        run = importlib.import_module("run")
        return list(run.TARGETS)
    finally:
        sys.path.remove(str(HERE))
        sys.modules.pop("run", None)


@pytest.mark.parametrize("target", _targets())
def test_every_seed_passes_its_target(target: str, fuzz_dir: None) -> None:
    corpus = importlib.import_module("make_corpus")
    seeds = corpus.seeds()
    assert seeds.get(target), f"{target} has no seed in make_corpus.seeds()"
    module = importlib.import_module(target)
    for i, seed in enumerate(seeds[target]):
        try:
            module.TestOneInput(seed)
        except Exception as err:  # name the seed that failed
            raise AssertionError(f"{target}: seed {i} ({seed[:40]!r}...) failed: {err!r}") from err


def test_every_target_file_is_listed(fuzz_dir: None) -> None:
    """A target file that run.py does not list is never fuzzed, nor replayed here."""
    files = sorted(p.stem for p in HERE.glob("fuzz_*.py"))
    assert files == sorted(_targets())
