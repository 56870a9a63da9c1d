"""Turning what the user passed as "files" into a list of files to read.

Accepted, alone or in a list/tuple, as local paths or as URLs (``s3://``, ``gs://``,
any fsspec URL; see :mod:`tfrecord_lite._files._fs`), the same way for both:

* a path (``str`` or ``os.PathLike``), or ``file://`` path
* a glob pattern: ``"data/train-*.tfrecord"`` (``*``, ``?``, ``[...]``; sorted;
  index files and directories left out; no match is a ``FileNotFoundError``)
* a directory: the TFRecord files in it, sorted (see :data:`DIRECTORY_RULE`)
* a shard spec, TensorFlow's / Beam's ``name@N``, with an optional suffix:
  ``PREFIX@N[SUFFIX]`` means ``PREFIX-00000-of-0000N[SUFFIX]`` ...
  ``PREFIX-(N-1)-of-0000N[SUFFIX]`` (numbers 5 digits wide, or wider when N
  needs it); ``N`` is 1 or more decimal digits, ``SUFFIX`` is empty or starts with
  ``.`` and holds no ``/`` or ``@``. ``data_tfrecord@12.gz`` means
  ``data_tfrecord-00000-of-00012.gz`` ... ``data_tfrecord-00011-of-00012.gz``.
  A file that exists under the spec's own name (``model@2``) is that file.
  Every shard must exist (else ``FileNotFoundError`` naming the spec).

A directory, a glob or a shard spec that holds shards of a set written by
:class:`~tfrecord_lite.ShardedWriter` whose job did not finish is an
:class:`~tfrecord_lite._files._shardset.IncompleteShardSetError`
(:mod:`tfrecord_lite._files._shardset`).
* an open binary file object (anything with ``read``), used as is

The grammar is checked in this order: an existing file of that name; a shard
spec; a glob pattern (if the name has ``*``, ``?`` or ``[``); a directory;
otherwise the path is passed on as is (opening it reports a missing file).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import IO, Any, Optional, Union

from . import _fs, _remote_read
from ._shardset import MANIFEST_SUFFIX, check_shard_set
from ._sniff import SNIFF_BYTES, NotATFRecordError, looks_like_tfrecord, sniff_format

__all__ = [
    "DIRECTORY_RULE",
    "INDEX_SUFFIXES",
    "PathOrFile",
    "expand_paths",
    "is_file_object",
    "parse_shard_spec",
    "shard_name",
    "skipped_in_directory",
]

PathOrFile = Union[str, "os.PathLike[str]", IO[bytes]]

#: File name endings that are index files, never data.
INDEX_SUFFIXES = (".index", ".idx")
#: Sidecar files the library (and TFDS) writes beside data files: never data.
SIDECAR_NAMES = frozenset({"labels.txt", "features.json", "dataset_info.json"})
SIDECAR_SUFFIXES = (*INDEX_SUFFIXES, ".labels.txt")

#: How a directory is read; errors about a directory's contents quote it.
DIRECTORY_RULE = (
    "a directory is read as the TFRecord files in it (sorted by name, not recursing "
    "into subdirectories), skipping hidden files ('.*'), markers and metadata "
    "('_*', e.g. _SUCCESS), index files ('*.index', '*.idx') and sidecars "
    "('labels.txt', '*.labels.txt', 'features.json', 'dataset_info.json'); "
    "any other file must be a TFRecord file (plain, GZIP or ZLIB)"
)

_GLOB_CHARS = re.compile(r"[*?\[]")
_SHARD_SPEC = re.compile(r"^(?P<prefix>.+)@(?P<count>\d+)(?P<suffix>(?:\.[^/@]*)?)$")


def shard_name(prefix: str, index: int, count: int) -> str:
    """TensorFlow/Beam shard name: ``shard_name("train", 3, 10) == "train-00003-of-00010"``."""
    if not 0 <= index < count:
        raise ValueError(f"shard index must be in [0, {count}), got {index}")
    name = f"{prefix}-{index:05d}-of-{count:05d}"
    return prefix.with_path(name) if isinstance(prefix, _fs.URL) else name


def parse_shard_spec(path: str) -> Optional[tuple[str, int, str]]:
    """``(prefix, count, suffix)`` of a shard spec ``PREFIX@N[SUFFIX]``, or None.

    >>> parse_shard_spec("gs://b/data_tfrecord@12.gz")
    ('gs://b/data_tfrecord', 12, '.gz')
    """
    m = _SHARD_SPEC.match(os.fspath(path))
    if m is None:
        return None
    return m.group("prefix"), int(m.group("count")), m.group("suffix")


def skipped_in_directory(name: str) -> Optional[str]:
    """Why a directory listing skips the file ``name`` (a base name), or None if it is data."""
    if name.startswith("."):
        return "hidden file"
    if name.startswith("_"):
        return "marker or metadata file"
    if name.endswith(INDEX_SUFFIXES):
        return "index file"
    if name in SIDECAR_NAMES or name.endswith(SIDECAR_SUFFIXES):
        return "sidecar file"
    return None


def is_file_object(obj: object) -> bool:
    """True for an open file-like object (has ``read`` or ``write``), not a path."""
    return not isinstance(obj, (str, bytes, os.PathLike)) and (
        hasattr(obj, "read") or hasattr(obj, "write")
    )


def _heads(paths: list[str]) -> list[bytes]:
    """The first bytes of each file, enough to sniff (URLs fetched concurrently)."""
    if not paths or not _fs.is_url(paths[0]) or len(paths) == 1:
        return [_fs.head(p, SNIFF_BYTES) for p in paths]
    pool = _remote_read.fetch_pool()
    return [f.result() for f in [pool.submit(_fs.head, p, SNIFF_BYTES) for p in paths]]


def _directory(path: str) -> list[str]:
    files: list[str] = []
    manifests: list[str] = []
    for full, is_file in _fs.listdir(path):
        name = _fs.split(full)[1]
        if is_file and name.endswith(MANIFEST_SUFFIX):
            manifests.append(full)
        if not is_file or not name or skipped_in_directory(name) is not None:
            continue
        files.append(full)
    check_shard_set(files, manifests)
    if not files:
        raise FileNotFoundError(
            2, f"the directory holds no TFRecord files ({DIRECTORY_RULE})", str(path)
        )
    for full, first in zip(files, _heads(files)):
        if not looks_like_tfrecord(first):
            what = sniff_format(first)
            kind = f"it starts like {what}" if what else "its first bytes are neither a "
            kind += "" if what else "record header nor a GZIP/ZLIB stream"
            raise NotATFRecordError(
                f"not a TFRecord file: {str(full)!r} in the directory {str(path)!r} ({kind}). "
                "Move it out, or pass a glob or a list of the files to read "
                f"({DIRECTORY_RULE})",
                part="header",
                path=full,
                offset=0,
            )
    return files


def _present_shards(first: str, count: int, suffix: str) -> set[int]:
    """The indices ``i < count`` whose shard ``...-<i>-of-<count><suffix>`` is a file,
    ``first`` being shard 0's name: one listing of the directory, never a look-up a
    shard (``name@10000000`` costs what the directory holds, not ten million stats)."""
    directory, base = _fs.split(first)
    stem = base[: -len(f"-00000-of-{count:05d}{suffix}")]
    shape = re.compile(re.escape(stem) + r"-(\d{5,})-of-" + re.escape(f"{count:05d}{suffix}") + "$")
    found: set[int] = set()

    def keep(name: str) -> Optional[int]:
        m = shape.match(name)
        if m is None:
            return None
        i = int(m.group(1))
        return i if i < count and m.group(1) == f"{i:05d}" else None

    if _fs.is_url(first):
        try:
            entries = _fs.listdir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return found
        for full, is_file in entries:
            i = keep(_fs.split(full)[1])
            if is_file and i is not None:
                found.add(i)
        return found
    try:
        with os.scandir(directory or ".") as listing:
            for entry in listing:
                i = keep(entry.name)
                if i is not None and entry.is_file():  # follows links, like isfile
                    found.add(i)
    except (FileNotFoundError, NotADirectoryError):
        pass
    return found


def _shards(path: str, prefix: str, count: int, suffix: str) -> list[str]:
    if count <= 0:
        raise ValueError(f"shard spec {str(path)!r} must name at least one shard")

    def name(i: int) -> str:
        n = shard_name(prefix, i, count) + suffix
        return path.with_path(n) if isinstance(path, _fs.URL) else n

    present = _present_shards(name(0), count, suffix)
    if len(present) < count:
        first_missing = 0
        while first_missing in present:
            first_missing += 1
        what = "no shard" if not present else f"only {len(present)} of {count} shards"
        raise FileNotFoundError(
            2,
            f"shard spec: {what} of {prefix}-NNNNN-of-{count:05d}{suffix} found "
            f"(first missing: {str(name(first_missing))!r})",
            str(path),
        )
    names = [name(i) for i in range(count)]
    check_shard_set(names)
    return names


def _expand_one(
    item: Union[str, os.PathLike[str]], options: Optional[Mapping[str, Any]]
) -> list[str]:
    path = _fs.bind(item, options)
    spec = parse_shard_spec(path)
    if spec is not None and not _fs.isfile(path):
        prefix, count, suffix = spec
        if isinstance(path, _fs.URL):
            prefix = path.with_path(prefix)
        return _shards(path, prefix, count, suffix)
    if _GLOB_CHARS.search(str(path)) and not _fs.exists(path):
        matches = [p for p in _fs.glob(path) if not str(p).endswith(INDEX_SUFFIXES)]
        if not matches:
            raise FileNotFoundError(2, "no files match the pattern", str(path))
        check_shard_set(matches, whole=False)
        return matches
    if _fs.isdir(path):
        return _directory(path)
    return [path]


def expand_paths(
    paths: Union[PathOrFile, Sequence[PathOrFile]],
    *,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> list[PathOrFile]:
    """Expand paths, patterns, directories and shard specs into a list of files, in order.

    Works the same for local paths and URLs (see the module documentation for the
    grammar and :data:`DIRECTORY_RULE`). ``storage_options`` are passed to the
    fsspec filesystem of every URL (and travel with the URLs returned).
    """
    if isinstance(paths, (str, os.PathLike)) or is_file_object(paths):
        items: Sequence[PathOrFile] = [paths]  # type: ignore[list-item]
    elif isinstance(paths, (list, tuple)):
        items = paths
    else:
        try:
            items = list(paths)  # type: ignore[arg-type]
        except TypeError:
            raise TypeError(
                f"expected a path, a file object, or a list of them; got {type(paths).__name__}"
            ) from None
    out: list[PathOrFile] = []
    for item in items:
        if is_file_object(item):
            out.append(item)
        elif isinstance(item, (str, os.PathLike)):
            out.extend(_expand_one(item, storage_options))
        else:
            raise TypeError(f"expected a path or a binary file object, got {type(item).__name__}")
    if not out:
        raise ValueError("no files given")
    return out
