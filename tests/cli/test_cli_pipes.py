"""The command line in a shell pipeline: a reader that stops early, and files with nothing to show."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tfrecord_lite as tfr

SCRIPT = Path(sys.executable).parent / "tfrecord-lite"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for set -o pipefail")
@pytest.mark.parametrize("command", [["head", "-n", "50000"], ["head", "--json", "-n", "50000"]])
def test_a_reader_that_stops_early_is_not_a_failure(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "many.tfrecord"
    tfr.write_examples(str(path), {"x": list(range(50_000)), "s": [b"abc"] * 50_000})
    line = " ".join([str(SCRIPT), *command, str(path)])
    out = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {line} | head -1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, (out.returncode, out.stderr)
    assert len(out.stdout.splitlines()) == 1
    assert out.stderr == ""  # quietly: no "a problem with the data", no traceback


def test_head_of_an_empty_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "empty.tfrecord"
    path.write_bytes(b"")
    out = subprocess.run([str(SCRIPT), "head", str(path)], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout == ""
    assert out.stderr.strip() == f"{path}: no records in it"
    tfr.write_examples(str(tmp_path / "two.tfrecord"), {"x": [1, 2]})
    past = subprocess.run(
        [str(SCRIPT), "head", "--skip", "5", "--json", str(tmp_path / "two.tfrecord")],
        capture_output=True,
        text=True,
    )
    assert past.returncode == 0 and past.stdout == ""
    assert past.stderr.strip().endswith("no records past record 4")
