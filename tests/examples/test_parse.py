"""Schema parsing: parse_example family against TensorFlow's semantics (reference §D15, §E16-22).

Every expected value below is TensorFlow 2.21's own output for the same input (the
[T] goldens of the reference, plus cases checked against real TensorFlow while
writing them; ``tests/interop/test_parse_interop.py`` re-checks the same behaviour
live). Records are built with the generated protos or by hand at the wire level,
never with the library's own encoder. The hypothesis tests at the bottom check
random batches against a small dict-of-lists reference model written here.
"""

from __future__ import annotations

import contextlib
import math
import os
import struct
from collections.abc import Iterator
from typing import Any, Optional

import numpy as np
import pytest
from _helpers import ld, varint
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_lite as tfr
from tfrecord_lite import example_pb2, feature_pb2

R = tfr.RaggedFeature

# --------------------------------------------------------------------------- builders

# A value is None (an empty Feature()) or (kind, values) with kind "i" / "f" / "b".
Value = Optional[tuple[str, list[Any]]]


def feature(value: Value) -> feature_pb2.Feature:
    f = feature_pb2.Feature()
    if value is not None:
        kind, vals = value
        field = {"i": f.int64_list, "f": f.float_list, "b": f.bytes_list}[kind]
        field.SetInParent()
        field.value.extend(vals)
    return f


def I(*v: int) -> Value:  # noqa: E743
    return ("i", list(v))


def F(*v: float) -> Value:
    return ("f", list(v))


def B(*v: bytes) -> Value:
    return ("b", list(v))


def ex(**features: Value) -> bytes:
    e = example_pb2.Example()
    for k, v in features.items():
        e.features.feature[k].CopyFrom(feature(v))
    return e.SerializeToString()


def seq_ex(
    context: Optional[dict[str, Value]] = None, lists: Optional[dict[str, list[Value]]] = None
) -> bytes:
    s = example_pb2.SequenceExample()
    for k, v in (context or {}).items():
        s.context.feature[k].CopyFrom(feature(v))
    for k, steps in (lists or {}).items():
        fl = s.feature_lists.feature_list[k]
        fl.SetInParent()
        for step in steps:
            fl.feature.add().CopyFrom(feature(step))
    return s.SerializeToString()


def wire_list(kind: str, chunks: list[tuple[str, list[Any]]]) -> bytes:
    """A Feature holding one list written as ``chunks``: ("packed" | "unpacked", values)."""
    body = b""
    for how, vals in chunks:
        if kind == "b":
            body += b"".join(ld(1, v) for v in vals)
        elif kind == "f":
            if how == "packed":
                body += ld(1, struct.pack(f"<{len(vals)}f", *vals))
            else:
                body += b"".join(b"\x0d" + struct.pack("<f", v) for v in vals)
        elif how == "packed":
            body += ld(1, b"".join(varint(v) for v in vals))
        else:
            body += b"".join(b"\x08" + varint(v) for v in vals)
    return ld({"b": 1, "f": 2, "i": 3}[kind], body)


def wire_example(entries: list[tuple[str, bytes]], extra: bytes = b"") -> bytes:
    """An Example from (key, serialized Feature) map entries, in order, duplicates kept."""
    return ld(1, b"".join(ld(1, ld(1, k.encode()) + ld(2, f)) for k, f in entries)) + extra


def arr(x: Any) -> np.ndarray:
    assert isinstance(x, np.ndarray), type(x)
    return x


def sparse(x: Any) -> tfr.SparseValue:
    assert isinstance(x, tfr.SparseValue), type(x)
    return x


def ragged(x: Any) -> tfr.RaggedValue:
    assert isinstance(x, tfr.RaggedValue), type(x)
    return x


def check_sparse(sv: Any, indices: list[Any], values: list[Any], shape: list[int]) -> None:
    sv = sparse(sv)
    assert sv.indices.dtype == np.int64 and sv.dense_shape.dtype == np.int64
    assert sv.indices.shape == (len(values), len(shape))
    assert sv.indices.tolist() == indices
    assert sv.values.tolist() == values
    assert sv.dense_shape.tolist() == shape


def check_ragged(
    rv: Any, rows: list[Any], splits: list[list[int]], splits_dtype: Any = np.int32
) -> None:
    rv = ragged(rv)
    assert rv.to_list() == rows
    assert [s.tolist() for s in rv.nested_row_splits] == splits
    assert all(s.dtype == splits_dtype for s in rv.nested_row_splits)


# --------------------------------------------------------------------------- §D15 records


def test_empty_record_is_an_empty_example() -> None:
    out = tfr.parse_single_example(b"", {"a": tfr.FixedLenFeature([], tfr.int64, default_value=3)})
    assert arr(out["a"]).shape == () and int(out["a"]) == 3


def test_concatenated_examples_merge_last_value_wins() -> None:
    data = ex(a=I(1), b=I(2)) + ex(a=I(5))
    out = tfr.parse_single_example(
        data, {"a": tfr.FixedLenFeature([], tfr.int64), "b": tfr.FixedLenFeature([], tfr.int64)}
    )
    assert int(out["a"]) == 5 and int(out["b"]) == 2
    # the later value may even change the list's kind (TensorFlow: same)
    out = tfr.parse_single_example(
        ex(a=I(1)) + ex(a=F(2.0)), {"a": tfr.FixedLenFeature([], tfr.float32)}
    )
    assert float(out["a"]) == 2.0


def test_duplicate_keys_in_one_example_last_wins() -> None:
    data = wire_example(
        [("a", wire_list("i", [("packed", [1, 2])])), ("a", wire_list("i", [("packed", [7])]))]
    )
    assert tfr.parse_single_example(data, {"a": tfr.VarLenFeature(tfr.int64)})[
        "a"
    ].values.tolist() == [7]


def test_unknown_fields_are_skipped() -> None:
    unknown = varint(5 << 3 | 0) + varint(99) + ld(7, b"xyz")
    feat = wire_list("i", [("packed", [4, 5])]) + varint(9 << 3 | 5) + b"\x00\x00\x80\x3f"
    data = wire_example([("a", feat)], extra=unknown)
    out = tfr.parse_example([data], {"a": tfr.FixedLenFeature([2], tfr.int64)})
    assert arr(out["a"]).tolist() == [[4, 5]]


@pytest.mark.parametrize("junk", [b"\xff\xff\xff", b"\x0a\x05abc", b"\x0a", b"\x08"])
def test_not_an_example_is_a_parse_error(junk: bytes) -> None:
    spec = {"a": tfr.FixedLenFeature([], tfr.int64, default_value=0)}
    with pytest.raises(tfr.ParseError, match="Could not parse example input") as info:
        tfr.parse_single_example(junk, spec)
    assert isinstance(info.value, ValueError)
    with pytest.raises(tfr.ParseError, match="Could not parse example input") as info:
        tfr.parse_example([ex(a=I(1)), junk], spec)
    assert info.value.index == 1 and "(record 1)" in str(info.value)


def test_not_a_sequence_example_is_a_parse_error() -> None:
    with pytest.raises(
        tfr.ParseError, match="Invalid protocol message input, example id: q"
    ) as info:
        tfr.parse_sequence_example(
            [b"", b"\x0a\x05abc"],
            {"a": tfr.FixedLenFeature([], tfr.int64, default_value=0)},
            example_names=["p", "q"],
        )
    assert info.value.index == 1


@pytest.mark.parametrize(
    "kind,values", [("i", [1, -1, 2**63 - 1, -(2**63), 0]), ("f", [0.5, -2.0, 1e30])]
)
def test_packed_unpacked_and_mixed_encodings(kind: str, values: list[Any]) -> None:
    spec = {"a": tfr.VarLenFeature(tfr.int64 if kind == "i" else tfr.float32)}
    expected = np.array(values, dtype=np.int64 if kind == "i" else np.float32).tolist()
    encodings = [
        [("packed", values)],
        [("unpacked", values)],
        [("packed", values[:2]), ("unpacked", values[2:])],  # mixed: TensorFlow rejects; we accept
        [("packed", values[:1]), ("packed", values[1:])],  # several packed chunks: all kept
    ]
    for chunks in encodings:
        data = wire_example([("a", wire_list(kind, chunks))])
        assert tfr.parse_single_example(data, spec)["a"].values.tolist() == expected
        batch = tfr.parse_example([data] * 9, spec)  # big enough for the vectorized path
        assert sparse(batch["a"]).values.tolist() == expected * 9


