"""``tfr.compat``: TensorFlow's ``tf.compat`` spellings that TFRecord scripts still use.

``tf.compat.v1.io.tf_record_iterator(path)`` becomes
``tfr.compat.v1.io.tf_record_iterator(path)``, the same function as
:func:`tfrecord_lite.tf_record_iterator`.
"""

from types import SimpleNamespace

from ._io import tf_record_iterator

#: ``tfr.compat.v1.io.tf_record_iterator``
v1 = SimpleNamespace(
    io=SimpleNamespace(tf_record_iterator=tf_record_iterator, __all__=["tf_record_iterator"]),
    __all__=["io"],
)

__all__ = ["v1"]
