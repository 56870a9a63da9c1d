"""``tfr.image``: the image codecs TensorFlow also keeps under ``tf.image``.

TensorFlow 1 scripts decode with ``tf.image.decode_jpeg(features["image/encoded"],
channels=3)``; ``tfr.image.decode_jpeg`` is the same function as
:func:`tfrecord_lite.io.decode_jpeg` (Pillow, the ``image`` extra), returning NumPy
``(H, W, C)`` arrays (grayscale ``(H, W, 1)``); ``decode_image`` here is
``tfr.io.decode_image`` and ``tfr.decode_image``. Only the codecs are here; resize,
crop and colour ops are NumPy's / Pillow's business.
"""

from ._decoding import decode_jpeg, decode_png, encode_jpeg, encode_png
from ._decoding import missing_attributes as _missing_attributes
from ._decoding import tf_decode_image as decode_image

__all__ = ["decode_image", "decode_jpeg", "decode_png", "encode_jpeg", "encode_png"]

#: A name TensorFlow has and this library leaves to NumPy: the error gives its one-liner.
__getattr__ = _missing_attributes(__name__)
