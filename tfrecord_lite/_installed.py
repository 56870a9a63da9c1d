"""Which installed project answers ``import tfrecord_lite``.

Two projects on the package index install a top-level module named ``tfrecord_lite``:
this one (distribution ``tfrecord-lite-np``) and an unrelated one, ``tfrecord-lite``
(a Cython TFRecord parser by another author, with ``tf_record_iterator`` and
``decode_example``). Installed side by side, one hides the other: Python imports the
first ``tfrecord_lite`` it finds on ``sys.path``, and in one directory a package
(ours) before an extension module (theirs). Nothing fails at install time, so the
hidden one only shows up later as strange ``AttributeError``\\s.

:func:`conflict` reads the installed distributions' records (``importlib.metadata``)
and tells which one ``import tfrecord_lite`` gives for a given ``sys.path``;
:func:`check` turns that into a :class:`ShadowedModuleWarning` when this package is
imported while the other project is installed; :func:`require_ours` raises
:class:`ModuleConflictError` when a module named ``tfrecord_lite`` is not this project's.

Standard library only, so it can run before anything else of the package.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import os
import sys
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import NamedTuple, Optional

__all__ = [
    "DISTRIBUTION",
    "MODULE",
    "OTHER_DISTRIBUTION",
    "Conflict",
    "ModuleConflictError",
    "Provider",
    "ShadowedModuleWarning",
    "check",
    "conflict",
    "find_provider",
    "require_ours",
]

#: This project's distribution name (``pip install tfrecord-lite-np``).
DISTRIBUTION = "tfrecord-lite-np"
#: The unrelated project whose module has the same name.
OTHER_DISTRIBUTION = "tfrecord-lite"
#: The import name both projects install.
MODULE = "tfrecord_lite"


class ShadowedModuleWarning(UserWarning):
    """Both projects that install the module ``tfrecord_lite`` are installed."""


class ModuleConflictError(ImportError):
    """``import tfrecord_lite`` gave the other project's module, not this one."""


class Provider(NamedTuple):
    """An installed distribution that provides the module ``tfrecord_lite``."""

    distribution: str
    version: str
    #: The file ``import tfrecord_lite`` would load from it: a package's
    #: ``tfrecord_lite/__init__.py`` or a top-level module (``tfrecord_lite.*.so``...).
    file: Path


class Conflict(NamedTuple):
    """Both providers, which of them ``import tfrecord_lite`` gives, and why it matters."""

    ours: Provider
    other: Provider
    #: True when ``import tfrecord_lite`` gives this project (the other is hidden).
    ours_wins: bool
    message: str


# Python's path finder tries, in each sys.path entry: a package directory, then extension
# modules, then source, then bytecode (importlib._bootstrap_external._get_supported_file_loaders).
_KIND_ORDER = (
    [("/__init__.py", 0)]
    + [(s, 1) for s in importlib.machinery.EXTENSION_SUFFIXES]
    + [(s, 2) for s in importlib.machinery.SOURCE_SUFFIXES]
    + [(s, 3) for s in importlib.machinery.BYTECODE_SUFFIXES]
)


def _module_file(files: Iterable[str]) -> Optional[tuple[str, int]]:
    """The file among a distribution's (relative, ``/``-separated) files that Python would
    import as ``tfrecord_lite``, with its kind (0 package ... 3 bytecode)."""
    best: Optional[tuple[str, int]] = None
    for name in files:
        for suffix, kind in _KIND_ORDER:
            if name == MODULE + suffix and (best is None or kind < best[1]):
                best = (name, kind)
    return best


def find_provider(distribution: str, path: Optional[Sequence[str]] = None) -> Optional[Provider]:
    """The installed ``distribution`` (found on ``path``, default ``sys.path``) if it
    provides the module ``tfrecord_lite``; None when it is not installed or does not."""
    search = [os.getcwd() if p == "" else p for p in (sys.path if path is None else path)]
    for dist in importlib.metadata.distributions(name=distribution, path=search):
        files = [str(f).replace("\\", "/") for f in (dist.files or [])]
        found = _module_file(files)
        if found is None:
            continue
        return Provider(
            distribution=str(dist.metadata["Name"]),
            version=str(dist.version),
            file=Path(str(dist.locate_file(found[0]))).resolve(),
        )
    return None


