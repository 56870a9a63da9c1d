"""A griffe extension for the API reference: the docstrings' reST markup as Markdown.

The docstrings are written for both ``help()`` and the site, in reST: cross-reference roles
(``:class:`~tfrecord_lite.ShardedWriter```), ``>>>`` examples, and literal blocks introduced by
``::``. mkdocstrings renders docstring text as Markdown, where those would show literally or
run together into one paragraph. Before rendering, this extension rewrites every docstring of
the package:

- a role whose target is a public name (``tfrecord_lite.X``, ``tfrecord_lite.io.X``, a
  public method or attribute of a public class, or the private path such a name is defined
  at) becomes a link to that name's entry in the reference (``[`X`][tfrecord_lite.X]``);
  any other target (a private helper, a name of another project) becomes inline code;
- a run of ``>>>`` lines with their output becomes a fenced ``pycon`` block, without the
  ``# doctest:`` directives;
- a ``::`` literal block becomes a fenced code block.

``mkdocs.yml`` loads it (``extensions: [docs/griffe_sphinx.py]``); ``docs/check_reference.py``
fails the build where reST markup still shows on a built page.
"""

from __future__ import annotations

import importlib
import inspect
import re
import textwrap
from typing import Any, Optional

try:
    from griffe import Extension
except ImportError:  # the conversion itself needs no griffe (tests/docs runs it without)
    Extension = object  # type: ignore[misc,assignment]

#: The public modules, each with a page of the API reference.
PUBLIC_MODULES = (
    "tfrecord_lite",
    "tfrecord_lite.io",
    "tfrecord_lite.train",
    "tfrecord_lite.data",
    "tfrecord_lite.image",
    "tfrecord_lite.compat",
    "tfrecord_lite.python_io",
    "tfrecord_lite.torch",
    "tfrecord_lite.tfds",
    "tfrecord_lite.arrow",
    "tfrecord_lite.ray",
    "tfrecord_lite.dask",
    "tfrecord_lite.spark",
    "tfrecord_lite.daft",
    "tfrecord_lite.hf",
)

ROLE = re.compile(r":(?:py:)?(class|func|meth|attr|data|mod|exc|obj|const):`([^`]+)`")
TITLED = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$")
DIRECTIVE = re.compile(r"\s*#\s*doctest:.*$")


def _public_names() -> dict[str, str]:
    """Every name a role may point at -> the identifier of its entry in the reference.

    Keys: the public spelling (``tfrecord_lite.io.parse_example``), the place it is defined
    (``tfrecord_lite._examples._parse.parse_example``), its bare name where that is unique,
    and ``Class.member`` for the members a public class defines itself."""
    found: dict[str, str] = {}
    short: dict[str, set[str]] = {}

    def add(key: str, ident: str) -> None:
        found.setdefault(key, ident)

    for module_name in PUBLIC_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # an extra that the docs venv lacks: its page lists no links
            continue
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            ident = f"{module_name}.{name}"
            if inspect.ismodule(obj):
                ident = obj.__name__
            add(ident, ident)
            short.setdefault(name, set()).add(ident)
            where = getattr(obj, "__module__", None)
            qualname = getattr(obj, "__qualname__", None)
            if isinstance(where, str) and isinstance(qualname, str) and not inspect.ismodule(obj):
                add(f"{where}.{qualname}", ident)
            if inspect.isclass(obj):
                for member in vars(obj):
                    if member.startswith("_"):
                        continue
                    add(f"{ident}.{member}", f"{ident}.{member}")
                    add(f"{name}.{member}", f"{ident}.{member}")
                    if isinstance(where, str) and isinstance(qualname, str):
                        add(f"{where}.{qualname}.{member}", f"{ident}.{member}")
    for name, idents in short.items():
        top = f"tfrecord_lite.{name}"
        if top in idents:
            add(name, top)
        elif len(idents) == 1:
            add(name, next(iter(idents)))
    return found


