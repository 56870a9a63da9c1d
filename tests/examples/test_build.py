"""Building Examples: make_example / encode_example / columns (reference §D13-14, peers.md)."""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tfrecord_lite import example_pb2, feature_pb2, train
from tfrecord_lite._examples._build import (
    bytes_feature,
    bytes_rows,
    encode_example,
    encode_sequence_example,
    float_feature,
    int64_feature,
    make_example,
    make_sequence_example,
)
from tfrecord_lite._examples._encode_columns import encode_columns

Example = example_pb2.Example
SequenceExample = example_pb2.SequenceExample


def _canon(message: Any) -> bytes:
    """Canonical bytes (sorted map keys): equal iff the messages are equal, NaN included."""
    return bytes(message.SerializeToString(deterministic=True))


def _same(data: bytes, expected: Any) -> None:
    parsed = type(expected).FromString(data)
    assert _canon(parsed) == _canon(expected)


def _values(example: Any, key: str) -> tuple[Any, list[Any]]:
    feature = example.features.feature[key]
    kind = feature.WhichOneof("kind")
    return kind, ([] if kind is None else list(getattr(feature, kind).value))


# --------------------------------------------------------------------------- goldens §D13

GOLDENS = [
    ({"a": [1]}, "0a0c0a0a0a016112051a030a0101"),
    ({"a": 1}, "0a0c0a0a0a016112051a030a0101"),
    ({"a": [-1]}, "0a150a130a0161120e1a0c0a0affffffffffffffffff01"),
    ({"x": [0.1]}, "0a0f0a0d0a0178120812060a04cdcccc3d"),
    ({"x": 0.1}, "0a0f0a0d0a0178120812060a04cdcccc3d"),
    ({"b": [b"hi"]}, "0a0d0a0b0a016212060a040a026869"),
    ({"b": "hi"}, "0a0d0a0b0a016212060a040a026869"),
    ({"e": feature_pb2.Feature()}, "0a070a050a01651200"),
    ({"e": []}, "0a070a050a01651200"),
    ({}, "0a00"),
]


@pytest.mark.parametrize(("mapping", "hexbytes"), GOLDENS)
def test_goldens(mapping: dict[str, Any], hexbytes: str) -> None:
    assert encode_example(mapping).hex() == hexbytes
    assert make_example(mapping).SerializeToString().hex() == hexbytes


def test_golden_built_with_train_namespace() -> None:
    ex = train.Example(
        features=train.Features(feature={"a": train.Feature(int64_list=train.Int64List(value=[1]))})
    )
    assert ex.SerializeToString().hex() == "0a0c0a0a0a016112051a030a0101"
    assert make_example({"a": 1}) == ex


def test_train_namespace_exports() -> None:
    assert set(train.__all__) == {
        "BytesList",
        "Example",
        "Feature",
        "FeatureList",
        "FeatureLists",
        "Features",
        "FloatList",
        "Int64List",
        "SequenceExample",
        # TF1 queue APIs: present, raising GraphOnlyError with the translation
        "Coordinator",
        "batch",
        "shuffle_batch",
        "start_queue_runners",
        "string_input_producer",
    }
    assert train.Feature is feature_pb2.Feature
    assert train.SequenceExample is example_pb2.SequenceExample
    assert train.Example.DESCRIPTOR.full_name == "tfrecord_lite.Example"


def test_keys_in_mapping_order() -> None:
    a = encode_example({"a": 1})[2:]
    b = encode_example({"b": 2})[2:]
    assert encode_example({"a": 1, "b": 2}) == b"\x0a" + bytes([len(a + b)]) + a + b


def test_empty_key_and_unicode_key() -> None:
    for key in ("", "é/ünï", "a" * 200):
        m = {key: [1, 2]}
        assert encode_example(m) == make_example(m).SerializeToString()


# --------------------------------------------------------------------------- int64


def test_negative_and_extreme_int64() -> None:
    values = [-(2**63), -1, 0, 1, 2**63 - 1]
    ex = Example.FromString(encode_example({"v": values}))
    assert _values(ex, "v") == ("int64_list", values)
    _same(encode_example({"v": np.array(values)}), make_example({"v": values}))


