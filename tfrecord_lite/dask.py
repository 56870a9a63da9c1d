"""Dask: TFRecord files as a ``dask.dataframe.DataFrame``, and a DataFrame back as shards.

Needs Dask: ``pip install "tfrecord-lite-np[dask]"``. No TensorFlow involved::

    from tfrecord_lite import dask as tfdask

    df = tfdask.read_tfrecords("data/train-*.tfrecord")      # one partition per file
    df = df[df.label < 5]
    paths = tfdask.to_tfrecords(df, "out/")                   # out/part-00000-of-000NN ...

Each partition is one file, or one range of records of a large uncompressed
file that has an index file. It is parsed with the library's vectorized parser
into Arrow (:mod:`tfrecord_lite.arrow`) and handed to pandas: numbers become
NumPy columns, bytes ``object`` columns of ``bytes``, fixed shapes and lists
``object`` columns of arrays. :func:`to_tfrecords` writes one shard per
partition, each to a temporary file renamed onto its final name when complete.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

from ._examples import DEFAULT_SAMPLE, FeatureSpec
from ._files import TFRecordWriter, shard_name
from ._tables import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_RECORDS_PER_TASK,
    Paths,
    Piece,
    PieceReader,
    ReadOptions,
    require_dask_dataframe,
    require_pyarrow,
    table_records,
)

__all__ = ["read_tfrecords", "to_tfrecords"]


class _ReadPartition:
    """Reads one partition (a file or a record range) into pandas; pickled to the workers."""

    def __init__(self, reader: PieceReader) -> None:
        self.reader = reader

    def __call__(self, piece: Piece) -> Any:
        return self.reader.table(piece).to_pandas()


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
    records_per_partition: Optional[int] = None,
) -> Any:
    """A lazy ``dask.dataframe.DataFrame`` of the records of TFRecord files (``dd.from_map``).

    One partition per file; a large uncompressed file with an index file is
    split into partitions of about ``records_per_task`` records
    (``records_per_partition``, its earlier name, is still taken). Arguments as
    :func:`tfrecord_lite.ray.read_tfrecords`: ``features`` inferred from the
    first file when ``None``, SequenceExamples with ``sequence_features``,
    URLs with ``storage_options``, ``include_paths`` adds a ``path`` column.
    """
    if records_per_partition is not None:
        if records_per_task not in (DEFAULT_RECORDS_PER_TASK, records_per_partition):
            raise ValueError(
                "records_per_partition is the earlier name of records_per_task: give one"
            )
        records_per_task = records_per_partition
    dd = require_dask_dataframe()
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
    empty = reader.schema.empty_table()
    meta = empty.to_pandas()
    import dask

    # bytes stay bytes: Dask's default would turn object columns into (decoded) text.
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_map(
            _ReadPartition(reader),
            pieces,
            meta=meta,
            label="read-tfrecords",
            enforce_metadata=False,
        )


def _write_partition(
    pdf: Any,
    final: str,
    compression: Optional[str],
    sequence_features: Optional[list[str]],
) -> int:
    pa = require_pyarrow("tfrecord_lite.dask", "dask")
    table = pa.Table.from_pandas(pdf, preserve_index=False)
    with TFRecordWriter(final, compression, atomic=True) as w:
        return w.write_all(table_records(table, sequence_features=sequence_features))


def to_tfrecords(
    df: Any,
    path: Union[str, os.PathLike[str]],
    *,
    compression: Optional[str] = None,
    prefix: str = "part",
    sequence_features: Optional[Sequence[str]] = None,
    compute: bool = True,
    **compute_kwargs: Any,
) -> Any:
    """Write a Dask DataFrame as one TFRecord shard per partition; return the shard paths.

    Shards are ``<path>/<prefix>-NNNNN-of-MMMMM`` (``MMMMM`` = number of
    partitions). Each row becomes a ``tf.train.Example`` (``SequenceExample``
    with ``sequence_features``), with the column mapping of
    :mod:`tfrecord_lite.arrow` (object columns of arrays or lists become lists).
    Each shard goes to a temporary file renamed onto its name when complete, so a
    task Dask retries leaves neither a partial nor a duplicated shard.
    ``compute=False`` returns the ``dask.delayed`` objects (each gives its
    shard's record count) instead of writing now.
    """
    require_dask_dataframe()
    import dask

    root = os.fspath(path)
    if "://" in root:
        raise ValueError("to_tfrecords writes to a local or shared file system path")
    os.makedirs(root, exist_ok=True)
    parts = df.to_delayed()
    n = len(parts)
    finals = [os.path.join(root, shard_name(prefix, i, n)) for i in range(n)]
    seq = list(sequence_features) if sequence_features else None
    write = dask.delayed(_write_partition, pure=False)
    tasks = [write(part, final, compression, seq) for part, final in zip(parts, finals)]
    if not compute:
        return tasks
    dask.compute(*tasks, **compute_kwargs)
    return finals
