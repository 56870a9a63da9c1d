"""The public API is documented and fully type-hinted (the API reference is built from it)."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
from collections.abc import Iterator
from types import ModuleType
from typing import Any, Callable

import tfrecord_lite as tfr

#: Public names allowed to lack a docstring or type hints, with the reason. Keep it short.
EXEMPT: dict[str, str] = {}


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
