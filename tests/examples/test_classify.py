"""Value classification (``tfrecord_lite._examples._classify``): each feature value's kind
and wire-ready payload, the one set of rules every builder converts through."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tfrecord_lite import feature_pb2
from tfrecord_lite._examples._build import make_example
from tfrecord_lite._examples._classify import (
    KIND_BYTES,
    KIND_EMPTY,
    KIND_FEATURE,
    KIND_FLOAT,
    KIND_INT64,
    classify,
    classify_steps,
    describe_where,
    feature_where,
)
from tfrecord_lite._examples._feature_wire import feature_bytes

CASES: list[tuple[Any, int]] = [
    (7, KIND_INT64),
    (-1, KIND_INT64),
    (True, KIND_INT64),
    (np.uint64(2**63 - 1), KIND_INT64),
    ([1, 2, 300], KIND_INT64),
    (np.arange(6, dtype=np.uint8).reshape(2, 3), KIND_INT64),
    (0.1, KIND_FLOAT),
    ([1, 2.5], KIND_FLOAT),
    (np.float16(1.5), KIND_FLOAT),
    (np.ones((2, 2), np.float32), KIND_FLOAT),
    (np.array([], np.float64), KIND_FLOAT),
    (b"a\0", KIND_BYTES),
    ("é", KIND_BYTES),
    ([b"x", "y", bytearray(b"z")], KIND_BYTES),
    (np.array([b"ab", b"c"]), KIND_BYTES),
    (np.array(["ü"]), KIND_BYTES),
    (np.zeros(2, dtype="V3"), KIND_BYTES),
    ([], KIND_EMPTY),
    ((), KIND_EMPTY),
    (feature_pb2.Feature(), KIND_FEATURE),
]


@pytest.mark.parametrize(("value", "kind"), CASES)
def test_the_payload_serializes_as_protobuf_does(value: Any, kind: int) -> None:
    got_kind, payload = classify(feature_where("k"), value)
    assert got_kind == kind
    expected = make_example({"k": value}).features.feature["k"].SerializeToString()
    assert feature_bytes(got_kind, payload) == expected


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (None, TypeError, "None is not a feature value"),
        ([1, None], TypeError, "None is not a feature value"),
        ([[1], [2]], TypeError, "nested sequences"),
        ([b"a", 1], TypeError, "mixes bytes/str with numbers"),
        ({"a": 1}, TypeError, "unsupported value type dict"),
        (1j, TypeError, "unsupported value type complex"),
        (2**63, ValueError, "out of int64 range"),
        (np.array([2**63], np.uint64), ValueError, "out of int64 range"),
        ("\ud800", ValueError, "not valid UTF-8"),
    ],
)
def test_errors_start_with_where_the_value_came_from(
    value: Any, error: type[Exception], message: str
) -> None:
    where = ("context feature ", "label")
    assert describe_where(where) == "context feature 'label'"
    with pytest.raises(error, match=message) as info:
        classify(where, value)
    assert str(info.value).startswith("context feature 'label': ")


def test_steps_of_a_feature_list_hold_one_kind() -> None:
    steps = classify_steps(("feature list ", "f"), [[1, 2], [], np.array([3])])
    assert [kind for kind, _ in steps] == [KIND_INT64, KIND_EMPTY, KIND_INT64]
    with pytest.raises(TypeError, match=r"feature list 'f': step 1 is a float_list"):
        classify_steps(("feature list ", "f"), [[1], [0.5]])
    with pytest.raises(TypeError, match="not a 0-d array"):
        classify_steps(("feature list ", "f"), np.array(3))
