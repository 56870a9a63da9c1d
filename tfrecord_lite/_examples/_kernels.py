"""Loading the compiled kernels: numba's cache, where it may be kept, and loading in the
background so that no batch waits for a compile.

The kernel modules (:data:`KERNEL_MODULES`) are compiled by numba when imported
(explicit signatures, ``cache=True``), or read from numba's on-disk cache: about 3 s
for a cold compile, 0.3-0.5 s from a warm cache. :func:`load` imports one, blocking
(a forced ``TFRECORD_LITE_ENGINE=jit`` uses it). The ``auto`` engine instead asks
:func:`loaded`, and until the kernels are there, parses with the NumPy engine and
calls :func:`warm`, which loads them on a background thread: from the cache where
it is filled, else after a separate Python process has compiled them into the cache
(so the compile runs on another core, and finishes, filling the cache for later
processes, even when this one is a short CLI command that exits first). Where no
process can be started, the thread compiles them itself.

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
import subprocess
import sys
import tempfile
import threading
import warnings
from typing import Any, Optional

from .._files import UnsafeDirectoryError, private_directory, why_unsafe

__all__ = ["KERNEL_MODULES", "jit_available", "load", "loaded", "wait", "warm"]

#: Every module of compiled kernels, by name within this package.
KERNEL_MODULES = ("_jit_kernels", "_jit_sequences", "_jit_encode_kernels", "_jit_encode_crc")
_lock = threading.Lock()
_modules: dict[str, Any] = {}
_broken: Optional[str] = None
_found: Optional[bool] = None
_warming: dict[tuple[str, ...], threading.Thread] = {}
_UNSET: Any = object()
_where: Any = _UNSET  # (the cache directory, once found: a str, or None)


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
    return all(n in _modules for n in names or ("_jit_kernels",))


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
    of this process's own). Found once per process, without importing numba."""
    global _where
    if _where is _UNSET:
        _where = _find_cache_dir()
    return _where if isinstance(_where, str) else None


def _asked_for() -> str:
    """numba's cache setting: its config where numba is imported, else the variable."""
    numba = sys.modules.get("numba")
    if numba is not None:
        return str(getattr(numba.config, "CACHE_DIR", "") or "")
    return os.environ.get("NUMBA_CACHE_DIR", "")


def _find_cache_dir() -> Optional[str]:
    asked = _asked_for()
    if asked:
        try:
            return private_directory(asked)
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
    prefixes = tuple(f"{m}." for m in KERNEL_MODULES)
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
    for stale in KERNEL_MODULES:
        if stale not in _modules:  # a module whose import failed half-way
            sys.modules.pop(f"{__package__}.{stale}", None)
    if where is not None:
        config.CACHE_DIR = where
    try:
        if name == "_jit_kernels":
            from . import _jit_kernels

            return _jit_kernels
        if name == "_jit_sequences":
            from . import _jit_sequences

            return _jit_sequences
        if name == "_jit_encode_kernels":
            from . import _jit_encode_kernels

            return _jit_encode_kernels
        if name == "_jit_encode_crc":
            from . import _jit_encode_crc

            return _jit_encode_crc
        raise ValueError(f"no kernel module {name!r}; expected one of {KERNEL_MODULES}")
    finally:
        config.CACHE_DIR = before


def load(name: str = "_jit_kernels") -> Any:
    """A module of compiled kernels (compiled now, or read from the cache):
    ``_jit_kernels`` (Examples) or ``_jit_sequences`` (SequenceExamples, loaded
    only when those are parsed), or the writer's (:mod:`._jit_encode`).

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


def _in_cache(name: str, where: Optional[str]) -> bool:
    """Whether numba's cache at ``where`` (None: the package's ``__pycache__``) holds
    index files of kernel module ``name``: a load from it takes well under a second."""
    root = where or os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
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


def _start_compile(names: tuple[str, ...], where: Optional[str]) -> Optional[Any]:
    """Start compiling kernel modules ``names`` into the cache at ``where`` in a
    separate Python process, in a session of its own: it finishes, and fills the
    cache, even if this process exits first. None where no process can be started."""
    if not sys.executable:
        return None
    env = dict(os.environ)
    if where is not None:
        env["NUMBA_CACHE_DIR"] = where
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (top, env.get("PYTHONPATH")) if p)
    code = f"from {__package__} import _kernels\nfor n in {list(names)!r}: _kernels.load(n)\n"
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
    background, once; :func:`loaded` says when they are there. Where the cache does
    not hold them, a separate process compiles them first (started here, at once)."""
    key = tuple(names or ("_jit_kernels",))
    if loaded(*key) or not jit_available():
        return
    with _lock:
        if key in _warming:
            return
        where = _cache_dir()
        cold = tuple(n for n in key if not _in_cache(n, where))
        compiling = _start_compile(cold, where) if cold else None
        thread = threading.Thread(
            target=_warm, args=(key, compiling), name="tfrecord_lite-kernels", daemon=True
        )
        _warming[key] = thread
    thread.start()


def wait(*names: str, timeout: Optional[float] = None) -> bool:
    """Load these kernel modules (default: the Example kernels) if a background load
    is not already doing it, and wait for them; True when they are loaded."""
    key = tuple(names or ("_jit_kernels",))
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
    global _lock
    _lock = threading.Lock()
    _warming.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
