"""A full disk: the writer's error names the file and says what was kept; so does the CLI.

The disk is a 256 KiB tmpfs mounted for the test (``mount -t tmpfs``, which needs root).
Where mounting is not permitted, ENOSPC is simulated instead: the writer's low-level
write (``tfrecord_lite._files._writer.write_all``) raises ``OSError(errno.ENOSPC)``.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files import _writer


@pytest.fixture
def full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Optional[Path]]:
    """A folder on a 256 KiB file system, or None (then writes fail as if it were full)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True
        ).returncode
        == 0
    )
    if not mounted:
        real = _writer.write_all

        def full(f: Any, data: Any) -> None:
            if len(data) > 4096:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            real(f, data)

        monkeypatch.setattr(_writer, "write_all", full)
    try:
        yield disk if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", str(disk)], check=True)


@pytest.mark.parametrize("atomic", [False, True])
@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_the_writer_names_the_file_and_what_was_kept(
    tmp_path: Path, full_disk: Optional[Path], atomic: bool, compression: str
) -> None:
    path = (full_disk or tmp_path) / "data.tfrecord"
    records = [os.urandom(1000) for _ in range(1000)]  # 1 MB, incompressible
    with pytest.raises(OSError) as info, tfr.TFRecordWriter(path, compression, atomic=atomic) as w:
        for record in records:
            w.write(record)
    err = info.value
    assert err.errno == errno.ENOSPC and err.filename == str(path), err
    if atomic:
        assert "nothing was kept under that name" in str(err)
        assert not path.exists() and os.listdir(path.parent) == []
    else:
        assert "the file holds what was written before" in str(err)
        kept = list(tfr.tf_record_iterator(path, on_error="stop", on_skip=lambda r: None))
        assert kept == records[: len(kept)]


def test_the_cli_names_the_file(full_disk: Optional[Path], tmp_path: Path) -> None:
    if full_disk is None:
        pytest.skip("the CLI runs in its own process: this needs a real full disk (tmpfs)")
    src = tmp_path / "src.tfrecord"
    with tfr.TFRecordWriter(src) as w:
        w.write_all([os.urandom(1000) for _ in range(1000)])
    dest = full_disk / "copy.tfrecord"
    out = subprocess.run(
        [sys.executable, "-m", "tfrecord_lite", "convert", str(src), str(dest)],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, TFRECORD_LITE_PROGRESS="0"),
    )
    assert out.returncode != 0
    assert "No space left on device" in out.stderr and str(dest) in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
