"""The compiled kernels' cache: never one another user could have written, and repaired
when damaged.

numba reads a cache's index files with ``pickle``, so a cache directory another local
user planted would run that user's code in ours. These tests plant one the way an
attacker would (a world-writable directory, or one owned by another user, under the
predictable name in the temporary folder, holding a pickle that leaves a mark when it
is loaded) and run a real compiled parse in a fresh process.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tfrecord_lite._files import UnsafeDirectoryError, private_directory, why_unsafe

HAS_NUMBA = importlib.util.find_spec("numba") is not None
NO_NUMBA = "numba is not installed (the jit extra): the compiled engine is not tested here"
ROOT = hasattr(os, "getuid") and os.getuid() == 0
OTHER_UID = 65534  # nobody

PARSE = (
    "import tfrecord_lite as tfr\n"
    "rs = [tfr.encode_example({'a': [i, -i], 'b': b'x' * (i % 3)}) for i in range(100)]\n"
    "spec = {'a': tfr.VarLenFeature(tfr.int64), 'b': tfr.FixedLenFeature([], tfr.string)}\n"
    "out = tfr.parse_example(rs, spec)\n"
    "assert out['a'].values.tolist() == [v for i in range(100) for v in (i, -i)]\n"
    "assert out['b'].tolist() == [b'x' * (i % 3) for i in range(100)]\n"
    "from tfrecord_lite._examples._engines import _kernels\n"
    "kern = _kernels.load()\n"
    "hits = sum(sum(d.stats.cache_hits.values()) for d in kern.__dict__.values()\n"
    "           if hasattr(d, 'stats'))\n"
    "print('hits', hits)\n"
)
# Where neither the package's __pycache__ nor the user's cache folder may be written,
# the cache goes to the temporary folder: this process cannot write the package's
# folder, and its XDG cache home is a file.
NO_OTHER_PLACE = "from tfrecord_lite._examples._engines import _kernels\n_kernels._writable = lambda path: False\n"


class _Mark:
    """A pickle that creates a directory when it is loaded (the attacker's code)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (os.mkdir, (self.path,))


def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "TFRECORD_LITE"))}
    home_file = tmp / "not-a-folder"
    home_file.write_text("")
    env.update(TFRECORD_LITE_ENGINE="jit", TMPDIR=str(tmp), XDG_CACHE_HOME=str(home_file))
    env.update(extra)
    return env


def test_a_private_directory_is_created_0700(tmp_path: Path) -> None:
    made = private_directory(str(tmp_path / "a" / "b"))
    assert stat.S_IMODE(os.stat(made).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o700
    assert private_directory(made) == made  # an existing one of ours is used as it is


def test_a_directory_others_may_write_is_refused(tmp_path: Path) -> None:
    planted = tmp_path / "planted"
    planted.mkdir()
    planted.chmod(0o777)
    if not hasattr(os, "getuid"):
        pytest.skip("no POSIX users on this system: modes are not checked")
    with pytest.raises(UnsafeDirectoryError) as err:
        private_directory(str(planted))
    assert isinstance(err.value, PermissionError)
    assert err.value.path == str(planted)
    assert "writable by other users (mode 0777)" in str(err.value)
    assert stat.S_IMODE(os.stat(planted).st_mode) == 0o777  # left as it was


def test_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert why_unsafe(str(tmp_path / "link")) == "is a symbolic link"
    with pytest.raises(UnsafeDirectoryError):
        private_directory(str(tmp_path / "link"))


@pytest.mark.skipif(not ROOT, reason="giving a directory to another user needs root (CI is)")
def test_a_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, OTHER_UID, OTHER_UID)
    reason = why_unsafe(str(theirs))
    assert reason is not None and f"owned by user {OTHER_UID}" in reason
    with pytest.raises(UnsafeDirectoryError):
        private_directory(str(theirs))


def _plant(tmp: Path, owner_other: bool) -> tuple[Path, Path]:
    """The attacker's cache at the predictable name, holding real index names of the
    kernels (made by a real compile into it) whose contents are a marking pickle."""
    planted = tmp / f"tfrecord_lite-numba-{os.getuid()}"
    planted.mkdir(mode=0o700)
    made = _run(PARSE, _env(tmp, NUMBA_CACHE_DIR=str(planted)))
    assert made.returncode == 0, made.stderr
    mark = tmp / "attacker-code-ran"
    indexes = list(planted.rglob("*.nbi"))
    assert indexes
    for index in indexes:
        index.write_bytes(pickle.dumps(_Mark(str(mark))))
    for folder in [planted, *[p for p in planted.rglob("*") if p.is_dir()]]:
        folder.chmod(0o777)
        if owner_other:
            os.chown(folder, OTHER_UID, OTHER_UID)
    return planted, mark


