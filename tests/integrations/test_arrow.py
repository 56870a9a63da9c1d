"""tfrecord_lite.arrow: parsed columns <-> pyarrow tables, read_table / write_table, Parquet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr

pa = pytest.importorskip("pyarrow")
from tfrecord_lite import arrow as tfa  # noqa: E402

FEATURES = {
    "label": tfr.FixedLenFeature([], tfr.int64),
    "score": tfr.FixedLenFeature([], tfr.float32),
    "name": tfr.FixedLenFeature([], tfr.string),
    "vec": tfr.FixedLenFeature([3], tfr.float32),
    "grid": tfr.FixedLenFeature([2, 3], tfr.int64),
    "tags": tfr.VarLenFeature(tfr.string),
    "ids": tfr.RaggedFeature(tfr.int64),
    "steps": tfr.FixedLenSequenceFeature([2], tfr.float32, allow_missing=True),
}


def example(i: int) -> bytes:
    return tfr.encode_example(
        {
            "label": i,
            "score": i / 4,
            # bytes that are not text: a NUL, invalid UTF-8, trailing NULs
            "name": bytes([0, 0xFF, i % 256]) + b"\x00" * (i % 3),
            "vec": [i, -i, 0.5],
            "grid": np.arange(6, dtype=np.int64) * i,
            "tags": [b"t%d" % j for j in range(i % 4)],
            "ids": list(range(i % 5)),
            "steps": [float(j) for j in range(2 * (i % 3))],
        }
    )


RECORDS = [example(i) for i in range(23)]


def test_type_mapping() -> None:
    t = tfa.to_arrow(tfr.parse_example(RECORDS, FEATURES), FEATURES)
    types = {f.name: f.type for f in t.schema}
    assert types["label"] == pa.int64()
    assert types["score"] == pa.float32()
    assert types["name"] == pa.binary()
    assert types["vec"] == pa.list_(pa.float32(), 3)
    assert types["grid"] == pa.list_(pa.list_(pa.int64(), 3), 2)
    assert types["tags"] == pa.list_(pa.binary())
    assert types["ids"] == pa.list_(pa.int64())
    assert types["steps"] == pa.list_(pa.list_(pa.float32(), 2))
    assert t.schema == tfa.arrow_schema(FEATURES)
    assert t.num_rows == len(RECORDS)


def test_rows_equal_the_parse() -> None:
    parsed = tfr.parse_example(RECORDS, FEATURES)
    rows = tfa.to_arrow(parsed, FEATURES).to_pylist()
    tags = parsed["tags"].to_list()
    for i, row in enumerate(rows):
        assert row["label"] == i
        assert row["score"] == np.float32(i / 4)
        assert row["name"] == parsed["name"][i]
        assert isinstance(row["name"], bytes)
        assert row["vec"] == parsed["vec"][i].tolist()
        assert row["grid"] == parsed["grid"][i].tolist()
        assert row["tags"] == tags[i]
        assert row["ids"] == list(range(i % 5))
        # parse_example pads to the longest record, and so do these rows
        assert row["steps"] == parsed["steps"][i].tolist()


def test_read_table_keeps_each_records_own_rows(tmp_path: Path) -> None:
    path = tmp_path / "steps.tfrecord"
    with tfr.TFRecordWriter(path) as w:
        w.write_all(RECORDS)
    rows = tfa.read_table(path, FEATURES).to_pylist()
    for i, row in enumerate(rows):
        assert row["steps"] == [[2.0 * j, 2.0 * j + 1] for j in range(i % 3)]
    bad = tmp_path / "bad.tfrecord"
    with tfr.TFRecordWriter(bad) as w:
        w.write(tfr.encode_example({"steps": [1.0, 2.0, 3.0]}))
    spec = {"steps": FEATURES["steps"]}
    with pytest.raises(tfr.ParseError, match="values size: 3"):
        tfa.read_table(bad, spec)


def test_round_trip_through_from_arrow_and_write_table(tmp_path: Path) -> None:
    parsed = tfr.parse_example(RECORDS, FEATURES)
    table = tfa.to_arrow(parsed, FEATURES)
    cols = tfa.from_arrow(table)
    assert cols["grid"].shape == (23, 2, 3) and cols["grid"].dtype == np.int64
    assert cols["vec"].dtype == np.float32
    assert isinstance(cols["ids"], tfr.RaggedValue)
    np.testing.assert_array_equal(cols["ids"].row_splits, parsed["ids"].row_splits)
    path = tmp_path / "out.tfrecord"
    assert tfa.write_table(table, path) == len(RECORDS)
    again = tfr.parse_example(list(tfr.tf_record_iterator(path)), FEATURES)
    assert tfa.to_arrow(again, FEATURES).equals(table)


def test_read_table_infers_the_schema_and_equals_the_parse(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord.gz"
    with tfr.TFRecordWriter(path, "GZIP") as w:
        w.write_all(RECORDS)
    inferred = tfr.infer_schema(path)
    table = tfa.read_table(path, batch_size=5)
    want = tfa.to_arrow(tfr.parse_example(RECORDS, inferred), inferred)
    assert table.equals(want)
    assert table.schema == tfa.arrow_schema(inferred)
    assert sum(t.num_rows for t in tfa.iter_tables(path, FEATURES, batch_size=7)) == 23
    assert [t.num_rows for t in tfa.iter_tables(path, FEATURES, batch_size=7)] == [7, 7, 7, 2]


def test_empty_file_gives_an_empty_table_of_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "empty.tfrecord"
    tfr.TFRecordWriter(path).close()
    table = tfa.read_table(path, FEATURES)
    assert table.num_rows == 0
    assert table.schema == tfa.arrow_schema(FEATURES)


def test_sparse_offsets_come_without_per_row_python() -> None:
    n = 50_000
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 5, n)
    rows = np.repeat(np.arange(n), counts)
    pos = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    sv = tfr.SparseValue(
        np.stack([rows, pos], 1).astype(np.int64),
        np.arange(len(rows), dtype=np.int64),
        np.array([n, counts.max()], np.int64),
    )
    t = tfa.to_arrow({"v": sv})
    arr = t.column("v").chunk(0)
    np.testing.assert_array_equal(np.diff(arr.offsets.to_numpy()), counts)
    np.testing.assert_array_equal(arr.values.to_numpy(), sv.values)


def test_ragged_values_are_the_arrow_child_without_copy() -> None:
    values = np.arange(10, dtype=np.int64)
    rv = tfr.RaggedValue(values, np.array([0, 3, 3, 10], np.int64))
    arr = tfa.to_arrow({"r": rv}).column("r").chunk(0)
    assert arr.to_pylist() == [[0, 1, 2], [], list(range(3, 10))]
    assert arr.type == pa.list_(pa.int64())  # int32 offsets when they fit
    child = arr.values.to_numpy()
    assert np.shares_memory(child, values)


def test_nested_ragged_is_list_of_lists() -> None:
    inner = tfr.RaggedValue(np.array([1.0, 2.0, 3.0], np.float32), np.array([0, 2, 2, 3]))
    outer = tfr.RaggedValue(inner, np.array([0, 1, 3]))
    arr = tfa.to_arrow({"x": outer}).column("x").chunk(0)
    assert arr.to_pylist() == [[[1.0, 2.0]], [[], [3.0]]]
    back = tfa.from_arrow(pa.table({"x": arr}))["x"]
    assert isinstance(back, tfr.RaggedValue) and back.to_list() == outer.to_list()


SEQ_RECORDS = [
    tfr.encode_sequence_example(
        {"id": i, "lang": b"en\x00"},
        {
            "tokens": [list(range(j)) for j in range(i % 4)],  # steps of different lengths
            "frames": [[float(i), float(j)] for j in range(i % 3)],
        },
    )
    for i in range(11)
]


def test_sequence_examples_become_list_of_lists(tmp_path: Path) -> None:
    path = tmp_path / "seq.tfrecord"
    with tfr.TFRecordWriter(path) as w:
        w.write_all(SEQ_RECORDS)
    table = tfa.read_table(path)
    types = {f.name: f.type for f in table.schema}
    assert types["tokens"] == pa.list_(pa.list_(pa.int64()))
    assert types["frames"] == pa.list_(pa.list_(pa.float32(), 2))
    assert types["lang"] == pa.binary()
    rows = table.to_pylist()
    for i, row in enumerate(rows):
        assert row["id"] == i
        assert row["tokens"] == [list(range(j)) for j in range(i % 4)]
        assert row["frames"] == [[float(i), float(j)] for j in range(i % 3)]
    assert set(tfa.feature_lists_of(table)) == {"tokens", "frames"}
    # ... and are written back as SequenceExamples that parse to the same table
    out = tmp_path / "seq2.tfrecord"
    assert tfa.write_table(table, out) == 11
    assert tfa.read_table(out).equals(table)


def test_to_arrow_takes_the_parse_sequence_example_tuple() -> None:
    ctx = {"id": tfr.FixedLenFeature([], tfr.int64)}
    seq = {"frames": tfr.FixedLenSequenceFeature([2], tfr.float32, allow_missing=True)}
    parsed = tfr.parse_sequence_example(SEQ_RECORDS, ctx, seq)
    t = tfa.to_arrow(parsed, ctx, sequence_features=seq)
    assert [len(r) for r in t.column("frames").to_pylist()] == [i % 3 for i in range(11)]


def test_write_table_from_plain_arrow_types(tmp_path: Path) -> None:
    table = pa.table(
        {
            "i8": pa.array([1, -2, 3], pa.int8()),
            "flag": pa.array([True, False, True]),
            "text": pa.array(["a", "ü", ""]),
            "blob": pa.array([b"\x00", b"", b"\xff\xfe"], pa.large_binary()),
            "f64": pa.array([0.5, 1.25, -2.0]),
            "lst": pa.array([[1, 2], [], [3]], pa.large_list(pa.int32())),
        }
    )
    path = tmp_path / "plain.tfrecord"
    tfa.write_table(table, path)
    back = tfa.read_table(path).to_pydict()
    assert back["i8"] == [1, -2, 3]
    assert back["flag"] == [1, 0, 1]
    assert back["text"] == [b"a", "ü".encode(), b""]
    assert back["blob"] == [b"\x00", b"", b"\xff\xfe"]
    assert back["f64"] == [0.5, 1.25, -2.0]
    assert back["lst"] == [[1, 2], [], [3]]


def test_nulls_and_unsupported_types_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'x' has 1 null"):
        tfa.write_table(pa.table({"x": pa.array([1, None])}), tmp_path / "a")
    with pytest.raises(TypeError, match=r"'t'.*no TFRecord feature type"):
        tfa.write_table(pa.table({"t": pa.array([1, 2], pa.timestamp("s"))}), tmp_path / "b")
    with pytest.raises(ValueError, match="list of lists"):
        tfa.write_table(
            pa.table({"x": pa.array([[[1]]], pa.list_(pa.list_(pa.int64())))}),
            tmp_path / "c",
            sequence_features=[],
        )
    sparse = {"sp": tfr.SparseFeature("idx", "val", tfr.float32, 10)}
    with pytest.raises(ValueError, match="SparseFeature"):
        tfa.arrow_schema(sparse)


def test_float64_narrowing_warns(tmp_path: Path) -> None:
    with pytest.warns(RuntimeWarning, match="narrowed to float32"):
        tfa.write_table(pa.table({"x": pa.array([0.1])}), tmp_path / "f")


def test_parquet_round_trip(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    table = tfa.to_arrow(tfr.parse_example(RECORDS, FEATURES), FEATURES)
    pq.write_table(table, tmp_path / "t.parquet")
    back = pq.read_table(tmp_path / "t.parquet")
    out = tmp_path / "from-parquet.tfrecord"
    tfa.write_table(back, out)
    again = tfr.parse_example(list(tfr.tf_record_iterator(out)), FEATURES)
    assert tfa.to_arrow(again, FEATURES).equals(table)


def test_to_pandas() -> None:
    pytest.importorskip("pandas")
    df = tfa.to_arrow(tfr.parse_example(RECORDS, FEATURES), FEATURES).to_pandas()
    assert list(df["label"]) == list(range(23))
    assert df["name"][1] == bytes([0, 0xFF, 1]) + b"\x00"
    assert list(df["ids"][4]) == [0, 1, 2, 3]


def test_missing_pyarrow_message(monkeypatch: Any) -> None:
    import builtins

    real = builtins.__import__

    def no_pyarrow(name: str, *a: Any, **k: Any) -> Any:
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(ImportError, match=r'pip install "tfrecord-lite-np\[arrow\]"'):
        tfa.to_arrow({"x": np.zeros(2)})


def test_tensor_extension_columns_are_written_as_their_values(tmp_path: Path) -> None:
    values = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    tensors = pa.FixedShapeTensorArray.from_numpy_ndarray(values)
    cols = tfa.from_arrow(pa.table({"x": tensors}))
    np.testing.assert_array_equal(cols["x"], values)
    tfa.write_table(pa.table({"x": tensors}), tmp_path / "t.tfrecord")
    spec = {"x": tfr.FixedLenFeature([2, 2], tfr.float32)}
    parsed = tfr.parse_example(list(tfr.tf_record_iterator(tmp_path / "t.tfrecord")), spec)
    np.testing.assert_array_equal(parsed["x"], values)


# --------------------------------------------------------------------------- CLI: Parquet


def test_cli_convert_to_parquet_and_back(tmp_path: Path, capsys: Any) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from tfrecord_lite._cli import main

    src = tmp_path / "in.tfrecord"
    with tfr.TFRecordWriter(src) as w:
        w.write_all(RECORDS)
    assert main(["convert", str(src), str(tmp_path / "t.parquet"), "--to", "parquet"]) == 0
    assert "wrote 23 records" in capsys.readouterr().out
    inferred = tfr.infer_schema(src)
    want = tfa.to_arrow(tfr.parse_example(RECORDS, inferred), inferred)
    assert pq.read_table(tmp_path / "t.parquet").equals(want)
    # Parquet inputs (by suffix) back into TFRecords: one file, or GZIP shards
    assert main(["-q", "convert", str(tmp_path / "t.parquet"), str(tmp_path / "back")]) == 0
    assert tfa.read_table(tmp_path / "back", inferred).equals(want)
    argv = ["convert", str(tmp_path / "t.parquet"), str(tmp_path / "sh"), "--shards", "2"]
    assert main([*argv, "--compression", "GZIP", "-q"]) == 0
    shards = sorted(str(p) for p in tmp_path.glob("sh-*"))
    assert [Path(p).name for p in shards] == ["sh-00000-of-00002", "sh-00001-of-00002"]
    assert sorted(tfa.read_table(shards, inferred).column("label").to_pylist()) == list(range(23))


def test_cli_parquet_usage_errors(tmp_path: Path, capsys: Any) -> None:
    from tfrecord_lite._cli import main

    src = tmp_path / "in.tfrecord"
    with tfr.TFRecordWriter(src) as w:
        w.write_all(RECORDS)
    out = str(tmp_path / "t.parquet")
    assert main(["convert", str(src), out, "--to", "parquet", "--shards", "2"]) == 2
    assert "--shards" in capsys.readouterr().err
    assert not Path(out).exists()
    assert main(["convert", str(src), out, "--from", "parquet"]) != 0
    assert not Path(out).exists()


def test_table_records_are_the_examples_encode_example_builds() -> None:
    table = pa.table({"a": pa.array([1, 2]), "b": pa.array([b"x", b""])})
    assert tfa.table_records(table) == [
        tfr.encode_example({"a": 1, "b": b"x"}),
        tfr.encode_example({"a": 2, "b": b""}),
    ]
