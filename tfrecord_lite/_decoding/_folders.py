"""Image folders to Examples, image sniffing, and a demo image folder.

Used by ``tfrecord-lite from-images`` / ``head`` / ``preview``. Pillow (the
``image`` extra) is imported only by the functions that decode, encode or draw;
:func:`sniff_image` and :func:`scan_image_folder` need nothing beyond the standard
library.

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
import struct
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional, Union

import numpy as np
import numpy.typing as npt

from .._examples import encode_example
from ._images import decode_image, encode_image
from ._pillow import pil

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


# --------------------------------------------------------------------------- sniffing

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


#: What ``format`` may be: keep each file's bytes, or store every image as one format.
IMAGE_FORMATS = ("keep", "jpeg", "png", "raw")
_MODES = {1: "L", 3: "RGB", 4: "RGBA"}
#: Source formats stored as they are with ``format="keep"`` (else re-encoded as PNG
#: when a change is asked for: Pillow writes these two).
_ENCODABLE = {"JPEG": "jpeg", "PNG": "png"}


@dataclass(frozen=True)
class ImageOptions:
    """How :func:`image_example` stores an image.

    ``format``: ``"keep"`` (default: each file's bytes as they are, its format under
    ``image/format``; re-encoded in its own format only when ``size`` or ``channels``
    asks for a change, GIF/BMP/WebP/TIFF then as PNG), ``"jpeg"`` or ``"png"`` (every
    image in that format; a file already in it that needs no change is kept byte for
    byte) or ``"raw"`` (uint8 pixels under ``image_raw``, with ``image_raw/shape`` and
    ``image_raw/dtype`` so :func:`tfrecord_lite.read_examples` returns an array).
    ``channels``: None (keep each image's: grayscale stays 1, RGBA 4; JPEG cannot hold
    alpha, so ``format="jpeg"`` drops it and says so), 1, 3 or 4. ``size``:
    ``(width, height)`` to resize to, or None. ``quality``: JPEG quality.
    ``encode`` is the deprecated name of ``format`` (``"jpeg"``, ``"png"``, ``"raw"``);
    ``channels`` also takes the old strings ``"auto"`` (None), ``"1"``, ``"3"``.
    """

    size: Optional[tuple[int, int]] = None
    format: str = "keep"
    channels: Optional[Union[int, str]] = None
    quality: int = 95
    encode: Optional[str] = None

    def __post_init__(self) -> None:
        fmt = str(self.encode or self.format).lower()
        if fmt == "jpg":
            fmt = "jpeg"
        if fmt not in IMAGE_FORMATS:
            raise ValueError(f"format must be one of {', '.join(IMAGE_FORMATS)}, got {fmt!r}")
        channels = self.channels
        if isinstance(channels, str):
            channels = None if channels == "auto" else int(channels)
        if channels not in (None, 1, 3, 4):
            raise ValueError(f"channels must be None, 1, 3 or 4, got {self.channels!r}")
        if not 1 <= int(self.quality) <= 100:
            raise ValueError(f"quality must be 1..100, got {self.quality}")
        object.__setattr__(self, "format", fmt)
        object.__setattr__(self, "channels", channels)
        object.__setattr__(self, "encode", None)


def _resize(arr: npt.NDArray[np.uint8], size: tuple[int, int]) -> npt.NDArray[np.uint8]:
    width, height = size
    if arr.shape[1] == width and arr.shape[0] == height:
        return arr
    image_mod = pil()
    resample = getattr(image_mod, "Resampling", image_mod).BILINEAR
    return np.asarray(image_mod.fromarray(arr).resize((width, height), resample), np.uint8)


def _depth(arr: npt.NDArray[np.uint8]) -> int:
    return 1 if arr.ndim == 2 else int(arr.shape[2])


def image_record(
    data: bytes, relpath: str, label: int, class_name: str, options: ImageOptions
) -> tuple[bytes, list[str]]:
    """One serialized Example for an image file's bytes, and the changes made to it
    (``"PNG to JPEG"``, ``"4 to 3 channels"``, ``"resized"``; empty when the file's
    bytes are stored as they are).

    Features: ``image/encoded`` (or ``image_raw`` + ``image_raw/shape`` +
    ``image_raw/dtype``), ``image/format``, ``image/class/label``,
    ``image/class/text``, ``image/height``, ``image/width``, ``image/channels``,
    ``image/filename``. Undecodable bytes raise :class:`tfrecord_lite.ParseError`.
    """
    sniffed = sniff_image(data)
    source = sniffed[0] if sniffed else (os.path.splitext(relpath)[1][1:].upper() or "IMAGE")
    arr = decode_image(data)
    native = _depth(arr)
    want = None if options.channels is None else int(options.channels)
    if want is None and options.format == "jpeg" and native in (2, 4):
        want = native - 1  # JPEG holds no alpha
    changes: list[str] = []
    if want is not None and want != native:
        arr = decode_image(data, mode=_MODES[want])
        changes.append(f"{native} to {want} channels")
    if options.size is not None:
        before = arr.shape[:2]
        arr = _resize(arr, options.size)
        if arr.shape[:2] != before:
            changes.append("resized")
    height, width, channels = int(arr.shape[0]), int(arr.shape[1]), _depth(arr)
    feats: dict[str, Any] = {}
    if options.format == "raw":
        feats["image_raw"] = arr.tobytes()
        feats["image_raw/shape"] = np.array([height, width, channels], dtype=np.int64)
        feats["image_raw/dtype"] = np.dtype(np.uint8).str.encode()
        fmt = "raw"
        changes.append(f"{source} to raw pixels")
    else:
        own = _ENCODABLE.get(source)
        if options.format == "keep":
            fmt = (own or source.lower()) if not changes else (own or "png")
        else:
            fmt = options.format
        if not changes and (options.format == "keep" or own == fmt):
            encoded = bytes(data)  # the file, byte for byte
        else:
            encoded = encode_image(arr, fmt, quality=options.quality)
            if own != fmt:
                changes.append(f"{source} to {fmt.upper()}")
            elif not changes:
                changes.append(f"{source} re-encoded")
        feats["image/encoded"] = encoded
    feats["image/format"] = fmt.encode()
    feats["image/class/label"] = int(label)
    feats["image/class/text"] = class_name.encode("utf-8", "surrogateescape")
    feats["image/height"] = height
    feats["image/width"] = width
    feats["image/channels"] = channels
    feats["image/filename"] = os.fsencode(relpath.replace(os.sep, "/"))
    return encode_example(feats), changes


def image_example(
    data: bytes, relpath: str, label: int, class_name: str, options: ImageOptions
) -> bytes:
    """One serialized Example for an image file's bytes (see :func:`image_record`)."""
    return image_record(data, relpath, label, class_name, options)[0]


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
    is called after each file. Needs Pillow.
    """
    from .._files import ShardedWriter

    options = ImageOptions(size=size, format=format, channels=channels, quality=quality)
    pil()  # fail now, with the install hint, if Pillow is missing
    scanned = scan_image_folder(folder)
    out_dir = os.path.dirname(out_prefix) or "."
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
        except BaseException:
            writer.abort()
            raise
    summary.paths = [os.fspath(p) for p in writer.close()]
    with open(summary.labels, "w", encoding="utf-8", errors="surrogateescape", newline="\n") as f:
        f.write("".join(name + "\n" for name in scanned.classes))
    return summary


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
