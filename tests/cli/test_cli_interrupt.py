"""Command line: Ctrl-C, ``preview``'s error reporting, byte rates, ``--version``.

Ctrl-C is sent as a terminal sends it: SIGINT to the whole process group, workers
included. A named pipe among the inputs blocks the job at a known point, so the
signal always arrives mid-work. Each command must print exactly one line,
``tfrecord-lite: interrupted``, exit 130 and leave nothing half-written.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._cli._progress import Progress

posix_only = pytest.mark.skipif(
    not hasattr(os, "mkfifo") or not hasattr(os, "killpg"), reason="needs named pipes and killpg"
)


def _foreground_sigint() -> None:
    # A terminal's foreground job does not ignore Ctrl-C. Test runners started in the
    # background (`cmd &` in a script) ignore SIGINT, and children inherit that.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cli(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, TFRECORD_LITE_PROGRESS="0")
    return subprocess.Popen(
        [sys.executable, "-m", "tfrecord_lite", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: Ctrl-C reaches it and its workers
        preexec_fn=_foreground_sigint,
        env=env,
    )


def _ctrl_c(proc: subprocess.Popen[str], ready: Callable[[], bool]) -> tuple[int, str, str]:
    deadline = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the command never reached the blocking input"
        time.sleep(0.05)
    time.sleep(0.5)  # let every worker pick up work
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


class _ReaderWaiting:
    """True once some process opened the named pipe for reading (it then blocks in read)."""

    def __init__(self, fifo: Path) -> None:
        self.fifo = fifo
        self.fd: Optional[int] = None

    def __call__(self) -> bool:
        try:  # a non-blocking writer can open a FIFO only while a reader has it open
            self.fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return False
        return True

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)


@posix_only
@pytest.mark.parametrize("workers", ["2", "1"])
def test_ctrl_c_in_from_images(tmp_path: Path, workers: str) -> None:
    Image = pytest.importorskip("PIL.Image")
    photos = tmp_path / "photos"
    for cls in ("cat", "dog"):
        (photos / cls).mkdir(parents=True)
        for i in range(6):
            Image.fromarray(np.full((8, 8, 3), 30 * i, np.uint8)).save(photos / cls / f"{i}.png")
    fifo = photos / "dog" / "3-pipe.png"
    os.mkfifo(fifo)  # reading it blocks: the job is mid-way
    out = tmp_path / "out"
    out.mkdir()
    proc = _cli("from-images", str(photos), str(out / "photos"), "--workers", workers)
    ready = _ReaderWaiting(fifo)
    try:
        code, stdout, stderr = _ctrl_c(proc, ready)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        ready.close()
    assert code == 130
    assert stderr.strip() == "tfrecord-lite: interrupted", stderr
    assert "Traceback" not in stderr and stdout == ""
    assert sorted(os.listdir(out)) == []  # no shard, no temp file, no labels.txt


@posix_only
def test_ctrl_c_in_convert_leaves_nothing(tmp_path: Path) -> None:
    fifo = tmp_path / "in.tfrecord"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    out.mkdir()
    proc = _cli("convert", str(fifo), str(out / "copy.tfrecord"), "--compression", "GZIP")
    opened = threading.Event()

    def feed() -> None:
        with open(fifo, "wb") as f:  # some records, then the pipe stays open
            f.write(b"".join(tfr.encode_record(b"record %d" % i) for i in range(50)))
            f.flush()
            opened.set()
            while proc.poll() is None:
                time.sleep(0.05)

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    try:
        code, _, stderr = _ctrl_c(proc, opened.is_set)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        t.join(10)
    assert code == 130
    assert stderr.strip() == "tfrecord-lite: interrupted", stderr
    assert sorted(os.listdir(out)) == []


def test_preview_reports_a_wrong_image_key_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("PIL")
    from tfrecord_lite._cli import main

    path = tmp_path / "a.tfrecord"
    with tfr.TFRecordWriter(str(path)) as w:
        for i in range(20):
            w.write(tfr.encode_example({"img": np.zeros(16, np.uint8).tobytes(), "label": i}))
    code = main(["preview", str(path), "--image-key", "image", "-o", str(tmp_path / "g.png")])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("no feature 'image' (features: img, label)") == 1, err
    assert "the same problem in 15 more records" in err
    assert not (tmp_path / "g.png").exists()


def test_byte_rates_print_as_mb_per_s() -> None:
    buf = io.StringIO()
    bar = Progress(total=400e6, desc="verify", unit="B", enabled=True, delay=0.0, file=buf)
    bar._start = time.monotonic() - 2.0  # 193.2 MB in 2 s
    bar.n = 193.2e6
    line = bar._line(time.monotonic())
    assert "MB/s" in line and "M B/s" not in line, line
    assert "193.2MB/400.0MB" in line
    items = Progress(total=10, unit="img", enabled=True, delay=0.0, file=buf)
    assert " img/s" in items._line(time.monotonic())


def test_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tfrecord_lite", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0
    assert done.stdout.strip() == f"tfrecord-lite {tfr.__version__}"
