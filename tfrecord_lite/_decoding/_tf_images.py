"""TensorFlow's ``tf.io`` image ops: ``decode_jpeg``, ``decode_png``, ``decode_image``
(here :func:`tf_decode_image`), ``encode_jpeg`` and ``encode_png``."""

from __future__ import annotations

import io
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from .._errors import ParseError
from ._jpeg import decode_jpeg_pixels
from ._pillow import _load, _open, image_bytes, pil_image
from ._pixels import _as_hwc, _check_channels, _convert_dtype, _to_channels
from ._sniff import png_header

__all__ = ["decode_jpeg", "decode_png", "encode_jpeg", "encode_png", "tf_decode_image"]


_DCT_METHODS = ("", "INTEGER_FAST", "INTEGER_ACCURATE")


def decode_jpeg(
    contents: Any,
    channels: int = 0,
    ratio: int = 1,
    fancy_upscaling: bool = True,
    try_recover_truncated: bool = False,
    acceptable_fraction: float = 1,
    dct_method: str = "",
    name: Optional[str] = None,
) -> npt.NDArray[np.uint8]:
    """Decode a JPEG into a uint8 ``(H, W, C)`` array, as ``tf.io.decode_jpeg``.

    ``contents``: the JPEG bytes, or what parsing returns for a string feature (a 0-d
    or one-element object array). ``channels``: 0 (as stored: 1 or 3), 1 (grayscale)
    or 3 (RGB). ``ratio``: 1, 2, 4 or 8, downscaling while decoding.
    ``dct_method``: ``""`` (default) or ``"INTEGER_FAST"``, or ``"INTEGER_ACCURATE"``.
    With the ``image`` extra installed (Pillow and simplejpeg: libjpeg-turbo with the
    DCT selectable) the pixels are TensorFlow's exactly for every ``dct_method``.
    With Pillow alone, ``"INTEGER_ACCURATE"``, grayscale and 4:4:4 JPEGs are exact;
    chroma-subsampled JPEGs (most photos) with the default ``dct_method`` are decoded
    with the accurate DCT and differ from TensorFlow's by at most ``JPEG_MAX_DIFF`` = 8
    (measured against TensorFlow 2.21; Pillow offers no fast DCT with fancy
    upsampling). ``TFRECORD_LITE_JPEG_BACKEND=pillow`` forces Pillow.
    ``fancy_upscaling``, ``try_recover_truncated`` and ``acceptable_fraction`` are
    accepted for TensorFlow compatibility (a truncated JPEG raises ``ParseError``);
    ``name`` is ignored. Needs the ``image`` extra.
    """
    del name, fancy_upscaling, acceptable_fraction, try_recover_truncated
    what = "decode_jpeg"
    ch = _check_channels(channels, (0, 1, 3), what)
    if ratio not in (1, 2, 4, 8):
        raise ValueError(f"{what}: ratio must be 1, 2, 4 or 8, got {ratio!r}")
    if dct_method not in _DCT_METHODS:
        raise ValueError(
            f"{what}: dct_method must be one of {list(_DCT_METHODS)}, got {dct_method!r}"
        )
    return decode_jpeg_pixels(image_bytes(contents, what), ch, dct_method, ratio, what)


def decode_png(
    contents: Any, channels: int = 0, dtype: Any = np.uint8, name: Optional[str] = None
) -> npt.NDArray[Any]:
    """Decode a PNG into an ``(H, W, C)`` array, as ``tf.io.decode_png``.

    ``channels``: 0 (as stored), 1 (gray), 3 (RGB) or 4 (RGBA) (TensorFlow's
    choices); colour to gray is libpng's, as TensorFlow gets it. ``dtype``: ``np.uint8``
    (16-bit PNGs are scaled down, ``x // 256``) or ``np.uint16`` (8-bit PNGs are
    scaled up, ``x * 257``), TensorFlow's conversions. A 16-bit colour PNG decodes to
    uint8 only (Pillow reads 8 of its 16 bits; ``ValueError`` otherwise); 16-bit
    grayscale decodes exactly to either. ``contents``: bytes or a 0-d /
    one-element object array. ``name`` is ignored. Needs Pillow.
    """
    del name
    what = "decode_png"
    ch = _check_channels(channels, (0, 1, 3, 4), what)
    want = np.dtype(getattr(dtype, "as_numpy_dtype", None) or dtype)
    if want not in (np.uint8, np.uint16):
        raise TypeError(f"{what}: dtype must be uint8 or uint16, got {want}")
    data = image_bytes(contents, what)
    _check_deep_png(data, want, what)
    img = _open(data, what)
    _load(img, what)
    arr = _as_hwc(img, what)
    return _convert_dtype(_to_channels(arr, ch), want, what, png=True)


