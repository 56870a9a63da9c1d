"""The package's architecture, checked: layers, private names, cycles, module size.

The package is made of *units*: a top-level module (``io.py``, ``arrow.py``...) or a
subpackage (``_record/``, ``_files/``...). ``LAYERS`` orders the units bottom up, and
the table in ``tfrecord_lite/__init__.py``'s docstring is checked to say the same.

The rules, each a test below:

* **Layers**: a module imports only from its own unit, from units of its own layer
  (where the layer allows it), or from units of the layers below.
* **Integrations** (``torch``, ``arrow``, ``ray``, ``dask``, ``tfds`` and the rest of
  their layer) are never imported by the core, and never by each other: what they
  share lives in ``_tables``, below them.
* **Public names across units**: an import from another unit goes through that unit's
  package (``from .._files import TFRecordWriter``) or a top-level module, never into a
  module inside another subpackage, and never takes a name that starts with ``_``.
* **No import cycle** between modules (function-level imports count too).
* **Size**: no module passes ``MAX_LINES`` lines unless its docstring says why, in a
  paragraph that starts with ``Why one module:``.

Imports are read with ``ast`` from the source of every module: module-level and
function-level (lazy) imports alike, ``if TYPE_CHECKING:`` ones included, relative and
absolute, and ``importlib.import_module("tfrecord_lite.x")``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import tfrecord_lite

PACKAGE = "tfrecord_lite"
PACKAGE_DIR = Path(tfrecord_lite.__file__).parent
MAX_LINES = 800


@dataclass(frozen=True)
class Layer:
    title: str
    units: tuple[str, ...]
    #: whether the units of this layer may import each other
    peers_import: bool = True


#: Bottom up.
LAYERS: list[Layer] = [
    Layer("generated protobuf messages", ("example_pb2", "feature_pb2", "tensor_pb2")),
    Layer(
        "errors, the version and the install check, used by every layer",
        ("_errors", "_version", "_installed"),
    ),
    Layer("the record format: constants, CRC, framing, scanning, resync (no I/O)", ("_record",)),
    Layer(
        "files: paths and URLs, compression, writer, readers, salvage, index, shards",
        ("_files",),
    ),
    Layer(
        "Examples: specs, values, building, the parse plan and its engines, inference",
        ("_examples",),
    ),
    Layer("decoding: raw bytes, images, tensors, image folders", ("_decoding",)),
    Layer("datasets: sources, ops, cache, collate", ("_data",)),
    Layer(
        "the TensorFlow-named namespaces",
        ("io", "train", "data", "python_io", "compat", "image"),
    ),
    Layer(
        "the table layer the integrations share: Arrow type mapping, read plan, file pieces",
        ("_tables",),
    ),
    Layer(
        "integrations (optional extras)",
        ("torch", "arrow", "ray", "dask", "spark", "daft", "hf", "tfds"),
        peers_import=False,
    ),
    Layer("the command line", ("_cli",)),
    # Nothing inside the package may import the package itself: that is an import cycle.
    Layer("entry points: the package, python -m, the demo", ("__init__", "__main__", "demo")),
]

INTEGRATIONS = next(layer.units for layer in LAYERS if not layer.peers_import)

#: Today's exceptions, each a known debt to pay off: (rule, module, imported). Empty is the goal.
ALLOWED: set[tuple[str, str, str]] = set()
#: Modules allowed over MAX_LINES without a reason (debt, like ALLOWED). Empty is the goal.
ALLOWED_LONG: set[str] = set()

LAYER_OF = {unit: i for i, layer in enumerate(LAYERS) for unit in layer.units}


# --------------------------------------------------------------------------- the package's modules


def module_files() -> dict[str, Path]:
    """Every module of the package by dotted name below it (``_files._io``, ``arrow``)."""
    out: dict[str, Path] = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        rel = path.relative_to(PACKAGE_DIR).with_suffix("")
        parts = list(rel.parts)
        if "__pycache__" in parts:
            continue
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def is_package(module: str) -> bool:
    return (
        module != "__init__" and (PACKAGE_DIR / module.replace(".", "/") / "__init__.py").exists()
    )


def unit_of(module: str) -> str:
    return module.split(".")[0]


def existing_units() -> set[str]:
    return {unit_of(m) for m in module_files()}


# --------------------------------------------------------------------------- the imports


@dataclass(frozen=True)
class Import:
    line: int
    #: the module imported from, dotted below the package ("" for the package itself)
    module: str
    #: the names taken (empty for ``import x``)
    names: tuple[str, ...]


def _package_of(module: str, path: Path) -> str:
    """The package a module's relative imports start from."""
    if path.name == "__init__.py":
        return "" if module == "__init__" else module
    return module.rpartition(".")[0]


