"""``tfr.data``: the names TensorFlow keeps under ``tf.data``, for scripts that port by prefix.

``tf.data.TFRecordDataset(files)`` becomes ``tfr.data.TFRecordDataset(files)``, and the
TF2 guide's parallel read ports as it is::

    files = tfr.data.Dataset.list_files("train-*.tfrecord")
    ds = files.interleave(lambda f: tfr.data.TFRecordDataset(f), cycle_length=4,
                          num_parallel_calls=tfr.data.AUTOTUNE)

Elements are NumPy values (no ``.numpy()`` needed). ``tfr.data.experimental`` holds
``AUTOTUNE``, ``INFINITE_CARDINALITY``, ``UNKNOWN_CARDINALITY``, ``cardinality`` and
``ignore_errors``.
"""

from typing import Callable

from ._data import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    Dataset,
    TFRecordDataset,
)
from ._decoding import missing_attributes as _missing_attributes


class experimental:
    """``tf.data.experimental``: the names scripts still use from it."""

    #: ``tf.data.experimental.AUTOTUNE``
    AUTOTUNE = AUTOTUNE
    #: ``tf.data.experimental.INFINITE_CARDINALITY``
    INFINITE_CARDINALITY = INFINITE_CARDINALITY
    #: ``tf.data.experimental.UNKNOWN_CARDINALITY``
    UNKNOWN_CARDINALITY = UNKNOWN_CARDINALITY

    @staticmethod
    def cardinality(dataset: Dataset) -> int:
        """``tf.data.experimental.cardinality(dataset)``: ``dataset.cardinality()``."""
        return dataset.cardinality()

    @staticmethod
    def ignore_errors(log_warning: bool = False) -> Callable[[Dataset], Dataset]:
        """``tf.data.experimental.ignore_errors()``, for ``dataset.apply(...)``:
        ``dataset.ignore_errors(log_warning)``."""
        return lambda dataset: dataset.ignore_errors(log_warning)


__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "Dataset",
    "TFRecordDataset",
    "experimental",
]

#: A name TensorFlow has and this library leaves to NumPy: the error gives its one-liner.
__getattr__ = _missing_attributes(__name__)
