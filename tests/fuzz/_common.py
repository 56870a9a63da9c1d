"""Shared by the atheris targets in this folder (run by run.py; see docs/reliability.md).

Input layout of the parser targets, so that seeds can be built from real records::

    byte 0      which spec set (modulo the number of specs)
    byte 1      flags: bit 0 = repeat the records up to a batch of 8+ (fast path)
    then        records, each a little-endian u16 length + that many bytes
"""

from __future__ import annotations

import importlib.util
import os
import struct
import sys
from typing import Any, Callable

import tfrecord_lite as tfr

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
# ALLOWED: what a parser may raise on bad input; anything else is a crash.
from _helpers import ALLOWED, canon, outcome  # noqa: F401  (re-exported to the targets)

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
    # keys alike in length and first and last 8 bytes (one key hash bucket each, not one
    # chain): the key tables of both engines
    {key: tfr.VarLenFeature(tfr.int64) for key in (f"sensor_{i:05d}_reading" for i in range(40))},
]

#: Keys of the colliding-keys spec (and more, alike, that it does not read).
ALIKE_KEYS = [f"sensor_{i:05d}_reading" for i in range(60)]


def overlong(record: bytes, width: int) -> bytes:
    """``record`` (an Example) with its ``Features`` length prefix written in ``width``
    bytes (zero-padded varint; over 5 bytes protobuf refuses the record)."""
    if record[:1] != b"\x0a":
        return record
    p = 1
    while record[p] & 0x80:
        p += 1
    body = record[p + 1 :]
    n, out = len(body), bytearray()
    for _ in range(width - 1):
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return b"\x0a" + bytes(out) + bytes([n]) + body


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


#: The parse engines the fast path is run with (the compiled one where numba is installed).
ENGINES = ["numpy", "jit"] if importlib.util.find_spec("numba") else ["numpy"]


def fast_and_generic(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` with the fast path of each engine, then with the generic path
    (protobuf alone): the results must agree."""
    os.environ["TFRECORD_LITE_FASTPATH"] = "0"
    generic = outcome(fn)
    os.environ["TFRECORD_LITE_FASTPATH"] = "1"
    for engine in ENGINES:
        os.environ["TFRECORD_LITE_ENGINE"] = engine
        fast = outcome(fn)
        if fast != generic:
            raise AssertionError(
                f"fast path ({engine}) and generic path disagree:\n{fast!r}\n!=\n{generic!r}"
            )
    os.environ.pop("TFRECORD_LITE_ENGINE", None)
    return generic
