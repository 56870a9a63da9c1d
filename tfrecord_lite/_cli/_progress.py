"""A progress bar on stderr: tqdm when it is installed, else a small built-in one.

Used by the command line tool. A bar appears only when stderr is a terminal, the
caller did not ask for quiet, and the work has already taken ``delay`` seconds
(quick commands never flash a bar). Lines printed through :meth:`Progress.write`
do not collide with the bar.

    with progress(total=size, desc="verify", unit="B") as bar:
        for block in blocks:
            bar.update(len(block))
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import IO, Any, Optional

from .. import _settings

__all__ = ["Progress", "progress"]

#: Seconds before a bar is first drawn.
DEFAULT_DELAY = 1.0
#: Seconds between redraws of the built-in bar.
_REFRESH = 0.1


def _scaled(value: float, unit: str) -> str:
    if unit != "B":
        return f"{value:,.0f}"
    for prefix in ("", "k", "M", "G", "T"):
        if abs(value) < 1000 or prefix == "T":
            return f"{value:.0f}{prefix}" if not prefix else f"{value:.1f}{prefix}"
        value /= 1000
    return f"{value:.1f}P"  # pragma: no cover - unreachable


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Progress:
    """The built-in bar (also the interface of the tqdm-backed one)."""

    def __init__(
        self,
        total: Optional[float] = None,
        *,
        desc: str = "",
        unit: str = "it",
        enabled: bool = True,
        delay: float = DEFAULT_DELAY,
        file: Optional[IO[str]] = None,
    ) -> None:
        self.total = total
        self.desc = desc
        self.unit = unit
        self.enabled = enabled
        self.delay = delay
        self.n = 0.0
        self._file = file
        self._start = time.monotonic()
        self._last_draw = 0.0
        self._shown = False
        self._closed = False

    @property
    def file(self) -> IO[str]:
        return self._file if self._file is not None else sys.stderr

    def update(self, n: float = 1) -> None:
        """Add ``n`` to the count; redraw if it is time to."""
        self.n += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._start < self.delay or now - self._last_draw < _REFRESH:
            return
        self._last_draw = now
        self._draw(now)

    def set_total(self, total: Optional[float]) -> None:
        self.total = total

    def _line(self, now: float) -> str:
        elapsed = max(now - self._start, 1e-9)
        rate = self.n / elapsed
        unit = self.unit
        count = _scaled(self.n, unit)
        suffix = "" if unit == "it" else unit if unit == "B" else " " + unit
        # bytes: "96.6MB/s" (the prefix belongs to the unit); other units: "12.5 it/s"
        speed = f"{_scaled(rate, unit)}B/s" if unit == "B" else f"{rate:,.1f} {unit}/s"
        head = f"{self.desc}: " if self.desc else ""
        if self.total:
            frac = min(max(self.n / self.total, 0.0), 1.0)
            left = (self.total - self.n) / rate if rate > 0 else 0.0
            tail = (
                f" {count}{suffix}/{_scaled(self.total, unit)}{suffix}"
                f" [{_duration(elapsed)}<{_duration(left)}, {speed}]"
            )
            width = shutil.get_terminal_size((80, 20)).columns - 1
            room = width - len(head) - len(tail) - 7
            bar = ""
            if room >= 5:
                room = min(room, 40)
                filled = int(frac * room)
                bar = " |" + "#" * filled + " " * (room - filled) + "|"
            return f"{head}{frac * 100:3.0f}%{bar}{tail}"
        return f"{head}{count}{suffix} [{_duration(elapsed)}, {speed}]"

    def _draw(self, now: float) -> None:
        width = shutil.get_terminal_size((80, 20)).columns - 1
        line = self._line(now)[:width]
        try:
            self.file.write("\r" + line + "\x1b[K")
            self.file.flush()
        except (OSError, ValueError):  # pragma: no cover - stderr closed
            self.enabled = False
            return
        self._shown = True

    def _clear(self) -> None:
        if self._shown:
            try:
                self.file.write("\r\x1b[K")
                self.file.flush()
            except (OSError, ValueError):  # pragma: no cover - stderr closed
                pass
            self._shown = False

    def write(self, text: str, file: Optional[IO[str]] = None) -> None:
        """Print a line without breaking the bar."""
        self._clear()
        out = file if file is not None else sys.stdout
        print(text, file=out, flush=True)
        if self.enabled and self._last_draw:
            self._draw(time.monotonic())

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._clear()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Tqdm(Progress):
    """The same interface over a ``tqdm`` bar."""

    def __init__(self, bar: Any, total: Optional[float], desc: str, unit: str) -> None:
        super().__init__(total, desc=desc, unit=unit, enabled=True)
        self._bar = bar
        self._tqdm_write = type(bar).write

    def update(self, n: float = 1) -> None:
        self.n += n
        self._bar.update(n)

    def set_total(self, total: Optional[float]) -> None:
        self.total = total
        self._bar.total = total
        self._bar.refresh()

    def write(self, text: str, file: Optional[IO[str]] = None) -> None:
        self._tqdm_write(text, file=file if file is not None else sys.stdout)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._bar.close()


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress(
    total: Optional[float] = None,
    *,
    desc: str = "",
    unit: str = "it",
    quiet: bool = False,
    delay: float = DEFAULT_DELAY,
) -> Progress:
    """A progress bar on stderr, or a silent counter when it should not show.

    It shows when stderr is a terminal and ``quiet`` is false (and the
    environment variable ``TFRECORD_LITE_PROGRESS`` is not ``0``; ``1`` forces
    it on, for tests). ``unit="B"`` prints byte counts with k/M/G prefixes.
    """
    forced = _settings.progress()  # True, False or None (auto)
    enabled = not quiet and forced is not False and (forced is True or _stderr_is_tty())
    if not enabled:
        return Progress(total, desc=desc, unit=unit, enabled=False)
    try:
        from tqdm import tqdm
    except ImportError:
        return Progress(total, desc=desc, unit=unit, enabled=True, delay=delay)
    kwargs: dict[str, Any] = {
        "total": total,
        "desc": desc or None,
        "unit": unit,
        "unit_scale": unit == "B",
        "file": sys.stderr,
        "leave": False,
        "dynamic_ncols": True,
    }
    try:
        bar = tqdm(delay=delay, **kwargs)
    except TypeError:  # tqdm < 4.60 has no delay=
        bar = tqdm(**kwargs)
    return _Tqdm(bar, total, desc, unit)
