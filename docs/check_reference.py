"""After `mkdocs build`: every public name has an entry in the API reference.

    python docs/check_reference.py site

For ``tfrecord_lite`` and each public module (``tfr.io``, ``tfrecord_lite.torch``...), each
name of its ``__all__`` must have an anchor ``id="tfrecord_lite.<module>.<name>"`` on the
module's page of the built site (mkdocstrings writes one per documented object). A module
whose extra is not installed here is read with ``ast``. Exits 1 listing what is missing.
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


def main(site: Path) -> int:
    missing = []
    for module, page in PAGES:
        html = (site / "reference" / page).read_text(encoding="utf-8")
        ids = set(re.findall(r'id="([\w.]+)"', html))
        for name in public_names(module):
            if module == "tfrecord_lite" and name in NAMESPACES:
                continue  # each has a page of its own
            if f"{module}.{name}" not in ids:
                missing.append(f"{module}.{name} (site/reference/{page})")
    for name in missing:
        print(f"not in the API reference: {name}")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "site")))