@pytest.mark.parametrize(
    "value",
    [2**63, -(2**63) - 1, [1, 2**63], [0] * 20 + [2**64], np.array([2**63], dtype=np.uint64)],
)
def test_int64_out_of_range(value: Any) -> None:
    for build in (encode_example, make_example):
        with pytest.raises(ValueError, match=r"feature 'big'.*out of int64 range"):
            build({"big": value})


def test_uint64_in_range_ok() -> None:
    ex = make_example({"u": np.array([0, 2**63 - 1], dtype=np.uint64)})
    assert _values(ex, "u") == ("int64_list", [0, 2**63 - 1])


def test_bools_are_ints() -> None:
    for value in (True, [True, False], np.array([True, False]), np.bool_(True)):
        kind, vals = _values(make_example({"b": value}), "b")
        assert kind == "int64_list"
        assert vals == ([1] if vals == [1] else [1, 0])


def test_numpy_int_scalars_and_mixed_int_list() -> None:
    m = {"a": np.int32(-5), "b": [np.uint8(3), 4, True, np.int64(-2)]}
    ex = make_example(m)
    assert _values(ex, "a") == ("int64_list", [-5])
    assert _values(ex, "b") == ("int64_list", [3, 4, 1, -2])
    _same(encode_example(m), ex)


def test_uint8_arrays_are_integers() -> None:
    img = np.arange(12, dtype=np.uint8).reshape(3, 4)
    ex = make_example({"img": img})
    assert _values(ex, "img") == ("int64_list", list(range(12)))
    raw = make_example({"img": img.tobytes()})
    assert _values(raw, "img") == ("bytes_list", [img.tobytes()])


def test_arrays_are_flattened_in_c_order() -> None:
    arr = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    ex = make_example({"a": arr.T})  # a non-contiguous view
    assert _values(ex, "a")[1] == arr.T.reshape(-1).tolist()


# --------------------------------------------------------------------------- floats


def test_float_narrowing() -> None:
    ex = Example.FromString(encode_example({"x": 0.1}))
    assert _values(ex, "x")[1] == [0.10000000149011612]
    for dtype in (np.float16, np.float32, np.float64):
        arr = np.array([0.1, 1.5, -2.25], dtype=dtype)
        vals = _values(make_example({"x": arr}), "x")
        assert vals == ("float_list", arr.astype(np.float32).tolist())


def test_float_overflow_becomes_inf_and_nan_kept() -> None:
    for value in (1e39, [1e39, -1e39, float("nan")], np.array([1e300, float("nan")])):
        data = encode_example({"x": value})
        got = _values(Example.FromString(data), "x")[1]
        exp = _values(make_example({"x": value}), "x")[1]
        assert len(got) == len(exp)
        for g, e in zip(got, exp):
            assert (math.isnan(g) and math.isnan(e)) or g == e
        assert math.isinf(got[0])


def test_mixed_int_float_list_is_float() -> None:
    assert _values(make_example({"x": [1, 2.5, True]}), "x") == ("float_list", [1.0, 2.5, 1.0])


def test_float_scalar_subclasses() -> None:
    ex = make_example({"a": np.float64(0.5), "b": np.float32(0.25), "c": np.float16(2)})
    assert [_values(ex, k)[1] for k in "abc"] == [[0.5], [0.25], [2.0]]


# --------------------------------------------------------------------------- bytes


def test_bytes_kept_exactly() -> None:
    """peers.md #10: NUL bytes stay, bytes are never decoded as text."""
    values = [b"abc\x00\x00", b"\x00", b"", b"\xff\xfe\x80", bytes(range(256))]
    for value in (values, tuple(values), np.array(values, dtype=object)):
        ex = Example.FromString(encode_example({"b": value}))
        assert _values(ex, "b") == ("bytes_list", values)
        _same(encode_example({"b": value}), make_example({"b": value}))


def test_bytes_like_and_str() -> None:
    m = {
        "ba": bytearray(b"x\x00"),
        "mv": memoryview(b"yz\x00"),
        "s": "héllo",
        "ss": ["a", "é"],
        "mixed": [b"a", "b", bytearray(b"c"), np.bytes_(b"d")],
        "u": np.array(["x", "yé"]),
    }
    ex = make_example(m)
    assert _values(ex, "ba")[1] == [b"x\x00"]
    assert _values(ex, "mv")[1] == [b"yz\x00"]
    assert _values(ex, "s")[1] == ["héllo".encode()]
    assert _values(ex, "ss")[1] == [b"a", "é".encode()]
    assert _values(ex, "mixed")[1] == [b"a", b"b", b"c", b"d"]
    assert _values(ex, "u")[1] == [b"x", "yé".encode()]
    _same(encode_example(m), ex)


