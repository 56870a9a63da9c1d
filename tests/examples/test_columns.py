"""write_examples / read_examples: whole files as NumPy columns, and concat_parsed."""

from __future__ import annotations

import importlib.util
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._examples import _column_files as _arrays

# --------------------------------------------------------------------------- helpers


def assert_same(got: Any, want: Any, what: str = "value") -> None:
    """Deep equality of parsed values: arrays (dtype + shape + values), sparse, ragged, lists."""
    if isinstance(want, tfr.SparseValue):
        assert isinstance(got, tfr.SparseValue), f"{what}: {type(got).__name__}"
        for field in ("indices", "values", "dense_shape"):
            assert_same(getattr(got, field), getattr(want, field), f"{what}.{field}")
    elif isinstance(want, tfr.RaggedValue):
        assert isinstance(got, tfr.RaggedValue), f"{what}: {type(got).__name__}"
        assert_same(got.row_splits, want.row_splits, f"{what}.row_splits")
        assert_same(got.values, want.values, f"{what}.values")
    elif isinstance(want, list):
        assert isinstance(got, list), f"{what}: {type(got).__name__}"
        assert len(got) == len(want), what
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{what}[{i}]")
    else:
        want = np.asarray(want)
        assert isinstance(got, np.ndarray), f"{what}: {type(got).__name__}"
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
        assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
        if want.dtype == object:
            assert got.tolist() == want.tolist(), what
        else:
            np.testing.assert_array_equal(got, want, err_msg=what)


def objects(*items: Any) -> np.ndarray:
    """A 1-D object array (the layout of parsed bytes columns)."""
    out = np.empty(len(items), dtype=object)
    out[:] = list(items)
    return out


def write_read(path: Path, columns: dict[str, Any], **kw: Any) -> dict[str, Any]:
    assert tfr.write_examples(path, columns, **kw) == len(next(iter(columns.values())))
    return tfr.read_examples(path)


# --------------------------------------------------------------------------- numeric columns


@pytest.mark.parametrize(
    "dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32]
)
def test_1d_ints_come_back_as_exact_int64(tfr_path: Path, dtype: Any) -> None:
    info = np.iinfo(dtype)
    col = np.array([info.min, 0, 1, info.max], dtype=dtype)
    back = write_read(tfr_path, {"x": col})
    assert set(back) == {"x"}
    assert_same(back["x"], col.astype(np.int64))
    assert tfr.infer_schema(tfr_path) == {"x": tfr.FixedLenFeature([], tfr.int64)}


def test_1d_bool_is_int64_zero_one(tfr_path: Path) -> None:
    back = write_read(tfr_path, {"b": np.array([True, False, True])})
    assert_same(back["b"], np.array([1, 0, 1], dtype=np.int64))


def test_python_list_of_ints_and_floats(tfr_path: Path) -> None:
    back = write_read(tfr_path, {"i": [1, -(2**63), 2**63 - 1], "f": [0.5, -1.0, 2.25]})
    assert_same(back["i"], np.array([1, -(2**63), 2**63 - 1], dtype=np.int64))
    assert_same(back["f"], np.array([0.5, -1.0, 2.25], dtype=np.float32))


