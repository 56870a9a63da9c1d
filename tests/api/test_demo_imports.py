"""``make demo`` installs only ``.[fast,image,jit]``: the demo must import nothing else.

The demo runs (with its CLI subprocesses) under a ``sitecustomize`` import guard
that refuses every top-level module outside the standard library, the runtime
dependencies (numpy, protobuf, crcmod) and the ``fast`` / ``image`` / ``jit`` extras, as if
it were not installed. Optional probes (``try: import zlib_ng``) are refused
quietly; the demo must still complete. Measured on a fresh venv with ``pip install -e
'.[fast,image,jit]'``: 332 MB (README, "Two commands").
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PIL", reason="the demo's image-folder step needs Pillow")

ALLOWED = {
    # runtime dependencies
    "numpy", "google", "crcmod",
    # the fast extra
    "crc32c", "google_crc32c", "isal",
    # the image extra
    "PIL",
    # the jit extra: the compiled parse engine
    "numba", "llvmlite",
    # the package itself
    "tfrecord_lite",
}  # fmt: skip

GUARD = """
import sys

ALLOWED = {allowed!r}
REFUSED = []


class _Guard:
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in ALLOWED or top in sys.stdlib_module_names or top.startswith("_"):
            return None
        REFUSED.append(name)
        sys.stderr.write("demo import guard: refused " + name + "\\n")
        raise ImportError("the demo may not import " + name)


sys.meta_path.insert(0, _Guard())
open({marker!r}, "a").close()
"""


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info < (3, 10), reason="needs sys.stdlib_module_names")
def test_demo_imports_only_its_extras(tmp_path: Path) -> None:
    site = tmp_path / "guard"
    site.mkdir()
    marker = tmp_path / "guard-active"
    (site / "sitecustomize.py").write_text(
        GUARD.format(allowed=sorted(ALLOWED), marker=str(marker))
    )
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    )
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "tfrecord_lite.demo", "--out", str(tmp_path / "out"),
         "-n", "500", "--per-class", "2"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert marker.exists()  # the guard was installed
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    # the last line may say how to put tfrecord-lite on PATH (tests/api/test_demo.py)
    assert "Demo complete." in proc.stdout.splitlines()[-2:]
