"""What an image file is, from its first bytes: :func:`sniff_image` (format and size from
the headers, no Pillow needed) and :func:`png_header` (a PNG's bit depth and colour type).
Used by ``head``, ``preview`` and ``from-images``."""

from __future__ import annotations

import struct
from typing import Optional

__all__ = ["PNG_CHANNELS", "png_header", "sniff_image"]

_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(data: bytes) -> Optional[tuple[int, int]]:
    i = 2
    n = len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        (seglen,) = struct.unpack_from(">H", data, i + 2)
        if marker in _SOF_MARKERS:
            if i + 9 > n:
                return None
            height, width = struct.unpack_from(">HH", data, i + 5)
            return width, height
        if marker in (0xDA, 0xD9):  # start of scan / end of image: no frame header before
            return None
        i += 2 + seglen
    return None


def sniff_image(data: bytes) -> Optional[tuple[str, Optional[int], Optional[int]]]:
    """``(format, width, height)`` if ``data`` starts like an image file, else None.

    Formats: JPEG, PNG, GIF, WebP, BMP, TIFF (sizes None where the header does not
    give them, e.g. TIFF or a cut-off JPEG). Reads headers only; no Pillow needed.
    """
    b = bytes(data[:65536])
    if b[:3] == b"\xff\xd8\xff":
        size = _jpeg_size(b)
        return ("JPEG", *size) if size else ("JPEG", None, None)
    if b[:8] == b"\x89PNG\r\n\x1a\n":
        if len(b) >= 24 and b[12:16] == b"IHDR":
            w, h = struct.unpack_from(">II", b, 16)
            return "PNG", w, h
        return "PNG", None, None
    if b[:6] in (b"GIF87a", b"GIF89a"):
        if len(b) >= 10:
            w, h = struct.unpack_from("<HH", b, 6)
            return "GIF", w, h
        return "GIF", None, None
    if b[:4] == b"RIFF" and b[8:12] == b"WEBP":
        chunk = b[12:16]
        if chunk == b"VP8X" and len(b) >= 30:
            w = int.from_bytes(b[24:27], "little") + 1
            h = int.from_bytes(b[27:30], "little") + 1
            return "WebP", w, h
        if chunk == b"VP8L" and len(b) >= 25 and b[20] == 0x2F:
            bits = int.from_bytes(b[21:25], "little")
            return "WebP", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        if chunk == b"VP8 " and len(b) >= 30 and b[23:26] == b"\x9d\x01\x2a":
            w, h = struct.unpack_from("<HH", b, 26)
            return "WebP", w & 0x3FFF, h & 0x3FFF
        return "WebP", None, None
    if b[:2] == b"BM" and len(b) >= 26:
        (dib,) = struct.unpack_from("<I", b, 14)
        if dib in (12, 40, 52, 56, 64, 108, 124):
            if dib == 12:
                w, h = struct.unpack_from("<HH", b, 18)
                return "BMP", w, h
            wi, hi = struct.unpack_from("<ii", b, 18)
            return "BMP", abs(wi), abs(hi)
    if b[:4] in (b"II*\x00", b"MM\x00*"):
        return "TIFF", None, None
    return None


#: Channels of each PNG colour type (0 gray, 2 RGB, 3 palette, 4 gray + alpha, 6 RGBA).
PNG_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}


def png_header(data: bytes) -> Optional[tuple[int, int]]:
    """``(bit depth, colour type)`` from a PNG's header, or None if ``data`` is not a PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 26 or data[12:16] != b"IHDR":
        return None
    return data[24], data[25]
