"""Ray Data: read and write TFRecord files without TensorFlow.

Needs Ray Data: ``pip install "tfrecord-lite-np[ray]"``. ::

    import ray
    from tfrecord_lite import ray as tfray

    ds = tfray.read_tfrecords("s3://bucket/train-*.tfrecord.gz")   # schema inferred
    ds = ds.map_batches(preprocess)
    paths = tfray.write_tfrecords(ds, "/data/out", compression="GZIP")
    # /data/out/part-00000-of-00008 ... part-00007-of-00008

Reading is a :class:`ray.data.Datasource`: one read task per file, and per
range of records for large uncompressed files that have an index file
(``<file>.index``, see :func:`tfrecord_lite.create_index`). Each task parses
batches of records with the library's vectorized parser and hands Ray Arrow
tables (the column types of :mod:`tfrecord_lite.arrow`). Examples and
SequenceExamples are read; every record is CRC-checked unless ``verify=False``.

Writing is a :class:`ray.data.Datasink`. Every write task writes one shard
under a hidden staging name that depends only on the task's index, through a
temporary file renamed into place when the shard is complete. When all tasks
have succeeded the shards are renamed to their final
``<prefix>-NNNNN-of-MMMMM`` names. So a task that fails and is retried by Ray
rewrites the same staging shard (no record is written twice), a task killed
mid-write leaves only a temporary file (removed at the end, never renamed), and
a job that fails leaves no file under a final name.

:func:`images_to_tfrecords` runs the ``from-images`` conversion (an image folder
with one sub-folder per class -> labelled shards) as Ray tasks, one per shard.
"""

from __future__ import annotations

import inspect
import os
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from ._examples import DEFAULT_SAMPLE, FeatureSpec
from ._files import TFRecordWriter, shard_name
from ._tables import (
    DEFAULT_BATCH_SIZE,
    Paths,
    Piece,
    ReadOptions,
    ShardJob,
    require_ray_data,
)
from ._tables import DEFAULT_RECORDS_PER_TASK as DEFAULT_RECORDS_PER_TASK

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "TFRecordDatasink",
    "TFRecordDatasource",
    "images_to_tfrecords",
    "read_tfrecords",
    "write_tfrecords",
]


