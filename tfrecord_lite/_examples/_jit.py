"""The parse engines: which extractor a batch goes through, and the compiled one's driver.

Two engines extract Example columns, with identical results (values, shapes,
errors): ``numpy``, the vectorized walk (:func:`~._extract.extract`, always
there), and ``jit``, the numba kernels of :mod:`._jit_kernels` (with the
``jit`` extra: ``pip install 'tfrecord-lite-np[jit]'``). Records either leaves
undecided go to the protobuf reference path.

The engine is chosen at run time from ``TFRECORD_LITE_ENGINE``: ``numpy`` (the
default, also ``auto``), or ``jit`` (without numba installed: ``ImportError``).
The compiled walk is correct (tested equal to the reference path) but not yet
faster than the NumPy one on the benchmark data, so ``auto`` does not pick it
yet; where it does, a batch of fewer than :data:`JIT_MIN_RECORDS` records (a
single record, a CLI ``head``) stays on ``numpy`` and never waits for a
compile (:data:`AUTO_PICKS_JIT`). ``TFRECORD_LITE_FASTPATH=0`` turns both off
(protobuf only, for debugging).

Nothing compiles at ``import tfrecord_lite``: numba is imported, and the kernels
compiled or loaded from numba's on-disk cache, the first time a batch needs them.
The cache sits beside the package; where that directory is read-only, numba's
own user-wide directory is used, and where neither can be written, a
directory under the system's temporary folder. A cache that cannot be read
(corrupt, or written by another numba) is set aside: the kernels are compiled
afresh without it, and should that fail too, the ``numpy`` engine is used for the
rest of the process (with one ``RuntimeWarning``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import tempfile
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from ._extract import _record_lengths
from ._extracted import FastColumn, _contiguous
from ._schema import DType, float32, int64, string
from ._walk import _bytes_objects

__all__ = ["JitTable", "engine", "jit_available", "jit_extract"]

ENGINE_VARIABLE = "TFRECORD_LITE_ENGINE"
#: Batches of fewer records take the ``numpy`` engine when no engine is forced.
JIT_MIN_RECORDS = 64
#: Whether ``auto`` picks ``jit`` (for batches of :data:`JIT_MIN_RECORDS` or more)
#: where numba is installed: off until the compiled walk is faster than the NumPy one.
AUTO_PICKS_JIT = False

_KIND_OF = {"string": 1, "float32": 2, "int64": 3}
_lock = threading.Lock()
_kernels: Any = None
_broken: Optional[str] = None


def jit_available() -> bool:
    """Whether numba is installed (found without importing it)."""
    return _broken is None and importlib.util.find_spec("numba") is not None


def engine(n: int) -> str:
    """The engine for a batch of ``n`` records: ``"jit"`` or ``"numpy"``."""
    forced = os.environ.get(ENGINE_VARIABLE, "").strip().lower()
    if forced in ("", "auto"):
        use = AUTO_PICKS_JIT and n >= JIT_MIN_RECORDS and jit_available()
        return "jit" if use else "numpy"
    if forced == "numpy":
        return "numpy"
    if forced == "jit":
        if importlib.util.find_spec("numba") is None:
            raise ImportError(
                f"{ENGINE_VARIABLE}=jit needs numba: pip install 'tfrecord-lite-np[jit]'"
            )
        return "jit"
    raise ValueError(f"{ENGINE_VARIABLE} must be auto, numpy or jit, not {forced!r}")


def _writable(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path):
            return True
    except OSError:
        return False


def _cache_dir() -> Optional[str]:
    """A cache directory to give numba where neither the package's ``__pycache__``
    nor numba's user-wide one can be written (None: numba's own choice works)."""
    import numba

    config: Any = numba.config
    if config.CACHE_DIR:
        return None
    here = os.path.join(os.path.dirname(__file__), "__pycache__")
    if _writable(here):
        return None
    user = os.path.join(os.path.expanduser("~"), ".cache", "tfrecord_lite", "numba")
    if _writable(user):
        return user
    return os.path.join(tempfile.gettempdir(), f"tfrecord_lite-numba-{os.getuid()}")


def _load() -> Any:
    """The compiled kernels (compiled now, or read from the cache)."""
    global _kernels, _broken
    if _kernels is not None:
        return _kernels
    with _lock:
        if _kernels is not None:
            return _kernels
        import numba

        config: Any = numba.config
        where = _cache_dir()
        if where is not None:
            config.CACHE_DIR = where
        try:
            from . import _jit_kernels

            _kernels = _jit_kernels
        except Exception as first:  # an unreadable cache: compile without it
            config.CACHE_DIR = tempfile.mkdtemp(prefix="tfrecord_lite-numba-")
            try:
                import sys

                sys.modules.pop(f"{__package__}._jit_kernels", None)
                _kernels = importlib.import_module(f"{__package__}._jit_kernels")
            except Exception as err:
                _broken = f"{type(first).__name__}: {first}; then {type(err).__name__}: {err}"
                warnings.warn(
                    f"tfrecord_lite: the compiled parse engine is off ({_broken}); "
                    "parsing goes on with the numpy engine",
                    RuntimeWarning,
                    stacklevel=3,
                )
                raise
    return _kernels


def _fnv1a(key: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in key:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


class JitTable:
    """The keys a plan reads, as the kernels look them up: an open-addressing hash
    table (``slots``) over the keys' bytes (``kbytes``, ``koff``) and kinds."""

    def __init__(self, needed: Mapping[str, DType]) -> None:
        self.names = list(needed)
        self.dtypes = [needed[k] for k in self.names]
        keys = [k.encode("utf-8") for k in self.names]
        #: Keys that are not ASCII never match (the walk leaves such records to protobuf).
        size = 8
        while size < 2 * len(keys) + 2:
            size *= 2
        self.slots = np.full(size, -1, dtype=np.int32)
        for k, key in enumerate(keys):
            if not key.isascii():
                continue
            s = _fnv1a(key) & (size - 1)
            while self.slots[s] >= 0:
                s = (s + 1) & (size - 1)
            self.slots[s] = k
        self.koff = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum([len(k) for k in keys], out=self.koff[1:])
        self.kbytes = np.frombuffer(b"".join(keys) or b"\0", dtype=np.uint8).copy()
        self.kkind = np.array([_KIND_OF[d.name] for d in self.dtypes], dtype=np.int8)


