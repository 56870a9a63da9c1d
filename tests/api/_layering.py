"""The architecture checker behind ``test_layers.py``: every function takes the root of a
package tree, so the tests run it on the real package and on small planted trees
(``test_layers_planted.py``) that prove each rule catches what it is meant to.

The package is made of *units*: a top-level module (``io.py``, ``arrow.py``...) or a
subpackage (``_record/``, ``_files/``...). ``LAYERS`` orders the units bottom up.

What counts as a module depending on another (an *edge*), read with ``ast`` from the
source of every module:

* every import statement: module-level and function-level (lazy) alike, ``if
  TYPE_CHECKING:`` ones included, relative and absolute;
* ``importlib.import_module`` / ``__import__`` (under any alias) with a constant name;
* a ``sys.modules`` look-up (``[...]``, ``.get``, ``.pop``, ``in``...) with a constant
  name of the package;
* attribute access through an imported module: ``from .. import _files`` then
  ``_files._fs.X`` reads the module ``_files._fs`` (and takes ``X`` from it);
* the modules an allow-listed dynamic import loads (``ALLOWED_DYNAMIC``), resolved from
  the source: the constant arguments its function is called with (followed through
  callers that pass their own parameter on), or the constant tuple its loop walks.

Any other import by a computed name (an f-string, a variable), and any other use of
``sys.modules``, is a *dynamic import*: refused unless ``ALLOWED_DYNAMIC`` lists its
module with a reason and the package modules it loads, which must be what its source
resolves to (a name that cannot be resolved is refused too).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

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
        "errors, the version, the install check and the settings, used by every layer",
        ("_errors", "_version", "_installed", "_settings"),
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
        "the table layer the integrations share: Arrow type mapping, read plan, file pieces",
        ("_tables",),
    ),
    Layer(
        "the TensorFlow-named namespaces",
        ("io", "train", "data", "python_io", "compat", "image"),
    ),
    Layer(
        "integrations (optional extras)",
        ("torch", "arrow", "ray", "dask", "spark", "daft", "hf", "polars", "tfds"),
        peers_import=False,
    ),
    Layer("the command line", ("_cli",)),
    # Nothing inside the package may import the package itself: that is an import cycle.
    Layer("entry points: the package, python -m, the demo", ("__init__", "__main__", "demo")),
]

INTEGRATIONS = next(layer.units for layer in LAYERS if not layer.peers_import)
LAYER_OF = {unit: i for i, layer in enumerate(LAYERS) for unit in layer.units}
#: The core: every layer up to the TensorFlow-named namespaces (it never imports an integration).
CORE = {unit for layer in LAYERS[: LAYER_OF["python_io"] + 1] for unit in layer.units}


@dataclass(frozen=True)
class Allowance:
    """A module allowed to import by a computed name: why, and the package modules it
    loads (what its computed names resolve to; an empty set: only modules outside the
    package)."""

    reason: str
    imports: frozenset[str]


#: module -> its allowance. Each entry is checked against the source.
ALLOWED_DYNAMIC: dict[str, Allowance] = {
    "_examples._engines._kernels": Allowance(
        "the numba kernel modules compile (or load numba's on-disk cache) when first "
        "imported, so they are imported on first use, by name, never at package import; "
        "after a cache that cannot be read, they are dropped from sys.modules and imported "
        "again with a fresh cache directory",
        frozenset(
            {
                "_examples._engines._jit_kernels",
                "_examples._engines._jit_columns",
                "_examples._engines._jit_sequences",
                "_examples._jit_encode_kernels",
                "_examples._jit_encode_crc",
            }
        ),
    ),
    "_tables._extras": Allowance(
        "the integrations' optional third-party engines (pyarrow, Ray Data, Dask, PySpark, "
        "Daft, datasets) are imported on first use, by name, with an error naming the extra "
        "that installs them; never a module of this package",
        frozenset(),
    ),
}

#: Today's exceptions, each a known debt to pay off: (rule, module, imported). Empty is the goal.
ALLOWED: set[tuple[str, str, str]] = set()
#: Modules allowed over MAX_LINES without a reason (debt, like ALLOWED). Empty is the goal.
ALLOWED_LONG: set[str] = set()


# --------------------------------------------------------------------------- the package's modules


def module_files(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root`` by dotted name below it (``_files._io``)."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if "__pycache__" in parts:
            continue
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def is_package(root: Path, module: str) -> bool:
    return module != "__init__" and (root / module.replace(".", "/") / "__init__.py").exists()


def unit_of(module: str) -> str:
    return module.split(".")[0] or "__init__"


def existing_units(root: Path) -> set[str]:
    return {unit_of(m) for m in module_files(root)}


# --------------------------------------------------------------------------- reading one module


@dataclass(frozen=True)
class Import:
    line: int
    #: the module imported from, dotted below the package ("" for the package itself)
    module: str
    #: the names taken (empty for ``import x``)
    names: tuple[str, ...]
    #: "import" (a statement), "call" (import_module/__import__ by a constant),
    #: "lookup" (sys.modules by a constant), "attribute" (through an imported module),
    #: "dynamic" (what an allow-listed dynamic import loads)
    how: str = "import"


@dataclass(frozen=True)
class Dynamic:
    """An import by a computed name, or a use of ``sys.modules`` other than a constant look-up."""

    line: int
    #: the enclosing function's qualified name ("" at module level)
    function: str
    #: its source text
    text: str
    #: the expression giving the name (None where there is none to resolve)
    name: Optional[ast.expr]


@dataclass
class Reading:
    imports: list[Import]
    dynamic: list[Dynamic]
    tree: ast.Module
    #: every ``from x import name as local`` of the package: (x, name, local)
    froms: list[tuple[str, str, str]]

    @property
    def bound_names(self) -> set[str]:
        return {local for _, _, local in self.froms}


_IMPORTERS = ("import_module", "__import__")
_LOOKUPS = ("get", "pop", "setdefault", "__getitem__", "__contains__", "__delitem__")


def _package_of(module: str, path: Path) -> str:
    """The package a module's relative imports start from."""
    if path.name == "__init__.py":
        return "" if module == "__init__" else module
    return module.rpartition(".")[0]


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _function_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str:
    names = []
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
    return ".".join(reversed(names))


