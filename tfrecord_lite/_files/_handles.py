"""Open files: opening a path or URL as a binary file, and what can be known of an open one.

:func:`open_binary` opens a local path with the builtin ``open`` and a URL through
:mod:`tfrecord_lite._files._fs`; the rest answer questions about an open file
(its name, whether it is a local regular file, where reading starts, how many bytes
are left) and write or close it whatever kind of object it is.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
from collections.abc import Iterator
from typing import IO, Optional, TypeVar, Union

from . import _fs

__all__ = [
    "Closing",
    "close_quietly",
    "create_parent",
    "describe",
    "is_local_file",
    "named_for",
    "open_binary",
    "remaining_size",
    "start_position",
    "write_all",
]


_builtin_open = open


def open_binary(path: str, mode: str, buffering: int = -1) -> IO[bytes]:
    if _fs.is_url(path):  # fsspec URLs: see tfrecord_lite._files._fs
        if mode.replace("b", "") == "r":
            return _fs.open_read(path)
        if mode.replace("b", "") == "w":
            return _fs.open_write(path).file
        raise ValueError(f"mode {mode!r} is not supported for the URL {path!r}")
    return _builtin_open(path, mode, buffering=buffering)


def is_local_file(f: object) -> bool:
    """Whether ``f`` reads a regular file of this machine (not a pipe, socket or URL)."""
    try:
        return stat.S_ISREG(os.fstat(f.fileno()).st_mode)  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return False


def describe(source: object) -> Optional[str]:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else None


def write_all(f: IO[bytes], data: Union[bytes, bytearray, memoryview]) -> None:
    """``f.write(data)``, repeated until every byte is written.

    A raw file (``open(..., buffering=0)``, or one passed in) may write fewer bytes
    than asked: Linux writes at most 2**31 - 4096 bytes per call, pipes and signals
    cut writes short. Objects whose ``write`` returns ``None`` are taken to have
    written everything.
    """
    view = memoryview(data)
    while view:
        n = f.write(view)
        if n is None or n >= len(view):
            return
        view = view[n:]


def start_position(f: IO[bytes]) -> Optional[int]:
    """Where reading ``f`` starts, if it can seek back there later; else None."""
    try:
        return f.tell() if f.seekable() else None
    except (OSError, AttributeError, ValueError):
        return None


def remaining_size(f: IO[bytes]) -> Optional[int]:
    try:
        if not f.seekable():
            return None
        if isinstance(f, _fs.RemoteReader):
            return f.size - f.tell()
        return os.fstat(f.fileno()).st_size - f.tell()
    except (OSError, AttributeError, ValueError):
        return None


def close_quietly(it: object) -> None:
    close = getattr(it, "close", None)
    if close is not None:
        close()


_C = TypeVar("_C", bound="Closing")


class Closing:
    """``with`` closes it, and so does garbage collection (quietly): for the readers
    that hold an open file (a subclass defines ``close``, idempotent)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def create_parent(path: str) -> None:
    """Create the missing folders above the local file ``path`` (object stores need none).

    A folder that cannot be made (a file in the way, no permission) is an ``OSError``
    of the same kind that names ``path``, the file the caller asked for.
    """
    if _fs.is_url(path):
        return
    parent = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as err:
        raise type(err)(
            err.errno, f"cannot create the folder {parent!r} to write it: {err.strerror}", path
        ) from None


@contextlib.contextmanager
def named_for(path: str, hidden: str) -> Iterator[None]:
    """An ``OSError`` about ``hidden`` (a temporary name the user never chose) re-raised
    naming ``path``, the user's, with the hidden name told after."""
    try:
        yield
    except OSError as err:
        if err.filename is None or os.fspath(err.filename) != os.fspath(hidden):
            raise
        detail = err.strerror or str(err)
        raise type(err)(
            err.errno, f"{detail} (writing its temporary file {str(hidden)!r})", str(path)
        ) from None
