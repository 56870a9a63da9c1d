"""What ``dataset_info.json`` and ``features.json`` say: :class:`DatasetInfo` and its
:class:`SplitInfo` entries (shard lengths, shard file names from TFDS's file
template), read as untrusted input: sizes are bounded and no name read from them can
make a path outside the directory.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Optional

from .._errors import TFRecordError
from ._features import FeatureConnector
from ._features_json import features_from_json
from ._paths import check_inside

MAX_METADATA_BYTES = 64 * 1024 * 1024
#: Largest number of shards per split accepted from ``dataset_info.json``.
MAX_SHARDS = 1_000_000


_SPLIT_NAME = re.compile(r"^[\w-]+$")
_DATASET_NAME = re.compile(r"^[a-zA-Z][\w]*$")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_DEFAULT_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"


class DatasetNotFoundError(TFRecordError, FileNotFoundError):
    """The dataset is not prepared where it was looked for (nothing is downloaded here)."""


def _read_json(path: str) -> Any:
    try:
        size = os.path.getsize(path)
    except OSError as err:
        raise DatasetNotFoundError(f"cannot read {path}: {err.strerror}", path=path) from None
    check_inside(path)
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"{path}: {size} bytes, more than the {MAX_METADATA_BYTES} accepted")
    with open(path, "rb") as f:
        data = f.read(MAX_METADATA_BYTES + 1)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise ValueError(f"{path} is not valid JSON: {err}") from None


def _int(value: Any, what: str, low: int = 0, high: int = 1 << 62) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"dataset_info.json: {what} must be an integer, got {value!r}") from None
    if isinstance(value, float) and value != n:
        raise ValueError(f"dataset_info.json: {what} must be an integer, got {value!r}")
    if not low <= n <= high:
        raise ValueError(f"dataset_info.json: {what} = {n} is out of range")
    return n


def _shard_names(template: str, dataset: str, split: str, file_format: str, n: int) -> list[str]:
    """TFDS's ``naming.ShardedFileTemplate`` file names, without ``str.format`` (templates are untrusted)."""
    digits = max(5, len(str(n)))
    names = []
    for i in range(n):
        values = {
            "DATASET": dataset,
            "SPLIT": split,
            "FILEFORMAT": file_format,
            "SHARD_INDEX": f"{i:0{digits}d}",
            "NUM_SHARDS": f"{n:0{digits}d}",
            "SHARD_X_OF_Y": f"{i:0{digits}d}-of-{n:0{digits}d}",
        }

        def sub(m: re.Match[str], values: dict[str, str] = values) -> str:
            if m.group(1) not in values:
                raise ValueError(
                    f"dataset_info.json: unknown placeholder {m.group(0)!r} in file template "
                    f"{template!r}"
                )
            return values[m.group(1)]

        name = _PLACEHOLDER.sub(sub, template)
        _check_file_name(name, template)
        names.append(name)
    return names


def _check_file_name(name: str, template: str) -> None:
    if (
        not name
        or "{" in name
        or "}" in name
        or "/" in name
        or "\\" in name
        or "\x00" in name
        or name in (".", "..")
        or os.path.basename(name) != name
    ):
        raise ValueError(
            f"dataset_info.json: file template {template!r} gives {name!r}, which is not a file "
            "name inside the dataset directory"
        )


class SplitInfo:
    """One split of a TFDS dataset (mirrors ``tfds.core.SplitInfo``)."""

    def __init__(
        self,
        name: str,
        shard_lengths: list[int],
        num_bytes: int,
        filenames: list[str],
        data_dir: str,
    ) -> None:
        self.name = name
        self.shard_lengths = list(shard_lengths)
        self.num_bytes = num_bytes
        self.filenames = list(filenames)
        self.data_dir = data_dir

    @property
    def num_examples(self) -> int:
        """Examples in the split."""
        return sum(self.shard_lengths)

    @property
    def num_shards(self) -> int:
        """Shard files of the split."""
        return len(self.shard_lengths)

    @property
    def filepaths(self) -> list[str]:
        """Full paths of the shard files, in order."""
        return [os.path.join(self.data_dir, n) for n in self.filenames]

    def __repr__(self) -> str:
        return (
            f"<SplitInfo num_examples={self.num_examples}, num_shards={self.num_shards}, "
            f"name={self.name!r}>"
        )