def test_float_values_are_float32() -> None:
    out = tfr.parse_single_example(ex(x=F(0.1)), {"x": tfr.FixedLenFeature([], tfr.float32)})
    assert arr(out["x"]).dtype == np.float32 and float(out["x"]) == 0.10000000149011612


# --------------------------------------------------------------------------- §E16 dtypes


class _TFLike:
    def __init__(self, name: str) -> None:
        self.name = name


@pytest.mark.parametrize(
    "name,expected",
    [
        (tfr.int64, tfr.int64),
        (np.int64, tfr.int64),
        ("int64", tfr.int64),
        (int, tfr.int64),
        (np.dtype("int64"), tfr.int64),
        (_TFLike("int64"), tfr.int64),
        ("tf.int64", tfr.int64),
        (float, tfr.float32),
        (np.float32, tfr.float32),
        ("float32", tfr.float32),
        ("float", tfr.float32),
        (_TFLike("float32"), tfr.float32),
        (bytes, tfr.string),
        (str, tfr.string),
        ("string", tfr.string),
        ("bytes", tfr.string),
        (np.bytes_, tfr.string),
        (np.dtype("S5"), tfr.string),
        (np.dtype(object), tfr.string),
        (_TFLike("string"), tfr.string),
    ],
)
def test_dtype_names(name: Any, expected: tfr.DType) -> None:
    assert tfr.as_dtype(name) is expected
    spec = tfr.FixedLenFeature([], name, default_value=b"x" if expected is tfr.string else 1)
    out = tfr.parse_single_example(b"", {"a": spec})
    assert arr(out["a"]).dtype == expected.np_dtype


@pytest.mark.parametrize(
    "bad", [np.float64, "float64", np.dtype("float64"), _TFLike("float64"), "double"]
)
def test_float64_rejected_with_a_hint(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"use tfr\.float32"):
        tfr.as_dtype(bad)
    with pytest.raises(ValueError, match="unsupported dtype"):
        tfr.parse_example([b""], {"a": tfr.VarLenFeature(bad)})


@pytest.mark.parametrize("bad", [np.int32, "int32", np.uint8, _TFLike("int32"), bool, None])
def test_other_dtypes_rejected(bad: Any) -> None:
    with pytest.raises(ValueError, match="unsupported dtype"):
        tfr.as_dtype(bad)


# --------------------------------------------------------------------------- §E17 FixedLenFeature


def test_fixed_len_output_types() -> None:
    specs = {
        "i": tfr.FixedLenFeature([], tfr.int64),
        "f": tfr.FixedLenFeature([2], tfr.float32),
        "b": tfr.FixedLenFeature([], tfr.string),
        "bb": tfr.FixedLenFeature([2, 1], tfr.string),
    }
    data = ex(i=I(3), f=F(1.5, 2.5), b=B(b"ab\x00\x00"), bb=B(b"\x00", b"x\x00"))
    one = tfr.parse_single_example(data, specs)
    assert arr(one["i"]).shape == () and one["i"].dtype == np.int64 and int(one["i"]) == 3
    assert arr(one["f"]).dtype == np.float32 and one["f"].tolist() == [1.5, 2.5]
    b = arr(one["b"])
    assert b.shape == () and b.dtype == object and b.item() == b"ab\x00\x00"  # NULs kept
    assert isinstance(b.item(), bytes)
    assert arr(one["bb"]).shape == (2, 1) and one["bb"].tolist() == [[b"\x00"], [b"x\x00"]]
    batch = tfr.parse_example([data, data], specs)
    assert arr(batch["i"]).shape == (2,) and batch["b"].dtype == object
    assert batch["b"].tolist() == [b"ab\x00\x00"] * 2
    assert arr(batch["bb"]).shape == (2, 2, 1)


def test_fixed_len_defaults_and_missing() -> None:
    spec = {"a": tfr.FixedLenFeature([2, 2], tfr.float32, default_value=[1, 2, 3, 4])}
    # missing key and empty Feature() both take the default (reshaped)
    out = tfr.parse_example([ex(), ex(a=None), ex(a=F(5, 6, 7, 8))], spec)
    assert arr(out["a"]).tolist() == [[[1, 2], [3, 4]], [[1, 2], [3, 4]], [[5, 6], [7, 8]]]
    assert out["a"].dtype == np.float32
    out = tfr.parse_example(
        [ex()], {"s": tfr.FixedLenFeature([2], tfr.string, default_value=["ab", b"c\x00"])}
    )
    assert arr(out["s"]).tolist() == [[b"ab", b"c\x00"]]


def test_default_value_reshaped_not_broadcast() -> None:
    ok = tfr.parse_example([ex()], {"a": tfr.FixedLenFeature([], tfr.int64, default_value=[5])})
    assert arr(ok["a"]).tolist() == [5]
    ok = tfr.parse_single_example(ex(), {"a": tfr.FixedLenFeature([1], tfr.int64, default_value=5)})
    assert arr(ok["a"]).tolist() == [5]
    for default in (1.0, [1, 2]):
        with pytest.raises(ValueError, match="reshaped, not broadcast"):
            tfr.parse_example(
                [ex()], {"a": tfr.FixedLenFeature([2, 2], tfr.float32, default_value=default)}
            )


def test_kind_with_zero_values_is_not_missing() -> None:
    spec = {"a": tfr.FixedLenFeature([1], tfr.float32, default_value=[7])}
    with pytest.raises(
        tfr.ParseError,
        match=r"Key: a, Index: 0\.  Number of float values != expected\.  "
        r"Values size: 0 but output shape: \[1\]",
    ):
        tfr.parse_example([ex(a=F())], spec)
    out = tfr.parse_example([ex(a=F())], {"a": tfr.FixedLenFeature([0], tfr.float32)})
    assert arr(out["a"]).shape == (1, 0) and out["a"].dtype == np.float32


def test_zero_size_fixed_len_is_always_required() -> None:
    """TensorFlow treats a default without elements as no default at all."""
    spec = {"a": tfr.FixedLenFeature([0, 3], tfr.int64, default_value=[])}
    with pytest.raises(tfr.ParseError, match=r"Feature: a .* is required"):
        tfr.parse_example([ex(a=I()), ex()], spec)
    with pytest.raises(tfr.ParseError, match="is required"):
        tfr.parse_example([ex(a=None)], spec)
    assert arr(tfr.parse_example([ex(a=I())] * 2, spec)["a"]).shape == (2, 0, 3)


def test_required_feature_messages() -> None:
    spec = {"c": tfr.FixedLenFeature([], tfr.float32)}
    with pytest.raises(tfr.ParseError) as info:
        tfr.parse_single_example(ex(), spec)
    # TensorFlow's wording, then what to do (tests/examples/test_error_hints.py)
    assert info.value.message.startswith(
        "Feature: c (data type: float) is required but could not be found. "
    )
    assert info.value.key == "c" and info.value.index == 0
    with pytest.raises(tfr.ParseError) as info:
        tfr.parse_example([ex(c=F(1)), ex()], spec)
    assert info.value.message.startswith(
        "Name: <unknown>, Feature: c (data type: float) is required but could not be found. "
    )
    assert info.value.index == 1 and str(info.value).endswith("(record 1)")
    with pytest.raises(tfr.ParseError, match=r"^Name: y, Feature: c"):
        tfr.parse_example([ex(c=F(1)), ex(c=None)], spec, example_names=["x", "y"])
    with pytest.raises(tfr.ParseError, match=r"Feature: s \(data type: string\) is required"):
        tfr.parse_single_example(ex(s=None), {"s": tfr.FixedLenFeature([], tfr.string)})


def test_count_mismatch_messages() -> None:
    spec = {"a": tfr.FixedLenFeature([1, 3], tfr.float32)}
    with pytest.raises(tfr.ParseError) as info:
        tfr.parse_example([ex(a=F(1, 2, 3)), ex(a=F(1, 2))], spec)
    assert info.value.message.startswith(
        "Name: <unknown>, Key: a, Index: 1.  Number of float values != expected.  "
        "Values size: 2 but output shape: [1,3]. "
    )
    with pytest.raises(
        tfr.ParseError,
        match=r"^Key: a\.  Number of bytes values != expected\.  "
        r"Values size: 2 but output shape: \[3\]",
    ):
        tfr.parse_single_example(ex(a=B(b"x", b"y")), {"a": tfr.FixedLenFeature([3], tfr.string)})
    with pytest.raises(tfr.ParseError, match="Number of int64 values"):
        tfr.parse_single_example(ex(a=I(1, 2)), {"a": tfr.FixedLenFeature([], tfr.int64)})


