"""Daft: TFRecord files as a ``daft.DataFrame``, and a DataFrame back as TFRecord shards.

Needs Daft: ``pip install "tfrecord-lite-np[daft]"``. No TensorFlow involved::

    from tfrecord_lite import daft as tfdaft

    df = tfdaft.read_tfrecords("data/train-*.tfrecord.gz")       # schema inferred
    df = df.where(df["label"] < 5)
    paths = tfdaft.write_tfrecords(df, "out/", compression="GZIP")
    # out/part-00000-of-000NN ...

Reading is a Daft ``DataSource``: one task per file, and per range of records for
large uncompressed files that have an index file; each task parses batches of
records with the library's vectorized parser into Arrow (the column types of
:mod:`tfrecord_lite.arrow`: bytes stay ``Binary``, fixed shapes are
``FixedSizeList``, VarLen / Ragged features ``List``, feature lists lists of
lists). Every record is CRC-checked unless ``verify=False``; a record that cannot
be read or parsed fails the query with an error naming its file and index.

Writing is a Daft ``DataSink`` (:class:`TFRecordDataSink`): each write call writes
one staging shard through a temporary file, and when every write has succeeded the
shards are renamed ``<prefix>-NNNNN-of-MMMMM``; when a write fails,
:func:`write_tfrecords` removes every staging and temporary file of the job, so no
partial file ever has a final name.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, Optional, Union

from ._examples import DEFAULT_SAMPLE, FeatureSpec
from ._tables import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_RECORDS_PER_TASK,
    Paths,
    Piece,
    PieceReader,
    ReadOptions,
    ShardJob,
    require,
)

__all__ = ["TFRecordDataSink", "TFRecordDataSource", "read_tfrecords", "write_tfrecords"]

try:  # the base classes; without Daft the module still imports and explains itself on use
    from daft.io.sink import DataSink as _SinkBase
    from daft.io.sink import WriteResult as _WriteResult
    from daft.io.source import DataSource as _SourceBase
    from daft.io.source import DataSourceTask as _TaskBase
except ImportError:  # pragma: no cover - exercised only without Daft
    _SinkBase = _SourceBase = _TaskBase = object
    _WriteResult = None


def _daft() -> Any:
    return require("daft", "tfrecord_lite.daft", "Daft", "daft")


# --------------------------------------------------------------------------- reading


class _ReadTask(_TaskBase):  # type: ignore[misc]
    """One Daft scan task: a file or an indexed record range."""

    def __init__(self, reader: PieceReader, piece: Piece, schema: Any) -> None:
        self.reader = reader
        self.piece = piece
        self._schema = schema

    @property
    def schema(self) -> Any:
        """The Daft schema of every record batch."""
        return self._schema

    async def read(self) -> AsyncIterator[Any]:
        """The piece's records as Daft record batches."""
        from daft.recordbatch import RecordBatch

        for table in self.reader.tables(self.piece):
            yield RecordBatch.from_arrow_table(table)


class TFRecordDataSource(_SourceBase):  # type: ignore[misc]
    """A Daft ``DataSource`` of TFRecord files (see :func:`read_tfrecords`)."""

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
        daft = _daft()
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
        self._schema = daft.Schema.from_pyarrow_schema(self.reader.schema)

    @property
    def name(self) -> str:
        """``TFRecordDataSource`` in Daft's plans."""
        return "TFRecordDataSource"

    @property
    def schema(self) -> Any:
        """The Daft schema of the DataFrame."""
        return self._schema

    async def get_tasks(self, pushdowns: Any) -> AsyncIterator[_ReadTask]:
        """One task per file or indexed record range."""
        for piece in self.pieces:
            yield _ReadTask(self.reader, piece, self._schema)


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
) -> Any:
    """A lazy ``daft.DataFrame`` of the records of TFRecord files, one row per record.

    Arguments as :func:`tfrecord_lite.ray.read_tfrecords`: ``features`` inferred
    from the first file when ``None`` (and ``sequence_features`` is ``None``),
    SequenceExamples with ``sequence_features``, URLs with ``storage_options``,
    ``include_paths`` adds a ``path`` column; a large indexed file is split into
    tasks of about ``records_per_task`` records.
    """
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
    return TFRecordDataSource(paths, **options.as_dict()).read()


# --------------------------------------------------------------------------- writing


class TFRecordDataSink(_SinkBase):  # type: ignore[misc]
    """A Daft ``DataSink`` writing TFRecord shards; ``df.write_sink(sink)`` returns a
    DataFrame of the shards (``path``, ``records``). See :func:`write_tfrecords`."""

    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        *,
        compression: Optional[str] = None,
        prefix: str = "part",
        suffix: str = "",
        sequence_features: Optional[Sequence[str]] = None,
        overwrite: bool = False,
        storage_options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        _daft()
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

    def name(self) -> str:
        """``TFRecordDataSink`` in Daft's plans."""
        return "TFRecordDataSink"

    def schema(self) -> Any:
        """The result's schema: one row per shard, its ``path`` and ``records``."""
        daft = _daft()
        return daft.Schema.from_pydict(
            {"path": daft.DataType.string(), "records": daft.DataType.int64()}
        )

    def start(self) -> None:
        """Create the directory; refuse to mix with shards already there (unless overwrite)."""
        self.shards.start()

    def write(self, micropartitions: Iterator[Any]) -> Iterator[Any]:
        """Write these micropartitions to one staging shard (whole, or not at all)."""
        # Shards are ordered by when their write started; the uuid keeps keys unique.
        key = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        rows = 0

        def tables() -> Iterator[Any]:
            nonlocal rows
            for mp in micropartitions:
                table = mp.to_arrow()
                rows += table.num_rows
                yield table

        message = self.shards.write(key, tables())
        yield _WriteResult(result=message, bytes_written=0, rows_written=rows)

    def finalize(self, write_results: list[Any]) -> Any:
        """Name the staging shards ``<prefix>-NNNNN-of-MMMMM``; one result row per shard."""
        from daft.recordbatch import MicroPartition

        paths = self.shards.commit([r.result for r in write_results])
        return MicroPartition.from_pydict(
            {"path": paths, "records": list(self.shards.shard_records)}
        )


def write_tfrecords(
    df: Any,
    path: Union[str, os.PathLike[str]],
    *,
    compression: Optional[str] = None,
    prefix: str = "part",
    suffix: str = "",
    sequence_features: Optional[Sequence[str]] = None,
    overwrite: bool = False,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> list[str]:
    """Write a ``daft.DataFrame`` as TFRecord shards in directory ``path``; return their paths.

    Each row becomes one ``tf.train.Example`` (a ``SequenceExample`` when
    ``sequence_features`` names list-of-list columns), with the column mapping of
    :mod:`tfrecord_lite.arrow`. Shards are ``<prefix>-NNNNN-of-MMMMM<suffix>``, named
    once every write has succeeded; when one fails, every staging and temporary
    file of the job is removed before the error is raised. Existing shards of the
    same ``prefix`` are an error unless ``overwrite=True`` (then they are removed
    after the new ones are in place). ``compression``: ``None``, ``"GZIP"`` or ``"ZLIB"``.
    """
    sink = TFRecordDataSink(
        path,
        compression=compression,
        prefix=prefix,
        suffix=suffix,
        sequence_features=sequence_features,
        overwrite=overwrite,
        storage_options=storage_options,
    )
    try:
        df.write_sink(sink)
    except BaseException:
        sink.shards.abort()
        raise
    return list(sink.shards.paths)
