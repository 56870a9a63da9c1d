"""The column kinds of the compiled Example writer, by the header in front of each
record's data.

Their own module so that the driver (:mod:`._jit_encode`) and the kernels
(:mod:`._jit_encode_kernels`, loaded by :func:`._jit._load`) share them without
importing each other.
"""

from __future__ import annotations

__all__ = ["BYTES", "FEATURE", "FLOATS", "INTS"]

#: Column kinds, by the header in front of each record's data: packed varints of
#: an integer array; a FloatList of bytes (float32 rows); a BytesList of one value;
#: none (the data is a whole serialized Feature).
INTS, FLOATS, BYTES, FEATURE = 0, 1, 2, 3
