"""TensorFlow Datasets (TFDS) directories without TensorFlow.

``tfds build`` / ``download_and_prepare`` leave a directory such as
``~/tensorflow_datasets/mnist/3.0.1/`` holding ``dataset_info.json``,
``features.json``, ``<feature>.labels.txt`` files and the shards
``mnist-train.tfrecord-00000-of-00001``. This module opens such a directory and
decodes its examples exactly as ``tfds.as_numpy(builder.as_dataset(...))`` yields
them (images, class labels, text, encoded tensors, sequences, ragged values)::

    import tfrecord_lite.tfds as tfds

    builder = tfds.builder_from_directory("~/tensorflow_datasets/mnist/3.0.1")
    builder.info.splits["train"].num_examples            # 60000
    for ex in builder.as_dataset(split="train[:10%]"):    # a TFRecordDataset pipeline
        ex["image"], ex["label"]                          # uint8 (28, 28, 1), np.int64
    source = builder.as_data_source("test")               # random access, for Grain
    len(source), source[0], source[10:20]

    ds = tfds.load("mnist", split="train", as_supervised=True)   # prepared under ~/tensorflow_datasets

Nothing is downloaded or prepared: prepare datasets with TFDS (``tfds build NAME``)
on any machine, then read them here. Images need the ``image`` extra
(``tfrecord-lite[image]``: Pillow, and simplejpeg for JPEG pixels exactly as TensorFlow
decodes them).
``dataset_info.json`` and ``features.json`` are treated as untrusted input: sizes
are bounded and no name read from them can make a path outside the directory.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import re
import struct
import threading
from collections.abc import Iterator, Mapping
from collections.abc import Sequence as _Seq
from typing import Any, NamedTuple, Optional, Union

import numpy as np

from .._data import TFRecordDataset
from .._errors import TFRecordError
from .._examples import parse_single_example
from .._files import StaleIndexError, TFRecordFile, create_index, find_index
from .._record import masked_crc32c
from ._features import (
    Audio,
    BBoxFeature,
    ClassLabel,
    ExampleDecoder,
    FeatureConnector,
    FeaturesDict,
    Image,
    Scalar,
    Sequence,
    Tensor,
    Text,
    UnsupportedFeatureError,
    Video,
    features_from_json,
)

__all__ = [
    "Audio",
    "BBoxFeature",
    "Builder",
    "ClassLabel",
    "DataSource",
    "DatasetInfo",
    "DatasetNotFoundError",
    "FeatureConnector",
    "FeaturesDict",
    "FileInstruction",
    "Image",
    "ReadConfig",
    "Scalar",
    "Sequence",
    "SkipDecoding",
    "SplitInfo",
    "Tensor",
    "Text",
    "UnsupportedFeatureError",
    "Video",
    "builder",
    "builder_from_directory",
    "data_source",
    "default_data_dir",
    "file_instructions",
    "load",
]

#: Largest ``dataset_info.json`` / ``features.json`` read (they are a few KB in practice).
MAX_METADATA_BYTES = 64 * 1024 * 1024
#: Largest number of shards per split accepted from ``dataset_info.json``.
MAX_SHARDS = 1_000_000
#: ``tf.data`` interleave TFDS uses when reading several files (``ReadConfig`` defaults).
DEFAULT_CYCLE_LENGTH = 16
DEFAULT_BLOCK_LENGTH = 16
#: Records parsed together by ``as_dataset`` (one vectorized ``parse_example`` call).
DECODE_BATCH = 64

_HEADER = struct.Struct("<QI")
_CRC = struct.Struct("<I")
_SPLIT_NAME = re.compile(r"^[\w-]+$")
_DATASET_NAME = re.compile(r"^[a-zA-Z][\w]*$")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_DEFAULT_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"


class DatasetNotFoundError(TFRecordError, FileNotFoundError):
    """The dataset is not prepared where it was looked for (nothing is downloaded here)."""


class SkipDecoding:
    """``tfds.decode.SkipDecoding()``: return a feature's stored value (e.g. the encoded image bytes)."""

    def __repr__(self) -> str:
        return "SkipDecoding()"


class ReadConfig(NamedTuple):
    """The parts of ``tfds.ReadConfig`` that apply here.

    ``shuffle_seed``: the file order seed with ``shuffle_files=True``;
    ``interleave_cycle_length`` / ``interleave_block_length``: how files are
    interleaved (TFDS's defaults: 16 and 16; cycle length 1 reads files in turn).
    """

    shuffle_seed: Optional[int] = None
    interleave_cycle_length: int = DEFAULT_CYCLE_LENGTH
    interleave_block_length: int = DEFAULT_BLOCK_LENGTH