def read_module(
    source: str, module: str, path: Path, modules: dict[str, Path], package: str
) -> Reading:
    """Every edge (:class:`Import`) and every :class:`Dynamic` import in ``source``."""
    tree = ast.parse(source, str(path))
    parents = _parents(tree)
    here = _package_of(module, path)
    found: list[Import] = []
    dynamic: list[Dynamic] = []
    #: local names bound to modules of the package (for attribute access through them)
    bound: dict[str, str] = {}
    froms: list[tuple[str, str, str]] = []
    sys_names, modules_names, importer_names = {"sys"}, set(), {"__import__"}

    def relative(level: int, name: str, line: int) -> str:
        parts = here.split(".") if here else []
        if level - 1 > len(parts):
            raise AssertionError(f"{path}:{line}: relative import beyond the package")
        base = parts[: len(parts) - (level - 1)] + (name.split(".") if name else [])
        return ".".join(p for p in base if p)

    def absolute(name: str) -> Optional[str]:
        if name == package:
            return ""
        if name.startswith(package + "."):
            return name[len(package) + 1 :]
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names)
            if node.level:
                target: Optional[str] = relative(node.level, node.module or "", node.lineno)
            else:
                target = absolute(node.module or "")
                if node.module == "importlib":
                    importer_names |= {
                        a.asname or a.name for a in node.names if a.name in _IMPORTERS
                    }
                elif node.module == "sys":
                    modules_names |= {a.asname or a.name for a in node.names if a.name == "modules"}
            if target is None:
                continue
            found.append(Import(node.lineno, target, names))
            froms += [(target, a.name, a.asname or a.name) for a in node.names]
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                if sub in modules:
                    bound[alias.asname or alias.name] = sub
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "sys":
                    sys_names.add(alias.asname or "sys")
                target = absolute(alias.name)
                if target is None:
                    continue
                found.append(Import(node.lineno, target, ()))
                if alias.asname:
                    bound[alias.asname] = target
                else:
                    bound[package] = ""
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if not (name in importer_names or name in _IMPORTERS):
                continue
            arg: Optional[ast.expr] = node.args[0] if node.args else None
            arg = next((k.value for k in node.keywords if k.arg == "name"), arg)
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                value = arg.value
                if value.startswith("."):
                    dots = len(value) - len(value.lstrip("."))
                    found.append(
                        Import(node.lineno, relative(dots, value.lstrip("."), 0), (), "call")
                    )
                elif absolute(value) is not None:
                    found.append(Import(node.lineno, absolute(value) or "", (), "call"))
            else:
                text = ast.get_source_segment(source, node) or name
                dynamic.append(Dynamic(node.lineno, _function_of(node, parents), text, arg))

    # sys.modules: a look-up by a constant name is an edge (or nothing, outside the
    # package); any other use is dynamic.
    for node in ast.walk(tree):
        is_modules = (
            isinstance(node, ast.Attribute)
            and node.attr == "modules"
            and isinstance(node.value, ast.Name)
            and node.value.id in sys_names
        ) or (isinstance(node, ast.Name) and node.id in modules_names)
        if not is_modules:
            continue
        parent = parents.get(node)
        key: Optional[ast.expr] = None
        use: ast.AST = node
        if isinstance(parent, ast.Subscript) and parent.value is node:
            key, use = parent.slice, parent
            if isinstance(key, ast.Index):  # Python 3.8's wrapper  # pragma: no cover
                key = key.value  # type: ignore[attr-defined]
        elif isinstance(parent, ast.Attribute) and parent.attr in _LOOKUPS:
            call = parents.get(parent)
            if isinstance(call, ast.Call) and call.func is parent and call.args:
                key, use = call.args[0], call
        elif (
            isinstance(parent, ast.Compare)
            and len(parent.comparators) == 1
            and parent.comparators[0] is node
            and isinstance(parent.ops[0], (ast.In, ast.NotIn))
        ):
            key, use = parent.left, parent
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            if absolute(key.value) is not None:
                found.append(Import(node.lineno, absolute(key.value) or "", (), "lookup"))
        else:
            text = ast.get_source_segment(source, use) or "sys.modules"
            dynamic.append(Dynamic(node.lineno, _function_of(node, parents), text, key))

    # Attribute access through a name bound to a module of the package.
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or isinstance(parents.get(node), ast.Attribute):
            continue
        chain = []
        base: ast.expr = node
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in bound:
            continue
        at = bound[base.id]
        taken: tuple[str, ...] = ()
        for attr in reversed(chain):
            sub = f"{at}.{attr}" if at else attr
            if sub in modules:
                at = sub
            else:
                taken = (attr,)
                break
        if at != bound[base.id] or any(n.startswith("_") and not n.startswith("__") for n in taken):
            found.append(Import(node.lineno, at, taken, "attribute"))
    return Reading(found, dynamic, tree, froms)


