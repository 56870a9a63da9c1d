"""PNG frames: the image data is inflated by the faster inflater and handed to Pillow
stored; the pixels and errors are those of Pillow decoding the file as it is."""

from __future__ import annotations

import io
import struct
import zlib
from typing import Any

import numpy as np
import pytest

from tfrecord_lite.tfds import _image_features as features

Image = pytest.importorskip("PIL.Image")
pytest.importorskip("isal")


def _png(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, "PNG")
    return buf.getvalue()


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    out, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack_from(">I", data, pos)
        out.append((data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]))
        pos += 12 + length
    return out


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _split_idat(data: bytes, size: int) -> bytes:
    """The same PNG with its image data in IDAT chunks of ``size`` bytes."""
    chunks = _chunks(data)
    stream = b"".join(body for kind, body in chunks if kind == b"IDAT")
    out = [data[:8]]
    for kind, body in chunks:
        if kind == b"IDAT":
            if stream:
                out += [_chunk(b"IDAT", stream[i : i + size]) for i in range(0, len(stream), size)]
                stream = b""
        else:
            out.append(_chunk(kind, body))
    return b"".join(out)


def _pngs() -> dict[str, bytes]:
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    rgb[:10] = 7  # some runs, so the filters vary by row
    gray = rgb[..., 0].copy()
    rgba = np.dstack([rgb, gray])
    palette = Image.fromarray(rgb).quantize(16)
    buf = io.BytesIO()
    palette.save(buf, "PNG", transparency=3)
    gray16 = (rng.integers(0, 65536, (20, 31))).astype(np.uint16)
    buf16 = io.BytesIO()
    Image.fromarray(gray16).save(buf16, "PNG")
    bilevel = io.BytesIO()
    Image.fromarray(gray > 128).convert("1").save(bilevel, "PNG")
    out = {
        "rgb": _png(rgb),
        "gray": _png(gray),
        "rgba": _png(rgba),
        "gray+alpha": _png(np.dstack([gray, 255 - gray])),
        "palette+tRNS": buf.getvalue(),
        "gray16": buf16.getvalue(),
        "bilevel": bilevel.getvalue(),
    }
    head = bytearray(_chunks(out["rgb"])[0][1])
    head[12] = 1  # the interlace flag: Adam7 (Pillow cannot write such files)
    out["interlaced flag"] = out["rgb"][:8] + _chunk(b"IHDR", bytes(head)) + out["rgb"][33:]
    out["many IDAT"] = _split_idat(out["rgb"], 100)
    return out


def _pillow_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(features, "_stored_png", lambda data, limit: None)


def _decode(data: bytes, channels: int, dtype: Any) -> Any:
    try:
        return features.decode_image_bytes(data, channels, np.dtype(dtype))
    except Exception as err:
        return (type(err).__name__, str(err))


@pytest.mark.parametrize("name", sorted(_pngs()))
@pytest.mark.parametrize("channels", [0, 1, 3, 4])
def test_pixels_are_pillows(name: str, channels: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _pngs()[name]
    for dtype in (np.uint8, np.uint16):
        got = _decode(data, channels, dtype)
        with monkeypatch.context() as m:
            _pillow_only(m)
            want = _decode(data, channels, dtype)
        if isinstance(want, tuple):
            assert got == want
        else:
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)


def test_the_image_data_reaches_pillow_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bytes] = []
    real_open = Image.open

    def spy(fp: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(fp.getvalue())
        return real_open(fp, *args, **kwargs)

    monkeypatch.setattr(Image, "open", spy)
    features.decode_image_bytes(_pngs()["palette+tRNS"], 3, np.dtype(np.uint8))
    (stream,) = [body for kind, body in _chunks(seen[0]) if kind == b"IDAT"]
    assert stream[:2] == b"\x78\x01" and stream[2] & 0b110 == 0  # zlib, stored blocks


@pytest.mark.parametrize("name", ["rgb", "gray", "rgba", "gray+alpha", "many IDAT"])
def test_plain_pngs_skip_image_open(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    want = features.decode_image_bytes(_pngs()[name], 0, np.dtype(np.uint8))

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Image.open was called")

    monkeypatch.setattr(Image, "open", refuse)
    got = features.decode_image_bytes(_pngs()[name], 0, np.dtype(np.uint8))
    np.testing.assert_array_equal(got, want)


def test_pngs_with_other_chunks_go_through_image_open() -> None:
    rgb = _pngs()["rgb"]
    text = rgb[:33] + _chunk(b"tEXt", b"a\x00b") + rgb[33:]
    stored = features._stored_png(text, None)
    assert stored is not None and features._plain_png(Image, stored) is None


def _damaged() -> dict[str, bytes]:
    good = _pngs()["rgb"]
    chunks = _chunks(good)
    stream = b"".join(body for kind, body in chunks if kind == b"IDAT")
    ihdr = good[:8] + _chunk(b"IHDR", chunks[0][1])
    raw = zlib.decompress(stream)
    return {
        "truncated": good[: len(good) // 2],
        "bad stream": ihdr + _chunk(b"IDAT", stream[:40] + b"\x00" * 50) + _chunk(b"IEND", b""),
        "bad adler": ihdr
        + _chunk(b"IDAT", stream[:-4] + b"\x00\x00\x00\x00")
        + _chunk(b"IEND", b""),
        "short data": ihdr + _chunk(b"IDAT", zlib.compress(raw[:-60])) + _chunk(b"IEND", b""),
        "long data": ihdr
        + _chunk(b"IDAT", zlib.compress(raw + b"\x00" * 60))
        + _chunk(b"IEND", b""),
        "IDAT apart": ihdr
        + _chunk(b"IDAT", stream[:50])
        + _chunk(b"tEXt", b"a\x00b")
        + _chunk(b"IDAT", stream[50:])
        + _chunk(b"IEND", b""),
    }


@pytest.mark.parametrize("name", sorted(_damaged()))
def test_damaged_pngs_decode_or_fail_as_pillow_has_it(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _damaged()[name]
    assert features._stored_png(data, None) is None
    got = _decode(data, 3, np.uint8)
    _pillow_only(monkeypatch)
    want = _decode(data, 3, np.uint8)
    if isinstance(want, tuple):
        assert got == want
    else:
        np.testing.assert_array_equal(got, want)


def test_the_zlib_setting_leaves_pngs_to_pillow() -> None:
    import tfrecord_lite as tfr

    with tfr.options(deflate_backend="zlib"):
        assert features._stored_png(_pngs()["rgb"], None) is None
    assert features._stored_png(_pngs()["rgb"], None) is not None


@pytest.mark.parametrize("size", [0, 1, 65535, 65536, 131071])
def test_stored_streams_inflate_to_the_data(size: int) -> None:
    raw = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    inflate = zlib.decompressobj()
    assert inflate.decompress(features._stored_zlib(raw, zlib.adler32)) == raw
    assert inflate.eof and not inflate.unused_data
