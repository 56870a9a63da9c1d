"""The end-to-end demo (``make demo``) runs, in a subprocess, and says what it did."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PIL", reason="the demo's image-folder step needs Pillow")

DEMO = [sys.executable, "-m", "tfrecord_lite.demo"]


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "demo-out"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # keep our lines and the CLI's in order
    proc = subprocess.run(
        [*DEMO, "--out", str(out), "-n", "2000", "--per-class", "3"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    text = proc.stdout
    lines = text.splitlines()

    # the steps, in order
    headers = [line for line in lines if line.startswith("== ")]
    assert headers == [
        "== write_examples / read_examples: 2000 MNIST-style records",
        "== TensorFlow-style: tfr.train.Example + TFRecordWriter, parse_example + decode_raw",
        "== image folder -> shards with `tfrecord-lite` (30 PNG files)",
    ]
    done = lines.index("Demo complete.")
    # the command's name as it can be typed here: on PATH, or its path in the venv
    script = Path(sys.executable).parent / "tfrecord-lite"
    on_path = shutil.which("tfrecord-lite", path=env.get("PATH"))
    if on_path and Path(on_path).samefile(script):
        shown = "tfrecord-lite"
        assert lines[done:] == ["Demo complete."]
    else:
        shown = os.path.relpath(script)
        assert lines[done + 1 :] == [
            f"The command line is {shown}; `. {os.path.relpath(script.parent / 'activate')}` "
            "puts `tfrecord-lite` on your PATH."
        ]

    # step 1-2: NumPy round trips, plain and GZIP
    exact = [line.split()[0] for line in lines if line.endswith("round trip exact")]
    assert exact == ["digits.tfrecord", "digits.tfrecord.gz"]
    assert '    "image/shape": tfr.FixedLenFeature([2], tfr.int64),' in lines
    assert '    "label": tfr.FixedLenFeature([], tfr.int64),' in lines
    # step 3: TensorFlow style
    assert "2000 records parsed; decode_raw + reshape gives the images back exactly" in lines
    # step 4: the command line on an image folder
    commands = [line.split()[2] for line in lines if line.startswith(f"$ {shown} ")]
    assert commands == ["from-images", "info", "verify", "preview"]
    assert "total: 30 records in 2 files" in lines
    assert "all 2 files ok: 30 records" in lines
    assert any(line.startswith("wrote ") and "preview.png: 15 images" in line for line in lines)
    assert "streamed 30 images back as NumPy batches of 64 (pixels (28, 28, 1))" in lines

    # and the files are there
    assert (out / "digits.tfrecord").stat().st_size > 0
    assert (out / "digits.tfrecord.gz").read_bytes()[:2] == b"\x1f\x8b"
    shards = sorted(p.name for p in (out / "shards").iterdir())
    assert [s for s in shards if s.startswith("digits-")] == [
        "digits-00000-of-00002",
        "digits-00001-of-00002",
    ]
    assert (out / "preview.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
