"""Float32 values of a protobuf ``FloatList``, every bit kept.

Protobuf hands float values to Python as ``float`` (a C double): widening a
float32 signalling NaN to a double quiets it (sets its quiet bit), so values read
that way would differ, in their bits, from what the fast engines give (they copy
the four bytes of each value, as TensorFlow's own fast parser does). The
reference path reads float lists here: the values as NumPy reads them, and where
any of them is a NaN, the list's bytes themselves (the message keeps each value's
four bytes as they were in the record, and writes them back as one packed run).
So every engine and every batch size gives the same bits, NaN payloads included.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import ParseError
from ._wire import decode_varint

__all__ = ["float_values"]


def float_values(float_list: Any) -> np.ndarray:
    """The values of a ``FloatList`` message as a float32 array, bit for bit."""
    values = np.array(float_list.value, dtype=np.float32)
    if not values.size or not np.isnan(values).any():
        return values
    raw = float_list.SerializeToString()  # field 1, packed: 0x0a, length, the bytes
    size, start = decode_varint(raw, 1)
    if raw[:1] != b"\x0a" or size != 4 * values.size or start + size != len(raw):
        raise ParseError("a FloatList that does not write back as one packed run")
    return np.frombuffer(raw, dtype="<f4", count=values.size, offset=start).astype(np.float32)
