"""Pillow-style image helpers: :func:`encode_image` / :func:`decode_with_pillow`
(grayscale stays 2-D; TensorFlow's ``tf.io`` codecs are in :mod:`._tf_images`).

``tfr.decode_image`` was this helper under TensorFlow's name, with another grayscale
shape than ``tf.io.decode_image`` (``(H, W)``, not ``(H, W, 1)``): it is
:func:`decode_image_deprecated` now, which warns and will become TensorFlow's.
``decode_image`` here is the package's own name for the helper (no warning)."""

from __future__ import annotations

import io
import warnings
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from .._errors import ParseError
from ._pillow import image_bytes, pil_image

__all__ = ["decode_image", "decode_image_deprecated", "decode_with_pillow", "encode_image"]


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
    2-D, any format Pillow reads); :func:`tfrecord_lite.io.decode_image` is
    TensorFlow's ``tf.io.decode_image`` (``channels=``, ``dtype=``, always ``(H, W, C)``,
    BMP, GIF, JPEG and PNG).
    """
    del name
    image_mod = pil_image()
    if isinstance(data, str):
        raise TypeError("decode_image needs the encoded bytes, not a str")
    data = image_bytes(data, "decode_image")
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


#: The package's own name for :func:`decode_with_pillow` (no warning).
decode_image = decode_with_pillow


def decode_image_deprecated(
    data: Any, mode: Optional[str] = None, *, name: Optional[str] = None
) -> npt.NDArray[np.uint8]:
    """Deprecated: use :func:`decode_with_pillow` (the same, without a warning) or
    :func:`tfrecord_lite.io.decode_image` (TensorFlow's).

    ``tfr.decode_image`` has been the Pillow-style helper under TensorFlow's name, but a
    grayscale image comes out ``(H, W)``, where ``tf.io.decode_image`` (and
    ``tfr.io.decode_image``) gives ``(H, W, 1)``. It still returns what it did, with a
    warning; it will become TensorFlow's ``decode_image``, so that the
    same name means one thing. Until then the warning is a
    ``PendingDeprecationWarning`` (shown by test runners, not in a plain run).
    """
    warnings.warn(
        "tfr.decode_image is deprecated: it is the Pillow-style helper (grayscale "
        "(H, W)), now named tfr.decode_with_pillow; TensorFlow's decode_image (grayscale "
        "(H, W, 1)) is tfr.io.decode_image, which tfr.decode_image will become",
        PendingDeprecationWarning,
        stacklevel=2,
    )
    return decode_with_pillow(data, mode, name=name)
