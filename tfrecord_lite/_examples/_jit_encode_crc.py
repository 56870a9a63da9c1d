"""The compiled writer's framing CRCs: CRC-32C by the CPU's SSE4.2 instruction, in numba.

:func:`frame_crcs` fills in the two masked CRC-32C checksums of every record that
:func:`._jit_encode_kernels.fill_records` framed (of the 8 length bytes, and of
the data), reading each record once, 8 bytes per ``crc32`` instruction. Data of
:data:`BLOCK` * 3 bytes or more goes three words at a time (three streams of
``BLOCK`` bytes, whose CRCs are joined by shifting the first two over the bytes
after them: :func:`shift_tables`), as the instruction takes a new word every
cycle but gives its result only three cycles later. The instruction is reached through LLVM's ``llvm.x86.sse42.crc32`` intrinsics, so this
module compiles only for an x86-64 CPU with SSE4.2: :mod:`._jit_encode` imports it
(through :func:`~._engines.load_kernels`) only where numba compiles for such a CPU, and
elsewhere masks the CRCs of the installed backend (:func:`tfrecord_lite.crc32c`)
itself. The masking is TensorFlow's (:func:`tfrecord_lite._record.mask`).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, TypeVar

import numba
import numpy as np
from numba.extending import intrinsic

from ._jit_encode_kernels import _word_at

__all__ = ["BLOCK", "crc32c", "frame_crcs", "shift_tables"]

#: Bytes of each of the three streams of a block.
BLOCK = 128

_t = numba.types
_U8 = _t.Array(_t.uint8, 1, "C")
_I64 = _t.Array(_t.int64, 1, "C")
_U32_3D = _t.Array(_t.uint32, 3, "C")
_OPTIONS: dict[str, Any] = {"nogil": True, "cache": True, "_nrt": False}
_F = TypeVar("_F", bound=Callable[..., Any])
_jit: Callable[[_F], _F] = numba.njit(inline="always", **_OPTIONS)
_ir: Any = importlib.import_module("llvmlite.ir")  # (llvmlite, numba's, has no type hints)

_MASK_DELTA = np.uint32(0xA282EAD8)


def _crc_step(bits: int) -> Any:
    """The ``crc32`` instruction (SSE4.2) on ``bits`` more bits of data: 64 (a running
    CRC in a uint64, a word) or 8 (a running CRC in a uint32, a byte)."""
    crc_type, data_type = (_t.uint64, _t.uint64) if bits == 64 else (_t.uint32, _t.uint8)
    name = "llvm.x86.sse42.crc32.64.64" if bits == 64 else "llvm.x86.sse42.crc32.32.8"

    def typing(typingctx: Any, crc: Any, data: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            crc_ir = _ir.IntType(64 if bits == 64 else 32)
            fnty = _ir.FunctionType(crc_ir, [crc_ir, _ir.IntType(bits)])
            return builder.call(builder.module.declare_intrinsic(name, fnty=fnty), args)

        return crc_type(crc_type, data_type), codegen

    typing.__name__ = typing.__qualname__ = f"_crc_step{bits}"
    return intrinsic(typing)


_crc_word: Any = _crc_step(64)
_crc_byte: Any = _crc_step(8)


@numba.njit(_t.void(_U32_3D), **_OPTIONS)
def shift_tables(tables: np.ndarray) -> None:
    """Fill ``tables`` (2, 4, 256): ``tables[k, j, b]`` is the CRC register ``b << 8j``
    after ``(k + 1) * BLOCK`` zero bytes (a register's shift over that many bytes is
    the XOR of its four bytes' entries: the CRC is linear)."""
    for k in range(2):
        for j in range(4):
            for b in range(256):
                crc = np.uint64(b) << np.uint64(8 * j)
                for _ in range((k + 1) * BLOCK // 8):
                    crc = _crc_word(crc, np.uint64(0))
                tables[k, j, b] = np.uint32(crc)


@_jit
def _shifted(tables: np.ndarray, k: int, crc: np.uint64) -> np.uint64:
    """The register ``crc`` shifted over ``(k + 1) * BLOCK`` zero bytes."""
    c = np.uint32(crc)
    return np.uint64(
        tables[k, 0, c & np.uint32(0xFF)]
        ^ tables[k, 1, (c >> np.uint32(8)) & np.uint32(0xFF)]
        ^ tables[k, 2, (c >> np.uint32(16)) & np.uint32(0xFF)]
        ^ tables[k, 3, c >> np.uint32(24)]
    )


@numba.njit(_t.uint32(_U8, _t.int64, _t.int64, _U32_3D), **_OPTIONS)
def crc32c(buf: np.ndarray, p: int, n: int, tables: np.ndarray) -> np.uint32:
    """CRC-32C of ``buf[p:p+n]`` (``tables``: from :func:`shift_tables`)."""
    crc = np.uint64(0xFFFFFFFF)
    end = p + n
    while end - p >= 3 * BLOCK:
        second = np.uint64(0)
        third = np.uint64(0)
        for q in range(p, p + BLOCK, 8):
            crc = _crc_word(crc, _word_at(buf, q))
            second = _crc_word(second, _word_at(buf, q + BLOCK))
            third = _crc_word(third, _word_at(buf, q + 2 * BLOCK))
        crc = _shifted(tables, 1, crc) ^ _shifted(tables, 0, second) ^ third
        p += 3 * BLOCK
    while p + 8 <= end:
        crc = _crc_word(crc, _word_at(buf, p))
        p += 8
    small = np.uint32(crc)
    while p < end:
        small = _crc_byte(small, buf[p])
        p += 1
    return small ^ np.uint32(0xFFFFFFFF)


@_jit
def _put_masked(out: np.ndarray, p: int, crc: np.uint32) -> None:
    """TensorFlow's masked form of ``crc`` at ``out[p:p+4]``, little-endian."""
    masked = ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + _MASK_DELTA
    for j in range(4):
        out[p + j] = np.uint8((masked >> np.uint32(8 * j)) & np.uint32(0xFF))


@numba.njit(_t.void(_U8, _I64, _U32_3D), **_OPTIONS)
def frame_crcs(out: np.ndarray, roff: np.ndarray, tables: np.ndarray) -> None:
    """The header and footer CRCs of the framed records at ``out[roff[i]:roff[i + 1]]``."""
    for i in range(len(roff) - 1):
        p = roff[i]
        end = roff[i + 1]
        _put_masked(out, p + 8, crc32c(out, p, 8, tables))
        _put_masked(out, end - 4, crc32c(out, p + 12, end - p - 16, tables))
