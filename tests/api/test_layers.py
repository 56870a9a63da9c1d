"""The package's architecture, checked: layers, private names, cycles, module size.

The package is made of *units*: a top-level module (``io.py``, ``arrow.py``...) or a
subpackage (``_record/``, ``_files/``...). ``LAYERS`` (in ``_layering.py``, the checker)
orders the units bottom up, and the table in ``tfrecord_lite/__init__.py``'s docstring
is checked to say the same.

The rules, each a test below:

* **Layers**: a module imports only from its own unit, from units of its own layer
  (where the layer allows it), or from units of the layers below.
* **Integrations** (``torch``, ``arrow``, ``ray``, ``dask``, ``tfds`` and the rest of
  their layer) are never imported by the core, and never by each other: what they
  share lives in ``_tables``, below them.
* **Public names across units**: an import from another unit goes through that unit's
  package (``from .._files import TFRecordWriter``) or a top-level module, never into a
  module inside another subpackage (neither by import nor by attribute access such as
  ``_files._fs.X``), and never takes a name that starts with ``_``.
* **No import by a computed name** (``importlib.import_module(f"...")``, ``__import__``
  of a variable, ``sys.modules`` other than a constant look-up) unless the function is
  allow-listed with a reason and the modules it loads, checked against the source.
* **No import cycle** between modules (function-level and dynamic imports count too).
* **Size**: no module passes ``MAX_LINES`` lines unless its docstring says why, in a
  paragraph that starts with ``Why one module:``.

``_layering.py`` says what counts as an import; ``test_layers_planted.py`` plants each
kind of violation in a small package tree and checks that these rules catch it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _layering import (
    LAYER_OF,
    LAYERS,
    Package,
    dynamic_violations,
    find_cycle,
    import_graph,
    integration_violations,
    layer_violations,
    long_modules,
    private_violations,
    read_module,
    read_package,
    stale_allowances,
    unplaced_units,
)

import tfrecord_lite

PACKAGE_DIR = Path(tfrecord_lite.__file__).parent


@pytest.fixture(scope="module")
def package() -> Package:
    return read_package(PACKAGE_DIR)


@pytest.mark.slow
def test_the_import_reader_sees_every_form(package: Package) -> None:
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
    reading = read_module(source, "_examples._infer", path, package.modules, "tfrecord_lite")
    got = sorted((i.module, i.names) for i in reading.imports)
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
    assert reading.dynamic == []


def test_every_unit_has_a_layer() -> None:
    unplaced = unplaced_units(PACKAGE_DIR)
    assert not unplaced, f"put these units into a layer in tests/api/_layering.py: {unplaced}"
    assert len(LAYER_OF) == sum(len(layer.units) for layer in LAYERS)  # each unit placed once


def test_imports_respect_the_layers(package: Package) -> None:
    violations = layer_violations(package)
    assert not violations, "imports against the layers:\n" + "\n".join(violations)


def test_the_core_never_imports_an_integration(package: Package) -> None:
    found = integration_violations(package)
    assert not found, "\n".join(found)


def test_only_public_names_cross_units(package: Package) -> None:
    violations = private_violations(package)
    assert not violations, "private names used across units:\n" + "\n".join(violations)


def test_no_import_by_a_computed_name(package: Package) -> None:
    violations = dynamic_violations(package)
    assert not violations, "imports by a computed name:\n" + "\n".join(violations)


def test_the_allowed_dynamic_imports_are_edges(package: Package) -> None:
    """What the allow-listed dynamic imports load is in the graph the cycle test walks."""
    graph = import_graph(package)
    for module, allowance in package.allowed_dynamic.items():
        assert allowance.reason
        assert set(allowance.imports) <= graph[module], module


def test_no_import_cycle(package: Package) -> None:
    cycle = find_cycle(import_graph(package))
    assert cycle is None, "an import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_is_too_long_without_a_reason(package: Package) -> None:
    too_long = long_modules(package)
    assert not too_long, (
        "modules over the limit whose docstring gives no 'Why one module:' reason:\n"
        + "\n".join(too_long)
    )


def test_the_allow_lists_hold_only_live_debts(package: Package) -> None:
    """An entry that no longer matches anything must go, so the lists only shrink."""
    stale = stale_allowances(package)
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
def test_the_base_imports_nothing_from_the_package(package: Package, module: str) -> None:
    reading = package.readings[module]
    assert not reading.imports and not reading.dynamic
