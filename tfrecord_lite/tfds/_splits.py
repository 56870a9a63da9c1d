"""Split strings (``"train[:10%]+test"``, ``"train[2shard:]"``) to the files and record
ranges they read, computed as TFDS computes them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from ._dataset_info import DatasetNotFoundError, SplitInfo
from ._paths import check_inside


class FileInstruction(NamedTuple):
    """Read ``take`` records of ``filename`` after skipping ``skip`` (``tfds`` FileInstruction)."""

    filename: str
    skip: int
    take: int
    num_examples: int


_SUB_SPEC = re.compile(r"^(?P<name>[\w-]+)(\[(?P<sel>[\d\w%:._-]+)\])?$")
_SLICE = re.compile(r"^((?P<val>-?[\d_.]+)(?P<unit>%|shard)?)?$")


def _pct(boundary: float, n: int) -> int:
    # TFDS's "closest" rounding: Python's round() (halves to even).
    return round(boundary * n / 100.0)


def _absolute(spec: str, splits: Mapping[str, SplitInfo]) -> list[tuple[str, int, int]]:
    """One ``name[from:to]`` -> ``(split, start, stop)`` as TFDS computes them."""
    m = _SUB_SPEC.match(spec)
    err = f"Unrecognized split format: {spec!r}. See format at https://www.tensorflow.org/datasets/splits"
    if not m:
        raise ValueError(err)
    name, sel = m.group("name"), m.group("sel")
    if name == "all":
        if sel:
            raise NotImplementedError("'all' does not support slicing")
        return [(s, 0, info.num_examples) for s, info in splits.items()]
    if name not in splits:
        raise ValueError(f"Unknown split {name!r}. Should be one of {list(splits)}.")
    info = splits[name]
    n = info.num_examples
    if sel is None:
        return [(name, 0, n)]
    parts = [_SLICE.match(x) for x in sel.split(":")]
    if not all(parts) or not any(p.group(0) for p in parts if p is not None):
        raise ValueError(err)
    frm: Any
    to: Any
    if len(parts) == 1:
        p = parts[0]
        assert p is not None
        unit = p.group("unit") or "abs"
        if unit != "shard":
            raise ValueError("Absolute or percent only support slice syntax.")
        frm, to = p.group("val"), int(p.group("val")) + 1
    elif len(parts) == 2:
        a, b = parts
        assert a is not None and b is not None
        frm, to = a.group("val"), b.group("val")
        unit = a.group("unit") or b.group("unit") or "abs"
    else:
        raise ValueError(err)
    try:
        if frm is not None:
            frm = float(frm) if unit == "%" else int(frm)
        if to is not None:
            to = float(to) if unit == "%" else int(to)
    except ValueError:
        raise ValueError(err) from None
    if unit == "%":
        frm = 0 if frm is None else _pct(frm, n)
        to = n if to is None else _pct(to, n)
    elif unit == "shard":
        lengths = info.shard_lengths
        frm = 0 if frm is None else sum(lengths[:frm])
        if to is not None and to <= 0:
            to = len(lengths) + to
        to = n if to is None else sum(lengths[:to])
    else:
        frm = 0 if frm is None else frm
        to = n if to is None else to
    if abs(frm) > n or abs(to) > n:
        raise ValueError(
            f"Requested slice [{frm or ''}:{to or ''}] incompatible with {n} examples."
        )
    if frm < 0:
        frm += n
    if to < 0:
        to += n
    return [(name, frm, max(frm, to))]


def file_instructions(split: str, splits: Mapping[str, SplitInfo]) -> list[FileInstruction]:
    """The files and record ranges a split string (``"train[:10%]+test"``) reads, in order."""
    if not isinstance(split, str):
        raise TypeError(f"split must be a str such as 'train[:10%]', got {type(split).__name__}")
    subs = [s for s in re.split(r"\s*\+\s*", split.strip())]
    if not subs or not all(subs):
        raise ValueError(f"Unrecognized split format: {split!r}")
    out: list[FileInstruction] = []
    for sub in subs:
        for name, start, stop in _absolute(sub.replace(" ", ""), splits):
            info = splits[name]
            offset = 0
            for fname, length in zip(info.filepaths, info.shard_lengths):
                lo, hi = max(start - offset, 0), min(stop - offset, length)
                if hi > lo:
                    out.append(FileInstruction(fname, lo, hi - lo, length))
                offset += length
    return out


def check_files(files: list[str]) -> None:
    """Raise :class:`DatasetNotFoundError` if a shard file named in the metadata is missing,
    ``ValueError`` if one is a link out of the dataset directory."""
    missing = [f for f in files if not os.path.isfile(f)]
    for f in files:
        if f not in missing:
            check_inside(f)
    if missing:
        raise DatasetNotFoundError(
            f"{len(missing)} shard file(s) named in dataset_info.json are missing, e.g. "
            f"{missing[0]}; the dataset directory is incomplete",
            path=missing[0],
        )
