"""The compiled Example writer: numba kernels that build a chunk's records from columns.

Plain Python functions over NumPy arrays, compiled by numba when this module is
imported (explicit signatures, ``nogil=True``, ``cache=True``, no reference
counting): only :mod:`._jit_encode` imports it, through :func:`~._engines.load_kernels`, the
first time a large enough chunk is written with the ``jit`` engine, never
``import tfrecord_lite``.

Columns are described the way :mod:`._encode_columns` sees them, one ``kind`` per
column (the header in front of its data: :data:`._jit_encode.INTS` ...). Integer columns
are the ``ints`` array's columns ``ioff[c]:ioff[c] + icnt[c]`` (the varints are
written here); every other column is a run of bytes per record, ``offs[i, c]`` to
``offs[i + 1, c]`` in a buffer at the address ``addr[c]`` (the column's own array
or joined bytes, kept alive by the caller for the call). Two passes:
:func:`record_sizes` gives each record's data size per column and its size,
:func:`fill_records` writes the records, one after the other, at ``roff[i]``,
framed or not (a framed record's 8 length bytes are written here, its two CRCs
by :mod:`._jit_encode_crc`, or by the CRC backend where that module cannot be
compiled).

Bytes written for a record (proto3, as protobuf's serializer writes them)::

    0a len(body)                                   Example.features
      0a len(entry) 0a len(key) key 12 len(f) ...  one map entry per column
        1a len 0a len(d) <d varint bytes>          Int64List, packed (1a 00 if empty)
        12 len 0a len(d) <d float32 bytes>         FloatList, packed (12 00 if empty)
        0a len 0a len(d) <d bytes>                 BytesList of one value
        <d bytes>                                  a whole serialized Feature
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, TypeVar

import numba
import numpy as np
from numba.core import cgutils
from numba.extending import intrinsic

from ._feature_kinds import KIND_BYTES as BYTES
from ._feature_kinds import KIND_FEATURE as FEATURE
from ._feature_kinds import KIND_INT64 as INTS

__all__ = ["OUT_SLACK", "PREFIX_SLACK", "fill_records", "record_sizes"]

_OPTIONS: dict[str, Any] = {"nogil": True, "cache": True, "_nrt": False}
_F = TypeVar("_F", bound=Callable[..., Any])
#: The helpers are inlined by numba itself (each call passes the output array's
#: whole structure otherwise: as calls, they were most of a record's time).
_jit: Callable[[_F], _F] = numba.njit(inline="always", **_OPTIONS)
_t = numba.types
_I64, _I8, _U8 = (_t.Array(d, 1, "C") for d in (_t.int64, _t.int8, _t.uint8))
_I64_2D, _U8_2D = (_t.Array(d, 2, "C") for d in (_t.int64, _t.uint8))
_ir: Any = importlib.import_module("llvmlite.ir")  # (llvmlite, numba's, has no type hints)
_memcpy: Any = cgutils.raw_memcpy


def _copy_from_typing(typingctx: Any, out: Any, p: Any, address: Any, n: Any) -> Any:
    """Copy ``n`` bytes from ``address`` (an int64 from ``ndarray.ctypes.data``) to
    ``out[p:p+n]`` (one ``memcpy``)."""
    sig = _t.void(out, _t.int64, _t.int64, _t.int64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        array = context.make_array(signature.args[0])(context, builder, args[0])
        dst = builder.gep(array.data, [args[1]])
        src = builder.inttoptr(args[2], _ir.IntType(8).as_pointer())
        _memcpy(builder, dst, src, args[3], context.get_constant(_t.int64, 1))
        return context.get_dummy_value()

    return sig, codegen


_copy_from: Any = intrinsic(_copy_from_typing)


def _word_at_typing(typingctx: Any, buf: Any, p: Any) -> Any:
    """The 8 bytes at ``buf[p]`` as a little-endian uint64 (an unaligned load)."""
    sig = _t.uint64(buf, _t.int64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        array = context.make_array(signature.args[0])(context, builder, args[0])
        where = builder.bitcast(builder.gep(array.data, [args[1]]), _ir.IntType(64).as_pointer())
        return builder.load(where, align=1)

    return sig, codegen


_word_at: Any = intrinsic(_word_at_typing)


def _put_word_typing(typingctx: Any, buf: Any, p: Any, word: Any) -> Any:
    """Store ``word`` at ``buf[p:p+8]``, little-endian (an unaligned store)."""
    sig = _t.void(buf, _t.int64, _t.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        array = context.make_array(signature.args[0])(context, builder, args[0])
        where = builder.bitcast(builder.gep(array.data, [args[1]]), _ir.IntType(64).as_pointer())
        builder.store(args[2], where, align=1)
        return context.get_dummy_value()

    return sig, codegen


_put_word: Any = intrinsic(_put_word_typing)


@_jit
def _vsize(v: np.uint64) -> int:
    """Bytes of the varint of ``v``."""
    n = 1
    while v >= np.uint64(0x80):
        v >>= np.uint64(7)
        n += 1
    return n


@_jit
def _put(out: np.ndarray, p: int, v: np.uint64) -> int:
    """The varint of ``v`` written at ``p``; the position after it."""
    while v >= np.uint64(0x80):
        out[p] = np.uint8((v & np.uint64(0x7F)) | np.uint64(0x80))
        v >>= np.uint64(7)
        p += 1
    out[p] = np.uint8(v)
    return p + 1


@_jit
def _list_size(d: int) -> int:
    """Bytes of a one-field list message (``0a len(d)`` + d bytes) in front of its data."""
    return 1 + _vsize(np.uint64(d))


@_jit
def _head_size(kind: int, d: int) -> int:
    """Bytes of a Feature's header in front of ``d`` bytes of data of ``kind``."""
    if kind == FEATURE:
        return 0
    if d == 0 and kind != BYTES:
        return 2
    inner = _list_size(d) + d
    return 1 + _vsize(np.uint64(inner)) + _list_size(d)


