"""Pillow-style image helpers: :func:`encode_image` / :func:`decode_with_pillow`
(grayscale stays 2-D; TensorFlow's ``tf.io`` codecs are in :mod:`._tf_images`).

``tfr.decode_image`` is TensorFlow's ``tf.io.decode_image`` (grayscale ``(H, W, 1)``),
the same function as ``tfr.io.decode_image``; the Pillow-style helper is public as
``tfr.decode_with_pillow`` only. ``decode_image`` here is this unit's own short name for
the helper (the CLI and image folders use it), not the public one."""

from __future__ import annotations

import io
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from .._errors import ParseError
from ._pillow import image_bytes, pil_image

__all__ = ["decode_image", "decode_with_pillow", "encode_image"]


_FORMATS = {"png": "PNG", "jpeg": "JPEG", "jpg": "JPEG"}


def encode_image(array: npt.ArrayLike, format: str = "png", quality: int = 95) -> bytes:
    """Encode a uint8 image array as PNG (lossless, default) or JPEG bytes.

    ``array``: ``(H, W)`` or ``(H, W, 1)`` grayscale, ``(H, W, 2)`` gray + alpha,
    ``(H, W, 3)`` RGB or ``(H, W, 4)`` RGBA, dtype uint8 (JPEG: no alpha).
    ``quality`` (1-100) applies to JPEG only. Needs Pillow (the ``image`` extra).
    """
    fmt = _FORMATS.get(str(format).lower())
    if fmt is None:
        raise ValueError(f"format must be 'png' or 'jpeg', got {format!r}")
    arr = np.asarray(array)
    if arr.dtype != np.uint8:
        raise TypeError(f"encode_image needs a uint8 array, got {arr.dtype}")
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] in (2, 3, 4))):
        raise ValueError(
            f"encode_image needs an (H, W) or (H, W, C) array with C in 1-4, got shape {arr.shape}"
        )
    if fmt == "JPEG" and arr.ndim == 3 and arr.shape[2] in (2, 4):
        raise ValueError("JPEG has no alpha channel: drop it or use format='png'")
    if not 1 <= int(quality) <= 100:
        raise ValueError(f"quality must be in 1-100, got {quality}")
    image_mod = pil_image()
    img = image_mod.fromarray(np.ascontiguousarray(arr))
    out = io.BytesIO()
    if fmt == "JPEG":
        img.save(out, format=fmt, quality=int(quality))
    else:
        img.save(out, format=fmt)
    return out.getvalue()


def decode_with_pillow(
    data: Any, mode: Optional[str] = None, *, name: Optional[str] = None
) -> npt.NDArray[np.uint8]:
    """Decode encoded image bytes (PNG, JPEG, GIF, BMP, WebP, TIFF, ...) into a uint8 array.

    Returns ``(H, W)`` for grayscale, ``(H, W, C)`` otherwise (C = 2 gray+alpha,
    3 RGB, 4 RGBA). ``mode`` converts first (Pillow mode: ``"L"``, ``"RGB"``,
    ``"RGBA"``...); by default palette images become RGB (RGBA if transparent),
    1-bit images L, CMYK / YCbCr RGB. 16/32-bit images raise ``ValueError`` unless
    a ``mode`` is given. Undecodable bytes raise :class:`ParseError`. Needs Pillow.

    ``data``: bytes, or what parsing returns for a ``tf.string`` feature (a 0-d or
    one-element object array). This is the Pillow-style helper (grayscale stays
    2-D, any format Pillow reads, the first frame of an animation). ``tfr.decode_image``
    and ``tfr.io.decode_image`` are TensorFlow's ``tf.io.decode_image`` instead:
    ``channels=``, ``dtype=``, ``(H, W, C)`` with grayscale ``(H, W, 1)``, every frame
    of a GIF, and BMP, GIF, JPEG and PNG only.
    """
    del name
    image_mod = pil_image()
    if isinstance(data, str):
        raise TypeError("decode_with_pillow needs the encoded bytes, not a str")
    data = image_bytes(data, "decode_with_pillow")
    try:
        img = image_mod.open(io.BytesIO(data))
        img.load()
    except (OSError, SyntaxError, ValueError, EOFError, image_mod.DecompressionBombError) as e:
        raise ParseError(f"cannot decode image: {e}") from e
    if mode is not None:
        img = img.convert(mode)
    elif img.mode in ("L", "LA", "RGB", "RGBA"):
        pass
    elif img.mode == "1":
        img = img.convert("L")
    elif img.mode in ("P", "PA"):
        alpha = img.mode == "PA" or "transparency" in img.info
        img = img.convert("RGBA" if alpha else "RGB")
    elif img.mode.startswith(("I", "F")):
        raise ValueError(
            f"image mode {img.mode!r} has more than 8 bits per channel and this returns "
            "uint8: pass mode='L' (or 'RGB') to convert, or use tfrecord_lite.io.decode_png"
            "(data, dtype=np.uint16) to keep 16 bits"
        )
    else:
        img = img.convert("RGB")
    out = np.array(img)
    if out.dtype != np.uint8:
        raise ValueError(f"image mode {img.mode!r} does not decode to uint8")
    return out


#: This unit's short name for :func:`decode_with_pillow` (``tfr.decode_image`` is TensorFlow's).
decode_image = decode_with_pillow