def jit_extract(
    records: Sequence[bytes], table: JitTable
) -> Optional[tuple[np.ndarray, dict[str, FastColumn]]]:
    """:func:`~._extract.extract` by the compiled kernels: ``(handled, columns)``,
    or None when no record was handled (or the engine could not be loaded)."""
    try:
        kern = _load()
    except Exception:
        return None
    n = len(records)
    lengths = _record_lengths(records)
    buf, starts, _ = _contiguous(records, lengths)
    data = np.frombuffer(buf, dtype=np.uint8)
    if data.flags.writeable:  # (the kernels take the bytes read-only)
        data = data.view()
        data.flags.writeable = False
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = starts + lengths
    nkeys = len(table.names)
    status = np.zeros(n, dtype=np.uint8)
    fstart = np.zeros((nkeys, n), dtype=np.int64)
    fend = np.zeros((nkeys, n), dtype=np.int64)
    fcount = np.zeros((nkeys, n), dtype=np.int64)
    fflag = np.zeros((nkeys, n), dtype=np.int8)
    kern.walk_examples(
        data, starts, ends, table.slots, table.koff, table.kbytes, table.kkind,
        status, fstart, fend, fcount, fflag,
    )  # fmt: skip
    handled = status == 0
    rows = np.flatnonzero(handled).astype(np.int64)
    if not len(rows):
        return None
    cols: dict[str, FastColumn] = {}
    for k, (name, dtype) in enumerate(zip(table.names, table.dtypes)):
        counts = fcount[k][rows]
        present = fflag[k][rows] != 0
        total = int(counts.sum())
        values: np.ndarray
        if dtype is int64:
            values = np.empty(total, dtype=np.int64)
            kern.fill_int64(data, rows, fstart[k], fend[k], fflag[k], fcount[k], values)
        elif dtype is float32:
            raw = np.empty(4 * total, dtype=np.uint8)
            kern.fill_float(data, rows, fstart[k], fend[k], fflag[k], fcount[k], raw)
            values = raw.view("<f4").astype(np.float32, copy=False)
        else:
            assert dtype is string
            start = np.empty(total, dtype=np.int64)
            length = np.empty(total, dtype=np.int64)
            kern.bytes_spans(data, rows, fstart[k], fend[k], fcount[k], start, length)
            values = _bytes_objects(buf, data, start, length)
        cols[name] = FastColumn(present, counts, values)
    return handled, cols
