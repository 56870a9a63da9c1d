"""Loading the compiled kernels: numba's cache, where it may be kept, and loading in the
background so that no batch waits for a compile.

The kernel modules (:data:`KERNEL_MODULES`) are compiled by numba when imported
(explicit signatures, ``cache=True``), or read from numba's on-disk cache: about 3 s
for a cold compile, 0.3-0.5 s from a warm cache. :func:`load` imports one, blocking
(a forced ``TFRECORD_LITE_ENGINE=jit`` uses it). The ``auto`` engine instead asks
:func:`loaded`, and until the kernels are there, parses with the NumPy engine and
calls :func:`warm`. Where the cache does not hold them, that starts a separate
Python process, at a lower priority, that compiles them into the cache (so the compile
runs on another core, and finishes, filling the cache for later processes, even when
this one is a short CLI command that exits first). This process loads them (imports
numba) on a background thread only once it has kept asking for them for
:data:`LOAD_AFTER` seconds, and, where they were cold, once that compile is done: a
short process never imports numba, and no batch waits for a compile or a load (a
fresh process with an empty cache: ``tfrecord-lite schema`` on a taxi shard, or a first
``parse_example`` of 1024 records, takes as long as with ``TFRECORD_LITE_ENGINE=numpy``,
benchmarks/RESULTS.md, "Cold start"). Where no process can be started, the thread
compiles them itself.

The cache sits beside the package; where that directory is read-only, in
``~/.cache/tfrecord_lite/numba``, and where neither can be written, in
``<tmp>/tfrecord_lite-numba-<uid>`` (``NUMBA_CACHE_DIR``, or
``tfr.options(numba_cache_dir=...)`` around the first parse, chooses another). In
that directory the kernels go to a folder named by a hash of every kernel source
together (:func:`kernels_hash`): numba checks each cached function only against its
own file's time stamp, so ``_jit_sequences`` (which calls ``_jit_kernels``' functions
and inlines their code) would otherwise load a compile of the old code after only
``_jit_kernels.py`` changed. A folder of another version that no process has used
for :data:`STALE_AFTER` (30 days) is removed when the cache is opened. numba reads
its index files with ``pickle``, so
a cache directory is used only if no other user can have written to it (see
:func:`_cache_dir`): one another user owns or may write to is never read. A cache
that cannot be read (corrupt, or written by another numba) is removed and written
afresh; should compiling fail too, the ``numpy`` engine is used for the rest of the
process (with one ``RuntimeWarning``).
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import hashlib
import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from typing import Any, Optional

from ... import _settings
from ..._files import UnsafeDirectoryError, private_directory, why_unsafe

__all__ = [
    "EXAMPLE_MODULES",
    "KERNEL_MODULES",
    "jit_available",
    "kernels_hash",
    "load",
    "loaded",
    "wait",
    "warm",
]

#: Every module of compiled kernels, by the name :func:`load` takes (the module's own).
KERNEL_MODULES = (
    "_jit_kernels",
    "_jit_columns",
    "_jit_sequences",
    "_jit_encode_kernels",
    "_jit_encode_crc",
)
#: The kernel modules an Example batch runs (the walks and fills, the per-key bookkeeping).
EXAMPLE_MODULES = ("_jit_kernels", "_jit_columns")
#: Every module whose code or constants the compiled kernels hold: the kernels and the
#: modules they import from this package, by their names within ``_examples``.
KERNEL_SOURCES = (
    "_engines._jit_kernels",
    "_engines._jit_columns",
    "_engines._jit_sequences",
    "_jit_encode_kernels",
    "_jit_encode_crc",
    "_engines._keyhash",
    "_feature_kinds",
)
#: The kernel modules' full names (a module whose import failed half-way is dropped
#: from ``sys.modules`` before the next try).
KERNEL_IMPORTS = (
    "tfrecord_lite._examples._engines._jit_kernels",
    "tfrecord_lite._examples._engines._jit_columns",
    "tfrecord_lite._examples._engines._jit_sequences",
    "tfrecord_lite._examples._jit_encode_kernels",
    "tfrecord_lite._examples._jit_encode_crc",
)
#: The ``_examples`` folder, where :data:`KERNEL_SOURCES` are found.
_EXAMPLES_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Held while a kernel module is imported (compiled or read from the cache: up to
#: seconds): only :func:`load` takes it, never a batch on its way.
_lock = threading.Lock()
#: Held for a moment while a background load is registered (:func:`warm`) or the
#: cache directory found: never while anything is imported or compiled.
_start_lock = threading.Lock()
_modules: dict[str, Any] = {}
_broken: Optional[str] = None
_found: Optional[bool] = None
_warming: dict[tuple[str, ...], threading.Thread] = {}
#: When :func:`warm` was first called for each set of kernel modules (monotonic).
_asked: dict[tuple[str, ...], float] = {}
#: The compile :func:`warm` started for each set of kernel modules (None: none needed).
_compiling: dict[tuple[str, ...], Optional[Any]] = {}
#: :func:`warm` starts loading the kernels into this process only at a call this many
#: seconds or more after its first (see there).
LOAD_AFTER = 0.5
#: How much lower the compile process' priority is (``os.nice``).
COMPILE_NICENESS = 10
_UNSET: Any = object()
_where: Any = _UNSET  # (the cache directory, once found)


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
    """Whether numba is installed (found without importing it) and the kernels have
    not failed to compile in this process."""
    return _broken is None and _numba_found()


def loaded(*names: str) -> bool:
    """Whether these kernel modules are loaded in this process (default: the Example
    kernels)."""
    return all(n in _modules for n in names or EXAMPLE_MODULES)


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


def kernels_hash() -> str:
    """A hash of the source of every module the compiled kernels are made of
    (:data:`KERNEL_SOURCES`), together: a change to any of them changes it."""
    digest = hashlib.sha256()
    for name in KERNEL_SOURCES:
        digest.update(name.encode("ascii") + b"\0")
        try:
            with open(os.path.join(_EXAMPLES_DIR, *name.split(".")) + ".py", "rb") as f:
                source = f.read()
        except OSError:  # (no source: numba cannot cache the kernels anyway)
            source = b""
        digest.update(len(source).to_bytes(8, "little") + source)
    return digest.hexdigest()[:16]


def _kernels_folder(base: str) -> str:
    """The folder of ``base`` that holds this version's compiled kernels."""
    return os.path.join(base, f"kernels-{kernels_hash()}")