# --------------------------------------------------------------------------- metadata


def _read_json(path: str) -> Any:
    try:
        size = os.path.getsize(path)
    except OSError as err:
        raise DatasetNotFoundError(f"cannot read {path}: {err.strerror}", path=path) from None
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


# --------------------------------------------------------------------------- split strings


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


# --------------------------------------------------------------------------- builder


def _decoder_skips(decoders: Any, features: FeatureConnector) -> frozenset[str]:
    """``decoders={"image": SkipDecoding()}`` (nested dicts allowed) -> flat keys to leave encoded."""
    if decoders is None:
        return frozenset()
    if not isinstance(decoders, Mapping):
        raise TypeError("decoders must be a (nested) dict of feature name -> SkipDecoding()")
    keys = {k for k, _, _ in features.leaves("")}
    out = set()

    def walk(d: Mapping[str, Any], prefix: str) -> None:
        for k, v in d.items():
            key = f"{prefix}/{k}" if prefix else str(k)
            if isinstance(v, Mapping):
                walk(v, key)
            elif isinstance(v, SkipDecoding) or type(v).__name__ == "SkipDecoding":
                matched = {x for x in keys if x == key or x.startswith(key + "/")}
                if not matched:
                    raise ValueError(f"decoders: no feature {key!r}")
                out.update(matched)
            else:
                raise UnsupportedFeatureError(
                    f"decoders: only SkipDecoding() is supported, got {v!r} for {key!r} "
                    "(apply your own function with .map() after as_dataset())"
                )

    walk(decoders, "")
    return frozenset(out)


class _Decode:
    """Picklable record(s) -> example(s) functions (with the optional supervised tuple)."""

    def __init__(self, decoder: ExampleDecoder, supervised: Optional[tuple[Any, ...]]) -> None:
        self.decoder = decoder
        self.supervised = supervised

    def __call__(self, record: bytes) -> Any:
        example = self.decoder.decode_one(record)
        if self.supervised is not None:
            return _select(example, self.supervised)
        return example

    def many(self, records: list[bytes]) -> list[Any]:
        examples = self.decoder.decode_batch(records)
        if self.supervised is not None:
            return [_select(e, self.supervised) for e in examples]
        return examples

    def reference(self, record: bytes) -> Any:
        """The slow path through ``parse_single_example`` with TFDS's own specs (for tests)."""
        example = self.decoder.decode_parsed(parse_single_example(record, self.decoder.specs))
        if self.supervised is not None:
            return _select(example, self.supervised)
        return example


def _select(example: dict[str, Any], keys: Any) -> Any:
    if isinstance(keys, tuple):
        return tuple(_select(example, k) for k in keys)
    if isinstance(keys, dict):
        return {k: _select(example, v) for k, v in keys.items()}
    return example[keys]


