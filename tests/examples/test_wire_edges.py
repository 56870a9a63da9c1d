"""Wire-format edge cases every engine and batch size must answer alike: the answer
of the protobuf reference path (issue 34, items 9 and 10).

* A length prefix written as an overlong varint (zero-padded to 6-10 bytes) is
  refused by protobuf's default backend in recent releases (upb, protobuf 5 and
  later: "Wire format was corrupt") and read by older ones (4.25): every engine
  leaves such a record to the reference path, so the answer is always the installed
  protobuf's; 5 bytes or fewer are read by the engines themselves.
* Float32 NaN bits, signalling ones included, are kept exactly as the record holds
  them, as TensorFlow's own parser keeps them (it copies each value's 4 bytes).
"""

from __future__ import annotations

import importlib.util
import struct
from typing import Any

import numpy as np
import pytest
from _helpers import ld, varint

import tfrecord_lite as tfr
from tfrecord_lite import example_pb2

HAS_NUMBA = importlib.util.find_spec("numba") is not None
ENGINES = [
    "numpy",
    pytest.param("jit", marks=pytest.mark.skipif(not HAS_NUMBA, reason="numba not installed")),
]
#: Batch sizes on both sides of the NumPy engine's minimum (8) and of auto's jit one (64).
SIZES = [1, 3, 8, 64, 100]


def _wide(field: int, payload: bytes, width: int) -> bytes:
    n, out = len(payload), bytearray()
    for _ in range(width - 1):
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return varint(field << 3 | 2) + bytes(out) + bytes([n]) + payload


def _record(level: str, width: int) -> bytes:
    """``{"a": [7, 8], "b": [b"abc"]}`` with one level's length prefix ``width`` bytes."""

    def w(name: str) -> int:
        return width if name == level else 1

    ints = _wide(3, _wide(1, b"\x07\x08", w("packed")), w("list"))
    entry = _wide(1, _wide(1, b"a", w("key")) + _wide(2, ints, w("feature")), w("entry"))
    strings = ld(1, ld(1, b"b") + ld(2, ld(1, _wide(1, b"abc", w("item")))))
    return _wide(1, entry + strings, w("features"))


SPEC = {"a": tfr.VarLenFeature(tfr.int64), "b": tfr.FixedLenFeature([], tfr.string)}
LEVELS = ["features", "entry", "key", "feature", "list", "packed", "item"]


def _protobuf_reads(record: bytes, message: Any = example_pb2.Example) -> bool:
    try:
        message.FromString(record)
    except Exception:
        return False
    return True


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("width", [5, 6, 10])
def test_overlong_length_prefixes_get_protobufs_answer_from_every_engine(
    engine: str, level: str, width: int, monkeypatch: Any
) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    record = _record(level, width)
    good = tfr.encode_example({"a": [1], "b": b"x"})
    readable = _protobuf_reads(record)
    if width <= 5:
        assert readable
    for size in SIZES:
        records = [good] * (size - 1) + [record]
        if readable:
            out = tfr.parse_example(records, SPEC)
            assert out["a"].values[-2:].tolist() == [7, 8] and out["b"][-1] == b"abc"
        else:
            with pytest.raises(tfr.ParseError, match="Could not parse example input") as err:
                tfr.parse_example(records, SPEC)
            assert err.value.index == size - 1
    if readable:
        assert tfr.parse_single_example(record, SPEC)["a"].values.tolist() == [7, 8]
    else:
        with pytest.raises(tfr.ParseError):
            tfr.parse_single_example(record, SPEC)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("width", [5, 6])
def test_overlong_length_prefixes_in_sequence_examples(
    engine: str, width: int, monkeypatch: Any
) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    step = ld(3, ld(1, b"\x05"))  # a Feature: int64_list [5]
    flist = _wide(1, b"s", 1) + _wide(2, _wide(1, step, width), 1)  # FeatureList of one step
    record = ld(2, ld(1, flist))
    good = tfr.encode_sequence_example({}, {"s": [[1]]})
    spec = {"s": tfr.FixedLenSequenceFeature([], tfr.int64)}
    readable = _protobuf_reads(record, example_pb2.SequenceExample)
    for size in SIZES:
        records = [good] * (size - 1) + [record]
        if readable:
            _, seq, _ = tfr.io.parse_sequence_example(records, sequence_features=spec)
            assert seq["s"][-1].tolist() == [5]
        else:
            with pytest.raises(tfr.ParseError):
                tfr.io.parse_sequence_example(records, sequence_features=spec)


NAN_BITS = [0x7F800001, 0x7FA00005, 0xFF800003, 0x7FC00000, 0xFFC12345, 0x3F800000]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("packed", [True, False])
def test_nan_bits_are_kept_by_every_engine_and_batch_size(
    engine: str, packed: bool, monkeypatch: Any
) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    raw = b"".join(struct.pack("<I", b) for b in NAN_BITS)
    floats = ld(1, raw) if packed else b"".join(b"\x0d" + raw[i : i + 4] for i in range(0, 24, 4))
    record = ld(
        1,
        ld(1, ld(1, b"f") + ld(2, ld(2, floats)))
        + ld(1, ld(1, b"g") + ld(2, ld(2, ld(1, raw[:4])))),
    )
    spec = {
        "f": tfr.VarLenFeature(tfr.float32),
        "g": tfr.FixedLenFeature([], tfr.float32),
        "h": tfr.RaggedFeature(tfr.float32, value_key="f"),
    }
    for fast in ("1", "0"):  # the engines, and the reference path
        monkeypatch.setenv("TFRECORD_LITE_FASTPATH", fast)
        for size in SIZES:
            out = tfr.parse_example([record] * size, spec)
            assert out["f"].values.view(np.uint32).tolist() == NAN_BITS * size
            assert out["g"].view(np.uint32).tolist() == [NAN_BITS[0]] * size
            assert out["h"].flat_values.view(np.uint32).tolist() == NAN_BITS * size
        one = tfr.parse_single_example(record, spec)
        assert one["f"].values.view(np.uint32).tolist() == NAN_BITS
        assert one["g"].view(np.uint32).item() == NAN_BITS[0]
        _, seq, _ = tfr.io.parse_sequence_example(
            [ld(2, ld(1, ld(1, b"s") + ld(2, ld(1, ld(2, floats)))))] * 3,
            sequence_features={"s": tfr.FixedLenSequenceFeature([6], tfr.float32)},
        )
        assert seq["s"].view(np.uint32).reshape(-1).tolist() == NAN_BITS * 3
