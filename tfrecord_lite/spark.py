"""Spark 4: TFRecord files as a DataFrame and back, through Spark's Python data source API.

Needs PySpark 4: ``pip install "tfrecord-lite-np[spark]"``. No TensorFlow and no JVM
jar: Spark runs this module in its Python workers. ::

    from tfrecord_lite import spark as tfspark

    tfspark.register(spark)                    # spark.dataSource.register(TFRecordDataSource)
    df = spark.read.format("tfrecord").load("data/train-*.tfrecord.gz")   # schema inferred
    df = tfspark.read_tfrecords(spark, "data/train-*", features=features)  # a given spec
    df.write.format("tfrecord").mode("append").option("compression", "gzip").save("out/")
    # out/part-00000-of-00008 ... part-00007-of-00008

Reading: the files, and ranges of records of large uncompressed files that have
an index file (``<file>.index``, see :func:`tfrecord_lite.create_index`), are
grouped into about as many Spark partitions as the machine has cores (more where
one would hold over ``max_partition_bytes``, 128 MiB by default, as Spark's own
file sources do), each partition reading its files in turn: Spark pays ~0.1 s for
each partition's Python task, more than reading a small file takes. The option
``partitions`` gives their number instead (``files``: one per file or record
range). GZIP and ZLIB files are detected; every
record is CRC-checked unless ``verify`` is ``false``; a record that cannot be
read or parsed fails the task with an error naming its file and index. Each
partition parses batches of records with the library's vectorized parser and
hands Spark Arrow record batches. Column types are those of
:mod:`tfrecord_lite.arrow`, with Spark's types: ``int64`` -> ``bigint``,
``float32`` -> ``float``, bytes -> ``binary`` (never decoded as text), fixed
shapes, ``VarLenFeature`` and ``RaggedFeature`` -> ``array`` (nested for each
further dimension), feature lists -> ``array<array<...>>``.

Reading options (strings, as every Spark option): ``features`` and
``sequence_features`` (JSON, see :func:`features_json`; when both are absent the
schema is inferred from the first ``sample`` records of the first file),
``compression`` (``auto``), ``verify`` (``true``), ``on_error`` (``raise``,
``skip``, ``stop``), ``batch_size``, ``records_per_task``, ``partitions``
(``auto``, ``files`` or a number), ``max_partition_bytes``, ``include_paths``
(adds a ``path`` column), ``sample``, and ``storage_options`` (JSON, for
``s3://`` and other fsspec URLs).

Writing: every Spark task writes its partition to one staging shard through a
temporary file; when every task has succeeded the job's commit names the shards
``<prefix>-NNNNN-of-MMMMM``; a failed job's abort removes them
(:class:`~tfrecord_lite._tables.ShardJob`). A task Spark retries rewrites its own
staging shard, so no record is written twice and no partial file ever has a final
name. Spark's Python data sources are written in ``mode("append")`` or
``mode("overwrite")`` (not Spark's default ``errorifexists``): ``overwrite``
replaces the shards of the same prefix once the new ones are in place,
``append`` refuses a directory that already has them.
Writing options: ``compression`` (``gzip``, ``zlib``), ``prefix`` (``part``),
``suffix``, ``sequence_features`` (comma-separated columns written as
SequenceExample feature lists) and ``storage_options``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

from . import _settings
from ._examples import DEFAULT_SAMPLE, FeatureSpec
from ._tables import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_PARTITION_BYTES,
    DEFAULT_RECORDS_PER_TASK,
    Paths,
    Piece,
    PieceReader,
    ReadOptions,
    ReadPlan,
    ShardJob,
    group_pieces,
    require,
    require_pyarrow,
    specs_from_json,
    specs_to_json,
)

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "TFRecordDataSource",
    "features_json",
    "read_tfrecords",
    "register",
    "spark_schema",
    "write_tfrecords",
]

#: The name the data source is registered under: ``spark.read.format("tfrecord")``.
FORMAT = "tfrecord"


def _pyspark_datasource() -> Any:
    return require("pyspark.sql.datasource", "tfrecord_lite.spark", "PySpark 4", "spark")


try:  # the base classes; without PySpark the module still imports and explains itself on use
    from pyspark.sql.datasource import DataSource as _DataSourceBase
    from pyspark.sql.datasource import DataSourceArrowWriter as _WriterBase
    from pyspark.sql.datasource import DataSourceReader as _ReaderBase
    from pyspark.sql.datasource import InputPartition as _InputPartition
    from pyspark.sql.datasource import WriterCommitMessage as _MessageBase
except ImportError:  # pragma: no cover - exercised only without PySpark 4
    _DataSourceBase = _WriterBase = _ReaderBase = _InputPartition = _MessageBase = object


# --------------------------------------------------------------------------- types


def _spark_arrow_type(t: Any) -> Any:
    """An Arrow type as one Spark reads: fixed-size and large lists as lists, large
    binary and string as binary and string (Spark keeps no list size)."""
    pa = require_pyarrow("tfrecord_lite.spark", "spark")
    if pa.types.is_fixed_size_list(t) or pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(_spark_arrow_type(t.value_type))
    if pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_large_string(t):
        return pa.string()
    return t


def _spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    pa = require_pyarrow("tfrecord_lite.spark", "spark")
    return pa.schema([pa.field(f.name, _spark_arrow_type(f.type)) for f in schema])


def spark_schema(
    features: Optional[Mapping[str, FeatureSpec]] = None,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
) -> Any:
    """The ``StructType`` a read with these specs gives (see the module's type mapping)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    if features is None and sequence_features is None:
        raise ValueError("spark_schema needs features= and/or sequence_features=")
    plan = ReadPlan(features or {}, sequence_features)
    return from_arrow_schema(_spark_arrow_schema(plan.schema))


def features_json(features: Optional[Mapping[str, FeatureSpec]]) -> str:
    """A feature dict as the JSON text of the ``features`` / ``sequence_features`` options."""
    return specs_to_json(features)


# --------------------------------------------------------------------------- options


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    value = options.get(key)
    if value is None:
        return default
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(f"option {key!r} must be true or false, got {value!r}")


def _int(options: Mapping[str, str], key: str, default: Optional[int]) -> Optional[int]:
    value = options.get(key)
    if value is None or str(value).strip().lower() in ("", "none", "all"):
        return default if value is None else None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"option {key!r} must be an integer, got {value!r}") from None


