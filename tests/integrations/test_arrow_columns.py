"""Tables built straight from the parsed columns (parse_example_columns) are the tables
to_arrow makes of parse_example's TensorFlow-shaped output, for every feature type,
both engines and any batch size; errors are parse_example's."""

from __future__ import annotations

import importlib.util
import io
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._examples import ExampleColumn, compile_features, parse_example_columns

pa = pytest.importorskip("pyarrow")
from tfrecord_lite import arrow as tfa  # noqa: E402

FEATURES: dict[str, Any] = {
    "id": tfr.FixedLenFeature([], tfr.int64),
    "opt_int": tfr.FixedLenFeature([], tfr.int64, default_value=-1),
    "grid": tfr.FixedLenFeature([2, 3], tfr.float32, default_value=np.full((2, 3), 0.5)),
    "name": tfr.FixedLenFeature([], tfr.string, default_value=b"none\x00"),
    "pair": tfr.FixedLenFeature([2], tfr.string),
    "empty_shape": tfr.FixedLenFeature([0], tfr.float32),  # (required: an empty list)
    "ints": tfr.VarLenFeature(tfr.int64),
    "floats": tfr.VarLenFeature(tfr.float32),
    "tags": tfr.VarLenFeature(tfr.string),
    "never": tfr.VarLenFeature(tfr.float32),
    "never_fixed": tfr.FixedLenFeature([2], tfr.int64, default_value=[7, 8]),
    "ragged": tfr.RaggedFeature(tfr.float32),
    "ragged_bytes": tfr.RaggedFeature(tfr.string, value_key="tags"),
    "nested": tfr.RaggedFeature(
        tfr.int64, value_key="ints", partitions=[tfr.RaggedFeature.RowLengths("lens")]
    ),
    "rows": tfr.FixedLenSequenceFeature([2], tfr.float32, allow_missing=True),
}

#: The parse engines; the compiled one only where numba is installed (the jit extra).
ENGINES = [
    "numpy",
    pytest.param(
        "jit",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("numba") is None,
            reason="numba is not installed (the jit extra)",
        ),
    ),
]


def record(i: int, rng: random.Random) -> bytes:
    """Record ``i``: every optional feature sometimes absent, sometimes an empty list."""
    values: dict[str, Any] = {"id": i, "pair": [b"a%d" % i, b""]}
    if rng.random() < 0.7:
        values["opt_int"] = rng.randrange(-(2**40), 2**40)
    if rng.random() < 0.6:
        values["grid"] = [rng.uniform(-9, 9) for _ in range(6)]
    if rng.random() < 0.5:
        values["name"] = rng.choice([b"x", b"", b"y\x00z", b"w" * 70 + bytes([i % 256])])
    values["empty_shape"] = tfr.float_feature([])
    k = rng.randrange(4)
    ints = [rng.randrange(-5, 5) for _ in range(k)]
    if rng.random() < 0.8:
        values["ints"] = tfr.int64_feature(ints)
        # Row lengths of the values: a partition that covers them.
        lens: list[int] = []
        left = k
        while left:
            n = rng.randrange(1, left + 1)
            lens.append(n)
            left -= n
        values["lens"] = tfr.int64_feature(lens)
    if rng.random() < 0.7:
        values["floats"] = tfr.float_feature([rng.random() for _ in range(rng.randrange(3))])
    if rng.random() < 0.6:
        values["tags"] = tfr.bytes_feature(
            [b"t%d" % rng.randrange(9) for _ in range(rng.randrange(3))]
        )
    if rng.random() < 0.5:
        values["ragged"] = tfr.float_feature([rng.random() for _ in range(rng.randrange(4))])
    if rng.random() < 0.6:
        values["rows"] = tfr.float_feature([rng.random() for _ in range(2 * rng.randrange(3))])
    order = list(values.items())
    rng.shuffle(order)  # per-record key order, as tf.Transform writes
    return tfr.encode_example(dict(order))


def records(n: int, seed: int = 5) -> list[bytes]:
    rng = random.Random(seed)
    return [record(i, rng) for i in range(n)]


def reference(recs: list[bytes], features: dict[str, Any], batch_size: int) -> Any:
    """The tables as they were made before: parse_example (each record's rows of a
    FixedLenSequenceFeature, unpadded), then to_arrow, batch by batch."""
    plan = compile_features(features, sequence_rows=True)
    tables = [
        tfa.to_arrow(tfr.parse_example(recs[a : a + batch_size], plan), features)
        for a in range(0, len(recs), batch_size)
    ]
    return pa.concat_tables([tfa.arrow_schema(features).empty_table(), *tables])


