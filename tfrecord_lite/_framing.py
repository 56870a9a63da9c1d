"""TFRecord framing: records in and out of bytes, with no I/O (sans-I/O).

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

so every record costs 16 bytes of overhead, and a zero-length record is valid
(16 bytes). ``mask`` is defined in :mod:`tfrecord_lite._crc`. Golden bytes::

    b""      -> 00000000 00000000 29039807 d8ea82a2
    b"foo"   -> 03000000 00000000 b099490e 666f6f 618abefe

A GZIP or ZLIB file is this same byte stream compressed as a whole; this module
only ever sees the decompressed stream.

Reading rules (TensorFlow's ``RecordReader``, with one deliberate difference):

* length CRC wrong      -> :class:`CorruptRecordError` at the record's offset
* data CRC wrong        -> :class:`CorruptRecordError` at offset + 12 (the data)
* stream ends in data or footer -> :class:`TruncatedRecordError` at the record's offset
* stream ends inside the 12-byte header -> :class:`TruncatedRecordError`
  (TensorFlow stops silently here; a file cut short is data loss and we say so)

Nothing here allocates according to a length field before the bytes it
describes have arrived, so a hostile 16-byte input that claims a 2**62-byte
record costs nothing.

API: :func:`encode_record` frames one record; :func:`iter_records` decodes a
complete buffer; :class:`RecordDecoder` decodes a stream fed in chunks of any
size (the I/O layer uses it over file blocks and decompressor output).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Iterator
from typing import Optional, Union

import numpy as np

from ._crc import MASK_DELTA, crc32c, mask, unmask
from ._errors import CorruptRecordError, TruncatedRecordError
from ._scan import scan

__all__ = [
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "RECORD_OVERHEAD",
    "RecordDecoder",
    "encode_record",
    "encode_records",
    "iter_records",
    "record_header",
]

Buffer = Union[bytes, bytearray, memoryview]

#: Bytes before the data: u64 length + u32 masked CRC of the length.
HEADER_SIZE = 12
#: Bytes after the data: u32 masked CRC of the data.
FOOTER_SIZE = 4
#: Framing bytes per record.
RECORD_OVERHEAD = HEADER_SIZE + FOOTER_SIZE

_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_HEADER = struct.Struct("<QI")
_MAX_LENGTH = 2**64 - 1


@functools.lru_cache(maxsize=4096)
def record_header(length: int) -> bytes:
    """Return the 12-byte header of a record of ``length`` data bytes.

    Cached: a header depends only on the length, and records written by one
    writer often share a few lengths.
    """
    if not 0 <= length <= _MAX_LENGTH:
        raise ValueError(f"record length must be in [0, 2**64), got {length}")
    length_bytes = _U64.pack(length)
    return length_bytes + _U32.pack(mask(crc32c(length_bytes)))


def frame_parts(records: list[bytes]) -> tuple[list[bytes], int]:
    """Frame many ``bytes`` records at once: (header, data, footer, ... parts, total size).

    Data CRCs are computed one call per record and masked with NumPy; headers come
    from the per-length cache. ``b"".join(parts)`` is the framed stream.
    """
    n = len(records)
    if n == 0:
        return [], 0
    crcs = np.fromiter(map(crc32c, records), dtype=np.uint64, count=n)
    masked = (
        ((crcs >> np.uint64(15)) | (crcs << np.uint64(17))) + np.uint64(MASK_DELTA)
    ) & np.uint64(0xFFFFFFFF)
    footers = masked.astype("<u4").tobytes()
    parts: list[bytes] = [b""] * (3 * n)
    lengths = list(map(len, records))
    parts[0::3] = map(record_header, lengths)
    parts[1::3] = records
    parts[2::3] = [footers[i : i + 4] for i in range(0, 4 * n, 4)]
    return parts, sum(lengths) + RECORD_OVERHEAD * n


def encode_record(data: Buffer) -> bytes:
    """Frame one record: header + data + footer, as TensorFlow's ``RecordWriter`` does.

    >>> encode_record(b"foo").hex()
    '0300000000000000b099490e666f6f618abefe'
    """
    data = _as_buffer(data)
    return b"".join((record_header(len(data)), data, _U32.pack(mask(crc32c(data)))))


def encode_records(records: Iterable[Buffer]) -> bytes:
    """Frame many records into one bytes object (what a plain TFRecord file holds)."""
    parts: list[Buffer] = []
    for data in records:
        data = _as_buffer(data)
        parts.append(record_header(len(data)))
        parts.append(data)
        parts.append(_U32.pack(mask(crc32c(data))))
    return b"".join(parts)


def _as_buffer(data: object) -> Buffer:
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
    return _as_buffer(view)


def _header_error(
    buf: Buffer, pos: int, stored: int, index: int, offset: int
) -> CorruptRecordError:
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


def _data_error(data: Buffer, stored: int, index: int, offset: int) -> CorruptRecordError:
    actual = crc32c(data)
    return CorruptRecordError(
        f"corrupted record: the CRC32C of its {len(data)} data bytes does not match "
        f"(stored {unmask(stored):#010x}, computed {actual:#010x}); the file is damaged",
        part="data",
        offset=offset,
        index=index,
    )


def _truncated(what: str, need: int, have: int, offset: int, index: int) -> TruncatedRecordError:
    return TruncatedRecordError(
        f"truncated record: the stream ends inside the record's {what} "
        f"({have} of {need} bytes present); the file was cut short or is still being written",
        expected=need,
        available=have,
        offset=offset,
        index=index,
    )


def iter_records(
    buf: Buffer, *, verify: bool = True, offset: int = 0, index: int = 0
) -> Iterator[bytes]:
    """Yield each record of a complete, in-memory TFRecord stream as ``bytes``.

    ``offset`` and ``index`` are added to the positions reported in errors (for
    a buffer that is a slice of a larger stream). A stream that ends inside a
    record raises :class:`TruncatedRecordError` after the complete records.
    """
    buf = _as_buffer(buf)
    decoder = RecordDecoder(verify=verify, offset=offset, index=index, stream_size=len(buf))
    # The caller's buffer is used in place (no copy); it must not change while iterating.
    decoder._feed(buf)
    while True:
        batch = decoder.records(max_records=1024)
        if not batch:
            break
        yield from batch
    decoder.close()


class RecordDecoder:
    """Incremental TFRecord decoder: feed it bytes, take out complete records.

    >>> d = RecordDecoder()
    >>> d.feed(encode_record(b"foo")[:5])
    >>> d.records()
    []
    >>> d.feed(encode_record(b"foo")[5:])
    >>> d.records()
    [b'foo']
    >>> d.close()    # raises TruncatedRecordError if a partial record is left

    Each record is an independent ``bytes`` object. :attr:`offset` is the stream
    offset of the next undecoded byte and :attr:`index` the number of records
    decoded so far (both start at the values given to the constructor).

    When a bad record is found after some good ones in the same call, the good
    ones are returned and the error is raised by the next call, so no intact
    record is lost to an error that follows it.

    ``stream_size``, when known (a plain file's size), lets the decoder reject a
    length field that claims more bytes than the stream has as soon as it sees
    the header, instead of waiting for data that will never come.
    """

    def __init__(
        self,
        *,
        verify: bool = True,
        offset: int = 0,
        index: int = 0,
        stream_size: Optional[int] = None,
    ) -> None:
        self.verify = verify
        self.offset = offset
        self.index = index
        self.stream_size = None if stream_size is None else offset + stream_size
        # Bytes received but not yet decoded, in arrival order; joined only once
        # enough of them have arrived to make progress, so a huge record fed in
        # small chunks is joined once, not once per chunk.
        self._chunks: list[Buffer] = []
        self._pending = 0
        self._need = HEADER_SIZE
        self._error: Optional[Exception] = None
        self._closed = False

    @property
    def pending(self) -> int:
        """Bytes fed but not yet returned as records."""
        return self._pending

    def feed(self, data: Buffer) -> None:
        """Add the next bytes of the stream.

        ``bytes`` are kept as they are; any other buffer is copied, so the caller may
        reuse it (e.g. with ``readinto``) as soon as ``feed`` returns.
        """
        data = _as_buffer(data)
        self._feed(data if isinstance(data, bytes) else bytes(data))

    def _feed(self, data: Buffer) -> None:
        if self._closed:
            raise ValueError("RecordDecoder.feed() called after close()")
        if data:
            self._chunks.append(data)
            self._pending += len(data)

    def records(self, max_records: Optional[int] = None) -> list[bytes]:
        """Return the records that are complete in the bytes fed so far (at most ``max_records``)."""
        if self._error is not None:
            raise self._error
        if self._pending < self._need:
            return []
        chunks = self._chunks
        buf: Buffer = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        end = len(buf)
        limit = None if self.stream_size is None else self.stream_size - self.offset
        result = scan(
            buf,
            verify=self.verify,
            max_records=-1 if max_records is None else max_records,
            limit=limit,
        )
        out = result.records
        pos = result.consumed
        offset = self.offset + pos
        index = self.index + len(out)
        err: Optional[Exception] = None
        if result.problem == "header":
            (stored,) = _U32.unpack_from(buf, pos + 8)
            err = _header_error(buf, pos, stored, index, offset)
        elif result.problem == "data":
            (length,) = _U64.unpack_from(buf, pos)
            data_end = pos + HEADER_SIZE + length
            (stored,) = _U32.unpack_from(buf, data_end)
            err = _data_error(
                buf[pos + HEADER_SIZE : data_end], stored, index, offset + HEADER_SIZE
            )
        elif result.problem == "claim":
            assert limit is not None
            (length,) = _U64.unpack_from(buf, pos)
            have = max(limit - pos, end - pos)
            what = "data" if have < HEADER_SIZE + length else "footer"
            err = _truncated(what, length + RECORD_OVERHEAD, have, offset, index)
        if err is not None:
            # Remembered, so that later calls (and close()) raise this same error.
            self._error = err
            self._keep(buf, pos, end, offset, index, HEADER_SIZE)
            if not out:
                raise err
            return out
        self._keep(buf, pos, end, offset, index, result.need)
        return out

    def _keep(self, buf: Buffer, pos: int, end: int, offset: int, index: int, need: int) -> None:
        self._chunks = [memoryview(buf)[pos:] if pos else buf] if pos < end else []
        self._pending = end - pos
        self.offset = offset
        self.index = index
        self._need = need

    def close(self) -> None:
        """Declare the end of the stream; raise if it ends inside a record."""
        if self._closed:
            return
        self._closed = True
        if self._error is not None:
            raise self._error
        have = self._pending
        if have == 0:
            return
        if have < HEADER_SIZE:
            raise _truncated("header", HEADER_SIZE, have, self.offset, self.index)
        buf = b"".join(self._chunks)
        length, length_crc = _HEADER.unpack_from(buf, 0)
        if self.verify and mask(crc32c(buf[0:8])) != length_crc:
            raise _header_error(buf, 0, length_crc, self.index, self.offset)
        what = "data" if have < HEADER_SIZE + length else "footer"
        raise _truncated(what, length + RECORD_OVERHEAD, have, self.offset, self.index)
