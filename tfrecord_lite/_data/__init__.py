"""``tf.data``-style datasets: the file source, the ops, caching and collation.

Other units import from this package only, and only these names.
"""

from ._dataset import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    Dataset,
    TFRecordDataset,
    collate,
)

__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "Dataset",
    "TFRecordDataset",
    "collate",
]
