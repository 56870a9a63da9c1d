"""What ``convert`` writes, from the output's name and ``--to`` / ``--compression``.

The name's extension says the format: ``.tfrecord`` (``.tfrecords``, ``.tfrec``,
``.tfr``, ``.record``, ``.records``) or none for TFRecords, ``.gz`` / ``.gzip`` for GZIP
and ``.zz`` / ``.zlib`` for ZLIB TFRecords (``train.tfrecord.gz``, ``train.gz``),
``.parquet`` / ``.pq`` for Parquet, ``.arrow`` / ``.feather`` / ``.ipc`` for an Arrow
IPC file (Feather v2), ``.tar`` for WebDataset and ``.array_record`` for ArrayRecord
(both written, not read). A shard's name (``train.tfrecord-00003-of-00016``) is read
without its shard suffix. ``--to`` and ``--compression`` may repeat what the name says;
an option that disagrees with it, or an extension that is none of these, is a usage
error, raised before anything is written: one format is never written under another's
name. A name with no extension takes ``--to`` (TFRecord by default).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Optional

from .._files import fs
from ._common import UsageError

__all__ = ["FORMATS", "READS", "Target", "input_format", "output_target"]

#: The formats ``convert`` writes, as ``--to`` names them.
FORMATS = ("tfrecord", "parquet", "arrow", "webdataset", "array_record")
#: The formats it reads (``--from``); TFDS directories are found by their contents.
READS = ("tfrecord", "parquet", "arrow")

_TITLE = {
    "tfrecord": "TFRecord",
    "parquet": "Parquet",
    "arrow": "Arrow IPC (Feather)",
    "webdataset": "WebDataset (tar)",
    "array_record": "ArrayRecord",
}

_EXTENSIONS = {
    ".tfrecord": "tfrecord",
    ".tfrecords": "tfrecord",
    ".tfrec": "tfrecord",
    ".tfr": "tfrecord",
    ".record": "tfrecord",
    ".records": "tfrecord",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "arrow",
    ".feather": "arrow",
    ".ipc": "arrow",
    ".tar": "webdataset",
    ".array_record": "array_record",
}
_COMPRESSIONS = {".gz": "GZIP", ".gzip": "GZIP", ".zz": "ZLIB", ".zlib": "ZLIB"}

#: Extensions of formats ``convert`` does not write, named in the refusal.
_OTHERS = {
    ".riegeli": "Riegeli",
    ".csv": "CSV",
    ".tsv": "TSV",
    ".json": "JSON",
    ".jsonl": "JSON lines",
    ".npy": "NumPy",
    ".npz": "NumPy",
    ".avro": "Avro",
    ".orc": "ORC",
    ".h5": "HDF5",
    ".hdf5": "HDF5",
    ".lance": "Lance",
    ".zip": "ZIP",
    ".index": "TFRecord index",
    ".bz2": "bzip2-compressed",
    ".xz": "xz-compressed",
    ".zst": "Zstandard-compressed",
    ".lz4": "LZ4-compressed",
    ".snappy": "Snappy-compressed",
}

#: What a name's extension looks like; other dotted parts (``part.00001``,
#: ``run.2024-01-01``) are not extensions.
_EXTENSION = re.compile(r"\.[a-z][a-z0-9_]{0,15}\Z")
_SHARD_SUFFIX = re.compile(r"-\d+-of-\d+\Z")

KNOWN = (
    "TFRecord (.tfrecord, .tfrecords, .tfrec, .tfr, .record, .records or no extension; "
    "GZIP with .gz, ZLIB with .zz / .zlib), Parquet (.parquet, .pq), Arrow IPC / "
    "Feather (.arrow, .feather, .ipc), WebDataset (.tar) and ArrayRecord (.array_record)"
)


@dataclass(frozen=True)
class Target:
    """What to write: the format, and for TFRecords the compression ("" for none)."""

    format: str
    compression: str = ""

    def describe(self) -> str:
        if self.format == "tfrecord":
            return self.compression or "uncompressed"
        return _TITLE[self.format]


def _a(title: str) -> str:
    """The article before a format's name (an Arrow file, a Parquet file)."""
    return "an" if title[:1] in "AEIOU" else "a"


