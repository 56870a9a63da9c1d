"""Images of 16 bits per channel: ``from-images`` (``write_image_folder``) stores them in
every format, keeping 16 bits where the format holds them and saying why not where it
cannot be exact; ``tfr.io.decode_png`` never returns made-up 16-bit values; and the
Pillow-style decoder has its own name (``tfr.decode_with_pillow``), apart from
TensorFlow's ``tfr.io.decode_image``."""

from __future__ import annotations

import io
import struct
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite import example_pb2

Image = pytest.importorskip("PIL.Image")

GRAY16 = (np.arange(12 * 10, dtype=np.uint16).reshape(12, 10) * 541 + 3).astype(np.uint16)
RGB16 = (np.arange(4 * 3 * 3, dtype=np.uint16).reshape(4, 3, 3) * 1811 + 7).astype(np.uint16)


def _png16(pixels: np.ndarray) -> bytes:
    """A 16-bit PNG written by hand (gray or RGB): Pillow cannot write 16-bit colour."""
    h, w = pixels.shape[:2]
    colour = 0 if pixels.ndim == 2 else 2
    rows = b"".join(b"\x00" + pixels[y].astype(">u2").tobytes() for y in range(h))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", w, h, 16, colour, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "scans"
    (root / "a").mkdir(parents=True)
    (root / "a" / "gray16.png").write_bytes(_png16(GRAY16))
    (root / "a" / "rgb16.png").write_bytes(_png16(RGB16))
    return root


def _examples(paths: list[str]) -> dict[str, Any]:
    out = {}
    for record in tfr.tf_record_iterator(paths):
        f = example_pb2.Example.FromString(record).features.feature
        out[f["image/filename"].bytes_list.value[0].decode()] = f
    return out


def test_keep_stores_16_bit_pngs_as_they_are(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    for fmt in ("keep", "png"):
        summary = tfr.write_image_folder(str(root), str(tmp_path / fmt / "s"), format=fmt)
        assert (summary.written, summary.skipped, dict(summary.conversions)) == (2, [], {})
        got = _examples(summary.paths)
        for name, pixels in (("gray16.png", GRAY16), ("rgb16.png", RGB16)):
            f = got[f"a/{name}"]
            assert f["image/encoded"].bytes_list.value[0] == (root / "a" / name).read_bytes()
            assert f["image/format"].bytes_list.value == [b"png"]
            assert f["image/height"].int64_list.value == [pixels.shape[0]]
            assert f["image/width"].int64_list.value == [pixels.shape[1]]
            assert f["image/channels"].int64_list.value == [1 if pixels.ndim == 2 else 3]


def test_raw_and_png_keep_16_bit_grayscale_as_uint16(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    (root / "a" / "rgb16.png").unlink()
    raw = tfr.write_image_folder(str(root), str(tmp_path / "raw" / "s"), format="raw")
    f = _examples(raw.paths)["a/gray16.png"]
    assert f["image_raw/dtype"].bytes_list.value == [b"<u2"]
    assert f["image_raw/shape"].int64_list.value == [12, 10, 1]
    stored = np.frombuffer(f["image_raw"].bytes_list.value[0], "<u2").reshape(12, 10)
    assert np.array_equal(stored, GRAY16)
    # three channels: the gray repeated, still 16 bits
    rgb = tfr.write_image_folder(str(root), str(tmp_path / "rgb" / "s"), format="raw", channels=3)
    f = _examples(rgb.paths)["a/gray16.png"]
    stored = np.frombuffer(f["image_raw"].bytes_list.value[0], "<u2").reshape(12, 10, 3)
    assert all(np.array_equal(stored[:, :, i], GRAY16) for i in range(3))
    assert rgb.conversions["1 to 3 channels"] == 1
    # resized as PNG: a 16-bit PNG (Pillow's own 16-bit resize)
    small = tfr.write_image_folder(str(root), str(tmp_path / "sm" / "s"), format="png", size=(5, 6))
    f = _examples(small.paths)["a/gray16.png"]
    png = f["image/encoded"].bytes_list.value[0]
    assert png[24] == 16  # the PNG header's bit depth
    want = np.asarray(Image.fromarray(GRAY16).resize((5, 6), Image.Resampling.BILINEAR))
    assert np.array_equal(tfr.io.decode_png(png, dtype=np.uint16)[:, :, 0], want)
    assert small.conversions == {"resized": 1}


def test_jpeg_stores_the_high_byte_and_says_so(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    summary = tfr.write_image_folder(str(root), str(tmp_path / "j" / "s"), format="jpeg")
    assert summary.written == 2 and summary.conversions["16 to 8 bits"] == 2
    got = _examples(summary.paths)
    for name, pixels in (("gray16.png", GRAY16), ("rgb16.png", RGB16)):
        jpeg = got[f"a/{name}"]["image/encoded"].bytes_list.value[0]
        decoded = tfr.io.decode_jpeg(jpeg).astype(int)
        high = (pixels // 256).astype(int)
        high = high[:, :, None] if high.ndim == 2 else high
        assert np.abs(decoded - high).max() <= 12  # JPEG's loss, around x // 256


def test_what_cannot_be_exact_is_skipped_with_the_reason(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    raw = tfr.write_image_folder(str(root), str(tmp_path / "r" / "s"), format="raw")
    assert raw.written == 1 and [rel for rel, _ in raw.skipped] == ["a/rgb16.png"]
    assert "16-bit RGB PNG cannot be stored as raw pixels exactly" in raw.skipped[0][1]
    assert "Pillow reads 8 of its 16 bits" in raw.skipped[0][1]
    rgb = tfr.write_image_folder(str(root), str(tmp_path / "c" / "s"), format="png", channels=3)
    reasons = dict(rgb.skipped)
    assert "cannot be stored with 3 channels as PNG" in reasons["a/gray16.png"]
    assert "16 bits in one channel only" in reasons["a/gray16.png"]


def test_decode_png_never_makes_up_16_bit_colour_values() -> None:
    rgb16 = _png16(RGB16)
    assert np.array_equal(tfr.io.decode_png(rgb16), (RGB16 // 256).astype(np.uint8))
    assert np.array_equal(tfr.io.decode_image(rgb16), (RGB16 // 256).astype(np.uint8))
    for decode in (tfr.io.decode_png, tfr.io.decode_image):
        with pytest.raises(ValueError, match="16-bit RGB PNG cannot be decoded to uint16"):
            decode(rgb16, dtype=np.uint16)
    with pytest.raises(ValueError, match="to float32"):
        tfr.io.decode_image(rgb16, dtype=np.float32)
    gray = tfr.io.decode_png(_png16(GRAY16), dtype=np.uint16)
    assert gray.dtype == np.uint16 and np.array_equal(gray[:, :, 0], GRAY16)


def test_one_name_one_grayscale_shape() -> None:
    buf = io.BytesIO()
    Image.fromarray(np.arange(20, dtype=np.uint8).reshape(4, 5)).save(buf, "PNG")
    gray = buf.getvalue()
    assert tfr.decode_with_pillow(gray).shape == (4, 5)  # Pillow's convention, by name
    assert tfr.io.decode_image(gray).shape == (4, 5, 1)  # TensorFlow's
    assert tfr.image.decode_image(gray).shape == (4, 5, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tfr.decode_image(gray).shape == (4, 5, 1)  # TensorFlow's too, no warning
        tfr.decode_with_pillow(gray, mode="RGB")  # the Pillow-style name does not warn
