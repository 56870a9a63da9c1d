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

TensorFlow 1's input queues (``tf.train.string_input_producer``, ``shuffle_batch``,
``batch``, ``start_queue_runners``) need a graph and a session; here they raise
:class:`tfrecord_lite.GraphOnlyError` whose message shows the one-line
:class:`tfrecord_lite.data.TFRecordDataset` translation (``docs/tf1-queues.md``).
"""

from __future__ import annotations

from typing import Any, NoReturn

from ._decoding import missing_attributes as _missing_attributes
from ._errors import GraphOnlyError
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
    "Coordinator",
    "Example",
    "Feature",
    "FeatureList",
    "FeatureLists",
    "Features",
    "FloatList",
    "Int64List",
    "SequenceExample",
    "batch",
    "shuffle_batch",
    "start_queue_runners",
    "string_input_producer",
]

_GUIDE = "see docs/tf1-queues.md, 'From TF1 queues to TFRecordDataset'"


def _graph_only(name: str, translation: str) -> NoReturn:
    raise GraphOnlyError(
        f"tf.train.{name} is part of TensorFlow 1's input queues, which need a graph and a "
        f"session; tfrecord_lite runs eagerly. Use instead: {translation} ({_GUIDE})"
    )


def string_input_producer(*args: Any, **kwargs: Any) -> NoReturn:
    """TF1's filename queue: raises :class:`~tfrecord_lite.GraphOnlyError` naming the replacement.

    ``queue = tf.train.string_input_producer(files, num_epochs=N, shuffle=True)`` becomes
    ``ds = tfr.data.TFRecordDataset(files).repeat(N)``: the dataset reads the files
    itself, and :meth:`~tfrecord_lite.TFRecordDataset.shuffle` shuffles records.
    """
    _graph_only(
        "string_input_producer",
        "`ds = tfr.data.TFRecordDataset(filenames).repeat(num_epochs)` "
        "(the dataset reads the files; no queue or reader is needed)",
    )


def shuffle_batch(*args: Any, **kwargs: Any) -> NoReturn:
    """TF1's shuffling batcher: raises :class:`~tfrecord_lite.GraphOnlyError` naming the replacement.

    ``tf.train.shuffle_batch([image, label], batch_size=B, capacity=C,
    min_after_dequeue=M)`` becomes ``ds.map(parse).shuffle(M).batch(B)``.
    """
    _graph_only(
        "shuffle_batch",
        "`ds.map(parse).shuffle(min_after_dequeue).batch(batch_size)` on a "
        "tfr.data.TFRecordDataset",
    )


def batch(*args: Any, **kwargs: Any) -> NoReturn:
    """TF1's batcher: raises :class:`~tfrecord_lite.GraphOnlyError` naming the replacement.

    ``tf.train.batch([image, label], batch_size=B)`` becomes ``ds.map(parse).batch(B)``.
    """
    _graph_only("batch", "`ds.map(parse).batch(batch_size)` on a tfr.data.TFRecordDataset")


def start_queue_runners(*args: Any, **kwargs: Any) -> NoReturn:
    """TF1's queue runners: raises :class:`~tfrecord_lite.GraphOnlyError` naming the replacement.

    With a :class:`~tfrecord_lite.data.TFRecordDataset` there is nothing to start:
    iterate over it (``for batch in ds: ...``).
    """
    _graph_only(
        "start_queue_runners",
        "nothing to start: iterate over the dataset, `for batch in ds: ...`",
    )


class Coordinator:
    """TF1's thread coordinator for queue runners: raises :class:`~tfrecord_lite.GraphOnlyError`.

    Datasets need no coordinator; iterate over them (``for batch in ds: ...``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _graph_only(
            "Coordinator",
            "nothing to coordinate: iterate over the dataset, `for batch in ds: ...`",
        )


#: A name TensorFlow has and this library leaves to NumPy: the error gives its one-liner.
__getattr__ = _missing_attributes(__name__)
