"""``tfrecord-lite info DIR`` and ``preview DIR`` on a prepared TFDS dataset directory.

Called by the ``info`` and ``preview`` commands when its inputs are TFDS directories (they hold
``dataset_info.json`` and ``features.json``).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from .._version import __version__
from ..tfds import (
    ClassLabel,
    FeatureConnector,
    FeaturesDict,
    Image,
    Video,
)
from ..tfds import (
    Sequence as Seq,
)
from ._output import save_grid, table


def tfds_dirs(items: Sequence[str]) -> Optional[list[str]]:
    """The TFDS directories among ``items``: all of them, or None if none is one.

    A mix of TFDS directories and other inputs is a ``ValueError``.
    """
    from ..tfds import is_tfds_dir

    flags = [os.path.isdir(p) and is_tfds_dir(p) for p in items]
    if not any(flags):
        return None
    if not all(flags):
        raise ValueError(
            "give either TFDS dataset directories or TFRecord files, not both "
            f"({items[flags.index(False)]!r} is not a TFDS dataset directory)"
        )
    return list(items)


def _describe(f: FeatureConnector) -> str:
    if isinstance(f, ClassLabel):
        return f"ClassLabel(num_classes={f.num_classes})"
    if isinstance(f, Video):
        return f"Video({f.encoding_format})"
    if isinstance(f, Image):
        return f"Image({f.encoding_format or 'png'})"
    if isinstance(f, Seq):
        return f"Sequence({_describe(f.feature)})"
    enc = getattr(f, "encoding", "none")
    return type(f).__name__ + (f"(encoding={enc})" if enc != "none" else "")


def _flat(f: FeatureConnector, prefix: str = "") -> list[tuple[str, FeatureConnector]]:
    if isinstance(f, FeaturesDict):
        out = []
        for k, v in f.items():
            out += _flat(v, f"{prefix}/{k}" if prefix else k)
        return out
    if isinstance(f, Seq) and not isinstance(f, Video) and isinstance(f.feature, FeaturesDict):
        return [(k, Seq(v, f.length)) for k, v in _flat(f.feature, prefix)]
    return [(prefix, f)]


def _shape_text(shape: Any) -> str:
    inner = ", ".join("None" if d is None else str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def _dtype_text(dtype: Any) -> str:
    return "string" if np.dtype(dtype) == np.object_ else np.dtype(dtype).name


def _report(path: str) -> tuple[dict[str, Any], list[str]]:
    from ..tfds import builder_from_directory

    b = builder_from_directory(path)
    info = b.info
    problems = [
        f"{p}: missing shard file"
        for s in info.splits.values()
        for p in s.filepaths
        if not os.path.isfile(p)
    ]
    features = []
    for key, f in _flat(info.features):
        entry: dict[str, Any] = {
            "feature": key,
            "connector": _describe(f),
            "shape": _shape_text(f.shape),
            "dtype": _dtype_text(f.dtype),
        }
        leaf = f.feature if isinstance(f, Seq) and not isinstance(f, Video) else f
        if isinstance(leaf, ClassLabel):
            names = leaf.names
            entry["classes"] = names[:8] + (["..."] if len(names) > 8 else [])
        features.append(entry)
    report = {
        "path": path,
        "format": "tfds",
        "name": info.name,
        "version": info.version,
        "config": info.config_name,
        "description": info.description,
        "file_format": info.file_format,
        "supervised_keys": list(info.supervised_keys) if info.supervised_keys else None,
        "splits": [
            {
                "name": s.name,
                "examples": s.num_examples,
                "shards": s.num_shards,
                "bytes": s.num_bytes,
            }
            for s in info.splits.values()
        ],
        "features": features,
        "problems": problems,
    }
    return report, problems


def _text(report: dict[str, Any]) -> list[str]:
    lines = ["", report["path"]]
    config = f", config {report['config']}" if report["config"] else ""
    lines.append(
        f"  TFDS dataset: {report['name']} {report['version']}{config} ({report['file_format']})"
    )
    if report["description"]:
        first = report["description"].strip().splitlines()[0]
        lines.append(f"  description:  {first[:100]}")
    if report["supervised_keys"]:
        lines.append(f"  supervised:   ({', '.join(map(str, report['supervised_keys']))})")
    total = sum(s["examples"] for s in report["splits"])
    lines.append(f"  splits ({len(report['splits'])}, {total:,} examples):")
    rows = [["split", "examples", "shards", "bytes"]]
    rows += [
        [s["name"], f"{s['examples']:,}", str(s["shards"]), f"{s['bytes']:,}"]
        for s in report["splits"]
    ]
    lines += table(rows)
    lines.append(f"  features ({len(report['features'])}):")
    rows = [["feature", "connector", "shape", "dtype", "classes"]]
    for f in report["features"]:
        rows.append(
            [f["feature"], f["connector"], f["shape"], f["dtype"], ", ".join(f.get("classes", []))]
        )
    lines += table(rows)
    for p in report["problems"]:
        lines.append(f"  problem: {p}")
    return lines


def info(dirs: list[str], args: argparse.Namespace) -> int:
    """``tfrecord-lite info DIR...``: splits, counts and features of TFDS directories."""
    from .._record import crc_backend

    reports = []
    problems = 0
    if not args.json:
        print(f"tfrecord-lite {__version__}, CRC32C backend: {crc_backend()}")
    for d in dirs:
        report, bad = _report(d)
        problems += len(bad)
        reports.append(report)
        if not args.json:
            print("\n".join(_text(report)))
    if args.json:
        print(json.dumps({"version": __version__, "datasets": reports}, indent=2))
    return 1 if problems else 0


def verify(dirs: list[str], no_parse: bool, quiet: bool) -> int:
    """``tfrecord-lite verify DIR...``: every record of every split read and decoded.

    Each shard's records are CRC-checked and counted against ``shardLengths``; every
    example is decoded as ``as_dataset`` decodes it (unless ``no_parse``). Each problem
    is one line; the exit code is 1 if there is any.
    """
    from .._errors import TFRecordError
    from .._files import read_records
    from ..tfds import builder_from_directory

    problems = 0
    for d in dirs:
        b = builder_from_directory(d)
        found = 0
        for split, info in b.info.splits.items():
            try:
                if no_parse:
                    for path, n in zip(info.filepaths, info.shard_lengths):
                        count = sum(1 for _ in read_records(path, ""))
                        if count != n:
                            raise TFRecordError(
                                f"{path} holds {count} records, dataset_info.json says {n}",
                                path=path,
                            )
                else:
                    source = b.as_data_source(split)
                    for start in range(0, len(source), 256):
                        source[start : min(start + 256, len(source))]
            except (TFRecordError, ValueError, OSError) as err:
                found += 1
                print(f"{d}: split {split!r}: {err}")
        problems += found
        if found:
            print(f"FAILED {d}: {found} split{'s' if found > 1 else ''} with problems")
        elif not quiet:
            print(f"ok     {d}: {b.info.splits_total:,} examples in {len(b.info.splits)} splits")
    return 1 if problems else 0


def _default_image_key(features: FeatureConnector) -> Optional[str]:
    for key, f in _flat(features):
        if isinstance(f, (Image, Video)):
            return key
    return None


def _default_label_key(b: Any) -> Optional[str]:
    keys = b.info.supervised_keys
    flat = dict(_flat(b.info.features))
    if (
        keys
        and len(keys) == 2
        and isinstance(keys[1], str)
        and isinstance(flat.get(keys[1]), ClassLabel)
    ):
        return str(keys[1])
    for key, f in flat.items():
        if isinstance(f, ClassLabel):
            return key
    return None


def _get(example: Any, key: str) -> Any:
    for part in key.split("/"):
        example = example[part]
    return example


def preview_cells(
    path: str,
    split: Optional[str],
    image_key: Optional[str],
    label_key: Optional[str],
    n: int,
    skip: int,
) -> tuple[list[tuple[Optional[np.ndarray], Optional[str]]], str]:
    """``(cells for draw_grid, the split read)`` of the first ``n`` examples after ``skip``."""
    from .._decoding import display_array
    from ..tfds import builder_from_directory

    b = builder_from_directory(path)
    split = split or ("train" if "train" in b.info.splits else next(iter(b.info.splits)))
    flat = dict(_flat(b.info.features))
    key = image_key or _default_image_key(b.info.features)
    if key is None:
        raise ValueError(f"{path}: no Image feature to preview; pass --image-key")
    if key not in flat:
        raise ValueError(f"{path}: no feature {key!r} (features: {', '.join(sorted(flat))})")
    label = label_key or _default_label_key(b)
    if label is not None and label not in flat:
        raise ValueError(f"{path}: no feature {label!r} (features: {', '.join(sorted(flat))})")
    names = flat[label] if label is not None and isinstance(flat[label], ClassLabel) else None
    cells: list[tuple[Optional[np.ndarray], Optional[str]]] = []
    for ex in b.as_dataset(split, read_config=None).skip(skip).take(n):
        arr = np.asarray(_get(ex, key))
        if isinstance(flat[key], Video) and arr.ndim == 4:
            arr = arr[0] if len(arr) else np.zeros((1, 1), np.uint8)
        text = None
        if label is not None:
            value = _get(ex, label)
            if isinstance(value, bytes):
                text = value.decode("utf-8", "replace")
            elif np.ndim(value) == 0:
                text = str(value)
                if isinstance(names, ClassLabel) and names.names:
                    i = int(value)
                    if 0 <= i < len(names.names) and names.names[i] != str(i):
                        text = f"{i} {names.names[i]}"
        cells.append((display_array(arr), text))
    return cells, split


def preview(dirs: list[str], args: argparse.Namespace, quiet: bool) -> int:
    """``tfrecord-lite preview DIR -o grid.png``: the first images of a TFDS split."""
    from .._decoding import draw_grid, pil

    pil()
    if len(dirs) != 1:
        raise ValueError("preview takes one TFDS dataset directory")
    cells, split = preview_cells(
        dirs[0], getattr(args, "split", None), args.image_key, args.label_key, args.n, args.skip
    )
    if not cells:
        print(f"tfrecord-lite: error: split {split!r} has no examples to preview")
        return 1
    grid = draw_grid(cells, cell=args.cell, cols=args.cols)
    save_grid(grid, args.output)
    if not quiet:
        print(
            f"wrote {args.output}: {len(cells)} image{'s' if len(cells) != 1 else ''} of "
            f"split {split!r}, {grid.width}x{grid.height} pixels"
        )
    return 0