def test_void_arrays_keep_trailing_nuls() -> None:
    arr = np.frombuffer(b"ab\x00\x00cd\x00\x00", dtype="V4")
    ex = make_example({"v": arr})
    assert _values(ex, "v")[1] == [b"ab\x00\x00", b"cd\x00\x00"]
    assert _values(make_example({"v": arr[0]}), "v")[1] == [b"ab\x00\x00"]


def test_fixed_width_s_arrays_follow_numpy() -> None:
    """NumPy's S dtype itself has no trailing NULs: its elements are what we store."""
    arr = np.array([b"a\x00", b"bc"])
    assert _values(make_example({"s": arr}), "s")[1] == [b"a", b"bc"]


# --------------------------------------------------------------------------- no unwrapping, empties


def test_one_element_lists_stay_lists() -> None:
    for one, scalar in (([7], 7), ([0.5], 0.5), ([b"x"], b"x"), (np.array([3]), np.int64(3))):
        a, b = make_example({"k": one}), make_example({"k": scalar})
        assert a == b
        assert len(_values(a, "k")[1]) == 1


def test_empty_values() -> None:
    ex = make_example(
        {
            "list": [],
            "tuple": (),
            "objarr": np.array([], dtype=object),
            "ints": np.array([], dtype=np.int64),
            "floats": np.zeros((0, 3), dtype=np.float32),
            "strs": np.array([], dtype="S1"),
        }
    )
    assert _values(ex, "list") == (None, [])
    assert _values(ex, "tuple") == (None, [])
    assert _values(ex, "objarr") == (None, [])
    assert _values(ex, "ints") == ("int64_list", [])
    assert _values(ex, "floats") == ("float_list", [])
    assert _values(ex, "strs") == ("bytes_list", [])
    assert set(ex.features.feature) == {"list", "tuple", "objarr", "ints", "floats", "strs"}


def test_empty_typed_lists_golden() -> None:
    assert encode_example({"a": np.array([], np.int64)}).hex() == "0a090a070a016112021a00"
    assert encode_example({"a": [b""]}).hex() == "0a0b0a090a016112040a020a00"


# --------------------------------------------------------------------------- pass-through


def test_feature_passthrough() -> None:
    f = feature_pb2.Feature(float_list=feature_pb2.FloatList(value=[1.5, 2.5]))
    ex = make_example({"f": f})
    assert ex.features.feature["f"] == f
    _same(encode_example({"f": f}), ex)


class _ForeignFeature:
    """Stands in for TensorFlow's ``tf.train.Feature`` (package ``tensorflow``)."""

    class DESCRIPTOR:
        full_name = "tensorflow.Feature"

    def SerializeToString(self) -> bytes:
        return feature_pb2.Feature(int64_list=feature_pb2.Int64List(value=[4])).SerializeToString()


def test_tensorflow_feature_accepted() -> None:
    ex = make_example({"f": _ForeignFeature()})
    assert _values(ex, "f") == ("int64_list", [4])
    _same(encode_example({"f": _ForeignFeature()}), ex)


class _ArrayLike:
    """Stands in for a torch tensor / pandas Series: only ``__array__``."""

    def __init__(self, arr: np.ndarray) -> None:
        self._arr = arr

    def __len__(self) -> int:
        return len(self._arr)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._arr if dtype is None else self._arr.astype(dtype)


