"""Images for the eye: any image array as displayable uint8, and a labelled grid of
them (``tfrecord-lite preview``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from ._pillow import pil

__all__ = ["GRID_PAD", "LABEL_HEIGHT", "display_array", "draw_grid", "grid_size"]


def display_array(arr: npt.NDArray[Any]) -> npt.NDArray[np.uint8]:
    """An image array of any numeric dtype as uint8 ``(H, W)`` or ``(H, W, 3)`` for display.

    ``(H, W, 1)`` becomes ``(H, W)``; 2 channels keep the first; 4 drop alpha.
    Floats in [0, 1] are scaled by 255; other non-uint8 data is stretched to 0..255.
    """
    a = np.asarray(arr)
    if a.ndim == 3:
        c = a.shape[2]
        if c == 1 or c == 2:
            a = a[:, :, 0]
        elif c >= 3:
            a = a[:, :, :3]
    if a.ndim not in (2, 3):
        raise ValueError(f"an image needs 2 or 3 dimensions, got shape {a.shape}")
    if a.dtype == np.uint8:
        return np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        return np.ascontiguousarray(a.astype(np.uint8) * 255)
    f = a.astype(np.float64)
    finite = f[np.isfinite(f)]
    if finite.size == 0:
        return np.zeros(a.shape, dtype=np.uint8)
    lo, hi = float(finite.min()), float(finite.max())
    if a.dtype.kind == "f" and lo >= 0.0 and hi <= 1.0:
        f = f * 255.0
    elif a.dtype.kind in "iu" and lo >= 0 and hi <= 255:
        pass
    elif hi > lo:
        f = (f - lo) * (255.0 / (hi - lo))
    else:
        f = np.zeros_like(f)
    return np.ascontiguousarray(np.clip(np.nan_to_num(f), 0, 255).astype(np.uint8))


#: Pixels between cells and around the grid.
GRID_PAD = 2
#: Height of the label strip under each cell.
LABEL_HEIGHT = 14


def grid_size(
    n: int, cell: int, cols: Optional[int] = None, labels: bool = True
) -> tuple[int, int]:
    """``(width, height)`` in pixels of the grid :func:`draw_grid` draws for ``n`` cells."""
    cols = cols or max(1, math.ceil(math.sqrt(n)))
    cols = max(1, min(cols, n)) if n else 1
    rows = max(1, math.ceil(n / cols))
    label_h = LABEL_HEIGHT if labels else 0
    return (
        cols * cell + (cols + 1) * GRID_PAD,
        rows * (cell + label_h) + (rows + 1) * GRID_PAD,
    )


def draw_grid(
    cells: Sequence[tuple[Optional[npt.NDArray[np.uint8]], Optional[str]]],
    cell: int = 96,
    cols: Optional[int] = None,
) -> Any:
    """A PIL image: each ``(uint8 array or None, label)`` fitted into a ``cell`` px square.

    Images smaller than the cell are enlarged by a whole factor (crisp pixels, as
    MNIST grids are drawn); larger ones are shrunk. ``None`` draws a crossed-out
    cell (an image that could not be decoded). Labels go in a strip under each
    cell when any label is given.
    """
    image_mod = pil()
    from PIL import ImageDraw, ImageFont

    n = len(cells)
    with_labels = any(label for _, label in cells)
    cols = cols or max(1, math.ceil(math.sqrt(n)))
    cols = max(1, min(cols, n)) if n else 1
    width, height = grid_size(n, cell, cols, with_labels)
    label_h = LABEL_HEIGHT if with_labels else 0
    canvas = image_mod.new("RGB", (width, height), (40, 40, 40))
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default()
    resample = getattr(image_mod, "Resampling", image_mod)
    for i, (arr, label) in enumerate(cells):
        r, c = divmod(i, cols)
        x0 = GRID_PAD + c * (cell + GRID_PAD)
        y0 = GRID_PAD + r * (cell + label_h + GRID_PAD)
        draw.rectangle([x0, y0, x0 + cell - 1, y0 + cell - 1], fill=(0, 0, 0))
        if arr is None:
            draw.line([x0, y0, x0 + cell - 1, y0 + cell - 1], fill=(200, 40, 40), width=2)
            draw.line([x0, y0 + cell - 1, x0 + cell - 1, y0], fill=(200, 40, 40), width=2)
        else:
            img = image_mod.fromarray(arr)
            h, w = arr.shape[:2]
            if w <= cell and h <= cell:
                k = max(1, min(cell // w, cell // h))
                img = img.resize((w * k, h * k), resample.NEAREST)
            else:
                scale = min(cell / w, cell / h)
                size = (max(1, round(w * scale)), max(1, round(h * scale)))
                img = img.resize(size, resample.BILINEAR)
            if img.mode != "RGB":
                img = img.convert("RGB")
            canvas.paste(img, (x0 + (cell - img.width) // 2, y0 + (cell - img.height) // 2))
        if label:
            text = label
            while text and draw.textlength(text, font=font) > cell:
                text = text[:-1]
            if text != label and len(text) > 1:
                text = text[:-1] + "~"
            tw = draw.textlength(text, font=font)
            draw.text((x0 + (cell - tw) / 2, y0 + cell + 1), text, fill=(230, 230, 230), font=font)
    return canvas