def test_data_type_mismatch_messages() -> None:
    # dense features: TensorFlow's "Data type: X but expected type: Y"
    with pytest.raises(tfr.ParseError) as info:
        tfr.parse_single_example(ex(a=I(1)), {"a": tfr.FixedLenFeature([], tfr.float32)})
    assert (
        info.value.message
        == "Key: a.  Data types don't match. Data type: int64 but expected type: float"
    )
    with pytest.raises(tfr.ParseError) as info:
        tfr.parse_example([ex(a=F(1)), ex(a=B(b"x"))], {"a": tfr.FixedLenFeature([], tfr.float32)})
    assert info.value.message == (
        "Name: <unknown>, Key: a, Index: 1.  Data types don't match. Data type: string "
        "but expected type: float"
    )
    assert info.value.key == "a" and info.value.index == 1
    # VarLen / Sparse / Ragged: "Expected type: Y, Actual type: X"
    with pytest.raises(tfr.ParseError) as info:
        tfr.parse_example(
            [ex(a=F(1)), ex(a=I(1))],
            {"a": tfr.VarLenFeature(tfr.float32)},
            example_names=["x", "y"],
        )
    assert info.value.message == (
        "Name: y, Key: a, Index: 1.  Data types don't match. Expected type: float, Actual type: int64"
    )
    with pytest.raises(
        tfr.ParseError,
        match=r"^Key: s\.  Data types don't match. Expected type: int64, "
        r"Actual type: float \(record 0\)$",
    ):
        tfr.parse_single_example(ex(v=I(1), s=F(1)), {"r": R(tfr.int64, "v", [R.RowLengths("s")])})
    with pytest.raises(
        tfr.ParseError, match=r"Key: i\.  .*Expected type: int64, Actual type: float"
    ):
        tfr.parse_single_example(
            ex(i=F(1), v=I(1)), {"a": tfr.SparseFeature("i", "v", tfr.int64, 4)}
        )


def test_shape_errors() -> None:
    with pytest.raises(ValueError, match=r"^Missing shape for feature a"):
        tfr.parse_example([ex()], {"a": tfr.FixedLenFeature(None, tfr.float32)})
    with pytest.raises(
        ValueError,
        match=r"^First dimension of shape for feature a unknown\. "
        "Consider using FixedLenSequenceFeature\\.",
    ):
        tfr.parse_example([ex()], {"a": tfr.FixedLenFeature([None, 2], tfr.float32)})
    with pytest.raises(
        ValueError, match=r"^All dimensions of shape for feature a need to be known"
    ):
        tfr.parse_example([ex()], {"a": tfr.FixedLenFeature([2, None], tfr.float32)})


def test_feature_without_kind_counts_as_missing() -> None:
    out = tfr.parse_example(
        [ex(a=None, v=None, r=None)],
        {
            "a": tfr.FixedLenFeature([], tfr.int64, default_value=4),
            "v": tfr.VarLenFeature(tfr.string),
            "r": tfr.RaggedFeature(tfr.float32),
            "q": tfr.FixedLenSequenceFeature([], tfr.int64, allow_missing=True),
        },
    )
    assert arr(out["a"]).tolist() == [4]
    check_sparse(out["v"], [], [], [1, 0])
    check_ragged(out["r"], [[]], [[0, 0]])
    assert arr(out["q"]).shape == (1, 0)


# --------------------------------------------------------------------------- §E18 VarLenFeature


def test_var_len_golden() -> None:
    records = [ex(st_c=I(3, 4)), ex(st_c=I()), ex(st_d=None), ex(st_c=I(1, 2, -1), st_d=B(b"hi"))]
    out = tfr.parse_example(
        records, {"st_c": tfr.VarLenFeature(tfr.int64), "st_d": tfr.VarLenFeature(tfr.string)}
    )
    check_sparse(out["st_c"], [[0, 0], [0, 1], [3, 0], [3, 1], [3, 2]], [3, 4, 1, 2, -1], [4, 3])
    check_sparse(out["st_d"], [[3, 0]], [b"hi"], [4, 1])
    assert sparse(out["st_d"]).values.dtype == object


def test_var_len_single() -> None:
    out = tfr.parse_single_example(
        ex(a=I(1, 2)), {"a": tfr.VarLenFeature(tfr.int64), "b": tfr.VarLenFeature(tfr.string)}
    )
    check_sparse(out["a"], [[0], [1]], [1, 2], [2])
    check_sparse(out["b"], [], [], [0])
    assert sparse(out["b"]).indices.shape == (0, 1) and sparse(out["b"]).values.dtype == object


# --------------------------------------------------------------------------- §E19 FixedLenSequenceFeature


def test_fixed_len_sequence_padding() -> None:
    spec = {"a": tfr.FixedLenSequenceFeature([2], tfr.int64, allow_missing=True, default_value=-1)}
    records = [ex(a=I(1, 2, 3, 4)), ex(), ex(a=I()), ex(a=None), ex(a=I(5, 6))]
    out = arr(tfr.parse_example(records, spec)["a"])
    assert out.dtype == np.int64 and out.shape == (5, 2, 2)
    assert out.tolist() == [
        [[1, 2], [3, 4]],
        [[-1, -1], [-1, -1]],
        [[-1, -1], [-1, -1]],
        [[-1, -1], [-1, -1]],
        [[5, 6], [-1, -1]],
    ]
    assert arr(tfr.parse_single_example(records[0], spec)["a"]).tolist() == [[1, 2], [3, 4]]
    assert arr(tfr.parse_single_example(records[1], spec)["a"]).shape == (0, 2)
    pad = tfr.parse_example(
        [ex(a=F(1, 2)), ex(a=F(3))],
        {"a": tfr.FixedLenSequenceFeature([], tfr.float32, allow_missing=True)},
    )
    assert arr(pad["a"]).tolist() == [[1.0, 2.0], [3.0, 0.0]] and pad["a"].dtype == np.float32


def test_fixed_len_sequence_bytes_padding_keeps_nuls() -> None:
    spec = tfr.FixedLenSequenceFeature(
        [], tfr.string, allow_missing=True, default_value=b"ab\x00\x00"
    )
    out = arr(tfr.parse_example([ex(k=B(b"x", b"y")), ex()], {"k": spec})["k"])
    assert out.tolist() == [[b"x", b"y"], [b"ab\x00\x00", b"ab\x00\x00"]]
    default = tfr.FixedLenSequenceFeature([], tfr.string, allow_missing=True)
    assert arr(tfr.parse_example([ex(k=B(b"x")), ex()], {"k": default})["k"]).tolist() == [
        [b"x"],
        [b""],
    ]


def test_fixed_len_sequence_stride_error() -> None:
    spec = {"a": tfr.FixedLenSequenceFeature([2, 1, 1], tfr.string, allow_missing=True)}
    with pytest.raises(tfr.ParseError) as info:
        tfr.parse_example([ex(a=B(b"x"))], spec)
    assert info.value.message == (
        "Name: <unknown>, Key: a, Index: 0.  Number of bytes values is not a multiple of stride "
        "length. Saw 1 values but output shape is: [?,2,1,1]"
    )
    with pytest.raises(
        tfr.ParseError, match=r"^Key: a\.  Number of bytes values is not a multiple"
    ):
        tfr.parse_single_example(ex(a=B(b"x")), spec)


def test_fixed_len_sequence_requires_allow_missing() -> None:
    msg = "Unsupported: FixedLenSequenceFeature requires allow_missing to be True."
    for call in (
        lambda: tfr.parse_example([ex()], {"a": tfr.FixedLenSequenceFeature([2], tfr.float32)}),
        lambda: tfr.parse_single_example(
            ex(), {"a": tfr.FixedLenSequenceFeature([2], tfr.float32)}
        ),
        lambda: tfr.parse_example([], {"a": tfr.FixedLenSequenceFeature([], tfr.int64)}),
    ):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == msg


