"""After `mkdocs build`: the API reference lists every public name, and only those, as Markdown.

    python docs/check_reference.py site

For ``tfrecord_lite`` and each public module (``tfr.io``, ``tfrecord_lite.torch``...), each
name of its ``__all__`` must have an anchor ``id="tfrecord_lite.<module>.<name>"`` on the
module's page of the built site (mkdocstrings writes one per documented object), and no other
module-level name may have one (a constant a module merely uses is not public). A module
whose extra is not installed here is read with ``ast``. No page of the site may show reST
markup as text: a cross-reference role (``:class:`...```), a ``# doctest:`` directive, or a
``>>>`` example run into a paragraph (``docs/griffe_sphinx.py`` turns them into Markdown).
Exits 1 listing what is wrong.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
from pathlib import Path

MODULES = (
    "io",
    "train",
    "data",
    "image",
    "compat",
    "python_io",
    "torch",
    "tfds",
    "arrow",
    "ray",
    "dask",
    "spark",
    "daft",
    "hf",
    "polars",
)
#: (module, page under site/reference/)
PAGES = [
    ("tfrecord_lite", "index.html"),
    *((f"tfrecord_lite.{m}", f"{m}/index.html") for m in MODULES),
]
NAMESPACES = {"io", "train", "data", "compat", "python_io", "image", "__version__"}


def public_names(module: str) -> list[str]:
    try:
        return list(importlib.import_module(module).__all__)
    except ImportError:  # an extra that is not installed: read __all__ from the source
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None, module
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                return list(ast.literal_eval(node.value))
        raise LookupError(f"{module} has no __all__") from None


#: reST that a page shows as text where it was not turned into Markdown.
LEFTOVER = {
    "a cross-reference role": re.compile(
        r":(?:class|func|meth|attr|data|mod|exc|obj|const):(?:`|<code)"
    ),
    "a doctest directive": re.compile(r"#\s*doctest:"),
    "an example run into a paragraph": re.compile(r"<p>\s*&gt;&gt;&gt;"),
}


def leftover_markup(site: Path) -> list[str]:
    """``page: what (count)`` for every built page that shows reST markup as text."""
    found = []
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        for what, pattern in LEFTOVER.items():
            count = len(pattern.findall(html))
            if count:
                found.append(f"{page.relative_to(site)}: {what} ({count}x)")
    return found


def main(site: Path) -> int:
    missing = []
    extra = []
    for module, page in PAGES:
        html = (site / "reference" / page).read_text(encoding="utf-8")
        ids = set(re.findall(r'id="([\w.]+)"', html))
        public = public_names(module)
        for name in public:
            if module == "tfrecord_lite" and name in NAMESPACES:
                continue  # each has a page of its own
            if f"{module}.{name}" not in ids:
                missing.append(f"{module}.{name} (site/reference/{page})")
        prefix = f"{module}."
        for ident in sorted(ids):
            name = ident[len(prefix) :] if ident.startswith(prefix) else ""
            if name and "." not in name and name not in public:
                extra.append(f"{ident} (site/reference/{page})")
    for name in missing:
        print(f"not in the API reference: {name}")
    for name in extra:
        print(f"in the API reference but not in its module's __all__: {name}")
    markup = leftover_markup(site)
    for line in markup:
        print(f"reST shown as text: {line}")
    return 1 if missing or extra or markup else 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "site")))
