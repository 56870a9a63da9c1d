"""The kind of a ``Feature``, numbered once for every reader and writer, and its tags.

A ``tf.train.Feature`` holds one of three lists (``oneof kind``): ``bytes_list``
(field 1), ``float_list`` (field 2) or ``int64_list`` (field 3). Every part of
the package that handles Features by number uses the numbering below, which is
the field number: the value classifier and encoders (:mod:`._classify`,
:mod:`._build`, :mod:`._jit_encode`), the NumPy parse engine and the compiled
kernels of both directions (numba reads these module-level integers as constants
when it compiles, so this module is one of the kernels' sources that name their
cache, :data:`~._engines._kernels.KERNEL_SOURCES`).

A list's tag in its ``Feature`` is ``(field << 3) | 2`` (length-delimited):
``0x0a``, ``0x12``, ``0x1a``.
"""

from __future__ import annotations

from typing import Final

import numpy as np

__all__ = [
    "KIND_BYTES",
    "KIND_EMPTY",
    "KIND_FEATURE",
    "KIND_FLOAT",
    "KIND_INT64",
    "KIND_OF_DTYPE",
    "KIND_OF_LIST",
    "KIND_OF_TAG",
    "LIST_OF_TAG",
    "TAG_BYTES_LIST",
    "TAG_FLOAT_LIST",
    "TAG_INT64_LIST",
]

#: A ``Feature()`` with no kind set (TensorFlow's Example parser counts it as missing).
KIND_EMPTY: Final = 0
#: ``bytes_list``.
KIND_BYTES: Final = 1
#: ``float_list``.
KIND_FLOAT: Final = 2
#: ``int64_list``.
KIND_INT64: Final = 3
#: Writers only: a whole serialized ``Feature``, copied as it is.
KIND_FEATURE: Final = 4

#: Each list's tag in a ``Feature``.
TAG_BYTES_LIST: Final = (KIND_BYTES << 3) | 2
TAG_FLOAT_LIST: Final = (KIND_FLOAT << 3) | 2
TAG_INT64_LIST: Final = (KIND_INT64 << 3) | 2

#: Kind by protobuf's name of the list.
KIND_OF_LIST: Final = {"bytes_list": KIND_BYTES, "float_list": KIND_FLOAT, "int64_list": KIND_INT64}
#: Kind by the name of the dtype a spec reads it as.
KIND_OF_DTYPE: Final = {"string": KIND_BYTES, "float32": KIND_FLOAT, "int64": KIND_INT64}
#: Protobuf's name of the list by its tag in a ``Feature``.
LIST_OF_TAG: Final = {
    TAG_BYTES_LIST: "bytes_list",
    TAG_FLOAT_LIST: "float_list",
    TAG_INT64_LIST: "int64_list",
}

#: Kind by a ``Feature`` 's first byte (-1: no list's tag), for a vectorized look-up.
KIND_OF_TAG = np.full(256, -1, dtype=np.int8)
KIND_OF_TAG[[TAG_BYTES_LIST, TAG_FLOAT_LIST, TAG_INT64_LIST]] = [KIND_BYTES, KIND_FLOAT, KIND_INT64]
KIND_OF_TAG.flags.writeable = False
