"""Inflating with the C zlib through :mod:`ctypes`, stopping at deflate block ends.

Python's :mod:`zlib` does not say where deflate blocks end; the C library does,
with ``inflate(strm, Z_BLOCK)`` and ``strm.data_type`` (zlib's ``zran.c``
example builds its seek points that way). This module loads the shared zlib
(``libz.so.1``, ``libz.dylib``, ``zlib1.dll``; the one Python's own module is
usually linked to) and gives :class:`BlockInflater`, which inflates a raw deflate,
GZIP or ZLIB stream and reports each block boundary: its bit position in the
compressed input and its output offset.

Only seek points are built this way; restarting at them needs only Python's zlib
(:mod:`tfrecord_lite._files._restart`). Where no shared zlib can be loaded
(:func:`available` is False), indexes are built without in-stream seek points.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any, Optional

from .. import _settings

__all__ = ["BlockInflater", "ZlibError", "available"]

Z_OK, Z_STREAM_END, Z_NEED_DICT, Z_BUF_ERROR = 0, 1, 2, -5
Z_BLOCK = 5


class ZlibError(Exception):
    """Internal: the C zlib refused the stream (its message)."""


class _ZStream(ctypes.Structure):
    _fields_ = [
        ("next_in", ctypes.c_void_p),
        ("avail_in", ctypes.c_uint),
        ("total_in", ctypes.c_ulong),
        ("next_out", ctypes.c_void_p),
        ("avail_out", ctypes.c_uint),
        ("total_out", ctypes.c_ulong),
        ("msg", ctypes.c_char_p),
        ("state", ctypes.c_void_p),
        ("zalloc", ctypes.c_void_p),
        ("zfree", ctypes.c_void_p),
        ("opaque", ctypes.c_void_p),
        ("data_type", ctypes.c_int),
        ("adler", ctypes.c_ulong),
        ("reserved", ctypes.c_ulong),
    ]


_LIB: Optional[Any] = None
_TRIED = False


def _load() -> Optional[Any]:
    global _LIB, _TRIED
    if _TRIED:
        return _LIB
    _TRIED = True
    if not _settings.system_zlib():  # TFRECORD_LITE_NO_CZLIB, read at the first use
        return None
    names = ["libz.so.1", "libz.dylib", "zlib1.dll"]
    found = ctypes.util.find_library("z") or ctypes.util.find_library("zlib1")
    if found:
        names.insert(0, found)
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            lib.zlibVersion.restype = ctypes.c_char_p
            lib.inflateInit2_.argtypes = [
                ctypes.POINTER(_ZStream),
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_int,
            ]
            lib.inflate.argtypes = [ctypes.POINTER(_ZStream), ctypes.c_int]
            lib.inflateEnd.argtypes = [ctypes.POINTER(_ZStream)]
            lib.inflateReset.argtypes = [ctypes.POINTER(_ZStream)]
            version = lib.zlibVersion()
            if not version or int(version.split(b".")[0]) < 1:
                continue
        except (OSError, AttributeError, ValueError):
            continue
        _LIB = lib
        return lib
    return None


def available() -> bool:
    """Whether a shared C zlib can be loaded (seek points inside a deflate stream)."""
    return sys.platform != "emscripten" and _load() is not None


class BlockInflater:
    """One inflate stream (``wbits`` as for :func:`zlib.decompressobj`), one block at a time.

    Feed compressed bytes with :meth:`feed`; :meth:`step` inflates until the end of
    a block, the end of the stream, a full output buffer or the end of the input,
    and returns the output it made. After each step, :attr:`at_block` tells whether
    the inflater stands at a block boundary (not after the last block) and
    :attr:`bit_pos` is then that boundary's position in bits from the first byte
    fed; :attr:`eof` is the end of the stream.
    """

    def __init__(self, wbits: int, out_size: int = 256 * 1024) -> None:
        self._live = False  # set first: __del__ runs even when __init__ raises
        lib = _load()
        if lib is None:
            raise ZlibError("no shared zlib library could be loaded")
        self._lib = lib
        self._strm = _ZStream()
        ret = lib.inflateInit2_(
            ctypes.byref(self._strm), wbits, lib.zlibVersion(), ctypes.sizeof(_ZStream)
        )
        if ret != Z_OK:
            raise ZlibError(f"inflateInit2 failed ({ret})")
        self._live = True
        self._out = ctypes.create_string_buffer(out_size)
        self._out_size = out_size
        self._data = b""  # the bytes fed last (kept alive: next_in points into them)
        self._fed = 0  # bytes fed since the stream started
        self.eof = False
        self.at_block = False
        self.bit_pos = 0

    def reset(self) -> None:
        """Start a new stream (the next GZIP member), keeping the buffers."""
        if self._lib.inflateReset(ctypes.byref(self._strm)) != Z_OK:
            raise ZlibError("inflateReset failed")
        self._strm.avail_in = 0
        self._data = b""
        self._fed = 0
        self.eof = False
        self.at_block = False
        self.bit_pos = 0

    def feed(self, data: bytes, start: int = 0) -> None:
        """Give the next compressed bytes, ``data[start:]`` (not copied), once the
        previous ones are used up."""
        if self._strm.avail_in:
            raise ZlibError("feed() before the previous input was used")
        self._data = data
        base = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0
        self._strm.next_in = base + start
        self._strm.avail_in = len(data) - start
        self._fed += len(data) - start

    @property
    def pending_input(self) -> int:
        """Compressed bytes fed and not yet used."""
        return int(self._strm.avail_in)

    @property
    def consumed(self) -> int:
        """Compressed bytes used since the stream started."""
        return self._fed - int(self._strm.avail_in)

    def unused(self) -> tuple[bytes, int]:
        """The bytes fed and not used (after the end of the stream: what follows it),
        as the bytes fed last and where in them the unused ones start."""
        return self._data, len(self._data) - int(self._strm.avail_in)

    def step(self) -> bytes:
        """Inflate up to the next block boundary (or a full output buffer); the output."""
        strm = self._strm
        strm.next_out = ctypes.addressof(self._out)
        strm.avail_out = self._out_size
        ret = self._lib.inflate(ctypes.byref(strm), Z_BLOCK)
        made = self._out_size - int(strm.avail_out)
        if ret == Z_STREAM_END:
            self.eof = True
        elif ret == Z_NEED_DICT:
            raise ZlibError("the stream needs a preset dictionary")
        elif ret not in (Z_OK, Z_BUF_ERROR):
            msg = strm.msg.decode("ascii", "replace") if strm.msg else f"error {ret}"
            raise ZlibError(msg)
        dt = int(strm.data_type)
        self.at_block = bool(dt & 128) and not (dt & 64) and not self.eof
        if self.at_block:
            self.bit_pos = 8 * self.consumed - (dt & 7)
        out: bytes = ctypes.string_at(self._out, made) if made else b""
        return out

    def close(self) -> None:
        """Free the C stream. Idempotent."""
        if self._live:
            self._lib.inflateEnd(ctypes.byref(self._strm))
            self._live = False

    def __del__(self) -> None:
        self.close()
