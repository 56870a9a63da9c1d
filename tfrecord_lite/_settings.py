"""The library's settings: every environment variable it reads, and :func:`options`.

Each setting has a name (``threads``), the environment variable that sets it for a
process (``TFRECORD_LITE_THREADS``) and a default. A value is looked up, in order:

1. an override of :func:`options` in force in the calling thread (or ``asyncio``
   task): ``with tfr.options(threads=1): ...``;
2. the environment variable, read when the setting is needed (so a variable set
   while the process runs counts from then on), parsed and checked once for each
   value it takes: a bad value is a ``ValueError`` that names the variable, the
   value and what is expected;
3. a default the library sets for its own processes (a Spark task's, for one);
4. the built-in default.

Overrides live in a :mod:`contextvars` variable: a block's overrides are seen by the
code that runs in the block, in its thread, and by the threads the library starts for
that code in a copy of its context (``parse(..., num_parallel_calls=N)``'s parsing
threads, ``write_examples``' encoder thread, the chunks parsed on threads, the kernels'
background load). Any other thread (one of your own, a process pool's worker) sees the
environment and defaults. Set the environment variable to change a setting for a whole
process.

This module is the only one of the package that reads the environment
(``tests/api/test_settings.py`` checks it); the other modules ask it for values.
Standard library only, importable before anything else of the package.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Optional

__all__ = [
    "SETTINGS",
    "Setting",
    "cache_dir",
    "cache_home",
    "crc_backend",
    "deflate_backend",
    "engine",
    "fastpath",
    "get",
    "jpeg_backend",
    "numba_cache_dir",
    "options",
    "progress",
    "set_process_default",
    "system_zlib",
    "tfds_data_dir",
    "threads",
]


@dataclass(frozen=True)
class Setting:
    """One setting: its name in :func:`options`, its environment variable and its values."""

    #: The keyword of :func:`options` (and of :func:`get`).
    name: str
    #: The environment variable that sets it for a process.
    variable: str
    #: The value when neither an override nor the variable says otherwise.
    default: Any
    #: What values it takes, in words (for errors and the documentation).
    expected: str
    #: Environment text (stripped, never empty) -> value; ``ValueError`` for a bad one
    #: (its message, when it is not just the value, is quoted in the error).
    parse: Callable[[str], Any]
    #: A value given to :func:`options` -> the value used; ``ValueError``/``TypeError``.
    check: Callable[[Any], Any]
    #: What it does, one sentence (the documentation's).
    doc: str
    #: False: chosen once per process (at import or first use), so only the
    #: environment variable sets it; :func:`options` refuses it.
    per_block: bool = True


def _choice(*names: str) -> tuple[Callable[[str], str], Callable[[Any], str]]:
    """A setting that is one of ``names``, case-insensitive."""

    def parse(text: str) -> str:
        value = text.lower()
        if value not in names:
            raise ValueError(value)
        return value

    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise TypeError(f"a str, one of {', '.join(names)}; got {type(value).__name__}")
        return parse(value.strip())

    return parse, check


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _parse_bool(text: str) -> bool:
    value = text.lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(value)


def _check_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"True or False; got {type(value).__name__}")
    return value


def _parse_progress(text: str) -> Optional[bool]:
    return None if text.lower() == "auto" else _parse_bool(text)


def _check_progress(value: Any) -> Optional[bool]:
    return None if value is None else _check_bool(value)


def _parse_threads(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise ValueError(text) from None
    return _check_threads(n)


def _check_threads(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"an int of at least 1 or None; got {type(value).__name__}")
    if value < 1:
        raise ValueError(value)
    return value


def _check_optional_threads(value: Any) -> Optional[int]:
    return None if value is None else _check_threads(value)


def _parse_bytes(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise ValueError(text) from None
    return _check_bytes(n)


def _check_bytes(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"an int number of bytes; got {type(value).__name__}")
    if value < 0:
        raise ValueError(value)
    return value


def _parse_path(text: str) -> str:
    return os.path.expanduser(text)


def _check_path(value: Any) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"a path (str or os.PathLike); got {type(value).__name__}")
    path = os.fspath(value)
    if not isinstance(path, str):
        raise TypeError(f"a str path; got {type(path).__name__}")
    return os.path.expanduser(path)


def _parse_set(text: str) -> bool:
    return True


def _env_only(value: Any) -> Any:  # pragma: no cover - options() refuses first
    raise ValueError(value)


_ENGINES = _choice("auto", "numpy", "jit")
_DEFLATE = _choice("auto", "isal", "zlib-ng", "zlib")
_JPEG = _choice("auto", "pillow", "simplejpeg")
_CRC_NAMES = ("crc32c", "google-crc32c", "crcmod", "crcmod-python")


def _parse_crc(text: str) -> str:
    if text not in _CRC_NAMES:  # case-sensitive, as the backends' names are
        raise ValueError(f"unknown CRC backend {text!r}")
    return text


#: Every setting, by name.
SETTINGS: Mapping[str, Setting] = MappingProxyType(
    {
        s.name: s
        for s in (
            Setting(
                "engine",
                "TFRECORD_LITE_ENGINE",
                "auto",
                "auto, numpy or jit",
                *_ENGINES,
                "The parse engine: the NumPy one, the numba-compiled one (the jit extra), or "
                "auto (the compiled one for batches of 64 records or more once its kernels "
                "are loaded).",
            ),
            Setting(
                "deflate_backend",
                "TFRECORD_LITE_DEFLATE_BACKEND",
                "auto",
                "auto or one of isal, zlib-ng, zlib",
                *_DEFLATE,
                "The GZIP/ZLIB encoder and inflater: zlib gives TensorFlow's bytes exactly; "
                "auto takes the fastest installed one whose files are within 3% of zlib's "
                "size. Read when a writer or reader is created.",
            ),
            Setting(
                "threads",
                "TFRECORD_LITE_THREADS",
                None,
                "a whole number of threads, at least 1 (1: GZIP/ZLIB start no threads of "
                "their own)",
                _parse_threads,
                _check_optional_threads,
                "Caps the threads GZIP/ZLIB deflate and inflate-ahead use, and those "
                "arrow.read_table and Polars scans convert batches on (unset: the cores "
                "this process may run on, at most 8 for deflate).",
            ),
            Setting(
                "jpeg_backend",
                "TFRECORD_LITE_JPEG_BACKEND",
                "auto",
                "one of simplejpeg, pillow (or auto)",
                *_JPEG,
                "The JPEG decoder: simplejpeg when installed (auto), or Pillow.",
            ),
            Setting(
                "progress",
                "TFRECORD_LITE_PROGRESS",
                None,
                "auto, 1 (on) or 0 (off)",
                _parse_progress,
                _check_progress,
                "The command line's progress bars: shown when stderr is a terminal (auto, "
                "None), always (1, True) or never (0, False).",
            ),
            Setting(
                "fastpath",
                "TFRECORD_LITE_FASTPATH",
                True,
                "1 (on) or 0 (off)",
                _parse_bool,
                _check_bool,
                "The NumPy engine's vectorized path for records of one layout.",
            ),
            Setting(
                "numba_cache_dir",
                "NUMBA_CACHE_DIR",
                "",
                "a directory",
                _parse_path,
                _check_path,
                "Where the compiled kernels are cached (numba's own variable; empty: "
                "beside the package, else ~/.cache/tfrecord_lite/numba). Read once, when "
                "the kernels are first loaded.",
            ),
            Setting(
                "cache_dir",
                "TFRECORD_LITE_CACHE_DIR",
                "",
                "a directory",
                _parse_path,
                _check_path,
                "Where the library caches what it builds (the tfds index files); empty: "
                "$XDG_CACHE_HOME/tfrecord_lite, else ~/.cache/tfrecord_lite.",
            ),
            Setting(
                "cache_home",
                "XDG_CACHE_HOME",
                "",
                "a directory",
                _parse_path,
                _check_path,
                "The user's cache directory (the XDG standard's); empty: ~/.cache.",
            ),
            Setting(
                "tfds_data_dir",
                "TFDS_DATA_DIR",
                "~/tensorflow_datasets",
                "a directory",
                _parse_path,
                _check_path,
                "Where tfrecord_lite.tfds.load and builder look for prepared datasets "
                "(TensorFlow Datasets' own variable).",
            ),
            Setting(
                "gzip_span_cache",
                "TFRECORD_LITE_GZIP_SPAN_CACHE",
                64 << 20,
                "a number of bytes, 0 or more (0: off)",
                _parse_bytes,
                _check_bytes,
                "Random reads into GZIP/ZLIB files keep the inflated spans between seek "
                "points they read, most recently used first, up to this many bytes per "
                "process (a span over a quarter of it is not kept), so records near one "
                "another are inflated once.",
            ),
            Setting(
                "crc_backend",
                "TFRECORD_LITE_CRC_BACKEND",
                "",
                "one of " + ", ".join(_CRC_NAMES),
                _parse_crc,
                _env_only,
                "The CRC32C implementation (empty: the fastest installed). Chosen once, "
                "when the package is imported.",
                per_block=False,
            ),
            Setting(
                "no_system_zlib",
                "TFRECORD_LITE_NO_CZLIB",
                False,
                "any non-empty value",
                _parse_set,
                _env_only,
                "Set: random access into GZIP/ZLIB files does not load the system's zlib "
                "library (it reads from the previous seek point instead). Chosen once, at "
                "first use.",
                per_block=False,
            ),
        )
    }
)

_OVERRIDES: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "tfrecord_lite_options", default=MappingProxyType({})
)
#: Defaults the library sets for its own processes (:func:`set_process_default`).
_PROCESS_DEFAULTS: dict[str, Any] = {}
#: (name, environment text) -> parsed value: each value of a variable is parsed once.
_PARSED: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


def _setting(name: str) -> Setting:
    try:
        return SETTINGS[name]
    except KeyError:
        raise TypeError(
            f"unknown setting {name!r}; the settings are {', '.join(sorted(SETTINGS))}"
        ) from None


def _from_environment(setting: Setting) -> tuple[bool, Any]:
    """``(found, value)`` of the setting's variable (unset or blank: not found)."""
    text = os.environ.get(setting.variable, "").strip()
    if not text:
        return False, None
    key = (setting.name, text)
    try:
        return True, _PARSED[key]
    except KeyError:
        pass
    try:
        value = setting.parse(text)
    except ValueError as err:
        detail = str(err)
        why = f" ({detail})" if detail and detail.lower() != text.lower() else ""
        raise ValueError(
            f"{setting.variable}={text!r} is not a valid value{why}: expected "
            f"{setting.expected} (unset it for the default)"
        ) from None
    with _LOCK:
        _PARSED[key] = value
    return True, value


