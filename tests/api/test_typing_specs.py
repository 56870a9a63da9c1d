"""The documented feature-dict pattern type-checks: mypy, default options and --strict.

A dict literal mixing spec classes (``{"a": tfr.FixedLenFeature(...), "b":
tfr.VarLenFeature(...)}``) is given no annotation in the README and the tutorials, so
mypy infers its value type by joining the classes. NamedTuples join to a bare
``tuple[Any, ...]``, which ``parse_example`` / ``read_examples`` refused; the specs'
common base (``FeatureSpecBase``, part of ``tfr.FeatureSpec``) is what the join is now.

Each case runs ``python -m mypy`` on a small file; the package is analysed but its own
errors are not reported (as for an installed, typed package). A control line passing a
dict of plain tuples must still be an error, so a run that cannot see the package's
types (everything ``Any``) fails the test instead of passing it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tfrecord_lite

pytest.importorskip("mypy")

ROOT = Path(tfrecord_lite.__file__).resolve().parent.parent

SNIPPET = """\
from typing import Any

import numpy as np

import tfrecord_lite as tfr

features = {"a": tfr.FixedLenFeature([], tfr.string), "b": tfr.VarLenFeature(tfr.float32)}
records = [tfr.encode_example({"a": b"x", "b": np.array([1.5], np.float32)})]
batch = tfr.io.parse_example(records, features)
one = tfr.io.parse_single_example(records[0], features)
both = tfr.parse_example(records, features)
single = tfr.parse_single_example(records[0], features)
rows = tfr.read_examples("train.tfrecord", features)

every = {
    "fixed": tfr.FixedLenFeature([2], tfr.int64, default_value=[0, 0]),
    "var": tfr.VarLenFeature(tfr.int64),
    "seq": tfr.FixedLenSequenceFeature([], tfr.float32, allow_missing=True),
    "sparse": tfr.SparseFeature("i", "v", tfr.float32, 4),
    "ragged": tfr.RaggedFeature(tfr.int64),
}
tfr.io.parse_example(records, every)
tfr.read_examples("train.tfrecord", every)

annotated: dict[str, tfr.FeatureSpec] = {"a": tfr.FixedLenFeature([], tfr.string)}
tfr.parse_example(records, annotated)
context = {"id": tfr.FixedLenFeature([], tfr.int64)}
steps = {"frames": tfr.FixedLenSequenceFeature([], tfr.string)}
tfr.io.parse_single_sequence_example(records[0], context, steps)


def takes(spec: tfr.FeatureSpec) -> Any:
    return spec.dtype


takes(tfr.VarLenFeature(tfr.int64))
not_specs = {"a": (1, 2)}
tfr.parse_example(records, not_specs)  # the control: must be an error
"""


@pytest.mark.slow
@pytest.mark.parametrize("options", [[], ["--strict"]], ids=["default", "strict"])
def test_mypy_accepts_the_documented_feature_dicts(tmp_path: Path, options: list[str]) -> None:
    (tmp_path / "snippet.py").write_text(SNIPPET, encoding="utf-8")
    (tmp_path / "mypy.ini").write_text(
        "[mypy]\n\n[mypy-tfrecord_lite.*]\nfollow_imports = silent\nignore_errors = True\n",
        encoding="utf-8",
    )
    env = dict(os.environ)
    if ROOT.name not in ("site-packages", "dist-packages"):
        env["MYPYPATH"] = str(ROOT)  # a checkout (editable install): point mypy at it
    # (installed from a wheel, mypy finds the package, typed by its py.typed, by itself)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            *options,
            "--config-file",
            "mypy.ini",
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            "snippet.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    control = (
        SNIPPET.splitlines().index(
            "tfr.parse_example(records, not_specs)  # the control: must be an error"
        )
        + 1
    )
    assert [e.split(":")[:2] for e in errors] == [["snippet.py", str(control)]], out.stdout
    assert 'Argument 2 to "parse_example" has incompatible type' in errors[0], out.stdout