def test_float32_is_exact_including_specials(tfr_path: Path) -> None:
    col = np.array(
        [0.1, -0.0, np.inf, -np.inf, np.nan, np.finfo(np.float32).tiny / 4, 3.4e38],
        dtype=np.float32,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = write_read(tfr_path, {"f": col})
    assert back["f"].dtype == np.float32
    # bit-exact, NaN and the sign of zero included
    assert back["f"].view(np.uint32).tolist() == col.view(np.uint32).tolist()


def test_float64_narrowing_warns_with_the_number_of_changed_values(tfr_path: Path) -> None:
    col = np.array([0.1, 0.5, 1e300, np.nan, 0.2, 1.0])  # 0.1, 1e300, 0.2 change
    with pytest.warns(RuntimeWarning, match=r"3 of 6 values changed") as record:
        tfr.write_examples(tfr_path, {"f": col})
    [w] = [w for w in record if issubclass(w.category, RuntimeWarning)]
    assert "'f'" in str(w.message) and "raw=['f']" in str(w.message)
    assert w.filename == __file__  # points at the caller of write_examples
    back = tfr.read_examples(tfr_path)
    with np.errstate(over="ignore"):
        want = col.astype(np.float32)
    assert_same(back["f"], want)


def test_float64_counts_every_element_of_a_2d_column(tfr_path: Path) -> None:
    col = np.array([[0.1, 0.5], [0.25, 0.3]])
    with pytest.warns(RuntimeWarning, match=r"2 of 4 values changed"):
        tfr.write_examples(tfr_path, {"f": col})


def test_float64_exact_values_do_not_warn(tfr_path: Path) -> None:
    col = np.array([[0.5, -2.0], [np.nan, np.inf], [2.0**-140, 3.0]])  # all exact in float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = write_read(tfr_path, {"f": col})
    assert_same(back["f"], col.astype(np.float32))


@pytest.mark.parametrize("dtype", [np.int16, np.int64, np.uint32, np.float32, np.float64, bool])
def test_2d_numeric_is_k_values_per_record(tfr_path: Path, dtype: Any) -> None:
    col = (np.arange(12).reshape(4, 3) % 3 == 0) if dtype is bool else np.arange(12).reshape(4, 3)
    col = col.astype(dtype)
    back = write_read(tfr_path, {"x": col})
    want_dtype = np.float32 if np.dtype(dtype).kind == "f" else np.int64
    assert_same(back["x"], col.astype(want_dtype))
    assert tfr.infer_schema(tfr_path)["x"] == tfr.FixedLenFeature([3], tfr.as_dtype(want_dtype))


def test_2d_with_one_column_keeps_shape(tfr_path: Path) -> None:
    col = np.arange(5, dtype=np.int64).reshape(5, 1)
    back = write_read(tfr_path, {"x": col})
    # one value per record is inferred as a scalar feature: (N,), not (N, 1)
    assert_same(back["x"], np.arange(5, dtype=np.int64))


# --------------------------------------------------------------------------- raw arrays


def test_images_uint8_come_back_with_shape_and_dtype(tfr_path: Path) -> None:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (7, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 7)
    back = write_read(tfr_path, {"image": images, "label": labels})
    assert set(back) == {"image", "label"}
    assert_same(back["image"], images)
    assert back["image"].flags.writeable
    assert_same(back["label"], labels.astype(np.int64))
    # stored as the documented triple: bytes + shape + dtype string
    triple = tfr.read_examples(tfr_path, decode=False)
    assert set(triple) == {"image", "image/shape", "image/dtype", "label"}
    assert triple["image"].dtype == object and triple["image"][3] == images[3].tobytes()
    assert_same(triple["image/shape"], np.tile(np.array([28, 28], dtype=np.int64), (7, 1)))
    assert triple["image/dtype"].tolist() == [b"|u1"] * 7


def test_2d_uint8_and_int8_are_raw(tfr_path: Path) -> None:
    u8 = np.arange(12, dtype=np.uint8).reshape(4, 3)
    i8 = -np.arange(8, dtype=np.int8).reshape(4, 2)
    back = write_read(tfr_path, {"u8": u8, "i8": i8})
    assert_same(back["u8"], u8)
    assert_same(back["i8"], i8)
    raw = tfr.read_examples(tfr_path, decode=False)
    assert raw["u8"].tolist() == [row.tobytes() for row in u8]


@pytest.mark.parametrize(
    "array",
    [
        np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7,
        np.arange(16, dtype=">i4").reshape(2, 2, 2, 2),
        np.array([[[True, False]], [[False, True]]]),
        np.arange(2 * 3 * 2, dtype=np.uint64).reshape(2, 3, 2) + np.uint64(2**63),
        np.zeros((3, 0, 2), dtype=np.int16),
    ],
    ids=["float64-3d", "big-endian-4d", "bool-3d", "uint64-3d", "zero-size-rows"],
)
def test_nd_arrays_round_trip_bit_exact(tfr_path: Path, array: np.ndarray) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # raw arrays are never narrowed
        back = write_read(tfr_path, {"a": array})
    assert_same(back["a"], array)
    assert back["a"].tobytes() == array.tobytes()


def test_non_contiguous_arrays_are_stored_in_c_order(tfr_path: Path) -> None:
    base = np.arange(2 * 4 * 6, dtype=np.uint8).reshape(2, 4, 6)
    view = base[:, ::2, ::-3]  # strided, negative step
    back = write_read(tfr_path, {"v": view, "t": base.transpose(0, 2, 1)})
    assert_same(back["v"], np.ascontiguousarray(view))
    assert_same(back["t"], np.ascontiguousarray(base.transpose(0, 2, 1)))


def test_raw_forces_raw_storage(tfr_path: Path) -> None:
    f64 = np.array([0.1, 0.2, 1e300])  # would be narrowed (and warn) without raw=
    ints = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.int32)
    labels = np.array([7, 8, 9], dtype=np.uint16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tfr.write_examples(tfr_path, {"f": f64, "i": ints, "l": labels}, raw=["f", "i", "l"])
    back = tfr.read_examples(tfr_path)
    assert set(back) == {"f", "i", "l"}
    assert_same(back["f"], f64)  # float64, every bit kept
    assert_same(back["i"], ints)  # int32, (3, 2)
    assert_same(back["l"], labels)  # uint16, 1-D rows of shape ()
    triple = tfr.read_examples(tfr_path, decode=False)
    assert triple["i/dtype"].tolist() == [b"<i4"] * 3
    assert triple["f"][2] == f64[2:3].tobytes()


def test_raw_names_an_unknown_column(tfr_path: Path) -> None:
    with pytest.raises(ValueError, match="nope"):
        tfr.write_examples(tfr_path, {"x": np.arange(3)}, raw=["nope"])


def test_decode_false_keeps_the_triple_and_explicit_features_decode(tfr_path: Path) -> None:
    images = np.arange(3 * 2 * 5, dtype=np.uint16).reshape(3, 2, 5)
    tfr.write_examples(tfr_path, {"img": images})
    triple = tfr.read_examples(tfr_path, decode=False)
    assert sorted(triple) == ["img", "img/dtype", "img/shape"]
    assert_same(triple["img"], objects(*(row.tobytes() for row in images)))
    assert_same(triple["img/shape"], np.array([[2, 5]] * 3, dtype=np.int64))
    assert_same(triple["img/dtype"], objects(b"<u2", b"<u2", b"<u2"))
    features = {
        "img": tfr.FixedLenFeature([], tfr.string),
        "img/shape": tfr.FixedLenFeature([2], tfr.int64),
        "img/dtype": tfr.FixedLenFeature([], tfr.string),
    }
    assert_same(tfr.read_examples(tfr_path, features)["img"], images)
    # TensorFlow's way: decode_raw + reshape
    pixels = tfr.decode_raw(triple["img"], tfr.uint16).reshape(-1, 2, 5)
    assert_same(pixels, images)


def test_mixed_raw_shapes_across_files_give_a_list_of_arrays(tmp_path: Path) -> None:
    a = np.arange(2 * 2 * 2, dtype=np.uint8).reshape(2, 2, 2)
    b = np.arange(3 * 1, dtype=np.uint8).reshape(1, 3, 1) + 100
    c = np.arange(4, dtype=np.int16).reshape(1, 2, 2)
    paths = [tmp_path / f"{name}.tfrecord" for name in "abc"]
    for path, arr in zip(paths, (a, b, c)):
        tfr.write_examples(path, {"x": arr, "y": np.arange(len(arr))})
    back = tfr.read_examples(paths)
    assert_same(back["x"], [a[0], a[1], b[0], c[0]])
    assert_same(back["y"], np.array([0, 1, 0, 0], dtype=np.int64))
    # the same shape but different dtypes also gives a list
    back = tfr.read_examples(paths[::2])
    assert_same(back["x"], [a[0], a[1], c[0]])
    # uniform files read together give one array
    assert_same(tfr.read_examples([paths[0], paths[0]])["x"], np.concatenate([a, a]))


def test_mixed_raw_ranks_across_files_give_a_list_of_arrays(tmp_path: Path) -> None:
    # different numbers of dimensions: "x/shape" has a varying count (a VarLenFeature)
    a = np.arange(8, dtype=np.uint8).reshape(2, 2, 2)
    b = np.arange(8, dtype=np.uint8).reshape(1, 2, 2, 2)
    tfr.write_examples(tmp_path / "a.tfrecord", {"x": a})
    tfr.write_examples(tmp_path / "b.tfrecord", {"x": b})
    back = tfr.read_examples(sorted(tmp_path.glob("*.tfrecord")))
    assert set(back) == {"x"}
    assert_same(back["x"], [a[0], a[1], b[0]])


# --------------------------------------------------------------------------- bytes and strings


def test_bytes_and_str_columns(tfr_path: Path) -> None:
    columns = {
        "b": [b"", b"a\x00", b"\x00\x00", b"\xff" * 300],
        "s": ["", "h\u00e9", "\u6f22\u5b57", "\x00"],
        "u": np.array(["x", "yy", "", "\u00fc"]),
        "o": objects(b"1", "2", b"3\x00", "4"),
    }
    back = write_read(tfr_path, columns)
    assert_same(back["b"], objects(*columns["b"]))
    assert_same(back["s"], objects(*(s.encode() for s in columns["s"])))
    assert_same(back["u"], objects(b"x", b"yy", b"", "\u00fc".encode()))
    assert_same(back["o"], objects(b"1", b"2", b"3\x00", b"4"))
    assert tfr.infer_schema(tfr_path)["s"] == tfr.FixedLenFeature([], tfr.string)


def test_bytes_rows_column_is_one_bytes_value_per_record(tfr_path: Path) -> None:
    arr = np.arange(12, dtype=np.int32).reshape(3, 4)
    back = write_read(tfr_path, {"r": tfr.bytes_rows(arr)})
    assert_same(back["r"], objects(*(row.tobytes() for row in arr)))


# --------------------------------------------------------------------------- ragged / empty


def test_list_of_lists_is_ragged(tfr_path: Path) -> None:
    ints = [[1, 2, 3], [], [4], [5, 6]]
    strs = [["a"], ["b", "c"], [], []]
    floats = [[0.5], [1.5, 2.5], [], [3.0]]
    back = write_read(tfr_path, {"i": ints, "s": strs, "f": floats})
    assert isinstance(back["i"], tfr.SparseValue)
    assert back["i"].to_list() == ints
    assert back["i"].values.dtype == np.int64
    assert_same(back["i"].dense_shape, np.array([4, 3], dtype=np.int64))
    assert_same(back["i"].indices, np.array([[0, 0], [0, 1], [0, 2], [2, 0], [3, 0], [3, 1]]))
    assert back["s"].to_list() == [[b"a"], [b"b", b"c"], [], []]
    assert back["f"].values.dtype == np.float32 and back["f"].to_list() == floats
    schema = tfr.infer_schema(tfr_path)
    assert schema["i"] == tfr.VarLenFeature(tfr.int64)
    assert schema["s"] == tfr.VarLenFeature(tfr.string)
    ragged = tfr.read_examples(tfr_path, {"i": tfr.RaggedFeature(tfr.int64)})["i"]
    assert isinstance(ragged, tfr.RaggedValue) and ragged.to_list() == ints


def test_list_of_equal_length_lists_is_fixed(tfr_path: Path) -> None:
    back = write_read(tfr_path, {"p": [[1, 2], [3, 4], [5, 6]]})
    assert_same(back["p"], np.array([[1, 2], [3, 4], [5, 6]], dtype=np.int64))


def test_empty_lists(tfr_path: Path) -> None:
    tfr.write_examples(tfr_path, {"none": [[], [], []], "some": [[], [1], []], "n": [1, 2, 3]})
    back = tfr.read_examples(tfr_path)
    # a key that only ever holds an empty Feature() has no known dtype: left out
    assert set(back) == {"some", "n"}
    assert back["some"].to_list() == [[], [1], []]
    explicit = tfr.read_examples(tfr_path, {"none": tfr.VarLenFeature(tfr.float32)})
    sv = explicit["none"]
    assert sv.values.dtype == np.float32 and sv.values.size == 0
    assert_same(sv.dense_shape, np.array([3, 0], dtype=np.int64))
    default = tfr.read_examples(tfr_path, {"none": tfr.FixedLenFeature([], tfr.int64, -1)})
    assert_same(default["none"], np.array([-1, -1, -1], dtype=np.int64))  # empty = missing


def test_zero_records(tfr_path: Path) -> None:
    n = tfr.write_examples(tfr_path, {"x": np.zeros(0, np.int64), "img": np.zeros((0, 4, 4))})
    assert n == 0
    assert tfr_path.stat().st_size == 0
    assert tfr.read_examples(tfr_path) == {}  # nothing to infer a schema from
    back = tfr.read_examples(
        tfr_path,
        {"x": tfr.FixedLenFeature([], tfr.int64), "s": tfr.VarLenFeature(tfr.string)},
    )
    assert_same(back["x"], np.zeros(0, dtype=np.int64))
    assert back["s"].values.size == 0 and back["s"].dense_shape.tolist() == [0, 0]


# --------------------------------------------------------------------------- chunking


def _varied_columns(n: int) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    lengths = [(i * 7) % 5 for i in range(n)]
    lengths[n // 2] = 9  # the longest row sits in a middle batch
    return {
        "label": np.arange(n, dtype=np.int64) * 3 - 7,
        "vec": rng.random((n, 3), dtype=np.float32),
        "img": rng.integers(0, 256, (n, 3, 2), dtype=np.uint8),
        "name": [f"row{i}" for i in range(n)],
        "tags": [list(range(k)) for k in lengths],
        "words": [[b"w\x00%d" % j for j in range(k)] for k in lengths],
    }


def test_write_chunking_gives_identical_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 23
    columns = _varied_columns(n)
    whole = tmp_path / "whole.tfrecord"
    chunked = tmp_path / "chunked.tfrecord"
    tfr.write_examples(whole, columns)
    monkeypatch.setattr(_arrays, "WRITE_CHUNK", 4)
    assert tfr.write_examples(chunked, columns) == n
    assert chunked.read_bytes() == whole.read_bytes()
    records = list(tfr.tf_record_iterator(chunked))
    assert len(records) == n
    # record i holds row i
    one = tfr.parse_single_example(records[17], {"label": tfr.FixedLenFeature([], tfr.int64)})
    assert int(one["label"]) == 17 * 3 - 7
    back = tfr.read_examples(chunked)
    assert_same(back["img"], columns["img"])
    assert back["tags"].to_list() == columns["tags"]


def test_write_chunking_with_compression(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_arrays, "WRITE_CHUNK", 3)
    columns = _varied_columns(10)
    tfr.write_examples(tmp_path / "a.tfrecord.gz", columns, compression="GZIP")
    back = tfr.read_examples(tmp_path / "a.tfrecord.gz")
    assert_same(back["label"], columns["label"])
    assert back["words"].to_list() == columns["words"]


SPECS: dict[str, Any] = {
    "label": tfr.FixedLenFeature([], tfr.int64),
    "vec": tfr.FixedLenFeature([3], tfr.float32),
    "img": tfr.FixedLenFeature([], tfr.string),
    "img/shape": tfr.FixedLenFeature([2], tfr.int64),
    "img/dtype": tfr.FixedLenFeature([], tfr.string),
    "name": tfr.FixedLenFeature([], tfr.string),
    "tags": tfr.VarLenFeature(tfr.int64),
    "tags_seq": tfr.FixedLenSequenceFeature([], tfr.int64, allow_missing=True, default_value=-1),
    "words_seq": tfr.FixedLenSequenceFeature(
        [], tfr.string, allow_missing=True, default_value=b"pad\x00"
    ),
    "words_ragged": tfr.RaggedFeature(tfr.string, value_key="words"),
    "tags_nested": tfr.RaggedFeature(
        tfr.int64, value_key="tags", partitions=[tfr.RaggedFeature.UniformRowLength(1)]
    ),
}


def test_read_batches_match_one_parse_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 23
    columns = _varied_columns(n)
    columns["tags_seq"] = columns["tags"]
    columns["words_seq"] = columns["words"]
    path = tmp_path / "data.tfrecord"
    tfr.write_examples(path, columns)
    oracle = tfr.parse_example(list(tfr.tf_record_iterator(path)), SPECS)
    monkeypatch.setattr(_arrays, "READ_BATCH", 4)  # batches of 4, 4, ..., 3
    back = tfr.read_examples(path, SPECS, decode=False)
    assert set(back) == set(SPECS)
    for key in SPECS:
        assert_same(back[key], oracle[key], key)
    # padding across batches uses the spec's default, trailing NUL included
    words_seq = back["words_seq"]
    assert words_seq.shape == (n, 9)
    assert words_seq[0].tolist() == [b"pad\x00"] * 9  # row 0 has no words
    assert words_seq[n - 1, -1] == b"pad\x00"
    assert back["tags_seq"][1].tolist() == [0, 1] + [-1] * 7
    assert back["words_ragged"].to_list() == columns["words"]
    assert back["tags"].to_list() == columns["tags"]
    decoded = tfr.read_examples(path, SPECS)
    assert_same(decoded["img"], columns["img"])
    assert "img/shape" not in decoded


def test_read_batches_with_inferred_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    columns = _varied_columns(11)
    path = tmp_path / "data.tfrecord"
    tfr.write_examples(path, columns)
    whole = tfr.read_examples(path)
    monkeypatch.setattr(_arrays, "READ_BATCH", 2)
    batched = tfr.read_examples(path)
    assert set(batched) == set(whole) == set(columns)
    for key in whole:
        assert_same(batched[key], whole[key], key)
    assert_same(batched["img"], columns["img"])
    assert batched["words"].to_list() == columns["words"]


def test_read_batch_boundary_exactly_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_arrays, "READ_BATCH", 5)
    path = tmp_path / "data.tfrecord"
    tfr.write_examples(path, {"x": np.arange(10)})  # exactly two full batches
    assert_same(tfr.read_examples(path)["x"], np.arange(10, dtype=np.int64))


def test_a_file_of_thousands_of_keys_is_read_in_full_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 100 records with 20 keys of their own, 4,900 with none: 2,001 keys. Such a batch
    # is walked entry by entry, so read_examples no longer cuts it by keys (it read
    # 4,192 records at a time here, 419 for 20,001 keys: 9.6 s instead of 1.2 s).
    path = tmp_path / "wide.tfrecord"
    with tfr.TFRecordWriter(str(path)) as w:
        for i in range(5000):
            own = {f"u{20 * i + j:04d}": [float(j)] for j in range(20)} if i < 100 else {}
            w.write(tfr.encode_example({"id": i} | own))
    features = tfr.infer_schema(str(path))
    assert len(features) == 2001
    sizes: list[int] = []
    real = _arrays.parse_example

    def counting(batch: list[bytes], plan: Any) -> Any:
        sizes.append(len(batch))
        return real(batch, plan)

    monkeypatch.setattr(_arrays, "parse_example", counting)
    out = tfr.read_examples(str(path), features)
    assert sizes == [5000]
    oracle = real(list(tfr.tf_record_iterator(str(path))), features)
    for key in ("id", "u0000", "u0021", "u1999"):
        assert_same(out[key], oracle[key], key)
    assert out["u0021"].indices.tolist() == [[1, 0]]


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="numba not installed")
def test_an_options_block_reaches_the_write_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfrecord_lite import _settings

    seen: list[tuple[str, Any]] = []
    real = _arrays._encode_columns_framed

    def recording(columns: Any, n: int) -> Any:
        seen.append((threading.current_thread().name, _settings.threads()))
        return real(columns, n)

    monkeypatch.setattr(_arrays, "_encode_columns_framed", recording)
    monkeypatch.setattr(_arrays, "WRITE_CHUNK_BYTES", 1024)  # chunks of 256 rows
    monkeypatch.setattr(_arrays.os, "cpu_count", lambda: 2)  # (the pool needs two cores)
    monkeypatch.delenv("TFRECORD_LITE_THREADS", raising=False)
    path = tmp_path / "data.tfrecord"
    with tfr.options(engine="jit", threads=5):
        tfr.write_examples(path, {"x": np.arange(1000)})
    assert len(seen) == 4
    assert all(thread.startswith("tfrecord_lite-write") for thread, _ in seen)
    assert {threads for _, threads in seen} == {5}
    assert_same(tfr.read_examples(path)["x"], np.arange(1000, dtype=np.int64))