def _check_deep_png(data: bytes, dtype: Any, what: str) -> None:
    """A 16-bit colour PNG decodes exactly only to uint8: Pillow reads the high byte of
    each value (``x // 256``, TensorFlow's uint16 -> uint8), never the 16 bits."""
    header = png_header(data)
    want = np.dtype(getattr(dtype, "as_numpy_dtype", None) or dtype)
    if header is not None and header[0] == 16 and header[1] != 0 and want != np.uint8:
        kind = {2: "RGB", 3: "palette", 4: "gray + alpha", 6: "RGBA"}.get(header[1], "colour")
        raise ValueError(
            f"{what}: a 16-bit {kind} PNG cannot be decoded to {want} here (Pillow reads 8 of "
            "its 16 bits, and the values would be wrong); decode it to uint8 (x // 256, as "
            "TensorFlow) or with TensorFlow; 16-bit grayscale PNGs decode to uint16 exactly"
        )


def _frames(img: Any, what: str) -> list[npt.NDArray[Any]]:
    out = []
    n = int(getattr(img, "n_frames", 1))
    for i in range(n):
        img.seek(i)
        frame = img.convert("RGB")
        out.append(np.array(frame, dtype=np.uint8))
    return out


def tf_decode_image(
    contents: Any,
    channels: Optional[int] = None,
    dtype: Any = np.uint8,
    name: Optional[str] = None,
    expand_animations: bool = True,
) -> npt.NDArray[Any]:
    """Decode a BMP, GIF, JPEG or PNG, as ``tf.io.decode_image``.

    Returns ``(H, W, C)``, grayscale ``(H, W, 1)``; a GIF gives ``(frames, H, W, 3)``
    (every GIF, as TensorFlow) unless ``expand_animations=False`` (then its first
    frame, 3-D). This is ``tfr.decode_image``, ``tfr.io.decode_image`` and
    ``tfr.image.decode_image``; :func:`tfrecord_lite.decode_with_pillow` is the
    Pillow-style helper (grayscale ``(H, W)``, Pillow's formats, a ``mode=``).
    ``channels``: None / 0 (as stored), 1, 3 or 4. ``dtype``: ``np.uint8`` (default),
    ``np.uint16`` or ``np.float32`` (scaled to [0, 1] as ``tf.image.convert_image_dtype``).
    JPEGs decode as :func:`decode_jpeg` (default ``dct_method``), PNGs as
    :func:`decode_png`. ``contents``: bytes or a 0-d / one-element object array (what
    parsing returns). ``name`` is ignored. Needs Pillow.
    """
    del name
    what = "decode_image"
    if isinstance(channels, str):  # decode_image(data, "L"): the Pillow-style helper's mode
        raise TypeError(
            f"{what}: channels must be an int (0, 1, 3 or 4), got the str {channels!r}; "
            "decode_image is TensorFlow's (grayscale (H, W, 1)): to convert to a Pillow "
            "mode use tfr.decode_with_pillow(data, mode=...)"
        )
    ch = _check_channels(channels, (0, 1, 3, 4), what)
    data = image_bytes(contents, what)
    if data[:3] == b"\xff\xd8\xff":  # a JPEG (Pillow's test too): no need to open it twice
        if ch not in (0, 1, 3):
            raise ValueError(f"{what}: channels must be 0, 1 or 3 for a JPEG, got {ch}")
        return _convert_dtype(decode_jpeg_pixels(data, ch, what=what), dtype, what)
    img = _open(data, what)
    fmt = img.format
    if fmt == "PNG":
        _check_deep_png(data, dtype, what)
        _load(img, what)
        return _convert_dtype(_to_channels(_as_hwc(img, what), ch), dtype, what, png=True)
    if fmt == "GIF":
        if ch not in (0, 3):
            raise ValueError(f"{what}: channels must be 0 or 3 for a GIF, got {ch}")
        try:
            frames = _frames(img, what) if expand_animations else _frames_first(img)
        except (OSError, ValueError, EOFError) as e:
            raise ParseError(f"{what}: cannot decode image: {e}") from e
        stacked = np.stack(frames) if expand_animations else frames[0]
        return _convert_dtype(stacked, dtype, what)
    if fmt == "BMP":
        if ch not in (0, 1, 3, 4):
            raise ValueError(f"{what}: channels must be 0, 1, 3 or 4 for a BMP, got {ch}")
        _load(img, what)
        return _convert_dtype(_to_channels(_as_hwc(img, what), ch), dtype, what)
    raise ParseError(
        f"{what}: unknown image format {fmt!r}; TensorFlow's decode_image reads BMP, GIF, "
        "JPEG and PNG (tfr.decode_with_pillow reads every format Pillow reads)"
    )


