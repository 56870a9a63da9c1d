"""The compiled length follower: the record scan's one sequential loop, in numba.

:func:`follow_lengths` has the contract of
:func:`tfrecord_lite._record.follow_lengths` (where each complete record of a
block starts, where they stop, and the length claimed by the incomplete record
there): the block scan reads one length field after another there, and this
loop, compiled with ``nogil=True``, does it without the interpreter lock, in a
few ns a record (0.25 µs in Python), so a thread that frames the next blocks
runs beside the one that parses. Only :mod:`._framing` imports this module, in
the background, once the compiled kernels are loaded (numba is imported by then),
and lends the function to the record scan
(:func:`tfrecord_lite._record.use_length_follower`).

Nothing of this package is compiled in here, so numba's check of this file's
time stamp keeps its cache right.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, TypeVar

import numba
import numpy as np

from ..._record import HEADER_SIZE, RECORD_OVERHEAD, Buffer
from ..._record import follow_lengths as python_follow_lengths

__all__ = ["follow_lengths"]

_t = numba.types
_BUF = _t.Array(_t.uint8, 1, "C", readonly=True)
_I64 = _t.Array(_t.int64, 1, "C")
_tuple: Any = _t.Tuple
_SIGNATURE = _tuple((_t.int64, _t.int64, _t.uint64, _t.boolean))(_BUF, _t.int64, _t.int64, _I64)
_OPTIONS: dict[str, Any] = {"nogil": True, "cache": True, "_nrt": False}
_F = TypeVar("_F", bound=Callable[..., Any])
_compile: Callable[[_F], _F] = numba.njit(_SIGNATURE, **_OPTIONS)
_OVERHEAD = RECORD_OVERHEAD


@_compile
def _follow(
    buf: np.ndarray, pos: Any, cap: int, starts: np.ndarray
) -> tuple[int, int, Any, bool]:  # pragma: no cover (compiled)
    """From ``pos``: (records found, where they stop, the length field there, whether
    that record is incomplete), at most ``cap`` records (``cap < 0``: no cap)."""
    end = buf.size
    n = 0
    while pos <= end - 8 and n != cap:
        length = np.uint64(0)
        for i in range(8):
            length |= np.uint64(buf[pos + i]) << np.uint64(8 * i)
        room = end - pos - _OVERHEAD  # (the data bytes the buffer has room for)
        if room < 0 or length > np.uint64(room):
            return n, pos, length, True
        starts[n] = pos
        n += 1
        pos += np.int64(length) + _OVERHEAD
    return n, pos, np.uint64(0), False


def follow_lengths(buf: Buffer, pos: int, cap: int = -1) -> tuple[np.ndarray, int, Optional[int]]:
    """:func:`tfrecord_lite._record.follow_lengths`, compiled (module docstring)."""
    if isinstance(buf, memoryview) and (buf.itemsize != 1 or not buf.c_contiguous):
        return python_follow_lengths(buf, pos, cap)
    data = np.frombuffer(buf, dtype=np.uint8)
    if data.flags.writeable:
        data = data.view()
        data.flags.writeable = False
    end = len(data)
    room = max(end - pos, 0) // _OVERHEAD  # (every complete record takes 16 bytes or more)
    if cap >= 0:
        cap = min(cap, room + 1)  # (never reached beyond ``room``: the same as ``cap``)
        room = min(room, cap)
    starts = np.empty(room, dtype=np.int64)
    n, stop, length, incomplete = _follow(data, pos, cap, starts)
    claimed = int(length) if incomplete and stop + HEADER_SIZE <= end else None
    return starts[:n], int(stop), claimed
