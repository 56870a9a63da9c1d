"""tfrecord_lite._installed: which of the two projects named ``tfrecord_lite`` an import gives.

The installs are laid out as pip lays them (a ``*.dist-info`` with METADATA and RECORD
beside the module), and every prediction is checked against what a real interpreter
imports from the same ``sys.path``.
"""

from __future__ import annotations

import importlib.machinery
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest

import tfrecord_lite
from tfrecord_lite import _installed

SO_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _dist_info(site: Path, name: str, version: str, files: list[str]) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    record = [*files, f"{info.name}/METADATA", f"{info.name}/RECORD"]
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in record), encoding="utf-8")


def install_ours(site: Path) -> Path:
    """A stand-in for this project's wheel: package ``tfrecord_lite`` saying who it is."""
    package = site / "tfrecord_lite"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("WHO = 'ours'\n", encoding="utf-8")
    _dist_info(site, "tfrecord-lite-np", "0.1.0", ["tfrecord_lite/__init__.py"])
    return package / "__init__.py"


def install_other(site: Path, *, loadable: bool) -> Path:
    """The other project: one top-level module. ``loadable``: as a source module that
    says who it is; else an extension-module file (the real one is a C++ extension),
    which fails if Python ever tries to load it."""
    site.mkdir(parents=True, exist_ok=True)
    if loadable:
        module = site / "tfrecord_lite.py"
        module.write_text("WHO = 'other'\n", encoding="utf-8")
    else:
        module = site / f"tfrecord_lite{SO_SUFFIX}"
        module.write_bytes(b"not an ELF file")
    _dist_info(site, "tfrecord_lite", "0.0.8", [module.name])
    return module


def imported_by_python(path: list[Path]) -> str:
    """What a fresh interpreter (no site-packages) imports as tfrecord_lite from ``path``."""
    code = "import sys; sys.path[:0] = sys.argv[1:]; import tfrecord_lite; print(tfrecord_lite.WHO)"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code, *map(str, path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_nothing_to_say_without_the_other_project(tmp_path: Path) -> None:
    ours = install_ours(tmp_path / "site")
    path = [str(tmp_path / "site")]
    assert _installed.find_provider("tfrecord-lite", path) is None
    assert _installed.conflict(path) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _installed.check(str(ours), path) is None


def test_both_in_one_site_packages_ours_wins(tmp_path: Path) -> None:
    site = tmp_path / "site"
    ours_file = install_ours(site)
    other_file = install_other(site, loadable=False)
    path = [str(site)]

    other = _installed.find_provider("tfrecord-lite", path)
    assert other == _installed.Provider("tfrecord_lite", "0.0.8", other_file.resolve())
    found = _installed.conflict(path)
    assert found is not None and found.ours_wins
    assert found.ours.file == ours_file.resolve()
    assert "`import tfrecord_lite` gives tfrecord-lite-np" in found.message
    assert "pip uninstall tfrecord-lite`" in found.message
    assert "0.0.8" in found.message and str(other_file.resolve()) in found.message
    # Python agrees: in one directory the package comes before the extension module
    assert imported_by_python([site]) == "ours"


@pytest.mark.parametrize("other_first", [True, False])
def test_sys_path_order_decides(tmp_path: Path, other_first: bool) -> None:
    install_ours(tmp_path / "site")
    install_other(tmp_path / "user-site", loadable=True)
    dirs = [tmp_path / "site", tmp_path / "user-site"]
    if other_first:
        dirs.reverse()
    found = _installed.conflict([str(d) for d in dirs])
    assert found is not None
    assert found.ours_wins is (not other_first)
    assert imported_by_python(dirs) == ("other" if other_first else "ours")
    if other_first:
        assert "gives tfrecord-lite (it comes first on sys.path)" in found.message
        assert "Fix: `pip uninstall tfrecord-lite`" in found.message


def test_check_warns_when_this_package_hides_the_other(tmp_path: Path) -> None:
    site = tmp_path / "site"
    ours_file = install_ours(site)
    install_other(site, loadable=False)
    with pytest.warns(_installed.ShadowedModuleWarning, match="pip uninstall tfrecord-lite`"):
        found = _installed.check(str(ours_file), [str(site)])
    assert found is not None and found.ours_wins


def test_check_from_a_source_tree(tmp_path: Path) -> None:
    # tfrecord_lite imported from a checkout (no dist-info of ours), the other installed
    tree = tmp_path / "checkout" / "tfrecord_lite"
    tree.mkdir(parents=True)
    (tree / "__init__.py").write_text("", encoding="utf-8")
    install_other(tmp_path / "site", loadable=False)
    path = [str(tmp_path / "checkout"), str(tmp_path / "site")]
    with pytest.warns(
        _installed.ShadowedModuleWarning, match=r"tfrecord-lite-np \(not installed\)"
    ):
        _installed.check(str(tree / "__init__.py"), path)


def test_a_stale_record_of_this_package_is_no_conflict(tmp_path: Path) -> None:
    # an editable install under the old distribution name leaves tfrecord_lite.egg-info
    # (Name: tfrecord-lite) whose SOURCES.txt lists this very package's files
    site = tmp_path / "checkout"
    ours_file = install_ours(site)
    egg = site / "tfrecord_lite.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: tfrecord-lite\nVersion: 0.1.0\n", encoding="utf-8"
    )
    (egg / "SOURCES.txt").write_text("tfrecord_lite/__init__.py\n", encoding="utf-8")
    other = _installed.find_provider("tfrecord-lite", [str(site)])
    assert other is not None and other.file == ours_file.resolve()
    assert _installed.conflict([str(site)]) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _installed.check(str(ours_file), [str(site)]) is None


def test_require_ours(tmp_path: Path) -> None:
    _installed.require_ours(tfrecord_lite)  # this package: nothing to say

    other_file = install_other(tmp_path / "site", loadable=True)
    theirs = types.ModuleType("tfrecord_lite")
    theirs.__file__ = str(other_file)
    with pytest.raises(
        _installed.ModuleConflictError, match=r"unrelated project tfrecord-lite 0\.0\.8"
    ):
        _installed.require_ours(theirs, [str(tmp_path / "site")])
    with pytest.raises(ImportError, match="pip install tfrecord-lite-np"):
        _installed.require_ours(theirs, [])
