"""The compiled Example writer's driver: :func:`encode_columns`' records built by numba.

:func:`~._encode_columns.encode_columns` and ``write_examples`` check and convert
their columns as ever (:class:`~._encode_columns._Column`: every error and every
value's conversion stays theirs); where the engine for the batch is ``jit``
(:func:`~._engines.choose`: numba installed and a chunk of ``JIT_MIN_RECORDS`` or more,
or ``TFRECORD_LITE_ENGINE=jit``), the records are then built here, in one
preallocated ``uint8`` buffer, by the kernels of :mod:`._jit_encode_kernels`: one
pass for the sizes, one that writes every record (varints, keys, headers, data)
in order, and, for a file, one that writes the two masked CRC-32C of each record
(:mod:`._jit_encode_crc`, the CPU's CRC instruction on x86-64; elsewhere the
installed CRC backend, record by record). The bytes are those of the NumPy path
and of protobuf's serializer (map entries in the order of the columns).

Nothing is compiled at import: the kernels are loaded by :func:`~._engines.load_kernels`
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
from ._engines import load_kernels as _load
from ._feature_kinds import KIND_BYTES, KIND_FEATURE, KIND_FLOAT, KIND_INT64

__all__ = ["BYTES", "ENCODE_KERNELS", "FEATURE", "FLOATS", "INTS", "jit_framed", "jit_records"]

#: Column kinds, by the header in front of each record's data (the numbering of
#: :mod:`._feature_kinds`): packed varints of an integer array; a FloatList of bytes
#: (float32 rows); a BytesList of one value; none (the data is a whole serialized
#: Feature).
INTS, FLOATS, BYTES, FEATURE = KIND_INT64, KIND_FLOAT, KIND_BYTES, KIND_FEATURE


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


_tables: Optional[np.ndarray] = None
#: The kernel modules the compiled writer runs.
ENCODE_KERNELS = ("_jit_encode_crc", "_jit_encode_kernels")


def crc_kernels() -> tuple[Any, np.ndarray]:
    """The CRC kernels (:mod:`._jit_encode_crc`) and their shift tables (made once)."""
    global _tables
    kern = _load("_jit_encode_crc")
    if _tables is None:
        tables = np.empty((2, 4, 256), dtype=np.uint32)
        kern.shift_tables(tables)
        _tables = tables
    return kern, _tables


def _crc_kernels_here() -> Optional[tuple[Any, np.ndarray]]:
    """:func:`crc_kernels` where the CRC instruction is there and they load, else None."""
    global _hardware_crc
    if not _crc_instruction():
        return None
    try:
        return crc_kernels()
    except Exception:  # (never compiled here: the backend frames from now on)
        _hardware_crc = False
        return None


def _frame_by_backend(out: np.ndarray, roff: np.ndarray) -> None:
    """:func:`._jit_encode_crc.frame_crcs` with the installed CRC backend, record by record."""
    view = memoryview(out)  # type: ignore[arg-type]
    bounds = roff.tolist()
    for a, b in zip(bounds[:-1], bounds[1:]):
        view[a + 8 : a + HEADER_SIZE] = record_header(b - a - RECORD_OVERHEAD)[8:]
        view[b - 4 : b] = footer_of_crc(crc32c(view[a + HEADER_SIZE : b - 4]))


class _Chunk:
    """A chunk's columns as the kernels take them, and every record's size (the first
    pass); :meth:`fill` builds the records."""

    def __init__(self, kern: Any, columns: Sequence[EncodeColumn], n: int, framed: bool) -> None:
        self.kern = kern
        self.framed = framed
        ncols = len(columns)
        kinds = np.array([c.kind for c in columns], dtype=np.int8)
        ioff = np.zeros(ncols, dtype=np.int64)
        icnt = np.zeros(ncols, dtype=np.int64)
        #: offs[i, c]: where record i's data starts in column c's bytes
        offs = np.zeros((n + 1, ncols), dtype=np.int64)
        self.addr = np.zeros(ncols, dtype=np.int64)
        self.keep: list[np.ndarray] = []  # the byte sources, alive as long as the chunk
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
                offs[:, c] = np.arange(n + 1, dtype=np.int64) * data.shape[1]
            else:
                data = np.frombuffer(b"".join(col.source) or b"\0", dtype=np.uint8)
                np.cumsum(col.d, out=offs[1:, c])
            self.keep.append(data)
            self.addr[c] = data.ctypes.data
        if int_parts:
            ints = np.ascontiguousarray(np.concatenate(int_parts, axis=1), dtype=np.int64)
        else:
            ints = np.zeros((n, 0), dtype=np.int64)
        key_fields = [col._key_field for col in columns]
        koff = np.zeros(ncols + 1, dtype=np.int64)
        np.cumsum([len(k) for k in key_fields], out=koff[1:])
        self.kbytes = np.frombuffer(b"".join(key_fields), dtype=np.uint8).copy()
        self.ints, self.kinds, self.ioff, self.icnt, self.offs, self.koff = (
            ints, kinds, ioff, icnt, offs, koff,
        )  # fmt: skip
        self.d = np.empty((n, ncols), dtype=np.int64)
        sizes = np.empty(n, dtype=np.int64)
        kern.record_sizes((ints, kinds, ioff, icnt, offs, koff), self.d, sizes)
        #: where each record begins (n + 1 offsets, framed or not)
        self.roff = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(sizes + RECORD_OVERHEAD if framed else sizes, out=self.roff[1:])
        # each column's map-entry prefix, made once per data size in a row
        self.prefixes = np.empty((ncols, max(map(len, key_fields)) + kern.PREFIX_SLACK), np.uint8)
        self.state = np.full((3, ncols), -1, dtype=np.int64)

    def fill(self) -> np.ndarray:
        """Every record in one new buffer (framed: CRCs too)."""
        size = int(self.roff[-1])
        out = np.empty(size + self.kern.OUT_SLACK, dtype=np.uint8)
        described = (self.ints, self.kinds, self.ioff, self.icnt, self.offs, self.koff)
        self.kern.fill_records(
            described, self.kbytes, self.addr, self.d, self.roff, out, self.framed,
            self.prefixes, self.state,
        )  # fmt: skip
        if self.framed:
            crc = _crc_kernels_here()
            if crc is not None:
                crc[0].frame_crcs(out, self.roff, crc[1])
            else:
                _frame_by_backend(out, self.roff)
        return out[:size]


def _chunk(columns: Sequence[EncodeColumn], n: int, framed: bool) -> Optional[_Chunk]:
    """``columns`` as the kernels take them, sized; None where the kernels cannot be
    loaded."""
    try:
        kern = _load("_jit_encode_kernels")
    except Exception:
        return None
    return _Chunk(kern, columns, n, framed)


def jit_framed(columns: Sequence[EncodeColumn], n: int) -> Optional[FramedRecords]:
    """The ``n`` records of ``columns``, framed in one buffer (as a file holds them);
    None where the kernels cannot be loaded."""
    chunk = _chunk(columns, n, True)
    if chunk is None:
        return None
    return FramedRecords(chunk.fill().data, n)


def jit_records(columns: Sequence[EncodeColumn], n: int) -> Optional[list[bytes]]:
    """The ``n`` records of ``columns``, one ``bytes`` each; None where the kernels
    cannot be loaded."""
    chunk = _chunk(columns, n, False)
    if chunk is None:
        return None
    out, roff = chunk.fill(), chunk.roff
    size = int(roff[1])
    if size and int(roff[-1]) == n * size and bool((np.diff(roff) == size).all()):
        # records of one size: the rows of a void array, made in C
        records: list[bytes] = out.view(np.dtype((np.void, size))).tolist()
        return records
    blob = out.tobytes()
    bounds = roff.tolist()
    return [blob[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
