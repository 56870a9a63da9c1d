"""The TFRecord record format: its constants, the one header check, and its errors.

Format
------
A TFRecord file is a plain concatenation of records; there is no file header,
magic number or trailer, so a file with no records is 0 bytes long. Each record
is::

    offset  size  field
    0       8     length       uint64, little-endian: number of data bytes
    8       4     length_crc   uint32, little-endian: mask(crc32c(the 8 length bytes))
    12      n     data         the record (usually a serialized tf.train.Example)
    12+n    4     data_crc     uint32, little-endian: mask(crc32c(data))

so every record costs :data:`RECORD_OVERHEAD` (16) bytes: a :data:`HEADER_SIZE`
(12-byte) header and a :data:`FOOTER_SIZE` (4-byte) footer; a zero-length record is
valid (16 bytes). ``mask`` is defined in :mod:`tfrecord_lite._record._crc`. Golden
bytes::

    b""      -> 00000000 00000000 29039807 d8ea82a2
    b"foo"   -> 03000000 00000000 b099490e 666f6f 618abefe

A GZIP or ZLIB file is this same byte stream compressed as a whole; the record
layer only ever sees the decompressed stream.

Reading rules (TensorFlow's ``RecordReader``, with one deliberate difference):

* length CRC wrong      -> :class:`CorruptRecordError` at the record's offset
  (:func:`header_error`)
* data CRC wrong        -> :class:`CorruptRecordError` at offset + 12, the data
  (:func:`data_error`)
* stream ends in data or footer -> :class:`TruncatedRecordError` at the record's
  offset (:func:`cut_short`)
* stream ends inside the 12-byte header -> :class:`TruncatedRecordError`
  (TensorFlow stops silently here; a file cut short is data loss and we say so)

This module is the one place that knows the layout: :func:`record_header` and
:func:`record_footer` write it, :func:`header_ok` is the one check of a header
(the masked CRC of its 8 length bytes), :func:`data_ok` the one check of a
record's data, :func:`unframe` both on one whole framed record.
"""

from __future__ import annotations

import functools
import struct
from typing import Optional, Union

from .._errors import CorruptRecordError, RecordTooLargeError, TruncatedRecordError
from ._crc import crc32c, mask, unmask

__all__ = [
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "RECORD_OVERHEAD",
    "as_buffer",
    "byte_view",
    "cut_short",
    "data_error",
    "data_ok",
    "footer_of_crc",
    "header_error",
    "header_ok",
    "length_crc",
    "record_footer",
    "record_header",
    "too_large",
    "truncated_error",
    "unframe",
]

Buffer = Union[bytes, bytearray, memoryview]

#: Bytes before the data: u64 length + u32 masked CRC of the length.
HEADER_SIZE = 12
#: Bytes after the data: u32 masked CRC of the data.
FOOTER_SIZE = 4
#: Framing bytes per record.
RECORD_OVERHEAD = HEADER_SIZE + FOOTER_SIZE
#: The largest length a header can hold.
MAX_LENGTH = 2**64 - 1

#: The length field.
LENGTH = struct.Struct("<Q")
#: A CRC field (the length's, or the data's footer).
CRC = struct.Struct("<I")
#: The whole header: (length, masked CRC of the length bytes).
HEADER = struct.Struct("<QI")


@functools.lru_cache(maxsize=4096)
def length_crc(length: int) -> int:
    """The masked CRC a header stores for a record of ``length`` data bytes (cached)."""
    return mask(crc32c(LENGTH.pack(length)))


@functools.lru_cache(maxsize=4096)
def record_header(length: int) -> bytes:
    """Return the 12-byte header of a record of ``length`` data bytes.

    Cached: a header depends only on the length, and records written by one
    writer often share a few lengths.
    """
    if not 0 <= length <= MAX_LENGTH:
        raise ValueError(f"record length must be in [0, 2**64), got {length}")
    return HEADER.pack(length, length_crc(length))


def footer_of_crc(crc: int) -> bytes:
    """The 4-byte footer of a record whose data has the (unmasked) CRC-32C ``crc``."""
    return CRC.pack(mask(crc))


def record_footer(data: Buffer) -> bytes:
    """Return the 4-byte footer of a record: the masked CRC of its data."""
    return footer_of_crc(crc32c(data))


def header_ok(buf: Buffer, pos: int = 0) -> bool:
    """Whether the 12 bytes at ``pos`` are a valid header: the masked CRC of the
    8 length bytes matches the 4 after them. The one header check of the package."""
    (stored,) = CRC.unpack_from(buf, pos + 8)
    return bool(mask(crc32c(buf[pos : pos + 8])) == stored)


