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

import json
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any, Optional

from .._errors import DataLossError
from . import _fs

__all__ = [
    "MANIFEST_SUFFIX",
    "IncompleteShardSetError",
    "check_shard_set",
    "manifest_path",
    "write_manifest",
]

#: The end of every manifest's name.
MANIFEST_SUFFIX = ".shards.json"
#: The format tag inside a manifest.
FORMAT = "tfrecord-lite shard set"

_SHARD = re.compile(r"^(?P<name>.+)-(?P<index>\d{5,})-of-(?P<count>\d{5,})(?P<suffix>.*)$")
_MANIFEST = re.compile(r"^_(?P<set>.+)" + re.escape(MANIFEST_SUFFIX) + "$")


class IncompleteShardSetError(DataLossError):
    """A shard set written by :class:`~tfrecord_lite.ShardedWriter` is not complete: the
    job that wrote it did not finish (its manifest says so), or the shards found are
    not the ones its manifest lists. ``path`` is the manifest."""


def manifest_path(prefix: str, suffix: str = "") -> str:
    """The manifest of the shard set ``prefix-NNNNN-of-NNNNN<suffix>``."""
    directory, name = _fs.split(prefix)
    base = f"_{name}{suffix}{MANIFEST_SUFFIX}"
    return _fs.join(directory, base) if _fs.is_url(prefix) else os.path.join(directory, base)


def write_manifest(
    prefix: str, suffix: str, shards: Optional[Sequence[tuple[str, int]]] = None
) -> str:
    """Write the set's manifest atomically: not complete (``shards=None``), or complete
    with each shard's name (a base name) and record count."""
    body: dict[str, Any] = {"format": FORMAT, "version": 1, "complete": shards is not None}
    if shards is not None:
        body["shards"] = [{"name": n, "records": r} for n, r in shards]
    dest = manifest_path(prefix, suffix)
    out = _fs.open_write(dest, atomic=True)
    try:
        out.file.write(json.dumps(body, indent=1).encode("utf-8") + b"\n")
    except BaseException:
        out.discard()
        raise
    out.commit()
    return dest


def _read(manifest: str) -> Optional[dict[str, Any]]:
    """The manifest's content, or None when it is not there (or not one of ours)."""
    try:
        with _fs.open_read(manifest) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise IncompleteShardSetError(
            f"the shard set manifest {str(manifest)!r} is damaged (not a manifest written "
            "by ShardedWriter): the set cannot be told complete. Rewrite the set, or delete "
            "the manifest if you know the shards are whole",
            path=manifest,
        )
    return body


def _set_name(directory: str, name: str, suffix: str) -> str:
    return str(_fs.join(directory, f"{name}-NNNNN-of-NNNNN{suffix}"))


def check_shard_set(
    paths: Iterable[object], manifests: Iterable[str] = (), *, whole: bool = True
) -> None:
    """Raise :class:`IncompleteShardSetError` if the files ``paths`` hold part of a shard
    set whose manifest says it is not complete, or lists other shards than the ones
    among ``paths``. ``whole=False`` (a glob, which may pick some shards on purpose):
    shards the manifest lists may be left out, but none it does not list may be there.
    ``manifests``: more manifests to check (those of a directory being read: a set none
    of whose shards has its final name yet is incomplete too).

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
        body = _read(manifest)
        if body is not None:
            _check(body, manifest, _set_name(directory, name, suffix), found, whole)
    for manifest in manifests:
        if str(manifest) in seen:
            continue
        m = _MANIFEST.match(_fs.split(manifest)[1])
        body = _read(manifest) if m is not None else None
        if body is not None and not body.get("complete"):
            directory = _fs.split(manifest)[0]
            what = str(_fs.join(directory, m.group("set") + "-*"))  # type: ignore[union-attr]
            _check(body, manifest, what, set(), whole)


def _check(body: dict[str, Any], manifest: str, what: str, found: set[str], whole: bool) -> None:
    if not body.get("complete"):
        raise IncompleteShardSetError(
            f"the shard set {what} is incomplete: the ShardedWriter job that wrote it did not "
            f"finish (its manifest {str(manifest)!r} says so; {len(found)} of its shards are "
            "under final names). Run the job again, or read the shards you trust by name",
            path=manifest,
        )
    listed = {str(s.get("name")) for s in body.get("shards", []) if isinstance(s, dict)}
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
