"""from-images refuses a folder whose images are not all in class sub-folders."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PIL", reason="from-images needs the image extra (Pillow)")

from tfrecord_lite._decoding._folders import make_digit_folder

SCRIPT = Path(sys.executable).parent / "tfrecord-lite"


def test_loose_images_beside_a_class_folder_are_refused(tmp_path: Path) -> None:
    src = tmp_path / "digits"
    make_digit_folder(str(src), per_class=1)
    for n, cls in enumerate(["0", "1", "2", "3"]):  # four images moved out of their class
        image = next((src / cls).iterdir())
        image.rename(src / f"loose{n}.png")
    for cls in ["0", "1", "2", "3", "4", "5", "6", "7", "8"]:
        for leftover in (src / cls).iterdir():
            leftover.unlink()
        (src / cls).rmdir()
    assert sorted(p.name for p in src.iterdir()) == [
        "9",
        "loose0.png",
        "loose1.png",
        "loose2.png",
        "loose3.png",
    ]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    done = subprocess.run(
        [str(SCRIPT), "from-images", str(src), str(out_dir / "digits")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done
    assert "4 images outside a class sub-folder (loose0.png, loose1.png, loose2.png, ...)" in (
        done.stderr
    )
    assert list(out_dir.iterdir()) == []  # nothing written


def test_a_file_that_is_not_an_image_beside_class_folders_is_only_noted(tmp_path: Path) -> None:
    src = tmp_path / "digits"
    make_digit_folder(str(src), per_class=1)
    (src / "README.txt").write_text("ten classes")
    done = subprocess.run(
        [str(SCRIPT), "from-images", str(src), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "ignored 1 file" in done.stderr and "README.txt" in done.stderr