def test_array_like_values_and_columns() -> None:
    arr = np.array([[1.5, 2.0], [3.0, 4.5]])
    assert make_example({"x": _ArrayLike(arr)}) == make_example({"x": arr})
    assert encode_columns({"x": _ArrayLike(arr)}, 2) == encode_columns({"x": arr}, 2)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (None, r"feature 'bad': None is not a feature value"),
        ([1, None], r"feature 'bad': None"),
        ({"a": 1}, r"feature 'bad': unsupported value type dict"),
        ({1, 2}, r"feature 'bad': unsupported value type set"),
        (1 + 2j, r"feature 'bad': unsupported value type complex"),
        (np.array([1 + 2j]), r"feature 'bad': unsupported NumPy dtype complex128"),
        ([[1, 2], [3]], r"feature 'bad': nested sequences"),
        ([np.array([1])], r"feature 'bad': nested sequences"),
        (["a", 1], r"feature 'bad': a list mixes bytes/str with numbers"),
        ([b"a", 1.5], r"feature 'bad': a list mixes"),
        (np.array([b"a", 1], dtype=object), r"feature 'bad': a list mixes"),
        (np.array([np.zeros(2), np.zeros(3)], dtype=object), r"feature 'bad': nested"),
        (np.array(["2020-01-01"], dtype="datetime64[D]"), r"unsupported NumPy dtype"),
        (np.zeros(2, dtype=[("a", "i4")]), r"unsupported NumPy dtype"),
        (object(), r"unsupported value type object"),
    ],
)
def test_unsupported_values(value: Any, match: str) -> None:
    for build in (encode_example, make_example):
        with pytest.raises(TypeError, match=match):
            build({"bad": value})


def test_non_str_keys_and_non_mappings() -> None:
    for build in (encode_example, make_example):
        with pytest.raises(TypeError, match="feature names must be str"):
            build({1: 2})
        with pytest.raises(TypeError, match="feature names must be str"):
            build({b"a": 2})
        with pytest.raises(TypeError, match="mapping"):
            build([("a", 1)])  # type: ignore[arg-type]


def test_invalid_utf8_str() -> None:
    with pytest.raises(ValueError, match="feature 's'"):
        encode_example({"s": "\ud800"})


# --------------------------------------------------------------------------- explicit kinds


def test_int64_feature() -> None:
    assert int64_feature(3) == feature_pb2.Feature(int64_list=feature_pb2.Int64List(value=[3]))
    assert list(int64_feature([1, True, np.int8(-2)]).int64_list.value) == [1, 1, -2]
    assert list(int64_feature(np.arange(4).reshape(2, 2)).int64_list.value) == [0, 1, 2, 3]
    empty = int64_feature([])
    assert empty.WhichOneof("kind") == "int64_list"
    assert list(empty.int64_list.value) == []
    for bad in (1.5, [1.0], b"x", np.array([1.0])):
        with pytest.raises(TypeError, match="int64_feature: expected integers"):
            int64_feature(bad)
    with pytest.raises(ValueError, match="out of int64 range"):
        int64_feature(2**63)


def test_float_feature() -> None:
    assert list(float_feature(0.1).float_list.value) == [np.float32(0.1).item()]
    assert list(float_feature([1, 2.5]).float_list.value) == [1.0, 2.5]
    assert list(float_feature(7).float_list.value) == [7.0]
    assert list(float_feature(np.arange(3)).float_list.value) == [0.0, 1.0, 2.0]
    assert float_feature([]).WhichOneof("kind") == "float_list"
    for bad in (b"x", ["a"], np.array([b"a"])):
        with pytest.raises(TypeError, match="float_feature: expected numbers"):
            float_feature(bad)


def test_bytes_feature() -> None:
    assert list(bytes_feature(b"a\x00").bytes_list.value) == [b"a\x00"]
    assert list(bytes_feature("é").bytes_list.value) == ["é".encode()]
    assert list(bytes_feature([b"a", "b"]).bytes_list.value) == [b"a", b"b"]
    assert list(bytes_feature(np.array([b"x", b"y"], dtype=object)).bytes_list.value) == [
        b"x",
        b"y",
    ]
    assert bytes_feature([]).WhichOneof("kind") == "bytes_list"
    with pytest.raises(TypeError, match=r"tobytes\(\)"):
        bytes_feature(np.arange(3, dtype=np.uint8))
    with pytest.raises(TypeError, match="bytes_feature: expected bytes"):
        bytes_feature(5)


def test_explicit_features_as_values() -> None:
    m = {"a": int64_feature([1, 2]), "b": float_feature(1), "c": bytes_feature("x")}
    _same(encode_example(m), make_example({"a": [1, 2], "b": 1.0, "c": b"x"}))


# --------------------------------------------------------------------------- property: one truth

