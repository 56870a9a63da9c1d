"""Image folders to Examples (one image's Example: ``_image_record``; image sniffing:
``_sniff``), and a demo image folder.

Used by ``tfrecord-lite from-images``. Pillow (the ``image`` extra) is imported only
by the functions that decode, encode or draw; :func:`scan_image_folder` needs nothing
beyond the standard library.

Layout of an image folder: one sub-folder per class, images anywhere below it::

    photos/
        cat/0001.jpg  cat/more/0002.png
        dog/a.jpg

Classes are the sub-folder names in sorted order; a class's label is its
position in that order; files are taken in sorted order of their path. So the
same folder always gives the same records, whatever the number of workers.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional

import numpy as np
import numpy.typing as npt

from .._errors import ParseError
from ._image_record import IMAGE_FORMATS, ImageOptions, image_example, image_record
from ._pillow import pil
from ._sniff import sniff_image

__all__ = [
    "IMAGE_EXTENSIONS",
    "IMAGE_FORMATS",
    "ImageFolder",
    "ImageFolderSummary",
    "ImageOptions",
    "convert_task",
    "ignore_sigint",
    "image_example",
    "image_record",
    "image_task",
    "make_digit_folder",
    "scan_image_folder",
    "sniff_image",
    "worker_pool",
    "write_image_folder",
]

#: File name endings taken as images (case-insensitive); other files are ignored.
IMAGE_EXTENSIONS = frozenset(
    {
        ".jpg",
        ".jpeg",
        ".jpe",
        ".png",
        ".gif",
        ".bmp",
        ".webp",
        ".tif",
        ".tiff",
        ".ppm",
        ".pgm",
        ".pbm",
        ".pnm",
    }
)


# --------------------------------------------------------------------------- folders


class ImageFolder(NamedTuple):
    """What :func:`scan_image_folder` found.

    ``classes``: sub-folder names, sorted (label = position). ``files``:
    ``(relative path, label)`` of every image file, sorted by path. ``ignored``:
    relative paths of files skipped because they are not images by name or are
    not inside a class folder.
    """

    root: str
    classes: list[str]
    files: list[tuple[str, int]]
    ignored: list[str]


def scan_image_folder(root: str) -> ImageFolder:
    """List an image folder with one sub-folder per class (see the module documentation)."""
    if not os.path.isdir(root):
        raise NotADirectoryError(f"not a directory: {root!r}")
    classes: list[str] = []
    ignored: list[str] = []
    for entry in sorted(os.listdir(root)):
        if entry.startswith("."):
            continue
        if os.path.isdir(os.path.join(root, entry)):
            classes.append(entry)
        else:
            ignored.append(entry)
    files: list[tuple[str, int]] = []
    for label, name in enumerate(classes):
        found: list[str] = []
        base = os.path.join(root, name)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            rel_dir = os.path.relpath(dirpath, root)
            for fn in filenames:
                if fn.startswith("."):
                    continue
                rel = os.path.join(rel_dir, fn)
                if os.path.splitext(fn)[1].lower() in IMAGE_EXTENSIONS:
                    found.append(rel)
                else:
                    ignored.append(rel)
        files.extend((rel, label) for rel in sorted(found))
    return ImageFolder(root, classes, files, sorted(ignored))


_BYTESIO = re.compile(r"<_io\.BytesIO object at 0x[0-9a-fA-F]+>")

#: ``(root, relative path, label, class name, options)``: one unit of work.
Task = tuple[str, str, int, str, ImageOptions]


def ignore_sigint() -> None:
    """Pool initializer: Ctrl-C is the parent's to handle (one message, cleanup), not the workers'."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[Any]:
    """A ``multiprocessing`` pool whose workers ignore SIGINT; terminated on exit.

    SIGINT is ignored in the parent while the workers start, so forked workers never
    see a Ctrl-C before :func:`ignore_sigint` runs; the parent's own handler (the
    ``KeyboardInterrupt`` that the command line turns into ``interrupted``) is
    restored before any work is handed out.
    """
    import multiprocessing

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        pool = multiprocessing.get_context().Pool(workers, initializer=ignore_sigint)
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        yield pool
    finally:
        pool.terminate()
        pool.join()


def image_task(task: Task) -> tuple[Optional[bytes], Optional[str], list[str]]:
    """Worker: ``(serialized Example, None, changes)`` or ``(None, why it was skipped,
    [])``. Never raises (but ImportError: Pillow missing)."""
    root, rel, label, class_name, options = task
    try:
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read()
        example, changes = image_record(data, rel, label, class_name, options)
        return example, None, changes
    except ImportError:
        raise
    except Exception as e:  # a bad file must never stop the whole job
        reason = str(getattr(e, "message", None) or e or type(e).__name__)
        reason = _BYTESIO.sub("(not a known image format)", reason)
        return None, " ".join(reason.split()), []


def convert_task(task: Task) -> tuple[Optional[bytes], Optional[str]]:
    """Worker: ``(serialized Example, None)`` or ``(None, why it was skipped)``. Never raises."""
    example, why, _ = image_task(task)
    return example, why


