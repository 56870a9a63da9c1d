"""``tfr.io``: the names TensorFlow keeps under ``tf.io``, for scripts that port by prefix.

``tf.io.parse_example(...)`` becomes ``tfr.io.parse_example(...)``. Besides the
record and parsing names (also at the top level of :mod:`tfrecord_lite`) it holds
TensorFlow's image ops (``decode_image``, ``decode_jpeg``, ``decode_png``,
``encode_jpeg``, ``encode_png``; the ``image`` extra, Pillow) with TensorFlow's
arguments and ``(H, W, C)`` results, ``serialize_tensor`` / ``parse_tensor``
(TensorFlow's ``TensorProto`` bytes) and ``decode_json_example``. Every function
accepts TensorFlow's ``name=`` argument (and ignores it).

``tfr.io.decode_image`` is TensorFlow's (``channels=``, ``dtype=``, ``(H, W, C)``,
grayscale ``(H, W, 1)``), and so is the top-level ``tfr.decode_image`` (the same
function); ``tfr.decode_with_pillow(data, mode=None)`` is the Pillow-style helper that
keeps grayscale 2-D.
"""

from ._decoding import (
    decode_jpeg,
    decode_json_example,
    decode_png,
    decode_raw,
    encode_jpeg,
    encode_png,
    parse_tensor,
    serialize_tensor,
)
from ._decoding import missing_attributes as _missing_attributes
from ._decoding import tf_decode_image as decode_image
from ._examples import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    SparseFeature,
    VarLenFeature,
    parse_example,
    parse_sequence_example,
    parse_single_example,
    parse_single_sequence_example,
)
from ._files import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)

__all__ = [
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "RaggedFeature",
    "SparseFeature",
    "TFRecordCompressionType",
    "TFRecordOptions",
    "TFRecordWriter",
    "VarLenFeature",
    "decode_image",
    "decode_jpeg",
    "decode_json_example",
    "decode_png",
    "decode_raw",
    "encode_jpeg",
    "encode_png",
    "parse_example",
    "parse_sequence_example",
    "parse_single_example",
    "parse_single_sequence_example",
    "parse_tensor",
    "serialize_tensor",
    "tf_record_iterator",
]

#: A name TensorFlow has and this library leaves to NumPy: the error gives its one-liner.
__getattr__ = _missing_attributes(__name__)
