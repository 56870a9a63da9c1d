"""Hugging Face ``datasets``: TFRecord files as a ``datasets.Dataset`` (Arrow-backed,
cached) or a streaming ``datasets.IterableDataset``, and a Dataset back as TFRecord shards.

Needs ``datasets``: ``pip install "tfrecord-lite-np[hf]"``. No TensorFlow involved::

    from tfrecord_lite import hf as tfhf

    ds = tfhf.load_dataset("data/train-*.tfrecord", features,           # or inferred
                           images=["image/encoded"], class_labels={"label": names})
    ds[0]["image/encoded"]                       # a PIL image (datasets.Image)
    stream = tfhf.load_dataset("gs://bucket/train-*", streaming=True)   # IterableDataset
    mnist = tfhf.load_tfds(tfds.builder_from_directory("~/tensorflow_datasets/mnist/3.0.1"))
    tfhf.write_tfrecords(ds, "out/", shards=8)   # out/part-00000-of-00008 ...

:func:`load_dataset` is a ``datasets`` packaged-style builder (``ArrowBasedBuilder``):
each file (or indexed record range) is parsed a batch of records at a time with the
library's vectorized parser straight into Arrow tables, which ``datasets`` writes to
its cache (no Python object per record), so a second call with the same files and
specs opens the cache. ``datasets.Features`` follow the type mapping of
:mod:`tfrecord_lite.arrow`: ``int64`` / ``float32`` / ``binary`` values (bytes stay
bytes), fixed shapes as ``List(..., length=k)``, VarLen / Ragged features as
``List``, SequenceExample feature lists as lists of lists; the columns named in
``images`` (encoded PNG/JPEG bytes) become ``datasets.Image`` and those in
``class_labels`` ``datasets.ClassLabel`` with the given names.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from ._examples import DEFAULT_SAMPLE, FeatureSpec
from ._files import fs as _fs
from ._tables import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_RECORDS_PER_TASK,
    Paths,
    Piece,
    PieceReader,
    ReadOptions,
    ReadPlan,
    ShardJob,
    require,
    require_pyarrow,
    specs_to_json,
)

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["hf_features", "load_dataset", "load_tfds", "write_tfrecords"]

try:  # the base class; without datasets the module still imports and explains itself on use
    from datasets import ArrowBasedBuilder as _BuilderBase
except ImportError:  # pragma: no cover - exercised only without datasets
    _BuilderBase = object


def _datasets() -> Any:
    return require("datasets", "tfrecord_lite.hf", "Hugging Face datasets", "hf")


# --------------------------------------------------------------------------- features


def _hf_features_of(
    schema: pa.Schema,
    images: Sequence[str],
    class_labels: Mapping[str, Sequence[str]],
) -> Any:
    datasets = _datasets()
    features = datasets.Features.from_arrow_schema(schema)
    for key in images:
        if key not in features:
            raise ValueError(f"images names {key!r}, which is not a column: {list(features)}")
        if features[key] != datasets.Value("binary"):
            raise ValueError(f"column {key!r} must hold one bytes value per record to be an Image")
        features[key] = datasets.Image()
    for key, names in class_labels.items():
        if key not in features:
            raise ValueError(f"class_labels names {key!r}, which is not a column: {list(features)}")
        if features[key] != datasets.Value("int64"):
            raise ValueError(f"column {key!r} must hold one int64 per record to be a ClassLabel")
        features[key] = datasets.ClassLabel(names=list(names))
    return features


def hf_features(
    features: Optional[Mapping[str, FeatureSpec]] = None,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
    *,
    images: Sequence[str] = (),
    class_labels: Optional[Mapping[str, Sequence[str]]] = None,
) -> Any:
    """The ``datasets.Features`` that :func:`load_dataset` gives for these specs."""
    if features is None and sequence_features is None:
        raise ValueError("hf_features needs features= and/or sequence_features=")
    plan = ReadPlan(features or {}, sequence_features)
    return _hf_features_of(plan.schema, images, class_labels or {})


def _as_images(table: pa.Table, images: Sequence[str]) -> pa.Table:
    """Encoded image bytes as the ``struct<bytes, path>`` column of ``datasets.Image``."""
    pa = require_pyarrow("tfrecord_lite.hf", "hf")
    for key in images:
        i = table.schema.get_field_index(key)
        data = table.column(i).combine_chunks()
        paths = pa.nulls(len(data), pa.string())
        struct = pa.StructArray.from_arrays([data, paths], names=["bytes", "path"])
        table = table.set_column(i, pa.field(key, struct.type), struct)
    return table


# --------------------------------------------------------------------------- reading


class TFRecordBuilder(_BuilderBase):  # type: ignore[misc]
    """A ``datasets`` builder of one ``train`` split from TFRecord pieces (see
    :func:`load_dataset`, which makes it)."""

    def __init__(
        self,
        *,
        reader: PieceReader,
        pieces: list[Piece],
        images: Sequence[str],
        class_labels: Mapping[str, Sequence[str]],
        **kwargs: Any,
    ) -> None:
        self._reader = reader
        self._pieces = pieces
        self._images = list(images)
        self._features = _hf_features_of(reader.schema, self._images, class_labels)
        super().__init__(**kwargs)

    def _info(self) -> Any:
        return _datasets().DatasetInfo(features=self._features)

    def _split_generators(self, dl_manager: Any) -> list[Any]:
        datasets = _datasets()
        return [
            datasets.SplitGenerator(name=datasets.Split.TRAIN, gen_kwargs={"pieces": self._pieces})
        ]

    def _generate_shards(self, pieces: list[Piece]) -> Iterator[Piece]:
        yield from pieces

    def _generate_tables(self, pieces: list[Piece]) -> Iterator[tuple[Any, pa.Table]]:
        from datasets.builder import Key

        for i, piece in enumerate(pieces):
            for j, table in enumerate(self._reader.tables(piece)):
                yield Key(i, j), _as_images(table.replace_schema_metadata(None), self._images)


def _fingerprint(files: Sequence[str], settings: Mapping[str, Any]) -> str:
    """What the cache is keyed on: the files (local ones with size and modification
    time), the specs and the reading options."""
    h = hashlib.sha256(json.dumps(dict(settings), sort_keys=True, default=str).encode())
    for f in files:
        h.update(f.encode("utf-8", "surrogateescape"))
        if not _fs.is_url(f):
            with_stat = os.stat(f)
            h.update(f"{with_stat.st_size}:{with_stat.st_mtime_ns}".encode())
    return h.hexdigest()


def load_dataset(
    paths: Paths,
    features: Optional[Mapping[str, FeatureSpec]] = None,
    *,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
    compression: Optional[str] = "auto",
    verify: bool = True,
    on_error: str = "raise",
    storage_options: Optional[Mapping[str, Any]] = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    records_per_task: int = DEFAULT_RECORDS_PER_TASK,
    include_paths: bool = False,
    sample: Optional[int] = DEFAULT_SAMPLE,
    images: Sequence[str] = (),
    class_labels: Optional[Mapping[str, Sequence[str]]] = None,
    streaming: bool = False,
    cache_dir: Optional[str] = None,
    keep_in_memory: Optional[bool] = None,
    download_mode: Optional[str] = None,
) -> Any:
    """A ``datasets.Dataset`` (``streaming=True``: an ``IterableDataset``) of TFRecord files.

    ``paths``, ``features``, ``sequence_features``, ``compression``, ``verify``,
    ``on_error``, ``storage_options``, ``batch_size``, ``records_per_task``,
    ``include_paths`` (a ``path`` column) and ``sample`` as
    :func:`tfrecord_lite.ray.read_tfrecords` (the specs are inferred from the first
    file when both are ``None``). ``images`` names columns of encoded images
    (``datasets.Image``), ``class_labels`` maps columns of int64 labels to their
    class names (``datasets.ClassLabel``). The Dataset is written to the cache
    under ``cache_dir`` (``datasets``' default when ``None``) once per set of files,
    specs and options; ``download_mode="force_redownload"`` rebuilds it (e.g. after
    remote files changed: only local files are keyed by size and time).
    ``keep_in_memory`` is ``datasets``'.
    """
    _datasets()
    options = ReadOptions(
        features=features,
        sequence_features=sequence_features,
        compression=compression,
        verify=verify,
        on_error=on_error,
        storage_options=storage_options,
        batch_size=batch_size,
        records_per_task=records_per_task,
        include_paths=include_paths,
        sample=sample,
    )
    reader, pieces = options.read(paths)
    plan = reader.plan
    labels = {k: list(v) for k, v in (class_labels or {}).items()}
    settings = {
        "features": specs_to_json(plan.features),
        "sequence_features": specs_to_json(plan.sequence_features) if plan.sequence else None,
        "images": list(images),
        "class_labels": labels,
        "compression": compression,
        "verify": verify,
        "on_error": on_error,
        **({"include_paths": True} if include_paths else {}),  # earlier caches keep their key
    }
    fingerprint = _fingerprint(sorted({p.path for p in pieces}), settings)
    builder = TFRecordBuilder(
        reader=reader,
        pieces=pieces,
        images=images,
        class_labels=labels,
        cache_dir=cache_dir,
        dataset_name="tfrecord",
        config_name=f"tfrecord-{fingerprint[:16]}",
        hash=fingerprint[:16],
    )
    if streaming:
        return builder.as_streaming_dataset(split="train")
    builder.download_and_prepare(download_mode=download_mode)
    return builder.as_dataset(split="train", in_memory=bool(keep_in_memory))


def load_tfds(builder: Any, split: str = "train", **kwargs: Any) -> Any:
    """A ``datasets.Dataset`` (or, ``streaming=True``, an ``IterableDataset``) of one split
    of a prepared TFDS directory, without TensorFlow.

    ``builder`` is what ``tfrecord_lite.tfds.builder_from_directory(path)`` (or
    ``tfrecord_lite.tfds.builder(name)``) returns. The columns are the records' stored
    features (schema inferred, or ``features=``); TFDS ``Image`` features (one encoded
    image per record) become ``datasets.Image`` and ``ClassLabel`` features
    ``datasets.ClassLabel`` with the directory's class names. Other arguments as
    :func:`load_dataset`.
    """
    info = builder.info
    if split not in info.splits:
        raise KeyError(f"{info.full_name} has no split {split!r}; it has {sorted(info.splits)}")
    files = info.splits[split].filepaths
    images: list[str] = list(kwargs.pop("images", ()))
    labels: dict[str, list[str]] = dict(kwargs.pop("class_labels", None) or {})
    for key, connector, stored in info.features.leaves(""):
        kind = type(connector).__name__
        rank = getattr(stored, "sequence_rank", 0)
        if kind == "Image" and not rank and key not in images:
            images.append(key)
        elif kind == "ClassLabel" and not rank:
            labels.setdefault(key, list(connector.names))
    return load_dataset(files, images=images, class_labels=labels, **kwargs)


# --------------------------------------------------------------------------- writing


def _plain_columns(table: pa.Table, features: Any) -> pa.Table:
    """Image columns back to their encoded bytes (a TFRecord feature holds bytes)."""
    datasets = _datasets()
    for key, feature in (features or {}).items():
        if isinstance(feature, datasets.Image) and key in table.column_names:
            i = table.schema.get_field_index(key)
            column = table.column(i).combine_chunks()
            table = table.set_column(i, key, column.field("bytes"))
    return table


def write_tfrecords(
    ds: Any,
    path: Union[str, os.PathLike[str]],
    *,
    shards: int = 1,
    compression: Optional[str] = None,
    prefix: str = "part",
    suffix: str = "",
    sequence_features: Optional[Sequence[str]] = None,
    overwrite: bool = False,
    storage_options: Optional[Mapping[str, Any]] = None,
    batch_size: int = 4096,
) -> list[str]:
    """Write a ``datasets.Dataset`` as ``shards`` TFRecord shards in directory ``path``.

    Each row becomes one ``tf.train.Example`` (a ``SequenceExample`` when
    ``sequence_features`` names list-of-list columns) with the column mapping of
    :mod:`tfrecord_lite.arrow`; ``datasets.Image`` columns are written as their
    encoded bytes and ``ClassLabel`` columns as their int64 labels. Shards are
    ``<prefix>-NNNNN-of-MMMMM<suffix>``, contiguous slices of the Dataset's rows
    in order, each written to a staging file and named when all are complete (a
    failed write leaves no file). Returns the shards' paths.
    """
    _datasets()
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    job = ShardJob(
        path,
        compression=compression,
        prefix=prefix,
        suffix=suffix,
        sequence_features=sequence_features,
        overwrite=overwrite,
        storage_options=storage_options,
    )
    job.start()
    try:
        messages = []
        for i in range(shards):
            part = ds.shard(num_shards=shards, index=i, contiguous=True).with_format("arrow")
            tables = (_plain_columns(t, ds.features) for t in part.iter(batch_size=batch_size))
            messages.append(job.write(i, tables))
        return job.commit(messages)
    except BaseException:
        job.abort()
        raise
