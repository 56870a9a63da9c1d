"""docs/api.md is current, and the public API is documented and fully type-hinted."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pytest

import tfrecord_lite as tfr

ROOT = Path(__file__).resolve().parent.parent
MAKE_API = ROOT / "docs" / "make_api.py"
API_MD = ROOT / "docs" / "api.md"

#: Public names allowed to lack a docstring or type hints, with the reason. Keep it short.
EXEMPT: dict[str, str] = {}


def load_make_api() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_api", MAKE_API)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_md_is_current() -> None:
    pytest.importorskip("torch", reason="docs/api.md documents tfrecord_lite.torch")
    expected = load_make_api().render()
    current = API_MD.read_text(encoding="utf-8") if API_MD.exists() else ""
    assert current == expected, (
        "docs/api.md is stale (the public API or a docstring changed): "
        "run `python docs/make_api.py` and commit docs/api.md"
    )


def test_every_public_name_is_in_api_md() -> None:
    text = API_MD.read_text(encoding="utf-8")
    missing = []
    for name in tfr.__all__:
        if name in ("io", "train", "data", "compat", "python_io", "image", "__version__"):
            continue  # namespaces: their names are checked below

        if f"### `tfr.{name}`" not in text and f"| `tfr.{name}` |" not in text:
            missing.append(f"tfr.{name}")

    def listed(qual: str) -> bool:  # a row "same object as", or an entry of its own
        return f"| `{qual}` |" in text or f"### `{qual}`" in text

    for prefix, ns in (
        ("tfr.io", tfr.io),
        ("tfr.data", tfr.data),
        ("tfr.compat.v1.io", tfr.compat.v1.io),
        ("tfr.python_io", tfr.python_io),
        ("tfr.image", tfr.image),
    ):
        missing += [f"{prefix}.{n}" for n in ns.__all__ if not listed(f"{prefix}.{n}")]
    missing += [f"tfr.train.{n}" for n in tfr.train.__all__ if f"### `tfr.train.{n}`" not in text]
    torch_names = ["IterableDataset", "MapDataset", "collate", "to_tensors"]
    missing += [
        f"tfrecord_lite.torch.{n}"
        for n in torch_names
        if f"### `tfrecord_lite.torch.{n}`" not in text
    ]
    for integration in ("tfds", "arrow", "ray", "dask"):
        module = importlib.import_module(f"tfrecord_lite.{integration}")
        missing += [
            f"tfrecord_lite.{integration}.{n}"
            for n in module.__all__
            if f"### `tfrecord_lite.{integration}.{n}`" not in text
        ]
    assert not missing, f"not in docs/api.md (run `python docs/make_api.py`): {missing}"


def test_signature_formatting() -> None:
    make_api = load_make_api()

    def f(a: int, /, b: str = "x", *args: Any, c: bool = False, **kw: Any) -> None: ...

    def g(a: int, *, b: Any = dataclasses.MISSING) -> list[int]: ...

    assert (
        make_api.format_signature("f", inspect.signature(f))
        == "f(a: int, /, b: str = 'x', *args: Any, c: bool = False, **kw: Any) -> None"
    )
    assert make_api.format_signature("g", inspect.signature(g)) == (
        "g(a: int, *, b: Any = <required>) -> list[int]"
    )
    long = make_api.format_signature("g" * 90, inspect.signature(g))
    assert long.splitlines() == [
        "g" * 90 + "(",
        "    a: int,",
        "    *,",
        "    b: Any = <required>,",
        ") -> list[int]",
    ]


# --------------------------------------------------------------------------- docstrings and hints


def _ours(obj: Any) -> bool:
    return str(getattr(obj, "__module__", "")).split(".")[0] == "tfrecord_lite"


def public_api() -> Iterator[tuple[str, Any]]:
    """(qualified name, object) for every public function and class (not protobuf messages)."""
    seen: set[int] = set()
    sources: list[tuple[str, ModuleType]] = [("tfr", tfr)]
    try:
        import tfrecord_lite.torch as tfr_torch
    except ImportError:
        pass
    else:
        sources.append(("tfrecord_lite.torch", tfr_torch))
    for integration in ("tfds", "arrow", "ray", "dask"):
        sources.append(
            (
                f"tfrecord_lite.{integration}",
                importlib.import_module(f"tfrecord_lite.{integration}"),
            )
        )
    for prefix, module in sources:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj) or id(obj) in seen:
                continue
            if inspect.isclass(obj) or callable(obj):
                seen.add(id(obj))
                yield f"{prefix}.{name}", obj


def _hint_problems(fn: Callable[..., Any], drop_first: bool, need_return: bool = True) -> list[str]:
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    if drop_first and params and params[0].name in ("self", "cls"):
        params = params[1:]
    problems = [f"parameter {p.name!r} has no type hint" for p in params if p.annotation is p.empty]
    if need_return and sig.return_annotation is sig.empty:
        problems.append("no return type hint")
    return problems


def _has_doc(obj: Any) -> bool:
    doc = getattr(obj, "__doc__", None)  # its own, not one inherited through getdoc
    return isinstance(doc, str) and bool(doc.strip())


def _class_problems(qual: str, cls: type) -> Iterator[str]:
    if not _has_doc(cls):
        yield f"{qual}: no docstring"
    init = vars(cls).get("__init__")
    generated = dataclasses.is_dataclass(cls) or hasattr(cls, "_fields")
    if inspect.isfunction(init) and not generated:
        yield from (f"{qual}.__init__: {p}" for p in _hint_problems(init, drop_first=True))
    else:  # NamedTuple / dataclass / inherited constructor: the fields' hints
        try:
            sig_problems = _hint_problems(cls, drop_first=False, need_return=False)
        except (TypeError, ValueError):
            sig_problems = []
        yield from (f"{qual}: {p}" for p in sig_problems)
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    for name, attr in vars(cls).items():
        if name.startswith("_") or name in fields:
            continue
        member = f"{qual}.{name}"
        if isinstance(attr, property):
            if attr.fget is None:
                continue
            if not _has_doc(attr.fget):
                yield f"{member}: no docstring"
            yield from (f"{member}: {p}" for p in _hint_problems(attr.fget, drop_first=True))
        elif isinstance(attr, (classmethod, staticmethod)) or inspect.isfunction(attr):
            fn = attr.__func__ if isinstance(attr, (classmethod, staticmethod)) else attr
            if not _has_doc(fn):
                yield f"{member}: no docstring"
            drop = not isinstance(attr, staticmethod)
            yield from (f"{member}: {p}" for p in _hint_problems(fn, drop_first=drop))
        elif inspect.isclass(attr) and _ours(attr):
            yield from _class_problems(member, attr)


def api_problems() -> list[str]:
    problems: list[str] = []
    for qual, obj in public_api():
        if qual in EXEMPT:
            continue
        if inspect.isclass(obj):
            problems += _class_problems(qual, obj)
            continue
        if not _has_doc(obj) or not _ours(obj):
            problems.append(f"{qual}: no docstring of ours")
        try:
            problems += [f"{qual}: {p}" for p in _hint_problems(obj, drop_first=False)]
        except (TypeError, ValueError):
            problems.append(f"{qual}: no inspectable signature (so no type hints)")
    return problems


def test_public_api_has_docstrings_and_type_hints() -> None:
    problems = api_problems()
    assert not problems, "public API without docstring / type hints:\n" + "\n".join(problems)


def test_the_checker_catches_missing_hints_and_docs() -> None:
    class Example:
        """Documented."""

        def __init__(self, a) -> None:  # type: ignore[no-untyped-def]
            self.a = a

        @property
        def p(self) -> int:
            return 1

        def m(self, x: int):  # type: ignore[no-untyped-def]
            """Documented."""

    Example.__module__ = "tfrecord_lite._fake"
    assert sorted(_class_problems("X", Example)) == [
        "X.__init__: parameter 'a' has no type hint",
        "X.m: no return type hint",
        "X.p: no docstring",
    ]