def _package_cache() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")


def _cache_dir() -> str:
    """The directory to give numba for the kernels' cache: a folder named by
    :func:`kernels_hash` in the first of the places below this user may use.

    numba reads a cache's index files with ``pickle``, so only a directory no other
    user can have written to is used (:func:`~tfrecord_lite._files.private_directory`):
    the ``numba_cache_dir`` setting (``NUMBA_CACHE_DIR``, or numba's own
    ``numba.config.CACHE_DIR`` where numba is imported) when set, else the package's
    ``__pycache__`` when this user may write to it, else
    ``$XDG_CACHE_HOME/tfrecord_lite/numba`` (``~/.cache/...``), else
    ``<tmp>/tfrecord_lite-numba-<uid>`` (created 0700). One that another user owns or
    may write to is passed over, with a ``RuntimeWarning`` when it was the one asked
    for or the last one left (the kernels then compile into a directory of this
    process's own). Found once per process, without importing numba."""
    global _where
    if _where is _UNSET:
        with _start_lock:
            if _where is _UNSET:
                _where = _find_cache_dir()
    return str(_where)


def _asked_for() -> str:
    """The cache directory asked for: the setting, else numba's config where numba is
    imported (a program may set ``numba.config.CACHE_DIR`` itself)."""
    asked = _settings.numba_cache_dir()
    numba = sys.modules.get("numba")
    if not asked and numba is not None:
        asked = str(getattr(numba.config, "CACHE_DIR", "") or "")
    return asked


def _private_folder(base: str) -> str:
    """:func:`_kernels_folder` of ``base``, both checked private (created 0700); its
    time stamp renewed (this version uses it), and the folders of other versions left
    unused there for :data:`STALE_AFTER` removed (:func:`_sweep`)."""
    root = private_directory(base)
    folder = private_directory(_kernels_folder(root))
    with contextlib.suppress(OSError):
        os.utime(folder)
    _sweep(root, os.path.basename(folder))
    return folder


