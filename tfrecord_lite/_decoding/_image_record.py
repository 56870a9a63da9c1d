"""One image file as one ``tf.train.Example``: :func:`image_record` (what
``tfrecord-lite from-images`` and :func:`write_image_folder` store per image) and its
options.

By default the file's bytes are stored as they are; a change (``format``, ``channels``,
``size``) decodes the pixels. 8-bit images convert through Pillow. Images of 16 bits
per channel are kept 16-bit wherever the target holds it: ``keep`` (and ``png`` for a
PNG) store the file as it is; 16-bit grayscale (PNG, TIFF, PGM: Pillow's ``I;16``)
decodes exactly, so ``raw`` stores ``uint16`` pixels (``image_raw/dtype`` ``"<u2"``),
resizing and ``png`` keep 16 bits, ``channels=3|4`` gives 16-bit RGB(A) in ``raw``;
``jpeg`` (8 bits only) stores ``x // 256`` (TensorFlow's uint16 -> uint8, colour PNGs
included) and says so. What cannot be done exactly raises ``ValueError`` saying why
(16-bit colour PNGs other than to JPEG, since Pillow reads 8 of their 16 bits; 32-bit
integer or float images; 16-bit RGB as PNG).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

from .._errors import ParseError
from .._examples import encode_example
from ._images import decode_image, encode_image
from ._pillow import pil, pil_image
from ._sniff import PNG_CHANNELS, png_header, sniff_image

__all__ = ["IMAGE_FORMATS", "ImageOptions", "image_example", "image_record"]

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


def _resize(arr: npt.NDArray[Any], size: tuple[int, int]) -> npt.NDArray[Any]:
    """Bilinear resize to ``(width, height)``; uint8, or 16-bit grayscale (Pillow's I;16)."""
    width, height = size
    if arr.shape[1] == width and arr.shape[0] == height:
        return arr
    image_mod = pil()
    resample = getattr(image_mod, "Resampling", image_mod).BILINEAR
    return np.asarray(image_mod.fromarray(arr).resize((width, height), resample), arr.dtype)


def _depth(arr: npt.NDArray[Any]) -> int:
    return 1 if arr.ndim == 2 else int(arr.shape[2])


def _opened(data: bytes) -> Any:
    """The image, loaded (so undecodable bytes raise ParseError here)."""
    image_mod = pil_image()
    try:
        img = image_mod.open(io.BytesIO(data))
        img.load()
    except (OSError, SyntaxError, ValueError, EOFError, image_mod.DecompressionBombError) as e:
        raise ParseError(f"cannot decode image: {e}") from e
    return img


def _native_channels(img: Any, png: Optional[tuple[int, int]]) -> int:
    """The channels the image has, as :func:`decode_image` gives them (a palette: 3, or
    4 when transparent; a 16-bit colour PNG: its colour type's)."""
    mode = img.mode
    if png is not None and png[0] == 16:
        return PNG_CHANNELS.get(png[1], 3)
    if mode in ("1", "L") or mode.startswith(("I", "F")):
        return 1
    if mode == "LA":
        return 2
    if mode == "RGBA":
        return 4
    if mode in ("P", "PA"):
        return 4 if mode == "PA" or "transparency" in img.info else 3
    return 3


def _bits(img: Any, png: Optional[tuple[int, int]]) -> int:
    """Bits per channel: 8, 16 (a 16-bit PNG, or Pillow's I;16 modes) or 32 (I, F)."""
    if png is not None and png[0] == 16:
        return 16
    if img.mode.startswith("I;16"):
        return 16
    if img.mode.startswith(("I", "F")):
        return 32
    return 8


def _gray16(img: Any, png: Optional[tuple[int, int]], what: str) -> npt.NDArray[np.uint16]:
    """The exact pixels of a 16-bit grayscale image, 2-D uint16; else ValueError: why not."""
    if img.mode.startswith("I;16") and (png is None or png[1] == 0):
        return np.asarray(img).astype(np.uint16)
    if img.mode.startswith(("I", "F")) and not img.mode.startswith("I;16"):
        raise ValueError(
            f"a {img.mode!r} image (32-bit integers or floats) cannot be {what} exactly; "
            "store the file as it is (format keep, no size or channels change)"
        )
    kind = {2: "RGB", 4: "gray + alpha", 6: "RGBA"}.get(png[1] if png else -1, img.mode)
    raise ValueError(
        f"a 16-bit {kind} PNG cannot be {what} exactly (Pillow reads 8 of its 16 bits); "
        "store the file as it is (format keep, or png, with no size or channels change)"
    )


def _channels16(arr: npt.NDArray[np.uint16], want: int) -> npt.NDArray[np.uint16]:
    """16-bit gray as 1, 3 (repeated) or 4 channels (alpha 65535), (H, W, C)."""
    gray = arr[:, :, None]
    if want == 1:
        return gray
    rgb = np.repeat(gray, 3, axis=2)
    if want == 3:
        return rgb
    return np.concatenate([rgb, np.full_like(gray, np.iinfo(np.uint16).max)], axis=2)


def image_record(
    data: bytes, relpath: str, label: int, class_name: str, options: ImageOptions
) -> tuple[bytes, list[str]]:
    """One serialized Example for an image file's bytes, and the changes made to it
    (``"PNG to JPEG"``, ``"4 to 3 channels"``, ``"resized"``, ``"16 to 8 bits"``;
    empty when the file's bytes are stored as they are).

    Features: ``image/encoded`` (or ``image_raw`` + ``image_raw/shape`` +
    ``image_raw/dtype``), ``image/format``, ``image/class/label``,
    ``image/class/text``, ``image/height``, ``image/width``, ``image/channels``,
    ``image/filename``. Undecodable bytes raise :class:`tfrecord_lite.ParseError`; a
    change that cannot be made exactly (see the module documentation) ``ValueError``.
    """
    sniffed = sniff_image(data)
    source = sniffed[0] if sniffed else (os.path.splitext(relpath)[1][1:].upper() or "IMAGE")
    own = _ENCODABLE.get(source)
    img = _opened(data)
    png = png_header(data)
    bits = _bits(img, png)
    native = _native_channels(img, png)
    want = None if options.channels is None else int(options.channels)
    if want is None and options.format == "jpeg" and native in (2, 4):
        want = native - 1  # JPEG holds no alpha
    same_size = options.size is None or tuple(options.size) == tuple(img.size)
    if (
        options.format != "raw"
        and (want is None or want == native)
        and same_size
        and options.format in ("keep", own)
    ):  # the file, byte for byte (any depth: nothing is decoded but the header)
        fmt = own or source.lower()
        return _example(
            {"image/encoded": bytes(data)}, fmt, img.size, native, relpath, label, class_name
        ), []
    changes: list[str] = []
    if bits == 8:
        arr: npt.NDArray[Any] = decode_image(data)
        if want is not None and want != native:
            arr = decode_image(data, mode=_MODES[want])
            changes.append(f"{native} to {want} channels")
    elif options.format == "jpeg" and bits == 16:  # JPEG holds 8 bits: x // 256, as TF
        if img.mode.startswith("I;16"):
            arr = (_gray16(img, png, "converted") // 256).astype(np.uint8)
            if want is not None and want != 1:
                arr = _channels16(arr.astype(np.uint16), want).astype(np.uint8)
        else:  # a 16-bit colour PNG: Pillow keeps the high byte of each value, x // 256
            arr = decode_image(data, mode=None if want is None else _MODES[want])
        changes.append("16 to 8 bits")
        if want is not None and want != native:
            changes.append(f"{native} to {want} channels")
    else:
        arr = _gray16(img, png, "converted" if options.format != "raw" else "stored as raw pixels")
        if want is not None and want != 1:
            if options.format != "raw":
                raise ValueError(
                    f"a 16-bit grayscale image cannot be stored with {want} channels as "
                    f"{'PNG' if options.format != 'keep' else source} (Pillow writes 16 bits "
                    "in one channel only); use format raw (16-bit pixels), or no channels"
                )
            arr = _channels16(arr, want)
            changes.append(f"1 to {want} channels")
    if options.size is not None:
        before = arr.shape[:2]
        if arr.ndim == 3 and arr.dtype == np.uint16:  # Pillow resizes 16 bits in one channel
            arr = np.stack([_resize(arr[:, :, i], options.size) for i in range(arr.shape[2])], 2)
        else:
            arr = _resize(arr, options.size)
        if arr.shape[:2] != before:
            changes.append("resized")
    feats: dict[str, Any] = {}
    if options.format == "raw":
        if arr.ndim == 2:
            arr = arr[:, :, None]
        feats["image_raw"] = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        feats["image_raw/shape"] = np.array(arr.shape, dtype=np.int64)
        feats["image_raw/dtype"] = arr.dtype.newbyteorder("<").str.encode()
        fmt = "raw"
        changes.append(f"{source} to raw pixels")
    else:
        fmt = (own or "png") if options.format == "keep" else options.format
        encoded = _encode(arr, fmt, options.quality)
        if own != fmt:
            changes.append(f"{source} to {fmt.upper()}")
        elif not changes:
            changes.append(f"{source} re-encoded")
        feats["image/encoded"] = encoded
    size = (int(arr.shape[1]), int(arr.shape[0]))
    example = _example(feats, fmt, size, _depth(arr), relpath, label, class_name)
    return example, changes


def _encode(arr: npt.NDArray[Any], fmt: str, quality: int) -> bytes:
    if arr.dtype == np.uint16:  # 16-bit grayscale (only PNG is asked for here)
        image_mod = pil_image()
        out = io.BytesIO()
        image_mod.fromarray(np.ascontiguousarray(arr.reshape(arr.shape[:2]))).save(out, "PNG")
        return out.getvalue()
    return encode_image(arr, fmt, quality=quality)


def _example(
    feats: dict[str, Any],
    fmt: str,
    size: tuple[int, int],
    channels: int,
    relpath: str,
    label: int,
    class_name: str,
) -> bytes:
    width, height = size
    feats["image/format"] = fmt.encode()
    feats["image/class/label"] = int(label)
    feats["image/class/text"] = class_name.encode("utf-8", "surrogateescape")
    feats["image/height"] = int(height)
    feats["image/width"] = int(width)
    feats["image/channels"] = int(channels)
    feats["image/filename"] = os.fsencode(relpath.replace(os.sep, "/"))
    return encode_example(feats)


def image_example(
    data: bytes, relpath: str, label: int, class_name: str, options: ImageOptions
) -> bytes:
    """One serialized Example for an image file's bytes (see :func:`image_record`)."""
    return image_record(data, relpath, label, class_name, options)[0]
