"""The compiled Example writer's driver: :func:`encode_columns`' records built by numba.

:func:`~._encode_columns.encode_columns` and ``write_examples`` check and convert
their columns as ever (:class:`~._encode_columns._Column`: every error and every
value's conversion stays theirs); where the engine for the batch is ``jit``
(:func:`._jit.engine`: numba installed and a chunk of ``JIT_MIN_RECORDS`` or more,
or ``TFRECORD_LITE_ENGINE=jit``), the records are then built here, in one
preallocated ``uint8`` buffer, by the kernels of :mod:`._jit_encode_kernels`: one
pass for the sizes, one that writes every record (varints, keys, headers, data)
in order, and, for a file, one that writes the two masked CRC-32C of each record
(:mod:`._jit_encode_crc`, the CPU's CRC instruction on x86-64; elsewhere the
installed CRC backend, record by record). The bytes are those of the NumPy path
and of protobuf's serializer (map entries in the order of the columns).

Nothing is compiled at import: the kernels are loaded by :func:`._jit._load`
(numba's on-disk cache, the same fallbacks as the parse kernels) the first time a
chunk needs them; where they cannot be loaded, the NumPy path writes the chunk.
"""

from __future__ import annotations

import importlib
import platform
from collections.abc import Sequence
from typing import Any, Optional, Protocol

import numpy as np

from .._record import (
    HEADER_SIZE,
    RECORD_OVERHEAD,
    FramedRecords,
    crc32c,
    footer_of_crc,
    record_header,
)
from ._jit import _load

__all__ = ["BYTES", "FEATURE", "FLOATS", "INTS", "jit_framed", "jit_records"]

#: Column kinds, by the header in front of each record's data: packed varints of
#: an integer array; a FloatList of bytes (float32 rows); a BytesList of one value;
#: none (the data is a whole serialized Feature).
INTS, FLOATS, BYTES, FEATURE = 0, 1, 2, 3


class EncodeColumn(Protocol):
    """One column as the kernels take it (:class:`~._encode_columns._Column`)."""

    #: :data:`INTS`, :data:`FLOATS`, :data:`BYTES` or :data:`FEATURE`.
    kind: int
    #: INTS: an ``(n, m)`` integer array; otherwise an ``(n, w)`` uint8 array (each
    #: record's data is its row) or a list of ``n`` ``bytes`` (each record's data).
    source: Any
    #: Each record's data size (bytes; unused for INTS).
    d: np.ndarray
    #: The map entry's key field (``0a len key``).
    _key_field: bytes


_hardware_crc: Optional[bool] = None


def _crc_instruction() -> bool:
    """Whether numba compiles for an x86-64 CPU with SSE4.2 (the CRC kernel's
    instruction): numba's CPU features (``NUMBA_CPU_FEATURES``, else the host's)."""
    global _hardware_crc
    if _hardware_crc is None:
        found = False
        if platform.machine().lower() in ("x86_64", "amd64"):
            try:
                config: Any = importlib.import_module("numba").config
                features = config.CPU_FEATURES
                if features is None:
                    binding: Any = importlib.import_module("llvmlite.binding")
                    features = binding.get_host_cpu_features().flatten()
                found = "+sse4.2" in str(features).split(",")
            except Exception:  # (no host features on this platform)
                found = False
        _hardware_crc = found
    return _hardware_crc


def _frame_by_backend(out: np.ndarray, roff: np.ndarray) -> None:
    """:func:`._jit_encode_crc.frame_crcs` with the installed CRC backend, record by record."""
    view = memoryview(out)  # type: ignore[arg-type]
    bounds = roff.tolist()
    for a, b in zip(bounds[:-1], bounds[1:]):
        view[a + 8 : a + HEADER_SIZE] = record_header(b - a - RECORD_OVERHEAD)[8:]
        view[b - 4 : b] = footer_of_crc(crc32c(view[a + HEADER_SIZE : b - 4]))