_KEYS = st.text(max_size=8)
_INT_LISTS = st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=20)
_FLOATS = st.floats(allow_nan=True, allow_infinity=True)
_BYTES = st.binary(max_size=20)
_SCALARS = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.booleans(),
    _FLOATS,
    _BYTES,
    st.text(max_size=10),
)
_ARRAYS = hnp.arrays(
    dtype=st.sampled_from(
        [np.int8, np.uint8, np.int32, np.int64, np.uint32, bool, np.float16, np.float32, np.float64]
    ),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
)
_VALUES = st.one_of(
    _SCALARS,
    _INT_LISTS,
    st.lists(_FLOATS, max_size=10),
    st.lists(_BYTES, max_size=10),
    st.lists(st.text(max_size=5), max_size=5),
    st.lists(st.one_of(st.integers(-1000, 1000), _FLOATS), max_size=5),
    _ARRAYS,
    st.lists(_BYTES, max_size=5).map(lambda v: np.array(v, dtype=object)),
    st.just([]),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, max_size=6))
def test_encode_example_parses_to_make_example(mapping: dict[str, Any]) -> None:
    data = encode_example(mapping)
    _same(data, make_example(mapping))


@settings(max_examples=200, deadline=None)
@given(_KEYS, _VALUES)
def test_single_key_bytes_identical_to_protobuf(key: str, value: Any) -> None:
    assert encode_example({key: value}) == make_example({key: value}).SerializeToString()


# --------------------------------------------------------------------------- SequenceExample


def test_sequence_example_basic() -> None:
    context = {"id": b"seq-1", "len": 3}
    lists = {
        "tokens": [[1, 2], [3], []],
        "frames": np.arange(6, dtype=np.float32).reshape(3, 2),
        "words": np.array([b"a", b"b\x00", b""], dtype=object),
        "scalars": np.array([4, 5, 6]),
        "none": [],
    }
    seq = make_sequence_example(context, lists)
    _same(encode_sequence_example(context, lists), seq)
    fl = seq.feature_lists.feature_list
    assert [list(f.int64_list.value) for f in fl["tokens"].feature] == [[1, 2], [3], []]
    assert fl["tokens"].feature[2].WhichOneof("kind") is None
    assert [list(f.float_list.value) for f in fl["frames"].feature] == [[0, 1], [2, 3], [4, 5]]
    assert [list(f.bytes_list.value) for f in fl["words"].feature] == [[b"a"], [b"b\x00"], [b""]]
    assert [list(f.int64_list.value) for f in fl["scalars"].feature] == [[4], [5], [6]]
    assert len(fl["none"].feature) == 0
    assert "none" in fl
    assert list(seq.context.feature["len"].int64_list.value) == [3]


def test_sequence_example_empty() -> None:
    assert encode_sequence_example().hex() == "0a001200"
    assert encode_sequence_example({}, {}) == make_sequence_example().SerializeToString()


def test_sequence_example_golden_single_list() -> None:
    seq = SequenceExample()
    seq.context.SetInParent()
    seq.feature_lists.feature_list["a"].feature.add().int64_list.value.append(1)
    assert encode_sequence_example(None, {"a": [[1]]}) == seq.SerializeToString()
    assert encode_sequence_example(None, {"a": [1]}) == seq.SerializeToString()


def test_sequence_example_featurelist_passthrough() -> None:
    flist = feature_pb2.FeatureList(feature=[int64_feature(1), int64_feature([2, 3])])
    seq = make_sequence_example(None, {"x": flist})
    assert seq.feature_lists.feature_list["x"] == flist
    _same(encode_sequence_example(None, {"x": flist}), seq)
    steps = [int64_feature(1), feature_pb2.Feature()]
    _same(encode_sequence_example(None, {"y": steps}), make_sequence_example(None, {"y": steps}))


def test_sequence_example_errors() -> None:
    for build in (encode_sequence_example, make_sequence_example):
        with pytest.raises(TypeError, match=r"feature list 'x': step 1 is a float_list"):
            build(None, {"x": [[1], [0.5]]})
        with pytest.raises(TypeError, match=r"feature list 'x'.*not int"):
            build(None, {"x": 5})
        with pytest.raises(TypeError, match=r"feature list 'x'.*not bytes"):
            build(None, {"x": b"abc"})
        with pytest.raises(TypeError, match=r"feature list 'x', step 0: None"):
            build(None, {"x": [None]})
        with pytest.raises(TypeError, match=r"context feature 'c': None"):
            build({"c": None}, None)
        with pytest.raises(TypeError, match="0-d array"):
            build(None, {"x": np.array(1)})