def test_fixed_len_sequence_zero_stride() -> None:
    """TensorFlow crashes (division by zero) on a 0-size row shape: refused at creation."""
    for shape in ([0], [2, 0], 0):
        with pytest.raises(ValueError, match="dimension of size 0"):
            tfr.FixedLenSequenceFeature(shape, tfr.int64, allow_missing=True)
    # TensorFlow's TensorShape text for a negative dimension, for both dense specs
    with pytest.raises(ValueError, match=r"^Dimension -1 must be >= 0$"):
        tfr.FixedLenSequenceFeature([-1], tfr.int64, allow_missing=True)
    with pytest.raises(ValueError, match=r"^Dimension -2 must be >= 0$"):
        tfr.FixedLenFeature([3, -2], tfr.int64)
    # unknown dimensions are still reported at parse time, with the key
    spec = {"a": tfr.FixedLenSequenceFeature([None], tfr.int64, allow_missing=True)}
    with pytest.raises(ValueError, match="feature a"):
        tfr.parse_example([ex(a=I(1))], spec)
    assert tfr.FixedLenFeature([0], tfr.int64) == ([0], tfr.int64, None)


# --------------------------------------------------------------------------- §E20 SparseFeature


def test_sparse_feature_golden() -> None:
    records = [ex(), ex(), ex(), ex(idx=I(0, 9, 3), val=I(1, 2, -1))]
    out = tfr.parse_example(records, {"sp": tfr.SparseFeature("idx", "val", tfr.int64, 13)})
    check_sparse(out["sp"], [[3, 0], [3, 3], [3, 9]], [1, -1, 2], [4, 13])
    one = tfr.parse_single_example(
        records[3], {"sp": tfr.SparseFeature("idx", "val", tfr.int64, 13)}
    )
    check_sparse(one["sp"], [[0], [3], [9]], [1, -1, 2], [13])


def test_sparse_feature_multi_dim_sort_and_duplicates() -> None:
    rec = ex(i0=I(1, 0, 1, 0), i1=I(2, 3, 0, 3), val=F(1, 2, 3, 4))
    out = tfr.parse_example(
        [rec], {"sp": tfr.SparseFeature(["i0", "i1"], "val", tfr.float32, [2, 4])}
    )
    check_sparse(
        out["sp"], [[0, 0, 3], [0, 0, 3], [0, 1, 0], [0, 1, 2]], [2.0, 4.0, 3.0, 1.0], [1, 2, 4]
    )
    unsorted = tfr.SparseFeature("idx", "val", tfr.int64, 13, already_sorted=True)
    check_sparse(
        tfr.parse_example([ex(idx=I(3, 1), val=I(1, 2))], {"sp": unsorted})["sp"],
        [[0, 3], [0, 1]],
        [1, 2],
        [1, 13],
    )


def test_sparse_feature_empty_and_missing() -> None:
    spec = {"sp": tfr.SparseFeature("i", "v", tfr.string, 4)}
    out = tfr.parse_example([ex(), ex(i=None, v=None), ex(i=I(1), v=B(b"a\x00"))], spec)
    check_sparse(out["sp"], [[2, 1]], [b"a\x00"], [3, 4])


def test_sparse_feature_validated() -> None:
    """Deliberate: TensorFlow does not check indices (out-of-range ones come back as is)."""
    spec = {"sp": tfr.SparseFeature("i", "v", tfr.int64, 13)}
    with pytest.raises(
        tfr.ParseError, match=r"Key: sp, Index: 1\.  SparseFeature index 19 .* out of range"
    ):
        tfr.parse_example([ex(), ex(i=I(0, 19), v=I(1, 2))], spec)
    with pytest.raises(tfr.ParseError, match="out of range"):
        tfr.parse_example([ex(i=I(-1), v=I(1))], spec)
    with pytest.raises(
        tfr.ParseError, match=r"Key: sp\.  SparseFeature index feature 'i' has 2 values"
    ):
        tfr.parse_single_example(ex(i=I(0, 1), v=I(1, 2, 3)), spec)


# --------------------------------------------------------------------------- §E21 RaggedFeature


def test_ragged_golden() -> None:
    rec = ex(v=I(5, 6, 7), s=I(0, 1, 1, 3))
    spec = {"r": R(tfr.int64, "v", [R.RowSplits("s")])}
    check_ragged(tfr.parse_example([rec], spec)["r"], [[[5], [], [6, 7]]], [[0, 3], [0, 1, 1, 3]])
    check_ragged(tfr.parse_single_example(rec, spec)["r"], [[5], [], [6, 7]], [[0, 1, 1, 3]])


def test_ragged_without_partitions() -> None:
    spec = {"v": R(tfr.int64)}
    one = tfr.parse_single_example(ex(v=I(5, 6, 7)), spec)["v"]
    assert arr(one).tolist() == [5, 6, 7] and one.dtype == np.int64
    assert arr(tfr.parse_single_example(ex(v=None), spec)["v"]).shape == (0,)
    batch = tfr.parse_example([ex(v=I(5, 6, 7)), ex()], spec)["v"]
    check_ragged(batch, [[5, 6, 7], []], [[0, 3, 3]])
    wide = tfr.parse_example(
        [ex(v=I(5, 6, 7)), ex()], {"v": R(tfr.int64, row_splits_dtype=np.int64)}
    )
    check_ragged(wide["v"], [[5, 6, 7], []], [[0, 3, 3]], np.int64)
    strings = tfr.parse_single_example(ex(r=B(b"a\x00", b"")), {"r": R(tfr.string)})["r"]
    assert arr(strings).dtype == object and strings.tolist() == [b"a\x00", b""]


PARTITION_CASES = [
    # (partition, key values of record 0, record 1) -> rows of record 0, record 1
    ("RowLengths", [1, 0, 3], [1]),
    ("RowStarts", [0, 1, 1], [0]),
    ("RowLimits", [1, 1, 4], [1]),
    ("RowSplits", [0, 1, 1, 4], [0, 1]),
]


@pytest.mark.parametrize("name,p0,p1", PARTITION_CASES)
def test_ragged_partitions(name: str, p0: list[int], p1: list[int]) -> None:
    records = [ex(v=I(1, 2, 3, 4), p=I(*p0)), ex(v=I(9), p=I(*p1))]
    spec = {"r": R(tfr.int64, "v", [getattr(R, name)("p")])}
    check_ragged(
        tfr.parse_example(records, spec)["r"],
        [[[1], [], [2, 3, 4]], [[9]]],
        [[0, 3, 4], [0, 1, 1, 4, 5]],
    )
    check_ragged(
        tfr.parse_single_example(records[0], spec)["r"], [[1], [], [2, 3, 4]], [[0, 1, 1, 4]]
    )


def test_ragged_value_row_ids() -> None:
    records = [ex(v=I(1, 2, 3, 4), s=I(0, 2, 2, 3)), ex(v=I(9), s=I(0))]
    spec = {"r": R(tfr.int64, "v", [R.ValueRowIds("s")])}
    check_ragged(
        tfr.parse_example(records, spec)["r"],
        [[[1], [], [2, 3], [4]], [[9]]],
        [[0, 4, 5], [0, 1, 1, 3, 4, 5]],
    )
    check_ragged(
        tfr.parse_single_example(records[0], spec)["r"], [[1], [], [2, 3], [4]], [[0, 1, 1, 3, 4]]
    )


def test_ragged_uniform_row_length_reshapes_values() -> None:
    """As TensorFlow: innermost UniformRowLength partitions reshape the values."""
    spec = {"r": R(tfr.int64, "v", [R.UniformRowLength(2)])}
    records = [ex(v=I(1, 2, 3, 4)), ex(v=I(9, 8))]
    batch = ragged(tfr.parse_example(records, spec)["r"])
    check_ragged(batch, [[[1, 2], [3, 4]], [[9, 8]]], [[0, 2, 3]])
    assert arr(batch.values).shape == (3, 2) and batch.flat_values.shape == (3, 2)
    one = tfr.parse_single_example(records[0], spec)["r"]
    assert arr(one).shape == (2, 2) and one.tolist() == [[1, 2], [3, 4]]
    both = tfr.parse_single_example(
        ex(v=I(*range(8))), {"r": R(tfr.int64, "v", [R.UniformRowLength(2)] * 2)}
    )
    assert arr(both["r"]).shape == (2, 2, 2)
    with pytest.raises(tfr.ParseError, match=r"Key: r, Index: 1\.  1 values cannot be split"):
        tfr.parse_example([ex(v=I(1, 2)), ex(v=I(1))], spec)


