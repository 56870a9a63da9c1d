"""Binary index files of GZIP/ZLIB TFRecord files: the records and the seek points.

What an index of a compressed file holds
----------------------------------------
- the framed length of every record, in the *decompressed* stream (record ``i``
  starts where records ``0..i-1`` end);
- seek points, about every :data:`SPACING` bytes of output: the compressed bit
  where a deflate block (or a GZIP member) starts, its output offset and, for a
  block, the 32 KiB of output before it, which the block's back references reach
  (the approach of zlib's ``zran.c``). A byte-aligned block that inflates
  without that window (the next 32 KiB of output tried: after a full flush, as
  ``TFRecordWriter(..., seekable=True)`` writes them) keeps no window. Reading
  record ``i`` inflates from the nearest seek point before it
  (:mod:`tfrecord_lite._files._gzread`);
- what ties the index to its file: the compressed file's size and a BLAKE2b
  hash of its first and last 64 KiB (:data:`HASH_SPAN`). An index whose file has
  another size or other head or tail bytes is a :class:`StaleIndexError`.

Block boundaries are found with the C zlib (:mod:`tfrecord_lite._files._zran`);
where it cannot be loaded, the only seek points are the starts of GZIP members.

Layout (little-endian)::

    magic     8 bytes  b"TFRLZIX1"
    header    struct _HEAD: version, compression, length width, data size,
              file hash, records, decompressed size, seek points, body sizes,
              CRC32 of the body, CRC32 of the header
    body      zlib: record lengths (``width`` bytes each, byte planes apart),
              seek points (struct _POINT each), their windows

Every field is checked on reading; a file that is not one, is cut short or was
changed is a :class:`StaleIndexError` naming the index file, and the body is
inflated with a bound derived from its own compressed size.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections import deque
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._errors import (
    CompressionError,
    RecordTooLargeError,
    TFRecordError,
    TruncatedRecordError,
)
from .._record import RECORD_OVERHEAD, RecordDecoder
from . import _fs, _zran
from ._handles import open_binary
from ._restart import WINDOW
from ._sniff import GZIP_MAGIC, SNIFF_BYTES, not_a_tfrecord
from ._stream import DEFAULT_MAX_COMPRESSED_RECORD

__all__ = [
    "BLOCK",
    "FLUSH",
    "HASH_SPAN",
    "MAGIC",
    "SPACING",
    "START",
    "GzIndex",
    "IndexFileError",
    "SeekPoint",
    "build",
    "decode",
    "encode",
    "fingerprint",
]

MAGIC = b"TFRLZIX1"
VERSION = 1
#: Output bytes between two seek points (at least; the next block boundary after).
SPACING = 4 * 1024 * 1024
#: Bytes hashed at each end of the compressed file to tie an index to it.
HASH_SPAN = 64 * 1024
#: Inflated bytes framed at a time while building (small members' outputs joined).
_FRAME_AT = 256 * 1024
#: Compressed bytes read at a time while building.
_READ = 1024 * 1024

_HEAD = struct.Struct("<HBBQ16sQQIQQII")
_POINT = struct.Struct("<QQBI")
_CODES = {"GZIP": 1, "ZLIB": 2}
_NAMES = {v: k for k, v in _CODES.items()}
#: Seek point kinds: the start of a stream (a GZIP member, a ZLIB stream), a block,
#: or a block no back reference reaches over (after a full flush: no window needed).
START, BLOCK, FLUSH = 0, 1, 2


class IndexFileError(TFRecordError, ValueError):
    """Internal: an index file that cannot be read; the caller raises StaleIndexError."""


@dataclass
class SeekPoint:
    """Where inflating may start: ``bit`` in the compressed file, ``out`` in the output."""

    bit: int
    out: int
    kind: int
    window: bytes = b""


@dataclass
class GzIndex:
    """An index of a compressed file (see the module documentation)."""

    compression: str
    data_size: int
    file_hash: bytes
    lengths: np.ndarray  # framed length of each record, int64
    total_out: int
    points: list[SeekPoint] = field(default_factory=list)

    def offsets(self) -> np.ndarray:
        """Record ``i`` spans ``offsets[i]..offsets[i + 1]`` of the output (n + 1 values)."""
        bounds = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=bounds[1:])
        return bounds


def fingerprint(path: str, size: int) -> bytes:
    """BLAKE2b (16 bytes) of the size and the first and last :data:`HASH_SPAN` bytes."""
    h = hashlib.blake2b(digest_size=16)
    h.update(size.to_bytes(8, "little"))
    if size <= 2 * HASH_SPAN:
        h.update(_fs.read_range(path, 0, size) if size else b"")
    else:
        h.update(_fs.read_range(path, 0, HASH_SPAN))
        h.update(_fs.read_range(path, size - HASH_SPAN, HASH_SPAN))
    return h.digest()


# --------------------------------------------------------------------------- building


class _StdInflater:
    """Python's zlib behind :class:`~tfrecord_lite._files._zran.BlockInflater`'s
    interface, without block boundaries (used where no C zlib can be loaded)."""

    at_block = False
    bit_pos = 0

    def __init__(self, wbits: int) -> None:
        self._wbits = wbits
        self.reset()

    def reset(self) -> None:
        self._z = zlib.decompressobj(self._wbits)
        self._data = b""
        self._fed = 0
        self.eof = False

    def feed(self, data: bytes, start: int = 0) -> None:
        self._data = data[start:] if start else data
        self._fed += len(self._data)

    @property
    def pending_input(self) -> int:
        return len(self._data)

    @property
    def consumed(self) -> int:
        return self._fed - len(self._data)

    def unused(self) -> tuple[bytes, int]:
        return self._data, 0

    def step(self) -> bytes:
        try:
            out = self._z.decompress(self._data, 256 * 1024)
        except zlib.error as err:
            raise _zran.ZlibError(str(err)) from None
        if self._z.eof:
            self.eof = True
            self._data = self._z.unused_data
        else:
            self._data = self._z.unconsumed_tail
        return out

    def close(self) -> None:
        pass


def _inflater(wbits: int) -> _zran.BlockInflater | _StdInflater:
    return _zran.BlockInflater(wbits) if _zran.available() else _StdInflater(wbits)


class _Walker:
    """Frames the records of a decompressed stream fed in pieces: their lengths
    (:class:`~tfrecord_lite._record.RecordDecoder`, header CRCs checked, data not)."""

    def __init__(self, path: str, compression: str, limit: int) -> None:
        self.path = path
        self.compression = compression
        self.limit = limit
        self.head: Optional[bytes] = b""  # until the content is sniffed
        self.early: list[bytes] = []
        self.decoder = RecordDecoder(verify=False, max_record_size=limit)
        self.parts: list[np.ndarray] = []
        self.pending: list[bytes] = []  # output not framed yet
        self.pending_size = 0

    @property
    def next(self) -> int:
        """The output offset of the next record's header."""
        return int(self.decoder.offset)

    @property
    def count(self) -> int:
        """Records framed so far."""
        return int(self.decoder.index)

    def take(self, piece: bytes) -> None:
        """Frame ``piece`` (the small outputs of many GZIP members joined first)."""
        self.pending.append(piece)
        self.pending_size += len(piece)
        if self.pending_size >= _FRAME_AT:
            self.flush()

    def flush(self) -> None:
        """Frame what is held."""
        if self.pending:
            piece = self.pending[0] if len(self.pending) == 1 else b"".join(self.pending)
            self.pending.clear()
            self.pending_size = 0
            self._take(piece)

    def _take(self, piece: bytes) -> None:
        if self.head is not None:  # the start of the content: is it another format?
            self.head += piece[: SNIFF_BYTES - len(self.head)]
            if len(self.head) < SNIFF_BYTES:
                self.early.append(piece)
                return
            self._sniff()
        try:
            self.decoder.feed(piece)
            records = self.decoder.records()
        except TFRecordError as err:
            raise self._located(err) from None
        if records:
            sizes = np.fromiter(map(len, records), dtype=np.int64, count=len(records))
            self.parts.append(sizes + RECORD_OVERHEAD)

    def _sniff(self) -> None:
        assert self.head is not None
        other = not_a_tfrecord(self.head, self.path, self.compression)
        self.head = None
        if other is not None:
            raise other
        early, self.early = self.early, []
        for piece in early:
            self._take(piece)

    def _located(self, err: TFRecordError) -> TFRecordError:
        if isinstance(err, RecordTooLargeError):
            return RecordTooLargeError(
                f"record too large: its length field claims {err.length} data bytes, more "
                f"than the {self.limit} bytes a GZIP/ZLIB reader buffers for one record by "
                "default; the length is damaged or hostile (a deflate bomb?): no index is "
                "written",
                length=err.length,
                limit=self.limit,
                path=self.path,
                offset=err.offset,
                index=err.index,
            )
        return err.with_location(path=self.path)

    def finish(self) -> np.ndarray:
        """The framed length of every record; an error if the stream ends inside one."""
        self.flush()
        if self.head is not None:
            self._sniff()
        try:
            for _ in self.decoder.close():
                raise AssertionError("records left in a closed decoder")  # pragma: no cover
        except TFRecordError as err:
            raise self._located(err) from None
        if not self.parts:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate(self.parts)


