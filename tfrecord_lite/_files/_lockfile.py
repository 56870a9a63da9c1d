"""A lock file held for a writer's whole life: one writer of a shard set at a time.

:class:`PathLock` takes an exclusive advisory lock (``flock``) on a hidden file
beside what it protects (``.train.shards.lock`` for the shard set ``train``), and
refuses with :class:`~tfrecord_lite._files._writer.FileInUseError` when another
writer, in this process or another, holds it. The lock belongs to the open file, so
a process that dies (SIGKILL included) drops it: a lock file left behind blocks no
one. On release the file is removed while still locked; a locker checks, once it has
the lock, that the name still leads to the file it locked, so a file being removed
is never taken for a free one. A process forked while the lock is held does not keep
it (its descriptor is pointed at ``/dev/null``), so the parent's release frees it.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from typing import Optional

from ._writer import FileInUseError

__all__ = ["PathLock"]

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock
    fcntl = None  # type: ignore[assignment]


class PathLock:
    """An exclusive ``flock`` on ``path`` (created if missing), held until :meth:`release`.

    ``what`` names what is protected (the user's path, for the error) and ``advice``
    says what to do when it is held by another writer.
    """

    def __init__(self, path: str, what: str, advice: str) -> None:
        self.path = path
        self._fd: Optional[int] = None
        self._pid = os.getpid()
        if fcntl is None:  # pragma: no cover - not POSIX
            return
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        while True:
            fd = os.open(path, flags, 0o600)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise FileInUseError(
                        f"another writer (in this process or another) is writing {what!r}: "
                        f"a second one would destroy its files. {advice}",
                        path=what,
                    ) from None
                mine = os.fstat(fd)
                try:
                    now = os.stat(path)
                except FileNotFoundError:
                    now = None
            except BaseException:
                os.close(fd)
                raise
            if now is not None and (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
                break
            os.close(fd)  # removed by its last holder while we waited: take the new one
        self._fd = fd
        _HELD.add(self)

    @property
    def held(self) -> bool:
        """True until :meth:`release`."""
        return self._fd is not None

    def release(self) -> None:
        """Remove the lock file and drop the lock (again: nothing)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if self._pid == os.getpid():
                with contextlib.suppress(OSError):
                    os.unlink(self.path)  # still locked: no one takes it before it is gone
        finally:
            os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.release()


#: Locks held in this process: a forked child gives them up.
_HELD: weakref.WeakSet[PathLock] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for lock in list(_HELD):
        fd = lock._fd
        if fd is None:
            continue
        # The flock is the open file description's, shared with the parent: point the
        # child's descriptor elsewhere, so that only the parent holds the lock.
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_RDONLY)
            try:
                os.dup2(null, fd)
            finally:
                os.close(null)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
