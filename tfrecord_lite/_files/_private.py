"""Directories private to the user: where caches may be kept and read back.

A cache holds what a later process trusts: the compiled kernels' cache is read with
``pickle`` (numba's index files), and a cached record index decides which bytes are
returned as a record. So a cache directory must be one that no other local user could
have written to. :func:`private_directory` gives such a directory or says why it
cannot:

* a directory it creates is created with mode ``0700`` (each missing level);
* an existing one is used only when it is a real directory (not a symbolic link),
  owned by the user of this process, and writable by nobody else (no group or
  other write bit, see :func:`why_unsafe`);
* anything else is refused with :class:`UnsafeDirectoryError` (a
  :class:`PermissionError`), naming the directory, its owner and its mode, and what
  to do: the directory is never taken over, changed or emptied.

A directory under a shared temporary folder (``/tmp``) is the case this guards:
anyone can create ``/tmp/<name>`` first. On systems without ``os.getuid``
(Windows), ownership is not checked.
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import Optional

from .._errors import TFRecordError

__all__ = ["UnsafeDirectoryError", "private_directory", "why_unsafe"]


class UnsafeDirectoryError(TFRecordError, PermissionError):
    """A cache or temporary directory that another user owns or may write to
    (``path`` names it)."""


def _uid() -> Optional[int]:
    getuid = getattr(os, "getuid", None)
    return None if getuid is None else int(getuid())


def why_unsafe(path: str) -> Optional[str]:
    """Why ``path`` (an existing entry) may not hold a cache, or None when it may:
    not a directory, a symbolic link, owned by another user, or writable by the
    group or by others."""
    try:
        st = os.lstat(path)
    except OSError as err:
        return f"cannot be examined ({err.strerror or err})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    uid = _uid()
    if uid is not None and st.st_uid != uid:
        return f"is owned by user {st.st_uid}, not by this process's user {uid}"
    mode = stat.S_IMODE(st.st_mode)
    if uid is not None and mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by other users (mode {mode:04o})"
    return None


def private_directory(path: str) -> str:
    """``path`` as a directory private to this user, created (``0700``) if missing.

    Raises :class:`UnsafeDirectoryError` when it exists but another user owns it,
    others may write to it or it is a link, and :class:`OSError` when it cannot be
    created."""
    path = os.path.abspath(path)
    missing = []
    head = path
    while not os.path.lexists(head):
        missing.append(head)
        parent = os.path.dirname(head)
        if parent == head:
            break
        head = parent
    for level in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile: examined below
            os.mkdir(level, 0o700)
    reason = why_unsafe(path)
    if reason is not None:
        raise UnsafeDirectoryError(
            f"the directory {reason}: it is not used as a cache, since another user could have "
            "written what would be read from it. Remove it if it is not yours, or point "
            "the cache at a directory of your own",
            path=path,
        )
    return path