#: A folder of kernels another version compiled is removed once no process has used it
#: for this long (seconds): versions installed side by side keep theirs.
STALE_AFTER = 30 * 24 * 3600
#: The name of a folder of compiled kernels (:func:`_kernels_folder`).
_FOLDER_NAME = re.compile(r"kernels-[0-9a-f]{16}")


def _sweep(root: str, keep: str) -> None:
    """Remove from the cache directory ``root`` (already checked private: this user's
    own, no one else may write to it) the folders of compiled kernels of other
    versions not used for :data:`STALE_AFTER`: only folders right in ``root`` named as
    this module names them (``kernels-<hash>``), never a symbolic link or what one
    points to, never ``keep``. What cannot be removed is left."""
    now = time.time()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        if entry.name == keep or not _FOLDER_NAME.fullmatch(entry.name):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            if now - entry.stat(follow_symlinks=False).st_mtime < STALE_AFTER:
                continue
            shutil.rmtree(entry.path)  # (refuses a symbolic link; follows none inside)
        except OSError:
            continue


def _find_cache_dir() -> str:
    asked = _asked_for()
    if asked:
        try:
            return _private_folder(asked)
        except UnsafeDirectoryError as err:
            _warn(f"NUMBA_CACHE_DIR is not used for the compiled kernels: {err}")
            return _fresh_dir()
        except OSError:
            return _fresh_dir()
    here = _package_cache()
    if _writable(here) and why_unsafe(here) is None:
        try:
            return _private_folder(here)
        except OSError:
            pass
    try:
        user = os.path.join(_settings.cache_home(), "tfrecord_lite", "numba")
        if os.path.isabs(user):
            return _private_folder(user)
    except OSError:
        pass  # no home to write to (a service user): the temporary folder
    uid = os.getuid() if hasattr(os, "getuid") else 0
    shared = os.path.join(tempfile.gettempdir(), f"tfrecord_lite-numba-{uid}")
    try:
        return _private_folder(shared)
    except UnsafeDirectoryError as err:
        _warn(f"{err}; the kernels compile into a directory of this process's own")
    except OSError:
        pass
    return _fresh_dir()


def _forget(root: str) -> bool:
    """Remove this package's kernels from the cache at ``root``, so that they are
    compiled and cached afresh; False when they cannot be removed. Only the kernels'
    own files go (``<module>.*.nbi`` / ``.nbc``), and only from a directory
    :func:`_cache_dir` accepted as this user's."""
    prefixes = tuple(f"{m}." for m in KERNEL_MODULES)
    try:
        for folder, _dirs, files in os.walk(root):
            for name in files:
                if name.startswith(prefixes) and name.endswith((".nbi", ".nbc")):
                    os.unlink(os.path.join(folder, name))
    except OSError:
        return False
    return True


def _import_kernels(name: str, where: str) -> Any:
    """Import (compile or load) kernel module ``name`` with numba's cache at ``where``;
    numba's setting is restored afterwards, so the user's own cached functions are not
    put there."""
    import sys

    import numba

    config: Any = numba.config
    before = config.CACHE_DIR
    for stale in KERNEL_IMPORTS:
        if stale.rpartition(".")[2] not in _modules:  # its import failed half-way
            sys.modules.pop(stale, None)
    config.CACHE_DIR = where
    try:
        if name == "_jit_kernels":
            from . import _jit_kernels

            return _jit_kernels
        if name == "_jit_columns":
            from . import _jit_columns

            return _jit_columns
        if name == "_jit_sequences":
            from . import _jit_sequences

            return _jit_sequences
        if name == "_jit_encode_kernels":
            from .. import _jit_encode_kernels

            return _jit_encode_kernels
        if name == "_jit_encode_crc":
            from .. import _jit_encode_crc

            return _jit_encode_crc
        raise ValueError(f"no kernel module {name!r}; expected one of {KERNEL_MODULES}")
    finally:
        config.CACHE_DIR = before


def load(name: str = "_jit_kernels") -> Any:
    """A module of compiled kernels (compiled now, or read from the cache):
    ``_jit_kernels`` (Examples) or ``_jit_sequences`` (SequenceExamples, loaded
    only when those are parsed), or the writer's (:mod:`~tfrecord_lite._examples._jit_encode`).

    A cache that cannot be read (damaged, or written by another numba) is removed
    and the kernels are compiled into it afresh, so later processes load them again;
    where it cannot be removed, they compile into a directory of this process's own."""
    global _broken
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
    return module


