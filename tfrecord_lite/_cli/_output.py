"""How the commands write: counts with their noun, aligned tables, feature keys shown
safely, and the preview grid saved as a picture."""

from __future__ import annotations

import json
import os
from typing import Any, Optional

__all__ = ["key_text", "plural", "save_grid", "table"]

#: The extensions Pillow is asked to write as they say; any other name gets a PNG.
_PICTURE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp")


def plural(n: int, word: str, plural: Optional[str] = None) -> str:
    """``1 record``, ``1,234 records``."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def table(rows: list[list[str]], indent: str = "    ") -> list[str]:
    """Rows of cells as lines, each column padded to its widest cell."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def key_text(s: str) -> str:
    """A key for display: printable as is, else escaped."""
    if s.isprintable() and s.strip() == s and s:
        return s
    return json.dumps(s, ensure_ascii=False)


def save_grid(grid: Any, output: str) -> None:
    """Write the preview grid (a Pillow image) to ``output``, making its folder."""
    out_dir = os.path.dirname(output)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    ext = os.path.splitext(output)[1].lower()
    grid.save(output, format=None if ext in _PICTURE_EXTENSIONS else "PNG")