def imports_of(source: str, module: str, path: Path) -> list[Import]:
    """Every import of a package module in ``source`` (of ``module`` at ``path``)."""
    found: list[Import] = []
    here = _package_of(module, path)
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names)
            if node.level:
                parts = here.split(".") if here else []
                up = node.level - 1
                if up > len(parts):
                    raise AssertionError(
                        f"{path}:{node.lineno}: relative import beyond the package"
                    )
                base = parts[: len(parts) - up]
                if node.module:
                    base = base + node.module.split(".")
                found.append(Import(node.lineno, ".".join(base), names))
            elif node.module == PACKAGE:
                found.append(Import(node.lineno, "", names))
            elif node.module and node.module.startswith(PACKAGE + "."):
                found.append(Import(node.lineno, node.module[len(PACKAGE) + 1 :], names))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE:
                    found.append(Import(node.lineno, "", ()))
                elif alias.name.startswith(PACKAGE + "."):
                    found.append(Import(node.lineno, alias.name[len(PACKAGE) + 1 :], ()))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    target = arg.value
                    if target.startswith("."):
                        dots = len(target) - len(target.lstrip("."))
                        parts = here.split(".") if here else []
                        base = parts[: len(parts) - (dots - 1)] + target.lstrip(".").split(".")
                        found.append(Import(node.lineno, ".".join(p for p in base if p), ()))
                    elif target == PACKAGE:
                        found.append(Import(node.lineno, "", ()))
                    elif target.startswith(PACKAGE + "."):
                        found.append(Import(node.lineno, target[len(PACKAGE) + 1 :], ()))
    return found


def targets_of(imp: Import, modules: dict[str, Path]) -> list[str]:
    """The modules an import runs: ``from pkg import sub`` runs the submodule ``pkg.sub``."""
    base = imp.module or "__init__"
    out = []
    for name in imp.names or ("",):
        sub = f"{imp.module}.{name}" if imp.module else name
        if name and sub in modules:
            out.append(sub)
        else:
            out.append(base)
    return out


def all_imports() -> list[tuple[str, Path, Import]]:
    modules = module_files()
    return [
        (module, path, imp)
        for module, path in modules.items()
        for imp in imports_of(path.read_text(encoding="utf-8"), module, path)
    ]


def _where(path: Path, imp: Import) -> str:
    return f"{path.relative_to(PACKAGE_DIR.parent)}:{imp.line}"


# --------------------------------------------------------------------------- the rules


def test_the_import_reader_sees_every_form() -> None:
    source = """
import os
import tfrecord_lite
import tfrecord_lite._files._io as io_
from . import _crc, train
from . import tf_record_iterator
from ._parse import parse_example
from .. import _files
from .._record import encode_record
from tfrecord_lite._examples import _schema
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._data import TFRecordDataset

def lazy():
    import importlib
    importlib.import_module("tfrecord_lite._cli")
    importlib.import_module("..tfds", __package__)

class C:
    def method(self):
        from ._columns import read_examples
"""
    path = PACKAGE_DIR / "_examples" / "_infer.py"
    got = sorted((i.module, i.names) for i in imports_of(source, "_examples._infer", path))
    assert got == sorted(
        [
            ("", ()),
            ("_files._io", ()),
            ("_examples", ("_crc", "train")),
            ("_examples", ("tf_record_iterator",)),
            ("_examples._parse", ("parse_example",)),
            ("", ("_files",)),
            ("_record", ("encode_record",)),
            ("_examples", ("_schema",)),
            ("_data", ("TFRecordDataset",)),
            ("_cli", ()),
            ("tfds", ()),
            ("_examples._columns", ("read_examples",)),
        ]
    )


def test_every_unit_has_a_layer() -> None:
    units = existing_units()
    unplaced = sorted(units - set(LAYER_OF))
    assert not unplaced, f"put these units into a layer in tests/api/test_layers.py: {unplaced}"
    assert len(LAYER_OF) == sum(len(layer.units) for layer in LAYERS)  # each unit placed once


def _check(rule: str, module: str, target: str, message: str, out: list[str]) -> None:
    if (rule, module, target) not in ALLOWED:
        out.append(message)


def test_imports_respect_the_layers() -> None:
    modules = module_files()
    violations: list[str] = []
    for module, path, imp in all_imports():
        src = unit_of(module)
        for target in targets_of(imp, modules):
            dst = unit_of(target)
            if dst == src:
                continue
            if dst not in LAYER_OF:
                violations.append(f"{_where(path, imp)}: imports unknown unit {dst!r}")
                continue
            a, b = LAYER_OF[src], LAYER_OF[dst]
            if b > a or (b == a and not LAYERS[a].peers_import):
                _check(
                    "layer",
                    module,
                    target,
                    f"{_where(path, imp)}: {module} ({LAYERS[a].title}) imports {target} "
                    f"({LAYERS[b].title})",
                    violations,
                )
    assert not violations, "imports against the layers:\n" + "\n".join(violations)


