"""Record offsets: where every record of a plain file starts, from its headers only.

:func:`record_offsets` follows the length fields of a plain TFRecord file from its
start, checking each header (:func:`~tfrecord_lite._record.header_ok`) and jumping
over the data, so a file of any size is gone through in bounded memory and large
records are never read. It reads blocks of :data:`OFFSETS_BLOCK` bytes and takes every
header that lies in the block before reading again (a file of small records costs one
read per block, not one per record). Index creation, random access without an index
and ``mode="a"``'s check of a file's tail all take their offsets from it.

The block scan of :mod:`tfrecord_lite._record._scan` reads headers too, but over a
buffer it holds whole, with every data byte checked: a different job.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Optional

from .._record import HEADER_SIZE, LENGTH, RECORD_OVERHEAD, cut_short, header_error, header_ok
from ._sniff import check_start

__all__ = ["OFFSETS_BLOCK", "record_offsets"]

#: Bytes read at a time by :func:`record_offsets`.
OFFSETS_BLOCK = 1024 * 1024


def record_offsets(
    f: IO[bytes], size: int, *, path: Optional[str] = None
) -> Iterator[tuple[int, int]]:
    """Yield ``(offset, length)`` of each record of the plain file ``f`` of ``size`` bytes
    (``length``: its data bytes), in order, from offset 0.

    A bad header is a :class:`~tfrecord_lite.CorruptRecordError`, a file ending inside
    a record a :class:`~tfrecord_lite.TruncatedRecordError`, raised when the reading gets
    there (after the records before it), with ``path``, offset and index. Data CRCs
    are not checked (the data is not read).
    """
    buf = b""
    buf_start = 0
    offset = 0
    index = 0
    while offset < size:
        pos = offset - buf_start
        if pos < 0 or pos + HEADER_SIZE > len(buf):
            f.seek(offset)
            buf = f.read(OFFSETS_BLOCK)
            buf_start = offset
            pos = 0
            if offset == 0:
                check_start(buf, path)  # an image, JSON, text...: said in one line
            if len(buf) < HEADER_SIZE:
                raise cut_short(None, len(buf), offset, index).with_location(path=path)
        if not header_ok(buf, pos):
            raise header_error(buf, pos, index, offset).with_location(path=path)
        (length,) = LENGTH.unpack_from(buf, pos)
        if offset + RECORD_OVERHEAD + length > size:
            err = cut_short(length, size - offset, offset, index)
            raise err.with_location(path=path)
        yield offset, length
        offset += RECORD_OVERHEAD + length
        index += 1
