"""TFRecord files as Polars frames: a lazy scan with projection, predicate and limit pushdown.

Needs Polars: ``pip install "tfrecord-lite-np[polars]"`` (Polars and pyarrow). No
TensorFlow involved::

    import polars as pl
    from tfrecord_lite import polars as tfpl

    lf = tfpl.scan_tfrecord("train-*.tfrecord")           # schema inferred, nothing read yet
    out = (
        lf.filter(pl.col("label") == 3)                   # applied to each batch as it is read
        .select("label", "trip_miles")                     # only these features are parsed
        .head(1000)                                         # reading stops after 1000 rows
        .collect()
    )
    df = tfpl.read_tfrecord("train-*.tfrecord", columns=["label"])

:func:`scan_tfrecord` registers the files as a source through Polars' IO-plugin
interface (``polars.io.plugins.register_io_source``): for each query Polars hands
down the columns it needs, the filter and the row limit, and the records are read,
parsed and converted ``batch_size`` at a time, so memory holds one batch of the
source. The columns are typed as :func:`tfrecord_lite.arrow.read_table` types them
(``int64``, ``float32``, ``binary`` for strings, ``Array`` for fixed shapes, ``List``
for variable lengths and feature lists).

Importing ``tfrecord_lite`` never imports Polars; this module imports it on first use.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from ._errors import TFRecordError
from ._examples import DEFAULT_SAMPLE, FeatureSpec
from ._files import PathOrFile, TFRecordOptions, cores
from ._tables import (
    DEFAULT_BATCH_SIZE,
    ReadPlan,
    make_plan,
    projected_plan,
    require,
    require_pyarrow,
    stream_tables,
)

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = ["read_tfrecord", "scan_tfrecord"]


def _polars() -> Any:
    require_pyarrow("tfrecord_lite.polars", "polars")
    return require("polars", "tfrecord_lite.polars", "Polars", "polars")


class _Source:
    """The IO-plugin callable: ``(with_columns, predicate, n_rows, batch_size) -> frames``.

    Holds the files and the full read plan; each query narrows the plan to the
    columns it needs (those selected and those its filter reads).
    """

    def __init__(
        self,
        paths: Any,
        plan: ReadPlan,
        compression: Any,
        verify: bool,
        on_error: str,
        batch_size: int,
    ) -> None:
        self.paths = paths
        self.plan = plan
        self.compression = compression
        self.verify = verify
        self.on_error = on_error
        self.batch_size = batch_size
        #: The library's error that ended the last read (Polars 1.x hands it on wrapped
        #: in a ComputeError; read_tfrecord raises this one instead).
        self.failed: Optional[BaseException] = None

    def schema(self) -> Any:
        pl = _polars()
        return pl.from_arrow(self.plan.schema.empty_table()).schema

    def __call__(
        self,
        with_columns: Optional[list[str]],
        predicate: Optional[pl.Expr],
        n_rows: Optional[int],
        batch_size: Optional[int],
    ) -> Iterator[pl.DataFrame]:
        pl = _polars()
        parse: Optional[list[str]] = None
        if with_columns is not None:
            parse = list(with_columns)
            if predicate is not None:
                parse += [c for c in predicate.meta.root_names() if c not in parse]
        plan = projected_plan(self.plan, parse)
        tables = stream_tables(
            plan,
            self.paths,
            compression=self.compression,
            verify=self.verify,
            on_error=self.on_error,
            batch_size=self.batch_size,
            limit=n_rows if predicate is None else None,
            workers=cores(),
        )
        left = n_rows
        self.failed = None
        try:
            for table in tables:
                df = pl.from_arrow(table, rechunk=False)
                if predicate is not None:
                    df = df.filter(predicate)
                if with_columns is not None and df.columns != with_columns:
                    df = df.select(with_columns)  # (a column only the filter read)
                if left is not None:
                    if df.height >= left:
                        yield df.head(left)
                        return
                    left -= df.height
                yield df
        except TFRecordError as err:
            self.failed = err
            raise
        finally:
            tables.close()  # the files, when a limit or the consumer stops early


def scan_tfrecord(
    paths: Union[PathOrFile, Sequence[PathOrFile]],
    features: Optional[Mapping[str, FeatureSpec]] = None,
    *,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
    compression: Union[str, TFRecordOptions, None] = "auto",
    verify: bool = True,
    on_error: str = "raise",
    batch_size: int = DEFAULT_BATCH_SIZE,
    sample: Optional[int] = DEFAULT_SAMPLE,
) -> pl.LazyFrame:
    """A ``polars.LazyFrame`` over the records of ``paths``; nothing is read until collected.

    ``paths`` is anything :class:`~tfrecord_lite.TFRecordReader` takes (paths, globs,
    directories, ``name@N`` shard specs, URLs). ``features`` are the Example's specs
    (for SequenceExamples the context specs, with ``sequence_features`` for the
    feature lists); when both are ``None`` the schema is inferred now from the first
    ``sample`` records. Pushed down into the read: the projection (only the
    features a query uses are parsed), the filter (applied to each batch of
    ``batch_size`` records as it is parsed) and the row limit of ``head`` /
    ``limit`` (reading stops once it is reached; after a filter, Polars 2 stops
    asking for batches once it has the rows, Polars 1.x reads on to the end).
    ``compression``, ``verify`` and ``on_error`` are the reader's. Every collect
    reads the files again. A damaged record, or one that does not parse, ends the
    collect with the library's error (:class:`~tfrecord_lite.DataLossError`,
    :class:`~tfrecord_lite.ParseError`...) under Polars 2, and with a
    ``polars.exceptions.ComputeError`` whose message holds it under Polars 1.x.
    """
    lf, _ = _scan(
        paths, features, sequence_features, compression, verify, on_error, batch_size, sample
    )
    return lf


def _scan(
    paths: Any,
    features: Optional[Mapping[str, FeatureSpec]],
    sequence_features: Optional[Mapping[str, FeatureSpec]],
    compression: Any,
    verify: bool,
    on_error: str,
    batch_size: int,
    sample: Optional[int],
) -> tuple[pl.LazyFrame, _Source]:
    _polars()
    from polars.io.plugins import register_io_source

    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    plan = make_plan(
        paths, features, sequence_features, None, compression=compression, sample=sample
    )
    source = _Source(paths, plan, compression, verify, on_error, batch_size)
    lf: pl.LazyFrame = register_io_source(source, schema=source.schema(), **_options())
    return lf, source


def _options() -> dict[str, Any]:
    """The plugin options this Polars takes: the same files read twice in a query are
    one scan (``is_pure``), and the scan is named ``tfrecord`` in ``explain()``."""
    import inspect

    from polars.io.plugins import register_io_source

    params = inspect.signature(register_io_source).parameters
    wanted = {"is_pure": True, "explain_name": "tfrecord"}
    return {k: v for k, v in wanted.items() if k in params}


def read_tfrecord(
    paths: Union[PathOrFile, Sequence[PathOrFile]],
    features: Optional[Mapping[str, FeatureSpec]] = None,
    *,
    columns: Optional[Sequence[str]] = None,
    n_rows: Optional[int] = None,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
    compression: Union[str, TFRecordOptions, None] = "auto",
    verify: bool = True,
    on_error: str = "raise",
    batch_size: int = DEFAULT_BATCH_SIZE,
    sample: Optional[int] = DEFAULT_SAMPLE,
) -> pl.DataFrame:
    """The records of ``paths`` as one ``polars.DataFrame``.

    ``columns`` parses only those features (in that order); ``n_rows`` reads only
    the first rows. The other arguments are :func:`scan_tfrecord`'s. A read error
    is raised as the library's error with every Polars version.
    """
    if isinstance(columns, str):
        raise TypeError(f"columns must be a list of feature names, not one string {columns!r}")
    if n_rows is not None and n_rows < 0:
        raise ValueError(f"n_rows must be at least 0, got {n_rows}")
    lf, source = _scan(
        paths, features, sequence_features, compression, verify, on_error, batch_size, sample
    )
    if columns is not None:
        names = lf.collect_schema().names()
        unknown = [c for c in columns if c not in names]
        if unknown:
            raise KeyError(
                f"columns: no feature {', '.join(map(repr, unknown))} in the records' schema "
                f"(its features: {', '.join(map(repr, names))})"
            )
        lf = lf.select(list(columns))
    if n_rows is not None:
        lf = lf.head(n_rows)
    try:
        df: pl.DataFrame = lf.collect()
    except Exception as err:
        if source.failed is not None and source.failed is not err:
            raise source.failed from None  # what Polars 1.x wrapped in a ComputeError
        raise
    return df