def _offsets(column: EncodeColumn, n: int) -> np.ndarray:
    """Where each record's data starts in the column's bytes (``n + 1`` offsets)."""
    offs = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(column.d, out=offs[1:])
    return offs


def _build(
    columns: Sequence[EncodeColumn], n: int, framed: bool
) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """The ``n`` records in one buffer and where each begins (``n + 1`` offsets); None
    where the kernels cannot be loaded."""
    try:
        kern = _load("_jit_encode_kernels")
    except Exception:
        return None
    ncols = len(columns)
    kinds = np.array([c.kind for c in columns], dtype=np.int8)
    ioff = np.zeros(ncols, dtype=np.int64)
    icnt = np.zeros(ncols, dtype=np.int64)
    offs = np.zeros((ncols, n + 1), dtype=np.int64)
    addr = np.zeros(ncols, dtype=np.int64)
    keep: list[np.ndarray] = []  # the byte sources, alive until the kernel has read them
    int_parts: list[np.ndarray] = []
    width = 0
    for c, col in enumerate(columns):
        if col.kind == INTS:
            values = np.asarray(col.source).reshape(n, -1)
            ioff[c], icnt[c] = width, values.shape[1]
            width += values.shape[1]
            int_parts.append(values.astype(np.int64, copy=False))
            continue
        if isinstance(col.source, np.ndarray):
            data = np.ascontiguousarray(col.source, dtype=np.uint8)
            offs[c] = np.arange(n + 1, dtype=np.int64) * data.shape[1]
        else:
            data = np.frombuffer(b"".join(col.source) or b"\0", dtype=np.uint8)
            offs[c] = _offsets(col, n)
        keep.append(data)
        addr[c] = data.ctypes.data
    if int_parts:
        ints = np.ascontiguousarray(np.concatenate(int_parts, axis=1), dtype=np.int64)
    else:
        ints = np.zeros((n, 0), dtype=np.int64)
    key_fields = [col._key_field for col in columns]
    koff = np.zeros(ncols + 1, dtype=np.int64)
    np.cumsum([len(k) for k in key_fields], out=koff[1:])
    kbytes = np.frombuffer(b"".join(key_fields), dtype=np.uint8).copy()
    d = np.empty((n, ncols), dtype=np.int64)
    sizes = np.empty(n, dtype=np.int64)
    described = (ints, kinds, ioff, icnt, offs, koff)
    kern.record_sizes(described, d, sizes)
    roff = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes + RECORD_OVERHEAD if framed else sizes, out=roff[1:])
    out = np.empty(int(roff[-1]), dtype=np.uint8)
    kern.fill_records(described, kbytes, addr, d, roff, out, framed)
    del keep
    if framed:
        if _crc_instruction():
            _load("_jit_encode_crc").frame_crcs(out, roff)
        else:
            _frame_by_backend(out, roff)
    return out, roff


def jit_framed(columns: Sequence[EncodeColumn], n: int) -> Optional[FramedRecords]:
    """The ``n`` records of ``columns``, framed in one buffer (as a file holds them);
    None where the kernels cannot be loaded."""
    built = _build(columns, n, True)
    if built is None:
        return None
    return FramedRecords(built[0].data, n)


def jit_records(columns: Sequence[EncodeColumn], n: int) -> Optional[list[bytes]]:
    """The ``n`` records of ``columns``, one ``bytes`` each; None where the kernels
    cannot be loaded."""
    built = _build(columns, n, False)
    if built is None:
        return None
    out, roff = built
    size = int(roff[1])
    if size and int(roff[-1]) == n * size and bool((np.diff(roff) == size).all()):
        # records of one size: the rows of a void array, made in C
        records: list[bytes] = out.view(np.dtype((np.void, size))).tolist()
        return records
    blob = out.tobytes()
    bounds = roff.tolist()
    return [blob[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
