"""``convert`` to WebDataset: tar files of samples (see ``_convert_samples``), written
with the standard library's :mod:`tarfile`; no ``webdataset`` package is needed.

Without ``--shard-size`` one tar file is written under the output's name. With it, the
samples are split into shards of at most that many bytes each (a sample larger than
that gets a shard of its own), named ``NAME-000000.tar``, ``NAME-000001.tar`` ... for an
output ``NAME.tar``, or after a ``%d``-style pattern in the name (``train-%04d.tar``),
as WebDataset's ``ShardWriter`` names them; WebDataset reads them back as
``NAME-{000000..000009}.tar``.

Every shard is written under a temporary name beside it and the shards are renamed
only once all of them are complete: an error or Ctrl-C leaves nothing under the final
names. An output that exists (for shards: any file named as a shard of the pattern)
is refused before anything is read, unless ``--overwrite``; then shards of an earlier,
longer run that the new one does not replace are removed once the new ones are in.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import tarfile
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Optional

from ._common import UsageError

if TYPE_CHECKING:
    from ._convert_samples import Files

__all__ = ["TarShards", "parse_size"]

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*\Z")
_PATTERN = re.compile(r"%0?(\d*)d")
#: Bytes of a tar member header (tarfile pads data to this, and the archive's end to
#: ``tarfile.RECORDSIZE``).
_BLOCK = tarfile.BLOCKSIZE


def parse_size(text: str) -> int:
    """``--shard-size``: bytes, with an optional unit (``500MB``, ``1GB``, ``2GiB``, ``100k``)."""
    m = _SIZE.match(text.lower())
    if m is None or m.group(2) not in _UNITS:
        raise ValueError(
            f"expected a size such as 500MB, 1GB or 2GiB, got {text!r} "
            "(units: B, kB, MB, GB, TB; KiB, MiB, GiB, TiB)"
        )
    size = int(float(m.group(1)) * _UNITS[m.group(2)])
    if size < 1:
        raise ValueError(f"a shard size must be at least 1 byte, got {text!r}")
    return size


def shard_pattern(out: str) -> str:
    """The ``%06d``-style name of the shards of ``out`` (a pattern already in it is kept)."""
    head, tail = os.path.split(out)
    if _PATTERN.search(tail):
        if len(_PATTERN.findall(tail)) > 1 or "%" in _PATTERN.sub("", tail):
            raise UsageError(f"output {out!r}: put one %d-style shard number in the name")
        return out
    stem = tail[:-4] if tail.lower().endswith(".tar") else tail
    return os.path.join(head, f"{stem}-%06d.tar")


def _tmp_name(path: str) -> str:
    head, tail = os.path.split(path)
    return os.path.join(head, f".{tail}.tmp-{os.getpid()}")


def _padded(n: int) -> int:
    return -(-n // _BLOCK) * _BLOCK


class TarShards:
    """Samples into one tar file, or into shards of at most ``shard_size`` bytes."""

    def __init__(self, out: str, shard_size: Optional[int], overwrite: bool) -> None:
        self.out = out
        self.shard_size = shard_size
        self.overwrite = overwrite
        self.pattern = shard_pattern(out) if shard_size else None
        self.paths: list[str] = []
        self.samples = 0
        self._tar: Optional[tarfile.TarFile] = None
        self._in_shard = 0
        self._mtime = int(time.time())

    # ----------------------------------------------------------------- names

    def _name(self, i: int) -> str:
        return self.out if self.pattern is None else self.pattern % i

    def existing(self) -> list[str]:
        """The files under the output's name: the tar, or every shard of the pattern."""
        if self.pattern is None:
            return [self.out] if os.path.lexists(self.out) else []
        head, tail = os.path.split(self.pattern)
        m = _PATTERN.search(tail)
        assert m is not None
        found = re.compile(
            re.escape(tail[: m.start()]) + r"\d+" + re.escape(tail[m.end() :]) + r"\Z"
        )
        try:
            names = os.listdir(head or ".")
        except FileNotFoundError:
            return []
        return sorted(os.path.join(head, n) for n in names if found.match(n))

    def check(self) -> None:
        """Refuse an output that exists, unless ``overwrite`` (before anything is read)."""
        there = self.existing()
        if there and not self.overwrite:
            more = f" and {len(there) - 1} more" if len(there) > 1 else ""
            raise UsageError(
                f"{there[0]!r}{more} exists: pass --overwrite to replace "
                f"{'it' if len(there) == 1 else 'them'}, or name another output"
            )
        for path in there:
            if os.path.isdir(path):
                raise UsageError(f"output {path!r} is a directory")

    # ----------------------------------------------------------------- writing

    def _open(self) -> tarfile.TarFile:
        path = self._name(len(self.paths))
        self.paths.append(path)
        self._in_shard = 0
        tar = tarfile.open(_tmp_name(path), "w", format=tarfile.PAX_FORMAT)  # noqa: SIM115
        self._tar = tar
        return tar

    def _close(self) -> None:
        if self._tar is not None:
            tar, self._tar = self._tar, None
            tar.close()

    def _info(self, name: str, size: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.size = size
        info.mtime = self._mtime
        info.mode = 0o444
        return info

    def add(self, key: str, files: Files) -> None:
        """Write one sample: ``KEY.EXT`` for each ``(EXT, bytes)``."""
        tar = self._tar or self._open()
        infos = [self._info(f"{key}.{ext}", len(data)) for ext, data in files]
        if self.shard_size is not None and self._in_shard:
            need = sum(len(i.tobuf(tar.format, tar.encoding, tar.errors)) for i in infos)
            need += sum(_padded(len(data)) for _, data in files)
            end = -(-(tar.offset + need + 2 * _BLOCK) // tarfile.RECORDSIZE) * tarfile.RECORDSIZE
            if end > self.shard_size:
                self._close()
                tar = self._open()
        for info, (_, data) in zip(infos, files):
            tar.addfile(info, io.BytesIO(data))
        self._in_shard += 1
        self.samples += 1

    def commit(self) -> list[str]:
        """Close the last shard and give every shard its name; the paths written."""
        if self._tar is None and not self.paths:
            self._open()  # no records: one valid, empty tar file
        self._close()
        stale = set(self.existing()) if self.overwrite else set()
        for path in self.paths:
            os.replace(_tmp_name(path), path)
            stale.discard(path)
        for path in stale:  # shards of an earlier run that this one did not replace
            with contextlib.suppress(OSError):
                os.remove(path)
        return self.paths

    def abort(self) -> None:
        """Drop every shard written so far (their temporary files)."""
        with contextlib.suppress(Exception):
            self._close()
        for path in self.paths:
            with contextlib.suppress(OSError):
                os.remove(_tmp_name(path))

    def describe(self) -> str:
        """Where the samples went: the file, or the shards as WebDataset reads them."""
        if self.pattern is None or len(self.paths) == 1:
            return self.paths[0] if self.paths else self.out
        m = _PATTERN.search(self.pattern)
        assert m is not None
        width = int(m.group(1) or 0)
        last = len(self.paths) - 1
        brace = "{" + f"{0:0{width}d}..{last:0{width}d}" + "}"
        return self.pattern[: m.start()] + brace + self.pattern[m.end() :]


def write_samples(shards: TarShards, samples: Iterator[tuple[str, Files]]) -> list[str]:
    """Write every sample into ``shards`` atomically; the paths written."""
    try:
        for key, files in samples:
            shards.add(key, files)
    except BaseException:
        shards.abort()
        raise
    return shards.commit()