# --------------------------------------------------------------------------- the whole tree


@dataclass
class Package:
    """Every module of the package at ``root``, read."""

    root: Path
    modules: dict[str, Path]
    readings: dict[str, Reading]
    #: the modules allowed to import by a computed name (:data:`ALLOWED_DYNAMIC`)
    allowed_dynamic: dict[str, Allowance]
    #: what the resolver has worked out (per module)
    cache: dict[tuple[str, ...], object] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.root.name

    def where(self, module: str, line: int) -> str:
        return f"{self.modules[module].relative_to(self.root.parent)}:{line}"

    def targets(self, imp: Import) -> list[str]:
        """The modules an import runs: ``from pkg import sub`` runs the submodule ``pkg.sub``."""
        base = imp.module or "__init__"
        out = []
        for name in imp.names or ("",):
            sub = f"{imp.module}.{name}" if imp.module else name
            out.append(sub if name and sub in self.modules else base)
        return out

    def imports(self) -> list[tuple[str, Import]]:
        """Every edge of every module, the resolved dynamic ones included."""
        out = [(m, imp) for m, r in self.readings.items() for imp in r.imports]
        for module, allowance in self.allowed_dynamic.items():
            if module not in self.readings:
                continue
            line = next((d.line for d in self.readings[module].dynamic), 0)
            out += [(module, Import(line, t, (), "dynamic")) for t in sorted(allowance.imports)]
        return out