@dataclass
class ImageFolderSummary:
    """What :func:`write_image_folder` wrote.

    ``paths``: the shards; ``labels``: the ``labels.txt`` path; ``classes``: class names
    (label = position); ``per_class``: images found per class; ``written``: images
    stored; ``skipped``: ``(relative path, why)`` of files that could not be decoded;
    ``ignored``: files that are not images by name or not in a class folder;
    ``conversions``: how many images each change was made to (``{"PNG to JPEG": 12,
    "1 to 3 channels": 2}``; empty when every file was stored as it is).
    """

    paths: list[str]
    labels: str
    classes: list[str]
    per_class: list[int]
    written: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    conversions: Counter[str] = field(default_factory=Counter)

    def describe(self) -> str:
        """``changed: PNG to JPEG x4, 1 to 3 channels x2`` (or that none was)."""
        if not self.conversions:
            return "every image stored as its file is"
        parts = ", ".join(f"{what} x{n}" for what, n in sorted(self.conversions.items()))
        return f"changed: {parts}"


def write_image_folder(
    folder: str,
    out_prefix: str,
    *,
    shards: int = 1,
    format: str = "keep",
    channels: Optional[int] = None,
    quality: int = 95,
    size: Optional[tuple[int, int]] = None,
    shuffle: bool = False,
    seed: int = 0,
    compression: Optional[str] = None,
    write_index: bool = False,
    workers: int = 1,
    on_image: Optional[Callable[[str, Optional[str]], None]] = None,
) -> ImageFolderSummary:
    """Write an image folder (one sub-folder per class, see the module documentation)
    as TFRecord shards ``out_prefix-0000i-of-0000N`` of Examples, and ``labels.txt``
    (one class per line) beside them.

    By default (``format="keep"``, ``channels=None``) each file's bytes are stored as
    they are, with their format under ``image/format``: nothing is re-encoded, no
    channel or alpha is dropped. ``format="jpeg"`` / ``"png"`` / ``"raw"``,
    ``channels=1|3|4`` and ``size=(width, height)`` convert (see :class:`ImageOptions`);
    the summary's ``conversions`` counts every change made. Files that cannot be decoded
    are skipped (``skipped``). ``workers`` processes decode in parallel (the output is
    the same whatever their number). ``on_image(relative path, why skipped or None)``
    is called after each file. When no image can be written (every file failed, or
    there is none) nothing is left behind (no shard, ``labels.txt`` or manifest) and
    :class:`~tfrecord_lite.ParseError` (a ``ValueError``) says which files failed and
    why. Needs Pillow.
    """
    from .._files import ShardedWriter

    options = ImageOptions(size=size, format=format, channels=channels, quality=quality)
    pil()  # fail now, with the install hint, if Pillow is missing
    scanned = scan_image_folder(folder)
    out_dir = os.path.dirname(out_prefix) or "."
    made = _new_folders(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    order = list(scanned.files)
    if shuffle:
        random.Random(seed).shuffle(order)
    tasks = [(scanned.root, rel, label, scanned.classes[label], options) for rel, label in order]
    per_class = [0] * len(scanned.classes)
    for _, label in order:
        per_class[label] += 1
    summary = ImageFolderSummary(
        [], os.path.join(out_dir, "labels.txt"), scanned.classes, per_class, ignored=scanned.ignored
    )
    with contextlib.ExitStack() as pools:
        pool = None
        if workers > 1 and len(tasks) > 1:
            pool = pools.enter_context(worker_pool(workers))
        writer = ShardedWriter(
            out_prefix, num_shards=shards, compression=compression or "", write_index=write_index
        )
        try:
            if pool is not None:
                chunk = max(1, min(32, len(tasks) // (workers * 4)))
                results: Iterator[tuple[Optional[bytes], Optional[str], list[str]]] = pool.imap(
                    image_task, tasks, chunksize=chunk
                )
            else:
                results = map(image_task, tasks)
            for task, (example, why, changes) in zip(tasks, results):
                if example is None:
                    summary.skipped.append((task[1], why or "cannot be decoded"))
                else:
                    writer.write(example)
                    summary.written += 1
                    summary.conversions.update(changes)
                if on_image is not None:
                    on_image(task[1], why if example is None else None)
            if summary.written == 0:  # nothing to write: leave nothing behind
                raise _nothing_written(folder, scanned, summary)
        except BaseException:
            writer.abort()
            _remove_unfinished(out_prefix, shards, made)
            raise
    summary.paths = [os.fspath(p) for p in writer.close()]
    with open(summary.labels, "w", encoding="utf-8", errors="surrogateescape", newline="\n") as f:
        f.write("".join(name + "\n" for name in scanned.classes))
    return summary


def _new_folders(path: str) -> list[str]:
    """The folders ``os.makedirs(path)`` would create, deepest first."""
    made: list[str] = []
    path = os.path.abspath(path)
    while not os.path.exists(path):
        made.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return made


def _remove_unfinished(out_prefix: str, shards: int, made: list[str]) -> None:
    """Remove what an aborted write left: unfinished shards, and the folders it made."""
    head, tail = os.path.split(out_prefix)
    for name in os.listdir(head or "."):
        if name.startswith(f".{tail}-") and name.endswith(".inprogress"):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(head, name))
    for path in made:  # deepest first; only if empty
        with contextlib.suppress(OSError):
            os.rmdir(path)


def _nothing_written(folder: str, scanned: ImageFolder, summary: ImageFolderSummary) -> ParseError:
    """The error when no image could be written: which files failed, and why."""
    if not summary.skipped:
        return ParseError(
            f"no image to write: the class folders of {folder!r} "
            f"({', '.join(scanned.classes[:5])}{', ...' if len(scanned.classes) > 5 else ''}) "
            "hold no file with an image extension; nothing was written",
            path=folder,
        )
    shown = "; ".join(f"{rel}: {why}" for rel, why in summary.skipped[:3])
    more = f"; and {len(summary.skipped) - 3} more" if len(summary.skipped) > 3 else ""
    n = len(summary.skipped)
    return ParseError(
        f"none of the {n} image file{'s' if n != 1 else ''} of {folder!r} could be "
        f"written ({shown}{more}); nothing was written",
        path=folder,
    )


# --------------------------------------------------------------------------- demo folder

# Seven-segment digits: segment -> end points in a 1 x 2 box.
_SEGMENTS = {
    "a": ((0.0, 0.0), (1.0, 0.0)),
    "b": ((1.0, 0.0), (1.0, 1.0)),
    "c": ((1.0, 1.0), (1.0, 2.0)),
    "d": ((0.0, 2.0), (1.0, 2.0)),
    "e": ((0.0, 1.0), (0.0, 2.0)),
    "f": ((0.0, 0.0), (0.0, 1.0)),
    "g": ((0.0, 1.0), (1.0, 1.0)),
}
_DIGITS = ("abcdef", "bc", "abdeg", "abcdg", "bcfg", "acdfg", "acdefg", "abc", "abcdefg", "abcdfg")


def _draw_digit(digit: int, size: int, rng: random.Random) -> npt.NDArray[np.uint8]:
    image_mod = pil()
    from PIL import ImageDraw

    big = size * 4
    img = image_mod.new("L", (big, big), 0)
    draw = ImageDraw.Draw(img)
    seg_w = big * rng.uniform(0.18, 0.26)
    seg_h = seg_w * rng.uniform(0.95, 1.15)
    slant = rng.uniform(-0.25, 0.25)
    cx = big / 2 + rng.uniform(-0.08, 0.08) * big
    cy = big / 2 + rng.uniform(-0.06, 0.06) * big
    thick = max(2, int(big * rng.uniform(0.06, 0.1)))
    ink = rng.randint(170, 255)

    def point(p: tuple[float, float]) -> tuple[float, float]:
        x, y = p
        y_off = (y - 1.0) * seg_h
        return cx + (x - 0.5) * seg_w - slant * y_off, cy + y_off

    for seg in _DIGITS[digit]:
        p, q = (point(e) for e in _SEGMENTS[seg])
        draw.line([p, q], fill=ink, width=thick)
        for x, y in (p, q):
            rad = thick / 2
            draw.ellipse([x - rad, y - rad, x + rad, y + rad], fill=ink)
    resample = getattr(image_mod, "Resampling", image_mod).LANCZOS
    small = np.asarray(img.resize((size, size), resample), dtype=np.float64)
    noise = np.array([rng.gauss(0.0, 8.0) for _ in range(size * size)]).reshape(size, size)
    out: npt.NDArray[np.uint8] = np.clip(small + noise, 0, 255).astype(np.uint8)
    return out


def make_digit_folder(
    dest: str, per_class: int = 20, size: int = 28, seed: int = 0, bad: int = 0
) -> ImageFolder:
    """Write an MNIST-like image folder: ``dest/0/`` ... ``dest/9/``, ``per_class`` PNGs each.

    Each image is a hand-drawn-looking seven-segment digit (random size, slant,
    position, stroke and noise), ``size`` x ``size`` grayscale. ``bad`` extra files
    named ``.png`` that are not images are added (to show how ``from-images``
    reports them). Deterministic for a given ``seed``. Needs Pillow.
    """
    image_mod = pil()
    rng = random.Random(seed)
    for digit in range(10):
        folder = os.path.join(dest, str(digit))
        os.makedirs(folder, exist_ok=True)
        for i in range(per_class):
            arr = _draw_digit(digit, size, rng)
            image_mod.fromarray(arr).save(os.path.join(folder, f"{digit}-{i:04d}.png"))
    for i in range(bad):
        with open(os.path.join(dest, str(i % 10), f"broken-{i}.png"), "wb") as f:
            f.write(b"this is not a picture\n")
    return scan_image_folder(dest)