@_jit
def _entry_sizes(klen: int, kind: int, d: int) -> tuple[int, int]:
    """(size of the map entry's message, of its value field ``f``)."""
    f = _head_size(kind, d) + d
    return klen + 1 + _vsize(np.uint64(f)) + f, f


@_jit
def _body_size(kinds: np.ndarray, koff: np.ndarray, d: np.ndarray, i: int) -> int:
    """Bytes of record ``i``'s ``Features`` message (every column's map entry)."""
    body = 0
    for c in range(len(kinds)):
        entry, _ = _entry_sizes(koff[c + 1] - koff[c], kinds[c], d[i, c])
        body += 1 + _vsize(np.uint64(entry)) + entry
    return body


#: The columns, as :func:`record_sizes` and :func:`fill_records` take them: ``(ints,
#: kinds, ioff, icnt, offs, koff)`` (see the module's docstring).
_tuple: Any = _t.Tuple
_COLUMNS = _tuple((_I64_2D, _I8, _I64, _I64, _I64_2D, _I64))


@numba.njit(_t.void(_COLUMNS, _I64_2D, _I64), **_OPTIONS)
def record_sizes(columns: Any, d: np.ndarray, sizes: np.ndarray) -> None:
    """Each record's data size per column (``d[i, c]``) and its size (``sizes[i]``)."""
    ints, kinds, ioff, icnt, offs, koff = columns
    n, ncols = d.shape
    for i in range(n):
        for c in range(ncols):
            if kinds[c] == INTS:
                size = 0
                for j in range(ioff[c], ioff[c] + icnt[c]):
                    size += _vsize(np.uint64(ints[i, j]))
            else:
                size = offs[i + 1, c] - offs[i, c]
            d[i, c] = size
        body = _body_size(kinds, koff, d, i)
        sizes[i] = 1 + _vsize(np.uint64(body)) + body


@_jit
def _put_prefix(
    out: np.ndarray, kbytes: np.ndarray, koff: np.ndarray, c: int, kind: int, size: int
) -> int:
    """Column ``c``'s map-entry bytes in front of ``size`` bytes of data, written at
    ``out[0:]``; their number."""
    entry, f = _entry_sizes(koff[c + 1] - koff[c], kind, size)
    out[0] = 0x0A
    p = _put(out, 1, np.uint64(entry))
    for j in range(koff[c], koff[c + 1]):
        out[p] = kbytes[j]
        p += 1
    out[p] = 0x12
    p = _put(out, p + 1, np.uint64(f))
    if kind != FEATURE:
        out[p] = (kind << 3) | 2  # (the list's tag: its field number is the kind)
        if size == 0 and kind != BYTES:
            out[p + 1] = 0
            p += 2
        else:
            p = _put(out, p + 1, np.uint64(_list_size(size) + size))
            out[p] = 0x0A
            p = _put(out, p + 1, np.uint64(size))
    return p


#: Bytes of a prefix row besides the longest key field: the prefix's tags and varints
#: (44 at most) and the 7 bytes its last 8-byte word may read past it.
PREFIX_SLACK = 56
#: Bytes the output needs after its last record: a prefix's last word may write 7
#: bytes past it (bytes written over later in a record, or after the last one).
OUT_SLACK = 8


@numba.njit(
    _t.void(_COLUMNS, _U8, _I64, _I64_2D, _I64, _U8, _t.boolean, _U8_2D, _I64_2D), **_OPTIONS
)
def fill_records(
    columns: Any,
    kbytes: np.ndarray,
    addr: np.ndarray,
    d: np.ndarray,
    roff: np.ndarray,
    out: np.ndarray,
    framed: bool,
    prefixes: np.ndarray,
    state: np.ndarray,
) -> None:
    """Write record ``i`` at ``out[roff[i]:roff[i + 1]]`` (framed: its length first,
    room for the two CRCs left); ``kbytes``: the key fields one after the other.

    Each column's map-entry prefix is made once per data size in a row (``prefixes[c]``,
    a row of key field + :data:`PREFIX_SLACK` bytes; ``state``: (3, ncols), set to -1:
    the size it was made for, its length, the entry's length with the data), and
    copied 8 bytes at a time: ``out`` has :data:`OUT_SLACK` bytes after the records.
    """
    ints, kinds, ioff, icnt, offs, koff = columns
    n, ncols = d.shape
    for i in range(n):
        p = roff[i]
        if framed:
            length = roff[i + 1] - p - 16
            for j in range(8):
                out[p + j] = np.uint8((length >> (8 * j)) & 0xFF)
            p += 12
        body = 0
        for c in range(ncols):
            size = d[i, c]
            if size != state[0, c]:
                made = _put_prefix(prefixes[c], kbytes, koff, c, kinds[c], size)
                state[0, c], state[1, c], state[2, c] = size, made, made + size
            body += state[2, c]
        out[p] = 0x0A
        p = _put(out, p + 1, np.uint64(body))
        for c in range(ncols):
            row = prefixes[c]
            for j in range(0, state[1, c], 8):  # (word by word: see OUT_SLACK)
                _put_word(out, p + j, _word_at(row, j))
            p += state[1, c]
            size = d[i, c]
            if kinds[c] == INTS:
                for j in range(ioff[c], ioff[c] + icnt[c]):
                    p = _put(out, p, np.uint64(ints[i, j]))
            else:
                _copy_from(out, p, addr[c] + offs[i, c], size)
                p += size