def read_package(root: Path, allowed_dynamic: Optional[dict[str, Allowance]] = None) -> Package:
    modules = module_files(root)
    readings = {
        module: read_module(path.read_text(encoding="utf-8"), module, path, modules, root.name)
        for module, path in modules.items()
    }
    allowed = ALLOWED_DYNAMIC if allowed_dynamic is None else allowed_dynamic
    return Package(root, modules, readings, allowed)


# --------------------------------------------------------------------------- resolving dynamic names


class Unresolved(Exception):
    pass


def _cached_parents(pkg: Package, module: str) -> dict[ast.AST, ast.AST]:
    key = ("parents", module)
    if key not in pkg.cache:
        pkg.cache[key] = _parents(pkg.readings[module].tree)
    return pkg.cache[key]  # type: ignore[no-any-return]


def _origin(pkg: Package, module: str, name: str, hops: int = 8) -> tuple[str, str]:
    """Where the name ``name`` seen in ``module`` is defined: follows ``from x import name``
    (lazy ones too) through the package's re-exports."""
    key = ("origin", module, name)
    if key in pkg.cache:
        return pkg.cache[key]  # type: ignore[no-any-return]
    found = (module, name)
    reading = pkg.readings.get(module)
    if reading is not None and hops:
        for target, original, local in reading.froms:
            if local == name:
                sub = f"{target}.{original}" if target else original
                if sub not in pkg.modules and (target or "__init__") in pkg.readings:
                    found = _origin(pkg, target or "__init__", original, hops - 1)
                break
    pkg.cache[key] = found
    return found


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = function.args
    return [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]


def _enclosing_function(
    pkg: Package, module: str, node: ast.AST
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    parents = _cached_parents(pkg, module)
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node
    return None


def _call_values(
    pkg: Package,
    module: str,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    param: str,
    depth: int = 0,
) -> set[str]:
    """The constant values ``param`` of ``function`` (in ``module``) takes: its default and
    every call's argument, in every module of the package (an argument that is itself a
    parameter of its caller is followed to the caller's calls)."""
    if depth > 4:
        raise Unresolved(f"{function.name}(): {param} passed on too many times")
    args = function.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    defaults = dict(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d})
    values: set[str] = set()
    if param in defaults:
        values.add(_constant(defaults[param], f"{function.name}(): the default of {param}"))
    index = positional.index(param) if param in positional else None
    calls = 0
    for caller, reading in pkg.readings.items():
        for node in ast.walk(reading.tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            name = node.func.id
            if name != function.name and (caller == module or name not in reading.bound_names):
                continue
            if caller != module and _origin(pkg, caller, name) != (module, function.name):
                continue
            calls += 1
            where = pkg.where(caller, node.lineno)
            given = next((k.value for k in node.keywords if k.arg == param), None)
            if given is None and index is not None and index < len(node.args):
                given = node.args[index]
            if given is None:
                if param not in defaults:
                    raise Unresolved(f"{where}: {function.name}() without {param}")
                continue
            if isinstance(given, ast.Name):
                outer = _enclosing_function(pkg, caller, node)
                if outer is not None and given.id in _params(outer):
                    values |= _call_values(pkg, caller, outer, given.id, depth + 1)
                    continue
            values.add(_constant(given, f"{where}: {param}"))
    if not calls and param not in defaults:
        raise Unresolved(f"{function.name}() is never called")
    return values


def _constant(node: ast.expr, where: str = "") -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    raise Unresolved(f"{where}: not a constant string: {ast.unparse(node)}")


def _candidates(pkg: Package, module: str, dyn: Dynamic, name: str) -> set[str]:
    """The values the variable ``name`` takes where ``dyn`` uses it: a parameter of the
    enclosing function, or a loop over a module-level tuple of constants."""
    tree = pkg.readings[module].tree
    parents = _cached_parents(pkg, module)
    node: ast.AST = dyn.name if dyn.name is not None else tree
    while node in parents:
        node = parents[node]
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
            and isinstance(node.iter, ast.Name)
        ):
            for stmt in tree.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == node.iter.id for t in stmt.targets)
                    and isinstance(stmt.value, (ast.Tuple, ast.List))
                ):
                    return {_constant(e, node.iter.id) for e in stmt.value.elts}
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and name in _params(node):
            return _call_values(pkg, module, node, name)
    raise Unresolved(f"{pkg.where(module, dyn.line)}: cannot tell what {name} holds")


