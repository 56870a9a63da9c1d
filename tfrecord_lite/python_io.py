"""``tfr.python_io``: TensorFlow 1's ``tf.python_io`` names, for scripts that port by prefix.

``tf.python_io.TFRecordWriter(path)`` becomes ``tfr.python_io.TFRecordWriter(path)``
and ``tf.python_io.tf_record_iterator(path, options)`` becomes
``tfr.python_io.tf_record_iterator(path, options)``; they are the same objects as
:class:`tfrecord_lite.TFRecordWriter` and :func:`tfrecord_lite.tf_record_iterator`
(TensorFlow 2 keeps them as ``tf.io.TFRecordWriter`` and
``tf.compat.v1.io.tf_record_iterator``)::

    import tfrecord_lite as tfr

    options = tfr.python_io.TFRecordOptions(tfr.python_io.TFRecordCompressionType.GZIP)
    with tfr.python_io.TFRecordWriter("train.tfrecord.gz", options) as writer:
        writer.write(example.SerializeToString())
    for record in tfr.python_io.tf_record_iterator("train.tfrecord.gz", options):
        ...
"""

from ._decoding import missing_attributes as _missing_attributes
from ._files import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)

__all__ = [
    "TFRecordCompressionType",
    "TFRecordOptions",
    "TFRecordWriter",
    "tf_record_iterator",
]

#: A name TensorFlow has and this library leaves to NumPy: the error gives its one-liner.
__getattr__ = _missing_attributes(__name__)