@pytest.mark.slow
@pytest.mark.skipif(not HAS_NUMBA, reason=NO_NUMBA)
@pytest.mark.parametrize(
    "owner_other",
    [
        False,
        pytest.param(
            True,
            marks=pytest.mark.skipif(
                not ROOT, reason="giving a directory to another user needs root (CI is)"
            ),
        ),
    ],
    ids=["world-writable", "another-users"],
)
def test_a_planted_cache_in_the_temporary_folder_is_never_loaded(
    tmp_path: Path, owner_other: bool
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    planted, mark = _plant(tmp, owner_other)
    victim = _run(NO_OTHER_PLACE + PARSE, _env(tmp))
    assert victim.returncode == 0, victim.stderr
    assert not mark.exists(), "a pickle from another user's cache directory was loaded"
    assert "it is not used as a cache" in victim.stderr  # the RuntimeWarning says why
    assert str(planted) in victim.stderr
    # The process compiled into a directory of its own, removed when it exited.
    assert [p.name for p in tmp.iterdir() if p.name.startswith("tfrecord_lite-numba-")] == [
        planted.name
    ]


@pytest.mark.slow
@pytest.mark.skipif(not HAS_NUMBA, reason=NO_NUMBA)
def test_the_temporary_folder_cache_is_created_private_and_reused(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    first = _run(NO_OTHER_PLACE + PARSE, _env(tmp))
    assert first.returncode == 0, first.stderr
    made = tmp / f"tfrecord_lite-numba-{os.getuid()}"
    assert stat.S_IMODE(os.stat(made).st_mode) == 0o700
    again = _run(NO_OTHER_PLACE + PARSE, _env(tmp))
    assert again.returncode == 0, again.stderr
    assert int(again.stdout.split()[-1]) > 0  # loaded from the cache, not compiled again


@pytest.mark.slow
@pytest.mark.skipif(not HAS_NUMBA, reason=NO_NUMBA)
def test_a_corrupt_cache_is_repaired_for_later_processes(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = _env(tmp_path, NUMBA_CACHE_DIR=str(cache))
    first = _run(PARSE, env)
    assert first.returncode == 0, first.stderr
    damaged = [p for p in cache.rglob("*") if p.suffix in (".nbi", ".nbc")]
    assert damaged
    for p in damaged:
        p.write_bytes(b"not a cache" * 3)
    repaired = _run(PARSE, env)
    assert repaired.returncode == 0, repaired.stderr
    assert all(p.read_bytes() != b"not a cache" * 3 for p in damaged if p.exists())
    later = _run(PARSE, env)
    assert later.returncode == 0, later.stderr
    assert int(later.stdout.split()[-1]) > 0  # the repaired cache is read, not recompiled


@pytest.mark.slow
@pytest.mark.skipif(not HAS_NUMBA, reason=NO_NUMBA)
def test_a_cache_dir_asked_for_that_others_may_write_is_passed_over(tmp_path: Path) -> None:
    asked = tmp_path / "shared"
    asked.mkdir()
    asked.chmod(0o777)
    out = _run(PARSE, _env(tmp_path, NUMBA_CACHE_DIR=str(asked)))
    assert out.returncode == 0, out.stderr
    assert "NUMBA_CACHE_DIR is not used for the compiled kernels" in out.stderr
    assert not list(asked.iterdir())


AUTO_FIRST_BATCH = (
    "import time, tfrecord_lite as tfr\n"
    "from tfrecord_lite._examples._engines import _choose, _kernels\n"
    "rs = [tfr.encode_example({'a': list(range(i % 7)), 'b': b'x' * (i % 5)})\n"
    "      for i in range(1024)]\n"
    "spec = {'a': tfr.VarLenFeature(tfr.int64), 'b': tfr.FixedLenFeature([], tfr.string)}\n"
    "t = time.perf_counter()\n"
    "out = tfr.parse_example(rs, spec)\n"
    "first = time.perf_counter() - t\n"
    "assert out['a'].values.tolist() == [v for i in range(1024) for v in range(i % 7)]\n"
    "print('loaded-after-first', _kernels.loaded())\n"
    "print('first-seconds', round(first, 3))\n"
)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_NUMBA, reason=NO_NUMBA)
def test_auto_never_waits_for_a_compile_and_the_cache_fills_anyway(tmp_path: Path) -> None:
    cache = tmp_path / "cold"
    env = _env(tmp_path, NUMBA_CACHE_DIR=str(cache))
    del env["TFRECORD_LITE_ENGINE"]  # auto
    # A short process: its first batch goes through the NumPy engine (no compile in
    # its way), and it exits at once; the kernels compile in a process of their own,
    # which fills the cache.
    out = _run(AUTO_FIRST_BATCH, env)
    assert out.returncode == 0, out.stderr
    assert "loaded-after-first False" in out.stdout
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(cache.rglob("_jit_kernels.*.nbi"))) < 1:
        time.sleep(0.5)
    assert list(cache.rglob("_jit_kernels.*.nbi")), "the compile left no cache behind"
    # A later process finds the cache filled: loading it in the background is quick,
    # and auto takes the kernels once they are there.
    later = _run(
        AUTO_FIRST_BATCH
        + "assert _kernels.wait(timeout=60)\n"
        + "assert _choose.choose(1024) == 'jit'\n"
        + "kern = _kernels.load()\n"
        + "print('hits', sum(sum(d.stats.cache_hits.values()) for d in kern.__dict__.values()\n"
        + "                  if hasattr(d, 'stats')))\n",
        env,
    )
    assert later.returncode == 0, later.stderr
    assert int(later.stdout.split()[-1]) > 0


SEQUENCE_HITS = (
    "import tfrecord_lite as tfr\n"
    "from tfrecord_lite._examples._engines import _kernels\n"
    "rs = [tfr.encode_sequence_example({'c': [i]}, {'f': [[i], [i, 1]]}) for i in range(80)]\n"
    "ctx, seq = {'c': tfr.FixedLenFeature([], tfr.int64)}, {'f': tfr.VarLenFeature(tfr.int64)}\n"
    "c, s = tfr.parse_sequence_example(rs, ctx, seq)[:2]\n"
    "assert c['c'].tolist() == list(range(80))\n"
    "assert s['f'].values.tolist() == [v for i in range(80) for v in (i, i, 1)]\n"
    "def hits(m):\n"
    "    return sum(sum(d.stats.cache_hits.values()) for d in m.__dict__.values()\n"
    "               if hasattr(d, 'stats') and d.__module__ == m.__name__)\n"
    "print('hits', hits(_kernels.load()), hits(_kernels.load('_jit_sequences')))\n"
)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_NUMBA, reason=NO_NUMBA)
def test_a_changed_kernel_source_never_loads_an_old_compile(tmp_path: Path) -> None:
    # numba checks a cached function against its own file's time stamp only: the
    # sequence kernels (which call and inline _jit_kernels' functions) were loaded
    # from the cache after only _jit_kernels.py had changed. The cache folder is named
    # by a hash of every kernel source together, so any change compiles them all.
    import shutil

    import tfrecord_lite

    copy = tmp_path / "src"
    shutil.copytree(
        Path(tfrecord_lite.__file__).parent,
        copy / "tfrecord_lite",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    env = _env(tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(copy))

    def run() -> list[int]:
        code = SEQUENCE_HITS + "print(tfr.__file__)\n"
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=copy
        )
        assert out.returncode == 0, out.stderr
        *_, first, second, where = out.stdout.split()
        assert where == str(copy / "tfrecord_lite" / "__init__.py")  # the copy's code
        return [int(first), int(second)]

    assert run() == [0, 0]  # compiled
    first, second = run()
    assert first > 0 and second > 0  # loaded from the cache
    kernels = copy / "tfrecord_lite" / "_examples" / "_engines" / "_jit_kernels.py"
    kernels.write_text(kernels.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    assert run() == [0, 0]  # both compiled again, not only the changed file's
    first, second = run()
    assert first > 0 and second > 0
    folders = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(folders) == 2 and all(f.startswith("kernels-") for f in folders)
