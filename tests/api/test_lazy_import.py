"""``import tfrecord_lite`` loads only the version and the install check; each public name
is imported on first use (PEP 562's module ``__getattr__``), and is the same object as
before. The names type checkers see (the ``if TYPE_CHECKING:`` imports) are the names
the lazy table hands out, from the same units."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import tfrecord_lite as tfr

INIT = Path(tfr.__file__)


def _fresh(code: str) -> str:
    """What ``code`` prints in a fresh interpreter."""
    got = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return got.stdout.strip()


def test_importing_the_package_loads_nothing_else() -> None:
    loaded = _fresh(
        "import sys, tfrecord_lite\n"
        "print(sorted(m for m in sys.modules if m.startswith(('tfrecord_lite', 'numpy'))))"
    )
    assert loaded == "['tfrecord_lite', 'tfrecord_lite._installed', 'tfrecord_lite._version']"


def test_a_name_loads_only_its_unit() -> None:
    loaded = _fresh(
        "import sys, tfrecord_lite as tfr\n"
        "tfr.TFRecordWriter\n"
        "print('tfrecord_lite._files' in sys.modules, 'tfrecord_lite._data' in sys.modules)"
    )
    assert loaded == "True False"


def test_every_public_name_is_its_units_object() -> None:
    assert set(tfr._FROM) | tfr._NAMESPACES | {"__version__"} == set(tfr.__all__)
    for name, unit in tfr._FROM.items():
        held = getattr(
            importlib.import_module(f"tfrecord_lite.{unit}"), tfr._RENAMED.get(name, name)
        )
        assert getattr(tfr, name) is held, name
    for name in tfr._NAMESPACES:
        assert getattr(tfr, name) is importlib.import_module(f"tfrecord_lite.{name}")
    assert set(tfr.__all__) <= set(dir(tfr))


def test_type_checkers_see_the_same_names_from_the_same_units() -> None:
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    seen: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1
        for alias in node.names:
            local = alias.asname or alias.name
            seen[local] = node.module or local
            if alias.asname:
                assert tfr._RENAMED[local] == alias.name
    assert seen == {**tfr._FROM, **{name: name for name in tfr._NAMESPACES}}


def test_names_that_are_not_there() -> None:
    with pytest.raises(AttributeError, match=r"has no attribute 'reshape': .*np\.reshape"):
        tfr.reshape  # noqa: B018  # (TensorFlow's: the NumPy one-liner is given)
    with pytest.raises(AttributeError, match=r"has no attribute 'nothing_here'$"):
        tfr.nothing_here  # noqa: B018
    assert not hasattr(tfr, "_private_name")