class DatasetInfo:
    """What ``dataset_info.json`` and ``features.json`` say (mirrors ``tfds.core.DatasetInfo``).

    ``features`` is the connector tree (a :class:`FeaturesDict`, with ``names`` /
    ``int2str`` on its :class:`ClassLabel` leaves), ``splits`` a dict of
    :class:`SplitInfo`, ``supervised_keys`` a tuple of feature names or None.
    """

    def __init__(self, data_dir: str) -> None:
        self.data_dir = data_dir
        info = _read_json(os.path.join(data_dir, "dataset_info.json"))
        if not isinstance(info, dict):
            raise ValueError(f"{data_dir}/dataset_info.json: not a JSON object")
        self.raw = info
        name = info.get("name", "")
        if not isinstance(name, str) or not _DATASET_NAME.match(name):
            raise ValueError(f"dataset_info.json: bad dataset name {name!r}")
        self.name: str = name
        self.full_name = os.path.basename(data_dir.rstrip(os.sep))
        self.version: str = str(info.get("version", ""))
        self.description: str = str(info.get("description", ""))
        self.citation: str = str(info.get("citation", ""))
        self.config_name: Optional[str] = info.get("configName") or None
        self.config_description: Optional[str] = info.get("configDescription") or None
        location = info.get("location") or {}
        urls = location.get("urls", []) if isinstance(location, dict) else []
        self.homepage: str = str(urls[0]) if urls else ""
        self.release_notes: dict[str, str] = (
            dict(info.get("releaseNotes", {})) if isinstance(info.get("releaseNotes"), dict) else {}
        )
        fmt = info.get("fileFormat") or "tfrecord"
        self.file_format: str = str(fmt)
        self.disable_shuffling: bool = bool(info.get("disableShuffling", False))
        self.supervised_keys = _supervised_keys(info.get("supervisedKeys"))
        self.splits: dict[str, SplitInfo] = {}
        splits = info.get("splits", [])
        if not isinstance(splits, list):
            raise ValueError("dataset_info.json: 'splits' is not a list")
        for s in splits:
            if not isinstance(s, dict):
                raise ValueError("dataset_info.json: a split is not an object")
            split = s.get("name", "")
            if not isinstance(split, str) or not _SPLIT_NAME.match(split):
                raise ValueError(f"dataset_info.json: bad split name {split!r}")
            lengths = s.get("shardLengths", [])
            if not isinstance(lengths, list) or len(lengths) > MAX_SHARDS:
                raise ValueError(f"dataset_info.json: split {split!r}: bad shardLengths")
            shard_lengths = [_int(n, f"split {split!r} shard length") for n in lengths]
            template = s.get("filepathTemplate") or _DEFAULT_TEMPLATE
            if not isinstance(template, str) or len(template) > 1000:
                raise ValueError(f"dataset_info.json: split {split!r}: bad filepathTemplate")
            names = _shard_names(template, name, split, self.file_format, len(shard_lengths))
            self.splits[split] = SplitInfo(
                split,
                shard_lengths,
                _int(s.get("numBytes", 0), f"split {split!r} numBytes"),
                names,
                data_dir,
            )
        features_path = os.path.join(data_dir, "features.json")
        if not os.path.isfile(features_path):
            raise DatasetNotFoundError(
                f"{data_dir} has no features.json (it is written by TFDS since version 4.0; "
                "re-prepare the dataset with a recent tensorflow-datasets)",
                path=features_path,
            )
        self.features: FeatureConnector = features_from_json(_read_json(features_path))
        self.features.load_metadata(data_dir, "")

    @property
    def splits_total(self) -> int:
        """Examples in all splits together."""
        return sum(s.num_examples for s in self.splits.values())

    def __repr__(self) -> str:
        splits = ", ".join(f"{k!r}: {v!r}" for k, v in self.splits.items())
        return (
            f"tfds.core.DatasetInfo(\n    name={self.name!r},\n    full_name={self.full_name!r},\n"
            f"    version={self.version!r},\n    description={self.description!r},\n"
            f"    features={self.features!r},\n    supervised_keys={self.supervised_keys!r},\n"
            f"    splits={{{splits}}},\n)"
        )


def _supervised_keys(value: Any) -> Optional[tuple[Any, ...]]:
    """``supervisedKeys`` as TFDS writes it (``tuple.items[].featureKey``, or old ``input``/``output``)."""
    if not value or not isinstance(value, dict):
        return None

    def one(item: Any) -> Any:
        if isinstance(item, dict):
            if "featureKey" in item:
                return str(item["featureKey"])
            if "tuple" in item:
                return tuple(one(i) for i in item["tuple"].get("items", []))
            if "dict" in item:
                return {str(k): one(v) for k, v in item["dict"].get("dict", {}).items()}
        raise ValueError(f"dataset_info.json: bad supervisedKeys entry {item!r}")

    if "tuple" in value:
        return tuple(one(i) for i in value["tuple"].get("items", []))
    if "input" in value and "output" in value:
        return (str(value["input"]), str(value["output"]))
    return None
