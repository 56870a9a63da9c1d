"""Parsed records as Apache Arrow tables (and pandas, Parquet), and tables back into TFRecords.

Needs pyarrow: ``pip install "tfrecord-lite-np[arrow]"``. No TensorFlow involved::

    import tfrecord_lite as tfr
    from tfrecord_lite import arrow as tfa

    table = tfa.read_table("train-*.tfrecord")            # schema inferred
    df = table.to_pandas()
    reader = tfa.record_batch_reader("train-*.tfrecord", columns=["label"])
    # a pyarrow.RecordBatchReader: one batch in memory at a time, for DuckDB,
    # Polars, DataFusion (duckdb.sql("SELECT avg(label) FROM reader"))
    tfa.write_table(table, "copy.tfrecord")

    parsed = tfr.parse_example(records, features)
    table = tfa.to_arrow(parsed, features)                # no per-row Python
    columns = tfa.from_arrow(table)                       # back to NumPy / RaggedValue

Type mapping (what :func:`parse_example` returns -> Arrow column):

==========================================  =============================================
``FixedLenFeature([], int64/float32)``      ``int64`` / ``float`` (float32) column
``FixedLenFeature([], string)``             ``binary`` (bytes stay bytes, never text)
``FixedLenFeature([k])``, ``([a, b])``      ``fixed_size_list<T, k>``, nested for each
                                            further dimension (``fixed_size_list<
                                            fixed_size_list<T, b>, a>``)
``VarLenFeature`` (:class:`SparseValue`)    ``list<T>``: one list of values per record
``RaggedFeature`` (:class:`RaggedValue`)    ``list<T>`` (``list<list<T>>`` for each
                                            further ragged dimension); the row splits
                                            *are* the Arrow offsets
``FixedLenSequenceFeature(shape)``          ``list<T>`` / ``list<fixed_size_list<T, k>>``
                                            with each record's own number of steps
SequenceExample feature list                ``list<list<T>>`` (VarLen / Ragged) or
                                            ``list<T>`` / ``list<fixed_size_list<T, k>>``
                                            (``FixedLenSequenceFeature``): one list of
                                            steps per record
==========================================  =============================================

Fixed-length shapes are plain ``fixed_size_list`` columns rather than Arrow's
fixed-shape tensor extension type: every Arrow consumer (Parquet, pandas, Ray
Data, Dask, DuckDB, Polars) reads ``fixed_size_list`` natively, while the
extension type is dropped to its storage by many of them, and it cannot hold
``bytes`` at all. :func:`from_arrow` turns nested fixed-size lists back into one
``(N, a, b)`` array, so nothing is lost.

Every conversion works on whole arrays: dense arrays are handed to Arrow as
they are (zero-copy for numbers), ragged and sparse values become offsets with
one NumPy operation. Which keys were SequenceExample feature lists is kept in
the schema metadata (``tfrecord_lite.feature_lists``), so :func:`write_table`
writes such a table back as SequenceExamples.

A ``SparseFeature`` (sparse values at stored indices) has no Arrow column type:
read its index and value keys as ``VarLenFeature`` columns instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Optional, Union

from ._examples import DEFAULT_SAMPLE, FeatureSpec
from ._files import PathOrFile, TFRecordOptions, TFRecordWriter, cores
from ._tables import (
    DEFAULT_BATCH_SIZE,
    ReadPlan,
    feature_lists_of,
    from_arrow,
    make_plan,
    require_pyarrow,
    stream_tables,
    table_records,
    to_arrow,
)
from ._tables import FEATURE_LISTS_KEY as FEATURE_LISTS_KEY

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterator

    import pyarrow as pa

__all__ = [
    "arrow_schema",
    "feature_lists_of",
    "from_arrow",
    "iter_tables",
    "read_table",
    "record_batch_reader",
    "table_records",
    "to_arrow",
    "write_table",
]


# --------------------------------------------------------------------------- writing


def write_table(
    table: pa.Table,
    path: PathOrFile,
    *,
    compression: Union[str, TFRecordOptions, None] = None,
    sequence_features: Optional[Sequence[str]] = None,
    atomic: bool = False,
    batch_size: int = 65536,
) -> int:
    """Write every row of ``table`` as one record of a TFRecord file; return the count.

    Rows are ``Example`` records, or ``SequenceExample`` when some columns are
    feature lists (``sequence_features``, or the table's metadata). The mapping
    is the reverse of :func:`to_arrow`; a file written from a table that
    :func:`read_table` returned parses back to the same values.
    ``atomic=True`` writes a temporary file renamed onto ``path`` at the end.
    """
    pa = require_pyarrow()
    if not isinstance(table, pa.Table):
        raise TypeError(f"expected a pyarrow.Table, got {type(table).__name__}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    seq = list(sequence_features) if sequence_features is not None else feature_lists_of(table)
    n = 0
    with TFRecordWriter(path, compression, atomic=atomic) as writer:
        for start in range(0, table.num_rows, batch_size):
            chunk = table.slice(start, batch_size)
            n += writer.write_all(table_records(chunk, sequence_features=seq))
    return n


# --------------------------------------------------------------------------- reading


def iter_tables(
    paths: Union[PathOrFile, Sequence[PathOrFile]],
    features: Optional[Mapping[str, FeatureSpec]] = None,
    *,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
    compression: Union[str, TFRecordOptions, None] = "auto",
    verify: bool = True,
    on_error: str = "raise",
    batch_size: int = DEFAULT_BATCH_SIZE,
    sample: Optional[int] = DEFAULT_SAMPLE,
) -> Iterator[pa.Table]:
    """Yield the records of ``paths`` as tables of ``batch_size`` rows (the last may be shorter).

    Arguments as :func:`read_table`; every table has the same schema.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    plan = ReadPlan(features, sequence_features, paths, compression=compression, sample=sample)
    yield from stream_tables(
        plan,
        paths,
        compression=compression,
        verify=verify,
        on_error=on_error,
        batch_size=batch_size,
    )


def read_table(
    paths: Union[PathOrFile, Sequence[PathOrFile]],
    features: Optional[Mapping[str, FeatureSpec]] = None,
    *,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
    compression: Union[str, TFRecordOptions, None] = "auto",
    verify: bool = True,
    on_error: str = "raise",
    batch_size: int = DEFAULT_BATCH_SIZE,
    sample: Optional[int] = DEFAULT_SAMPLE,
    use_threads: bool = True,
) -> pa.Table:
    """Read the records of one or more TFRecord files into one ``pyarrow.Table``.

    ``paths`` is anything :class:`~tfrecord_lite.TFRecordReader` takes (paths,
    globs, directories, ``name@N`` shard specs, URLs, file objects).
    ``features`` are the Example's specs (for SequenceExamples, the context
    specs, with ``sequence_features`` for the feature lists). When both are
    ``None`` the schema is inferred from the first ``sample`` records
    (:func:`~tfrecord_lite.infer_schema`), SequenceExamples included.
    ``compression``, ``verify`` and ``on_error`` are the reader's.

    ``use_threads`` (as in ``pyarrow``'s readers): the records are parsed
    ``batch_size`` at a time on a thread per core (capped by
    ``tfr.options(threads=...)`` / ``TFRECORD_LITE_THREADS``) while this thread
    reads on; the table is the same either way, and so is the first error.
    ``False``: everything in the calling thread.
    """
    pa = require_pyarrow()
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    plan = ReadPlan(features, sequence_features, paths, compression=compression, sample=sample)
    tables = stream_tables(
        plan,
        paths,
        compression=compression,
        verify=verify,
        on_error=on_error,
        batch_size=batch_size,
        workers=cores() if use_threads else 1,
    )
    return pa.concat_tables([plan.schema.empty_table(), *tables])


def record_batch_reader(
    paths: Union[PathOrFile, Sequence[PathOrFile]],
    features: Optional[Mapping[str, FeatureSpec]] = None,
    columns: Optional[Iterable[str]] = None,
    *,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
    compression: Union[str, TFRecordOptions, None] = "auto",
    verify: bool = True,
    on_error: str = "raise",
    batch_size: int = DEFAULT_BATCH_SIZE,
    sample: Optional[int] = DEFAULT_SAMPLE,
) -> pa.RecordBatchReader:
    """The records of ``paths`` as a ``pyarrow.RecordBatchReader``, read as it is consumed.

    Records are read, parsed and converted ``batch_size`` at a time when the reader
    asks for its next batch, so memory holds one batch whatever the files' size.
    Anything that takes an Arrow stream reads it: DuckDB
    (``duckdb.sql("SELECT ... FROM reader")``), Polars (``pl.from_arrow(reader)``),
    DataFusion (``ctx.from_arrow(reader)``), ``pyarrow.dataset``, Parquet writers.
    ``columns`` parses only those features (the others are skipped, not decoded);
    with ``features=None`` the schema is inferred from the first ``sample`` records
    first. The other arguments are :func:`read_table`'s. A reader is read once; make
    another to read again.
    """
    pa = require_pyarrow()
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    plan = make_plan(
        paths, features, sequence_features, columns, compression=compression, sample=sample
    )
    tables = stream_tables(
        plan,
        paths,
        compression=compression,
        verify=verify,
        on_error=on_error,
        batch_size=batch_size,
    )
    return pa.RecordBatchReader.from_batches(plan.schema, _record_batches(tables))


def _record_batches(tables: Iterator[pa.Table]) -> Iterator[pa.RecordBatch]:
    for table in tables:
        yield from table.to_batches()


def arrow_schema(
    features: Optional[Mapping[str, FeatureSpec]] = None,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
) -> pa.Schema:
    """The Arrow schema :func:`read_table` gives for these specs (see the type mapping)."""
    if features is None and sequence_features is None:
        raise ValueError("arrow_schema needs features= and/or sequence_features=")
    return ReadPlan(features or {}, sequence_features).schema