def _evaluate(node: ast.expr, env: dict[str, str]) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _evaluate(node.left, env) + _evaluate(node.right, env)
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if (
                isinstance(part, ast.FormattedValue)
                and part.conversion == -1
                and not part.format_spec
            ):
                out.append(_evaluate(part.value, env))
            else:
                out.append(_evaluate(part, env))  # type: ignore[arg-type]
        return "".join(out)
    raise Unresolved(f"cannot evaluate {ast.dump(node)}")


def resolve(pkg: Package, module: str, dyn: Dynamic) -> set[str]:
    """The package modules a dynamic import can load (raises :class:`Unresolved`)."""
    if dyn.name is None:
        raise Unresolved(f"{pkg.where(module, dyn.line)}: {dyn.text}: no name to resolve")
    full = f"{pkg.name}.{module}" if module != "__init__" else pkg.name
    package = (
        full if is_package(pkg.root, module) or module == "__init__" else full.rpartition(".")[0]
    )
    variables = sorted(
        {n.id for n in ast.walk(dyn.name) if isinstance(n, ast.Name)} - {"__package__", "__name__"}
    )
    if len(variables) > 1:
        raise Unresolved(f"{pkg.where(module, dyn.line)}: {dyn.text}: more than one variable")
    envs = [{"__package__": package, "__name__": full}]
    if variables:
        values = _candidates(pkg, module, dyn, variables[0])
        envs = [{**envs[0], variables[0]: v} for v in sorted(values)]
    out = set()
    for env in envs:
        value = _evaluate(dyn.name, env)
        if value == pkg.name or value.startswith(pkg.name + "."):
            target = value[len(pkg.name) + 1 :] or "__init__"
            if target not in pkg.modules:
                raise Unresolved(f"{pkg.where(module, dyn.line)}: {value} is no module")
            out.add(target)
    return out


# --------------------------------------------------------------------------- the rules


def unplaced_units(root: Path) -> list[str]:
    return sorted(existing_units(root) - set(LAYER_OF))


def _allowed(rule: str, module: str, target: str) -> bool:
    return (rule, module, target) in ALLOWED


def layer_violations(pkg: Package) -> list[str]:
    """Imports of a unit of a higher layer, of a peer where peers may not, or of no unit."""
    out = []
    for module, imp in pkg.imports():
        src = unit_of(module)
        for target in pkg.targets(imp):
            dst = unit_of(target)
            if dst == src:
                continue
            if dst not in LAYER_OF:
                out.append(f"{pkg.where(module, imp.line)}: imports unknown unit {dst!r}")
                continue
            a, b = LAYER_OF[src], LAYER_OF[dst]
            if (b > a or (b == a and not LAYERS[a].peers_import)) and not _allowed(
                "layer", module, target
            ):
                out.append(
                    f"{pkg.where(module, imp.line)}: {module} ({LAYERS[a].title}) "
                    f"{_verb(imp)} {target} ({LAYERS[b].title})"
                )
    return out


def _verb(imp: Import) -> str:
    return {
        "import": "imports",
        "call": "imports (by import_module)",
        "lookup": "looks up in sys.modules",
        "attribute": "reaches (by attribute)",
        "dynamic": "imports (dynamically)",
    }[imp.how]


def integration_violations(pkg: Package) -> list[str]:
    """The core importing an integration, however it does it."""
    return [
        f"{pkg.where(module, imp.line)}: {module} {_verb(imp)} {target}"
        for module, imp in pkg.imports()
        if unit_of(module) in CORE
        for target in pkg.targets(imp)
        if unit_of(target) in INTEGRATIONS
    ]


