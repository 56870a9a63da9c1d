"""Two writers of one local file: the second is refused, the first keeps its records."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files import FileInUseError

_SECOND = """
import sys
import tfrecord_lite as tfr
from tfrecord_lite._files import FileInUseError
try:
    w = tfr.TFRecordWriter(sys.argv[1], mode=sys.argv[2])
except FileInUseError as err:
    print("refused:", err.path)
    sys.exit(3)
w.write(b"second")
w.close()
"""


@pytest.mark.parametrize("first_mode", ["w", "a"])
@pytest.mark.parametrize("second_mode", ["w", "a"])
def test_a_second_process_writing_the_same_path_is_refused(
    tmp_path: Path, first_mode: str, second_mode: str
) -> None:
    path = tmp_path / "data.tfrecord"
    with tfr.TFRecordWriter(path, mode=first_mode) as first:
        first.write(b"first")
        first.flush()
        out = subprocess.run(
            [sys.executable, "-c", _SECOND, str(path), second_mode],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 3, out
        assert out.stdout.strip() == f"refused: {path}"
        first.write(b"more")
    assert list(tfr.tf_record_iterator(path)) == [b"first", b"more"]
    # Once the first writer is closed, the path is free again.
    out = subprocess.run(
        [sys.executable, "-c", _SECOND, str(path), "w"], capture_output=True, timeout=60
    )
    assert out.returncode == 0 and list(tfr.tf_record_iterator(path)) == [b"second"]


def test_a_second_writer_in_the_same_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "data.tfrecord"
    with tfr.TFRecordWriter(path, "GZIP") as first:
        first.write(b"first")
        with pytest.raises(FileInUseError) as info:
            tfr.TFRecordWriter(path)
        assert info.value.path == str(path) and isinstance(info.value, OSError)
        assert "another TFRecordWriter" in str(info.value)
    assert list(tfr.tf_record_iterator(path)) == [b"first"]
