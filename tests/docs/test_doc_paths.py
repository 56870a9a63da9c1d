"""Every module, file and name of the package that the docs point at exists.

A page that sends a reader to ``tfrecord_lite/_scan.py`` after it moved, or to
``tfrecord_lite._images.make_digit_folder`` that never existed, is wrong however well it reads.
This scans README.md, CONTRIBUTING.md and every page under docs/ for paths into the tree
(``tfrecord_lite/...py``, ``tests/...``, ``benchmarks/...``, or a glob of them) and dotted names
(``tfrecord_lite.x.y``), and resolves each: a path must be a file or folder of the tree, a
dotted name a module, or a name defined by one (read from its source where the module needs
an extra this venv lacks).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
PATH = re.compile(r"(?<![\w/.-])((?:tfrecord_lite|tests|benchmarks|protos)/[\w./*-]*[\w/*])")
DOTTED = re.compile(r"(?<![\w.])(tfrecord_lite(?:\.\w+)+)")
#: Paths the docs name that a run creates (not in a clone).
CREATED = {"benchmarks/results"}


def _names_in_source(origin: str) -> set[str]:
    tree = ast.parse(Path(origin).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _problem(dotted: str) -> Optional[str]:
    """Why ``dotted`` names nothing in the package (None: it does)."""
    parts = dotted.split(".")
    module_name = parts[0]
    for i in range(1, len(parts)):
        candidate = ".".join(parts[: i + 1])
        try:
            found = importlib.util.find_spec(candidate) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            break
        module_name = candidate
    rest = parts[len(module_name.split(".")) :]
    if not rest:
        return None
    try:
        obj: object = importlib.import_module(module_name)
    except ImportError:  # an extra this venv lacks: look in its source
        spec = importlib.util.find_spec(module_name)
        assert spec is not None and spec.origin is not None
        if rest[0] in _names_in_source(spec.origin):
            return None
        return f"{module_name} defines no {rest[0]!r}"
    for depth, attr in enumerate(rest):
        if not hasattr(obj, attr):
            where = ".".join([module_name, *rest[:depth]])
            return f"{where} has no {attr!r}"
        obj = getattr(obj, attr)
    return None


def _mentions(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    found = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in pattern.finditer(text):
            found.add((str(page.relative_to(ROOT)), match.group(1).rstrip(".")))
    return sorted(found)


@pytest.mark.parametrize(("page", "path"), _mentions(PATH), ids=lambda v: str(v))
def test_a_path_the_docs_name_exists(page: str, path: str) -> None:
    if any(path.startswith(c) for c in CREATED):
        return
    exists = any(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()
    assert exists, f"{page} names {path}, which is not in the tree"


@pytest.mark.parametrize(("page", "dotted"), _mentions(DOTTED), ids=lambda v: str(v))
def test_a_name_the_docs_use_exists(page: str, dotted: str) -> None:
    problem = _problem(dotted)
    assert problem is None, f"{page} names {dotted}: {problem}"


def test_the_scan_finds_what_is_wrong() -> None:
    assert _problem("tfrecord_lite._images.make_digit_folder") is not None
    assert _problem("tfrecord_lite.io.parse_example") is None
    assert _problem("tfrecord_lite.ray.read_tfrecords") is None  # read from the source
    assert _problem("tfrecord_lite.ray.no_such_reader") is not None
    assert PATH.findall("see tfrecord_lite/_scan.py and tests/api/") == [
        "tfrecord_lite/_scan.py",
        "tests/api/",
    ]
