"""The API reference's Markdown: docstrings' reST rewritten before rendering, and the check
that fails ``make docs`` where reST still shows on a built page."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_docs_{name}", DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sphinx() -> ModuleType:
    return _load("griffe_sphinx")


@pytest.fixture(scope="module")
def names(sphinx: ModuleType) -> dict[str, str]:
    found: dict[str, str] = sphinx._public_names()
    return found


def test_a_role_naming_a_public_name_becomes_a_link(
    sphinx: ModuleType, names: dict[str, str]
) -> None:
    text = "Written by :class:`~tfrecord_lite.ShardedWriter` and :func:`tfrecord_lite.io.parse_example`."
    out = sphinx.convert(text, names, "tfrecord_lite")
    assert out == (
        "Written by [`ShardedWriter`][tfrecord_lite.ShardedWriter] and "
        "[`tfrecord_lite.io.parse_example()`][tfrecord_lite.io.parse_example]."
    )


def test_a_private_path_links_to_the_public_name(sphinx: ModuleType, names: dict[str, str]) -> None:
    import tfrecord_lite as tfr

    where = f"{tfr.ShardedWriter.__module__}.ShardedWriter"
    assert where.startswith("tfrecord_lite._")
    out = sphinx.convert(f":class:`~{where}`", names, "tfrecord_lite._files")
    assert out == "[`ShardedWriter`][tfrecord_lite.ShardedWriter]"
    # a method the public class defines, by the bare Class.member spelling
    assert sphinx.convert(":meth:`ShardedWriter.close`", names, "x") == (
        "[`ShardedWriter.close()`][tfrecord_lite.ShardedWriter.close]"
    )


def test_a_role_naming_no_public_name_becomes_code(
    sphinx: ModuleType, names: dict[str, str]
) -> None:
    out = sphinx.convert(
        "See :func:`~._extract.extract` and :class:`numpy.ndarray`.",
        names,
        "tfrecord_lite._examples",
    )
    assert out == "See `extract()` and `numpy.ndarray`."
    titled = sphinx.convert(":func:`the walk <._walk.walk>`", names, "tfrecord_lite._examples")
    assert titled == "`the walk`"


def test_examples_become_code_blocks_without_directives(
    sphinx: ModuleType, names: dict[str, str]
) -> None:
    text = (
        "Reads records.\n\n"
        '>>> ds = tfr.TFRecordDataset("a.tfrecord")  # doctest: +SKIP\n'
        ">>> for r in ds:  # doctest: +SKIP\n"
        "...     print(r)\n"
        "b'x'\n\n"
        "Then more text."
    )
    out = sphinx.convert(text, names, "tfrecord_lite")
    assert out == (
        "Reads records.\n\n"
        "```pycon\n"
        '>>> ds = tfr.TFRecordDataset("a.tfrecord")\n'
        ">>> for r in ds:\n"
        "...     print(r)\n"
        "b'x'\n"
        "```\n\n"
        "Then more text."
    )


def test_a_literal_block_becomes_a_code_block(sphinx: ModuleType, names: dict[str, str]) -> None:
    text = (
        "It ports by prefix::\n\n"
        "    import tfrecord_lite as tfr\n\n"
        "    tfr.io.parse_example(r, f)\n\n"
        "Roles stay code inside: :class:`X` here."
    )
    out = sphinx.convert(text, names, "tfrecord_lite")
    assert "```python\nimport tfrecord_lite as tfr\n\ntfr.io.parse_example(r, f)\n```" in out
    assert out.startswith("It ports by prefix:\n")
    assert "::" not in out
    assert out.endswith("Roles stay code inside: `X` here.")


def test_the_site_check_finds_rest_shown_as_text(tmp_path: Path) -> None:
    check = _load("check_reference")
    page = tmp_path / "reference" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(
        "<p>See :class:<code>~tfrecord_lite.X</code>.</p>"
        "<p>&gt;&gt;&gt; ds = 1      # doctest: +SKIP &gt;&gt;&gt; for r in ds:</p>",
        encoding="utf-8",
    )
    (tmp_path / "clean.html").write_text(
        '<pre><code class="language-pycon">&gt;&gt;&gt; 1</code></pre>', encoding="utf-8"
    )
    found = check.leftover_markup(tmp_path)
    assert found == [
        "reference/index.html: a cross-reference role (1x)",
        "reference/index.html: a doctest directive (1x)",
        "reference/index.html: an example run into a paragraph (1x)",
    ]
