"""Pillow, imported only when an image is decoded, encoded or drawn (the optional
``image`` extra), and what every image codec shares: the encoded bytes out of a
parsed value, and opening / loading an image with undecodable bytes raising
:class:`ParseError`."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from .._errors import ParseError

INSTALL_HINT = "pip install 'tfrecord-lite-np[image]'"


def pil(who: str = "this needs") -> Any:
    """The ``PIL.Image`` module, or ImportError naming the extra to install."""
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError(f"{who} Pillow, which is not installed: {INSTALL_HINT}") from e
    return Image


def pil_image() -> Any:
    """The ``PIL.Image`` module for the codecs (their own ImportError text)."""
    return pil("encode_image / decode_image need")


def image_bytes(contents: Any, what: str) -> bytes:
    """Encoded image bytes from bytes-like ``contents`` or a 0-d / one-element array of them."""
    x = contents
    if isinstance(x, np.ndarray):
        if x.size != 1 or x.ndim > 1:
            raise ValueError(
                f"{what}: contents must be one encoded image (bytes or a 0-d array), "
                f"got an array of shape {x.shape}; decode images one by one"
            )
        x = x.reshape(()).item()
    if isinstance(x, bytes):
        return x
    if isinstance(x, (bytearray, memoryview, np.bytes_)):
        return bytes(x)
    if isinstance(x, np.void):
        return x.tobytes()
    if isinstance(x, str):
        raise TypeError(f"{what}: contents must be the encoded bytes, not a str")
    raise TypeError(f"{what}: contents must be bytes, got {type(x).__name__}")


def _open(data: bytes, what: str) -> Any:
    image_mod = pil_image()
    try:
        return image_mod.open(io.BytesIO(data))
    except (OSError, SyntaxError, ValueError, EOFError, image_mod.DecompressionBombError) as e:
        raise ParseError(f"{what}: cannot decode image: {e}") from e


def _load(img: Any, what: str) -> None:
    image_mod = pil_image()
    try:
        img.load()
    except (OSError, SyntaxError, ValueError, EOFError, image_mod.DecompressionBombError) as e:
        raise ParseError(f"{what}: cannot decode image: {e}") from e
