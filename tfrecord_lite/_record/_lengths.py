"""Following a block's length fields: where each record starts (sans-I/O).

Record ``k + 1`` starts where record ``k`` ends, so the records of a block are
found by reading one length field after another: :func:`follow_lengths`. It is
the one sequential step of the block scan (:mod:`._scan`); all else there is
done with NumPy over every record at once. This loop in Python takes about
0.25 µs a record and holds the interpreter lock throughout.

**A compiled follower.** :func:`use_length_follower` replaces it with a function
of the same contract (the compiled engine installs a numba kernel compiled with
``nogil=True`` once its kernels are loaded, so framing a block lets other threads
run, and costs a few ns a record); ``None`` puts the Python one back.
:func:`length_follower` gives the one in use. This package never imports numba
itself: the hook is how a layer above lends it a faster loop, and whatever
follower is in use, the outcome must be exactly the Python one's.

The contract: ``follow(buf, pos, cap)`` reads the length fields of ``buf``
(``bytes``-like, contiguous) from offset ``pos`` and gives ``(starts, stop,
length)``:

* ``starts``: where each *complete* record starts (int64 array), at most ``cap``
  of them (``cap < 0``: no cap), ``starts[0] == pos`` when there is one;
* ``stop``: where the records stopped: the end of the last complete one (``pos``
  when there is none);
* ``length``: the length field of the incomplete record at ``stop`` when its
  whole 12-byte header is in ``buf`` (its length CRC can be checked, and what it
  claims can be weighed against the stream's size), else ``None`` (fewer than 12
  bytes there, or ``cap`` records were found).

A length field is never trusted beyond what it says: a length that runs past the
buffer makes its record incomplete, however large (up to ``2**64 - 1``).
"""

from __future__ import annotations

import struct
from typing import Callable, Optional, Union

import numpy as np

from ._format import HEADER_SIZE, LENGTH
from ._format import RECORD_OVERHEAD as OVERHEAD

__all__ = ["Follower", "follow_lengths", "length_follower", "use_length_follower"]

Buffer = Union[bytes, bytearray, memoryview]
#: ``follow(buf, pos, cap) -> (starts, stop, length)`` (module docstring).
Follower = Callable[[Buffer, int, int], tuple[np.ndarray, int, Optional[int]]]


def follow_lengths(buf: Buffer, pos: int, cap: int = -1) -> tuple[np.ndarray, int, Optional[int]]:
    """The Python follower (module docstring): the reference for every other."""
    end = len(buf)
    chain = [pos]
    add = chain.append
    unpack = LENGTH.unpack_from
    if cap < 0:
        # Only reads and adds: a length that runs past the buffer ends the loop when
        # the next read fails; which records are complete is sorted out below.
        try:
            while True:
                pos += unpack(buf, pos)[0] + OVERHEAD
                add(pos)
        except (struct.error, OverflowError):
            pass
    else:
        last = end - 8
        while pos <= last and cap:
            pos += unpack(buf, pos)[0] + OVERHEAD
            add(pos)
            if pos > end:
                break
            cap -= 1
    # Every position but the last is at most ``end - 8``; the last may be anything.
    n = len(chain) - 1  # records whose length was read
    beyond = chain[-1]
    length: Optional[int] = None
    if beyond > end:
        n -= 1  # the last record read is incomplete
        stop = chain[n]
        if stop + HEADER_SIZE <= end:
            length = beyond - stop - OVERHEAD
    else:
        stop = beyond  # (fewer than 8 bytes after it, or ``cap`` records found)
    return np.array(chain[:n], dtype=np.int64), stop, length


_follower: Follower = follow_lengths


def use_length_follower(follow: Optional[Follower]) -> None:
    """Follow length fields with ``follow`` from now on (``None``: the Python
    :func:`follow_lengths`). It must give exactly what :func:`follow_lengths`
    gives, for any bytes."""
    global _follower
    _follower = follow_lengths if follow is None else follow


def length_follower() -> Follower:
    """The follower in use (:func:`use_length_follower`)."""
    return _follower
