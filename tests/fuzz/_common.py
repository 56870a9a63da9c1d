"""Shared by the atheris targets in this folder (run by run.py; see docs/reliability.md).

Input layout of the parser targets, so that seeds can be built from real records::

    byte 0      which spec set (modulo the number of specs)
    byte 1      flags: bit 0 = repeat the records up to a batch of 8+ (fast path)
    then        records, each a little-endian u16 length + that many bytes
"""

from __future__ import annotations

import os
import struct
from typing import Any, Callable

import numpy as np

import tfrecord_lite as tfr

#: What a parser may raise on bad input; anything else is a crash.
ALLOWED = (tfr.TFRecordError, ValueError, TypeError)

EXAMPLE_SPECS: list[dict[str, Any]] = [
    {},
    {
        "int": tfr.VarLenFeature(tfr.int64),
        "float": tfr.VarLenFeature(tfr.float32),
        "bytes": tfr.VarLenFeature(tfr.string),
        "label": tfr.VarLenFeature(tfr.int64),
    },
    {
        "label": tfr.FixedLenFeature([], tfr.int64, default_value=-1),
        "float": tfr.FixedLenFeature([2], tfr.float32, default_value=[0.0, 0.0]),
    },
    {
        "int": tfr.RaggedFeature(tfr.int64),
        "bytes": tfr.FixedLenSequenceFeature([], tfr.string, allow_missing=True),
    },
    {
        "sp": tfr.SparseFeature(index_key="int", value_key="float", dtype=tfr.float32, size=100),
    },
]

SEQUENCE_SPECS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {}),
    (
        {"id": tfr.VarLenFeature(tfr.string), "length": tfr.VarLenFeature(tfr.int64)},
        {"tokens": tfr.VarLenFeature(tfr.int64), "scores": tfr.RaggedFeature(tfr.float32)},
    ),
    (
        {"length": tfr.FixedLenFeature([], tfr.int64, default_value=0)},
        {"tokens": tfr.FixedLenSequenceFeature([], tfr.int64, allow_missing=True)},
    ),
]


def split(data: bytes) -> tuple[int, int, list[bytes]]:
    """(selector, flags, records) from a fuzz input."""
    if len(data) < 2:
        return 0, 0, [data]
    selector, flags = data[0], data[1]
    records = []
    pos = 2
    while pos + 2 <= len(data) and len(records) < 64:
        (n,) = struct.unpack_from("<H", data, pos)
        records.append(data[pos + 2 : pos + 2 + n])
        pos += 2 + n
    return selector, flags, records or [b""]


def join(selector: int, flags: int, records: list[bytes]) -> bytes:
    """The inverse of :func:`split` (for seeds)."""
    out = bytearray([selector & 0xFF, flags & 0xFF])
    for r in records:
        r = r[:0xFFFF]
        out += struct.pack("<H", len(r)) + r
    return bytes(out)


def batch_of(records: list[bytes], flags: int) -> list[bytes]:
    if flags & 1 and records:
        return (records * (8 // len(records) + 1))[: max(8, len(records))]
    return records


def canon(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: canon(v) for k, v in value.items()}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(canon(v) for v in value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            # Bit patterns (-0.0 != 0.0), every NaN alike: protobuf's float -> double
            # -> float round trip quiets a signaling NaN, the fast path keeps its bits.
            bits = value.view(f"u{value.dtype.itemsize}").copy()
            bits[np.isnan(value)] = 0
            return (value.dtype.str, value.shape, bits.tolist(), np.isnan(value).tolist())
        return (value.dtype.str, value.shape, value.tolist())
    if isinstance(value, tfr.SparseValue):
        return ("sparse", *(canon(v) for v in value))
    if isinstance(value, tfr.RaggedValue):
        return ("ragged", canon(value.values), canon(value.row_splits))
    return value


def outcome(fn: Callable[[], Any]) -> Any:
    try:
        return ("ok", canon(fn()))
    except ALLOWED as err:
        return ("error", type(err).__name__)


def fast_and_generic(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` with the vectorized fast path on, then off: the results must agree."""
    os.environ["TFRECORD_LITE_FASTPATH"] = "1"
    fast = outcome(fn)
    os.environ["TFRECORD_LITE_FASTPATH"] = "0"
    generic = outcome(fn)
    os.environ["TFRECORD_LITE_FASTPATH"] = "1"
    if fast != generic:
        raise AssertionError(f"fast path and generic path disagree:\n{fast!r}\n!=\n{generic!r}")
    return generic
