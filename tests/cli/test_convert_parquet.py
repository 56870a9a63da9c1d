"""``convert`` TFRecord -> Parquet in one pass: the records are converted with the
schema of the first ``--sample`` records, read, parsed and written in three threads;
a later record that does not fit starts again with every record checked, so the
result is always what ``tfrecord_lite.arrow.read_table`` (which checks first) gives."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._cli import main
from tfrecord_lite._cli._convert_pipeline import Prefetch

pq = pytest.importorskip("pyarrow.parquet")
arrow = pytest.importorskip("tfrecord_lite.arrow")


def _write(path: Path, examples: list[dict[str, Any]], compression: str = "") -> Path:
    with tfr.TFRecordWriter(path, compression) as w:
        w.write_all(tfr.encode_example(e) for e in examples)
    return path


def _same_as_read_table(src: Path, out: Path, sample: int) -> Any:
    table = pq.read_table(out)
    want = arrow.read_table(str(src), sample=sample)
    assert table.schema.names == want.schema.names
    assert table.to_pylist() == want.to_pylist()
    return table


def _count_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from tfrecord_lite._cli import _convert

    calls: list[int] = []
    real = _convert._convert_records

    def counted(*args: Any) -> int:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(_convert, "_convert_records", counted)
    return calls


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_a_later_record_that_does_not_fit_the_sample(
    tmp_path: Path, compression: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes = _count_passes(monkeypatch)
    examples: list[dict[str, Any]] = [
        {"x": np.array([i], np.int64), "f": np.array([0.5], np.float32)} for i in range(3000)
    ]
    examples[2500] = {"x": np.array([7, 8], np.int64), "f": np.array([0.5], np.float32)}
    src = _write(tmp_path / "in.tfrecord", examples, compression)
    out = tmp_path / "out.parquet"
    assert main(["-q", "convert", str(src), str(out), "--sample", "100"]) == 0
    assert len(passes) == 2  # the sample's schema failed at record 2500: checked, again
    table = _same_as_read_table(src, out, 100)
    assert table.column("x")[2500].as_py() == [7, 8]  # widened to a list, as checked
    assert table.num_rows == 3000


def test_a_key_missing_later_and_one_empty_in_the_sample(tmp_path: Path) -> None:
    examples: list[dict[str, Any]] = [{"x": np.array([i], np.int64)} for i in range(500)]
    for i in range(0, 500, 7):
        examples[i]["later"] = [] if i < 50 else [f"v{i}".encode()]  # empty in the sample
    examples[400] = {"y": np.array([1.0], np.float32)}  # x missing after the sample
    src = _write(tmp_path / "in.tfrecord", examples)
    out = tmp_path / "out.parquet"
    assert main(["-q", "convert", str(src), str(out), "--sample", "50"]) == 0
    table = _same_as_read_table(src, out, 50)
    assert "later" in table.schema.names and table.column("x")[400].as_py() in (None, [])


def test_records_that_fit_are_converted_in_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _write(tmp_path / "in.tfrecord", [{"x": np.array([i], np.int64)} for i in range(5000)])
    calls = _count_passes(monkeypatch)
    assert main(["-q", "convert", str(src), str(tmp_path / "o.parquet"), "--sample", "10"]) == 0
    assert calls == [1]
    assert pq.read_table(tmp_path / "o.parquet").column("x").to_pylist() == list(range(5000))


def test_prefetch_raises_the_threads_error_in_order() -> None:
    def items() -> Any:
        yield 1
        yield 2
        raise ValueError("broken at 3")

    got = []
    with Prefetch(items()) as p, pytest.raises(ValueError, match="broken at 3"):
        for item in p:
            got.append(item)
    assert got == [1, 2]


def test_closing_prefetch_stops_its_thread() -> None:
    produced = []

    def endless() -> Any:
        i = 0
        while True:
            produced.append(i)
            yield i
            i += 1

    before = threading.active_count()
    with Prefetch(endless(), depth=2) as p:
        for item in p:
            if item == 3:
                break
    time.sleep(0.05)
    assert threading.active_count() == before
    assert len(produced) <= 3 + 1 + 2 + 1  # taken, the one in hand, the queue, one more


def test_parquet_row_groups_grow_as_the_batches_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfrecord_lite._cli import _convert_tables

    n = 60_000
    src = _write(tmp_path / "in.tfrecord", [{"x": np.array([i], np.int64)} for i in range(n)])
    out = tmp_path / "o.parquet"
    groups: list[int] = []
    real = _convert_tables.TableFile._flush

    def flushed(self: Any, rows: Any = None) -> None:
        groups.append(self._rows if rows is None else rows)
        real(self, rows)

    monkeypatch.setattr(_convert_tables.TableFile, "_flush", flushed)
    assert main(["-q", "convert", str(src), str(out)]) == 0
    meta = pq.read_metadata(out)
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    # the first row group is one batch, each next twice the last: written as they fill
    assert sizes == [8_192, 16_384, 32_768, 2_656] == groups
    assert pq.read_table(out).column("x").to_pylist() == list(range(n))
    # bounded: never over ROW_GROUP_ROWS, the batches cut where a row group is full
    monkeypatch.setattr(_convert_tables, "ROW_GROUP_ROWS", 10_000)
    n = 20_000
    src = _write(tmp_path / "in2.tfrecord", [{"x": np.array([i], np.int64)} for i in range(n)])
    assert main(["-q", "convert", str(src), str(out)]) == 0
    meta = pq.read_metadata(out)
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sizes == [8_192, 10_000, 1_808]
    assert pq.read_table(out).column("x").to_pylist() == list(range(n))
    # and by bytes: each batch is over the limit, so each is a row group
    monkeypatch.setattr(_convert_tables, "ROW_GROUP_BYTES", 1)
    assert main(["-q", "convert", str(src), str(tmp_path / "b.parquet")]) == 0
    assert pq.read_metadata(tmp_path / "b.parquet").num_row_groups == 3


def test_parquet_dictionaries_for_repeating_columns_only(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    n = 5_000
    examples: list[dict[str, Any]] = [
        {
            "kind": [b"cash" if i % 3 else b"card"],  # 2 distinct bytes values
            "tags": [b"a", b"b"][: i % 3],  # a list column of few values
            "hour": [i % 24],
            "stamp": [10**12 + i],  # every value distinct
            "lat": rng.random(1, dtype=np.float32),
            "fare": [float(i % 50)],
        }
        for i in range(n)
    ]
    src = _write(tmp_path / "in.tfrecord", examples)
    out = tmp_path / "o.parquet"
    assert main(["-q", "convert", str(src), str(out)]) == 0
    meta = pq.read_metadata(out)
    encodings = {}
    for i in range(meta.num_columns):
        col = meta.row_group(0).column(i)
        # (by the column's name: a list's leaf is "tags.list.element", or
        # "tags.list.item" as pyarrow before 13 writes it)
        encodings[col.path_in_schema.split(".")[0]] = "RLE_DICTIONARY" in col.encodings
    assert encodings == {
        "fare": True,
        "hour": True,
        "kind": True,
        "lat": False,
        "stamp": False,
        "tags": True,
    }
    _same_as_read_table(src, out, 1000)


def test_big_records_make_small_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tfrecord_lite._cli import _convert_sources

    monkeypatch.setattr(_convert_sources, "BATCH_BYTES", 10_000)
    blob = bytes(range(256)) * 4  # about 1 kB a record: 10 records a batch
    src = _write(tmp_path / "in.tfrecord", [{"b": [blob], "i": [i]} for i in range(95)])
    seen: list[int] = []
    real = _convert_sources.Records.batches

    def recorded(self: Any, size: int) -> Any:
        for batch in real(self, size):
            seen.append(len(batch))
            yield batch

    monkeypatch.setattr(_convert_sources.Records, "batches", recorded)
    assert main(["-q", "convert", str(src), str(tmp_path / "o.arrow")]) == 0
    assert seen == [10] * 9 + [5]
    import pyarrow.feather as feather

    assert feather.read_table(tmp_path / "o.arrow").column("i").to_pylist() == list(range(95))


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_batches_are_the_records_where_they_were_read(
    tmp_path: Path, compression: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfrecord_lite._record import RecordSpans
    from tfrecord_lite._tables import ReadPlan

    n = 20_000
    src = _write(
        tmp_path / "in.tfrecord",
        [{"x": [i], "s": [b"ab"] * (i % 3)} for i in range(n)],
        compression,
    )
    kinds: list[tuple[type, int]] = []
    real = ReadPlan.convert

    def convert(self: Any, records: Any) -> Any:
        kinds.append((type(records), len(records)))
        return real(self, records)

    monkeypatch.setattr(ReadPlan, "convert", convert)
    out = tmp_path / "o.parquet"
    assert main(["-q", "convert", str(src), str(out)]) == 0
    batches = [k for k in kinds if k[1]]  # (the plan's schema: an empty batch)
    # spans of the blocks read, joined into batches of 8,192: no object per record
    assert batches == [(RecordSpans, 8192), (RecordSpans, 8192), (RecordSpans, 3616)]
    _same_as_read_table(src, out, 1000)


def test_a_given_schema_names_the_columns(tmp_path: Path, capsys: Any) -> None:
    import json

    examples: list[dict[str, Any]] = [
        {"x": np.array([i], np.int64), "v": np.arange(i % 3, dtype=np.float32), "s": [b"a"]}
        for i in range(50)
    ]
    src = _write(tmp_path / "in.tfrecord", examples)
    # as `tfrecord-lite schema --format json` writes it
    assert main(["schema", str(src), "--format", "json", "-q"]) == 0
    full = tmp_path / "full.json"
    full.write_text(capsys.readouterr().out)
    out = tmp_path / "full.parquet"
    assert main(["-q", "convert", str(src), str(out), "--schema", str(full)]) == 0
    _same_as_read_table(src, out, 1000)
    # or a plain object: only the features it names, with the types it says
    some = tmp_path / "some.json"
    some.write_text(json.dumps({"x": "int64", "v": "float32[]"}))
    out = tmp_path / "some.parquet"
    assert main(["-q", "convert", str(src), str(out), "--schema", str(some)]) == 0
    table = pq.read_table(out)
    assert table.schema.names == ["v", "x"] or table.schema.names == ["x", "v"]
    assert table.column("x").to_pylist() == list(range(50))
    assert table.column("v").to_pylist()[:4] == [[], [0.0], [0.0, 1.0], []]
    # a feature a record lacks: the record is named, nothing is written
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"x": "int64", "nope": "int64"}))
    assert main(["convert", str(src), str(tmp_path / "m.parquet"), "--schema", str(missing)]) == 1
    assert "nope" in capsys.readouterr().err
    assert not (tmp_path / "m.parquet").exists()


@pytest.mark.parametrize(
    "text, out, said",
    [
        ("{not json", "o.parquet", "--schema"),
        ('{"x": "int65"}', "o.parquet", "--schema"),
        ("{}", "o.parquet", "names no features"),
        ('{"x": "int64"}', "o.tfrecord", "--schema is for TFRecord inputs written as Parquet"),
    ],
)
def test_a_bad_schema_is_a_usage_error(
    tmp_path: Path, capsys: Any, text: str, out: str, said: str
) -> None:
    src = _write(tmp_path / "in.tfrecord", [{"x": np.array([1], np.int64)}])
    schema = tmp_path / "s.json"
    schema.write_text(text)
    assert main(["convert", str(src), str(tmp_path / out), "--schema", str(schema)]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err, err
    assert not (tmp_path / out).exists()
