"""``tfr.train``: the ``tf.train`` record messages, without TensorFlow.

The same messages, field numbers and wire format as TensorFlow's
``tf.train.Example`` & co., so code written against ``tf.train`` ports by
changing the prefix::

    import tfrecord_lite as tfr

    example = tfr.train.Example(
        features=tfr.train.Features(
            feature={
                "label": tfr.train.Feature(int64_list=tfr.train.Int64List(value=[3])),
                "image": tfr.train.Feature(bytes_list=tfr.train.BytesList(value=[png])),
            }
        )
    )
    data = example.SerializeToString()

They live in a private protobuf package (``tfrecord_lite``, not ``tensorflow``), so
they can be loaded in the same process as TensorFlow without a "duplicate symbol"
clash; serialized bytes are interchangeable both ways. :func:`tfrecord_lite.make_example`
and :func:`tfrecord_lite.encode_example` build the same records from plain
Python / NumPy values.
"""

from __future__ import annotations

from .example_pb2 import Example, SequenceExample
from .feature_pb2 import (
    BytesList,
    Feature,
    FeatureList,
    FeatureLists,
    Features,
    FloatList,
    Int64List,
)

__all__ = [
    "BytesList",
    "Example",
    "Feature",
    "FeatureList",
    "FeatureLists",
    "Features",
    "FloatList",
    "Int64List",
    "SequenceExample",
]