def byte_view(buf: Buffer) -> memoryview:
    """``buf`` as a flat view of bytes."""
    view = memoryview(buf)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    return view


def data_ok(buf: Buffer, pos: int, length: int) -> bool:
    """Whether the record at ``pos`` (header already checked, ``length`` data bytes,
    all of it in ``buf``) passes its data CRC."""
    view = byte_view(buf)
    end = pos + HEADER_SIZE + length
    (stored,) = CRC.unpack_from(view, end)
    return bool(mask(crc32c(view[pos + HEADER_SIZE : end])) == stored)


def unframe(buf: Buffer) -> Optional[bytes]:
    """The data of ``buf`` when it is exactly one whole valid record (header and data
    CRCs checked), else ``None`` (the caller then finds out what is wrong)."""
    if len(buf) < RECORD_OVERHEAD:
        return None
    (length,) = LENGTH.unpack_from(buf, 0)
    if length + RECORD_OVERHEAD != len(buf) or not header_ok(buf) or not data_ok(buf, 0, length):
        return None
    return bytes(buf[HEADER_SIZE : HEADER_SIZE + length])


def as_buffer(data: object) -> Buffer:
    """A record given by the caller as a flat byte buffer (``TypeError`` for ``str``)."""
    if isinstance(data, (bytes, bytearray)):
        return data
    if isinstance(data, memoryview):
        # len() of a multi-dimensional or wide-item view is not its byte count.
        if data.ndim == 1 and data.itemsize == 1 and data.contiguous:
            return data
        return data.cast("B") if data.c_contiguous else data.tobytes()
    if isinstance(data, str):
        raise TypeError(
            "a record must be bytes, got str: encode it first (e.g. s.encode()) "
            "or build an Example with tfrecord_lite.encode_example()"
        )
    try:
        view = memoryview(data)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"a record must be a bytes-like object, got {type(data).__name__}"
        ) from None
    return as_buffer(view)


# --------------------------------------------------------------------------- errors


def header_error(buf: Buffer, pos: int, index: int, offset: int) -> CorruptRecordError:
    """The error for the bad header at ``pos`` of ``buf`` (record ``index`` at ``offset``)."""
    (stored,) = CRC.unpack_from(buf, pos + 8)
    actual = crc32c(buf[pos : pos + 8])
    return CorruptRecordError(
        "corrupted record: the CRC32C of its length field does not match "
        f"(stored {unmask(stored):#010x}, computed {actual:#010x}); "
        "this is not a TFRecord file, the wrong compression was assumed, "
        "or the file is damaged",
        part="header",
        offset=offset,
        index=index,
    )


def data_error(data: Buffer, stored: int, index: int, offset: int) -> CorruptRecordError:
    """The error for ``data`` whose footer holds ``stored`` (``offset``: where the data starts)."""
    actual = crc32c(data)
    return CorruptRecordError(
        f"corrupted record: the CRC32C of its {len(data)} data bytes does not match "
        f"(stored {unmask(stored):#010x}, computed {actual:#010x}); the file is damaged",
        part="data",
        offset=offset,
        index=index,
    )


def truncated_error(
    what: str, need: int, have: int, offset: int, index: int
) -> TruncatedRecordError:
    """The stream ends inside the record's ``what`` (header, data, footer)."""
    return TruncatedRecordError(
        f"truncated record: the stream ends inside the record's {what} "
        f"({have} of {need} bytes present); the file was cut short or is still being written",
        expected=need,
        available=have,
        offset=offset,
        index=index,
    )


def cut_short(length: Optional[int], have: int, offset: int, index: int) -> TruncatedRecordError:
    """The record at ``offset`` has only ``have`` bytes; ``length`` is its length field
    (``None`` when its header is not whole)."""
    if length is None or have < HEADER_SIZE:
        return truncated_error("header", HEADER_SIZE, have, offset, index)
    what = "data" if have < HEADER_SIZE + length else "footer"
    return truncated_error(what, length + RECORD_OVERHEAD, have, offset, index)


def too_large(
    length: int, limit: int, offset: int, index: int, *, default: bool = False
) -> RecordTooLargeError:
    """A length field over ``limit`` (``default``: the GZIP/ZLIB readers' own bound)."""
    what = (
        f"the {limit} bytes a GZIP/ZLIB reader buffers for one record by default"
        if default
        else f"max_record_size={limit}"
    )
    return RecordTooLargeError(
        f"record too large: its length field claims {length} data bytes, more than "
        f"{what}; the length is damaged or hostile, or pass a larger max_record_size "
        "to read it",
        length=length,
        limit=limit,
        offset=offset,
        index=index,
    )