def write(path: Path, recs: list[bytes]) -> Path:
    with tfr.TFRecordWriter(str(path)) as w:
        w.write_all(recs)
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[bytes]]:
    recs = records(700)
    return write(tmp_path_factory.mktemp("columns") / "data.tfrecord", recs), recs


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("batch_size", [1, 7, 256, 8192])
def test_tables_equal_the_tf_shaped_conversion(
    data: tuple[Path, list[bytes]], engine: str, batch_size: int
) -> None:
    path, recs = data
    with tfr.options(engine=engine):
        expected = reference(recs, FEATURES, batch_size)
        table = tfa.read_table(path, FEATURES, batch_size=batch_size)
        assert table.schema == expected.schema == tfa.arrow_schema(FEATURES)
        assert table.equals(expected)
        streamed = tfa.record_batch_reader(path, FEATURES, batch_size=batch_size).read_all()
        assert streamed.equals(expected)
        parts = list(tfa.iter_tables(path, FEATURES, batch_size=batch_size))
        assert pa.concat_tables(parts).equals(expected)
    # The values are there, not only equal shapes: a default, a missing VarLen key.
    assert table["opt_int"].to_pylist().count(-1) > 100
    assert table["name"].to_pylist().count(b"none\x00") > 100
    assert table["never"].to_pylist() == [[]] * len(recs)
    assert table["never_fixed"].to_pylist() == [[7, 8]] * len(recs)


def test_read_table_of_a_file_object_and_inferred_specs(data: tuple[Path, list[bytes]]) -> None:
    path, recs = data
    expected = tfa.read_table(path, FEATURES)
    with open(path, "rb") as f:
        assert tfa.read_table(f, FEATURES).equals(expected)
    assert tfa.read_table(io.BytesIO(path.read_bytes()), FEATURES).equals(expected)
    inferred = tfr.infer_schema(str(path))
    specs = dict(inferred)
    assert tfa.read_table(path).equals(reference(recs, specs, 8192))


def test_a_file_object_read_with_its_schema_inferred_is_read_whole(
    data: tuple[Path, list[bytes]],
) -> None:
    path, _ = data
    expected = tfa.read_table(path)
    assert expected.num_rows == 700
    # The records sampled for the schema are read again (they were gone: 0 rows).
    f = io.BytesIO(path.read_bytes())
    assert tfa.read_table(f).equals(expected)
    f.seek(0)
    assert pa.concat_tables(list(tfa.iter_tables(f))).equals(expected)
    f.seek(0)
    assert tfa.record_batch_reader(f).read_all().equals(expected)


class _Pipe(io.RawIOBase):
    """A file object that cannot seek (a pipe, a socket)."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        return self._data.readinto(b)


def test_a_file_object_that_cannot_seek_needs_its_specs(data: tuple[Path, list[bytes]]) -> None:
    path, _ = data
    with pytest.raises(ValueError, match=r"cannot seek.*pass features="):
        tfa.read_table(_Pipe(path.read_bytes()))
    table = tfa.read_table(_Pipe(path.read_bytes()), FEATURES)
    assert table.equals(tfa.read_table(path, FEATURES))


def test_sparse_and_partitioned_features_are_parse_examples_values() -> None:
    recs = records(50)
    features = {
        "sparse": tfr.SparseFeature(index_key="ints", value_key="ints", dtype=tfr.int64, size=9),
        "nested": FEATURES["nested"],
        "ints": FEATURES["ints"],
    }
    recs = [
        r
        for r in recs
        if all(
            v >= 0 for v in tfr.parse_single_example(r, {"ints": FEATURES["ints"]})["ints"].values
        )
    ]
    cols = parse_example_columns(recs, features)
    parsed = tfr.parse_example(recs, features)
    for key in ("sparse", "nested"):
        assert type(cols[key]) is type(parsed[key])
    assert np.array_equal(cols["sparse"].indices, parsed["sparse"].indices)
    assert np.array_equal(cols["nested"].values.row_splits, parsed["nested"].values.row_splits)
    ints = cols["ints"]
    assert isinstance(ints, ExampleColumn)
    sv = parsed["ints"]
    assert np.array_equal(ints.values, sv.values)
    assert np.array_equal(ints.counts, np.bincount(sv.indices[:, 0], minlength=len(recs)))


def wide_records(n: int, keys: int, seed: int = 9) -> list[bytes]:
    """Records of a sparse schema: each holds 3 of ``keys`` keys (ints or bytes)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        values: dict[str, Any] = {}
        for j in rng.sample(range(keys), 3):
            if j % 2:
                values[f"k{j}"] = tfr.bytes_feature([b"v%d" % rng.randrange(99)] * rng.randrange(3))
            else:
                values[f"k{j}"] = tfr.int64_feature(list(range(rng.randrange(3))))
        out.append(tfr.encode_example(values))
    return out


