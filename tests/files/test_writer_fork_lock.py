"""A forked child that inherited an open writer does not keep its lock once the parent
closes it (real os.fork)."""

from __future__ import annotations

import os
import sys
import time

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files._writer import FileInUseError

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or sys.platform == "win32", reason="needs os.fork and flock"
)


def test_forked_child_does_not_keep_the_lock(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "a.tfrecord")
    w = tfr.TFRecordWriter(path)
    w.write(b"parent")
    r, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: keep running, holding whatever it inherited
        try:
            os.close(r)
            os.write(wfd, b"x")
            time.sleep(10)
        finally:
            os._exit(0)
    try:
        os.close(wfd)
        assert os.read(r, 1) == b"x"
        os.close(r)
        with pytest.raises(FileInUseError):  # the parent's own writer still holds it
            tfr.TFRecordWriter(path)
        w.close()
        with tfr.TFRecordWriter(path) as again:  # the child still runs
            again.write(b"next")
        assert [bytes(x) for x in tfr.read_records(path)] == [b"next"]
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
