"""Bytes into NumPy: ``decode_raw``, image codecs, ``serialize_tensor`` / ``parse_tensor``,
and image folders turned into Examples.

Other units import from this package only, and only these names.
"""

from ._decode import (
    decode_image,
    decode_jpeg,
    decode_jpeg_pixels,
    decode_png,
    decode_raw,
    encode_image,
    encode_jpeg,
    encode_png,
    pil_image,
    tf_decode_image,
)
from ._folders import (
    ImageOptions,
    convert_task,
    display_array,
    draw_grid,
    pil,
    scan_image_folder,
    sniff_image,
    worker_pool,
)
from ._tensor import decode_json_example, parse_tensor, serialize_tensor

__all__ = [
    "ImageOptions",
    "convert_task",
    "decode_image",
    "decode_jpeg",
    "decode_jpeg_pixels",
    "decode_json_example",
    "decode_png",
    "decode_raw",
    "display_array",
    "draw_grid",
    "encode_image",
    "encode_jpeg",
    "encode_png",
    "parse_tensor",
    "pil",
    "pil_image",
    "scan_image_folder",
    "serialize_tensor",
    "sniff_image",
    "tf_decode_image",
    "worker_pool",
]
