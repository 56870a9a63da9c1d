"""Protobuf wire-format helpers (tfrecord_lite._examples._wire): varints, tags, packed runs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tfrecord_lite import ParseError, example_pb2, feature_pb2
from tfrecord_lite._examples import _wire as w

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
UINT64 = st.integers(min_value=0, max_value=2**64 - 1)

VARINT_GOLDENS = {
    0: "00",
    1: "01",
    127: "7f",
    128: "8001",
    300: "ac02",
    16383: "ff7f",
    16384: "808001",
    2**31: "8080808008",
    2**63 - 1: "ffffffffffffffff7f",
    2**64 - 1: "ffffffffffffffffff01",
    -1: "ffffffffffffffffff01",
    -2: "feffffffffffffffff01",
    -(2**63): "80808080808080808001",
}


@pytest.mark.parametrize(("value", "hexbytes"), VARINT_GOLDENS.items())
def test_encode_varint_goldens(value: int, hexbytes: str) -> None:
    assert w.encode_varint(value).hex() == hexbytes
    assert w.varint_size(value) == len(hexbytes) // 2


def test_negative_int64_takes_ten_bytes() -> None:
    for v in (-1, -300, -(2**62), -(2**63)):
        assert len(w.encode_varint(v)) == w.MAX_VARINT_LEN


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 10**30])
def test_encode_varint_out_of_range(value: int) -> None:
    with pytest.raises(ValueError, match="out of"):
        w.encode_varint(value)


def test_small_varint_table() -> None:
    assert len(w.SMALL_VARINTS) == w.SMALL_VARINT_LIMIT
    for i in (0, 1, 127, 128, 5000, w.SMALL_VARINT_LIMIT - 1):
        assert w.SMALL_VARINTS[i] == w.encode_varint(i)
        assert w.decode_varint(w.SMALL_VARINTS[i]) == (i, len(w.SMALL_VARINTS[i]))


@given(INT64)
def test_varint_roundtrip_int64(value: int) -> None:
    data = w.encode_varint(value)
    assert w.decode_varint_int64(data) == (value, len(data))
    assert w.decode_varint(data)[0] == value & (2**64 - 1)
    assert w.to_int64(w.decode_varint(data)[0]) == value


@given(INT64)
def test_varint_matches_protobuf(value: int) -> None:
    """An Int64List of one value is ``0a len varint`` (packed)."""
    data = feature_pb2.Int64List(value=[value]).SerializeToString()
    v = w.encode_varint(value)
    assert data == b"\x0a" + w.encode_varint(len(v)) + v


def test_decode_varint_position_and_offset() -> None:
    buf = b"\xff" + w.encode_varint(300) + w.encode_varint(-1) + b"\x05"
    value, pos = w.decode_varint(buf, 1)
    assert (value, pos) == (300, 3)
    value, pos = w.decode_varint_int64(buf, pos)
    assert (value, pos) == (-1, 13)
    assert w.decode_varint(buf, pos) == (5, 14)


def test_decode_varint_truncated() -> None:
    for buf in (b"", b"\x80", b"\xff\xff", b"\x01\x80"):
        with pytest.raises(ParseError, match="truncated varint"):
            w.decode_varint(buf, 1 if buf.startswith(b"\x01") else 0)
    with pytest.raises(ValueError) as err:
        w.decode_varint(b"\x80")  # ParseError is a ValueError
    assert isinstance(err.value, ParseError)


def test_decode_varint_overlong() -> None:
    with pytest.raises(ParseError, match="longer than 10 bytes at byte 2"):
        w.decode_varint(b"\x00\x00" + b"\x80" * 10 + b"\x01", 2)


def test_decode_varint_drops_bits_past_64() -> None:
    # A 10th byte > 1 carries bits beyond 64: protobuf ignores them.
    assert w.decode_varint(b"\xff" * 9 + b"\x7f") == (2**64 - 1, 10)
    assert w.decode_varint_int64(b"\xff" * 9 + b"\x7f") == (-1, 10)


@settings(max_examples=200)
@given(st.lists(INT64, max_size=50))
def test_encode_varints_matches_scalar(values: list[int]) -> None:
    arr = np.array(values, dtype=np.int64)
    expected = b"".join(w.encode_varint(v) for v in values)
    assert w.encode_varints(arr) == expected
    assert w.varint_sizes(arr).tolist() == [len(w.encode_varint(v)) for v in values]
    assert w.decode_varints(expected).tolist() == values


@given(st.lists(UINT64, max_size=30))
def test_varints_uint64(values: list[int]) -> None:
    arr = np.array(values, dtype=np.uint64)
    expected = b"".join(w.encode_varint(v) for v in values)
    assert w.encode_varints(arr) == expected
    assert w.decode_varints(expected, signed=False).tolist() == values
    assert w.decode_varints(expected).tolist() == [w.to_int64(v) for v in values]


@given(
    hnp.arrays(
        dtype=st.sampled_from([np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32, bool]),
        shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5),
    )
)
def test_encode_varints_small_dtypes(arr: np.ndarray) -> None:
    expected = b"".join(w.encode_varint(int(v)) for v in arr.reshape(-1).tolist())
    assert w.encode_varints(arr) == expected
    assert w.varint_sizes(arr).shape == arr.shape


def test_encode_varints_is_packed_int64list() -> None:
    values = [0, 1, -1, 2**40, -(2**63), 127, 128]
    data = feature_pb2.Int64List(value=values).SerializeToString()
    packed = w.encode_varints(np.array(values, dtype=np.int64))
    assert data == b"\x0a" + w.encode_varint(len(packed)) + packed


def test_encode_varints_rejects_floats() -> None:
    with pytest.raises(TypeError):
        w.encode_varints(np.array([1.0]))


def test_encode_varints_fixed() -> None:
    values = np.array([128, 300, 16383], dtype=np.int64)
    out = w.encode_varints_fixed(values, 2)
    assert out.shape == (3, 2)
    assert out.tobytes() == w.encode_varints(values)


def test_decode_varints_empty_and_small() -> None:
    assert w.decode_varints(b"").dtype == np.int64
    assert w.decode_varints(b"").size == 0
    assert w.decode_varints(b"\x01\x02\x7f").tolist() == [1, 2, 127]
    assert w.decode_varints(bytearray(b"\xac\x02")).tolist() == [300]
    assert w.decode_varints(memoryview(b"xx\xac\x02")[2:]).tolist() == [300]


def test_decode_varints_errors() -> None:
    with pytest.raises(ParseError, match="truncated varint at byte 1"):
        w.decode_varints(b"\x01\x80")
    with pytest.raises(ParseError, match="truncated varint at byte 0"):
        w.decode_varints(b"\x80\x80")
    with pytest.raises(ParseError, match="longer than 10 bytes at byte 1"):
        w.decode_varints(b"\x01" + b"\x80" * 10 + b"\x01")
    # exactly 10 bytes is fine
    assert w.decode_varints(b"\x80" * 9 + b"\x01").tolist() == [-(2**63)]


@pytest.mark.parametrize(
    ("constant", "message", "field", "wire_type"),
    [
        (w.EXAMPLE_FEATURES, example_pb2.Example, "features", 2),
        (w.SEQUENCE_EXAMPLE_CONTEXT, example_pb2.SequenceExample, "context", 2),
        (w.SEQUENCE_EXAMPLE_FEATURE_LISTS, example_pb2.SequenceExample, "feature_lists", 2),
        (w.FEATURES_ENTRY, feature_pb2.Features, "feature", 2),
        (w.FEATURE_LISTS_ENTRY, feature_pb2.FeatureLists, "feature_list", 2),
        (w.FEATURE_BYTES_LIST, feature_pb2.Feature, "bytes_list", 2),
        (w.FEATURE_FLOAT_LIST, feature_pb2.Feature, "float_list", 2),
        (w.FEATURE_INT64_LIST, feature_pb2.Feature, "int64_list", 2),
        (w.FEATURE_LIST_FEATURE, feature_pb2.FeatureList, "feature", 2),
        (w.BYTES_LIST_VALUE, feature_pb2.BytesList, "value", 2),
        (w.FLOAT_LIST_PACKED, feature_pb2.FloatList, "value", 2),
        (w.FLOAT_LIST_UNPACKED, feature_pb2.FloatList, "value", 5),
        (w.INT64_LIST_PACKED, feature_pb2.Int64List, "value", 2),
        (w.INT64_LIST_UNPACKED, feature_pb2.Int64List, "value", 0),
    ],
)
def test_tag_constants(constant: bytes, message: type, field: str, wire_type: int) -> None:
    number = message.DESCRIPTOR.fields_by_name[field].number  # type: ignore[attr-defined]
    assert constant == w.encode_tag(number, wire_type)
    assert w.decode_tag(constant) == (number, wire_type, 1)


def test_map_entry_tags() -> None:
    entry = feature_pb2.Features.DESCRIPTOR.fields_by_name["feature"].message_type
    assert w.encode_tag(entry.fields_by_name["key"].number, 2) == w.MAP_KEY
    assert w.encode_tag(entry.fields_by_name["value"].number, 2) == w.MAP_VALUE


def test_encode_tag_invalid() -> None:
    with pytest.raises(ValueError):
        w.encode_tag(0, 2)
    with pytest.raises(ValueError):
        w.encode_tag(1, 7)


def test_decode_tag_invalid() -> None:
    with pytest.raises(ParseError, match="invalid field tag"):
        w.decode_tag(b"\x02")  # field number 0


def test_encode_length_delimited() -> None:
    assert w.encode_length_delimited(b"\x0a", b"hi") == b"\x0a\x02hi"
    big = b"x" * 300
    assert w.encode_length_delimited(b"\x12", big) == b"\x12\xac\x02" + big


def test_walk_a_serialized_example() -> None:
    """decode_tag + skip_field walk every field of a real Example."""
    ex = example_pb2.Example()
    ex.features.feature["a"].int64_list.value.extend([1, -1])
    ex.features.feature["b"].float_list.value.append(0.5)
    data = ex.SerializeToString()
    number, wire_type, pos = w.decode_tag(data)
    assert (number, wire_type) == (1, 2)
    length, pos = w.decode_varint(data, pos)
    assert pos + length == len(data)
    end = pos + length
    keys = []
    while pos < end:
        number, wire_type, pos = w.decode_tag(data, pos)
        assert (number, wire_type) == (1, 2)
        size, start = w.decode_varint(data, pos)
        entry = feature_pb2.Features.FeatureEntry.FromString(data[start : start + size])
        keys.append(entry.key)
        pos = w.skip_field(data, pos, wire_type)
    assert pos == end
    assert sorted(keys) == ["a", "b"]


def test_skip_field_kinds_and_errors() -> None:
    assert w.skip_field(b"\xac\x02", 0, w.WIRETYPE_VARINT) == 2
    assert w.skip_field(b"\x00" * 4, 0, w.WIRETYPE_FIXED32) == 4
    assert w.skip_field(b"\x00" * 8, 0, w.WIRETYPE_FIXED64) == 8
    assert w.skip_field(b"\x02ab", 0, w.WIRETYPE_LENGTH_DELIMITED) == 3
    with pytest.raises(ParseError, match="truncated field"):
        w.skip_field(b"\x05ab", 0, w.WIRETYPE_LENGTH_DELIMITED)
    with pytest.raises(ParseError, match="truncated field"):
        w.skip_field(b"\x00" * 3, 0, w.WIRETYPE_FIXED32)
    with pytest.raises(ParseError, match="wire type 3"):
        w.skip_field(b"", 0, 3)
