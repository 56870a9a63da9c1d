"""One set of read arguments for every table integration: ``ReadOptions`` in ``_tables``,
and ``read_tfrecords`` of Ray, Daft, Spark and Dask and ``hf.load_dataset`` taking the same
arguments under the same names, kinds and defaults (checked from their signatures, so
without the engines installed)."""

from __future__ import annotations

import inspect
import os
from typing import Any, Callable

import pytest

import tfrecord_lite as tfr
from tfrecord_lite import daft, dask, hf, ray, spark
from tfrecord_lite._tables import READ_OPTION_NAMES, ReadOptions

READERS: dict[str, Callable[..., Any]] = {
    "ray.read_tfrecords": ray.read_tfrecords,
    "daft.read_tfrecords": daft.read_tfrecords,
    "spark.read_tfrecords": spark.read_tfrecords,
    "dask.read_tfrecords": dask.read_tfrecords,
    "hf.load_dataset": hf.load_dataset,
    "ray.TFRecordDatasource": ray.TFRecordDatasource.__init__,
    "daft.TFRecordDataSource": daft.TFRecordDataSource.__init__,
}
#: What a reader takes before the paths (the SparkSession, ``self``).
LEADING = {"spark.read_tfrecords": 1, "ray.TFRecordDatasource": 1, "daft.TFRecordDataSource": 1}


def shared(reader: str) -> list[tuple[str, Any, Any, Any]]:
    """``(name, kind, default, annotation)`` of the paths and the read options, in order."""
    params = list(inspect.signature(READERS[reader]).parameters.values())
    params = params[LEADING.get(reader, 0) :]
    names = ("paths", *READ_OPTION_NAMES)
    got = [p for p in params if p.name in names]
    assert [p.name for p in params[: len(names)]] == list(names), (
        f"{reader}: the paths and read options come first, in ReadOptions' order"
    )
    return [(p.name, p.kind, p.default, p.annotation) for p in got]


def test_readoptions_lists_the_arguments_of_every_reader() -> None:
    assert READ_OPTION_NAMES == (
        "features",
        "sequence_features",
        "compression",
        "verify",
        "on_error",
        "storage_options",
        "batch_size",
        "records_per_task",
        "include_paths",
        "sample",
    )


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_takes_the_same_read_arguments(reader: str) -> None:
    want = shared("daft.read_tfrecords")
    assert shared(reader) == want
    kinds = {name: kind for name, kind, _, _ in want}
    P = inspect.Parameter
    assert kinds["paths"] == kinds["features"] == P.POSITIONAL_OR_KEYWORD
    assert all(kinds[name] == P.KEYWORD_ONLY for name in READ_OPTION_NAMES[1:])
    defaults = {name: default for name, _, default, _ in want}
    options = ReadOptions()
    assert defaults == {"paths": P.empty, **options.as_dict()}


def test_features_positional_in_every_reader_as_before(tmp_path: Any) -> None:
    # daft, dask and spark took features positionally before; ray now does too.
    for reader in ("ray.read_tfrecords", "dask.read_tfrecords", "daft.read_tfrecords"):
        sig = inspect.signature(READERS[reader])
        bound = sig.bind("a.tfrecord", {"x": tfr.FixedLenFeature([], tfr.int64)})
        assert "features" in bound.arguments
    bound = inspect.signature(spark.read_tfrecords).bind(None, "a", {"x": None})
    assert bound.arguments["features"] == {"x": None}


def test_read_options_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match="batch_size must be at least 1, got 0"):
        ReadOptions(batch_size=0)
    with pytest.raises(ValueError, match="records_per_task must be at least 1"):
        ReadOptions(records_per_task=-5)
    with pytest.raises(ValueError, match="on_error must be 'raise', 'skip' or 'stop'"):
        ReadOptions(on_error="ignore")
    with pytest.raises(ValueError, match="sample must be a number of records"):
        ReadOptions(sample=0)
    with pytest.raises(TypeError, match="features must be a dict or None, got list"):
        ReadOptions(features=["x"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="batch_size must be an int"):
        ReadOptions(batch_size=2.5)  # type: ignore[arg-type]
    assert ReadOptions(sample=None).sample is None


def test_read_options_read_the_files(tmp_path: Any) -> None:
    pytest.importorskip("pyarrow")
    path = os.fspath(tmp_path / "a.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        for i in range(10):
            w.write(tfr.encode_example({"id": i}))
    reader, pieces = ReadOptions(include_paths=True, batch_size=4).read(path)
    assert reader.schema.names == ["id", "path"]
    tables = [t for piece in pieces for t in reader.tables(piece)]
    assert sum(t.num_rows for t in tables) == 10 and max(t.num_rows for t in tables) <= 4
    assert tables[0].column("path")[0].as_py() == path


def test_dask_takes_its_earlier_name_records_per_partition() -> None:
    with pytest.raises(ValueError, match="records_per_partition is the earlier name"):
        dask.read_tfrecords("a.tfrecord", records_per_task=10, records_per_partition=20)