def test_ragged_nested_partitions() -> None:
    spec = {"r": R(tfr.int64, "v", [R.RowSplits("s"), R.RowLengths("l")])}
    records = [ex(v=I(1, 2, 3, 4, 5), s=I(0, 2, 3), l=I(2, 0, 3)), ex(v=I(), s=I(0), l=I())]
    check_ragged(
        tfr.parse_example(records, spec)["r"],
        [[[[1, 2], []], [[3, 4, 5]]], []],
        [[0, 2, 2], [0, 2, 3], [0, 2, 2, 5]],
    )
    check_ragged(
        tfr.parse_single_example(records[0], spec)["r"],
        [[[1, 2], []], [[3, 4, 5]]],
        [[0, 2, 3], [0, 2, 2, 5]],
    )
    # a uniform partition outside a ragged one stays a level (with uniform_row_length)
    outer = {"r": R(tfr.int64, "v", [R.UniformRowLength(2), R.RowLengths("l")])}
    rv = ragged(tfr.parse_single_example(ex(v=I(1, 2, 3, 4, 5), l=I(2, 0, 3, 0)), outer)["r"])
    check_ragged(rv, [[[1, 2], []], [[3, 4, 5], []]], [[0, 2, 4], [0, 2, 2, 5, 5]])
    assert rv.uniform_row_length == 2 and ragged(rv.values).uniform_row_length is None
    # ... and one inside reshapes the values
    inner = {"r": R(tfr.int64, "v", [R.RowLengths("l"), R.UniformRowLength(2)])}
    rb = ragged(tfr.parse_example([ex(v=I(1, 2, 3, 4, 5, 6), l=I(2, 0, 1))], inner)["r"])
    check_ragged(rb, [[[[1, 2], [3, 4]], [], [[5, 6]]]], [[0, 3], [0, 2, 2, 3]])
    assert rb.flat_values.shape == (3, 2)


def test_ragged_missing_partition_features_are_empty() -> None:
    for name in ("RowSplits", "RowLengths", "RowStarts", "RowLimits", "ValueRowIds"):
        spec = {"r": R(tfr.int64, "v", [getattr(R, name)("s")])}
        check_ragged(tfr.parse_example([ex(v=I())], spec)["r"], [[]], [[0, 0], [0]])
        check_ragged(tfr.parse_single_example(ex(), spec)["r"], [], [[0]])


def test_ragged_partitions_always_validated() -> None:
    """Deliberate: TensorFlow's validate=False returns a malformed RaggedTensor."""
    bad = [
        ("RowSplits", [0, 1, 2]),  # ends before the 3 values
        ("RowSplits", [1, 3]),
        ("RowLengths", [1, 0]),
        ("RowLengths", [4, -1]),
        ("RowStarts", [1]),
        ("RowLimits", [1]),
        ("ValueRowIds", [1, 0, 0]),
        ("ValueRowIds", [0, 0]),
    ]
    for name, pvals in bad:
        spec = {"r": R(tfr.int64, "v", [getattr(R, name)("s")])}
        with pytest.raises(tfr.ParseError, match=r"Key: r, Index: 0\.") as info:
            tfr.parse_example([ex(v=I(1, 2, 3), s=I(*pvals))], spec)
        assert info.value.key == "r"
    with pytest.raises(tfr.ParseError, match="values cannot be split"):
        tfr.parse_example([ex(v=I(1, 2, 3))], {"r": R(tfr.int64, "v", [R.UniformRowLength(2)])})
    with pytest.raises(tfr.ParseError, match="UniformRowLength"):
        tfr.parse_example([ex(v=I(1))], {"r": R(tfr.int64, "v", [R.UniformRowLength(0)])})


def test_ragged_row_splits_dtype() -> None:
    spec = {"r": R(tfr.float32, partitions=[R.RowLengths("l")], row_splits_dtype=np.int64)}
    rv = tfr.parse_example([ex(r=F(1.5), l=I(1))], spec)["r"]
    check_ragged(rv, [[[1.5]]], [[0, 1], [0, 1]], np.int64)
    assert ragged(rv).flat_values.dtype == np.float32
    with pytest.raises(ValueError, match="row_splits_dtype"):
        tfr.parse_example([ex()], {"r": R(tfr.int64, row_splits_dtype=np.int16)})


# --------------------------------------------------------------------------- empty batches


def test_empty_batch_every_spec() -> None:
    specs = {
        "a": tfr.FixedLenFeature([2], tfr.float32),
        "s": tfr.FixedLenFeature([], tfr.string),
        "b": tfr.VarLenFeature(tfr.int64),
        "c": tfr.FixedLenSequenceFeature([3], tfr.string, allow_missing=True),
        "d": tfr.SparseFeature("i", "v", tfr.float32, 5),
        "d2": tfr.SparseFeature(["i", "j"], "v", tfr.float32, [5, 6]),
        "e": R(tfr.int64),
        "f": R(tfr.int64, partitions=[R.RowLengths("l")]),
        "g": R(tfr.string, partitions=[R.RowLengths("l"), R.UniformRowLength(2)]),
    }
    out = tfr.parse_example([], specs)
    assert arr(out["a"]).shape == (0, 2) and out["a"].dtype == np.float32
    assert arr(out["s"]).shape == (0,) and out["s"].dtype == object
    check_sparse(out["b"], [], [], [0, 0])
    assert sparse(out["b"]).indices.shape == (0, 2) and sparse(out["b"]).values.dtype == np.int64
    assert arr(out["c"]).shape == (0, 0, 3) and out["c"].dtype == object
    check_sparse(out["d"], [], [], [0, 5])
    assert sparse(out["d"]).values.dtype == np.float32
    check_sparse(out["d2"], [], [], [0, 5, 6])
    check_ragged(out["e"], [], [[0]])
    assert ragged(out["e"]).values.dtype == np.int64
    check_ragged(out["f"], [], [[0], [0]])
    g = ragged(out["g"])
    check_ragged(g, [], [[0], [0]])
    assert g.flat_values.shape == (0, 2) and g.flat_values.dtype == object


def test_empty_sequence_batch() -> None:
    ctx, seq, lengths = tfr.parse_sequence_example(
        [],
        {
            "c": tfr.FixedLenFeature([], tfr.int64, default_value=0),
            "v": tfr.VarLenFeature(tfr.float32),
        },
        {
            "a": tfr.FixedLenSequenceFeature([2], tfr.int64),
            "b": tfr.VarLenFeature(tfr.string),
            "d": R(tfr.float32),
        },
    )
    assert arr(ctx["c"]).shape == (0,)
    check_sparse(ctx["v"], [], [], [0, 0])
    assert arr(seq["a"]).shape == (0, 0, 2) and arr(lengths["a"]).shape == (0,)
    check_sparse(seq["b"], [], [], [0, 0, 0])
    check_ragged(seq["d"], [], [[0], [0]])


# --------------------------------------------------------------------------- §E22 SequenceExample


def test_sequence_example_golden() -> None:
    records = [
        seq_ex({}, {"a": [I(1), I(2), I(3), I(4)]}),
        seq_ex({"c": I(7)}, {"a": [I(9)], "b": [I(5)]}),
    ]
    ctx, lists, lengths = tfr.parse_sequence_example(
        records,
        {"c": tfr.FixedLenFeature([], tfr.int64, default_value=-1)},
        {
            "a": tfr.FixedLenSequenceFeature([], tfr.int64),
            "b": tfr.FixedLenSequenceFeature([1], tfr.int64, allow_missing=True),
        },
    )
    assert arr(ctx["c"]).tolist() == [-1, 7]
    assert arr(lists["a"]).tolist() == [[1, 2, 3, 4], [9, 0, 0, 0]]
    assert arr(lists["b"]).tolist() == [[[0]], [[5]]] and lists["b"].shape == (2, 1, 1)
    assert sorted(lengths) == ["a", "b"]
    assert arr(lengths["a"]).tolist() == [4, 1] and lengths["a"].dtype == np.int64
    assert arr(lengths["b"]).tolist() == [0, 1]
    ctx1, lists1 = tfr.parse_single_sequence_example(
        records[0],
        {"c": tfr.FixedLenFeature([], tfr.int64, default_value=-1)},
        {
            "a": tfr.FixedLenSequenceFeature([], tfr.int64),
            "b": tfr.FixedLenSequenceFeature([1], tfr.int64, allow_missing=True),
        },
    )
    assert arr(ctx1["c"]).shape == () and int(ctx1["c"]) == -1
    assert arr(lists1["a"]).tolist() == [1, 2, 3, 4] and arr(lists1["b"]).shape == (0, 1)


