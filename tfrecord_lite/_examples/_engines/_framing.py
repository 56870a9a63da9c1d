"""Lending the record scan the compiled length follower, once the kernels are loaded.

The record layer (:mod:`tfrecord_lite._record`) follows a block's length fields in
Python unless a layer above lends it a faster loop
(:func:`~tfrecord_lite._record.use_length_follower`). :func:`install` lends it
:mod:`._jit_framing`'s, compiled with ``nogil=True``: called at every batch the engine
chooses for (:func:`~._choose.choose`), it does nothing until the compiled kernels
are loaded (numba is imported by then, in the background: :mod:`._kernels`), then,
once per process, imports :mod:`._jit_framing` on a thread of its own, so no read
waits for it. The import reads the kernel from numba's cache, in the kernels'
private cache directory (:mod:`._kernels`), or compiles it there (a small function:
well under a second, on that thread). The follower is lent only after it has given
exactly what the Python one gives on a few blocks, intact, cut and damaged; should
anything fail, the Python follower stays.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..._record import encode_records, follow_lengths, use_length_follower
from . import _kernels

__all__ = ["install", "install_now", "installed"]

_started = False
_done = threading.Event()
_lent = False


def installed() -> bool:
    """Whether the record scan follows length fields with the compiled loop."""
    return _lent


def install() -> None:
    """Lend the compiled length follower, in the background, once the compiled
    kernels are loaded (module docstring); cheap to call at every batch."""
    global _started
    if _started or not _kernels.loaded():
        return
    _started = True
    threading.Thread(target=install_now, name="tfrecord_lite-framing", daemon=True).start()


def install_now() -> bool:
    """Import the compiled follower (reading or filling numba's cache) and lend it,
    waiting; True when it is in use. Where numba is not installed or the kernel does
    not load, the Python follower stays (False)."""
    global _lent
    if _lent:
        return True
    try:
        follow = _import()
        if not _agrees(follow):
            return False
        use_length_follower(follow)
        _lent = True
    except Exception:  # (no numba, or a compile that failed: the Python loop goes on)
        return False
    finally:
        _done.set()
    return True


def _import() -> Any:
    import numba  # (imported already where the kernels are loaded)

    config: Any = numba.config
    # numba's cache setting is the process's: changed only under the loader's lock,
    # and put back, as the loader does for the kernels (:func:`._kernels.load`).
    with _kernels._lock:
        before = config.CACHE_DIR
        config.CACHE_DIR = _kernels._cache_dir()
        try:
            from . import _jit_framing
        finally:
            config.CACHE_DIR = before
    return _jit_framing.follow_lengths


def _agrees(follow: Any) -> bool:
    """Whether ``follow`` gives what the Python follower gives on a few blocks."""
    block = encode_records([b"", b"a" * 5, b"b" * 300, b"c" * 2])
    damaged = bytearray(block)
    damaged[17:25] = (2**64 - 1).to_bytes(8, "little")
    for buf in (block, block[:-3], block[:20], bytes(damaged), bytearray(block)):
        for pos in (0, 16):
            for cap in (-1, 0, 2, 10):
                a, b = follow(buf, pos, cap), follow_lengths(buf, pos, cap)
                if not (np.array_equal(a[0], b[0]) and a[1:] == b[1:]):
                    return False
    return True