def get(name: str) -> Any:
    """The value of setting ``name`` here and now (see the module documentation)."""
    setting = _setting(name)
    overrides = _OVERRIDES.get()
    if name in overrides:
        return overrides[name]
    found, value = _from_environment(setting)
    if found:
        return value
    return _PROCESS_DEFAULTS.get(name, setting.default)


def set_process_default(name: str, value: Any) -> None:
    """Make ``value`` this process's default for setting ``name`` (its environment
    variable and :func:`options` still come first)."""
    setting = _setting(name)
    _PROCESS_DEFAULTS[name] = _checked(setting, value)


def _checked(setting: Setting, value: Any) -> Any:
    if not setting.per_block:
        raise ValueError(
            f"tfr.options({setting.name}=...): {setting.name} is chosen once per process, "
            f"so only the environment variable {setting.variable} sets it"
        )
    try:
        return setting.check(value)
    except (TypeError, ValueError) as err:
        detail = str(err) if isinstance(err, TypeError) else setting.expected
        raise type(err)(f"tfr.options({setting.name}={value!r}): expected {detail}") from None


class options(contextlib.ContextDecorator):
    """Override settings in a block: ``with tfr.options(threads=1, engine="numpy"): ...``.

    Each keyword is a setting (the Settings page of the documentation lists them all,
    with their environment variables):
    ``engine`` (``"auto"``, ``"numpy"``, ``"jit"``), ``deflate_backend`` (``"auto"``,
    ``"isal"``, ``"zlib-ng"``, ``"zlib"``), ``threads`` (an int of at least 1, or
    ``None`` for the cores), ``jpeg_backend`` (``"auto"``, ``"pillow"``,
    ``"simplejpeg"``), ``progress`` (``True``, ``False``, ``None`` for auto),
    ``fastpath`` (bool), ``numba_cache_dir``, ``cache_dir``, ``cache_home`` and
    ``tfds_data_dir`` (paths). Values are checked at the call: a bad one is a
    ``ValueError`` or ``TypeError`` naming the setting.

    The overrides take precedence over the environment variables, for the code that
    runs inside the block, in this thread (or ``asyncio`` task); other threads,
    including those the library starts, are not affected. Blocks nest (the inner
    one wins), and leaving a block restores what was in force before. It also
    decorates a function: ``@tfr.options(engine="numpy")``.
    """

    def __init__(self, **overrides: Any) -> None:
        self._values = {name: _checked(_setting(name), value) for name, value in overrides.items()}
        self._token: Optional[contextvars.Token[Mapping[str, Any]]] = None

    def _recreate_cm(self) -> options:
        # As a decorator: a fresh block for each call (calls may overlap in threads).
        return options(**self._values)

    def __enter__(self) -> None:
        if self._token is not None:
            raise RuntimeError("this tfr.options(...) block is already entered")
        merged = {**_OVERRIDES.get(), **self._values}
        self._token = _OVERRIDES.set(MappingProxyType(merged))

    def __exit__(self, *exc: object) -> None:
        token, self._token = self._token, None
        if token is not None:
            _OVERRIDES.reset(token)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"tfr.options({inner})"