def test_sequence_missing_list_message() -> None:
    records = [seq_ex({}, {"a": [I(1)]}), seq_ex()]
    with pytest.raises(
        tfr.ParseError, match=r"^Name: y, Feature list 'a' is required but could not be found\."
    ) as info:
        tfr.parse_sequence_example(
            records,
            None,
            {"a": tfr.FixedLenSequenceFeature([], tfr.int64)},
            example_names=["x", "y"],
        )
    assert info.value.index == 1
    with pytest.raises(tfr.ParseError, match="Feature list 'a' is required"):
        tfr.parse_single_sequence_example(
            records[1], None, {"a": tfr.FixedLenSequenceFeature([], tfr.int64)}
        )
    # present with no steps is fine
    _, lists, lengths = tfr.parse_sequence_example(
        [seq_ex({}, {"a": []})], None, {"a": tfr.FixedLenSequenceFeature([], tfr.int64)}
    )
    assert arr(lists["a"]).shape == (1, 0) and arr(lengths["a"]).tolist() == [0]


def test_sequence_step_messages_name_the_step() -> None:
    """TensorFlow's Index in feature-list errors is the step; ours says the record too."""
    records = [seq_ex({}, {"a": [I(1)]}), seq_ex({}, {"a": [I(1), I(2, 3)]})]
    with pytest.raises(tfr.ParseError) as info:
        tfr.parse_sequence_example(records, None, {"a": tfr.FixedLenSequenceFeature([], tfr.int64)})
    assert info.value.message == (
        "Name: <unknown>, Key: a, Index: 1.  Number of values != expected.  values size: 2 but output shape: []"
    )
    assert info.value.index == 1
    records = [seq_ex({}, {"a": [I(1)]}), seq_ex({}, {"a": [I(1), F(2.0)]})]
    for spec in (tfr.FixedLenSequenceFeature([], tfr.int64), tfr.VarLenFeature(tfr.int64)):
        with pytest.raises(tfr.ParseError) as info:
            tfr.parse_sequence_example(records, None, {"a": spec})
        assert info.value.message == (
            "Name: <unknown>, Feature list: a, Index: 1.  Data types don't match. Expected type: int64, "
            "Actual type: float"
        )
    # an empty Feature() step of a FixedLenSequenceFeature has 0 values: a count error
    with pytest.raises(tfr.ParseError, match="values size: 0 but output shape"):
        tfr.parse_single_sequence_example(
            seq_ex({}, {"a": [I(1), None]}), None, {"a": tfr.FixedLenSequenceFeature([], tfr.int64)}
        )


def test_sequence_context_messages() -> None:
    spec = {"c": tfr.FixedLenFeature([], tfr.int64)}
    with pytest.raises(
        tfr.ParseError,
        match=r"^Name: <unknown>, Context feature: c\.  Data types don't match\. "
        "Expected type: int64",
    ):
        tfr.parse_sequence_example([seq_ex({"c": I(1)}), seq_ex({"c": F(1.0)})], spec)
    with pytest.raises(
        tfr.ParseError,
        match=r"^Feature: c \(data type: int64\) is required but could not be found\.",
    ):
        tfr.parse_sequence_example([seq_ex({"c": I(1)}), seq_ex()], spec)
    with pytest.raises(
        tfr.ParseError,
        match=r"^Inconsistent max number of elements for feature c: expected 1, but found 2",
    ):
        tfr.parse_sequence_example([seq_ex({"c": I(1)}), seq_ex({"c": I(1, 2)})], spec)


def test_sequence_context_empty_feature_is_present() -> None:
    """TensorFlow's SequenceExample parser (unlike its Example parser) counts an empty
    Feature() in the context as present with no values: no default for it."""
    with pytest.raises(tfr.ParseError, match="expected 1, but found 0"):
        tfr.parse_sequence_example(
            [seq_ex({"c": None})], {"c": tfr.FixedLenFeature([], tfr.int64, default_value=3)}
        )
    ctx, _, _ = tfr.parse_sequence_example(
        [seq_ex({"c": None})], {"c": tfr.FixedLenFeature([0], tfr.int64)}
    )
    assert arr(ctx["c"]).shape == (1, 0)
    ctx, _, _ = tfr.parse_sequence_example(
        [seq_ex({})], {"c": tfr.FixedLenFeature([], tfr.int64, default_value=3)}
    )
    assert arr(ctx["c"]).tolist() == [3]


def test_sequence_var_len_and_ragged_lists() -> None:
    records = [seq_ex({}, {"a": [I(1), None, I(2, 3)]}), seq_ex({}, {"a": [I(4)]}), seq_ex()]
    _, lists, lengths = tfr.parse_sequence_example(
        records, None, {"a": tfr.VarLenFeature(tfr.int64)}
    )
    check_sparse(lists["a"], [[0, 0, 0], [0, 2, 0], [0, 2, 1], [1, 0, 0]], [1, 2, 3, 4], [3, 3, 2])
    assert lengths == {}
    _, one = tfr.parse_single_sequence_example(
        records[0], None, {"a": tfr.VarLenFeature(tfr.int64)}
    )
    check_sparse(one["a"], [[0, 0], [2, 0], [2, 1]], [1, 2, 3], [3, 2])
    _, missing = tfr.parse_single_sequence_example(
        records[2], None, {"a": tfr.VarLenFeature(tfr.int64)}
    )
    check_sparse(missing["a"], [], [], [0, 0])
    _, rl, _ = tfr.parse_sequence_example(records, None, {"a": R(tfr.int64)})
    check_ragged(rl["a"], [[[1], [], [2, 3]], [[4]], []], [[0, 3, 4, 4], [0, 1, 1, 3, 4]])
    _, r1 = tfr.parse_single_sequence_example(
        records[0], None, {"a": R(tfr.int64, value_key="a", row_splits_dtype=np.int64)}
    )
    check_ragged(r1["a"], [[1], [], [2, 3]], [[0, 1, 1, 3]], np.int64)
    _, r2 = tfr.parse_single_sequence_example(records[2], None, {"a": R(tfr.int64)})
    check_ragged(r2["a"], [], [[0]])


def test_sequence_spec_placement() -> None:
    with pytest.raises(ValueError, match="FixedLenSequenceFeature belongs in sequence_features"):
        tfr.parse_sequence_example(
            [seq_ex()], {"c": tfr.FixedLenSequenceFeature([], tfr.int64, allow_missing=True)}
        )
    with pytest.raises(ValueError, match="not FixedLenFeature"):
        tfr.parse_sequence_example([seq_ex()], None, {"a": tfr.FixedLenFeature([], tfr.int64)})
    with pytest.raises(ValueError, match="partitions are supported for context features only"):
        tfr.parse_sequence_example(
            [seq_ex()], None, {"a": R(tfr.int64, partitions=[R.RowLengths("l")])}
        )


def test_sequence_context_ragged_and_sparse() -> None:
    records = [seq_ex({"c": I(1), "l": I(1)}), seq_ex({"c": I(1, 2), "l": I(0, 2)})]
    ctx, _, _ = tfr.parse_sequence_example(
        records, {"c": R(tfr.int64, partitions=[R.RowLengths("l")])}
    )
    check_ragged(ctx["c"], [[[1]], [[], [1, 2]]], [[0, 1, 3], [0, 1, 1, 3]])
    c1, _ = tfr.parse_single_sequence_example(
        records[0], {"c": R(tfr.int64, partitions=[R.UniformRowLength(1)])}
    )
    assert arr(c1["c"]).tolist() == [[1]]


# --------------------------------------------------------------------------- SparseValue / RaggedValue


def test_sparse_value_to_dense_and_to_list() -> None:
    out = tfr.parse_example(
        [ex(a=I(3, 4)), ex(), ex(a=I(1, 2, -1))], {"a": tfr.VarLenFeature(tfr.int64)}
    )
    sv = sparse(out["a"])
    assert sv.to_dense().tolist() == [[3, 4, 0], [0, 0, 0], [1, 2, -1]]
    assert sv.to_dense(-9).tolist() == [[3, 4, -9], [-9, -9, -9], [1, 2, -1]]
    assert sv.to_list() == [[3, 4], [], [1, 2, -1]]
    assert sv.shape == (3, 3)
    _indices, values, _shape = sv
    assert values.tolist() == [3, 4, 1, 2, -1]
    sb = sparse(
        tfr.parse_example([ex(b=B(b"x\x00")), ex()], {"b": tfr.VarLenFeature(tfr.string)})["b"]
    )
    assert sb.to_dense().tolist() == [[b"x\x00"], [b""]]
    assert sb.to_dense(b"\x00\x00").tolist() == [[b"x\x00"], [b"\x00\x00"]]
    single = sparse(
        tfr.parse_single_example(ex(a=I(5, 6)), {"a": tfr.VarLenFeature(tfr.int64)})["a"]
    )
    assert single.to_list() == [5, 6] and single.to_dense().tolist() == [5, 6]
    seq = sparse(
        tfr.parse_sequence_example(
            [seq_ex({}, {"a": [I(1), None, I(2, 3)]})], None, {"a": tfr.VarLenFeature(tfr.int64)}
        )[1]["a"]
    )
    assert seq.to_list() == [[[1], [], [2, 3]]]


