"""Running the ``tfrecord-lite`` command in tests: :func:`run_cli`.

A command runs through ``main()`` in the test's process, its stdout and stderr captured:
a fresh interpreter for each would cost some 0.4 s of imports a command (tests/cli/
test_cli.py's 64 tests: 69.5 s on two workers with a subprocess each, 8.0 s in process,
on the shared 2-core machine). What needs a process of its own gets one: ``env=``
(environment variables are read once a process), ``--debug`` (the interpreter prints
the traceback) and ``own_process=True`` (the ``python -m tfrecord_lite`` entry itself).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from typing import Any, Optional

import tfrecord_lite as tfr
from tfrecord_lite._cli import main

__all__ = ["run_cli"]


def run_cli(
    *args: Any,
    cwd: Any = None,
    env: Optional[dict[str, str]] = None,
    own_process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``tfrecord-lite ARGS...`` (in ``cwd`` if given, without progress bars): its exit
    code, stdout and stderr, as ``subprocess.run(..., capture_output=True, text=True)``
    gives them."""
    argv = [*map(str, args)]
    if env or own_process or "--debug" in argv:
        full_env = dict(os.environ, PYTHONIOENCODING="utf-8", TFRECORD_LITE_PROGRESS="0")
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "tfrecord_lite", *argv],
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
            cwd=cwd,
            env=full_env,
        )
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for _ in range(2))
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        quiet = tfr.options(progress=False)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), quiet:
            code = main(argv)
    finally:
        os.chdir(here)
    texts = []
    for stream in (out, err):
        stream.flush()
        raw = stream.buffer
        assert isinstance(raw, io.BytesIO)
        texts.append(raw.getvalue().decode("utf-8"))
    return subprocess.CompletedProcess(argv, code, texts[0], texts[1])
