"""What to do about a spec that does not fit the records: hints added to parse errors.

TensorFlow's wording of an error comes first (it says what is wrong); a hint after
it says what to change: the close key a record does have when a required one is
missing (``Did you mean 'image/height'?``, by :mod:`difflib`), a default or a
``VarLenFeature`` when only some records lack the key, and ``VarLenFeature`` /
``RaggedFeature`` when a ``FixedLenFeature`` key holds lists of different lengths.
Hints are built from the columns every engine extracts alike (and, for a missing
key, the record's own keys, read by protobuf), so every engine words them the same.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection
from typing import Optional

import numpy as np

from .. import example_pb2
from .._errors import ParseError, TFRecordError

__all__ = ["count_hint", "located", "missing_hint", "record_keys", "with_hint"]

#: Keys listed when no close one is found.
LISTED_KEYS = 8


def with_hint(err: ParseError, hint: str) -> ParseError:
    """``err`` with ``hint`` after its message (the same class and place)."""
    if not hint:
        return err
    new = type(err).__new__(type(err))
    new.__dict__.update(err.__dict__)
    sep = " " if err.message.endswith((".", "?", ")")) else ". "
    TFRecordError.__init__(
        new, f"{err.message}{sep}{hint}", path=err.path, offset=err.offset, index=err.index
    )
    return new


def _spec_name(dtype_name: str) -> str:
    return f"tfr.{dtype_name}"


def count_hint(key: str, dtype_name: str, size: int, counts: np.ndarray) -> str:
    """What to read ``key`` with when records hold ``counts`` values where a
    ``FixedLenFeature`` wants ``size``."""
    if not len(counts):
        return ""
    lo, hi = int(counts.min()), int(counts.max())
    dtype = _spec_name(dtype_name)
    if lo != hi:
        return (
            f"Its records hold {lo} to {hi} values: for lists whose length varies, read "
            f"{key!r} with tfr.VarLenFeature({dtype}) or tfr.RaggedFeature({dtype})."
        )
    if lo != size:
        return (
            f"Its records hold {lo} values each: tfr.FixedLenFeature([{lo}], {dtype}) reads them."
        )
    return ""


def record_keys(record: bytes) -> list[str]:
    """The feature keys of one serialized Example (none where it does not parse)."""
    try:
        return list(example_pb2.Example.FromString(record).features.feature)
    except Exception:
        return []


def missing_hint(key: str, keys: Collection[str], read: Collection[str], elsewhere: bool) -> str:
    """What to do about ``key``, missing from a record that has ``keys`` (``read``:
    the keys the spec reads; ``elsewhere``: whether other records have ``key``)."""
    if elsewhere:
        return (
            f"Other records have {key!r}: give its FixedLenFeature a default_value, or read "
            "it with tfr.VarLenFeature."
        )
    others = sorted(set(keys) - set(read))
    close = difflib.get_close_matches(key, others, n=1, cutoff=0.6)
    if close:
        return f"Did you mean {close[0]!r}? (the record has that key)"
    if not keys:
        return "The record has no features."
    shown = ", ".join(repr(k) for k in sorted(keys)[:LISTED_KEYS])
    more = f" and {len(keys) - LISTED_KEYS} more" if len(keys) > LISTED_KEYS else ""
    return f"The record's keys: {shown}{more}."


def located(err: ParseError, path: Optional[str], offset: int, index: int) -> ParseError:
    """``err`` placed in a file: its path, the record's byte offset and its index there."""
    new = type(err).__new__(type(err))
    new.__dict__.update(err.__dict__)
    TFRecordError.__init__(new, err.message, path=path, offset=offset, index=index)
    return new
