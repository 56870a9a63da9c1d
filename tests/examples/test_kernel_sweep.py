"""Folders of compiled kernels that other versions left behind are removed: only old
ones, only in our own private cache directory, only folders named as ours, never
through a symbolic link.

Each change to a kernel source compiles the kernels into a new ``kernels-<hash>``
folder (the cache is named by a hash of every kernel source); the old folders stayed
there for ever.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tfrecord_lite._examples._engines import _kernels
from tfrecord_lite._files import UnsafeDirectoryError

OLD = time.time() - 2 * _kernels.STALE_AFTER


def _folder(path: Path, *, old: bool) -> Path:
    (path / "sub").mkdir(parents=True)
    (path / "sub" / "_jit_kernels.walk_examples-1.py311.1.nbc").write_bytes(b"compiled")
    if old:
        os.utime(path, (OLD, OLD))
    return path


def test_old_folders_of_other_versions_are_removed_and_nothing_else(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    stale = _folder(root / "kernels-0123456789abcdef", old=True)
    recent = _folder(root / "kernels-fedcba9876543210", old=False)  # another version, in use
    odd_name = _folder(root / "kernels-old", old=True)
    other = _folder(root / "notes", old=True)
    not_a_folder = root / "kernels-aaaaaaaaaaaaaaaa"
    not_a_folder.write_bytes(b"")
    os.utime(not_a_folder, (OLD, OLD))
    victim = _folder(tmp_path / "elsewhere", old=True)
    link = root / "kernels-bbbbbbbbbbbbbbbb"
    link.symlink_to(victim)
    os.utime(link, (OLD, OLD), follow_symlinks=False)

    mine = Path(_kernels._private_folder(str(root)))

    assert mine.name == f"kernels-{_kernels.kernels_hash()}" and mine.is_dir()
    assert not stale.exists()
    assert recent.exists() and odd_name.exists() and other.exists() and not_a_folder.exists()
    assert link.is_symlink() and (victim / "sub").is_dir()  # neither the link nor its target
    assert len(list(victim.rglob("*.nbc"))) == 1


def test_the_folder_in_use_is_kept_however_old(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    mine = _folder(root / f"kernels-{_kernels.kernels_hash()}", old=True)
    assert Path(_kernels._private_folder(str(root))) == mine
    assert (mine / "sub").is_dir()
    assert time.time() - mine.stat().st_mtime < _kernels.STALE_AFTER  # its use renewed


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="no POSIX users: modes are not checked")
def test_nothing_is_removed_from_a_directory_others_may_write(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    stale = _folder(root / "kernels-0123456789abcdef", old=True)
    root.chmod(0o777)
    with pytest.raises(UnsafeDirectoryError):
        _kernels._private_folder(str(root))
    assert (stale / "sub").is_dir()
