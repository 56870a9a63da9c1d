"""Framing records: the bytes a TFRecord file holds for records given as data (no I/O).

The layout is :mod:`tfrecord_lite._record._format`'s. :func:`encode_record` frames
one record as TensorFlow's ``RecordWriter`` does; :func:`frame_parts` frames many at
once (data CRCs masked together with NumPy, headers from a per-length cache);
:func:`frame_rows` frames records laid out as the rows of an array, in place;
:class:`FramedRecords` holds records framed already, as one buffer. Decoding is
:mod:`tfrecord_lite._record._decoder`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Union, cast

import numpy as np

from ._crc import crc32c, mask_array
from ._decoder import iter_records
from ._format import (
    FOOTER_SIZE,
    HEADER_SIZE,
    RECORD_OVERHEAD,
    as_buffer,
    record_footer,
    record_header,
)

__all__ = [
    "FramedRecords",
    "encode_record",
    "encode_records",
    "frame_parts",
    "frame_rows",
]

Buffer = Union[bytes, bytearray, memoryview]

#: Lists of at least this many records get their footers from NumPy (masked all at once).
_FRAME_VECTOR_MIN = 32


def _footers(crcs: np.ndarray) -> np.ndarray:
    """The 4-byte footers (masked CRCs, little-endian) of records with these CRCs: (n, 4) uint8."""
    return mask_array(crcs).astype("<u4").view(np.uint8).reshape(len(crcs), FOOTER_SIZE)


def _frame(records: Sequence[Buffer]) -> tuple[list[Buffer], int]:
    """:func:`frame_parts` of 1-D byte buffers."""
    n = len(records)
    size = RECORD_OVERHEAD * n
    parts: list[Buffer]
    if n < _FRAME_VECTOR_MIN:  # NumPy's per-call overhead would cost more than it saves
        parts = []
        for r in records:
            parts += (record_header(len(r)), r, record_footer(r))
            size += len(r)
        return parts, size
    crcs = np.fromiter(map(crc32c, records), dtype=np.uint64, count=n)
    footers = _footers(crcs).tobytes()
    lengths = list(map(len, records))
    parts = [b""] * (3 * n)
    parts[0::3] = map(record_header, lengths)  # cached per length
    parts[1::3] = records
    parts[2::3] = [footers[i : i + FOOTER_SIZE] for i in range(0, FOOTER_SIZE * n, FOOTER_SIZE)]
    return parts, size + sum(lengths)


def frame_parts(records: list[bytes]) -> tuple[list[bytes], int]:
    """Frame many records at once: (header, data, footer, ... parts, total size).

    ``b"".join(parts)`` is the framed stream. Data CRCs are one call per record,
    masked together with NumPy; headers come from the per-length cache.
    """
    parts, size = _frame(records)
    return cast("list[bytes]", parts), size


def frame_rows(rows: np.ndarray) -> None:
    """Frame records laid out as the rows of a 2-D ``uint8`` array, in place.

    Each row is one framed record of ``rows.shape[1] - 16`` data bytes: the data
    must already be in ``rows[:, 12:-4]``; this writes the 12-byte headers and the
    4-byte footers around it, so that ``rows.tobytes()`` is the framed stream. The
    CRCs are taken from the array itself (no ``bytes`` object per record).
    """
    m, width = rows.shape
    size = width - RECORD_OVERHEAD
    if size < 0:
        raise ValueError(f"rows of {width} bytes cannot hold a record's 16 framing bytes")
    if not m:
        return
    rows[:, :HEADER_SIZE] = np.frombuffer(record_header(size), dtype=np.uint8)
    if size:
        data = rows[:, HEADER_SIZE : HEADER_SIZE + size]
        # One void scalar per row (a buffer over the row's data): the CRC reads it in place.
        cells = data.view(np.dtype((np.void, size))).reshape(m)
        crcs = np.fromiter(map(crc32c, cells), dtype=np.uint64, count=m)
    else:
        crcs = np.full(m, crc32c(b""), dtype=np.uint64)
    rows[:, HEADER_SIZE + size :] = _footers(crcs)


class FramedRecords:
    """Records already framed: ``count`` whole records in one buffer, as a file holds them.

    :class:`~tfrecord_lite.TFRecordWriter`'s ``write_all`` appends the buffer as it
    is; iterating gives each record's data (so any other consumer of an iterable of
    records takes it too). The buffer must not change afterwards.
    """

    __slots__ = ("buffer", "count", "nbytes")

    def __init__(self, buffer: Buffer, count: int) -> None:
        self.buffer = buffer
        self.count = count
        self.nbytes = memoryview(buffer).nbytes

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[bytes]:
        return iter_records(self.buffer)

    def __repr__(self) -> str:
        return f"FramedRecords(count={self.count}, nbytes={self.nbytes})"


def encode_record(data: Buffer) -> bytes:
    """Frame one record: header + data + footer, as TensorFlow's ``RecordWriter`` does.

    >>> encode_record(b"foo").hex()
    '0300000000000000b099490e666f6f618abefe'
    """
    data = as_buffer(data)
    return b"".join((record_header(len(data)), data, record_footer(data)))


def encode_records(records: Iterable[Buffer]) -> bytes:
    """Frame many records into one bytes object (what a plain TFRecord file holds)."""
    parts, _ = _frame([r if type(r) is bytes else as_buffer(r) for r in records])
    return b"".join(parts)
