"""``tfr.io``: the names TensorFlow keeps under ``tf.io``, for scripts that port by prefix.

``tf.io.parse_example(...)`` becomes ``tfr.io.parse_example(...)``; every name here
is also available at the top level of :mod:`tfrecord_lite`.
"""

from ._decode import decode_raw
from ._io import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)
from ._parse import (
    parse_example,
    parse_sequence_example,
    parse_single_example,
    parse_single_sequence_example,
)
from ._schema import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    SparseFeature,
    VarLenFeature,
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
    "decode_raw",
    "parse_example",
    "parse_sequence_example",
    "parse_single_example",
    "parse_single_sequence_example",
    "tf_record_iterator",
]