def test_ragged_value_access() -> None:
    spec = {"r": R(tfr.int64, "v", [R.RowSplits("s"), R.RowLengths("l")])}
    records = [ex(v=I(1, 2, 3, 4, 5), s=I(0, 2, 3), l=I(2, 0, 3)), ex(v=I(6), s=I(0, 1), l=I(1))]
    rv = ragged(tfr.parse_example(records, spec)["r"])
    assert rv.to_list() == [[[[1, 2], []], [[3, 4, 5]]], [[[6]]]]
    assert len(rv) == rv.nrows == 2
    assert ragged(rv[1]).to_list() == [[[6]]]  # inner levels sliced, not just rebased
    assert ragged(rv[-2]).to_list() == [[[1, 2], []], [[3, 4, 5]]]
    assert ragged(ragged(rv[0])[1]).to_list() == [[3, 4, 5]]
    assert rv.row_lengths().tolist() == [2, 1]
    assert rv.flat_values.tolist() == [1, 2, 3, 4, 5, 6]
    with pytest.raises(IndexError):
        rv[2]
    again = ragged(tfr.parse_example(records, spec)["r"])
    assert rv == again


# --------------------------------------------------------------------------- misc API


def test_batch_api_rejects_a_single_record() -> None:
    with pytest.raises(TypeError, match="parse_single_example"):
        tfr.parse_example(ex(), {"a": tfr.VarLenFeature(tfr.int64)})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be bytes"):
        tfr.parse_example(["x"], {"a": tfr.VarLenFeature(tfr.int64)})  # type: ignore[list-item]
    with pytest.raises(ValueError, match="example_names"):
        tfr.parse_example([ex(), ex()], {"a": tfr.VarLenFeature(tfr.int64)}, example_names=["x"])


def test_record_types_accepted() -> None:
    data = ex(a=I(1))
    for rec in (data, bytearray(data), memoryview(data), np.bytes_(data)):
        assert arr(
            tfr.parse_example([rec], {"a": tfr.FixedLenFeature([], tfr.int64)})["a"]
        ).tolist() == [1]


def test_key_shared_by_two_specs() -> None:
    """TensorFlow forbids a key in both a dense and a sparse spec; we allow it (same dtype)."""
    out = tfr.parse_example(
        [ex(a=I(1))], {"a": tfr.FixedLenFeature([], tfr.int64), "r": R(tfr.int64, "a")}
    )
    assert arr(out["a"]).tolist() == [1]
    with pytest.raises(ValueError, match="read as both"):
        tfr.parse_example(
            [ex(a=I(1))], {"a": tfr.FixedLenFeature([], tfr.int64), "r": R(tfr.float32, "a")}
        )


# --------------------------------------------------------------------------- properties


KEYS = ["a", "b", "c", "d"]
KIND_DTYPE = {"i": tfr.int64, "f": tfr.float32, "b": tfr.string}

values_of = {
    "i": st.lists(st.integers(-(2**63), 2**63 - 1), max_size=4),
    "f": st.lists(st.floats(width=32, allow_nan=False), max_size=4),
    "b": st.lists(st.binary(max_size=4), max_size=4),
}


@st.composite
def entry_values(draw: Any, kind: Optional[str] = None) -> Value:
    """A Feature's content; mostly of ``kind`` when given (the kind a spec expects)."""
    if draw(st.integers(0, 9)) == 0:
        return None
    if kind is None or draw(st.integers(0, 9)) == 0:
        kind = draw(st.sampled_from("iifb"))
    return (kind, draw(values_of[kind]))


@st.composite
def encoded_record(
    draw: Any,
    layout: Optional[list[tuple[str, str]]] = None,
    kinds: Optional[dict[str, str]] = None,
) -> tuple[bytes, dict[str, Value]]:
    """Wire bytes of one Example, and the dict-of-lists model of what it holds.

    Lists are written packed, unpacked or in several chunks; keys may repeat (in one
    Features or across concatenated Examples: the last one wins); unknown fields
    may appear. ``layout`` (key, kind) pins keys and kinds, so that a batch shares one
    template (the vectorized extractor's case).
    """
    entries: list[tuple[str, Value]] = []
    if layout is not None:
        for key, kind in layout:
            entries.append((key, (kind, draw(values_of[kind]))))
    else:
        for key in draw(st.lists(st.sampled_from(KEYS), max_size=6)):
            entries.append((key, draw(entry_values((kinds or {}).get(key)))))
    model: dict[str, Value] = {}
    for key, value in entries:
        model[key] = value
    fancy = layout is None or draw(st.integers(0, 3)) == 0
    pieces: list[bytes] = []
    for key, value in entries:
        if value is None:
            fbytes = b""
        else:
            kind, vals = value
            how = draw(st.sampled_from(["packed", "unpacked", "split"])) if fancy else "packed"
            if how == "split" and len(vals) > 1:
                cut = draw(st.integers(1, len(vals) - 1))
                chunks = [
                    (draw(st.sampled_from(["packed", "unpacked"])), vals[:cut]),
                    (draw(st.sampled_from(["packed", "unpacked"])), vals[cut:]),
                ]
            else:
                chunks = [("packed" if how == "split" else how, vals)] if vals else []
            fbytes = wire_list(kind, chunks)
        pieces.append(ld(1, ld(1, key.encode()) + ld(2, fbytes)))
    if fancy and pieces and draw(st.booleans()):
        # split the entries over two concatenated Examples
        cut = draw(st.integers(0, len(pieces)))
        data = ld(1, b"".join(pieces[:cut])) + ld(1, b"".join(pieces[cut:]))
    else:
        data = ld(1, b"".join(pieces)) if pieces or draw(st.booleans()) else b""
    if fancy and draw(st.integers(0, 4)) == 0:
        data += varint(6 << 3 | 0) + varint(draw(st.integers(0, 2**40)))  # unknown field
    return data, model


@st.composite
def batches(
    draw: Any, kinds: Optional[dict[str, str]] = None
) -> list[tuple[bytes, dict[str, Value]]]:
    """Random records, or (for the vectorized extractor) records sharing one layout."""
    kinds = kinds or {}
    if draw(st.booleans()):
        return draw(st.lists(encoded_record(kinds=kinds), max_size=10))
    layout = []
    for k in draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=4)):
        kind = kinds.get(k) if draw(st.integers(0, 5)) else None
        layout.append((k, kind or draw(st.sampled_from("iifb"))))
    return draw(st.lists(encoded_record(layout), min_size=8, max_size=14))


@st.composite
def spec_sets(draw: Any) -> dict[str, Any]:
    specs: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(KEYS), unique=True, min_size=1, max_size=3)):
        dtype = KIND_DTYPE[draw(st.sampled_from("iifb"))]
        t = draw(st.sampled_from(["fixed", "fixed_default", "var", "seq", "ragged"]))
        if t.startswith("fixed"):
            shape = draw(st.sampled_from([[], [1], [2], [2, 1], [0]]))
            default = None
            if t == "fixed_default":
                default = np.zeros(math.prod(shape), dtype=dtype.np_dtype)
                if dtype is tfr.string:
                    default[:] = b"d\x00"
                default = default.reshape(shape)
            specs[key] = tfr.FixedLenFeature(shape, dtype, default_value=default)
        elif t == "var":
            specs[key] = tfr.VarLenFeature(dtype)
        elif t == "seq":
            specs[key] = tfr.FixedLenSequenceFeature(
                draw(st.sampled_from([[], [2]])), dtype, allow_missing=True
            )
        else:
            specs[key] = tfr.RaggedFeature(dtype)
    return specs