def wide_features(keys: int) -> dict[str, Any]:
    return {
        f"k{j}": tfr.RaggedFeature(tfr.string)
        if j % 4 == 1
        else tfr.VarLenFeature(tfr.string if j % 2 else tfr.int64)
        for j in range(keys)
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_a_wide_batch_equals_the_tf_shaped_conversion(tmp_path: Path, engine: str) -> None:
    # 200 records x 1,500 keys: more cells than bytes, so the engines give the columns by
    # the records that have each key.
    recs, features = wide_records(200, 1500), wide_features(1500)
    path = write(tmp_path / "wide.tfrecord", recs)
    with tfr.options(engine=engine):
        for batch_size in (64, 8192):
            expected = reference(recs, features, batch_size)
            assert tfa.read_table(path, features, batch_size=batch_size).equals(expected)


def test_a_wide_batch_holds_one_feature_per_record_at_a_time() -> None:
    from tfrecord_lite._tables import ReadPlan

    # 2,000 records x 4,000 keys: 8 million (record, key) cells, 72 MB as a presence
    # flag and a count each for every key at once; the table's own offsets (NumPy
    # arrays wrapped, so traced) are 32 MB.
    recs, features = wide_records(2000, 4000), wide_features(4000)
    plan = ReadPlan(features, None)
    table = plan.convert(recs)  # (compiled, warmed up)
    peak = _peak(lambda: plan.convert(recs))
    assert table.num_rows == 2000 and table.num_columns == 4000
    assert peak < table.nbytes + (16 << 20), (peak, table.nbytes)


def _peak(fn: Any) -> int:
    """The most memory (Python objects and NumPy arrays, traced) ``fn`` held at once."""
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def bad_batches() -> Iterator[tuple[str, dict[str, Any], list[bytes]]]:
    good = tfr.encode_example({"a": 1, "v": [1.0, 2.0], "s": [b"x"], "p": [1]})
    yield (
        "required",
        {"a": tfr.FixedLenFeature([], tfr.int64)},
        [good] * 9 + [tfr.encode_example({"b": 1})],
    )
    yield "count", {"v": tfr.FixedLenFeature([3], tfr.float32)}, [good] * 12
    yield "kind", {"v": tfr.VarLenFeature(tfr.int64)}, [good] * 10
    yield "kind_fixed", {"s": tfr.FixedLenFeature([1], tfr.float32)}, [good] * 10
    yield "not_a_record", {"a": tfr.FixedLenFeature([], tfr.int64)}, [good] * 9 + [b"\xff\x01"]
    yield (
        "stride",
        {"v": tfr.FixedLenSequenceFeature([3], tfr.float32, allow_missing=True)},
        [good] * 10,
    )
    yield (
        "partition",
        {
            "r": tfr.RaggedFeature(
                tfr.float32, value_key="v", partitions=[tfr.RaggedFeature.RowLengths("p")]
            )
        },
        [good] * 10,
    )
    yield (
        "not_allow_missing",
        {"v": tfr.FixedLenSequenceFeature([2], tfr.float32)},
        [good] * 10,
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", list(bad_batches()), ids=lambda c: c[0])
def test_errors_are_parse_examples(
    engine: str, case: tuple[str, dict[str, Any], list[bytes]]
) -> None:
    _, features, recs = case
    with tfr.options(engine=engine):
        with pytest.raises(Exception) as want:
            tfr.parse_example(recs, features)
        with pytest.raises(type(want.value)) as got:
            parse_example_columns(recs, features)
    assert str(got.value) == str(want.value)


def test_a_bad_record_is_named_by_file_index_and_offset(tmp_path: Path) -> None:
    good = [tfr.encode_example({"a": i}) for i in range(20)]
    path = write(tmp_path / "bad.tfrecord", [*good, tfr.encode_example({"b": 1}), *good])
    offset = int(tfr.TFRecordFile(str(path)).offsets[20])
    features = {"a": tfr.FixedLenFeature([], tfr.int64)}
    with pytest.raises(tfr.ParseError) as err:
        tfa.read_table(path, features, batch_size=16)
    assert err.value.path == str(path)
    assert err.value.index == 20
    assert err.value.offset == offset
    # A file object: the record's index in it (it was the index in its batch, 4).
    with pytest.raises(tfr.ParseError) as err:
        tfa.read_table(io.BytesIO(path.read_bytes()), features, batch_size=16)
    assert (err.value.path, err.value.index) == (None, 20)
    with open(path, "rb") as f, pytest.raises(tfr.ParseError) as err:
        tfa.read_table(f, features, batch_size=16)
    assert (err.value.path, err.value.index) == (str(path), 20)
