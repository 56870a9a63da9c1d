"""``tfr.compat``: TensorFlow's ``tf.compat.v1`` spellings that TFRecord scripts still use.

``tf.compat.v1.io.tf_record_iterator(path)`` becomes
``tfr.compat.v1.io.tf_record_iterator(path)``, the same function as
:func:`tfrecord_lite.tf_record_iterator`. ``tfr.compat.v1`` holds the TensorFlow 1
names a TFRecord script uses: ``io``, ``python_io``, ``train``, ``data``, ``image``,
``TFRecordReader``, ``FixedLenFeature`` & co., ``decode_raw`` and the TF1
``parse_*`` functions, whose third positional argument is ``name`` (TF1's order:
``parse_example(serialized, features, name=None, example_names=None)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any, Optional

from . import data, image, io, python_io, train
from ._data import TFRecordDataset
from ._decoding import decode_raw
from ._decoding import missing_attributes as _missing_attributes
from ._examples import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    SparseFeature,
    VarLenFeature,
    parse_single_sequence_example,
)
from ._examples import (
    parse_example as _parse_example,
)
from ._examples import (
    parse_single_example as _parse_single_example,
)
from ._files import TFRecordCompressionType, TFRecordOptions, TFRecordReader, tf_record_iterator

__all__ = ["v1"]


def _v1_parse_example(
    serialized: Sequence[Any],
    features: Mapping[str, Any],
    name: Optional[str] = None,
    example_names: Optional[Sequence[Any]] = None,
) -> dict[str, Any]:
    """``tf.compat.v1.parse_example``: :func:`tfrecord_lite.parse_example` in TF1's argument order."""
    return _parse_example(serialized, features, example_names=example_names, name=name)


def _v1_parse_single_example(
    serialized: Any,
    features: Mapping[str, Any],
    name: Optional[str] = None,
    example_names: Optional[Any] = None,
) -> dict[str, Any]:
    """``tf.compat.v1.parse_single_example`` (TF1's argument order)."""
    return _parse_single_example(serialized, features, example_names=example_names, name=name)


_v1_parse_example.__name__ = _v1_parse_example.__qualname__ = "parse_example"
_v1_parse_single_example.__name__ = _v1_parse_single_example.__qualname__ = "parse_single_example"

_V1_IO = {name: getattr(io, name) for name in io.__all__}
_V1_IO.update(
    parse_example=_v1_parse_example,
    parse_single_example=_v1_parse_single_example,
    tf_record_iterator=tf_record_iterator,
)

#: ``tfr.compat.v1``: TensorFlow 1's names for TFRecord scripts.
v1 = SimpleNamespace(
    io=SimpleNamespace(**_V1_IO, __all__=sorted(_V1_IO)),
    python_io=python_io,
    train=train,
    data=data,
    image=image,
    TFRecordReader=TFRecordReader,
    TFRecordDataset=TFRecordDataset,
    TFRecordOptions=TFRecordOptions,
    TFRecordCompressionType=TFRecordCompressionType,
    FixedLenFeature=FixedLenFeature,
    FixedLenSequenceFeature=FixedLenSequenceFeature,
    SparseFeature=SparseFeature,
    VarLenFeature=VarLenFeature,
    decode_raw=decode_raw,
    parse_example=_v1_parse_example,
    parse_single_example=_v1_parse_single_example,
    parse_single_sequence_example=parse_single_sequence_example,
    __all__=[
        "FixedLenFeature",
        "FixedLenSequenceFeature",
        "SparseFeature",
        "TFRecordCompressionType",
        "TFRecordDataset",
        "TFRecordOptions",
        "TFRecordReader",
        "VarLenFeature",
        "data",
        "decode_raw",
        "image",
        "io",
        "parse_example",
        "parse_single_example",
        "parse_single_sequence_example",
        "python_io",
        "train",
    ],
)

#: A name TensorFlow has and this library leaves to NumPy: the error gives its one-liner.
__getattr__ = _missing_attributes(__name__)
