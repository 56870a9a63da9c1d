"""Check the built sdist and wheel in DIST_DIR against the source tree.

    python tests/wheel/check_dist.py dist/

The wheel must hold every module and subpackage of ``tfrecord_lite/`` in the source
tree, ``py.typed``, a ``.pyi`` stub beside each generated ``*_pb2.py``, and nothing
else (no tests, benchmarks, docs or protos); its metadata must carry the distribution
name, the version of ``tfrecord_lite/_version.py``, the ``tfrecord-lite`` command and
the extras. The sdist must hold what building the wheel from it needs. Exits 1 with
one line per problem.
"""

from __future__ import annotations

import ast
import email.parser
import re
import sys
import tarfile
import zipfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "tfrecord_lite"
DISTRIBUTION = "tfrecord-lite-np"


def _extra_name(name: str) -> str:
    """An extra's name as the metadata writes it (PEP 685: ``array_record`` -> ``array-record``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


#: The extras the wheel's metadata must offer: those pyproject.toml declares.
EXTRAS = {
    _extra_name(name)
    for name in tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
}


def source_version() -> str:
    """``__version__`` as ``tfrecord_lite/_version.py`` assigns it (without importing)."""
    tree = ast.parse((ROOT / PACKAGE / "_version.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, str)
            return value
    raise LookupError("no __version__ in tfrecord_lite/_version.py")


def source_files() -> set[str]:
    """The package's files in the source tree that belong in the wheel."""
    out = set()
    for path in (ROOT / PACKAGE).rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            out.add(path.relative_to(ROOT).as_posix())
    return out


def check_wheel(wheel: Path, version: str) -> list[str]:
    problems = []
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(info).decode("utf-8"))
        entry_points = zf.read(info.replace("METADATA", "entry_points.txt")).decode()
    dist_info = info.split("/")[0]
    inside = {n for n in names if not n.startswith(dist_info + "/")}

    for name in sorted(inside):
        if name.split("/")[0] != PACKAGE:
            problems.append(f"wheel: {name} is outside the {PACKAGE} package")
        if "__pycache__" in name or name.endswith(".pyc"):
            problems.append(f"wheel: {name} is compiled bytecode")
    missing = source_files() - inside
    problems += [f"wheel: {name} (in the source tree) is missing" for name in sorted(missing)]
    packages = {
        p.parent.relative_to(ROOT).as_posix() for p in (ROOT / PACKAGE).rglob("__init__.py")
    }
    for package in sorted(packages):
        if f"{package}/__init__.py" not in inside:
            problems.append(f"wheel: subpackage {package} is missing")
        if "/tests/" in f"/{package}/" or "/benchmarks/" in f"/{package}/":
            problems.append(f"wheel: {package} is a test or benchmark package")
    if f"{PACKAGE}/py.typed" not in inside:
        problems.append("wheel: py.typed is missing")
    pb2 = sorted(n for n in inside if n.endswith("_pb2.py"))
    if not pb2:
        problems.append("wheel: no generated *_pb2.py module")
    problems += [f"wheel: {n}i (the stub of {n}) is missing" for n in pb2 if n + "i" not in inside]

    if meta["Name"] != DISTRIBUTION:
        problems.append(f"metadata: Name is {meta['Name']!r}, not {DISTRIBUTION!r}")
    if meta["Version"] != version:
        problems.append(f"metadata: Version {meta['Version']} != _version.py's {version}")
    if not wheel.name.startswith(f"{DISTRIBUTION.replace('-', '_')}-{version}-py3-none-any"):
        problems.append(f"wheel: file name {wheel.name} is not a pure-Python wheel of {version}")
    extras = {_extra_name(e) for e in meta.get_all("Provides-Extra") or []}
    if extras != EXTRAS:
        problems.append(f"metadata: extras {sorted(extras)} != {sorted(EXTRAS)}")
    if "tfrecord-lite = tfrecord_lite._cli:main" not in entry_points:
        problems.append("entry points: no `tfrecord-lite` command")
    if not meta.get_payload() or "tfrecord-lite-np" not in meta.get_payload():
        problems.append("metadata: the long description (README) does not name the distribution")
    return problems


def check_sdist(sdist: Path, version: str) -> list[str]:
    problems = []
    top = f"{DISTRIBUTION.replace('-', '_')}-{version}"
    if sdist.name != f"{top}.tar.gz":
        problems.append(f"sdist: file name {sdist.name} is not {top}.tar.gz")
    with tarfile.open(sdist) as tf:
        names = {m.name for m in tf.getmembers()}
    for needed in ("pyproject.toml", "README.md", "LICENSE", "PKG-INFO", f"{PACKAGE}/__init__.py"):
        if f"{top}/{needed}" not in names:
            problems.append(f"sdist: {needed} is missing")
    return problems


def main(argv: list[str]) -> int:
    dist = Path(argv[1] if len(argv) > 1 else "dist")
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        print(f"{dist}: expected one wheel and one sdist, found {wheels + sdists}")
        return 1
    version = source_version()
    problems = check_wheel(wheels[0], version) + check_sdist(sdists[0], version)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"{wheels[0].name}, {sdists[0].name}: contents and metadata as expected")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
