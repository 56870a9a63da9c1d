"""The layering checker (``_layering.py``) on planted trees: each kind of violation is
written into a small package tree under ``tmp_path`` and must be reported, with its
file and line; the same tree without it must be clean (so no test passes because the
checker reports everything).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from _layering import (
    Allowance,
    Package,
    dynamic_violations,
    find_cycle,
    import_graph,
    integration_violations,
    layer_violations,
    private_violations,
    read_package,
    stale_allowances,
)

#: A clean tree of real unit names: errors, the record format, files (with a private
#: module), Examples (with a kernel loader that imports by a computed name), an integration.
BASE = {
    "__init__.py": "from ._files import open_file\nfrom .ray import read_ray\n",
    "_errors.py": "class TFRecordError(Exception):\n    pass\n",
    "_record/__init__.py": "from ._crc import crc\n",
    "_record/_crc.py": """
        import sys

        from .._errors import TFRecordError


        def crc(data: bytes) -> int:
            if "crcmod.crcmod" in sys.modules:  # a package outside the tree: no edge
                return sys.modules["crcmod.crcmod"].crc(data)
            raise TFRecordError("no crc")
        """,
    "_files/__init__.py": "from ._fs import open_file\n",
    "_files/_fs.py": """
        from .._record import crc

        _cache: dict[str, int] = {}


        def open_file(path: str) -> int:
            return crc(path.encode())
        """,
    "_examples/__init__.py": """
        from .. import _files
        from ._loader import load


        def read(path: str) -> int:
            return _files.open_file(path) + len(load("_kernels").__name__)
        """,
    "_examples/_loader.py": """
        import importlib

        KERNELS = ("_kernels",)


        def load(name: str = "_kernels"):
            return importlib.import_module(f"{__package__}.{name}")
        """,
    "_examples/_kernels.py": "from .._files import open_file\n",
    "ray.py": "from ._examples import read\n\n\ndef read_ray(path: str) -> int:\n    return read(path)\n",
}

LOADER = {
    "_examples._loader": Allowance(
        "kernels compile on first use", frozenset({"_examples._kernels"})
    )
}


def make_tree(tmp_path: Path, changes: dict[str, str] | None = None) -> Path:
    """BASE written under ``tmp_path/tfrecord_lite``, with ``changes`` (file -> source)
    replacing or adding files."""
    root = tmp_path / "tfrecord_lite"
    files = {**BASE, **(changes or {})}
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return root


def read(root: Path) -> Package:
    return read_package(root, LOADER)


def everything(pkg: Package) -> list[str]:
    cycle = find_cycle(import_graph(pkg))
    return [
        *layer_violations(pkg),
        *integration_violations(pkg),
        *private_violations(pkg),
        *dynamic_violations(pkg),
        *stale_allowances(pkg),
        *([" -> ".join(cycle)] if cycle else []),
    ]


def test_the_clean_tree_is_clean(tmp_path: Path) -> None:
    pkg = read(make_tree(tmp_path))
    assert everything(pkg) == []
    # the loader's dynamic import is resolved into an edge
    assert "_examples._kernels" in import_graph(pkg)["_examples._loader"]


# --------------------------------------------------------------------------- computed names


def test_an_integration_imported_by_an_f_string_in_the_record_layer(tmp_path: Path) -> None:
    crc = """
        import importlib


        def crc(data: bytes, name: str = "ray") -> int:
            return importlib.import_module(f"tfrecord_lite.{name}").read_ray(data)
        """
    pkg = read(make_tree(tmp_path, {"_record/_crc.py": crc}))
    found = dynamic_violations(pkg)
    assert len(found) == 1
    assert found[0].startswith(
        "tfrecord_lite/_record/_crc.py:5: _record._crc imports by a computed name"
    )
    assert 'importlib.import_module(f"tfrecord_lite.{name}")' in found[0]
    # allow-listed, it resolves to the integration it loads: then the layers catch it
    allowed = {**LOADER, "_record._crc": Allowance("planted", frozenset({"ray"}))}
    pkg = read_package(make_tree(tmp_path, {"_record/_crc.py": crc}), allowed)
    assert dynamic_violations(pkg) == []
    assert integration_violations(pkg) == [
        "tfrecord_lite/_record/_crc.py:5: _record._crc imports (dynamically) ray"
    ]
    assert any(
        "_record._crc" in v and "imports (dynamically) ray" in v for v in layer_violations(pkg)
    )


@pytest.mark.parametrize(
    "call",
    [
        "importlib.import_module(name)",
        "importlib.import_module('.' + name, __package__)",
        "__import__(name)",
        "builtins.__import__(name)",
        "im(name)",
        "importlib.import_module(name=name)",
    ],
)
def test_every_form_of_a_computed_import_is_seen(tmp_path: Path, call: str) -> None:
    fs = f"""
        import builtins
        import importlib
        from importlib import import_module as im


        def open_file(path: str, name: str = "json") -> object:
            return {call}
        """
    found = dynamic_violations(read(make_tree(tmp_path, {"_files/_fs.py": fs})))
    assert [v.split(": ")[0] for v in found] == ["tfrecord_lite/_files/_fs.py:7"], found


@pytest.mark.parametrize(
    "use",
    [
        'sys.modules["tfrecord_lite.ray"]',
        'sys.modules.get("tfrecord_lite.ray")',
        '"tfrecord_lite.ray" in sys.modules',
        'modules.pop("tfrecord_lite.ray", None)',
    ],
)
def test_an_integration_looked_up_in_sys_modules_by_the_files_layer(
    tmp_path: Path, use: str
) -> None:
    fs = f"""
        import sys
        from sys import modules


        def open_file(path: str) -> object:
            return {use}
        """
    pkg = read(make_tree(tmp_path, {"_files/_fs.py": fs}))
    assert integration_violations(pkg) == [
        "tfrecord_lite/_files/_fs.py:6: _files._fs looks up in sys.modules ray"
    ]
    assert [v.split(": ")[0] for v in layer_violations(pkg) if "sys.modules ray" in v] == [
        "tfrecord_lite/_files/_fs.py:6"
    ]
    assert dynamic_violations(pkg) == []  # a constant name: an edge, not a computed import


@pytest.mark.parametrize("use", ["sys.modules[name]", "sys.modules.get(name)", "len(sys.modules)"])
def test_sys_modules_by_a_computed_name_or_as_a_whole(tmp_path: Path, use: str) -> None:
    fs = f"""
        import sys


        def open_file(path: str, name: str = "tfrecord_lite.ray") -> object:
            return {use}
        """
    found = dynamic_violations(read(make_tree(tmp_path, {"_files/_fs.py": fs})))
    assert [v.split(": ")[0] for v in found] == ["tfrecord_lite/_files/_fs.py:5"], found


def test_an_allowance_must_say_what_it_loads(tmp_path: Path) -> None:
    # a new call site loads another module: the allowance no longer says what the code does
    init = BASE["_examples/__init__.py"].replace('load("_kernels")', 'load("_more")')
    root = make_tree(tmp_path, {"_examples/__init__.py": init, "_examples/_more.py": "X = 1\n"})
    found = dynamic_violations(read(root))
    assert found == [
        "ALLOWED_DYNAMIC says _examples._loader loads ['_examples._kernels']; "
        "its source loads ['_examples._kernels', '_examples._more']"
    ]


def test_a_name_that_cannot_be_resolved_is_refused(tmp_path: Path) -> None:
    init = BASE["_examples/__init__.py"].replace('load("_kernels")', "load(path)")
    found = dynamic_violations(read(make_tree(tmp_path, {"_examples/__init__.py": init})))
    assert len(found) == 1 and "cannot resolve it" in found[0], found
    assert found[0].startswith("tfrecord_lite/_examples/_loader.py:7:")


def test_a_stale_allowance_is_reported(tmp_path: Path) -> None:
    allowed = {**LOADER, "_files._fs": Allowance("no longer true", frozenset())}
    pkg = read_package(make_tree(tmp_path), allowed)
    assert stale_allowances(pkg) == ["ALLOWED_DYNAMIC: _files._fs"]


# --------------------------------------------------------------------------- attribute access


def test_a_private_module_reached_by_attribute(tmp_path: Path) -> None:
    init = """
        from .. import _files


        def read(path: str) -> int:
            return _files._fs.open_file(path)
        """
    found = private_violations(read(make_tree(tmp_path, {"_examples/__init__.py": init})))
    assert found == [
        "tfrecord_lite/_examples/__init__.py:5: _examples reaches (by attribute) _files._fs, a "
        "module inside another unit: use _files's public names instead"
    ]


@pytest.mark.parametrize(
    ("imports", "expr", "module", "name"),
    [
        ("import tfrecord_lite", "tfrecord_lite._files._fs.open_file", "_files._fs", None),
        ("import tfrecord_lite._files as f", "f._fs._cache", "_files._fs", "_cache"),
        ("from tfrecord_lite import _files", "_files._fs", "_files._fs", None),
        ("from .. import _files as files", "files._private", "_files", "_private"),
    ],
)
def test_every_way_to_reach_a_private_module(
    tmp_path: Path, imports: str, expr: str, module: str, name: str | None
) -> None:
    init = f"{imports}\n\n\ndef read(path: str) -> object:\n    return {expr}\n"
    found = private_violations(read(make_tree(tmp_path, {"_examples/__init__.py": init})))
    assert found and all(v.startswith("tfrecord_lite/_examples/__init__.py:5: ") for v in found)
    if module.count("."):
        assert any(f"reaches (by attribute) {module}, a module inside" in v for v in found)
    if name:
        assert any(f"takes the private name {name} from {module}" in v for v in found)


def test_public_attributes_of_another_unit_are_fine(tmp_path: Path) -> None:
    init = "from .. import _files\n\n\ndef read(path: str) -> int:\n    return _files.open_file(path)\n"
    assert private_violations(read(make_tree(tmp_path, {"_examples/__init__.py": init}))) == []


def test_an_attribute_edge_against_the_layers(tmp_path: Path) -> None:
    crc = "import tfrecord_lite\n\n\ndef crc(data: bytes) -> object:\n    return tfrecord_lite.ray.read_ray\n"
    pkg = read(make_tree(tmp_path, {"_record/_crc.py": crc}))
    assert integration_violations(pkg) == [
        "tfrecord_lite/_record/_crc.py:5: _record._crc reaches (by attribute) ray"
    ]


# --------------------------------------------------------------------------- cycles


def test_a_cycle_through_a_dynamic_import(tmp_path: Path) -> None:
    # the kernels import the loader that imports them by a computed name
    kernels = "from ._loader import KERNELS\n"
    pkg = read(make_tree(tmp_path, {"_examples/_kernels.py": kernels}))
    assert cycle_of(import_graph(pkg)) == {"_examples._kernels", "_examples._loader"}


def test_a_cycle_through_a_sys_modules_look_up(tmp_path: Path) -> None:
    fs = """
        import sys

        from .._record import crc


        def open_file(path: str) -> object:
            return sys.modules["tfrecord_lite._examples._kernels"]
        """
    graph = import_graph(read(make_tree(tmp_path, {"_files/_fs.py": fs})))
    assert cycle_of(graph) == {"_examples._kernels", "_files", "_files._fs"}


def cycle_of(graph: dict[str, set[str]]) -> set[str]:
    cycle = find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1]
    return set(cycle)
