"""One path abstraction for every entry point: local paths and fsspec URLs.

Local paths (``str``, ``os.PathLike``, ``file://...``) go to the operating system,
here. Anything else with ``://`` (``s3://``, ``gs://``, ``memory://``, ``az://`` ...)
goes through `fsspec <https://filesystem-spec.readthedocs.io>`_, imported only when a
URL is used; ``s3://`` needs ``pip install "tfrecord-lite-np[s3]"``, ``gs://``
``pip install "tfrecord-lite-np[gcs]"``. Each function here takes either and
dispatches; what URLs need lives beside it: :mod:`._urls` (URLs, their
filesystem and errors), :mod:`._remote_read` (ranged reads with read-ahead) and
:mod:`._remote_write` (uploads).

``storage_options`` (the keyword pandas and fsspec use) are the keyword arguments
of the fsspec filesystem, e.g. ``{"key": ..., "secret": ..., "client_kwargs":
{"endpoint_url": ...}}`` for s3fs or ``{"token": ...}`` for gcsfs. Without them the
filesystem finds credentials as it always does (environment variables, config
files, instance metadata). :func:`bind` attaches the options to a URL string
(:class:`URL`, a ``str``), so a URL carries them wherever it goes: through
listings, into datasets, and across pickling to worker processes.

Reading a URL (:func:`open_read`) fetches the object in large ranged requests
(:data:`REMOTE_BLOCK_SIZE`), with the next block requested in the background
while the current one is parsed; :func:`prefetch` starts fetching files before
they are opened (datasets use it to fetch ``num_parallel_reads`` objects at once).
:func:`read_range` is one ranged request (random access).

Writing a URL (:func:`open_write`): on object stores (``s3``, ``gs``, ``az`` ...) an
upload becomes visible only when it is complete, so an object is never seen half
written; ``atomic=True`` additionally aborts the upload on an error (nothing appears
under the name, an older object stays as it was). Elsewhere (``memory://``, ``sftp://``
...) an atomic write goes to a hidden temporary name beside the target, moved onto it
when complete.

Errors name the path or URL and never show the filesystem library's internals:
``FileNotFoundError`` for a missing object or bucket, ``PermissionError`` for
refused credentials, ``ImportError`` with the ``pip install`` line for a missing
filesystem package.
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import IO, Callable, Optional

from ._remote_read import REMOTE_BLOCK_SIZE, RemoteReader, fetch, prefetch
from ._remote_write import abort_uploads, open_upload
from ._urls import (
    URL,
    bind,
    errors,
    filesystem,
    full_url,
    is_url,
    join,
    object_size,
    split,
    stat,
    temp_name,
)

__all__ = [
    "REMOTE_BLOCK_SIZE",
    "URL",
    "Output",
    "RemoteReader",
    "abort_uploads",
    "bind",
    "exists",
    "filesystem",
    "fsync_directory",
    "glob",
    "head",
    "is_url",
    "isdir",
    "isfile",
    "join",
    "listdir",
    "open_read",
    "open_write",
    "prefetch",
    "read_range",
    "remove",
    "rename",
    "size",
    "split",
]

_builtin_open = open


# --------------------------------------------------------------------------- queries


def exists(path: str) -> bool:
    """True if ``path`` is an existing file or directory."""
    if not is_url(path):
        return os.path.exists(path)
    return stat(path) is not None


def isfile(path: str) -> bool:
    """True if ``path`` is an existing file (object)."""
    if not is_url(path):
        return os.path.isfile(path)
    info = stat(path)
    return info is not None and info.get("type") == "file"


def isdir(path: str) -> bool:
    """True if ``path`` is a directory (a prefix with objects under it)."""
    if not is_url(path):
        return os.path.isdir(path)
    if str(path).endswith("/"):
        return True
    info = stat(path)
    return info is not None and info.get("type") == "directory"


def size(path: str) -> int:
    """The size of a file in bytes."""
    if not is_url(path):
        return os.stat(path).st_size
    return object_size(path)


def listdir(path: str) -> list[tuple[str, bool]]:
    """``(full path, is_file)`` of every entry of a directory, sorted by name."""
    if not is_url(path):
        out = []
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            out.append((full, os.path.isfile(full)))
        return out
    fs, p = filesystem(path)
    with errors(path, "list"):
        entries = fs.ls(p.rstrip("/"), detail=True)
    result = [(full_url(path, e["name"]), e.get("type") == "file") for e in entries]
    return sorted(result)


def glob(pattern: str) -> list[str]:
    """The files matching a glob pattern (``*``, ``?``, ``[...]``; ``**`` recursive), sorted."""
    if not is_url(pattern):
        import glob as _glob

        return sorted(p for p in _glob.glob(pattern) if not os.path.isdir(p))
    fs, p = filesystem(pattern)
    with errors(pattern, "list"):
        found = fs.glob(p, detail=True)
    return sorted(
        full_url(pattern, name) for name, info in found.items() if info.get("type") == "file"
    )


def remove(path: str) -> None:
    """Delete a file (no error if it is already gone)."""
    if not is_url(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    fs, p = filesystem(path)
    with errors(path, "delete"), contextlib.suppress(FileNotFoundError):
        fs.rm_file(p)


def rename(src: str, dst: str) -> None:
    """Move ``src`` onto ``dst`` (replacing it). On object stores: a server-side copy,
    then the source is deleted; ``dst`` appears complete when the copy completes."""
    if not is_url(src):
        os.replace(src, dst)
        return
    fs, p = filesystem(src)
    _, q = filesystem(dst)
    with errors(dst, "write"):
        fs.mv(p, q)


# --------------------------------------------------------------------------- reading


def read_range(path: str, start: int, length: int) -> bytes:
    """``length`` bytes at ``start`` (fewer at the end of the file): one ranged request."""
    if length <= 0:
        return b""
    if not is_url(path):
        with _builtin_open(path, "rb", buffering=0) as f:
            f.seek(start)
            parts = []
            got = 0
            while got < length:
                chunk = f.read(length - got)
                if not chunk:
                    break
                parts.append(chunk)
                got += len(chunk)
            return b"".join(parts)
    return fetch(path, start, start + length)


def head(path: str, n: int = 16) -> bytes:
    """The first ``n`` bytes of a file (one small ranged request for a URL)."""
    if not is_url(path):
        return read_range(path, 0, n)
    total = size(path)
    return fetch(path, 0, min(n, total)) if total else b""


def open_read(path: str, block_size: Optional[int] = None) -> IO[bytes]:
    """Open a file for reading: a local file (unbuffered) or a URL with read-ahead."""
    if not is_url(path):
        return _builtin_open(path, "rb", buffering=0)
    return RemoteReader(path, max(block_size or 0, REMOTE_BLOCK_SIZE))  # type: ignore[return-value]


# --------------------------------------------------------------------------- writing


class Output:
    """A file being written: :attr:`file`, then :meth:`commit` (done) or :meth:`discard`.

    ``commit`` makes the data visible under its name; ``discard`` of an atomic
    output leaves nothing under the name (and an older file there as it was);
    ``discard`` of a non-atomic one keeps what was written, as closing a file does.
    """

    def __init__(
        self,
        path: str,
        file: IO[bytes],
        atomic: bool,
        commit: Callable[[], None],
        discard: Callable[[], None],
    ) -> None:
        self.path = path
        self.file = file
        self.atomic = atomic
        self._commit = commit
        self._discard = discard
        self.done = False

    def commit(self) -> None:
        """Finish: the file is complete under :attr:`path`."""
        if not self.done:
            self.done = True
            self._commit()

    def discard(self) -> None:
        """Give up: an atomic output leaves nothing; a plain one keeps what was written."""
        if not self.done:
            self.done = True
            self._discard()

    def sync(self) -> None:
        """Ask the operating system to put the data on disk (local files only)."""
        fileno = getattr(self.file, "fileno", None)
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            if fileno is not None:
                os.fsync(fileno())


def fsync_directory(path: str) -> None:
    """Make a rename in local directory ``path`` durable (best effort: not every OS can open a
    directory)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def open_write(path: str, *, atomic: bool = False, append: bool = False) -> Output:
    """Open ``path`` for writing (created or truncated; appended to with ``append``).

    ``atomic``: the data appears under ``path`` only at :meth:`Output.commit`, whole;
    :meth:`Output.discard` leaves nothing (locally: a temporary file renamed at
    commit; object stores: an upload completed at commit, aborted at discard;
    other URLs: a temporary object moved at commit). Appending to a URL rewrites the
    object (:mod:`tfrecord_lite._files._append`).
    """
    if not is_url(path):
        if atomic:
            tmp = temp_name(path)
            f = _builtin_open(tmp, "xb", buffering=0)

            def commit() -> None:
                try:
                    f.flush()
                    os.fsync(f.fileno())
                    f.close()
                    os.replace(tmp, path)
                except BaseException:
                    f.close()
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
                    raise
                fsync_directory(os.path.dirname(os.path.abspath(path)))

            def discard() -> None:
                f.close()
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

            return Output(path, f, True, commit, discard)
        f = _builtin_open(path, "ab" if append else "wb", buffering=0)
        return Output(path, f, False, f.close, f.close)
    if append:
        raise ValueError("open_write(append=True) is for local files (a URL is rewritten)")
    file, commit_upload, discard_upload = open_upload(path, atomic)
    return Output(path, file, atomic, commit_upload, discard_upload)