def private_violations(pkg: Package) -> list[str]:
    """Across units, only a unit's package and its public names: never a module inside
    another subpackage, never a name starting with ``_``."""
    out = []
    for module, imp in pkg.imports():
        src = unit_of(module)
        if not imp.module or unit_of(imp.module) == src:
            continue  # inside its own unit anything goes; the package itself: the layers test
        into = imp.module.split(".")
        if (
            len(into) > 1
            and is_package(pkg.root, into[0])
            and not _allowed("private", module, imp.module)
        ):
            out.append(
                f"{pkg.where(module, imp.line)}: {module} {_verb(imp)} {imp.module}, a module "
                f"inside another unit: use {into[0]}'s public names instead"
            )
        for name in imp.names:
            if (
                name.startswith("_")
                and not name.startswith("__")
                and not _allowed("private", module, f"{imp.module}.{name}")
            ):
                out.append(
                    f"{pkg.where(module, imp.line)}: {module} takes the private name {name} "
                    f"from {imp.module}"
                )
    return out


def dynamic_violations(pkg: Package) -> list[str]:
    """Imports by a computed name and other uses of ``sys.modules`` outside
    ``ALLOWED_DYNAMIC``; and allowances that do not say what their source loads."""
    out = []
    resolved: dict[str, set[str]] = {}
    unresolved: set[str] = set()
    for module, reading in pkg.readings.items():
        for dyn in reading.dynamic:
            key = module
            if key not in pkg.allowed_dynamic:
                out.append(
                    f"{pkg.where(module, dyn.line)}: {module} imports by a computed name: "
                    f"{dyn.text} (import by a literal name, or allow-list the module "
                    "with a reason in ALLOWED_DYNAMIC)"
                )
                continue
            try:
                resolved.setdefault(key, set()).update(resolve(pkg, module, dyn))
            except Unresolved as err:
                out.append(f"{pkg.where(module, dyn.line)}: {dyn.text}: cannot resolve it: {err}")
                unresolved.add(key)
    for module, allowance in sorted(pkg.allowed_dynamic.items()):
        key = module
        if module not in pkg.modules:
            continue  # (a tree without that module: nothing to check)
        if key in unresolved:
            continue
        if key not in resolved:
            out.append(f"ALLOWED_DYNAMIC lists {module}, which imports nothing dynamically")
        elif resolved[key] != set(allowance.imports):
            out.append(
                f"ALLOWED_DYNAMIC says {module} loads {sorted(allowance.imports)}; "
                f"its source loads {sorted(resolved[key])}"
            )
    return out


def import_graph(pkg: Package) -> dict[str, set[str]]:
    """Module -> the modules it depends on: every edge, the dynamic ones included."""
    graph: dict[str, set[str]] = {m: set() for m in pkg.modules}
    for module, imp in pkg.imports():
        for target in pkg.targets(imp):
            if target != module and target in pkg.modules:
                graph[module].add(target)
    for rule, module, target in ALLOWED:
        if rule == "cycle" and module in graph:
            graph[module].discard(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> Optional[list[str]]:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> Optional[list[str]]:
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


def long_modules(pkg: Package) -> list[str]:
    too_long = []
    for module, path in pkg.modules.items():
        if module.endswith("_pb2") or module in ALLOWED_LONG:
            continue
        source = path.read_text(encoding="utf-8")
        lines = len(source.splitlines())
        doc = ast.get_docstring(pkg.readings[module].tree) or ""
        if lines > MAX_LINES and "Why one module:" not in doc:
            too_long.append(f"{module}: {lines} lines")
    return too_long


def stale_allowances(pkg: Package) -> list[str]:
    """Allow-list entries that no longer match anything (so the lists only shrink)."""
    out = [
        f"ALLOWED_LONG: {m}"
        for m in sorted(ALLOWED_LONG)
        if m not in pkg.modules
        or len(pkg.modules[m].read_text(encoding="utf-8").splitlines()) <= MAX_LINES
        or m.endswith("_pb2")
    ]
    live = set()
    for module, imp in pkg.imports():
        live |= {(module, t) for t in pkg.targets(imp)}
        live |= {(module, imp.module)} | {(module, f"{imp.module}.{n}") for n in imp.names}
    out += [f"ALLOWED: {e}" for e in sorted(ALLOWED) if (e[1], e[2]) not in live]
    dynamic = {m for m, r in pkg.readings.items() if r.dynamic}
    out += [f"ALLOWED_DYNAMIC: {k}" for k in sorted(pkg.allowed_dynamic) if k not in dynamic]
    return out
