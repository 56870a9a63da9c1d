"""``tfds.features.Image`` and how TFDS decodes image bytes
(``tf.image.decode_image``: PNG, JPEG, BMP to uint8 / uint16, float32 images stored
as 4-channel PNGs).

PNG image data is inflated by the library's faster inflater (ISA-L, else zlib-ng, as
the ``deflate_backend`` setting allows) and handed to Pillow stored, so Pillow only
undoes the PNG filters: about a quarter less time a frame than Pillow's own zlib
(:func:`_stored_png`); a plain 8-bit PNG (only IHDR, IDAT and IEND, as TFDS writes
them) is then decoded from that stream without ``Image.open`` (:func:`_plain_png`),
whose Python would hold the GIL against the frame pool's other threads. The pixels are
Pillow's either way; anything unusual (an interlaced or damaged file, data after the
image) goes to Pillow as it is, which decodes it or words the error.
"""

from __future__ import annotations

import io
import struct
import zlib
from typing import Any, Optional

import numpy as np

from .. import _settings
from .._errors import ParseError
from ._features import (
    LeafConnector,
    Shape,
    TensorInfo,
    UnsupportedFeatureError,
    _shape_str,
)


class Image(LeafConnector):
    """``tfds.features.Image``: PNG/JPEG bytes decoded to ``(H, W, C)`` uint8 / uint16 / float32.

    Decoded like ``tf.image.decode_image(channels=shape[-1], dtype=dtype)``: PNG is
    exact. JPEG is decoded as :func:`tfrecord_lite.io.decode_jpeg`: exact with the
    ``image`` extra (simplejpeg); with Pillow alone, chroma-subsampled JPEGs may differ
    from TensorFlow's pixels by a few levels (see the README). ``float32`` images are
    single-channel, stored as 4-channel uint8 PNGs holding the float bytes.
    """

    tfds_class = "tensorflow_datasets.core.features.image_feature.Image"
    needs_decoding = True

    def __init__(
        self,
        *,
        shape: Shape = (None, None, 3),
        dtype: Any = np.uint8,
        encoding_format: Optional[str] = None,
    ) -> None:
        self._shape = tuple(shape)
        self._dtype: np.dtype[Any] = np.dtype(dtype)
        self.encoding_format = encoding_format
        if len(self._shape) != 3:
            raise UnsupportedFeatureError(
                f"Image: shape {_shape_str(self._shape)} (only (height, width, channels) images; "
                "animated GIF images are not supported)"
            )
        if self._dtype.name not in ("uint8", "uint16", "float32"):
            raise UnsupportedFeatureError(f"Image: dtype {self._dtype} is not supported")
        channels = self._shape[-1]
        if channels not in (None, 0, 1, 2, 3, 4):
            raise ValueError(f"Image: {channels} channels")
        if self._dtype == np.float32 and channels != 1:
            raise ValueError("Image: float32 images have one channel")

    def serialized_info(self) -> Any:
        """How the value is stored in the Example: a ``TensorInfo`` (or a dict of them)."""
        return TensorInfo((), np.dtype(object))

    def decode(self, value: Any) -> Any:
        """Decode one serialized value (sequence rank 0)."""
        data = value if isinstance(value, bytes) else bytes(np.asarray(value).item())
        if self._dtype == np.float32:
            pixels = decode_image_bytes(data, 4, np.dtype(np.uint8))
            out = np.ascontiguousarray(pixels).view("<f4").astype(np.float32, copy=False)
            return _check_shape(out, self._shape)
        channels = self._shape[-1] or 0
        return _check_shape(decode_image_bytes(data, channels, self._dtype), self._shape)

    def _repr_args(self) -> str:
        fmt = f", encoding_format={self.encoding_format}" if self.encoding_format else ""
        return super()._repr_args() + fmt


def _check_shape(image: np.ndarray, shape: Shape) -> np.ndarray:
    if image.ndim != len(shape) or any(
        d is not None and d != s for d, s in zip(shape, image.shape)
    ):
        raise ParseError(
            f"decoded image has shape {image.shape}, the dataset declares {_shape_str(shape)}"
        )
    return image