@st.composite
def cases(draw: Any) -> tuple[list[tuple[bytes, dict[str, Value]]], dict[str, Any]]:
    """A spec dict and a batch whose lists mostly have the kinds the specs expect."""
    specs = draw(spec_sets())
    kinds = {
        k: {"int64": "i", "float32": "f", "string": "b"}[tfr.as_dtype(s.dtype).name]
        for k, s in specs.items()
    }
    return draw(batches(kinds)), specs


class ModelError(Exception):
    pass


def np_values(dtype: tfr.DType, vals: list[Any]) -> np.ndarray:
    if dtype is tfr.string:
        out = np.empty(len(vals), dtype=object)
        out[:] = vals
        return out
    return np.array(vals, dtype=dtype.np_dtype)


def model_parse(models: list[dict[str, Value]], specs: dict[str, Any]) -> dict[str, Any]:
    """The reference: each record a dict of (kind, values); missing = absent or None."""

    def get(m: dict[str, Value], key: str, dtype: tfr.DType) -> Optional[list[Any]]:
        v = m.get(key)
        if v is None:
            return None
        if KIND_DTYPE[v[0]] is not dtype:
            raise ModelError("type")
        return list(np_values(dtype, v[1]))

    cols = {key: [get(m, key, s.dtype) for m in models] for key, s in specs.items()}
    out: dict[str, Any] = {}
    for key, spec in specs.items():
        col = cols[key]
        dtype = tfr.as_dtype(spec.dtype)
        if isinstance(spec, tfr.FixedLenFeature):
            size = math.prod(spec.shape)
            rows = []
            for vals in col:
                if vals is None:
                    if spec.default_value is None or size == 0:
                        raise ModelError("required")
                    rows.append(list(np.asarray(spec.default_value).reshape(-1)))
                elif len(vals) != size:
                    raise ModelError("count")
                else:
                    rows.append(vals)
            out[key] = ("dense", [r for row in rows for r in row], (len(col), *spec.shape))
        elif isinstance(spec, tfr.VarLenFeature):
            idx = [[i, j] for i, vals in enumerate(col) for j in range(len(vals or []))]
            width = max([len(v or []) for v in col], default=0)
            out[key] = ("sparse", idx, [x for v in col for x in (v or [])], [len(col), width])
        elif isinstance(spec, tfr.FixedLenSequenceFeature):
            stride = math.prod(spec.shape)
            if any(len(v or []) % stride for v in col):
                raise ModelError("stride")
            nrows = max([len(v or []) // stride for v in col], default=0)
            fill = b"" if dtype is tfr.string else 0
            flat = []
            for v in col:
                v = v or []
                flat.extend(v + [fill] * (nrows * stride - len(v)))
            out[key] = ("dense", flat, (len(col), nrows, *spec.shape))
        else:
            out[key] = ("ragged", [v or [] for v in col])
    return out


def same_float(a: Any, b: Any) -> bool:
    return bool(
        a == b
        or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    )


def check_against_model(
    out: dict[str, Any], expected: dict[str, Any], specs: dict[str, Any]
) -> None:
    assert sorted(out) == sorted(expected)
    for key, exp in expected.items():
        dtype = tfr.as_dtype(specs[key].dtype)
        got = out[key]
        if exp[0] == "dense":
            got = arr(got)
            assert got.shape == exp[2] and got.dtype == dtype.np_dtype
            assert all(
                same_float(x, y)
                for x, y in zip(got.reshape(-1).tolist(), np_values(dtype, exp[1]).tolist())
            )
            assert got.size == len(exp[1])
        elif exp[0] == "sparse":
            got = sparse(got)
            assert got.indices.tolist() == exp[1] and got.dense_shape.tolist() == exp[3]
            assert got.values.dtype == dtype.np_dtype
            assert got.values.tolist() == np_values(dtype, exp[2]).tolist()
        else:
            got = ragged(got)
            assert got.flat_values.dtype == dtype.np_dtype
            assert got.to_list() == [np_values(dtype, r).tolist() for r in exp[1]]


PROPS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@PROPS
@given(case=cases())
def test_parse_example_matches_reference_model(case: Any) -> None:
    batch, specs = case
    data = [d for d, _ in batch]
    models = [m for _, m in batch]
    try:
        expected: Optional[dict[str, Any]] = model_parse(models, specs)
    except ModelError:
        expected = None
    if expected is None:
        with pytest.raises(tfr.ParseError):
            tfr.parse_example(data, specs)
        return
    check_against_model(tfr.parse_example(data, specs), expected, specs)
    # parse_single_example agrees with the batch, record by record
    for d, m in zip(data[:3], models[:3]):
        one = tfr.parse_single_example(d, specs)
        exp1 = model_parse([m], specs)
        for key, spec in specs.items():
            if isinstance(spec, tfr.RaggedFeature):
                assert arr(one[key]).tolist() == np_values(spec.dtype, exp1[key][1][0]).tolist()
            elif isinstance(spec, tfr.VarLenFeature):
                assert (
                    sparse(one[key]).values.tolist() == np_values(spec.dtype, exp1[key][2]).tolist()
                )
            else:
                assert arr(one[key]).shape == exp1[key][2][1:]


@contextlib.contextmanager
def fast_path(on: bool) -> Iterator[None]:
    old = os.environ.get("TFRECORD_LITE_FASTPATH")
    os.environ["TFRECORD_LITE_FASTPATH"] = "1" if on else "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["TFRECORD_LITE_FASTPATH"]
        else:
            os.environ["TFRECORD_LITE_FASTPATH"] = old


@pytest.mark.slow
@PROPS
@given(case=cases())
def test_fast_and_generic_extractors_agree(case: Any) -> None:
    batch, specs = case
    data = [d for d, _ in batch]

    def run(on: bool) -> Any:
        with fast_path(on):
            try:
                return tfr.parse_example(data, specs)
            except tfr.ParseError as err:
                return ("error", err.message, err.key, err.index)

    fast, generic = run(True), run(False)
    if isinstance(fast, tuple) or isinstance(generic, tuple):
        assert fast == generic
        return
    for key in specs:
        a, b = fast[key], generic[key]
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert np.array_equal(a, b, equal_nan=a.dtype == np.float32)
        elif isinstance(a, tfr.SparseValue):
            assert (
                a.indices.tolist() == b.indices.tolist() and a.values.tolist() == b.values.tolist()
            )
            assert a.values.dtype == b.values.dtype
        else:
            assert a == b


@settings(max_examples=100, deadline=None)
@given(
    lists=st.lists(
        st.one_of(
            st.none(),
            st.lists(st.one_of(st.none(), st.lists(st.integers(-5, 5), max_size=3)), max_size=3),
        ),
        max_size=5,
    )
)
def test_sequence_var_len_matches_reference_model(
    lists: list[Optional[list[Optional[list[int]]]]],
) -> None:
    records = [
        seq_ex({}, {} if steps is None else {"a": [None if s is None else I(*s) for s in steps]})
        for steps in lists
    ]
    _, out, lengths = tfr.parse_sequence_example(
        records, None, {"a": tfr.VarLenFeature(tfr.int64), "r": R(tfr.int64, "a")}
    )
    rows = [[s or [] for s in (steps or [])] for steps in lists]
    sv = sparse(out["a"])
    assert sv.to_list() == [
        [list(s) for s in r] + [[]] * (int(sv.dense_shape[1]) - len(r)) for r in rows
    ]
    assert sv.dense_shape.tolist() == [
        len(rows),
        max([len(r) for r in rows], default=0),
        max([len(s) for r in rows for s in r], default=0),
    ]
    assert ragged(out["r"]).to_list() == rows
    assert lengths == {}


def test_sequence_extensions_beyond_tensorflow() -> None:
    """Accepted here, ValueError in TensorFlow: a FixedLenSequenceFeature default in
    sequence_features (used for padding) and a SparseFeature in the context."""
    records = [seq_ex({"i": I(2), "v": F(0.5)}, {"a": [I(1), I(2)]}), seq_ex({}, {"a": [I(3)]})]
    ctx, lists, lengths = tfr.parse_sequence_example(
        records,
        {"s": tfr.SparseFeature("i", "v", tfr.float32, 4)},
        {"a": tfr.FixedLenSequenceFeature([], tfr.int64, default_value=-1)},
    )
    assert arr(lists["a"]).tolist() == [[1, 2], [3, -1]] and arr(lengths["a"]).tolist() == [2, 1]
    check_sparse(ctx["s"], [[0, 2]], [0.5], [2, 4])
