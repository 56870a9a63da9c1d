"""The parse engines: which extractor a batch goes through, and the compiled one's driver.

Two engines extract Example columns, with identical results (values, shapes,
errors): ``numpy``, the vectorized walk (:func:`~._extract.extract`, always
there), and ``jit``, the numba kernels of :mod:`._jit_kernels` (with the
``jit`` extra: ``pip install 'tfrecord-lite-np[jit]'``). Records either leaves
undecided go to the protobuf reference path.

The engine is chosen at run time from ``TFRECORD_LITE_ENGINE``: ``auto`` (the
default: ``jit`` where numba is installed, for batches of
:data:`JIT_MIN_RECORDS` records or more, else ``numpy``; Example batches whose
records mostly share one length stay on ``numpy``, see :func:`engine_for`), ``numpy``, or ``jit``
(without numba installed: ``ImportError``). A smaller batch (a single record,
a CLI ``head``) stays on ``numpy`` and never waits for a compile.
``TFRECORD_LITE_FASTPATH=0`` turns both off (protobuf only, for debugging).

Per batch, the driver makes O(kinds + keys) NumPy calls: the walk fills one row
per record of (where, how many, packed?) for every key, one fill kernel writes
every key's values into one array per kind, and each key's column is a slice of
it. Bytes values repeated in a column (categorical strings) are cut out once
(:func:`_bytes_values`). The kernels take no references (see
:mod:`._jit_kernels`) and release the GIL, so threads can parse chunks at once
(:func:`~._threads.parse_chunks`).

Nothing compiles at ``import tfrecord_lite``: numba is imported, and the kernels
compiled or loaded from numba's on-disk cache, the first time a batch needs them.
The cache sits beside the package; where that directory is read-only, in
``~/.cache/tfrecord_lite/numba``, and where neither can be written, in
``<tmp>/tfrecord_lite-numba-<uid>``. numba reads its index files with ``pickle``, so
a cache directory is used only if no other user can have written to it (see
:func:`_cache_dir`): one another user owns or may write to is never read. A cache
that cannot be read (corrupt, or written by another numba) is removed and written
afresh; should compiling fail too, the ``numpy`` engine is used for the rest of the
process (with one ``RuntimeWarning``).
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from .._files import UnsafeDirectoryError, private_directory, why_unsafe
from ._extract import _record_lengths
from ._extracted import FastColumn, _contiguous
from ._schema import DType
from ._walk import _bytes_objects
from ._walk_sequences import SequenceColumns

__all__ = [
    "JitTable",
    "engine",
    "engine_for",
    "jit_available",
    "jit_extract",
    "jit_extract_sequences",
]

ENGINE_VARIABLE = "TFRECORD_LITE_ENGINE"
#: Batches of fewer records take the ``numpy`` engine when no engine is forced.
JIT_MIN_RECORDS = 64
#: Whether ``auto`` picks ``jit`` (for batches of :data:`JIT_MIN_RECORDS` or more)
#: where numba is installed (taxi-like records: 2-3x the NumPy engine's rate).
AUTO_PICKS_JIT = True

_KIND_OF = {"string": 1, "float32": 2, "int64": 3}
_lock = threading.Lock()
_kernels: Any = None  # (the Example kernels, once loaded)
_KERNEL_MODULES = ("_jit_kernels", "_jit_sequences", "_jit_encode_kernels", "_jit_encode_crc")
_modules: dict[str, Any] = {}
_broken: Optional[str] = None


_found: Optional[bool] = None


def _numba_found() -> bool:
    """Whether numba can be imported (found once, without importing it; an import
    hook that refuses it counts as not installed)."""
    global _found
    if _found is None:
        try:
            _found = importlib.util.find_spec("numba") is not None
        except (ImportError, ValueError):
            _found = False
    return _found


def jit_available() -> bool:
    """Whether numba is installed (found without importing it)."""
    return _broken is None and _numba_found()


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


def engine_for(records: Sequence[bytes]) -> str:
    """The engine for parsing these Example records: :func:`engine`, except that ``auto``
    leaves a batch whose records mostly have one length (one writer's fixed layout:
    MNIST-like images, fixed tabular rows) to the ``numpy`` engine, whose equal-layout
    path cuts whole columns from a 2-D array (MNIST-like read + parse: 1.97 M records/s
    there against 1.41 M compiled, same run); a forced engine is used as it is."""
    chosen = engine(len(records))
    if chosen != "jit" or os.environ.get(ENGINE_VARIABLE, "").strip().lower() == "jit":
        return chosen
    lengths = _record_lengths(records)
    return "numpy" if np.count_nonzero(lengths == lengths[0]) * 2 >= len(lengths) else "jit"


def _writable(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path):
            return True
    except OSError:
        return False


def _warn(message: str) -> None:
    warnings.warn(f"tfrecord_lite: {message}", RuntimeWarning, stacklevel=4)


def _fresh_dir() -> str:
    """A cache directory of this process's own (``mkdtemp``: 0700), removed when it
    exits: nothing is left behind in the temporary folder."""
    fresh = tempfile.mkdtemp(prefix="tfrecord_lite-numba-")
    atexit.register(shutil.rmtree, fresh, True)
    return fresh


def _cache_dir() -> Optional[str]:
    """The directory to give numba for the kernels' cache (None: the package's own
    ``__pycache__``, which numba picks by itself).

    numba reads a cache's index files with ``pickle``, so only a directory no other
    user can have written to is used (:func:`~tfrecord_lite._files.private_directory`):
    ``NUMBA_CACHE_DIR`` when set, else the package's ``__pycache__`` when this user
    may write to it, else ``$XDG_CACHE_HOME/tfrecord_lite/numba`` (``~/.cache/...``),
    else ``<tmp>/tfrecord_lite-numba-<uid>`` (created 0700). One that another user
    owns or may write to is passed over, with a ``RuntimeWarning`` when it was the
    one asked for or the last one left (the kernels then compile into a directory
    of this process's own)."""
    import numba

    config: Any = numba.config
    if config.CACHE_DIR:
        try:
            return private_directory(config.CACHE_DIR)
        except UnsafeDirectoryError as err:
            _warn(f"NUMBA_CACHE_DIR is not used for the compiled kernels: {err}")
            return _fresh_dir()
        except OSError:
            return _fresh_dir()
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
    if _writable(here) and why_unsafe(here) is None:
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    try:
        user = os.path.join(base, "tfrecord_lite", "numba")
        if os.path.isabs(user):
            return private_directory(user)
    except OSError:
        pass  # no home to write to (a service user): the temporary folder
    uid = os.getuid() if hasattr(os, "getuid") else 0
    shared = os.path.join(tempfile.gettempdir(), f"tfrecord_lite-numba-{uid}")
    try:
        return private_directory(shared)
    except UnsafeDirectoryError as err:
        _warn(f"{err}; the kernels compile into a directory of this process's own")
    except OSError:
        pass
    return _fresh_dir()


def _forget(where: Optional[str]) -> bool:
    """Remove this package's kernels from the cache at ``where`` (None: the package's
    ``__pycache__``), so that they are compiled and cached afresh; False when they
    cannot be removed. Only the kernels' own files go (``<module>.*.nbi`` / ``.nbc``),
    and only from a directory :func:`_cache_dir` accepted as this user's."""
    root = where or os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
    prefixes = tuple(f"{m}." for m in _KERNEL_MODULES)
    try:
        for folder, _dirs, files in os.walk(root):
            for name in files:
                if name.startswith(prefixes) and name.endswith((".nbi", ".nbc")):
                    os.unlink(os.path.join(folder, name))
    except OSError:
        return False
    return True


def _import_kernels(name: str, where: Optional[str]) -> Any:
    """Import (compile or load) kernel module ``name`` with numba's cache at ``where``
    (None: numba's own choice); numba's setting is restored afterwards, so the user's
    own cached functions are not put there."""
    import sys

    import numba

    config: Any = numba.config
    before = config.CACHE_DIR
    for stale in _KERNEL_MODULES:  # a module whose import failed half-way
        if stale not in _modules:
            sys.modules.pop(f"{__package__}.{stale}", None)
    if where is not None:
        config.CACHE_DIR = where
    try:
        return importlib.import_module(f"{__package__}.{name}")
    finally:
        config.CACHE_DIR = before


def _load(name: str = "_jit_kernels") -> Any:
    """A module of compiled kernels (compiled now, or read from the cache):
    ``_jit_kernels`` (Examples) or ``_jit_sequences`` (SequenceExamples, loaded
    only when those are parsed), or the writer's (:mod:`._jit_encode`).

    A cache that cannot be read (damaged, or written by another numba) is removed
    and the kernels are compiled into it afresh, so later processes load them again;
    where it cannot be removed, they compile into a directory of this process's own."""
    global _kernels, _broken
    module = _modules.get(name)
    if module is not None:
        return module
    with _lock:
        module = _modules.get(name)
        if module is not None:
            return module
        where = _cache_dir()
        try:
            module = _import_kernels(name, where)
        except Exception as first:  # an unreadable cache: compile without it
            try:
                retry = where if _forget(where) else _fresh_dir()
                module = _import_kernels(name, retry)
            except Exception as err:
                _broken = f"{type(first).__name__}: {first}; then {type(err).__name__}: {err}"
                warnings.warn(
                    f"tfrecord_lite: the compiled engine is off ({_broken}); parsing and "
                    "writing go on with the numpy engine",
                    RuntimeWarning,
                    stacklevel=3,
                )
                raise
        _modules[name] = module
        if name == "_jit_kernels":
            _kernels = module
    return module


_M64 = 0xFFFFFFFFFFFFFFFF


def _key_hash(key: bytes) -> int:
    """:func:`~._jit_kernels.key_hash` of ``key``: its length, first and last 8 bytes."""
    n = len(key)
    first = int.from_bytes(key[:8], "little")
    last = int.from_bytes(key[::-1][:8], "little")
    h = ((first ^ (n * 0x9E3779B97F4A7C15)) & _M64) * 0xBF58476D1CE4E5B9 & _M64
    h ^= h >> 31
    h = (h ^ last) * 0x94D049BB133111EB & _M64
    return h ^ (h >> 29)


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
            s = _key_hash(key) & (size - 1)
            while self.slots[s] >= 0:
                s = (s + 1) & (size - 1)
            self.slots[s] = k
        self.koff = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum([len(k) for k in keys], out=self.koff[1:])
        self.kbytes = np.frombuffer(b"".join(keys) or b"\0", dtype=np.uint8).copy()
        self.kkind = np.array([_KIND_OF[d.name] for d in self.dtypes], dtype=np.int8)


#: Bytes values of a key are made once per distinct value where at most this share
#: of them differ (categorical columns: company names, payment types).
DISTINCT_SHARE = 0.5
#: Only columns of values no longer than this are looked at for repeats.
INTERN_BYTES = 64


def _bytes_values(
    kern: Any, buf: Any, data: np.ndarray, start: np.ndarray, length: np.ndarray
) -> np.ndarray:
    """``buf[start[i]:start[i]+length[i]]`` for every i, as an object array of bytes;
    repeated values are cut out once (equal values share one ``bytes`` object)."""
    m = len(start)
    if m < 16 or int(length.max()) > INTERN_BYTES:
        return _bytes_objects(buf, data, start, length)
    size = 1 << (2 * m).bit_length()
    slots = np.full(size, -1, dtype=np.int64)
    first = np.empty(m, dtype=np.int64)
    distinct = kern.intern_bytes(data, start, length, slots, first)
    if distinct > DISTINCT_SHARE * m:
        return _bytes_objects(buf, data, start, length)
    heads = np.flatnonzero(first == np.arange(m))
    made = _bytes_objects(buf, data, start[heads], length[heads])
    where = np.empty(m, dtype=np.int64)
    where[heads] = np.arange(len(heads))
    return made[where[first]]


class _Values:
    """Every key's values of one batch, one array per kind, key after key
    (``offsets[k]``: where key ``k`` 's begin in its kind's array)."""

    def __init__(self, totals: np.ndarray, kkind: np.ndarray) -> None:
        self.totals = totals
        self.offsets = np.zeros(len(kkind), dtype=np.int64)
        sizes = [0, 0, 0, 0]
        for kind in (1, 2, 3):
            mine = kkind == kind
            if mine.any():
                ends_of = np.cumsum(totals[mine])
                self.offsets[mine] = ends_of - totals[mine]
                sizes[kind] = int(ends_of[-1])
        self.ints = np.empty(sizes[3], dtype=np.int64)
        self.floats = np.empty(4 * sizes[2], dtype=np.uint8)
        self.bstart = np.empty(sizes[1], dtype=np.int64)
        self.blength = np.empty(sizes[1], dtype=np.int64)

    def outputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What the fill kernels write: ints, floats (bytes), bytes starts, lengths."""
        return self.ints, self.floats, self.bstart, self.blength

    def column(self, kern: Any, buf: Any, data: np.ndarray, k: int, kind: int) -> np.ndarray:
        """Key ``k`` 's values (``kind`` 1 bytes, 2 float, 3 int64)."""
        a = int(self.offsets[k])
        b = a + int(self.totals[k])
        if kind == 3:
            return self.ints[a:b]
        if kind == 2:
            return self.floats[4 * a : 4 * b].view("<f4").astype(np.float32, copy=False)
        return _bytes_values(kern, buf, data, self.bstart[a:b], self.blength[a:b])


def _joined_records(records: Sequence[bytes]) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """The records in one buffer: (buffer, its bytes read-only, starts, ends)."""
    lengths = _record_lengths(records)
    buf, starts, _ = _contiguous(records, lengths)
    data = np.frombuffer(buf, dtype=np.uint8)
    if data.flags.writeable:  # (the kernels take the bytes read-only)
        data = data.view()
        data.flags.writeable = False
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    return buf, data, starts, starts + lengths


def _key_arrays(n: int, nkeys: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per (record, key) -- one row per record, so a record's keys are written close
    together: where the list's bytes start and end, its number of values, its flag."""
    return (
        np.empty((n, nkeys), dtype=np.int64),
        np.empty((n, nkeys), dtype=np.int64),
        np.zeros((n, nkeys), dtype=np.int64),
        np.zeros((n, nkeys), dtype=np.int8),
    )


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
    buf, data, starts, ends = _joined_records(records)
    nkeys = len(table.names)
    status = np.zeros(n, dtype=np.uint8)
    seen = np.full(nkeys, -1, dtype=np.int64)
    fstart, fend, fcount, fflag = _key_arrays(n, nkeys)
    kern.walk_examples(
        data, starts, ends, table.slots, table.koff, table.kbytes, table.kkind,
        seen, status, fstart, fend, fcount, fflag,
    )  # fmt: skip
    handled = status == 0
    if handled.all():
        rows = np.arange(n, dtype=np.int64)
        counts, flags = fcount, fflag
    else:
        rows = np.flatnonzero(handled).astype(np.int64)
        if not len(rows):
            return None
        counts, flags = fcount[rows], fflag[rows]
    vals = _Values(counts.sum(axis=0), table.kkind)
    kern.fill_values(
        data, rows, table.kkind, vals.offsets.copy(), fstart, fend, fcount, fflag, *vals.outputs()
    )
    present_of = np.ascontiguousarray((flags & 3 != 0).T)  # (not EMPTY)
    counts_of = np.ascontiguousarray(counts.T)
    cols = {
        name: FastColumn(
            present_of[k], counts_of[k], vals.column(kern, buf, data, k, int(table.kkind[k]))
        )
        for k, name in enumerate(table.names)
    }
    return handled, cols


def jit_extract_sequences(
    records: Sequence[bytes], ctable: JitTable, ltable: JitTable
) -> Optional[SequenceColumns]:
    """:func:`~._extract.extract_sequences` by the compiled kernels: the context and
    feature-list columns, or None when any record needs the reference path."""
    try:
        kern = _load()
        seq = _load("_jit_sequences")
    except Exception:
        return None
    n = len(records)
    buf, data, starts, ends = _joined_records(records)
    nc, nl = len(ctable.names), len(ltable.names)
    cstart, cend, ccount, cflag = _key_arrays(n, nc)
    lstart, lend, lcount, lflag = _key_arrays(n, nl)
    lsteps = np.zeros((n, nl), dtype=np.int64)
    ok = seq.walk_sequences(
        data, starts, ends,
        ctable.slots, ctable.koff, ctable.kbytes, ctable.kkind, np.full(nc, -1, dtype=np.int64),
        cstart, cend, ccount, cflag,
        ltable.slots, ltable.koff, ltable.kbytes, ltable.kkind, np.full(nl, -1, dtype=np.int64),
        lstart, lend, lsteps, lcount, lflag,
    )  # fmt: skip
    if not ok:
        return None
    rows = np.arange(n, dtype=np.int64)
    cvals = _Values(ccount.sum(axis=0), ctable.kkind)
    kern.fill_values(
        data, rows, ctable.kkind, cvals.offsets.copy(), cstart, cend, ccount, cflag,
        *cvals.outputs(),
    )  # fmt: skip
    context = {
        name: FastColumn(
            cflag[:, k] != 0, ccount[:, k], cvals.column(kern, buf, data, k, int(ctable.kkind[k]))
        )
        for k, name in enumerate(ctable.names)
    }
    # The steps of every list key, key after key; their values as the context's.
    steps = lsteps.sum(axis=0)
    soffsets = np.zeros(nl, dtype=np.int64)
    np.cumsum(steps[:-1], out=soffsets[1:])
    filled = np.empty(int(steps.sum()), dtype=np.uint8)
    scount = np.empty(len(filled), dtype=np.int64)
    lvals = _Values(lcount.sum(axis=0), ltable.kkind)
    seq.fill_steps(
        data, ltable.kkind, soffsets.copy(), lvals.offsets.copy(), lstart, lend, lsteps,
        filled, scount, *lvals.outputs(),
    )  # fmt: skip
    lists = {}
    for k, name in enumerate(ltable.names):
        a, b = int(soffsets[k]), int(soffsets[k] + steps[k])
        values = lvals.column(kern, buf, data, k, int(ltable.kkind[k]))
        column = FastColumn(filled[a:b].view(bool), scount[a:b], values)
        lists[name] = (lflag[:, k] != 0, lsteps[:, k].copy(), column)
    return SequenceColumns(context, lists)