def _extension(name: str) -> str:
    """The name's extension, lower case ("" when it has none)."""
    ext = os.path.splitext(name)[1].lower()
    return ext if _EXTENSION.match(ext) else ""


def _base_name(path: str) -> str:
    """The file name of a path or URL, without a shard suffix."""
    text = os.fspath(path)
    if fs.is_url(text):
        text = text.split("?", 1)[0].split("#", 1)[0]
    name = text.rstrip("/").replace("\\", "/").rsplit("/", 1)[-1]
    return _SHARD_SUFFIX.sub("", name)


def name_says(path: str) -> tuple[Optional[str], Optional[str], str]:
    """``(format, compression, extensions)`` a name says; None for what it does not say.

    Raises :class:`UsageError` for an extension that is not of a format ``convert``
    writes, and for a compression extension on a format that is not TFRecord.
    """
    name = _base_name(path)
    ext = _extension(name)
    compression: Optional[str] = None
    shown = ext
    if ext in _COMPRESSIONS:
        compression = _COMPRESSIONS[ext]
        name = name[: -len(ext)]
        ext = _extension(name)
        shown = ext + shown
    if not ext:
        return (None if compression is None else "tfrecord"), compression, shown
    fmt = _EXTENSIONS.get(ext)
    if fmt is None:
        what = _OTHERS.get(ext)
        said = f"is named as {_a(what)} {what} file" if what else f"has an extension, {ext!r}, "
        said += "" if what else "that convert does not know"
        raise UsageError(
            f"output {path!r} {said}: convert writes {KNOWN}. "
            "Name the output after the format you want written"
        )
    if compression is not None and fmt != "tfrecord":
        why = (
            "its images are compressed already"
            if fmt == "webdataset"
            else "it compresses its own data"
        )
        raise UsageError(
            f"output {path!r}: {shown!r} asks for {compression} compression of a "
            f"{_TITLE[fmt]} file, which convert does not write ({why}): name it with "
            f"{ext!r} alone"
        )
    return fmt, compression, shown


def output_target(path: str, to: Optional[str], compression: Optional[str]) -> Target:
    """What to write to ``path`` given ``--to`` and ``--compression`` (None: not given).

    Raises :class:`UsageError` when the options and the name disagree, or the name's
    extension is unknown.
    """
    fmt, named_comp, shown = name_says(path)
    option_comp = None if compression is None else ("" if compression == "NONE" else compression)
    if fmt is not None and to is not None and to != fmt:
        raise UsageError(
            f"output {path!r} is named as {_a(_TITLE[fmt])} {_TITLE[fmt]} file ({shown!r}) but --to {to} "
            f"writes {_TITLE[to]}: name the output for the format (or leave --to out)"
        )
    fmt = fmt or to or "tfrecord"
    if fmt != "tfrecord":
        if option_comp is not None:
            raise UsageError(f"--compression is for TFRecord output, not {_TITLE[fmt]}")
        return Target(fmt)
    if named_comp is not None and option_comp is not None and named_comp != option_comp:
        raise UsageError(
            f"output {path!r} is named as a {named_comp} file ({shown!r}) but --compression "
            f"{option_comp or 'NONE'} was asked for: name the output for the compression "
            "(or leave --compression out)"
        )
    if named_comp is not None:
        return Target(fmt, named_comp)
    return Target(fmt, option_comp or "")


def input_format(paths: list[str], given: Optional[str]) -> str:
    """The format of the inputs: ``--from``, else Parquet or Arrow when every input's
    name says so, else TFRecord."""
    if given is not None:
        return given
    said = set()
    for p in paths:
        ext = _extension(_base_name(p))
        fmt = _EXTENSIONS.get(ext, "tfrecord") if ext not in _COMPRESSIONS else "tfrecord"
        if fmt not in READS:
            raise UsageError(
                f"input {p!r} is named as {_a(_TITLE[fmt])} {_TITLE[fmt]} file, which convert writes but "
                "does not read: it reads TFRecord, Parquet and Arrow files and TFDS dataset "
                "directories (--from tfrecord reads a TFRecord file of any name)"
            )
        said.add(fmt)
    return said.pop() if len(said) == 1 else "tfrecord"
