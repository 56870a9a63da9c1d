"""A process started with ``spawn`` imports the test modules as the run did.

Tests that hand a module-level function to a ``spawn`` pool (tests/files/
test_damaged_and_crash_safe.py does) need the child to import their module, and with it
``from conftest import ...``. The child gets the parent's ``sys.path``, where pytest has
put every test folder that it imported a ``conftest.py`` from (the last one first), so a
second ``conftest.py`` in a folder collected after tests/files (tests/wheel had one) is
the ``conftest`` the child finds: the import fails in the worker, the pool replaces the
worker, the task is lost and the parent waits for ever. The full suite hung so; a test
file run alone did not. This test runs last in a full run (tests/wheel sorts after the
other folders) and fails, instead of hanging, if ``conftest`` is not tests/conftest.py.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _conftest_file() -> str:
    import conftest

    return str(Path(conftest.__file__ or "").resolve())


def test_a_spawned_process_imports_the_shared_conftest() -> None:
    # ProcessPoolExecutor reports a worker that dies (BrokenProcessPool) instead of waiting.
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        found = pool.submit(_conftest_file).result(timeout=120)
    assert found == str(TESTS / "conftest.py")


def test_only_the_environment_folders_have_a_conftest_of_their_own() -> None:
    # tests/cloud, tests/cluster and tests/engines run in their own venvs (make test-cloud /
    # test-cluster / test-engines), tests/interop under make interop; any other folder's
    # conftest.py would shadow tests/conftest.py in spawned processes, as above.
    own = sorted(p.parent.name for p in TESTS.glob("*/conftest.py"))
    assert set(own) <= {"cloud", "cluster", "engines", "interop"}, own
