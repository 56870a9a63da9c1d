"""Whether a shard set is complete: the manifest :class:`~tfrecord_lite.ShardedWriter` keeps.

A set of shards ``train-00000-of-00008`` ... looks complete by its names alone, yet a
job killed while it renamed or uploaded them leaves only some of them under those
names. So :class:`~tfrecord_lite.ShardedWriter` keeps a *manifest* beside its shards,
``_<name><suffix>.shards.json`` (``out/_train.shards.json`` for the prefix
``out/train``; the leading ``_`` keeps it out of directory listings, as Hadoop's
``_SUCCESS``):

* written first, when the writer opens, saying ``"complete": false``;
* replaced last, once every shard (and index) is under its final name, by one that
  says ``"complete": true`` and lists each shard with its record count.

:func:`check_shard_set` reads the manifests of the shard sets among a list of files
(directories, globs and ``name@N`` specs are checked by
:func:`~tfrecord_lite.expand_paths`): a set whose manifest says it is not complete,
or lists other shards than those found, is an :class:`IncompleteShardSetError`.
Shard sets without a manifest (written by TensorFlow, Beam, TFDS...) are read as
they are: nothing can be told about them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Optional

from . import _fs
from ._manifest import (
    MANIFEST_SUFFIX,
    SHARD_NAME,
    IncompleteShardSetError,
    InvalidManifestError,
    Manifest,
    manifest_path,
    read_manifest,
    write_manifest,
)

__all__ = [
    "MANIFEST_SUFFIX",
    "IncompleteShardSetError",
    "InvalidManifestError",
    "check_shard_records",
    "check_shard_set",
    "expected_records",
    "manifest_path",
    "write_manifest",
]

_SHARD = SHARD_NAME
_MANIFEST = re.compile(r"^_(?P<set>.+)" + re.escape(MANIFEST_SUFFIX) + "$")

#: How many shards' expected record counts are kept (the oldest go first).
MAX_EXPECTED = 1_000_000
#: shard path -> (records its complete manifest lists, the manifest).
_expected: dict[str, tuple[int, str]] = {}


def _set_name(directory: str, name: str, suffix: str) -> str:
    return str(_fs.join(directory, f"{name}-NNNNN-of-NNNNN{suffix}"))


def _key(path: str) -> str:
    return str(path) if _fs.is_url(path) else os.path.abspath(path)


def expected_records(path: object) -> Optional[int]:
    """The records the complete manifest of ``path``'s shard set lists for it, if this
    process has checked that set (:func:`check_shard_set`), else None."""
    if not isinstance(path, (str, os.PathLike)):
        return None
    got = _expected.get(_key(os.fspath(path)))
    return None if got is None else got[0]


def check_shard_records(path: object, records: int) -> None:
    """Raise :class:`IncompleteShardSetError` if ``path`` is a shard of a complete set
    checked by :func:`check_shard_set` and its manifest lists another record count for
    it than ``records`` (the count read). Readers call it once a shard is read to its
    end; shards of no such set pass."""
    if not isinstance(path, (str, os.PathLike)):
        return
    name = os.fspath(path)
    key = _key(name)
    got = _expected.get(key)
    if got is None or got[0] == records:
        return
    manifest = got[1]
    # The set may have been written again since it was checked: ask the manifest.
    body = read_manifest(manifest)
    base = _fs.split(name)[1]
    entry = None
    if body is not None and body.complete:
        entry = next((s for s in body.shards if s.name == base), None)
    if entry is None or entry.records == records:
        _expected.pop(key, None)
        return
    _expected[key] = (entry.records, manifest)
    what = "fewer" if records < entry.records else "more"
    raise IncompleteShardSetError(
        f"the shard {name!r} holds {records} records, {what} than the {entry.records} its "
        f"set's manifest {str(manifest)!r} lists: it was cut short, emptied or replaced "
        "after the set was written. Write the set again (or restore the shard)",
        path=name,
        index=records,
    )


def _remember(directory: str, body: Manifest, found: set[str]) -> None:
    for s in body.shards:
        if s.name in found:
            if len(_expected) >= MAX_EXPECTED:
                _expected.pop(next(iter(_expected)))
            _expected[_key(_fs.join(directory, s.name))] = (s.records, body.path)


def check_shard_set(
    paths: Iterable[object], manifests: Iterable[str] = (), *, whole: bool = True
) -> None:
    """Raise :class:`IncompleteShardSetError` if the files ``paths`` hold part of a shard
    set whose manifest says it is not complete, lists other shards than the ones
    among ``paths``, or (local files) gives another size in bytes for a shard than its
    file has. ``whole=False`` (a glob, which may pick some shards on purpose):
    shards the manifest lists may be left out, but none it does not list may be there.
    ``manifests``: more manifests to check (those of a directory being read: a set none
    of whose shards has its final name yet is incomplete too). A manifest that cannot
    be one is an :class:`InvalidManifestError`.

    The record counts of a complete set's shards are kept: readers check each shard's
    count once it is read to its end (:func:`check_shard_records`).

    File objects and names that are not shard names are passed over; sets without a
    manifest are taken as they are.
    """
    groups: dict[tuple[str, str, str], set[str]] = {}
    for p in paths:
        if not isinstance(p, str):
            continue
        directory, base = _fs.split(p)
        m = _SHARD.match(base)
        if m is None:
            continue
        groups.setdefault((directory, m.group("name"), m.group("suffix")), set()).add(base)
    seen: set[str] = set()
    for (directory, name, suffix), found in sorted(groups.items()):
        manifest = manifest_path(_fs.join(directory, name), suffix)
        seen.add(str(manifest))
        body = read_manifest(manifest)
        if body is not None:
            _check(body, _set_name(directory, name, suffix), found, whole)
            _check_sizes(body, directory, found)
            _remember(directory, body, found)
    for manifest in manifests:
        if str(manifest) in seen:
            continue
        m = _MANIFEST.match(_fs.split(manifest)[1])
        body = read_manifest(manifest) if m is not None else None
        if body is not None and not body.complete:
            directory = _fs.split(manifest)[0]
            what = str(_fs.join(directory, m.group("set") + "-*"))  # type: ignore[union-attr]
            _check(body, what, set(), whole)


def _check(body: Manifest, what: str, found: set[str], whole: bool) -> None:
    manifest = body.path
    if not body.complete:
        raise IncompleteShardSetError(
            f"the shard set {what} is incomplete: the ShardedWriter job that wrote it did not "
            f"finish (its manifest {str(manifest)!r} says so; {len(found)} of its shards are "
            "under final names). Run the job again, or read the shards you trust by name",
            path=manifest,
        )
    listed = {s.name for s in body.shards}
    if found != listed and (whole or not found <= listed):
        missing = sorted(listed - found) if whole else []
        other = sorted(found - listed)
        detail = []
        if missing:
            detail.append(f"{len(missing)} missing (first: {missing[0]!r})")
        if other:
            detail.append(f"{len(other)} not in it (first: {other[0]!r})")
        raise IncompleteShardSetError(
            f"the shard set {what} does not match its manifest {str(manifest)!r}: "
            f"{len(listed)} shards listed, {len(found)} found; {', '.join(detail)}. Shards "
            "were removed or added after it was written: write the set again",
            path=manifest,
        )


def _check_sizes(body: Manifest, directory: str, found: set[str]) -> None:
    """Each local shard's size against the manifest's (one ``stat`` a shard)."""
    if _fs.is_url(directory):
        return
    for s in body.shards:
        if s.size is None or s.name not in found:
            continue
        path = os.path.join(directory, s.name)
        try:
            size = os.stat(path).st_size
        except OSError:
            continue  # gone since it was listed: opening it says so
        if size != s.size:
            raise IncompleteShardSetError(
                f"the shard {path!r} is {size} bytes, not the {s.size} its set's manifest "
                f"{str(body.path)!r} lists: it was cut short, emptied or replaced after the "
                "set was written. Write the set again (or restore the shard)",
                path=path,
            )