def _in_cache(name: str, root: str) -> bool:
    """Whether numba's cache at ``root`` holds index files of kernel module ``name``: a
    load from it takes well under a second."""
    prefix = f"{name}."
    try:
        for folder, dirs, files in os.walk(root):
            if any(f.startswith(prefix) and f.endswith(".nbi") for f in files):
                return True
            if folder != root:
                dirs.clear()  # numba keeps one level of sub-folders
    except OSError:
        return False
    return False


def _start_compile(names: tuple[str, ...], where: str) -> Optional[Any]:
    """Start compiling kernel modules ``names`` into the cache at ``where`` in a
    separate Python process, in a session of its own: it finishes, and fills the
    cache, even if this process exits first. None where no process can be started."""
    if not sys.executable:
        return None
    env = dict(os.environ)
    top = os.path.dirname(os.path.dirname(_EXAMPLES_DIR))  # (the folder tfrecord_lite is in)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (top, env.get("PYTHONPATH")) if p)
    # The child compiles into this very folder (already checked private here).
    # At a lower priority than this process: it takes only a core this one leaves.
    code = (
        "import os\n"
        "try:\n"
        f"    os.nice({COMPILE_NICENESS})\n"
        "except (AttributeError, OSError):\n"
        "    pass\n"
        f"from {__package__} import _kernels\n"
        f"_kernels._where = {where!r}\n"
        f"for n in {list(names)!r}: _kernels.load(n)\n"
        # (and the record scan's length follower, which is compiled into the same folder)
        f"from {__package__} import _framing\n"
        "_framing.install_now()\n"
    )
    try:
        return subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return None


def _warm(names: tuple[str, ...], compiling: Optional[Any]) -> None:
    try:
        if compiling is not None:
            compiling.wait()  # (should it fail, load() below compiles here)
        for n in names:
            load(n)
    except Exception:  # load() has warned; the numpy engine goes on
        pass


def warm(*names: str) -> None:
    """Start loading these kernel modules (default: the Example kernels) in the
    background, once; :func:`loaded` says when they are there.

    Where the cache does not hold them, a separate process (at a lower priority)
    compiles them into it, started at the first call. This process imports numba
    only at a call :data:`LOAD_AFTER` seconds or more after the first: importing numba
    and reading the kernels from the cache take about a second of this process's
    CPU, and the interpreter lock, which a process done sooner (a command, a few
    batches) would spend for nothing. Never blocks: a load under way holds
    :data:`_lock`, which this never takes."""
    key = tuple(names or EXAMPLE_MODULES)
    if key in _warming or loaded(*key) or not jit_available():
        return
    now = time.monotonic()
    first = _asked.setdefault(key, now)
    if first == now and key not in _compiling:
        where = _cache_dir()
        with _start_lock:
            if key not in _compiling:
                cold = tuple(n for n in key if not _in_cache(n, where))
                _compiling[key] = _start_compile(cold, where) if cold else None
    if now - first < LOAD_AFTER:
        return
    with _start_lock:
        if key in _warming:
            return
        compiling = _compiling.get(key)
        # In the caller's settings (a tfr.options(numba_cache_dir=...) block included).
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run,
            args=(_warm, key, compiling),
            name="tfrecord_lite-kernels",
            daemon=True,
        )
        _warming[key] = thread
    thread.start()


def wait(*names: str, timeout: Optional[float] = None) -> bool:
    """Load these kernel modules (default: the Example kernels) if a background load
    is not already doing it, and wait for them; True when they are loaded."""
    key = tuple(names or EXAMPLE_MODULES)
    if not jit_available():
        return False
    thread = _warming.get(key)
    if thread is None:
        try:
            for n in key:
                load(n)
        except Exception:  # load() has warned
            return False
    else:
        thread.join(timeout)
    return loaded(*key)


def _after_fork() -> None:
    # A forked child has none of the parent's threads: its background loads start
    # afresh when asked for, and no lock is left held by a thread that is not there.
    global _lock, _start_lock
    _lock = threading.Lock()
    _start_lock = threading.Lock()
    _warming.clear()
    _asked.clear()
    _compiling.clear()  # (the parent's compile is not this process's child)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