_STEPS = st.one_of(
    st.lists(_INT_LISTS, max_size=4),
    st.lists(st.lists(_BYTES, max_size=3), max_size=4),
    st.lists(st.lists(st.floats(allow_nan=False), max_size=3), max_size=4),
    hnp.arrays(
        dtype=st.sampled_from([np.int64, np.float32, np.uint8]),
        shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3),
    ),
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, max_size=3), st.dictionaries(_KEYS, _STEPS, max_size=3))
def test_encode_sequence_example_parses_to_make(
    context: dict[str, Any], lists: dict[str, Any]
) -> None:
    _same(encode_sequence_example(context, lists), make_sequence_example(context, lists))


# --------------------------------------------------------------------------- columns


def _check_columns(columns: dict[str, Any], n: int) -> list[bytes]:
    records = encode_columns(columns, n)
    assert len(records) == n
    for i, rec in enumerate(records):
        row = {k: v[i] for k, v in columns.items()}
        assert rec == encode_example(row), i
        _same(rec, make_example(row))
    return records


def test_columns_mnist_like() -> None:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (50, 28, 28), dtype=np.uint8)
    images[0] = 0  # a record ending in NUL bytes
    labels = rng.integers(0, 10, 50)
    records = _check_columns({"image": bytes_rows(images), "label": labels}, 50)
    ex = Example.FromString(records[0])
    assert _values(ex, "image")[1] == [bytes(784)]
    # the same records from a list of bytes
    listed = [img.tobytes() for img in images]
    assert encode_columns({"image": listed, "label": labels}, 50) == records
    assert encode_columns({"image": listed, "label": labels.tolist()}, 50) == records


@pytest.mark.parametrize("high", [10, 200, 2**20, 2**62])
def test_columns_varying_varint_sizes(high: int) -> None:
    """Labels of several varint sizes: one layout group per size pattern (or the join path)."""
    rng = np.random.default_rng(high)
    n = 300
    labels = rng.integers(-high, high, n)
    ids = rng.integers(0, high, (n, 2))
    images = rng.integers(0, 256, (n, 5), dtype=np.uint8)
    _check_columns({"img": bytes_rows(images), "label": labels, "ids": ids}, n)
    _check_columns({"img": [r.tobytes() for r in images], "label": labels}, n)


def test_columns_two_groups_many_records() -> None:
    n = 5000
    labels = np.where(np.arange(n) % 3 == 0, 300, 5)
    records = _check_columns({"x": np.ones((n, 2), np.float32), "label": labels}, n)
    assert len({len(r) for r in records}) == 2


def test_columns_kinds() -> None:
    n = 6
    columns = {
        "f64": np.linspace(0, 1, n),
        "f2d": np.arange(n * 3, dtype=np.float16).reshape(n, 3),
        "i3d": np.arange(n * 4).reshape(n, 2, 2),
        "bools": np.arange(n) % 2 == 0,
        "u64": np.arange(n, dtype=np.uint64),
        "empty": np.zeros((n, 0), dtype=np.int64),
        "ints": list(range(-3, 3)),
        "floats": [0.1 * i for i in range(n)],
        "strs": [f"s{i}" for i in range(n)],
        "S": np.array([b"a\x00", b"b"] * 3),
        "U": np.array(["é", "x"] * 3),
        "obj": np.array([b"x\x00", b""] * 3, dtype=object),
        "V": np.frombuffer(bytes(range(2 * n)), dtype="V2"),
        "varlen": [list(range(i)) for i in range(n)],
        "varbytes": [[b"a"] * i for i in range(n)],
        "obj2d": np.array([[b"a", b"b"]] * n, dtype=object),
        "feat": [int64_feature(i) for i in range(n)],
        "mixed_empty": [[], [1], [], [2, 3], [], [4]],
        "bcast": np.broadcast_to(np.array([28, 28]), (n, 2)),
        "noncontig": np.arange(n * 4, dtype=np.float32).reshape(4, n).T,
    }
    _check_columns(columns, n)