# --------------------------------------------------------------------------- one function a setting


def engine() -> str:
    """``"auto"``, ``"numpy"`` or ``"jit"``: the parse engine asked for."""
    return str(get("engine"))


def deflate_backend() -> str:
    """``"auto"``, ``"isal"``, ``"zlib-ng"`` or ``"zlib"``: the GZIP/ZLIB backend asked for."""
    return str(get("deflate_backend"))


def threads() -> Optional[int]:
    """The cap on compression threads, or ``None`` (no cap: the cores)."""
    value = get("threads")
    return None if value is None else int(value)


def jpeg_backend() -> str:
    """``"auto"``, ``"pillow"`` or ``"simplejpeg"``: the JPEG decoder asked for."""
    return str(get("jpeg_backend"))


def progress() -> Optional[bool]:
    """Progress bars: ``True`` (always), ``False`` (never) or ``None`` (on a terminal)."""
    value = get("progress")
    return None if value is None else bool(value)


def fastpath() -> bool:
    """Whether the NumPy engine's vectorized path is on."""
    return bool(get("fastpath"))


def numba_cache_dir() -> str:
    """The directory asked for the compiled kernels' cache (``""``: not asked)."""
    return str(get("numba_cache_dir"))


def cache_home() -> str:
    """The user's cache directory: ``$XDG_CACHE_HOME``, else ``~/.cache``."""
    return str(get("cache_home")) or os.path.join(os.path.expanduser("~"), ".cache")


def cache_dir() -> str:
    """The library's cache directory: ``$TFRECORD_LITE_CACHE_DIR``, else
    :func:`cache_home`'s ``tfrecord_lite``."""
    return str(get("cache_dir")) or os.path.join(cache_home(), "tfrecord_lite")


def tfds_data_dir() -> str:
    """Where prepared TFDS datasets are: ``$TFDS_DATA_DIR``, else ``~/tensorflow_datasets``."""
    return os.path.expanduser(str(get("tfds_data_dir")))


def gzip_span_cache() -> int:
    """The bytes of inflated GZIP/ZLIB spans random reads may keep (0: none)."""
    return int(get("gzip_span_cache"))


def crc_backend() -> str:
    """The CRC32C backend named by ``TFRECORD_LITE_CRC_BACKEND`` (``""``: the fastest)."""
    return str(get("crc_backend"))


def system_zlib() -> bool:
    """Whether random access into GZIP/ZLIB may load the system's zlib library."""
    return not get("no_system_zlib")