def _frames_first(img: Any) -> list[npt.NDArray[Any]]:
    img.seek(0)
    return [np.array(img.convert("RGB"), dtype=np.uint8)]


def _hwc_for_encoding(image: Any, what: str, dtypes: tuple[Any, ...]) -> npt.NDArray[Any]:
    arr = np.asarray(image)
    if arr.ndim != 3:
        raise ValueError(f"{what}: image must be 3-dimensional (H, W, C), got shape {arr.shape}")
    if arr.dtype not in dtypes:
        names = " or ".join(np.dtype(d).name for d in dtypes)
        raise TypeError(f"{what}: image must be {names}, got {arr.dtype}")
    return np.ascontiguousarray(arr)


def encode_jpeg(
    image: Any,
    format: str = "",
    quality: int = 95,
    progressive: bool = False,
    optimize_size: bool = False,
    chroma_downsampling: bool = True,
    density_unit: str = "in",
    x_density: int = 300,
    y_density: int = 300,
    xmp_metadata: str = "",
    name: Optional[str] = None,
) -> bytes:
    """JPEG bytes of a uint8 ``(H, W, 1)`` or ``(H, W, 3)`` image, as ``tf.io.encode_jpeg``.

    ``format``: ``""`` (by the channels), ``"grayscale"`` or ``"rgb"``. ``quality``
    0-100; ``chroma_downsampling`` (default True) stores colour at 4:2:0 as TensorFlow,
    False at 4:4:4. ``progressive``, ``optimize_size``, the density and XMP metadata
    are written as asked. The bytes are libjpeg's via Pillow, not necessarily
    TensorFlow's byte for byte; TensorFlow decodes them to the same pixels as its own.
    ``name`` is ignored. Needs Pillow.
    """
    del name
    what = "encode_jpeg"
    arr = _hwc_for_encoding(image, what, (np.dtype(np.uint8),))
    c = arr.shape[2]
    if format not in ("", "grayscale", "rgb"):
        raise ValueError(f"{what}: format must be '', 'grayscale' or 'rgb', got {format!r}")
    want = {"grayscale": 1, "rgb": 3}.get(format, c)
    if c != want or c not in (1, 3):
        raise ValueError(
            f"{what}: image must have {'1 or 3' if not format else want} channels, got {c}"
        )
    if not 0 <= int(quality) <= 100:
        raise ValueError(f"{what}: quality must be in 0-100, got {quality}")
    if density_unit not in ("in", "cm"):
        raise ValueError(f"{what}: density_unit must be 'in' or 'cm', got {density_unit!r}")
    image_mod = pil_image()
    img = image_mod.fromarray(arr[:, :, 0] if c == 1 else arr)
    out = io.BytesIO()
    options: dict[str, Any] = {
        "quality": max(1, int(quality)),
        "subsampling": 2 if chroma_downsampling else 0,
        "progressive": bool(progressive),
        "optimize": bool(optimize_size),
    }
    if density_unit == "in":
        options["dpi"] = (int(x_density), int(y_density))
    if xmp_metadata:
        options["xmp"] = xmp_metadata.encode("utf-8")
    img.save(out, format="JPEG", **options)
    return out.getvalue()


def encode_png(image: Any, compression: int = -1, name: Optional[str] = None) -> bytes:
    """PNG bytes of an ``(H, W, C)`` image, as ``tf.io.encode_png``.

    uint8 with C = 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA); uint16 with C = 1.
    ``compression``: -1 (default level) or 0-9. Lossless: decoding gives ``image``
    back. ``name`` is ignored. Needs Pillow.
    """
    del name
    what = "encode_png"
    arr = _hwc_for_encoding(image, what, (np.dtype(np.uint8), np.dtype(np.uint16)))
    c = arr.shape[2]
    if c not in (1, 2, 3, 4):
        raise ValueError(f"{what}: image must have 1 to 4 channels, got {c}")
    if arr.dtype == np.uint16 and c != 1:
        raise ValueError(
            f"{what}: 16-bit images with {c} channels are not supported (Pillow); use 1"
        )
    if not -1 <= int(compression) <= 9:
        raise ValueError(f"{what}: compression must be -1 or 0-9, got {compression}")
    image_mod = pil_image()
    img = image_mod.fromarray(arr[:, :, 0] if c == 1 else arr)
    out = io.BytesIO()
    img.save(out, format="PNG", compress_level=6 if int(compression) < 0 else int(compression))
    return out.getvalue()
