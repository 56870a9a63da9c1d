"""Turning what the user passed as "files" into a list of files to read.

Accepted, alone or in a list/tuple:

* a path (``str`` or ``os.PathLike``)
* a glob pattern: ``"data/train-*.tfrecord"`` (sorted; no match is an error)
* a directory: every regular file in it, sorted, except hidden files and
  index files (``*.index``, ``*.idx``)
* a TensorFlow/Beam shard spec: ``"data/train@16"`` means
  ``data/train-00000-of-00016`` ... ``data/train-00015-of-00016``
* an open binary file object (anything with ``read``), used as is
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from typing import IO, Union

__all__ = ["INDEX_SUFFIXES", "PathOrFile", "expand_paths", "is_file_object", "shard_name"]

PathOrFile = Union[str, "os.PathLike[str]", IO[bytes]]

#: File name endings that are index files, never data.
INDEX_SUFFIXES = (".index", ".idx")

_GLOB_CHARS = re.compile(r"[*?\[]")
_SHARD_SPEC = re.compile(r"^(?P<prefix>.+)@(?P<count>\d+)$")


def shard_name(prefix: str, index: int, count: int) -> str:
    """TensorFlow/Beam shard name: ``shard_name("train", 3, 10) == "train-00003-of-00010"``."""
    if not 0 <= index < count:
        raise ValueError(f"shard index must be in [0, {count}), got {index}")
    return f"{prefix}-{index:05d}-of-{count:05d}"


def is_file_object(obj: object) -> bool:
    """True for an open file-like object (has ``read`` or ``write``), not a path."""
    return not isinstance(obj, (str, bytes, os.PathLike)) and (
        hasattr(obj, "read") or hasattr(obj, "write")
    )


def _expand_one(item: Union[str, os.PathLike[str]]) -> list[str]:
    path = os.fspath(item)
    if not isinstance(path, str):
        raise TypeError(f"paths must be str or os.PathLike[str], got {type(path).__name__}")
    if "://" in path and not path.startswith("file://"):
        return [path]  # remote URL: opened through fsspec by the I/O layer
    if path.startswith("file://"):
        path = path[len("file://") :]
    if os.path.isdir(path):
        names = sorted(
            os.path.join(path, n)
            for n in os.listdir(path)
            if not n.startswith(".") and not n.endswith(INDEX_SUFFIXES)
        )
        files = [n for n in names if os.path.isfile(n)]
        if not files:
            raise FileNotFoundError(f"directory {path!r} contains no files")
        return files
    m = _SHARD_SPEC.match(path)
    if m and not os.path.exists(path):
        count = int(m.group("count"))
        if count <= 0:
            raise ValueError(f"shard spec {path!r} must name at least one shard")
        return [shard_name(m.group("prefix"), i, count) for i in range(count)]
    if _GLOB_CHARS.search(path) and not os.path.exists(path):
        matches = sorted(
            p for p in glob.glob(path) if not p.endswith(INDEX_SUFFIXES) and not os.path.isdir(p)
        )
        if not matches:
            raise FileNotFoundError(f"no files match the pattern {path!r}")
        return matches
    return [path]


def expand_paths(paths: Union[PathOrFile, Sequence[PathOrFile]]) -> list[PathOrFile]:
    """Expand paths, patterns, directories and shard specs into a list of files, in order."""
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
            out.extend(_expand_one(item))
        else:
            raise TypeError(f"expected a path or a binary file object, got {type(item).__name__}")
    if not out:
        raise ValueError("no files given")
    return out