def _resolve(target: str, names: dict[str, str], here: str) -> Optional[str]:
    """The reference identifier of a role's target, or None (not a public name)."""
    target = target.strip().lstrip("~").rstrip("()")
    if target.startswith("."):  # relative to the module the docstring belongs to
        package = here
        dots = len(target) - len(target.lstrip("."))
        parts = package.split(".")
        base = ".".join(parts[: max(1, len(parts) - dots + 1)])
        candidates = [f"{base}.{target.lstrip('.')}", target.lstrip(".")]
    else:
        candidates = [target, f"{here}.{target}"]
    for candidate in candidates:
        if candidate in names:
            return names[candidate]
    return None


def _role(match: re.Match[str], names: dict[str, str], here: str) -> str:
    text = match.group(2)
    titled = TITLED.match(text)
    if titled:
        title, target = titled.group("title"), titled.group("target")
    else:
        target = text
        bare = target.strip().lstrip("~").rstrip("()")
        title = bare.rsplit(".", 1)[-1] if target.strip().startswith("~") else bare.lstrip(".")
        if match.group(1) in ("func", "meth") and not title.endswith(")"):
            title += "()"
    ident = _resolve(target, names, here)
    if ident is None:
        return f"`{title}`"
    return f"[`{title}`][{ident}]"


def _fence_examples(text: str) -> str:
    """``>>>`` runs (and their output) and ``::`` literal blocks as fenced code blocks."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    in_fence = False
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            out.append(line)
            i += 1
            continue
        if not in_fence and stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            block: list[str] = []
            while i < len(lines) and lines[i].strip():
                block.append(DIRECTIVE.sub("", lines[i][len(indent) :]).rstrip())
                i += 1
            out.extend([f"{indent}```pycon", *(f"{indent}{b}" for b in block), f"{indent}```"])
            continue
        if not in_fence and line.rstrip().endswith("::") and not line.rstrip().endswith(":::"):
            # reST: "text::" is "text:" and the indented block after it is literal.
            head = line.rstrip()[:-1]
            if head.strip() == ":":
                head = ""
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            base = len(line) - len(stripped)
            if j < len(lines) and len(lines[j]) - len(lines[j].lstrip()) > base:
                k = j
                body: list[str] = []
                while k < len(lines) and (
                    not lines[k].strip() or len(lines[k]) - len(lines[k].lstrip()) > base
                ):
                    body.append(lines[k])
                    k += 1
                while body and not body[-1].strip():
                    body.pop()
                code = textwrap.dedent("\n".join(body)).split("\n")
                language = "pycon" if code and code[0].startswith(">>>") else "python"
                if language == "pycon":
                    code = [DIRECTIVE.sub("", c).rstrip() for c in code]
                indent = " " * base
                if head.strip():
                    out.append(head)
                out.extend(["", f"{indent}```{language}", *(f"{indent}{c}" for c in code)])
                out.extend([f"{indent}```", ""])
                i = k
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


def convert(text: str, names: dict[str, str], here: str) -> str:
    """One docstring's reST markup as Markdown (see the module's docstring)."""
    text = _fence_examples(text)
    parts = re.split(r"(```.*?```)", text, flags=re.S)
    for n in range(0, len(parts), 2):  # not inside code blocks
        parts[n] = ROLE.sub(lambda m: _role(m, names, here), parts[n])
    return "".join(parts)


class SphinxMarkup(Extension):  # type: ignore[misc]
    """Rewrites every docstring of the loaded package (see the module's docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._names: Optional[dict[str, str]] = None

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
        if pkg.path != "tfrecord_lite":
            return
        if self._names is None:
            self._names = _public_names()
        self._walk(pkg, set())

    def _walk(self, obj: Any, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            here = obj.path if obj.is_module else obj.module.path
            assert self._names is not None
            obj.docstring.value = convert(obj.docstring.value, self._names, here)
        for member in obj.members.values():
            if not member.is_alias:
                self._walk(member, seen)