def _png_info(data: bytes) -> Optional[tuple[int, int]]:
    """(bit depth, colour type) of a PNG, from its IHDR chunk."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 26 and data[12:16] == b"IHDR":
        return data[24], data[25]
    return None


def decode_image_bytes(data: bytes, channels: int, dtype: np.dtype[Any]) -> np.ndarray:
    """``tf.image.decode_image(data, channels, dtype)`` for PNG/JPEG/BMP (uint8, uint16), with Pillow.

    ``channels=0`` keeps the file's channels. Always 3-D ``(H, W, C)``.
    """
    from .._decoding import decode_jpeg_pixels, pil_image

    if channels not in (0, 1, 3, 4):
        raise ParseError(
            f"cannot decode an image to {channels} channels: tf.image.decode_image (which TFDS "
            "uses) accepts channels 0, 1, 3 or 4"
        )
    if data[:3] == b"\xff\xd8\xff" and channels in (0, 1, 3):
        # the library's one JPEG decoder, tf.io.decode_jpeg's pixels
        pixels = decode_jpeg_pixels(data, channels, what="decode image")
        return pixels.astype(np.uint16) * np.uint16(256) if dtype == np.uint16 else pixels
    pil = pil_image()
    png = _png_info(data)
    stored = _stored_png(data, pil.MAX_IMAGE_PIXELS) if png is not None else None
    try:
        img = _plain_png(pil, stored) if stored is not None else None
        if img is None:
            img = pil.open(io.BytesIO(data if stored is None else stored))
            img.load()
    except (OSError, SyntaxError, ValueError, EOFError, pil.DecompressionBombError) as err:
        raise ParseError(f"cannot decode image: {err}") from None
    sixteen = png is not None and png[0] == 16
    if sixteen and img.mode not in ("I;16", "I;16B", "I;16L", "I"):
        raise UnsupportedFeatureError(
            f"16-bit PNG with colour type {png[1] if png else '?'} (Pillow decodes only "
            "16-bit grayscale)"
        )
    if sixteen:
        arr = np.array(img).astype(np.uint16)
        if dtype == np.uint8:
            arr = (arr >> 8).astype(np.uint8)
        arr = arr[:, :, None]
        if channels in (3, 4):
            arr = np.repeat(arr, 3, axis=2)
            if channels == 4:
                full = np.iinfo(arr.dtype).max
                arr = np.concatenate([arr, np.full((*arr.shape[:2], 1), full, arr.dtype)], 2)
        elif channels == 2:
            full = np.iinfo(arr.dtype).max
            arr = np.concatenate([arr, np.full((*arr.shape[:2], 1), full, arr.dtype)], 2)
        return arr
    mode = img.mode
    target = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}.get(channels)
    if target is None:  # keep the file's channels
        if mode in ("L", "LA", "RGB", "RGBA"):
            target = mode
        elif mode == "1":
            target = "L"
        elif mode in ("P", "PA"):
            target = "RGBA" if (mode == "PA" or "transparency" in img.info) else "RGB"
        else:
            target = "RGB"
    if target == "L" and mode not in ("L", "LA", "1", "I", "I;16", "I;16B", "I;16L"):
        # libpng's rgb_to_gray as TensorFlow sets it up (weights .299/.587 in 15-bit
        # fixed point, truncated): Pillow's "L" conversion rounds differently.
        rgb = np.asarray(img.convert("RGB"), dtype=np.uint32)
        gray = (rgb[..., 0] * 9797 + rgb[..., 1] * 19234 + rgb[..., 2] * 3737) >> 15
        out = gray.astype(np.uint8)[:, :, None]
        return out.astype(np.uint16) * np.uint16(257) if dtype == np.uint16 else out
    if mode != target:
        img = img.convert(target)
    arr = np.asarray(img)
    if arr.dtype != np.uint8:
        arr = arr.astype(np.uint8)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if dtype == np.uint16:
        arr = arr.astype(np.uint16) * np.uint16(257)
    return arr


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # by colour type
_CHUNK_HEAD = struct.Struct(">I4s")


def _inflater() -> Any:
    """The zlib-compatible module that inflates faster than zlib (ISA-L, zlib-ng) as
    the ``deflate_backend`` setting allows, or None (zlib: nothing to gain)."""
    wanted = _settings.deflate_backend()
    names = {"auto": ("isal", "zlib-ng"), "isal": ("isal",), "zlib-ng": ("zlib-ng",)}
    for name in names.get(wanted, ()):
        try:
            if name == "isal":
                from isal import isal_zlib

                return isal_zlib
            from zlib_ng import zlib_ng

            return zlib_ng
        except ImportError:
            continue
    return None


def _stored_png(data: bytes, max_pixels: Optional[int]) -> Optional[bytes]:
    """``data``, a PNG, with its image data inflated here and stored uncompressed in
    one IDAT chunk (every other chunk as it was), or None to give Pillow ``data``.

    None unless the file is a non-interlaced PNG of a known colour type whose
    chunks all fit, whose IDAT chunks follow each other, and whose image data
    inflates (checksum included) to exactly the scanlines its header calls for, no
    more: Pillow then decodes the same scanlines to the same pixels. Pillow does not
    check IDAT chunks' CRCs, so the new chunk's is the only one written.
    """
    inflater = _inflater()
    if inflater is None or len(data) < 45 or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack_from(">II", data, 16)
    depth, colour, interlace = data[24], data[25], data[28]
    channels = _PNG_CHANNELS.get(colour)
    if channels is None or interlace or depth not in (1, 2, 4, 8, 16) or not width:
        return None
    if max_pixels is not None and width * height > max_pixels:
        return None  # Pillow's decompression bomb check words it
    expected = height * (1 + (width * channels * depth + 7) // 8)
    before: list[bytes] = []
    after: list[bytes] = []
    idat: list[bytes] = []
    pos = 8
    while pos < len(data):
        if pos + 12 > len(data):
            return None
        length, kind = _CHUNK_HEAD.unpack_from(data, pos)
        end = pos + 12 + length
        if end > len(data):
            return None
        if kind == b"IDAT":
            if after:
                return None  # IDAT chunks apart
            idat.append(data[pos + 8 : end - 4])
        else:
            (after if idat else before).append(data[pos:end])
        pos = end
    if not idat:
        return None
    try:
        inflate = inflater.decompressobj()
        raw = inflate.decompress(b"".join(idat), expected + 1)
        if len(raw) != expected or not inflate.eof or inflate.unused_data:
            return None
    except Exception:  # a damaged stream: Pillow words it
        return None
    body = _stored_zlib(raw, getattr(inflater, "adler32", zlib.adler32))
    crc = getattr(inflater, "crc32", zlib.crc32)(body, zlib.crc32(b"IDAT"))
    head = struct.pack(">I4s", len(body), b"IDAT")
    return b"".join([data[:8], *before, head, body, struct.pack(">I", crc), *after])


#: Pillow's mode (and raw mode) of an 8-bit PNG, by colour type.
_PLAIN_MODES = {0: "L", 2: "RGB", 4: "LA", 6: "RGBA"}


def _plain_png(pil: Any, stored: bytes) -> Optional[Any]:
    """The image of ``stored`` (a :func:`_stored_png` result) decoded straight from its
    stream by Pillow's PNG data decoder, without ``Image.open`` 's chunk reading: only
    for an 8-bit grey, RGB, grey + alpha or RGBA image that has no chunk but IHDR, IDAT
    and IEND (nothing for ``open`` to note: no palette, transparency or text), else
    None. The same decoder and scanlines as ``open``, so the same pixels."""
    mode = _PLAIN_MODES.get(stored[25]) if stored[24] == 8 else None
    if mode is None or stored[8:16] != b"\x00\x00\x00\x0dIHDR":
        return None
    width, height = struct.unpack_from(">II", stored, 16)
    pos = 33  # after the signature and IHDR
    (length,) = struct.unpack_from(">I", stored, pos)
    end = pos + 12 + length
    if stored[pos + 4 : pos + 8] != b"IDAT" or stored[end:] != _IEND:
        return None
    return pil.frombytes(mode, (width, height), stored[pos + 8 : end - 4], "zip", mode)


_IEND = b"\x00\x00\x00\x00IEND\xae\x42\x60\x82"


def _stored_zlib(raw: bytes, adler32: Any) -> bytes:
    """``raw`` as a zlib stream of stored deflate blocks of up to 65,535 bytes (as
    ``zlib.compress(raw, 0)`` stores it, in a quarter of its time with a fast
    Adler-32)."""
    parts = [b"\x78\x01"]
    size = len(raw)
    for start in range(0, max(size, 1), 65535):
        piece = raw[start : start + 65535]
        last = start + 65535 >= size
        parts.append(struct.pack("<BHH", last, len(piece), len(piece) ^ 0xFFFF))
        parts.append(piece)
    parts.append(struct.pack(">I", adler32(raw) & 0xFFFFFFFF))
    return b"".join(parts)
