"""``tf.data``-style datasets: the file source, the ops, caching and collation.

Other units import from this package only, and only these names.
"""

from ._collate import collate
from ._dataset import Dataset
from ._op import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from ._state import IteratorStateError
from ._tfrecord_dataset import TFRecordDataset

__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "Dataset",
    "IteratorStateError",
    "TFRecordDataset",
    "collate",
]
