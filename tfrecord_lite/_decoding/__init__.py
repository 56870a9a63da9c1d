"""Bytes into NumPy: ``decode_raw``, image codecs, ``serialize_tensor`` / ``parse_tensor``,
and image folders turned into Examples.

Other units import from this package only, and only these names.
"""

from ._display import display_array, draw_grid
from ._folders import (
    IMAGE_EXTENSIONS,
    ImageFolderSummary,
    ImageOptions,
    convert_task,
    scan_image_folder,
    sniff_image,
    worker_pool,
    write_image_folder,
)
from ._images import decode_image, decode_with_pillow, encode_image
from ._jpeg import decode_jpeg_pixels
from ._pillow import pil, pil_image
from ._porting import NUMPY_FOR_TF, PORTING_DOCS, missing_attributes, missing_name
from ._raw import decode_raw
from ._tensor import decode_json_example, parse_tensor, serialize_tensor
from ._tf_images import decode_jpeg, decode_png, encode_jpeg, encode_png, tf_decode_image

__all__ = [
    "IMAGE_EXTENSIONS",
    "NUMPY_FOR_TF",
    "PORTING_DOCS",
    "ImageFolderSummary",
    "ImageOptions",
    "convert_task",
    "decode_image",
    "decode_jpeg",
    "decode_jpeg_pixels",
    "decode_json_example",
    "decode_png",
    "decode_raw",
    "decode_with_pillow",
    "display_array",
    "draw_grid",
    "encode_image",
    "encode_jpeg",
    "encode_png",
    "missing_attributes",
    "missing_name",
    "parse_tensor",
    "pil",
    "pil_image",
    "scan_image_folder",
    "serialize_tensor",
    "sniff_image",
    "tf_decode_image",
    "worker_pool",
    "write_image_folder",
]
