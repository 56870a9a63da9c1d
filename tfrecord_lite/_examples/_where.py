"""Where a parse error happened, worded as TensorFlow's parse ops word it.

:class:`_Where` builds the :class:`~tfrecord_lite.ParseError` s of every parse:
``Name: <name>, Key: k, Index: i.  ...`` in a batch, ``Key: k.  ...`` for one
record, and the other wordings TensorFlow uses for sparse keys and a
SequenceExample's context.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional

from .._errors import ParseError
from ._schema import (
    DType,
)

#: TensorFlow's names for the dtypes in error messages: DataTypeString, and the
#: shorter names its value-count messages use.
_TF_NAME = {"int64": "int64", "float32": "float", "string": "string"}


_TF_COUNT_NAME = {"int64": "int64", "float32": "float", "string": "bytes"}


def _tf_name(dtype: DType) -> str:
    return _TF_NAME[dtype.name]


def _count_name(dtype: DType) -> str:
    return _TF_COUNT_NAME[dtype.name]


def _shape_str(shape: Sequence[Any]) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def preview(record: bytes, limit: int = 40) -> str:
    """The first ``limit`` bytes of ``record``, escaped, as TensorFlow's parse errors
    show a record."""
    text = record[:limit].decode("latin-1").encode("unicode_escape").decode("ascii")
    return text + ("..." if len(record) > limit else "")


class _Where:
    """Error-message context, worded as TensorFlow's parse ops word it.

    Batch errors start ``Name: <name>, `` and name the record as ``Key: k, Index: i.``;
    single-record errors say ``Key: k.``. ``sparse_keys`` are keys read only by
    VarLen/Sparse/Ragged specs, whose type errors TensorFlow words differently from
    dense ones; ``section`` is ``"context"`` for a SequenceExample's context, whose
    messages TensorFlow words in yet another way.
    """

    def __init__(
        self,
        names: Optional[list[str]],
        batch: bool,
        sparse_keys: frozenset[str] = frozenset(),
        section: str = "example",
    ) -> None:
        self.names = names
        self.batch = batch
        self.sparse_keys = sparse_keys
        self.section = section

    def name(self, i: int) -> str:
        return self.names[i] if self.names else "<unknown>"

    def prefix(self, i: int) -> str:
        if not self.batch:
            return ""
        return f"Name: {self.name(i)}, "

    def key(self, i: int, key: str) -> str:
        """``Key: k, Index: i.  `` (batch) or ``Key: k.  `` (one record)."""
        return f"Key: {key}, Index: {i}.  " if self.batch else f"Key: {key}.  "

    def error(self, i: int, key: str, text: str) -> ParseError:
        return ParseError(self.prefix(i) + text, key=key, index=i)

    def type_error(self, i: int, key: str, got: DType, expected: DType) -> ParseError:
        """A feature holds another kind of list than its spec's dtype."""
        if self.section == "context":
            return self.error(
                i,
                key,
                f"Context feature: {key}.  Data types don't match. Expected type: "
                f"{_tf_name(expected)}, Actual type: {_tf_name(got)}",
            )
        if key in self.sparse_keys:
            text = (
                f"Data types don't match. Expected type: {_tf_name(expected)}, "
                f"Actual type: {_tf_name(got)}"
            )
        else:
            text = (
                f"Data types don't match. Data type: {_tf_name(got)} "
                f"but expected type: {_tf_name(expected)}"
            )
        return self.error(i, key, self.key(i, key) + text)

    def required_error(self, i: int, key: str, dtype: DType) -> ParseError:
        text = f"Feature: {key} (data type: {_tf_name(dtype)}) is required but could not be found."
        if self.section == "context":  # TensorFlow names no record here
            return ParseError(text, key=key, index=i)
        return self.error(i, key, text)

    def count_error(
        self, i: int, key: str, dtype: DType, count: int, shape: Sequence[Any]
    ) -> ParseError:
        if self.section == "context":
            size = math.prod(shape)
            return ParseError(
                f"Inconsistent max number of elements for feature {key}: expected {size}, "
                f"but found {count}",
                key=key,
                index=i,
            )
        return self.error(
            i,
            key,
            f"{self.key(i, key)}Number of {_count_name(dtype)} values != expected.  "
            f"Values size: {count} but output shape: {_shape_str(shape)}",
        )