def test_the_core_never_imports_an_integration() -> None:
    top = next(i for i, layer in enumerate(LAYERS) if not layer.peers_import)
    core = {unit for layer in LAYERS[: LAYER_OF["python_io"] + 1] for unit in layer.units}
    assert LAYER_OF["python_io"] < top
    modules = module_files()
    found = [
        f"{_where(path, imp)}: {module} imports {target}"
        for module, path, imp in all_imports()
        if unit_of(module) in core
        for target in targets_of(imp, modules)
        if unit_of(target) in INTEGRATIONS
    ]
    assert not found, "\n".join(found)


def test_only_public_names_cross_units() -> None:
    violations: list[str] = []
    for module, path, imp in all_imports():
        src = unit_of(module)
        if unit_of(imp.module or "__init__") == src and imp.module:
            continue  # inside its own unit anything goes
        if not imp.module:  # from the package itself: entry points only (layers test)
            continue
        into = imp.module.split(".")
        if len(into) > 1 and is_package(into[0]):
            _check(
                "private",
                module,
                imp.module,
                f"{_where(path, imp)}: {module} imports from {imp.module}, a module inside "
                f"another unit: import from {into[0]} instead",
                violations,
            )
        for name in imp.names:
            if name.startswith("_") and not name.startswith("__"):
                _check(
                    "private",
                    module,
                    f"{imp.module}.{name}",
                    f"{_where(path, imp)}: {module} imports the private name {name} "
                    f"from {imp.module}",
                    violations,
                )
    assert not violations, "private names used across units:\n" + "\n".join(violations)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, _, imp in all_imports():
        for target in targets_of(imp, modules):
            if target != module and target in modules:
                graph[module].add(target)
    return graph


def test_no_import_cycle() -> None:
    graph = import_graph()
    for rule, module, target in ALLOWED:
        if rule == "cycle":
            graph[module].discard(target)
    cycle = _cycle(graph)
    assert cycle is None, "an import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_is_too_long_without_a_reason() -> None:
    too_long = []
    for module, path in module_files().items():
        if module.endswith("_pb2") or module in ALLOWED_LONG:
            continue
        source = path.read_text(encoding="utf-8")
        lines = len(source.splitlines())
        doc = ast.get_docstring(ast.parse(source)) or ""
        if lines > MAX_LINES and "Why one module:" not in doc:
            too_long.append(f"{module}: {lines} lines")
    assert not too_long, (
        f"modules over {MAX_LINES} lines whose docstring gives no 'Why one module:' reason:\n"
        + "\n".join(too_long)
    )


def test_the_allow_lists_hold_only_live_debts() -> None:
    """An entry that no longer matches anything must go, so the lists only shrink."""
    modules = module_files()
    for module in ALLOWED_LONG:
        assert module in modules, module
        assert len(modules[module].read_text(encoding="utf-8").splitlines()) > MAX_LINES, module
    live = set()
    for module, _, imp in all_imports():
        live |= {(module, t) for t in targets_of(imp, modules)}
        live |= {(module, imp.module)} | {(module, f"{imp.module}.{n}") for n in imp.names}
    stale = sorted(e for e in ALLOWED if (e[1], e[2]) not in live)
    assert not ALLOWED_LONG & {m for m in modules if m.endswith("_pb2")}
    assert not stale, f"allow-list entries that no longer occur: {stale}"


# --------------------------------------------------------------------------- the docstring table


def docstring_table() -> list[list[str]]:
    """The units named in each row of the package docstring's layer table, top row first."""
    doc = tfrecord_lite.__doc__ or ""
    lines = doc.splitlines()
    rules = [i for i, line in enumerate(lines) if re.fullmatch(r"=+ +=+", line.strip())]
    assert len(rules) >= 3, "the package docstring has no layer table"
    width = len(lines[rules[0]].split()[0])
    rows: list[list[str]] = []
    continued = False
    for line in lines[rules[1] + 1 : rules[2]]:
        cell = line[:width].strip()
        if not cell:
            continue
        names = [n.rstrip("/") for n in re.findall(r"``([\w/]+)``", cell)]
        if continued:
            rows[-1] += names
        else:
            rows.append(names)
        continued = cell.endswith(",")
    return rows


def test_the_package_docstring_table_is_the_layering() -> None:
    rows = docstring_table()
    expected = [sorted(layer.units) for layer in reversed(LAYERS)]
    assert [sorted(r) for r in rows] == expected, (
        "the table in tfrecord_lite/__init__.py's docstring must list LAYERS, top layer first"
    )


@pytest.mark.parametrize("module", ["_errors", "_version"])
def test_the_base_imports_nothing_from_the_package(module: str) -> None:
    path = PACKAGE_DIR / f"{module}.py"
    assert not imports_of(path.read_text(encoding="utf-8"), module, path)