def test_columns_variable_length_bytes() -> None:
    rng = np.random.default_rng(1)
    blobs = [rng.bytes(int(k)) for k in rng.integers(0, 3000, 100)]
    _check_columns({"jpeg": blobs, "label": rng.integers(0, 1000, 100)}, 100)


def test_columns_edge_counts() -> None:
    assert encode_columns({"a": np.zeros(0)}, 0) == []
    assert encode_columns({}, 3) == [b"\x0a\x00"] * 3
    assert encode_columns({"a": [5]}, 1) == [encode_example({"a": 5})]


def test_columns_errors() -> None:
    with pytest.raises(ValueError, match=r"feature 'a': column has 2 values, expected 3"):
        encode_columns({"a": [1, 2]}, 3)
    with pytest.raises(ValueError, match="column has 2 values"):
        encode_columns({"a": np.zeros(2)}, 3)
    with pytest.raises(TypeError, match=r"feature 'a': record 2 is a float_list"):
        encode_columns({"a": [1, 2, 0.5]}, 3)
    with pytest.raises(TypeError, match=r"feature 'a'.*not int"):
        encode_columns({"a": 5}, 1)
    with pytest.raises(TypeError, match=r"feature 'a'.*not bytes"):
        encode_columns({"a": b"abc"}, 3)
    with pytest.raises(ValueError, match="0-d"):
        encode_columns({"a": np.array(1)}, 1)
    with pytest.raises(TypeError, match=r"feature 'a', record 1: None"):
        encode_columns({"a": [b"x", None]}, 2)
    with pytest.raises(ValueError, match="out of int64 range"):
        encode_columns({"a": np.array([2**63], dtype=np.uint64)}, 1)
    with pytest.raises(ValueError, match="out of int64 range"):
        encode_columns({"a": [1, 2**64]}, 2)
    with pytest.raises(TypeError, match="unsupported NumPy dtype"):
        encode_columns({"a": np.zeros(2, dtype=complex)}, 2)
    with pytest.raises(TypeError, match="feature names must be str"):
        encode_columns({1: [1]}, 1)  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=">= 0"):
        encode_columns({}, -1)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=1, max_value=40).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.dictionaries(
                _KEYS,
                st.one_of(
                    hnp.arrays(
                        dtype=st.sampled_from([np.int64, np.uint8, np.float32, np.float64, bool]),
                        shape=st.tuples(st.just(n), st.integers(0, 3)),
                    ),
                    hnp.arrays(dtype=np.int64, shape=st.just((n,))),
                    st.lists(_BYTES, min_size=n, max_size=n),
                    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n, max_size=n),
                    st.lists(_INT_LISTS, min_size=n, max_size=n),
                ),
                max_size=4,
            ),
        )
    )
)
def test_columns_property(case: tuple[int, dict[str, Any]]) -> None:
    n, columns = case
    _check_columns(columns, n)


def test_bytes_rows() -> None:
    arr = np.arange(24, dtype=np.int16).reshape(3, 2, 4)
    rows = bytes_rows(arr)
    assert rows.shape == (3,)
    assert rows.dtype.itemsize == 16
    assert [r.tobytes() for r in rows] == [a.tobytes() for a in arr]
    assert np.shares_memory(rows, arr)
    assert bytes_rows(arr.T).shape == (4,)  # non-contiguous input is copied first
    assert [r.tobytes() for r in bytes_rows(arr.T)] == [a.tobytes() for a in arr.T]
    empty_rows = bytes_rows(np.zeros((2, 0)))
    assert empty_rows.tolist() == [b"", b""]
    assert encode_columns({"e": empty_rows}, 2) == [encode_example({"e": b""})] * 2
    assert bytes_rows(np.zeros((0, 3), np.uint8)).shape == (0,)
    with pytest.raises(ValueError):
        bytes_rows(np.array(1))
    with pytest.raises(TypeError):
        bytes_rows(np.array([b"a"], dtype=object))


def test_float_column_little_endian_bytes() -> None:
    rec = encode_columns({"x": np.array([[1.5]], dtype=">f8")}, 1)[0]
    assert rec.endswith(struct.pack("<f", 1.5))