def _remote_kwargs(fn: Any, ray_remote_args: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """``ray_remote_args`` as ``fn``'s keyword arguments.

    Newer Ray versions take the remote options as named parameters (``num_cpus``,
    ``memory``, ``runtime_env`` ...) and deprecate ``ray_remote_args``: each option
    ``fn`` names goes as that parameter, only the rest as ``ray_remote_args``.
    """
    if not ray_remote_args:
        return {}
    try:
        named = set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        named = set()
    named.discard("ray_remote_args")
    kwargs = {k: v for k, v in ray_remote_args.items() if k in named}
    rest = {k: v for k, v in ray_remote_args.items() if k not in named}
    if rest:
        kwargs["ray_remote_args"] = rest
    return kwargs


try:  # the base classes; without Ray the module still imports and explains itself on use
    from ray.data import Datasource as _DatasourceBase
    from ray.data import ReadTask as _ReadTask
    from ray.data.block import BlockMetadata as _BlockMetadata
    from ray.data.datasource import Datasink as _DatasinkBase

    _HAVE_RAY = True
except ImportError:  # pragma: no cover - exercised only without Ray installed
    _DatasourceBase = object
    _DatasinkBase = object
    _HAVE_RAY = False


def _require_ray() -> None:
    if not _HAVE_RAY:
        require_ray_data()  # raises the ImportError that says how to install Ray Data
        raise ImportError("tfrecord_lite.ray needs Ray Data's Datasource and Datasink classes")


# --------------------------------------------------------------------------- reading


class TFRecordDatasource(_DatasourceBase):  # type: ignore[misc]
    """A :class:`ray.data.Datasource` of TFRecord files (see :func:`read_tfrecords`)."""

    def __init__(
        self,
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
    ) -> None:
        _require_ray()
        super().__init__()
        #: The read arguments, checked.
        self.options = ReadOptions(
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
        self.reader, self.pieces = self.options.read(paths)
        #: The specs (given or inferred) and the Arrow schema they give.
        self.plan = self.reader.plan

    def estimate_inmemory_data_size(self) -> Optional[int]:
        """The bytes of the files (None when a size is unknown, e.g. for URLs)."""
        sizes = [p.size for p in self.pieces if p.size is not None]
        return sum(sizes) if len(sizes) == len(self.pieces) else None

    def get_name(self) -> str:
        """``ReadTFRecordLite`` in Ray's progress bars."""
        return "TFRecordLite"

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of every block."""
        return self.reader.schema

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: Optional[int] = None,
        data_context: Any = None,
    ) -> list[Any]:
        """One :class:`ray.data.ReadTask` per file or indexed record range."""
        schema = self.schema
        reader = self.reader  # what each read task pickles (not the whole datasource)
        tasks = []
        for piece in self.pieces:
            meta = _BlockMetadata(
                num_rows=piece.rows,
                size_bytes=piece.size,
                input_files=[piece.path],
                exec_stats=None,
            )

            def read(piece: Piece = piece) -> Iterator[pa.Table]:
                yield from reader.tables(piece)

            kwargs: dict[str, Any] = {"schema": schema}
            if per_task_row_limit is not None:
                kwargs["per_task_row_limit"] = per_task_row_limit
            tasks.append(_ReadTask(read, meta, **kwargs))
        return tasks


def read_tfrecords(
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
    override_num_blocks: Optional[int] = None,
    ray_remote_args: Optional[dict[str, Any]] = None,
    concurrency: Optional[int] = None,
) -> Any:
    """A ``ray.data.Dataset`` of the records of TFRecord files, one row per record.

    ``paths``: paths, globs, directories, ``name@N`` shard specs or URLs
    (``s3://``, ``gs://``, any fsspec URL; globs too), with ``storage_options``
    passed to fsspec. ``features`` (positional or by keyword) are the Example's specs (for
    SequenceExamples: the context's, plus ``sequence_features``); when both are
    ``None`` the schema is inferred from the first ``sample`` records of the
    first file (``sample=None``: all of it; a key missing from some later record
    must then be read as a ``VarLenFeature``, so pass ``features`` for data whose
    first records are not typical). Column types are those of :mod:`tfrecord_lite.arrow`.
    ``compression`` (``"auto"``: detected per file), ``verify`` (CRC checks) and
    ``on_error`` (``"raise"``, ``"skip"``, ``"stop"``) are the core reader's.
    ``batch_size`` records are parsed per block. A file with an index file is
    split into read tasks of about ``records_per_task`` records.
    ``include_paths=True`` adds a ``path`` column. ``override_num_blocks``,
    ``ray_remote_args`` and ``concurrency`` go to ``ray.data.read_datasource``
    (the remote options it has parameters for, such as ``num_cpus``, ``memory``
    or ``runtime_env``, as those parameters: Ray deprecates ``ray_remote_args``).
    """
    rd = require_ray_data()
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
    source = TFRecordDatasource(paths, **options.as_dict())
    kwargs = _remote_kwargs(rd.read_datasource, ray_remote_args)
    if override_num_blocks is not None:
        kwargs["override_num_blocks"] = override_num_blocks
    if concurrency is not None:
        kwargs["concurrency"] = concurrency
    return rd.read_datasource(source, **kwargs)


# --------------------------------------------------------------------------- writing


class TFRecordDatasink(_DatasinkBase):  # type: ignore[misc]
    """A :class:`ray.data.Datasink` writing TFRecord shards (see :func:`write_tfrecords`).

    The job's shards are a :class:`~tfrecord_lite._tables.ShardJob` (:attr:`shards`):
    each write task writes its staging shard, the job's end names or removes them.
    """

    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        *,
        compression: Optional[str] = None,
        prefix: str = "part",
        suffix: str = "",
        sequence_features: Optional[Sequence[str]] = None,
        min_rows_per_file: Optional[int] = None,
        overwrite: bool = False,
        storage_options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        _require_ray()
        #: The write job: staging shards, commit and clean-up.
        self.shards = ShardJob(
            path,
            compression=compression,
            prefix=prefix,
            suffix=suffix,
            sequence_features=sequence_features,
            overwrite=overwrite,
            storage_options=storage_options,
        )
        self._min_rows = min_rows_per_file

    @property
    def path(self) -> str:
        """The output directory (a URL carries its storage options)."""
        return self.shards.path

    @property
    def paths(self) -> list[str]:
        """The shards written, in order (set when the job completes)."""
        return self.shards.paths

    @property
    def shard_records(self) -> list[int]:
        """Records per shard, in the order of :attr:`paths`."""
        return self.shards.shard_records

    # -- the Datasink API

    @property
    def min_rows_per_write(self) -> Optional[int]:
        """``min_rows_per_file``: Ray bundles at least this many rows into one write task."""
        return self._min_rows

    def get_name(self) -> str:
        """``WriteTFRecordLite`` in Ray's progress bars."""
        return "TFRecordLite"

    def on_write_start(self, schema: Any = None) -> None:
        """Create the directory; refuse to mix with shards already there (unless overwrite)."""
        self.shards.start()

    def write(self, blocks: Any, ctx: Any) -> dict[str, Any]:
        """Write this task's blocks to its staging shard (whole, or not at all); say where."""
        from ray.data.block import BlockAccessor

        tables = (BlockAccessor.for_block(block).to_arrow() for block in blocks)
        return self.shards.write(int(ctx.task_idx), tables)

    def on_write_complete(self, write_result: Any) -> None:
        """Rename the staging shards to ``<prefix>-NNNNN-of-MMMMM``; remove what is left over."""
        self.shards.commit(write_result.write_returns)

    def on_write_failed(self, error: Exception) -> None:
        """Remove every staging and temporary file of this job (see ``ShardJob.abort``):
        no shard gets a final name, unfinished S3 uploads are aborted, and the directory
        is swept until the write tasks the failure cancelled are done."""
        self.shards.abort()


def write_tfrecords(
    ds: Any,
    path: Union[str, os.PathLike[str]],
    *,
    compression: Optional[str] = None,
    prefix: str = "part",
    suffix: str = "",
    sequence_features: Optional[Sequence[str]] = None,
    min_rows_per_file: Optional[int] = None,
    overwrite: bool = False,
    storage_options: Optional[Mapping[str, Any]] = None,
    ray_remote_args: Optional[dict[str, Any]] = None,
    concurrency: Optional[int] = None,
) -> list[str]:
    """Write a ``ray.data.Dataset`` as TFRecord shards in directory ``path``; return their paths.

    Each row becomes one ``tf.train.Example`` (a ``SequenceExample`` when
    ``sequence_features`` names feature-list columns, or when the dataset came
    from :func:`read_tfrecords` of SequenceExamples), with the column mapping of
    :mod:`tfrecord_lite.arrow`. Each write task writes one shard; the shards are
    named ``<prefix>-00000-of-000NN<suffix>`` once all of them are complete (see
    the module documentation for what happens when a task fails and is retried).
    ``compression``: ``None``, ``"GZIP"`` or ``"ZLIB"``. ``min_rows_per_file``
    makes Ray bundle at least that many rows per shard. Existing shards of the
    same ``prefix`` are an error unless ``overwrite=True`` (then they are
    removed after the new ones are in place). ``path`` may be a URL
    (``storage_options`` go to fsspec).
    """
    require_ray_data()
    sink = TFRecordDatasink(
        path,
        compression=compression,
        prefix=prefix,
        suffix=suffix,
        sequence_features=sequence_features,
        min_rows_per_file=min_rows_per_file,
        overwrite=overwrite,
        storage_options=storage_options,
    )
    kwargs = _remote_kwargs(ds.write_datasink, ray_remote_args)
    if concurrency is not None:
        kwargs["concurrency"] = concurrency
    ds.write_datasink(sink, **kwargs)
    return list(sink.paths)


# --------------------------------------------------------------------------- image folders


def _convert_shard(
    tasks: list[Any], final: str, compression: Optional[str]
) -> tuple[int, list[tuple[str, str]]]:
    from ._decoding import convert_task

    skipped: list[tuple[str, str]] = []
    written = 0
    # Temporary file renamed at the end: a retried task rewrites the shard whole.
    with TFRecordWriter(final, compression, atomic=True) as w:
        for task in tasks:
            example, why = convert_task(task)
            if example is None:
                skipped.append((task[1], why or "unreadable"))
            else:
                w.write(example)
                written += 1
    return written, skipped


def images_to_tfrecords(
    directory: Union[str, os.PathLike[str]],
    out: Union[str, os.PathLike[str]],
    *,
    shards: int = 1,
    size: Optional[tuple[int, int]] = None,
    format: str = "keep",
    channels: Optional[Union[int, str]] = None,
    quality: int = 95,
    shuffle: bool = False,
    seed: int = 0,
    compression: Optional[str] = None,
    num_cpus: float = 1,
    max_retries: int = 3,
    encode: Optional[str] = None,
) -> dict[str, Any]:
    """The ``from-images`` conversion on a Ray cluster: one Ray task per shard.

    ``format``, ``channels``, ``size`` and ``quality`` are those of
    :func:`tfrecord_lite.write_image_folder` and ``tfrecord-lite from-images``: by default
    every file is stored as it is (its bytes, its format under ``image/format``), converted
    only when asked. ``encode`` is the deprecated name of ``format``.

    ``directory`` has one sub-folder per class; every image becomes an Example
    with the features of ``tfrecord-lite from-images`` (``image/encoded`` or
    ``image_raw``, ``image/class/label``, ...). Image ``k`` of the (optionally
    shuffled) sorted file list goes to shard ``k % shards``, so the output equals
    ``tfrecord-lite from-images`` on one machine when every image decodes
    (images that cannot be decoded are skipped and listed in the result). Each
    shard is written to a temporary file renamed onto
    ``<out>-NNNNN-of-MMMMM`` when complete, so a task Ray retries leaves no
    partial or duplicated shard; ``labels.txt`` goes beside the shards. The
    directories must be visible from every node (a shared file system).
    Returns ``{"paths", "written", "skipped", "classes", "labels"}``.
    """
    import ray

    from ._decoding import ImageOptions, pil, scan_image_folder

    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    pil()  # fail now, with the install hint, if Pillow is missing
    folder = scan_image_folder(os.fspath(directory))
    if not folder.classes:
        raise ValueError(
            f"{os.fspath(directory)!r} has no sub-folders: put the images of each class in a "
            "sub-folder named after the class"
        )
    out_s = os.fspath(out)
    if os.path.isdir(out_s) or out_s.endswith(("/", os.sep)):
        out_s = os.path.join(out_s, os.path.basename(os.path.abspath(folder.root)) or "images")
    out_dir = os.path.dirname(out_s) or "."
    os.makedirs(out_dir, exist_ok=True)
    options = ImageOptions(
        size=size, format=format, channels=channels, quality=quality, encode=encode
    )
    order = list(folder.files)
    if shuffle:
        random.Random(seed).shuffle(order)
    root = os.path.abspath(folder.root)
    tasks = [(root, rel, label, folder.classes[label], options) for rel, label in order]
    finals = [shard_name(out_s, i, shards) for i in range(shards)]
    convert = ray.remote(num_cpus=num_cpus, max_retries=max_retries, retry_exceptions=True)(
        _convert_shard
    )
    refs = [
        convert.remote(tasks[i::shards], os.path.abspath(final), compression)
        for i, final in enumerate(finals)
    ]
    results = ray.get(refs)
    labels_path = os.path.join(out_dir, "labels.txt")
    with open(labels_path, "w", encoding="utf-8", errors="surrogateescape", newline="\n") as f:
        f.write("".join(name + "\n" for name in folder.classes))
    return {
        "paths": finals,
        "written": sum(w for w, _ in results),
        "skipped": [s for _, sk in results for s in sk],
        "classes": list(folder.classes),
        "labels": labels_path,
    }
