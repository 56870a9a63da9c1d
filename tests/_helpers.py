"""Helpers shared by the property tests and the fuzz targets (tests/fuzz/).

:func:`canon` turns any parse result into plain data that compares exactly, so two
code paths (the vectorized extractor and the protobuf path) can be checked against
each other; :func:`outcome` runs a call and gives its result or the documented error.
"""

from __future__ import annotations

import os
import signal
import struct
from typing import Any, Callable

import numpy as np

import tfrecord_lite as tfr

#: What hostile input may raise: the library's errors, or ValueError / TypeError.
ALLOWED = (tfr.TFRecordError, ValueError, TypeError)

#: Every NumPy dtype TensorFlow's TensorProto has (serialize_tensor / parse_tensor).
TENSOR_DTYPES = [
    np.bool_,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
    np.complex64,
    np.complex128,
]


def varint(n: int) -> bytes:
    """Protobuf varint of ``n`` (negative ints as their 64-bit two's complement)."""
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def ld(field: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field: tag, length, payload."""
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def canon(value: Any) -> Any:
    """Plain, exactly comparable data for a parse result (dicts, arrays, sparse, ragged)."""
    if isinstance(value, dict):
        return {k: canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return [canon(v) for v in value]
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


def outcome(fn: Callable[[], Any], allowed: tuple[type[BaseException], ...] = ALLOWED) -> Any:
    """``("ok", canon(result))`` or ``("error", class name)`` for an allowed error."""
    try:
        return ("ok", canon(fn()))
    except allowed as err:
        return ("error", type(err).__name__)


def run_in_fork(body: Callable[[], int], timeout: int = 20) -> int:
    """Run ``body`` in a forked child and return what it returned (0-255): 255 if it
    raised, -1 if the child died without saying (killed after ``timeout`` s)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 255
        try:
            signal.alarm(timeout)
            code = body()
        except BaseException:
            code = 255
        os.write(w, bytes([code]))
        os._exit(0)
    os.close(w)
    try:
        said = os.read(r, 1)
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    return said[0] if said else -1


def _double_field(field: int, value: float) -> bytes:
    return varint(field << 3 | 1) + struct.pack("<d", value)


def event_records(n: int) -> list[bytes]:
    """``n`` TensorBoard ``Event`` records as its summary writer frames them: the
    ``file_version`` record first, then scalar summaries. Event: wall_time = 1
    (double), step = 2 (int64), file_version = 3, summary = 5; Summary: value = 1;
    Summary.Value: tag = 1, simple_value = 2 (float)."""
    out = [_double_field(1, 1.7e9) + ld(3, b"brain.Event:2")]
    for step in range(1, n):
        value = ld(1, b"loss") + varint(2 << 3 | 5) + struct.pack("<f", 1.0 / step)
        event = _double_field(1, 1.7e9 + step) + varint(2 << 3) + varint(step)
        out.append(event + ld(5, ld(1, value)))
    return out


def elwc_records(n: int, per_list: int = 3) -> list[bytes]:
    """``n`` TF-Ranking ``ExampleListWithContext`` records: examples = 1 (repeated
    Example, ``per_list`` each), context = 2 (an Example). Their bytes are valid
    UTF-8, so protobuf parses each as a SequenceExample with binary keys."""
    out = []
    for i in range(n):
        items = b"".join(
            ld(1, tfr.encode_example({"doc_id": [i * per_list + j], "title": [b"doc %d" % j]}))
            for j in range(per_list)
        )
        out.append(items + ld(2, tfr.encode_example({"query": [f"query {i}".encode()]})))
    return out
