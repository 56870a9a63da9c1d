"""The library's one JPEG decoder, :func:`decode_jpeg_pixels`, and its two backends.

Every JPEG the library decodes (``tfr.io.decode_jpeg``, ``tfr.io.decode_image``,
``tfrecord_lite.tfds`` Image/Video) goes through :func:`decode_jpeg_pixels`, with one
of two backends:

* "simplejpeg" (the optional simplejpeg package, part of the image extra):
  libjpeg-turbo with the DCT and upsampling selectable. dct_method "" /
  "INTEGER_FAST" is the fast integer DCT with fancy upsampling, TensorFlow's
  default; "INTEGER_ACCURATE" the accurate integer DCT with fancy upsampling.
  Pixels are TensorFlow's exactly (0 difference, measured against TensorFlow
  2.21 in tests/interop/test_tensor_interop.py and test_tfds_interop.py).
* "pillow" (when simplejpeg is not installed, for CMYK/YCCK JPEGs and for
  ratio > 1): "INTEGER_ACCURATE", grayscale and 4:4:4 JPEGs are exact; on
  chroma-subsampled (4:2:0 / 4:2:2) JPEGs Pillow's fast mode turns fancy
  upsampling off, so the accurate DCT is used instead, and pixels differ from
  TensorFlow's default by at most JPEG_MAX_DIFF (measured: 8).

The environment variable TFRECORD_LITE_JPEG_BACKEND ("simplejpeg" or "pillow")
forces a backend (read at each decode).
"""

from __future__ import annotations

import importlib
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from .. import _settings
from .._errors import ParseError
from ._pillow import INSTALL_HINT, _load, _open
from ._pixels import _as_hwc, _to_channels

#: Largest pixel difference measured between :func:`decode_jpeg` with the default
#: ``dct_method`` and TensorFlow's ``tf.io.decode_jpeg`` on chroma-subsampled JPEGs
#: when Pillow decodes them (simplejpeg not installed); 0 on grayscale and 4:4:4
#: JPEGs, with ``dct_method="INTEGER_ACCURATE"``, and whenever simplejpeg decodes.
JPEG_MAX_DIFF = 8

#: Environment variable that forces the JPEG backend: ``simplejpeg`` or ``pillow``.
JPEG_BACKEND_ENV_VAR = "TFRECORD_LITE_JPEG_BACKEND"
JPEG_BACKENDS = ("simplejpeg", "pillow")

_SIMPLEJPEG: list[Any] = []


def _simplejpeg() -> Any:
    """The optional ``simplejpeg`` module, or None when it is not installed (imported once)."""
    if not _SIMPLEJPEG:
        try:
            module: Any = importlib.import_module("simplejpeg")
        except ImportError:
            module = None
        _SIMPLEJPEG.append(module)
    return _SIMPLEJPEG[0]


def jpeg_backend() -> str:
    """The JPEG backend in use: ``"simplejpeg"`` when installed, else ``"pillow"``.

    ``TFRECORD_LITE_JPEG_BACKEND=pillow`` forces Pillow; ``=simplejpeg`` requires
    simplejpeg (ImportError with the install line when it is missing).
    """
    forced = _settings.jpeg_backend()  # checked there: auto, pillow or simplejpeg
    if forced == "pillow":
        return "pillow"
    if _simplejpeg() is not None:
        return "simplejpeg"
    if forced == "simplejpeg":
        raise ImportError(
            f"{JPEG_BACKEND_ENV_VAR}=simplejpeg but simplejpeg is not installed: {INSTALL_HINT}"
        )
    return "pillow"


def _subsampled(img: Any) -> bool:
    """True if a JPEG's chroma is subsampled (Pillow's per-component sampling factors)."""
    layers = getattr(img, "layer", None) or []
    factors = {(h, v) for _, h, v, _ in layers}
    return len(factors) > 1


#: Pillow's own decompression-bomb limit when Pillow is not installed (its default).
_PIL_MAX_PIXELS = 89478485


def _max_jpeg_pixels() -> Optional[int]:
    """Pixels above which a JPEG is refused, as Pillow refuses it (twice MAX_IMAGE_PIXELS)."""
    try:
        from PIL import Image
    except ImportError:
        return 2 * _PIL_MAX_PIXELS
    limit = Image.MAX_IMAGE_PIXELS
    return None if limit is None else 2 * int(limit)


def _jpeg_simplejpeg(data: bytes, channels: int, dct_method: str) -> Optional[npt.NDArray[Any]]:
    """libjpeg-turbo's decode with TensorFlow's settings, or None to let Pillow decide.

    None for JPEGs it does not take (CMYK / YCCK colour, a header it cannot read, a
    recoverable error such as a truncated file, more pixels than Pillow allows): Pillow
    then decodes them or raises the ``ParseError``.
    """
    sj = _simplejpeg()
    try:
        height, width, colorspace, _ = sj.decode_jpeg_header(data)
        colorspace = str(colorspace).lower()
        if colorspace not in ("gray", "rgb", "ycbcr"):
            return None
        limit = _max_jpeg_pixels()
        if limit is not None and int(height) * int(width) > limit:
            return None
        gray = channels == 1 or (channels == 0 and colorspace == "gray")
        out = sj.decode_jpeg(
            data,
            colorspace="GRAY" if gray else "RGB",
            fastdct=dct_method != "INTEGER_ACCURATE",
            fastupsample=False,
            strict=True,
        )
    except (ValueError, RuntimeError, OSError):
        return None
    arr = np.asarray(out, dtype=np.uint8)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return np.require(arr, requirements=("C", "W"))


def _jpeg_pillow(data: bytes, channels: int, dct_method: str, ratio: int, what: str) -> Any:
    img = _open(data, what)
    if img.format != "JPEG":
        raise ParseError(f"{what}: not a JPEG image (found {img.format})")
    draft_mode = "L" if channels == 1 and img.mode in ("RGB", "YCbCr") else None
    if draft_mode or ratio > 1:
        size = (max(1, img.size[0] // ratio), max(1, img.size[1] // ratio)) if ratio > 1 else None
        # libjpeg's own colour -> gray (the Y channel), as TensorFlow asks for it
        img.draft(draft_mode or img.mode, size)
    elif dct_method != "INTEGER_ACCURATE" and not _subsampled(img):
        # Pillow's "draft" decoder flag selects libjpeg's fast integer DCT, TensorFlow's
        # default (it also turns fancy upsampling off, which only matters when subsampled).
        img.decoderconfig = (1, 1)
    _load(img, what)
    if img.mode == "CMYK":
        img = img.convert("RGB")
    return _to_channels(_as_hwc(img, what), channels)


def decode_jpeg_pixels(
    data: bytes, channels: int = 0, dct_method: str = "", ratio: int = 1, what: str = "decode_jpeg"
) -> npt.NDArray[np.uint8]:
    """JPEG bytes to uint8 ``(H, W, C)`` pixels as ``tf.io.decode_jpeg`` gives them.

    The one JPEG decoder of the library (see the module's documentation).
    ``channels``: 0 (as stored: 1 for grayscale, else 3), 1 or 3; ``dct_method``:
    ``""``, ``"INTEGER_FAST"`` or ``"INTEGER_ACCURATE"``; ``ratio``: 1, 2, 4 or 8.
    Arguments are not checked here. Undecodable bytes raise ``ParseError``.
    """
    if ratio == 1 and jpeg_backend() == "simplejpeg":
        arr = _jpeg_simplejpeg(data, channels, dct_method)
        if arr is not None:
            return arr
    out: npt.NDArray[np.uint8] = _jpeg_pillow(data, channels, dct_method, ratio, what)
    return out