def _storage_options(options: Mapping[str, str]) -> Optional[dict[str, Any]]:
    raw = options.get("storage_options")
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError as e:
        raise ValueError(f"option 'storage_options' is not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise ValueError("option 'storage_options' must be a JSON object")
    return value


def _paths(options: Mapping[str, str]) -> list[str]:
    """``load(path)`` sets ``path``; ``load([a, b])`` sets ``paths`` (a JSON list)."""
    if options.get("paths"):
        paths = json.loads(options["paths"])
        if options.get("path"):
            paths = [options["path"], *paths]
        return [str(p) for p in paths]
    if options.get("path"):
        return [str(options["path"])]
    raise ValueError('give the files to read: spark.read.format("tfrecord").load(path)')


# --------------------------------------------------------------------------- reading


class _Partition(_InputPartition):  # type: ignore[misc]
    """One Spark partition: files or indexed record ranges (:class:`Piece`), read in order."""

    def __init__(self, pieces: list[Piece]) -> None:
        self.pieces = pieces


class _Reader(_ReaderBase):  # type: ignore[misc]
    """Reads the partitions; pickled to the Spark executors."""

    def __init__(self, reader: PieceReader, groups: list[list[Piece]], schema: pa.Schema) -> None:
        self.reader = reader
        self.groups = groups
        self.arrow_schema = schema

    def partitions(self) -> Sequence[_Partition]:
        """The partitions: groups of files or indexed record ranges (see ``partitions``)."""
        return [_Partition(g) for g in self.groups]

    def read(self, partition: _Partition) -> Iterator[Any]:
        """The partition's records as Arrow record batches of Spark's column types.

        Runs in a Spark Python worker, one of the processes Spark already runs per
        core: unless its environment says otherwise (``TFRECORD_LITE_THREADS``),
        GZIP/ZLIB inflate in the calling thread there (``threads=1``) rather than in
        threads that would compete with the other workers.
        """
        _settings.set_process_default("threads", 1)
        for piece in partition.pieces:
            for table in self.reader.tables(piece):
                yield from table.cast(self.arrow_schema).to_batches()


class TFRecordDataSource(_DataSourceBase):  # type: ignore[misc]
    """The ``tfrecord`` Python data source (see the module documentation for its options)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        _pyspark_datasource()
        super().__init__(options)
        self.options = options
        self._reader: Optional[_Reader] = None

    @classmethod
    def name(cls) -> str:
        """``tfrecord``: ``spark.read.format("tfrecord")``."""
        return FORMAT

    def _read_plan(self) -> _Reader:
        """The files, the specs (inferred when not given) and the partitions, made once."""
        if self._reader is not None:
            return self._reader
        o = self.options
        reader, pieces = _read_options(o).read(_paths(o))
        how = (o.get("partitions") or "auto").strip().lower()
        max_bytes = _int(o, "max_partition_bytes", DEFAULT_PARTITION_BYTES)
        if how == "files":
            groups = [[p] for p in pieces]
        elif how == "auto":
            groups = group_pieces(pieces, None, max_bytes or DEFAULT_PARTITION_BYTES)
        else:
            count = _int(o, "partitions", None)
            if count is None or count < 1:
                raise ValueError(
                    f"option 'partitions' must be 'auto', 'files' or a number of at least 1, "
                    f"got {o.get('partitions')!r}"
                )
            groups = group_pieces(pieces, count)
        self._reader = _Reader(reader, groups, _spark_arrow_schema(reader.schema))
        return self._reader

    def schema(self) -> Any:
        """The DataFrame's ``StructType``: from the given specs, or inferred."""
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(self._read_plan().arrow_schema)

    def reader(self, schema: Any) -> _Reader:
        """The reader of the files' partitions."""
        return self._read_plan()

    def writer(self, schema: Any, overwrite: bool) -> _Writer:
        """The writer of one shard per task, committed by the job."""
        o = self.options
        if not o.get("path"):
            raise ValueError('give the directory to write: df.write.format("tfrecord").save(path)')
        seq = [s.strip() for s in (o.get("sequence_features") or "").split(",") if s.strip()]
        job = ShardJob(
            o["path"],
            compression=o.get("compression") or None,
            prefix=o.get("prefix") or "part",
            suffix=o.get("suffix") or "",
            sequence_features=seq or None,
            overwrite=overwrite,
            storage_options=_storage_options(o),
        )
        job.start()
        return _Writer(job)


def _read_options(o: Mapping[str, str]) -> ReadOptions:
    """The data source's string options as the read arguments, checked."""
    return ReadOptions(
        features=specs_from_json(o.get("features"), "option 'features'"),
        sequence_features=specs_from_json(o.get("sequence_features"), "option 'sequence_features'"),
        compression=o.get("compression") or "auto",
        verify=_bool(o, "verify", True),
        on_error=o.get("on_error") or "raise",
        storage_options=_storage_options(o),
        batch_size=_int(o, "batch_size", DEFAULT_BATCH_SIZE) or DEFAULT_BATCH_SIZE,
        records_per_task=_int(o, "records_per_task", DEFAULT_RECORDS_PER_TASK) or 0,
        include_paths=_bool(o, "include_paths", False),
        sample=_int(o, "sample", DEFAULT_SAMPLE),
    )


# --------------------------------------------------------------------------- writing


@dataclass
class ShardWritten(_MessageBase):  # type: ignore[misc]
    """A write task's commit message: its staging shard and how many records it holds."""

    shard: dict[str, Any] = field(default_factory=dict)


class _Writer(_WriterBase):  # type: ignore[misc]
    """Writes each task's Arrow batches to its staging shard; the job commits or aborts."""

    def __init__(self, job: ShardJob) -> None:
        self.job = job

    def write(self, iterator: Iterator[Any]) -> ShardWritten:
        """Write this task's partition to its staging shard (whole, or not at all)."""
        from pyspark import TaskContext

        pa = require_pyarrow("tfrecord_lite.spark", "spark")
        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        tables = (pa.Table.from_batches([batch]) for batch in iterator)
        return ShardWritten(self.job.write(task, tables))

    def commit(self, messages: list[Optional[ShardWritten]]) -> None:
        """Name the staging shards ``<prefix>-NNNNN-of-MMMMM``; remove what is left over."""
        self.job.commit([m.shard for m in messages if isinstance(m, ShardWritten)])

    def abort(self, messages: list[Optional[ShardWritten]]) -> None:
        """Remove every staging and temporary file of the job: no shard gets a final name."""
        self.job.abort()


# --------------------------------------------------------------------------- helpers


def register(spark: Any) -> None:
    """Register the ``tfrecord`` data source with a ``SparkSession``."""
    spark.dataSource.register(TFRecordDataSource)


def _string_options(**options: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in options.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, Mapping):
            out[key] = json.dumps(dict(value))
        elif isinstance(value, (list, tuple)):
            out[key] = ",".join(str(v) for v in value)
        else:
            out[key] = str(value)
    return out


def read_tfrecords(
    spark: Any,
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
    partitions: Union[str, int] = "auto",
) -> Any:
    """A Spark DataFrame of TFRecord files: ``spark.read.format("tfrecord")`` with these
    options (the specs as JSON); registers the data source first. Arguments as
    :func:`tfrecord_lite.ray.read_tfrecords`."""
    given = ReadOptions(  # checked here, before Spark plans the read
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
    register(spark)
    options = _string_options(
        **{
            **given.as_dict(),
            "features": features_json(features) if features is not None else None,
            "sequence_features": (
                features_json(sequence_features) if sequence_features is not None else None
            ),
            "compression": compression or "none",
            "sample": "all" if sample is None else sample,
            "partitions": partitions,
        }
    )
    reader = spark.read.format(FORMAT).options(**options)
    if isinstance(paths, (list, tuple)):
        return reader.load([str(p) for p in paths])
    return reader.load(str(paths))


def write_tfrecords(
    df: Any,
    path: str,
    *,
    mode: str = "append",
    compression: Optional[str] = None,
    prefix: str = "part",
    suffix: str = "",
    sequence_features: Optional[Sequence[str]] = None,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> None:
    """``df.write.format("tfrecord").mode(mode).save(path)`` with these options."""
    register(df.sparkSession)
    options = _string_options(
        compression=compression,
        prefix=prefix,
        suffix=suffix or None,
        sequence_features=list(sequence_features) if sequence_features else None,
        storage_options=storage_options,
    )
    df.write.format(FORMAT).mode(mode).options(**options).save(path)
