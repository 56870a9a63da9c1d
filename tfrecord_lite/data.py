"""``tfr.data``: the names TensorFlow keeps under ``tf.data``, for scripts that port by prefix.

``tf.data.TFRecordDataset(files)`` becomes ``tfr.data.TFRecordDataset(files)``; both names
are also available at the top level of :mod:`tfrecord_lite`.
"""

from ._dataset import AUTOTUNE, TFRecordDataset

__all__ = ["AUTOTUNE", "TFRecordDataset"]