class Builder:
    """A prepared TFDS dataset directory (mirrors ``tfds.core.ReadOnlyBuilder``)."""

    def __init__(self, data_dir: Union[str, os.PathLike[str]]) -> None:
        path = os.path.abspath(os.path.expanduser(os.fspath(data_dir)))
        if not os.path.isfile(os.path.join(path, "dataset_info.json")):
            raise DatasetNotFoundError(
                f"{path} is not a prepared TFDS dataset directory (no dataset_info.json); it "
                "is the directory holding dataset_info.json and the shards, such as "
                "~/tensorflow_datasets/mnist/3.0.1",
                path=path,
            )
        self.data_dir = path
        self.info = DatasetInfo(path)
        if self.info.file_format != "tfrecord":
            raise UnsupportedFeatureError(
                f"{path}: file format {self.info.file_format!r}; tfrecord_lite reads TFDS "
                "datasets prepared as tfrecord (the default; `tfds build --file_format=tfrecord`)"
            )

    @property
    def name(self) -> str:
        """The dataset name."""
        return self.info.name

    @property
    def version(self) -> str:
        """The dataset version."""
        return self.info.version

    def _decode_fn(self, decoders: Any, as_supervised: bool) -> _Decode:
        supervised = None
        if as_supervised:
            if self.info.supervised_keys is None:
                raise ValueError(
                    f"as_supervised=True, but {self.info.name} has no supervised_keys "
                    "(dataset_info.json defines none)"
                )
            supervised = self.info.supervised_keys
        skips = _decoder_skips(decoders, self.info.features)
        return _Decode(ExampleDecoder(self.info.features, skips), supervised)

    def as_dataset(
        self,
        split: str,
        shuffle_files: bool = False,
        decoders: Any = None,
        as_supervised: bool = False,
        read_config: Optional[ReadConfig] = None,
        batch_size: Optional[int] = None,
        num_parallel_calls: Optional[int] = None,
    ) -> TFRecordDataset:
        """The examples of ``split`` (``"train"``, ``"train[:10%]"``, ``"train+test"``...) as a pipeline.

        Yields what ``tfds.as_numpy(builder.as_dataset(...))`` yields, in the same
        order: nested dicts of NumPy arrays, NumPy scalars and ``bytes``
        (``as_supervised=True``: the ``supervised_keys`` tuple; a ragged feature is a
        :class:`~tfrecord_lite.RaggedValue`). Files are interleaved as TFDS does
        (16 at a time, 16 records each); ``shuffle_files`` shuffles the file order
        (``read_config.shuffle_seed``). ``decoders={"image": SkipDecoding()}``
        leaves a feature encoded. ``batch_size`` batches (``.batch()``).
        The result is a :class:`~tfrecord_lite.TFRecordDataset`: chain ``shuffle``,
        ``batch``, ``prefetch``, ``shard`` ... on it. ``num_parallel_calls=N`` (or
        :data:`~tfrecord_lite.AUTOTUNE`) decodes on N threads, keeping the order
        (worth it for images: Pillow releases the GIL while decoding).
        """
        rc = read_config or ReadConfig()
        instructions = file_instructions(split, self.info.splits)
        if not instructions:
            raise ValueError(f"split {split!r} of {self.info.name} holds no examples")
        files = [fi.filename for fi in instructions]
        _check_files(files)
        ds: TFRecordDataset = TFRecordDataset(files, compression="")
        windows = {
            fi.filename: (fi.skip, fi.take)
            for fi in instructions
            if fi.skip or fi.take != fi.num_examples
        }
        if windows:
            ds = ds._derive(windows=windows)
        if shuffle_files:
            ds = ds.shuffle_files(seed=rc.shuffle_seed)
        cycle = 1 if self.info.disable_shuffling else rc.interleave_cycle_length
        if len(files) > 1 and cycle > 1:
            ds = ds.interleave(cycle, rc.interleave_block_length)
        # Records are parsed DECODE_BATCH at a time (one vectorized parse_example), then
        # handed out one example at a time again.
        decode = self._decode_fn(decoders, as_supervised)
        ds = ds.batch(DECODE_BATCH).map(decode.many, num_parallel_calls=num_parallel_calls)
        ds = ds.unbatch()
        if batch_size is not None:
            ds = ds.batch(batch_size)
        return ds

    def as_data_source(
        self,
        split: str,
        *,
        decoders: Any = None,
        as_supervised: bool = False,
        index_dir: Optional[str] = None,
    ) -> DataSource:
        """Random access to ``split``: ``len(src)``, ``src[i]``, ``src[a:b]``, ``src[[i, j]]``.

        A Grain ``RandomAccessDataSource`` (picklable for worker processes). Needs an
        index of each shard: ``<shard>.index`` beside it if present, else one built
        once (a streaming pass over the record headers) and kept in ``index_dir``
        (default: ``$TFRECORD_LITE_CACHE_DIR`` or ``~/.cache/tfrecord_lite/tfds``), so a
        read-only dataset directory works; if that is not writable either, the index
        is kept in memory.
        """
        return DataSource(
            self, split, decoders=decoders, as_supervised=as_supervised, index_dir=index_dir
        )

    def __repr__(self) -> str:
        return f"<tfrecord_lite.tfds.Builder {self.info.name} {self.info.version} at {self.data_dir!r}>"


def _check_files(files: list[str]) -> None:
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise DatasetNotFoundError(
            f"{len(missing)} shard file(s) named in dataset_info.json are missing, e.g. "
            f"{missing[0]}; the dataset directory is incomplete",
            path=missing[0],
        )


# --------------------------------------------------------------------------- random access


def _cache_dir() -> str:
    env = os.environ.get("TFRECORD_LITE_CACHE_DIR")
    if env:
        return os.path.join(os.path.expanduser(env), "tfds")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tfrecord_lite", "tfds")


