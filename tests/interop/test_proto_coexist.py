"""TensorFlow and tfrecord_lite's protobuf messages in one process.

Our messages live in the private proto package ``tfrecord_lite``, so importing
both libraries registers ``tensorflow.Example`` and ``tfrecord_lite.Example``
side by side in protobuf's default descriptor pool, in either import order,
and the two encode and decode each other's bytes identically.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Union

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

tf: Any = pytest.importorskip("tensorflow")

from google.protobuf import descriptor_pool  # noqa: E402

from tfrecord_lite import example_pb2, feature_pb2  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]

FeatureValues = Union[list[int], list[float], list[bytes], None]
FeatureSpec = tuple[str, FeatureValues]  # (kind, values); kind "none" = empty Feature


def _fill(feature: Any, kind: str, values: FeatureValues) -> None:
    """Fill a Feature of either library (the two have the same field names)."""
    if kind == "none":
        return
    getattr(feature, f"{kind}_list").value.extend(values or [])
    if not values:  # an empty list is still a set kind
        getattr(feature, f"{kind}_list").SetInParent()


def _ours(features: dict[str, FeatureSpec]) -> example_pb2.Example:
    ex = example_pb2.Example()
    for name, (kind, values) in features.items():
        _fill(ex.features.feature[name], kind, values)
    return ex


def _theirs(features: dict[str, FeatureSpec]) -> Any:
    ex = tf.train.Example()
    for name, (kind, values) in features.items():
        _fill(ex.features.feature[name], kind, values)
    return ex


def _bytes(message: Any) -> bytes:
    # Deterministic: map entries sorted by key, so multi-key maps compare too.
    data = message.SerializeToString(deterministic=True)
    assert isinstance(data, bytes)
    return data


_GOLDEN: list[tuple[dict[str, FeatureSpec], str]] = [
    ({"a": ("int64", [1])}, "0a0c0a0a0a016112051a030a0101"),
    ({"a": ("int64", [-1])}, "0a150a130a0161120e1a0c0a0affffffffffffffffff01"),
    ({"x": ("float", [0.1])}, "0a0f0a0d0a0178120812060a04cdcccc3d"),
    ({"b": ("bytes", [b"hi"])}, "0a0d0a0b0a016212060a040a026869"),
    ({"e": ("none", None)}, "0a070a050a01651200"),
]


def test_both_registered_in_default_pool() -> None:
    pool = descriptor_pool.Default()
    assert tf.train.Example.DESCRIPTOR.full_name == "tensorflow.Example"
    assert example_pb2.Example.DESCRIPTOR.full_name == "tfrecord_lite.Example"
    assert pool.FindMessageTypeByName("tensorflow.Example") is tf.train.Example.DESCRIPTOR
    assert pool.FindMessageTypeByName("tfrecord_lite.Example") is example_pb2.Example.DESCRIPTOR
    assert pool.FindFileByName("tfrecord_lite/example.proto") is example_pb2.DESCRIPTOR
    assert tf.train.Example.DESCRIPTOR.file.name == "tensorflow/core/example/example.proto"
    assert tf.train.Example is not example_pb2.Example


@pytest.mark.parametrize("first", ["tensorflow", "tfrecord_lite"])
def test_either_import_order(first: str) -> None:
    code = (
        "import importlib, sys\n"
        "order = sys.argv[1:]\n"
        "mods = {name: importlib.import_module(name) for name in order}\n"
        "tf, ours = mods['tensorflow'], mods['tfrecord_lite.example_pb2']\n"
        "a = tf.train.Example(); a.features.feature['k'].int64_list.value.append(7)\n"
        "b = ours.Example(); b.features.feature['k'].int64_list.value.append(7)\n"
        "assert a.SerializeToString() == b.SerializeToString()\n"
        "print('ok')\n"
    )
    order = ["tensorflow", "tfrecord_lite.example_pb2"]
    if first == "tfrecord_lite":
        order.reverse()
    result = subprocess.run(
        [sys.executable, "-c", code, *order],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip().endswith("ok")


@pytest.mark.parametrize(("features", "golden"), _GOLDEN, ids=[g for _, g in _GOLDEN])
def test_golden_bytes_identical(features: dict[str, FeatureSpec], golden: str) -> None:
    ours, theirs = _ours(features), _theirs(features)
    assert ours.SerializeToString().hex() == golden
    assert theirs.SerializeToString().hex() == golden
    assert tf.train.Example.FromString(bytes.fromhex(golden)) == theirs
    assert example_pb2.Example.FromString(bytes.fromhex(golden)) == ours


_kinds = st.one_of(
    st.tuples(st.just("int64"), st.lists(st.integers(-(2**63), 2**63 - 1), max_size=5)),
    st.tuples(st.just("float"), st.lists(st.floats(width=32), max_size=5)),
    st.tuples(st.just("bytes"), st.lists(st.binary(max_size=8), max_size=5)),
    st.tuples(st.just("none"), st.none()),
)
_feature_dicts = st.dictionaries(st.text(max_size=6), _kinds, max_size=5)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_feature_dicts)
def test_same_dict_same_bytes_and_cross_parse(features: dict[str, FeatureSpec]) -> None:
    ours, theirs = _ours(features), _theirs(features)
    ours_bytes, theirs_bytes = _bytes(ours), _bytes(theirs)
    assert ours_bytes == theirs_bytes
    # Each library parses the other's bytes back to the same message.
    assert _bytes(tf.train.Example.FromString(ours_bytes)) == theirs_bytes
    assert _bytes(example_pb2.Example.FromString(theirs_bytes)) == ours_bytes
    if len(features) <= 1:  # map order cannot differ: plain serialization matches too
        assert ours.SerializeToString() == theirs.SerializeToString()


def test_sequence_example_cross_parse() -> None:
    theirs = tf.train.SequenceExample()
    theirs.context.feature["id"].bytes_list.value.append(b"seq-1")
    frames = theirs.feature_lists.feature_list["tokens"].feature
    for i in range(3):
        frames.add().int64_list.value.extend(range(i))
    ours = example_pb2.SequenceExample()
    ours.context.feature["id"].bytes_list.value.append(b"seq-1")
    our_frames = ours.feature_lists.feature_list["tokens"].feature
    for i in range(3):
        our_frames.add().int64_list.value.extend(range(i))
    assert _bytes(ours) == _bytes(theirs)
    assert example_pb2.SequenceExample.FromString(_bytes(theirs)) == ours
    assert tf.train.SequenceExample.FromString(_bytes(ours)) == theirs


def test_tensorflow_parse_op_reads_our_bytes() -> None:
    ex = example_pb2.Example()
    ex.features.feature["i"].int64_list.value.extend([1, -2, 3])
    ex.features.feature["f"].float_list.value.extend([0.5, 0.1])
    ex.features.feature["s"].bytes_list.value.append(b"hi")
    ex.features.feature["l"].CopyFrom(feature_pb2.Feature())
    parsed = tf.io.parse_single_example(
        ex.SerializeToString(),
        {
            "i": tf.io.FixedLenFeature([3], tf.int64),
            "f": tf.io.FixedLenFeature([2], tf.float32),
            "s": tf.io.FixedLenFeature([], tf.string),
            "l": tf.io.VarLenFeature(tf.int64),
        },
    )
    assert parsed["i"].numpy().tolist() == [1, -2, 3]
    assert parsed["f"].numpy().tolist() == [0.5, 0.10000000149011612]
    assert parsed["s"].numpy() == b"hi"
    assert parsed["l"].values.numpy().tolist() == []
