"""The protobuf reference: what every engine leaves to it, read record by record.

Records are parsed with protobuf (:func:`decode_records`; a record protobuf refuses
is a :class:`~tfrecord_lite.ParseError` worded as TensorFlow's), and each key read
becomes a :class:`~._output.FastColumn` from the parsed feature maps
(:func:`reference_columns`), with TensorFlow's errors for a value of another kind. Its
results define the engines': they give the same columns for every record they read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional, Protocol

import numpy as np
from google.protobuf.message import DecodeError

from ... import example_pb2
from ..._errors import ParseError
from .._floats import float_values
from .._schema import DType, dtype_of_kind, float32, string
from .._where import preview
from ._output import FastColumn

__all__ = ["Located", "decode_records", "reference_column", "reference_columns"]


class Located(Protocol):
    """Where the records of a parse are, for its error messages (the parse's
    ``_Where``, worded as TensorFlow's parse ops word them)."""

    def name(self, i: int) -> str:
        """Record ``i`` 's name (``example_names``)."""
        ...

    def type_error(self, i: int, key: str, got: DType, expected: DType) -> ParseError:
        """The error of record ``i`` holding another kind of list for ``key``."""
        ...


def decode_records(
    records: Sequence[bytes], where: Located, message: Any, indices: Optional[Sequence[int]] = None
) -> list[Any]:
    """Parse each record with protobuf; ``indices`` are the records' batch positions."""
    out = []
    parse = message.FromString
    for i, rec in zip(range(len(records)) if indices is None else indices, records):
        try:
            out.append(parse(rec))
        except (DecodeError, RuntimeError, ValueError) as err:
            if message is example_pb2.Example:
                text = f"Could not parse example input, value: '{preview(rec)}' ({err})"
            else:
                text = (
                    f"Invalid protocol message input, example id: {where.name(i)}: could not "
                    f"parse sequence example input, value: '{preview(rec)}' ({err})"
                )
            raise ParseError(text, index=i) from None
    return out


def _feature_values(
    feature: Any, key: str, dtype: DType, i: int, where: Located
) -> Optional[list[Any]]:
    """The values of one ``Feature`` if it has the right kind; ``None`` if it has none."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return None
    if kind != dtype.kind:
        raise where.type_error(i, key, dtype_of_kind(kind), dtype)
    return list(getattr(feature, kind).value)


def reference_column(
    feature_maps: list[Any],
    key: str,
    dtype: DType,
    where: Located,
    indices: Optional[Sequence[int]] = None,
) -> FastColumn:
    """Key ``key`` 's column over protobuf's parsed feature maps; the error of a value
    of another kind than ``dtype``, worded as TensorFlow does."""
    n = len(feature_maps)
    present = np.zeros(n, dtype=bool)
    counts = np.zeros(n, dtype=np.int64)
    chunks: list[list[Any]] = []
    for j, fmap in enumerate(feature_maps):
        feature = fmap.get(key)
        if feature is None:
            continue
        vals = _feature_values(feature, key, dtype, j if indices is None else indices[j], where)
        if vals is None:
            continue
        present[j] = True
        counts[j] = len(vals)
        chunks.append(vals)
    flat = [v for chunk in chunks for v in chunk]
    if dtype is string:
        values = np.empty(len(flat), dtype=object)
        values[:] = flat
    else:
        values = np.array(flat, dtype=dtype.np_dtype)
        if dtype is float32 and np.isnan(values).any():
            # NaNs: their bits as the record holds them (signalling ones included)
            lists = [fmap[key].float_list for fmap, has in zip(feature_maps, present) if has]
            values = np.concatenate([float_values(f) for f in lists])
    return FastColumn(present, counts, values)


def reference_columns(
    feature_maps: list[Any],
    needed: Mapping[str, DType],
    where: Located,
    indices: Optional[Sequence[int]] = None,
) -> dict[str, FastColumn]:
    """The reference's columns: one :class:`~._output.FastColumn` per key read, from
    protobuf's parsed feature maps (``indices``: the records' batch positions)."""
    return {
        key: reference_column(feature_maps, key, dtype, where, indices)
        for key, dtype in needed.items()
    }
