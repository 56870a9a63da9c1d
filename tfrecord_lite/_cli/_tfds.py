"""``tfrecord-lite info DIR``, ``verify DIR`` and ``preview DIR`` on a prepared TFDS dataset
directory.

Called by the ``info``, ``verify`` and ``preview`` commands when its inputs are TFDS directories
(they hold ``dataset_info.json`` and ``features.json``). An episodic (RLDS) dataset, whose
``steps`` feature is a ``tfds.features.Dataset``, is listed with its steps' features under
``steps/`` and previewed step by step (``Builder.as_steps``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from .._version import __version__
from ..tfds import (
    ClassLabel,
    Dataset,
    FeatureConnector,
    FeaturesDict,
    Image,
    Video,
)
from ..tfds import (
    Sequence as Seq,
)
from ._output import plural, save_grid, table

#: A preview cell: the picture (None: crossed out) and its caption.
Cell = tuple[Optional[np.ndarray], Optional[str]]


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
    if isinstance(f, Dataset):
        return f"Dataset({_describe(f.feature)})"
    if isinstance(f, Seq):
        return f"Sequence({_describe(f.feature)})"
    enc = getattr(f, "encoding", "none")
    return type(f).__name__ + (f"(encoding={enc})" if enc != "none" else "")


def _flat(f: FeatureConnector, prefix: str = "") -> list[tuple[str, FeatureConnector]]:
    """``(key, connector)`` of every leaf, keys ``/``-joined; a leaf inside a Sequence (a
    Dataset: an episode's steps) of dicts is that Sequence (Dataset) of the leaf."""
    if isinstance(f, FeaturesDict):
        out = []
        for k, v in f.items():
            out += _flat(v, f"{prefix}/{k}" if prefix else k)
        return out
    if isinstance(f, Seq) and not isinstance(f, Video) and isinstance(f.feature, FeaturesDict):
        inner = _flat(f.feature, prefix)
        if isinstance(f, Dataset):
            return [(k, Dataset(v)) for k, v in inner]
        return [(k, Seq(v, f.length)) for k, v in inner]
    return [(prefix, f)]


def _episode_steps(features: FeatureConnector) -> list[str]:
    """The top-level features that are a ``tfds.features.Dataset`` (RLDS ``steps``)."""
    if not isinstance(features, FeaturesDict):
        return []
    return [k for k, f in features.items() if isinstance(f, Dataset)]


def _step_features(features: FeatureConnector, steps: str) -> dict[str, FeatureConnector]:
    """The features of one step of the Dataset feature ``steps``, keyed as ``as_steps``
    gives them (``observation/image``; a Dataset of one feature: under its own name)."""
    assert isinstance(features, FeaturesDict)
    dataset = features[steps]
    assert isinstance(dataset, Dataset)
    if isinstance(dataset.feature, FeaturesDict):
        return dict(_flat(dataset.feature))
    return {steps: dataset.feature}


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
    episodic = _episode_steps(info.features)
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
        "episode_steps": episodic,
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
    episodic = report["episode_steps"]
    if episodic:
        names = ", ".join(repr(k) for k in episodic)
        lines.append(
            f"  episodes:     each example is an episode; {names} (tfds.features.Dataset) "
            "holds its steps, listed below as Dataset(...)"
        )
    total = sum(s["examples"] for s in report["splits"])
    unit = "episodes" if episodic else "examples"
    lines.append(f"  splits ({len(report['splits'])}, {total:,} {unit}):")
    rows = [["split", unit, "shards", "bytes"]]
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
            total = plural(b.info.splits_total, "example")
            print(f"ok     {d}: {total} in {len(b.info.splits)} splits")
    return 1 if problems else 0


def _default_image_key(features: dict[str, FeatureConnector]) -> Optional[str]:
    """The first ``Image`` (or ``Video``) among flat ``features``."""
    for key, f in features.items():
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


def _label_text(value: Any, connector: Optional[FeatureConnector]) -> Optional[str]:
    """A label's caption: text as text, a class as ``index name``, another scalar as is."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if np.ndim(value) != 0:
        return None
    text = str(value)
    if isinstance(connector, ClassLabel) and connector.names:
        i = int(value)
        if 0 <= i < len(connector.names) and connector.names[i] != str(i):
            text = f"{i} {connector.names[i]}"
    return text


def _picture(value: Any, connector: FeatureConnector) -> np.ndarray:
    """The array to draw for an image feature's value (a video: its first frame)."""
    from .._decoding import display_array

    arr = np.asarray(value)
    if isinstance(connector, Video) and arr.ndim == 4:
        arr = arr[0] if len(arr) else np.zeros((1, 1), np.uint8)
    return display_array(arr)


class Preview(NamedTuple):
    """What ``preview`` draws: the cells, what they are (``image`` / ``frame``), where they
    come from (``split 'train'``) and what to say when there is nothing to draw."""

    cells: list[Cell]
    unit: str
    source: str
    empty: str


class _Steps(NamedTuple):
    """An episodic preview: the Dataset feature and the image key within a step."""

    feature: str
    image_key: str


def _steps_to_preview(features: FeatureConnector, image_key: Optional[str]) -> Optional[_Steps]:
    """The steps to draw when the image is a step's (RLDS), else None (an example's image).

    ``image_key`` names a step's feature as ``as_steps`` gives it (``observation/image``)
    or with the Dataset feature in front (``steps/observation/image``); without it, the
    first Image of the first Dataset feature that has one. A key of the episode itself is
    an example's image.
    """
    names = _episode_steps(features)
    if not names:
        return None
    flat = dict(_flat(features))
    if image_key is not None and image_key in flat and not isinstance(flat[image_key], Dataset):
        return None
    for name in names:
        step = _step_features(features, name)
        if image_key is None:
            key = _default_image_key(step)
            if key is not None:
                return _Steps(name, key)
            continue
        inner = image_key[len(name) + 1 :] if image_key.startswith(name + "/") else image_key
        if inner in step:
            return _Steps(name, inner)
    return None


def _step_label(
    path: str, features: FeatureConnector, steps: str, label_key: Optional[str]
) -> tuple[Optional[str], Optional[FeatureConnector], tuple[str, ...]]:
    """``(key in a step element, its connector, episode_keys for as_steps)`` of a label:
    a step's feature (``gripper``, ``steps/gripper``) or the episode's
    (``episode_metadata/episode_id``, copied into every step)."""
    if label_key is None:
        return None, None, ()
    step = _step_features(features, steps)
    inner = label_key[len(steps) + 1 :] if label_key.startswith(steps + "/") else label_key
    if inner in step:
        return inner, step[inner], ()
    flat = dict(_flat(features))
    if label_key in flat and not isinstance(flat[label_key], Dataset):
        return label_key, flat[label_key], (label_key.split("/")[0],)
    raise ValueError(
        f"{path}: no feature {label_key!r} in the steps of {steps!r} ({', '.join(sorted(step))}) "
        f"or in the episode ({', '.join(k for k in sorted(flat) if k.split('/')[0] != steps)})"
    )


def _step_cells(
    path: str, b: Any, split: str, steps: _Steps, label_key: Optional[str], n: int, skip: int
) -> Preview:
    """The first ``n`` steps of the episodes after the first ``skip``, one cell each: the
    step's image, captioned with its index in its episode (or ``label_key``'s value)."""
    step = _step_features(b.info.features, steps.feature)
    label, label_connector, episode_keys = _step_label(
        path, b.info.features, steps.feature, label_key
    )
    ds = b.as_steps(split, steps=steps.feature, episode_keys=episode_keys)
    if skip:
        ds = ds.filter(lambda element: int(element["episode_index"]) >= skip)
    cells: list[Cell] = []
    episodes: list[int] = []
    for element in ds.take(n):
        arr = _picture(_get(element, steps.image_key), step[steps.image_key])
        if label is None:
            text: Optional[str] = str(int(element["step_index"]))
        else:
            text = _label_text(_get(element, label), label_connector)
        cells.append((arr, text))
        episode = int(element["episode_index"])
        if not episodes or episodes[-1] != episode:
            episodes.append(episode)
    shown = (
        f"{steps.feature}/{steps.image_key}" if steps.image_key != steps.feature else steps.feature
    )
    if not episodes:
        where = f"split {split!r}" + (f" after {plural(skip, 'episode')}" if skip else "")
        return Preview(cells, "frame", where, f"{where} has no steps to preview")
    span = str(episodes[0]) if len(episodes) == 1 else f"{episodes[0]}-{episodes[-1]}"
    which = "episode" if len(episodes) == 1 else "episodes"
    source = f"{shown}, {which} {span} of split {split!r}"
    return Preview(cells, "frame", source, "")


def preview_cells(
    path: str,
    split: Optional[str],
    image_key: Optional[str],
    label_key: Optional[str],
    n: int,
    skip: int,
) -> Preview:
    """The cells of the first ``n`` examples after ``skip``, or of an episodic (RLDS)
    dataset's first ``n`` steps of the episodes after ``skip``."""
    from ..tfds import builder_from_directory

    b = builder_from_directory(path)
    split = split or ("train" if "train" in b.info.splits else next(iter(b.info.splits)))
    steps = _steps_to_preview(b.info.features, image_key)
    if steps is not None:
        return _step_cells(path, b, split, steps, label_key, n, skip)
    flat = dict(_flat(b.info.features))
    key = image_key or _default_image_key(flat)
    if key is None:
        raise ValueError(f"{path}: no Image feature to preview; pass --image-key")
    if key not in flat:
        raise ValueError(f"{path}: no feature {key!r} (features: {', '.join(sorted(flat))})")
    label = label_key or _default_label_key(b)
    if label is not None and label not in flat:
        raise ValueError(f"{path}: no feature {label!r} (features: {', '.join(sorted(flat))})")
    cells: list[Cell] = []
    for ex in b.as_dataset(split, read_config=None).skip(skip).take(n):
        text = None if label is None else _label_text(_get(ex, label), flat[label])
        cells.append((_picture(_get(ex, key), flat[key]), text))
    where = f"split {split!r}"
    return Preview(cells, "image", where, f"split {split!r} has no examples to preview")


def preview(dirs: list[str], args: argparse.Namespace, quiet: bool) -> int:
    """``tfrecord-lite preview DIR -o grid.png``: the first images of a TFDS split (of an
    episodic dataset: the first steps' images)."""
    from .._decoding import draw_grid, pil

    pil()
    if len(dirs) != 1:
        raise ValueError("preview takes one TFDS dataset directory")
    got = preview_cells(
        dirs[0], getattr(args, "split", None), args.image_key, args.label_key, args.n, args.skip
    )
    if not got.cells:
        print(f"tfrecord-lite: error: {got.empty}", file=sys.stderr)
        return 1
    grid = draw_grid(got.cells, cell=args.cell, cols=args.cols)
    save_grid(grid, args.output)
    if not quiet:
        print(
            f"wrote {args.output}: {plural(len(got.cells), got.unit)} of {got.source}, "
            f"{grid.width}x{grid.height} pixels"
        )
    return 0
