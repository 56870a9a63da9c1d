"""Using an existing index instead of reading its file, and building one index once.

:func:`indexed_count` is how many records a file holds, told by its index without
reading the records: a binary index of a GZIP/ZLIB file is checked against the
file (size, and the hash of its first and last 64 KiB); a text index of a plain
file must tile the file's size record by record, and the first and last records'
headers must be where it says. An index that does not fit is a
:class:`~tfrecord_lite.StaleIndexError`; a text index of a compressed file cannot
be checked without inflating the file, so it gives no count (None).

:func:`known_count` adds the shard-set manifest: a shard of a complete set whose
manifest lists its record count and its size in bytes (checked by one ``stat``).

:func:`ensure_index` builds an index when many processes ask for it at once (the
ranks of a job, each running ``tfrecord-lite index --missing``): one builds it
under a lock file beside the index (``.NAME.index.lock``, ``flock``: dropped by a
killed process), the others wait for the lock, then find the finished index and
keep it. The index itself is written to a temporary file and renamed, so no
reader ever sees a torn one, whether or not it takes the lock.
"""

from __future__ import annotations

import os
import time
from typing import Optional

import numpy as np

from .._record import HEADER_SIZE, LENGTH, RECORD_OVERHEAD, header_ok
from . import _fs, _gzindex
from ._indexfile import (
    StaleIndexError,
    check_gz_index,
    check_index,
    create_index,
    default_index_path,
    find_index,
    load_index,
)
from ._lockfile import PathLock
from ._manifest import SHARD_NAME, manifest_path, read_manifest
from ._shardset import check_shard_set
from ._sniff import detect_compression
from ._writer import FileInUseError

__all__ = ["ensure_index", "indexed_count", "known_count", "lock_path"]

#: Seconds between two tries for the lock of an index another process is building.
_POLL = 0.05


def indexed_count(path: str, index_path: str) -> Optional[int]:
    """The records of ``path`` by its index ``index_path`` (checked: see the module
    documentation); None for a text index of a compressed file."""
    size = _fs.size(path)
    comp = detect_compression(_fs.head(path, 16))
    loaded = load_index(index_path)
    if isinstance(loaded, _gzindex.GzIndex):
        if loaded.compression != comp:
            raise StaleIndexError(
                f"stale index: {index_path!r} is the index of a {loaded.compression} file "
                f"and {path!r} is {comp or 'not compressed'}; rebuild it with create_index()",
                path=index_path,
            )
        check_gz_index(loaded, path, size, index_path)
        return len(loaded.lengths)
    if comp:
        return None
    if loaded.shape[1] == 1:
        offsets = loaded[:, 0]
        table = np.stack([offsets, np.append(offsets[1:], np.int64(size)) - offsets], axis=1)
    else:
        table = loaded
    check_index(table, size, path, index_path)
    for i in {0, len(table) - 1} if len(table) else ():
        start, length = int(table[i, 0]), int(table[i, 1])
        head = _fs.read_range(path, start, HEADER_SIZE)
        if len(head) != HEADER_SIZE or not header_ok(head):
            ok = False
        else:
            ok = LENGTH.unpack_from(head, 0)[0] + RECORD_OVERHEAD == length
        if not ok:
            raise StaleIndexError(
                f"stale index: {index_path!r} says record {i} is {length} bytes at byte "
                f"{start}, which {path!r} does not hold; rebuild it with create_index()",
                path=index_path,
                index=i,
                offset=start,
            )
    return len(table)


def known_count(path: str) -> Optional[tuple[int, str]]:
    """How many records ``path`` holds without reading them, and where that comes
    from (``"index NAME"``, ``"manifest NAME"``), or None where nothing tells.

    The index first (:func:`indexed_count`; a stale one raises
    :class:`~tfrecord_lite.StaleIndexError`), then the manifest of a complete shard
    set that lists the file's size, which must be the file's (an incomplete set
    raises :class:`~tfrecord_lite.IncompleteShardSetError`)."""
    index = find_index(path)
    if index is not None:
        n = indexed_count(path, index)
        if n is not None:
            return n, f"index {index}"
    directory, base = _fs.split(path)
    m = SHARD_NAME.match(base)
    if m is None:
        return None
    check_shard_set([path], whole=False)
    name = manifest_path(_fs.join(directory, m.group("name")), m.group("suffix"))
    body = read_manifest(name)
    if body is None or not body.complete:
        return None
    entry = next((s for s in body.shards if s.name == base), None)
    if entry is None or entry.size is None or entry.size != _fs.size(path):
        return None
    return entry.records, f"manifest {name}"


def lock_path(index_path: str) -> str:
    """The lock file beside ``index_path``: ``.NAME.lock``, hidden."""
    directory, base = os.path.split(index_path)
    return os.path.join(directory, f".{base}.lock")


def ensure_index(
    path: str,
    index_path: Optional[str] = None,
    *,
    keep: bool = True,
    format: str = "auto",
    timeout: Optional[float] = None,
) -> tuple[str, bool]:
    """Build the index of ``path`` once: ``(index path, whether this call built it)``.

    With ``keep``, an index that fits the file (:func:`indexed_count`) is kept;
    without, it is built again. A local index is built under its lock file, so of
    several processes asking at once one builds and the others wait for it (at
    most ``timeout`` seconds, None: as long as it takes; then
    :class:`~tfrecord_lite.FileInUseError`) and keep the finished index.
    """
    dest = index_path if index_path is not None else default_index_path(path)
    if keep and _fits(path, dest, format):
        return dest, False
    if _fs.is_url(dest):
        return create_index(path, dest, format=format), True
    lock = _take(lock_path(dest), dest, timeout)
    try:
        if keep and _fits(path, dest, format):  # built by the holder we waited for
            return dest, False
        return create_index(path, dest, format=format), True
    finally:
        lock.release()


def _fits(path: str, dest: str, format: str) -> bool:
    if not _fs.isfile(dest):
        return False
    if format != "auto":
        with _fs.open_read(dest) as f:
            binary = f.read(len(_gzindex.MAGIC)) == _gzindex.MAGIC
        if binary != (format == "binary"):
            return False
    try:
        return indexed_count(path, dest) is not None
    except StaleIndexError:
        return False


def _take(name: str, dest: str, timeout: Optional[float]) -> PathLock:
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            return PathLock(
                name, dest, "It is being built by another process; wait for it, or remove the lock"
            )
        except FileInUseError:
            if deadline is not None and time.monotonic() >= deadline:
                raise
            time.sleep(_POLL)
