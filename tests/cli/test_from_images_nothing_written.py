"""``from-images`` when no image can be written (every file fails, or the class folders
hold no image): nothing is left behind (no shard, ``labels.txt`` or manifest, no folder
it made), the exit code is 1 and stderr names each file and why; the Python API raises
``ParseError`` saying the same. 16-bit PNGs are written (``--format keep``)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._cli import main

pytest.importorskip("PIL")


def _broken_folder(tmp_path: Path) -> Path:
    root = tmp_path / "photos"
    for cls, name in (("cat", "1.jpg"), ("cat", "2.png"), ("dog", "3.png")):
        (root / cls).mkdir(parents=True, exist_ok=True)
        (root / cls / name).write_bytes(b"not a picture at all\n")
    return root


def _everything(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_every_image_failing_leaves_nothing_behind(tmp_path: Path, capsys: Any) -> None:
    root = _broken_folder(tmp_path)
    before = _everything(tmp_path)
    assert main(["from-images", str(root), str(tmp_path / "out" / "deep" / "photos")]) == 1
    err = capsys.readouterr().err
    for name in ("cat/1.jpg", "cat/2.png", "dog/3.png"):
        assert f"skipped {root / name}: cannot decode image" in err
    assert "error: none of the 3 image files" in err and "nothing was written" in err
    assert _everything(tmp_path) == before  # not even the folders out/deep
    # into an existing folder: it stays empty
    out = tmp_path / "existing"
    out.mkdir()
    assert main(["-q", "from-images", str(root), str(out) + "/", "--shards", "2"]) == 1
    assert list(out.iterdir()) == []
    capsys.readouterr()


def test_class_folders_without_images_write_nothing(tmp_path: Path, capsys: Any) -> None:
    root = tmp_path / "empty"
    (root / "cat").mkdir(parents=True)
    (root / "dog").mkdir()
    (root / "dog" / "notes.txt").write_text("no images here\n")
    out = tmp_path / "out"
    out.mkdir()
    assert main(["from-images", str(root), str(out / "x")]) == 1
    assert "hold no file with an image extension" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_the_api_raises_and_leaves_nothing(tmp_path: Path) -> None:
    root = _broken_folder(tmp_path)
    out = tmp_path / "api"
    out.mkdir()
    with pytest.raises(tfr.ParseError, match=r"cat/1\.jpg: cannot decode image"):
        tfr.write_image_folder(str(root), str(out / "photos"), shards=3, write_index=True)
    assert list(out.iterdir()) == []


def test_a_16_bit_png_is_written_as_it_is(tmp_path: Path, capsys: Any) -> None:
    root = tmp_path / "scans"
    (root / "xray").mkdir(parents=True)
    rows = b"".join(b"\x00" + bytes(range(2 * y, 2 * y + 8)) for y in range(3))  # 4 x 3, 16-bit
    body = struct.pack(">IIBBBBB", 4, 3, 16, 0, 0, 0, 0)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", body) + chunk(b"IDAT", zlib.compress(rows))
    png += chunk(b"IEND", b"")
    (root / "xray" / "a.png").write_bytes(png)
    assert main(["from-images", str(root), str(tmp_path / "out" / "s")]) == 0
    assert "every image stored as its file is" in capsys.readouterr().out
    records = list(tfr.tf_record_iterator(str(tmp_path / "out" / "s-00000-of-00001")))
    spec = {"image/encoded": tfr.FixedLenFeature([], tfr.string)}
    assert tfr.parse_single_example(records[0], spec)["image/encoded"] == png