def test_concat_parsed_directly() -> None:
    specs = {
        "seq": tfr.FixedLenSequenceFeature([2], tfr.int64, allow_missing=True),
        "s": tfr.FixedLenSequenceFeature([], tfr.string, allow_missing=True, default_value="z\x00"),
        "v": tfr.VarLenFeature(tfr.float32),
        "r": tfr.RaggedFeature(tfr.int64, value_key="seq"),
    }
    rows = [
        {"seq": [1, 2], "s": [b"a"], "v": [0.5]},
        {"seq": [3, 4, 5, 6, 7, 8], "s": [b"b", b"c", b"d"], "v": [1.0, 2.0, 3.0]},
        {"seq": [], "s": [], "v": []},
        {"seq": [9, 10, 11, 12], "s": [b"\x00"], "v": [4.0]},
    ]
    records = [tfr.encode_example(r) for r in rows]
    oracle = tfr.parse_example(records, specs)
    batches = [tfr.parse_example(records[i : i + 1], specs) for i in range(4)]
    joined = tfr.concat_parsed(batches, specs)
    for key in specs:
        assert_same(joined[key], oracle[key], key)
    assert joined["s"][0].tolist() == [b"a", b"z\x00", b"z\x00"]
    assert joined["seq"].shape == (4, 3, 2)
    with pytest.raises(ValueError, match="at least one batch"):
        tfr.concat_parsed([], specs)