def build(path: str, compression: str, spacing: int = SPACING) -> GzIndex:
    """Index a GZIP/ZLIB file in one streaming pass (memory: the windows kept, plus
    8 bytes a record)."""
    size = _fs.size(path)
    wbits = 31 if compression == "GZIP" else 15
    walker = _Walker(path, compression, DEFAULT_MAX_COMPRESSED_RECORD)
    points = [SeekPoint(0, 0, START)]
    recent: deque[bytes] = deque()  # the last output pieces, at least WINDOW bytes
    kept = 0
    out = 0
    comp_base = 0  # compressed offset of the current stream's first fed byte
    z = _inflater(wbits)
    started = False
    ended = False
    with open_binary(path, "rb") as f:
        while True:
            if not z.pending_input and not z.eof:
                block = f.read(_READ)
                if not block:
                    break
                z.feed(block)
            try:
                piece = z.step()
            except _zran.ZlibError as err:
                raise CompressionError(
                    f"the {compression} stream is damaged: {err} (near compressed byte "
                    f"{comp_base + z.consumed}); the file is corrupt, or is not {compression}",
                    path=path,
                ) from None
            started = True
            if piece:
                walker.take(piece)
                out += len(piece)
                recent.append(piece)
                kept += len(piece)
                while len(recent) > 1 and kept - len(recent[0]) >= WINDOW:
                    kept -= len(recent.popleft())
            # A block that needs no window is taken from half the spacing on (or in
            # place of a point with a window at the same output offset, the block
            # before an empty one); one that needs it, once the spacing is reached.
            if z.at_block:
                last = points[-1]
                gap = out - last.out
                bit = 8 * comp_base + z.bit_pos
                free = gap >= max(1, spacing // 2) or (gap == 0 and last.kind == BLOCK)
                if free and bit % 8 == 0 and _windowless(path, bit // 8):
                    if gap == 0:
                        points.pop()
                    points.append(SeekPoint(bit, out, FLUSH))
                elif gap >= spacing:
                    window = b"".join(recent)[-WINDOW:]
                    points.append(SeekPoint(bit, out, BLOCK, window))
            if z.eof:
                if compression != "GZIP":
                    ended = True
                    break
                rest, at = z.unused()
                member = comp_base + z.consumed
                following = _after_member(f, rest, at, path, member)
                if following is None:
                    ended = True
                    break
                z.reset()  # the next member, in the same inflater
                comp_base = member
                z.feed(*following)
                if out - points[-1].out >= spacing:
                    points.append(SeekPoint(8 * member, out, START))
    z.close()
    if started and not ended:
        walker.flush()  # (the records before the cut: where it is)
        raise TruncatedRecordError(
            f"the {compression} stream ends before its end marker: the file is truncated",
            path=path,
            offset=walker.next,
            index=walker.count,
        )
    lengths = walker.finish()
    return GzIndex(compression, size, fingerprint(path, size), lengths, out, points)


def _windowless(path: str, start: int) -> bool:
    """Whether the deflate blocks from byte ``start`` inflate without the output before
    it (no back reference reaches over it, as after a full flush): tried on the next
    32 KiB of output, the farthest a back reference reaches."""
    z = zlib.decompressobj(-15)
    made = 0
    pos = start
    buf = b""
    while made < WINDOW and not z.eof:
        if not buf:
            buf = _fs.read_range(path, pos, 64 * 1024)
            if not buf:
                return False
            pos += len(buf)
        try:
            made += len(z.decompress(buf, WINDOW - made))
        except zlib.error:  # "invalid distance too far back": it needs the window
            return False
        buf = z.unconsumed_tail
    return True


def _after_member(
    f: object, rest: bytes, at: int, path: str, member: int
) -> Optional[tuple[bytes, int]]:
    """What follows a complete GZIP member (``rest[at:]`` and more of ``f``): the next
    member's bytes, as bytes and where in them it starts, or None at the end (zero
    padding allowed, as the readers allow it)."""
    read = f.read  # type: ignore[attr-defined]
    if len(rest) - at < 2:
        rest, at = rest[at:], 0
        while len(rest) < 2:
            more = read(_READ)
            if not more:
                break
            rest += more
    if len(rest) == at:
        return None
    if rest[at : at + 2] == GZIP_MAGIC:
        return rest, at
    if rest[at:] == GZIP_MAGIC[:1]:  # the file ends one byte into the next member
        raise TruncatedRecordError(
            f"the GZIP stream ends one byte into a member (compressed byte {member}): the "
            "file is truncated",
            path=path,
        )
    if rest[at] == 0:
        tail = rest[at:]
        while True:
            if tail.strip(b"\x00"):
                break
            tail = read(_READ)
            if not tail:
                return None
    raise CompressionError(
        f"unexpected bytes after the end of a GZIP member (compressed byte {member}): "
        "not a gzip member; the file is damaged",
        path=path,
    )


# --------------------------------------------------------------------------- the file


def encode(index: GzIndex) -> bytes:
    """The index file's bytes."""
    lengths = index.lengths
    top = int(lengths.max()) if len(lengths) else 0
    width = 2 if top < 1 << 16 else 4 if top < 1 << 32 else 8
    planes = lengths.astype(f"<u{width}").view(np.uint8).reshape(-1, width).T.tobytes()
    table = b"".join(_POINT.pack(p.bit, p.out, p.kind, len(p.window)) for p in index.points)
    raw = planes + table + b"".join(p.window for p in index.points)
    body = zlib.compress(raw, 6)
    head = _HEAD.pack(
        VERSION,
        _CODES[index.compression],
        width,
        index.data_size,
        index.file_hash,
        len(lengths),
        index.total_out,
        len(index.points),
        len(body),
        len(raw),
        zlib.crc32(body),
        0,
    )
    head = head[:-4] + struct.pack("<I", zlib.crc32(MAGIC + head[:-4]))
    return MAGIC + head + body


def _bad(what: str) -> IndexFileError:
    return IndexFileError(f"not a readable index of a compressed TFRecord file: {what}")


def decode(blob: bytes) -> GzIndex:
    """Parse an index file's bytes (:class:`IndexFileError` if they are not one)."""
    if blob[:8] != MAGIC:
        raise _bad("it does not start with the index signature")
    if len(blob) < 8 + _HEAD.size:
        raise _bad(f"it is cut short ({len(blob)} bytes)")
    head = blob[8 : 8 + _HEAD.size]
    fields = _HEAD.unpack(head)
    (version, code, width, data_size, file_hash, n, total, npoints, clen, rlen, bcrc, hcrc) = fields
    if zlib.crc32(MAGIC + head[:-4]) != hcrc:
        raise _bad("its header fails its CRC (damaged)")
    if version != VERSION:
        raise _bad(f"version {version}; this package reads version {VERSION}")
    if code not in _NAMES or width not in (2, 4, 8):
        raise _bad("its header names an unknown compression or width")
    body = blob[8 + _HEAD.size :]
    if len(body) != clen:
        raise _bad(f"its body is {len(body)} bytes, its header says {clen} (cut short?)")
    if zlib.crc32(body) != bcrc:
        raise _bad("its body fails its CRC (damaged)")
    # Bounded: deflate expands at most ~1032x, and the header's sizes must agree.
    if rlen > 1100 * clen + 1024 or n * width + npoints * _POINT.size > rlen:
        raise _bad("its header's sizes do not agree")
    try:
        z = zlib.decompressobj()
        raw = z.decompress(body, rlen + 1)
    except zlib.error:
        raise _bad("its body does not inflate") from None
    if len(raw) != rlen or not z.eof:
        raise _bad("its body's size is not the one its header says")
    planes = np.frombuffer(raw, dtype=np.uint8, count=n * width).reshape(width, n)
    lengths = np.ascontiguousarray(planes.T).view(f"<u{width}").reshape(n).astype(np.int64)
    pos = n * width
    metas = []
    for _ in range(npoints):
        metas.append(_POINT.unpack_from(raw, pos))
        pos += _POINT.size
    points = []
    last_out = -1
    for bit, out, kind, wlen in metas:
        window = raw[pos : pos + wlen]
        pos += wlen
        if (
            kind not in (START, BLOCK, FLUSH)
            or len(window) != wlen
            or wlen != (min(out, WINDOW) if kind == BLOCK else 0)
            or (kind == FLUSH and bit % 8)
            or out <= last_out
            or out > total
            or bit > 8 * data_size
        ):
            raise _bad("a seek point is out of range")
        last_out = out
        points.append(SeekPoint(bit, out, kind, window))
    if pos != rlen or not points or points[0] != SeekPoint(0, 0, START):
        raise _bad("its seek points do not add up")
    top = DEFAULT_MAX_COMPRESSED_RECORD + RECORD_OVERHEAD
    if n and (int(lengths.min()) < RECORD_OVERHEAD or int(lengths.max()) > top):
        raise _bad("a record length is out of range")
    if int(lengths.sum()) != total:
        raise _bad("its record lengths do not add up to its decompressed size")
    return GzIndex(_NAMES[code], data_size, file_hash, lengths, total, points)