def _rank(file: Path, path: Sequence[str]) -> tuple[int, int]:
    """Where ``file`` stands in the import order for ``path``: (entry index, kind)."""
    is_package = file.name == "__init__.py"
    entry = (file.parent.parent if is_package else file.parent).resolve()
    kind = 0 if is_package else (_module_file([file.name]) or ("", 9))[1]
    for i, p in enumerate(path):
        try:
            if Path(os.getcwd() if p == "" else p).resolve() == entry:
                return (i, kind)
        except OSError:  # pragma: no cover - an unreadable path entry
            continue
    return (len(path), kind)


def conflict(
    path: Optional[Sequence[str]] = None, ours: Optional[Provider] = None
) -> Optional[Conflict]:
    """Both projects are installed on ``path`` (default ``sys.path``): which one
    ``import tfrecord_lite`` gives, with a message that says what to do. None when the
    other project is not installed (or this one is not: nothing conflicts)."""
    search = list(sys.path if path is None else path)
    other = find_provider(OTHER_DISTRIBUTION, search)
    if other is None:
        return None
    if ours is None:
        ours = find_provider(DISTRIBUTION, search)
    if ours is None or ours.file == other.file:
        # (the same file: a stale record of this very package, such as the
        # tfrecord_lite.egg-info an editable install under the old name left behind)
        return None
    ours_wins = _rank(ours.file, search) <= _rank(other.file, search)
    both = (
        f"Two installed projects provide the module `{MODULE}`: {DISTRIBUTION} "
        f"{ours.version} ({ours.file.parent}), the TFRecord reader and writer "
        f"without TensorFlow, and the unrelated {OTHER_DISTRIBUTION} {other.version} "
        f"({other.file})."
    )
    if ours_wins:
        message = (
            f"{both} `import {MODULE}` gives {DISTRIBUTION}; {OTHER_DISTRIBUTION} cannot be "
            f"imported while both are installed. Keep one: `pip uninstall "
            f"{OTHER_DISTRIBUTION}` (or, if you wanted that one, `pip uninstall {DISTRIBUTION}`)."
        )
    else:
        message = (
            f"{both} `import {MODULE}` gives {OTHER_DISTRIBUTION} (it comes first on "
            f"sys.path), so none of {DISTRIBUTION}'s functions are there. Fix: `pip "
            f"uninstall {OTHER_DISTRIBUTION}`."
        )
    return Conflict(ours=ours, other=other, ours_wins=ours_wins, message=message)


def check(module_file: str, path: Optional[Sequence[str]] = None) -> Optional[Conflict]:
    """Warn (:class:`ShadowedModuleWarning`) when this package, imported from
    ``module_file`` (its ``__init__.py``), shares ``path`` with the other project.

    Meant for ``tfrecord_lite/__init__.py``: ``check(__file__)``. Returns the conflict.
    """
    search = list(sys.path if path is None else path)
    other = find_provider(OTHER_DISTRIBUTION, search)
    if other is None:  # the common case: one metadata look-up by name
        return None
    ours = find_provider(DISTRIBUTION, search)
    if ours is None:  # imported from a source tree: the package that runs is this one
        version = "(not installed)"
        ours = Provider(DISTRIBUTION, version, Path(module_file).resolve())
    found = conflict(search, ours=ours)
    if found is not None:
        warnings.warn(found.message, ShadowedModuleWarning, stacklevel=3)
    return found


def require_ours(module: ModuleType, path: Optional[Sequence[str]] = None) -> None:
    """Raise :class:`ModuleConflictError` if ``module`` (what ``import tfrecord_lite``
    gave) is not this project's package, saying which project it is and what to do."""
    file = getattr(module, "__file__", None)
    if getattr(module, "__path__", None) is not None and hasattr(module, "TFRecordWriter"):
        return
    search = list(sys.path if path is None else path)
    other = find_provider(OTHER_DISTRIBUTION, search)
    where = f" ({file})" if file else ""
    if other is not None and file is not None and Path(file).resolve() == other.file:
        raise ModuleConflictError(
            f"`import {MODULE}` gave the unrelated project {OTHER_DISTRIBUTION} "
            f"{other.version}{where}, not {DISTRIBUTION}. Fix: `pip uninstall "
            f"{OTHER_DISTRIBUTION}` (and `pip install {DISTRIBUTION}` if it is not installed).",
            name=MODULE,
        )
    raise ModuleConflictError(
        f"`import {MODULE}` gave a module that is not {DISTRIBUTION}{where}: another "
        f"`{MODULE}` comes first on sys.path. `pip install {DISTRIBUTION}` installs the "
        f"TFRecord reader and writer; `pip uninstall {OTHER_DISTRIBUTION}` removes the "
        "unrelated project of that name.",
        name=MODULE,
    )