# --------------------------------------------------------------------------- files and options


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compression(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "data.tfrecord"
    images = np.arange(4 * 5 * 5, dtype=np.uint8).reshape(4, 5, 5)
    tfr.write_examples(path, {"img": images, "y": [1, 2, 3, 4]}, compression=compression)
    assert tfr.detect_compression(path.read_bytes()[:12]) == compression
    back = tfr.read_examples(path)  # detected
    assert_same(back["img"], images)
    back = tfr.read_examples(path, compression=compression)
    assert_same(back["y"], np.arange(1, 5, dtype=np.int64))
    opts = tfr.TFRecordOptions(compression_type=compression)
    tfr.write_examples(path, {"y": [5]}, compression=opts)
    assert_same(tfr.read_examples(path, compression=opts)["y"], np.array([5], np.int64))


def test_explicit_features_vs_inferred(tfr_path: Path) -> None:
    tfr.write_examples(tfr_path, {"x": [1, 2, 3], "f": np.array([[1, 2], [3, 4], [5, 6]], "f4")})
    inferred = tfr.read_examples(tfr_path)
    assert set(inferred) == {"x", "f"}
    explicit = tfr.read_examples(
        tfr_path,
        {"x": tfr.VarLenFeature(tfr.int64), "missing": tfr.FixedLenFeature([], tfr.string, b"?")},
    )
    assert set(explicit) == {"x", "missing"}  # only the keys asked for
    assert isinstance(explicit["x"], tfr.SparseValue) and explicit["x"].to_list() == [[1], [2], [3]]
    assert_same(explicit["missing"], objects(b"?", b"?", b"?"))
    with pytest.raises(tfr.ParseError):
        tfr.read_examples(tfr_path, {"x": tfr.FixedLenFeature([], tfr.float32)})


def test_sample_limits_inference(tfr_path: Path) -> None:
    tfr.write_examples(tfr_path, {"t": [[1]] * 3 + [[1, 2]]})
    assert_same(tfr.read_examples(tfr_path, sample=None)["t"].dense_shape, np.array([4, 2]))
    # FixedLen [] from the first two, widened to VarLen by the check of the others
    sampled = tfr.read_examples(tfr_path, sample=2)["t"]
    assert isinstance(sampled, tfr.SparseValue) and sampled.to_list() == [[1]] * 3 + [[1, 2]]


def test_reads_several_files_and_globs(tmp_path: Path) -> None:
    for i in range(3):
        tfr.write_examples(tmp_path / f"part-{i}.tfrecord", {"i": [i * 10, i * 10 + 1]})
    back = tfr.read_examples(str(tmp_path / "part-*.tfrecord"))
    assert_same(back["i"], np.array([0, 1, 10, 11, 20, 21], dtype=np.int64))


def test_open_file_objects(tmp_path: Path) -> None:
    path = tmp_path / "f.tfrecord"
    with path.open("wb") as f:
        tfr.write_examples(f, {"x": [1, 2]})
        assert not f.closed  # a file passed in stays open
    with path.open("rb") as f:
        back = tfr.read_examples(f, {"x": tfr.FixedLenFeature([], tfr.int64)})
    assert_same(back["x"], np.array([1, 2], dtype=np.int64))


# --------------------------------------------------------------------------- errors


def test_unequal_column_lengths_name_the_columns(tfr_path: Path) -> None:
    with pytest.raises(ValueError, match="same number of records") as err:
        tfr.write_examples(tfr_path, {"image": np.zeros((3, 2, 2)), "label": [1, 2]})
    assert "'image': 3" in str(err.value) and "'label': 2" in str(err.value)


@pytest.mark.parametrize("suffix", ["/shape", "/dtype"])
def test_name_clash_with_raw_triple(tfr_path: Path, suffix: str) -> None:
    columns = {"img": np.zeros((2, 2, 2), np.uint8), "img" + suffix: [1, 2]}
    with pytest.raises(ValueError, match=f"'img{suffix}'"):
        tfr.write_examples(tfr_path, columns)
    # no clash when the column is not raw
    tfr.write_examples(tfr_path, {"img": [1, 2], "img" + suffix: [3, 4]})
    assert set(tfr.read_examples(tfr_path)) == {"img", "img" + suffix}


@pytest.mark.parametrize("columns", [{}, [("x", [1])], None])
def test_columns_must_be_a_non_empty_mapping(tfr_path: Path, columns: Any) -> None:
    with pytest.raises(ValueError, match="non-empty dict"):
        tfr.write_examples(tfr_path, columns)


def test_column_without_length(tfr_path: Path) -> None:
    with pytest.raises(TypeError, match="'x'"):
        tfr.write_examples(tfr_path, {"x": 5})


def test_sequence_example_file_reads_as_parse_sequence_example(tfr_path: Path) -> None:
    with tfr.TFRecordWriter(tfr_path) as w:
        for i in range(3):
            w.write(tfr.encode_sequence_example({"id": i}, {"frames": [[1.0, 2.0]] * (i + 1)}))
    out = tfr.read_examples(tfr_path)
    assert out["id"].tolist() == [0, 1, 2]
    assert out["frames/length"].tolist() == [1, 2, 3]
    assert out["frames"].shape == (3, 3, 2)
