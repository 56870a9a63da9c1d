"""Pixel arrays as TensorFlow's image decoders give them: ``(H, W, C)`` from a Pillow
image, the channel conversions (libpng's gray included) and the dtype conversions."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def _check_channels(channels: Any, allowed: tuple[int, ...], what: str) -> int:
    if channels is None:
        return 0
    if isinstance(channels, bool) or not isinstance(channels, (int, np.integer)):
        raise TypeError(f"{what}: channels must be an int, got {type(channels).__name__}")
    if int(channels) not in allowed:
        choices = ", ".join(map(str, allowed[:-1])) + f" or {allowed[-1]}"
        raise ValueError(f"{what}: `channels` must be {choices} but got {channels}")
    return int(channels)


#: TensorFlow's PNG decoder asks libpng for ITU-R 601 gray (0.299, 0.587); libpng
#: keeps the weights in 1/32768 units, truncated: these are the integers it uses.
_GRAY_R = 29900 * 32768 // 100000
_GRAY_G = 58700 * 32768 // 100000
_GRAY_B = 32768 - _GRAY_R - _GRAY_G


def _gray_from_rgb(rgb: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """libpng's RGB -> gray as TensorFlow's decode_png gets it (8-bit: truncated)."""
    r, g, b = (rgb[..., i].astype(np.uint64) for i in range(3))
    total = _GRAY_R * r + _GRAY_G * g + _GRAY_B * b
    if rgb.dtype == np.uint16:
        total = total + 16384
    return (total >> 15).astype(rgb.dtype)


def _to_channels(arr: npt.NDArray[Any], channels: int) -> npt.NDArray[Any]:
    """An (H, W, C) array with ``channels`` channels (0: keep), as TensorFlow's decoders."""
    c = arr.shape[2]
    if channels == 0 or channels == c:
        return arr
    if channels == 1:
        if c in (1, 2):
            return arr[:, :, :1]
        return _gray_from_rgb(arr[:, :, :3])[:, :, None]
    if channels == 2:
        gray = _to_channels(arr, 1)
        alpha = arr[:, :, -1:] if c in (2, 4) else np.full_like(gray, np.iinfo(arr.dtype).max)
        return np.concatenate([gray, alpha], axis=2)
    if channels == 3:
        if c in (1, 2):
            return np.repeat(arr[:, :, :1], 3, axis=2)
        return arr[:, :, :3]
    # channels == 4
    rgb = _to_channels(arr, 3)
    alpha = (
        arr[:, :, -1:]
        if c in (2, 4)
        else np.full((*rgb.shape[:2], 1), np.iinfo(arr.dtype).max, arr.dtype)
    )
    return np.concatenate([rgb, alpha], axis=2)


def _as_hwc(img: Any, what: str) -> npt.NDArray[Any]:
    """A loaded Pillow image as (H, W, C) uint8 (uint16 for 16-bit grayscale)."""
    mode = img.mode
    if mode in ("I;16", "I;16B", "I;16L", "I"):
        arr = np.asarray(img)
        if arr.dtype != np.uint16:
            arr = arr.astype(np.uint16)
        return arr[:, :, None]
    if mode == "1":
        img = img.convert("L")
    elif mode in ("P", "PA"):
        alpha = mode == "PA" or "transparency" in img.info
        img = img.convert("RGBA" if alpha else "RGB")
    elif mode not in ("L", "LA", "RGB", "RGBA"):
        img = img.convert("RGB")
    arr = np.asarray(img)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return np.array(arr, dtype=arr.dtype)  # writable


def _convert_dtype(
    arr: npt.NDArray[Any], dtype: Any, what: str, png: bool = False
) -> npt.NDArray[Any]:
    """TensorFlow's image decoders' dtype conversions between uint8, uint16 and floats.

    Integers: uint8 -> uint16 is ``x * 256`` (a PNG: libpng's ``x * 257``), uint16 ->
    uint8 ``x // 256``. Floats:
    ``x * (1 / max)`` in the float type; a PNG goes through 16 bits first (libpng's
    ``x * 257``, then ``x * (1 / 65535)``), as TensorFlow decodes it.
    """
    want = np.dtype(
        getattr(dtype, "as_numpy_dtype", None) or getattr(dtype, "np_dtype", None) or dtype
    )
    if want == arr.dtype:
        return arr
    if want == np.uint16 and arr.dtype == np.uint8:
        return arr.astype(np.uint16) * np.uint16(257 if png else 256)
    if want == np.uint8 and arr.dtype == np.uint16:
        return (arr // 256).astype(np.uint8)
    if want in (np.float32, np.float16, np.float64):
        if png and arr.dtype == np.uint8:
            arr = arr.astype(np.uint16) * np.uint16(257)
        scale = want.type(1.0 / float(np.iinfo(arr.dtype).max))
        out: npt.NDArray[Any] = arr.astype(want) * scale
        return out
    raise TypeError(f"{what}: dtype must be uint8, uint16 or float32, got {want}")
