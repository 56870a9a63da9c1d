"""A shard set's manifest file: writing it, and reading it back without trusting it.

The manifest (:mod:`tfrecord_lite._files._shardset` says what it is for) is a small
JSON file that anyone who can write the directory can replace. Reading it is bounded
and strict, so a hostile or damaged one is an :class:`InvalidManifestError`, never a
hang, an unbounded read, a ``RecursionError`` or a ``TypeError``:

* a local manifest is opened with ``O_NONBLOCK`` and must be a regular file (a FIFO,
  a device such as ``/dev/zero`` or a directory behind a symlink is refused by
  ``fstat`` before a byte is read); at most :data:`MAX_MANIFEST_BYTES` are read,
  local or URL, and a bigger one is refused;
* JSON nested deeper than a manifest ever is (:data:`MAX_DEPTH`) is refused before it
  is parsed;
* every field has the one type the writer gives it: ``"complete"`` is ``true`` or
  ``false`` (not ``"false"``, not ``0``), counts are whole numbers (not ``true``, not
  ``1.5``) at least 0, ``"shards"`` is a list of objects, and each shard name is a
  plain file name of the manifest's own directory (no ``/``, ``\\``, ``..``, NUL, not
  absolute) that has the shape of a shard name, listed once.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from .._errors import DataLossError
from . import _fs

__all__ = [
    "FORMAT",
    "MANIFEST_SUFFIX",
    "MAX_DEPTH",
    "MAX_MANIFEST_BYTES",
    "IncompleteShardSetError",
    "InvalidManifestError",
    "Manifest",
    "ShardEntry",
    "manifest_path",
    "read_manifest",
    "write_manifest",
]

#: The end of every manifest's name.
MANIFEST_SUFFIX = ".shards.json"
#: The format tag inside a manifest.
FORMAT = "tfrecord-lite shard set"
#: The most bytes of a manifest read (about 500,000 shards); a bigger one is refused.
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
#: The deepest nesting of ``[`` / ``{`` a manifest may have (a real one has 3).
MAX_DEPTH = 16

#: A shard's base name: ``<name>-<index>-of-<count><suffix>``.
SHARD_NAME = re.compile(r"^(?P<name>.+)-(?P<index>\d{5,})-of-(?P<count>\d{5,})(?P<suffix>.*)$")
_WHAT_TO_DO = (
    "Write the set again with ShardedWriter, or delete the manifest if you know the "
    "shards are whole"
)


class IncompleteShardSetError(DataLossError):
    """A shard set written by :class:`~tfrecord_lite.ShardedWriter` is not complete: the
    job that wrote it did not finish (its manifest says so), the shards found are not
    the ones its manifest lists, or a shard holds another number of records (or bytes)
    than the manifest says. ``path`` is the manifest, or the shard that differs."""


class InvalidManifestError(IncompleteShardSetError):
    """A shard set's manifest cannot be read as one: not a regular file, larger than
    :data:`MAX_MANIFEST_BYTES`, not JSON, nested too deep, or a field of the wrong type
    or value. The set cannot be told complete, so it is not read. ``path`` is the manifest."""


@dataclass(frozen=True)
class ShardEntry:
    """One shard a complete manifest lists: its base name, records and (if known) bytes."""

    name: str
    records: int
    size: Optional[int] = None


@dataclass(frozen=True)
class Manifest:
    """A manifest as read: whether the set is complete, and its shards when it is."""

    path: str
    complete: bool
    shards: tuple[ShardEntry, ...] = ()


def manifest_path(prefix: str, suffix: str = "") -> str:
    """The manifest of the shard set ``prefix-NNNNN-of-NNNNN<suffix>``."""
    directory, name = _fs.split(prefix)
    base = f"_{name}{suffix}{MANIFEST_SUFFIX}"
    return _fs.join(directory, base) if _fs.is_url(prefix) else os.path.join(directory, base)


def _local_size(directory: str, name: str) -> Optional[int]:
    try:
        return os.stat(os.path.join(directory, name)).st_size
    except OSError:
        return None


def write_manifest(
    prefix: str, suffix: str, shards: Optional[Sequence[tuple[str, int]]] = None
) -> str:
    """Write the set's manifest atomically: not complete (``shards=None``), or complete
    with each shard's name (a base name), record count and, for a local set, its size
    in bytes (the shards must have their final names)."""
    body: dict[str, Any] = {"format": FORMAT, "version": 1, "complete": shards is not None}
    dest = manifest_path(prefix, suffix)
    if shards is not None:
        directory = _fs.split(dest)[0]
        local = not _fs.is_url(dest)
        entries = []
        for n, r in shards:
            entry: dict[str, Any] = {"name": n, "records": r}
            size = _local_size(directory, n) if local else None
            if size is not None:
                entry["bytes"] = size
            entries.append(entry)
        body["shards"] = entries
    out = _fs.open_write(dest, atomic=True)
    try:
        out.file.write(json.dumps(body, indent=1).encode("utf-8") + b"\n")
    except BaseException:
        out.discard()
        raise
    out.commit()
    return dest


def _invalid(manifest: str, why: str) -> InvalidManifestError:
    return InvalidManifestError(
        f"the shard set manifest {str(manifest)!r} is not valid ({why}): the set cannot be "
        f"told complete, so it is not read. {_WHAT_TO_DO}",
        path=manifest,
    )


def _read_local(manifest: str) -> Optional[bytes]:
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(manifest, flags)
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno in (errno.ENOTDIR, errno.ELOOP):
            return None
        raise _invalid(manifest, f"it cannot be opened: {err.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _invalid(manifest, "it is not a regular file")
        if st.st_size > MAX_MANIFEST_BYTES:
            raise _invalid(manifest, f"{st.st_size} bytes, over {MAX_MANIFEST_BYTES}")
        chunks = []
        left = MAX_MANIFEST_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > MAX_MANIFEST_BYTES:  # it grew while read
        raise _invalid(manifest, f"over {MAX_MANIFEST_BYTES} bytes")
    return data


def _read_url(manifest: str) -> Optional[bytes]:
    try:
        size = _fs.size(manifest)
    except (FileNotFoundError, IsADirectoryError):
        return None
    if size > MAX_MANIFEST_BYTES:
        raise _invalid(manifest, f"{size} bytes, over {MAX_MANIFEST_BYTES}")
    with _fs.open_read(manifest) as f:
        data = f.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        raise _invalid(manifest, f"over {MAX_MANIFEST_BYTES} bytes")
    return data


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def _depth(text: str) -> int:
    """How deep ``[`` / ``{`` nest in JSON text (brackets inside strings not counted)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return MAX_DEPTH
    depth = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub("", text)):
        if m.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                break
        else:
            depth -= 1
    return deepest


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _plain_name(name: object) -> bool:
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and not any(c in name for c in "/\\\0")
        and not os.path.isabs(name)
        and SHARD_NAME.match(name) is not None
    )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _parse(manifest: str, data: bytes) -> Manifest:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid(manifest, "not UTF-8 text") from None
    if _depth(text) > MAX_DEPTH:
        raise _invalid(manifest, f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        body = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as err:
        raise _invalid(manifest, f"not JSON: {err}") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise _invalid(manifest, "not a manifest written by ShardedWriter")
    version = body.get("version")
    if not _whole(version) or version != 1:
        raise _invalid(manifest, f'"version" must be 1, got {version!r}')
    complete = body.get("complete")
    if not isinstance(complete, bool):
        raise _invalid(manifest, f'"complete" must be true or false, got {complete!r}')
    if not complete:
        return Manifest(manifest, False)
    raw = body.get("shards")
    if not isinstance(raw, list):
        raise _invalid(manifest, f'"shards" must be a list, got {type(raw).__name__}')
    shards: list[ShardEntry] = []
    names: set[str] = set()
    for i, s in enumerate(raw):
        if not isinstance(s, dict):
            raise _invalid(manifest, f"shard {i} is not an object")
        name, records, size = s.get("name"), s.get("records"), s.get("bytes")
        if not _plain_name(name):
            raise _invalid(
                manifest, f"shard {i}'s name {name!r} is not a shard file name of its directory"
            )
        if name in names:
            raise _invalid(manifest, f"shard {name!r} is listed twice")
        if not _whole(records):
            raise _invalid(manifest, f"shard {name!r}: records must be a whole number >= 0")
        if size is not None and not _whole(size):
            raise _invalid(manifest, f"shard {name!r}: bytes must be a whole number >= 0")
        names.add(name)  # type: ignore[arg-type]
        shards.append(ShardEntry(name, records, size))  # type: ignore[arg-type]
    return Manifest(manifest, True, tuple(shards))


def read_manifest(manifest: str) -> Optional[Manifest]:
    """The manifest at ``manifest`` checked field by field, or None when there is none.

    Raises :class:`InvalidManifestError` for anything else than a manifest
    :func:`write_manifest` could have written (see the module documentation).
    """
    data = _read_url(manifest) if _fs.is_url(manifest) else _read_local(manifest)
    return None if data is None else _parse(manifest, data)
