"""The package's layering: every module imports only modules of its own layer or below.

Imports are read with ``ast`` from the source of every module in ``tfrecord_lite/``:
module-level and function-level (lazy) imports alike, ``from . import x``,
``from ._x import y``, ``import tfrecord_lite.x``, ``from tfrecord_lite import y``
(a name that is not a module comes from ``__init__``) and
``importlib.import_module("tfrecord_lite.x")``. ``if TYPE_CHECKING:`` imports count
too: they still must not point up the stack.

``LAYERS`` is the order given by the table in ``tfrecord_lite/__init__.py``'s
docstring (checked below to agree with it), completed with the modules the table
leaves out. A new module must be placed in ``LAYERS`` before the tests pass.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import tfrecord_lite

PACKAGE = "tfrecord_lite"
PACKAGE_DIR = Path(tfrecord_lite.__file__).parent

#: Bottom up. Within a layer, modules may import each other.
LAYERS: list[tuple[str, list[str]]] = [
    ("generated protobuf messages", ["example_pb2", "feature_pb2", "tensor_pb2"]),
    ("errors and the version: usable by all", ["_errors", "_version"]),
    ("CRC-32C", ["_crc"]),
    ("sans-I/O record framing, scanning, recovery", ["_framing", "_scan", "_recover"]),
    (
        "files: paths, reading, writing, compression, reading ahead",
        ["_fs", "_paths", "_compress", "_io", "_ahead"],
    ),
    ("feature specs, values, wire format", ["_schema", "_values", "_wire"]),
    ("building Examples", ["_example"]),
    ("parsing and schema inference", ["_parse", "_fastparse", "_infer"]),
    ("NumPy: decode_raw and images, whole files as columns", ["_decode", "_arrays", "_tensor"]),
    (
        "random access, sharding, datasets, PyTorch, command line, facades",
        [
            "_index",
            "_sharded",
            "_dataset",
            "torch",
            "_progress",
            "_images",
            "_cli",
            "io",
            "train",
            "data",
            "compat",
            "python_io",
            "image",
            "arrow",
            "ray",
            "dask",
            "tfds",
            "_tfds_features",
            "_tfds_cli",
        ],
    ),
    # Nothing inside the package may import the package itself: that is an import cycle.
    ("entry points: the package, python -m, the demo", ["__init__", "__main__", "demo"]),
]

LAYER_OF = {module: i for i, (_, modules) in enumerate(LAYERS) for module in modules}


def package_modules() -> dict[str, Path]:
    """Every module of the package: ``x.py``, and sub-packages by their ``__init__.py``."""
    modules = {p.stem: p for p in sorted(PACKAGE_DIR.glob("*.py"))}
    for init in sorted(PACKAGE_DIR.glob("*/__init__.py")):
        modules[init.parent.name] = init
    return modules


def _target(module: str) -> str:
    """``x`` for a module of the package, else ``__init__`` (a name taken from it)."""
    if (PACKAGE_DIR / f"{module}.py").exists() or (PACKAGE_DIR / module / "__init__.py").exists():
        return module
    return "__init__"


def imports_of(source: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """``(line, module)`` for every import of a package module in ``source``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.ImportFrom):
            if node.level > 1:
                raise AssertionError(
                    f"{filename}:{node.lineno}: relative import beyond the package"
                )
            if node.level == 1:
                base: str | None = node.module
            elif node.module == PACKAGE:
                base = None
            elif node.module and node.module.startswith(PACKAGE + "."):
                base = node.module[len(PACKAGE) + 1 :]
            else:
                continue
            if base is None:  # from . import x, y / from tfrecord_lite import x, y
                found += [(node.lineno, _target(alias.name)) for alias in node.names]
            else:
                found.append((node.lineno, base.split(".")[0]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE:
                    found.append((node.lineno, "__init__"))
                elif alias.name.startswith(PACKAGE + "."):
                    found.append((node.lineno, alias.name.split(".")[1]))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    target = arg.value
                    if target.startswith("."):
                        found.append((node.lineno, target.lstrip(".").split(".")[0]))
                    elif target == PACKAGE:
                        found.append((node.lineno, "__init__"))
                    elif target.startswith(PACKAGE + "."):
                        found.append((node.lineno, target.split(".")[1]))
    return found


def test_the_import_collector_sees_every_form() -> None:
    source = """
import os
import tfrecord_lite
import tfrecord_lite._io as io_
from . import _crc, train
from . import tf_record_iterator
from ._parse import parse_example
from tfrecord_lite import _schema, open
from tfrecord_lite._values import SparseValue
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._dataset import TFRecordDataset

def lazy():
    from ._index import find_index
    import importlib
    importlib.import_module("tfrecord_lite._cli")
    importlib.import_module("._images", __package__)

class C:
    def method(self):
        from ._arrays import read_examples
"""
    assert sorted(m for _, m in imports_of(source)) == sorted(
        [
            "__init__",
            "_io",
            "_crc",
            "train",
            "__init__",
            "_parse",
            "_schema",
            "__init__",
            "_values",
            "_dataset",
            "_index",
            "_cli",
            "_images",
            "_arrays",
        ]
    )


def test_every_module_has_a_layer() -> None:
    modules = set(package_modules())
    unplaced = sorted(modules - set(LAYER_OF))
    assert not unplaced, f"put these modules into a layer in tests/test_layers.py: {unplaced}"
    gone = sorted(set(LAYER_OF) - modules)
    assert not gone, f"tests/test_layers.py names modules that do not exist: {gone}"
    assert len(LAYER_OF) == sum(len(m) for _, m in LAYERS)  # each module placed once


def test_imports_respect_the_layers() -> None:
    violations = []
    for module, path in package_modules().items():
        for line, target in imports_of(path.read_text(encoding="utf-8"), str(path)):
            if target not in LAYER_OF:
                violations.append(f"{path.name}:{line}: imports unknown module {target!r}")
            elif target == module:
                violations.append(f"{path.name}:{line}: imports itself")
            elif LAYER_OF[target] > LAYER_OF[module]:
                violations.append(
                    f"{path.name}:{line}: {module} (layer {LAYER_OF[module]}: "
                    f"{LAYERS[LAYER_OF[module]][0]}) imports {target} (layer "
                    f"{LAYER_OF[target]}: {LAYERS[LAYER_OF[target]][0]})"
                )
    assert not violations, "imports that go up the layers:\n" + "\n".join(violations)


def docstring_table() -> list[list[str]]:
    """The modules in each row of the layer table of the package docstring, top row first."""
    doc = tfrecord_lite.__doc__ or ""
    lines = doc.splitlines()
    rules = [i for i, line in enumerate(lines) if re.fullmatch(r"=+ +=+", line.strip())]
    assert len(rules) >= 2, "the package docstring has no layer table"
    width = len(lines[rules[0]].split()[0])
    rows: list[list[str]] = []
    continued = False
    for line in lines[rules[0] + 1 : rules[1]]:
        cell = line[:width].strip()
        if not cell:
            continue
        names = re.findall(r"``(\w+)``", cell)
        if continued:
            rows[-1] += names
        else:
            rows.append(names)
        continued = cell.endswith(",")
    return rows


def test_the_package_docstring_table_agrees() -> None:
    rows = docstring_table()
    assert len(rows) >= 5
    named = [m for row in rows for m in row]
    unknown = sorted(set(named) - set(LAYER_OF))
    assert not unknown, f"the package docstring's layer table names unknown modules: {unknown}"
    # each row is at or above the layers of every row before it
    for upper, lower in zip(rows, rows[1:]):
        top_of_upper = max(LAYER_OF[m] for m in upper)
        bottom_of_lower = min(LAYER_OF[m] for m in lower)
        assert top_of_upper <= bottom_of_lower, (upper, lower)


@pytest.mark.parametrize("module", ["_errors", "_crc", "_fs", "_schema", "_values"])
def test_low_modules_import_nothing_from_the_package_above_errors(module: str) -> None:
    path = PACKAGE_DIR / f"{module}.py"
    targets = {t for _, t in imports_of(path.read_text(encoding="utf-8"))}
    assert targets <= {"_errors", "_version"}, targets