class DataSource(_Seq[Any]):
    """Random access to the examples of a split (Grain's ``RandomAccessDataSource``).

    ``src[i]`` is the ``i``-th example in the order of the shards, as
    ``builder.as_dataset(split, read_config=ReadConfig(interleave_cycle_length=1))``
    yields it. Slices and lists of indices return lists (read one run of
    consecutive records at a time). Shard lengths come from ``dataset_info.json``
    and are checked against each shard's index when the shard is first opened.
    """

    def __init__(
        self,
        builder: Builder,
        split: str,
        *,
        decoders: Any = None,
        as_supervised: bool = False,
        index_dir: Optional[str] = None,
    ) -> None:
        self.data_dir = builder.data_dir
        self.split = split
        self.index_dir = index_dir
        self._decode = builder._decode_fn(decoders, as_supervised)
        self._instructions = file_instructions(split, builder.info.splits)
        _check_files([fi.filename for fi in self._instructions])
        starts = [0]
        for fi in self._instructions:
            starts.append(starts[-1] + fi.take)
        self._starts = starts
        self._files: dict[int, TFRecordFile] = {}
        self._spans: dict[int, Any] = {}
        self._fds: dict[int, int] = {}
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._starts[-1]

    def _file(self, k: int) -> TFRecordFile:
        f = self._files.get(k)
        if f is None:
            with self._lock:
                f = self._files.get(k)
                if f is None:
                    f = self._open(self._instructions[k])
                    self._files[k] = f
        return f

    def _open(self, fi: FileInstruction) -> TFRecordFile:
        path = fi.filename
        index = find_index(path)
        f: Optional[TFRecordFile] = None
        if index is None:
            index = self._cached_index(path)
        if index is not None:
            try:
                f = TFRecordFile(path, index, compression="")
            except StaleIndexError:
                f = None
                cached = self._cached_index(path, rebuild=True)
                if cached is not None:
                    f = TFRecordFile(path, cached, compression="")
        if f is None:
            f = TFRecordFile(path, compression="")  # index kept in memory
        if len(f) != fi.num_examples:
            raise StaleIndexError(
                f"{path} holds {len(f)} records, dataset_info.json says {fi.num_examples}",
                path=path,
            )
        return f

    def _record(self, k: int, r: int) -> bytes:
        """Record ``r`` of shard ``k``: one ``pread`` and both CRC checks.

        Anything unexpected (a damaged record, a changed file) is read again through
        :class:`~tfrecord_lite.TFRecordFile`, which raises the precise error.
        """
        f = self._file(k)
        spans = self._spans.get(k)
        if spans is None:
            bounds = (
                np.append(f.offsets, np.int64(f.offsets[-1] + f.lengths[-1])) if len(f) else None
            )
            spans = self._spans[k] = bounds
        if spans is None or not hasattr(os, "pread"):
            return f[r]
        start, end = int(spans[r]), int(spans[r + 1])
        fd = self._fd(k, f.path)
        buf = os.pread(fd, end - start, start)
        if len(buf) == end - start and end - start >= 16:
            length, length_crc = _HEADER.unpack_from(buf, 0)
            if length + 16 == end - start and masked_crc32c(buf[:8]) == length_crc:
                data = buf[12 : 12 + length]
                (data_crc,) = _CRC.unpack_from(buf, 12 + length)
                if masked_crc32c(data) == data_crc:
                    return data
        return f[r]

    def _fd(self, k: int, path: str) -> int:
        if self._pid != os.getpid():  # a forked worker: its own descriptors
            self._fds = {}
            self._pid = os.getpid()
        fd = self._fds.get(k)
        if fd is None:
            with self._lock:
                fd = self._fds.get(k)
                if fd is None:
                    fd = self._fds[k] = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        return fd

    def _cached_index(self, path: str, rebuild: bool = False) -> Optional[str]:
        base = self.index_dir or _cache_dir()
        key = hashlib.sha256(os.path.dirname(os.path.abspath(path)).encode()).hexdigest()[:20]
        folder = os.path.join(base, key)
        index = os.path.join(folder, os.path.basename(path) + ".index")
        if os.path.isfile(index) and not rebuild:
            try:
                if os.path.getmtime(index) >= os.path.getmtime(path):
                    return index
            except OSError:
                pass
        try:
            os.makedirs(folder, exist_ok=True)
            return create_index(path, index, compression="")
        except OSError:
            return None

    def _locate(self, i: int) -> tuple[int, int]:
        k = bisect.bisect_right(self._starts, i) - 1
        return k, self._instructions[k].skip + (i - self._starts[k])

    def _norm(self, i: Any) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(
                f"indices must be integers, slices or lists of integers, not {type(i).__name__}"
            )
        n = len(self)
        k = int(i) + n if int(i) < 0 else int(i)
        if not 0 <= k < n:
            raise IndexError(f"index {i} out of range for a split of {n} examples")
        return k

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.__getitems__(range(*i.indices(len(self))))
        if isinstance(i, (int, np.integer)) and not isinstance(i, bool):
            k, r = self._locate(self._norm(i))
            return self._decode(self._record(k, r))
        if isinstance(i, (str, bytes)):
            raise TypeError(f"indices must be integers, slices or lists, not {type(i).__name__}")
        return self.__getitems__(list(i))

    def __getitems__(self, indices: Any) -> list[Any]:
        """The examples at ``indices`` (any order), reading runs of consecutive records at once."""
        ks = [self._norm(i) for i in indices]
        by_file: dict[int, list[tuple[int, int]]] = {}
        for pos, g in enumerate(ks):
            k, r = self._locate(g)
            by_file.setdefault(k, []).append((pos, r))
        records: list[bytes] = [b""] * len(ks)
        for k, items in by_file.items():
            for (pos, _), rec in zip(items, self._file(k).get_many([r for _, r in items])):
                records[pos] = rec
        if len(records) == 1:
            return [self._decode(records[0])]
        return self._decode.many(records)  # one vectorized parse for the batch

    #: Grain's name for a batched read (``SupportsBatchedReadRandomAccessDataSource``).
    _getitems = __getitems__

    def __iter__(self) -> Iterator[Any]:
        for k, fi in enumerate(self._instructions):
            f = self._file(k)
            for start in range(fi.skip, fi.skip + fi.take, 256):
                yield from self._decode.many(f[start : min(start + 256, fi.skip + fi.take)])

    def close(self) -> None:
        """Close the shard files (they reopen on the next access)."""
        with self._lock:
            for f in self._files.values():
                f.close()
            self._files.clear()
            if self._pid == os.getpid():
                for fd in self._fds.values():
                    os.close(fd)
            self._fds = {}

    def __del__(self) -> None:
        try:
            if self._pid == os.getpid():
                for fd in self._fds.values():
                    os.close(fd)
            self._fds = {}
        except Exception:
            pass

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_files"] = {}
        state["_spans"] = {}
        state["_fds"] = {}
        state["_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"DataSource(name={os.path.basename(os.path.dirname(self.data_dir))}, split={self.split!r}, num_records={len(self)})"


# --------------------------------------------------------------------------- entry points


def builder_from_directory(builder_dir: Union[str, os.PathLike[str]]) -> Builder:
    """Open a prepared TFDS dataset directory (the one holding ``dataset_info.json``)."""
    return Builder(builder_dir)


def default_data_dir() -> str:
    """``$TFDS_DATA_DIR``, else ``~/tensorflow_datasets`` (TFDS's default)."""
    return os.path.expanduser(os.environ.get("TFDS_DATA_DIR") or "~/tensorflow_datasets")


_NAME = re.compile(
    r"^(?P<name>[a-zA-Z][\w]*)(/(?P<config>[\w.-]+))?(:(?P<version>\d+\.\d+\.\d+|\d+\.\d+\.\*|\d+\.\*\.\*|\*))?$"
)


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def _find_version(folder: str, want: Optional[str]) -> Optional[str]:
    if not os.path.isdir(folder):
        return None
    versions = [
        v
        for v in os.listdir(folder)
        if re.fullmatch(r"\d+\.\d+\.\d+", v)
        and os.path.isfile(os.path.join(folder, v, "dataset_info.json"))
    ]
    if want and "*" not in want:
        return want if want in versions else None
    if want:
        prefix = want.split("*")[0]
        versions = [v for v in versions if v.startswith(prefix)]
    return max(versions, key=_version_key) if versions else None


def builder(name: str, *, data_dir: Optional[str] = None) -> Builder:
    """The prepared dataset ``name`` (``"mnist"``, ``"mnist:3.0.1"``, ``"wmt/de-en:1.*.*"``) under ``data_dir``.

    Looks in ``data_dir/<name>/[<config>/]<version>/`` (``data_dir`` defaults to
    ``$TFDS_DATA_DIR`` or ``~/tensorflow_datasets``); without a version the newest
    prepared one; without a config the default one TFDS recorded, else the only
    one prepared. Nothing is downloaded: a missing dataset raises
    :class:`DatasetNotFoundError` naming where it looked and the ``tfds build``
    command that prepares it.
    """
    m = _NAME.match(name or "")
    if not m:
        raise ValueError(
            f"bad dataset name {name!r}: expected 'name', 'name:1.2.3' or 'name/config:1.2.3'"
        )
    root = os.path.abspath(os.path.expanduser(data_dir) if data_dir else default_data_dir())
    ds_name, config, version = m.group("name"), m.group("config"), m.group("version")
    if config is not None and config.strip(".") == "":
        raise ValueError(f"bad config name {config!r} in {name!r}")
    base = os.path.join(root, ds_name)
    candidates: list[str] = []
    if config:
        candidates.append(os.path.join(base, config))
    else:
        candidates.append(base)
        default_config = _default_config(base)
        if default_config:
            candidates.append(os.path.join(base, default_config))
        elif os.path.isdir(base):
            configs = sorted(
                c
                for c in os.listdir(base)
                if not c.startswith(".")
                and os.path.isdir(os.path.join(base, c))
                and _find_version(os.path.join(base, c), None)
            )
            if len(configs) == 1:
                candidates.append(os.path.join(base, configs[0]))
    for folder in candidates:
        v = _find_version(folder, version)
        if v is not None:
            return Builder(os.path.join(folder, v))
    looked = (
        candidates[0]
        if not version or "*" in (version or "")
        else os.path.join(candidates[0], version)
    )
    build = f"tfds build {ds_name}" + (f" --config {config}" if config else "")
    if version and "*" not in version:
        build += f" --version {version}"
    if data_dir:
        build += f" --data_dir {root}"
    raise DatasetNotFoundError(
        f"dataset {name!r} is not prepared under {root} (looked in {looked}). tfrecord_lite "
        f"reads prepared datasets and never downloads: prepare it with TensorFlow Datasets "
        f"(`{build}`), or pass data_dir= / set $TFDS_DATA_DIR to where it is",
        path=looked,
    )


def _default_config(base: str) -> Optional[str]:
    path = os.path.join(base, ".config", "metadata.json")
    if not os.path.isfile(path) or os.path.getsize(path) > 1 << 20:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None
    cfg = meta.get("default_config_name") if isinstance(meta, dict) else None
    if isinstance(cfg, str) and re.fullmatch(r"[\w.-]+", cfg) and cfg not in (".", ".."):
        return cfg
    return None


def load(
    name: str,
    *,
    split: Optional[str] = None,
    data_dir: Optional[str] = None,
    shuffle_files: bool = False,
    decoders: Any = None,
    as_supervised: bool = False,
    read_config: Optional[ReadConfig] = None,
    batch_size: Optional[int] = None,
    with_info: bool = False,
) -> Any:
    """``tfds.load`` for prepared datasets: ``builder(name, data_dir=).as_dataset(split, ...)``.

    ``split=None`` returns a dict of every split's dataset. ``with_info=True``
    returns ``(dataset, info)``. Never downloads (``download=`` is not accepted).
    """
    b = builder(name, data_dir=data_dir)
    kwargs = dict(
        shuffle_files=shuffle_files,
        decoders=decoders,
        as_supervised=as_supervised,
        read_config=read_config,
        batch_size=batch_size,
    )
    ds: Any
    if split is None:
        ds = {s: b.as_dataset(s, **kwargs) for s in b.info.splits}
    else:
        ds = b.as_dataset(split, **kwargs)
    return (ds, b.info) if with_info else ds


def data_source(
    name: str,
    *,
    split: str,
    data_dir: Optional[str] = None,
    decoders: Any = None,
    as_supervised: bool = False,
) -> DataSource:
    """``tfds.data_source`` for prepared TFRecord datasets: random access to ``split``."""
    return builder(name, data_dir=data_dir).as_data_source(
        split, decoders=decoders, as_supervised=as_supervised
    )


def is_tfds_dir(path: str) -> bool:
    """True if ``path`` is a prepared TFDS dataset directory (for the command line)."""
    return os.path.isfile(os.path.join(path, "dataset_info.json")) and os.path.isfile(
        os.path.join(path, "features.json")
    )
