"""Index files: reading, writing and building them.

Text format
-----------
A text file with one line per record, ``offset length``, both decimal byte
counts: ``offset`` is where the record's header starts and ``length`` is the whole
framed record (12-byte header + data + 4-byte CRC, so ``16 + len(data)``)::

    0 27
    27 43
    70 16

This is the format of vahidk/tfrecord's ``tfrecord2idx`` and NVIDIA DALI's
``tfrecord2idx``, so their index files work here and ours work there.
:func:`read_index` tolerates a missing or extra trailing newline, ``\\r\\n`` line
ends, blank lines, and index files with only the offset column. It parses in
bounded pieces with NumPy: a 10-million-line index takes about the memory of the
array it gives, plus a few MiB.

Compressed files
----------------
Records of a GZIP/ZLIB file cannot be reached without decompressing everything
before them, unless the index also holds *seek points*: places in the stream
where inflating can start. :func:`create_index` on a compressed file writes a
binary index with both (:mod:`tfrecord_lite._files._gzindex`: record lengths,
seek points about every 4 MiB of output with their 32 KiB windows, and a hash
that ties it to its file); ``format="text"`` writes the ``offset length`` lines
(offsets in the *decompressed* stream, what vahidk/tfrecord's gzip reader
seeks to) instead. :func:`read_index` reads either kind.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional, Union

import numpy as np

from .._errors import TFRecordError
from .._record import RECORD_OVERHEAD
from . import _fs, _gzindex
from ._handles import open_binary
from ._offsets import record_offsets
from ._options import compression_name
from ._sniff import detect_compression

__all__ = [
    "INDEX_SUFFIXES",
    "RandomAccessError",
    "StaleIndexError",
    "check_index",
    "create_index",
    "default_index_path",
    "find_index",
    "load_index",
    "read_index",
    "scan_plain",
    "write_index",
]

PathLike = Union[str, "os.PathLike[str]"]

#: Suffixes tried, in order, next to a data file when no index path is given.
INDEX_SUFFIXES = (".index", ".idx")
#: Bytes of a text index parsed at a time (bounds the parser's working memory).
TEXT_CHUNK = 256 * 1024
#: Bytes read at a time to count a text index's lines.
_COUNT_CHUNK = 4 * 1024 * 1024
#: A binary index is read whole; refused beyond this size.
MAX_BINARY_INDEX = 1 << 34


class StaleIndexError(TFRecordError, ValueError):
    """An index file does not describe its data file (it is stale, damaged, or for another file).

    Rebuild it with :func:`create_index`.
    """


class RandomAccessError(TFRecordError, ValueError):
    """Random access is impossible on this file as it is (e.g. it is GZIP/ZLIB-compressed)."""


def default_index_path(path: PathLike) -> str:
    """The index path :func:`create_index` writes by default: ``path + ".index"``."""
    base = os.fspath(path)
    name = base + INDEX_SUFFIXES[0]
    return base.with_path(name) if isinstance(base, _fs.URL) else name


def find_index(
    path: PathLike, *, storage_options: Optional[Mapping[str, Any]] = None
) -> Optional[str]:
    """The index file next to ``path`` (``path.index`` or ``path.idx``), or None."""
    base = _fs.bind(path, storage_options)
    for suffix in INDEX_SUFFIXES:
        candidate = base.with_path(base + suffix) if isinstance(base, _fs.URL) else base + suffix
        if _fs.isfile(candidate):
            return candidate
    return None


# --------------------------------------------------------------------------- reading


def load_index(name: str) -> Union[np.ndarray, _gzindex.GzIndex]:
    """The index file ``name``: a text index's values (int64, shape ``(n, width)``,
    width 1 or 2), or a compressed file's binary index. :class:`StaleIndexError`
    naming the file if it is neither.

    Reads at most the file's size as it was when opened: a local index must be a
    regular file (a FIFO or a link to a device is refused, never read without end).
    """
    with _open_index(name) as (f, size):
        first = f.read(len(_gzindex.MAGIC))
        if first == _gzindex.MAGIC:
            if size > MAX_BINARY_INDEX:
                raise StaleIndexError(
                    f"the index {name!r} is {size} bytes, over the {MAX_BINARY_INDEX} an "
                    "index is allowed; it is not an index: rebuild it with create_index()",
                    path=name,
                )
            blob = first + _read_exactly(f, size - len(first))
            try:
                return _gzindex.decode(blob)
            except _gzindex.IndexFileError as err:
                raise StaleIndexError(
                    f"the index {name!r} is damaged: {err.message}; rebuild it with create_index()",
                    path=name,
                ) from None
        return _parse_text(f, size, name)


@contextlib.contextmanager
def _open_index(name: str) -> Iterator[tuple[Any, int]]:
    """The index file open for reading, and its size."""
    if _fs.is_url(name):
        size = _fs.size(name)
        with open_binary(name, "rb") as f:
            yield f, size
        return
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(name, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StaleIndexError(
                f"the index {name!r} is not a regular file (a pipe, a device or a folder); "
                "pass the path of an index file",
                path=name,
            )
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as f:
        yield f, st.st_size


def _read_exactly(f: Any, n: int) -> bytes:
    parts = []
    while n > 0:
        block = f.read(min(n, 1 << 24))
        if not block:
            break
        parts.append(block)
        n -= len(block)
    return b"".join(parts)


#: 0-9 and the whitespace a text index may hold.
_ALLOWED = np.zeros(256, dtype=bool)
_ALLOWED[list(b"0123456789 \t\r\n")] = True


def _parse_text(f: Any, size: int, name: str) -> np.ndarray:
    """Parse ``offset length`` lines in :data:`TEXT_CHUNK` pieces, vectorised.

    A first pass counts the lines, so the table is allocated once, at its size."""
    f.seek(0)
    lines = 1
    left = size
    while left > 0:
        block = f.read(min(_COUNT_CHUNK, left))
        if not block:
            break
        left -= len(block)
        lines += block.count(b"\n")
    f.seek(0)
    width = 0
    out: Optional[np.ndarray] = None
    rows = 0
    line_no = 0
    carry = b""
    left = size
    while True:
        block = f.read(min(TEXT_CHUNK, left)) if left > 0 else b""
        left -= len(block)
        if block:
            data = carry + block
            cut = data.rfind(b"\n") + 1
            if not cut:
                if len(data) > TEXT_CHUNK:
                    raise StaleIndexError(
                        f"not a TFRecord index file: line {line_no + 1} is over "
                        f"{TEXT_CHUNK} bytes long",
                        path=name,
                    )
                carry = data
                continue
            piece, carry = data[:cut], data[cut:]
        else:
            piece, carry = carry, b""
            if not piece:
                break
        vals, counts = _parse_piece(piece, name, line_no)
        line_no += piece.count(b"\n")
        if not len(counts):
            continue
        if not width:
            width = int(counts[0])
            if width not in (1, 2):
                raise StaleIndexError(
                    f"not a TFRecord index file: line 1 has {width} fields, expected "
                    "'offset length'",
                    path=name,
                )
            out = np.empty((lines, width), dtype=np.int64)
        if (counts != width).any():
            raise StaleIndexError(
                "not a TFRecord index file (lines have different numbers of fields); "
                "each line must be 'offset length'",
                path=name,
            )
        assert out is not None
        k = len(counts)
        out[rows : rows + k] = vals.reshape(k, width)
        rows += k
    if out is None:
        return np.zeros((0, 2), dtype=np.int64)
    return out[:rows]


def _parse_piece(piece: bytes, name: str, line_no: int) -> tuple[np.ndarray, np.ndarray]:
    """The numbers in ``piece`` (whole lines) and how many each non-blank line has."""
    a = np.frombuffer(piece, dtype=np.uint8)
    if not _ALLOWED[a].all():
        bad = np.flatnonzero(~_ALLOWED[a])
        at = int(bad[0])
        line = line_no + piece.count(b"\n", 0, at) + 1
        raise StaleIndexError(
            f"not a TFRecord index file: line {line} holds {piece[at : at + 1]!r}; "
            "each line must be 'offset length' (decimal, non-negative)",
            path=name,
        )
    digit = a >= 48
    edge = np.diff(digit.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edge == 1)
    ends = np.flatnonzero(edge == -1)
    if not len(starts):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    sizes = ends - starts
    if int(sizes.max()) > 18:
        raise StaleIndexError(
            "not a TFRecord index file: a number of more than 18 digits", path=name
        )
    # Horner's rule, one digit place at a time for all the numbers at once.
    last = ends - 1
    values = np.zeros(len(starts), dtype=np.int64)
    for j in range(int(sizes.max())):
        digits = a[np.minimum(starts + j, last)].astype(np.int64) - 48
        values = np.where(sizes > j, values * 10 + digits, values)
    line_of = np.searchsorted(np.flatnonzero(a == 10), starts)
    counts = np.bincount(line_of)
    return values, counts[counts > 0]


def read_index(
    index_path: PathLike,
    *,
    data_size: Optional[int] = None,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> np.ndarray:
    """Read an index file into an int64 array of shape ``(n, 2)``: ``offset, length`` per record.

    Accepts a trailing newline or none, ``\\r\\n``, blank lines, and one-column files
    (offsets only: each length is then the distance to the next offset, and the
    last one needs ``data_size``, the data file's size in bytes). A compressed
    file's binary index gives the records' offsets and lengths in its
    decompressed stream.
    """
    name = _fs.bind(index_path, storage_options)
    loaded = load_index(name)
    if isinstance(loaded, _gzindex.GzIndex):
        bounds = loaded.offsets()
        return np.stack([bounds[:-1], loaded.lengths], axis=1)
    if loaded.shape[1] == 2:
        return loaded
    flat = loaded[:, 0]
    if data_size is None:
        raise StaleIndexError(
            "this index has only offsets; the data file's size is needed for the last length",
            path=name,
        )
    ends = np.append(flat[1:], data_size)
    return np.stack([flat, ends - flat], axis=1)


# --------------------------------------------------------------------------- writing


def write_index(
    index_path: PathLike,
    table: Union[np.ndarray, Sequence[tuple[int, int]]],
    *,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> str:
    """Write ``(offset, length)`` rows as an index file (atomically: see :func:`_write_lines`)."""
    name = _fs.bind(index_path, storage_options)
    rows = np.asarray(table, dtype=np.int64).reshape(-1, 2)

    def lines() -> Iterator[tuple[int, int]]:
        for start in range(0, len(rows), 65536):
            yield from rows[start : start + 65536].tolist()

    _write_lines(name, lines())
    return name


def _write_lines(dest: str, rows: Iterator[tuple[int, int]]) -> None:
    """Write ``offset length`` lines to ``dest`` atomically, streaming: a local file goes
    to a temporary file renamed at the end; a URL is one upload, completed at the end
    (aborted on an error: a reader never sees half an index)."""
    out = _fs.open_write(dest, atomic=True)
    try:
        lines: list[str] = []
        for offset, length in rows:
            lines.append(f"{offset} {length}\n")
            if len(lines) >= 65536:
                out.file.write("".join(lines).encode("ascii"))
                lines.clear()
        out.file.write("".join(lines).encode("ascii"))
    except BaseException:
        out.discard()
        raise
    out.commit()


def _write_bytes(dest: str, blob: bytes) -> None:
    out = _fs.open_write(dest, atomic=True)
    try:
        out.file.write(blob)
    except BaseException:
        out.discard()
        raise
    out.commit()


def scan_plain(path: str) -> Iterator[tuple[int, int]]:
    """Yield ``(offset, framed length)`` of each record of a plain file, from its headers
    (:func:`~tfrecord_lite._files._offsets.record_offsets`: record data is skipped, not read)."""
    size = _fs.size(path)
    with open_binary(path, "rb") as f:
        for offset, length in record_offsets(f, size, path=path):
            yield offset, length + RECORD_OVERHEAD


def create_index(
    path: PathLike,
    index_path: Optional[PathLike] = None,
    *,
    compression: Union[str, None] = "auto",
    format: str = "auto",
    spacing: int = _gzindex.SPACING,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> str:
    """Write the index file of a TFRecord file; return its path (default ``path + ".index"``).

    One streaming pass with bounded memory, whatever the file's size: for a plain
    file only the record headers are read (their CRCs are checked) and record data
    is skipped. A GZIP/ZLIB file is decompressed on the fly: its index (``format``
    ``"auto"`` or ``"binary"``) holds the records and seek points every ``spacing``
    bytes of output, so :class:`~tfrecord_lite.TFRecordFile` reads any record by
    inflating from the nearest one (see the module documentation);
    ``format="text"`` writes ``offset length`` lines of the decompressed stream
    instead. The index is written to a temporary file and renamed, so a reader
    never sees half an index.
    """
    if format not in ("auto", "text", "binary"):
        raise ValueError(f"format must be 'auto', 'text' or 'binary', not {format!r}")
    if isinstance(spacing, bool) or not isinstance(spacing, int) or spacing < 1:
        raise ValueError(f"spacing must be a positive number of bytes, not {spacing!r}")
    src = _fs.bind(path, storage_options)
    if index_path is None:
        dest = default_index_path(src)
    else:
        dest = _fs.bind(index_path, storage_options if _fs.is_url(os.fspath(index_path)) else None)
    comp = compression_name(compression, allow_auto=True)
    if comp == "auto":
        comp = detect_compression(_fs.head(src, 16))
    if not comp:
        if format == "binary":
            raise ValueError("a binary index is for GZIP/ZLIB files; a plain file's index is text")
        _write_lines(dest, scan_plain(src))
        return dest
    index = _gzindex.build(src, comp, spacing)
    if format == "text":
        bounds = index.offsets()
        _write_lines(dest, zip(bounds[:-1].tolist(), index.lengths.tolist()))
    else:
        _write_bytes(dest, _gzindex.encode(index))
    return dest


# --------------------------------------------------------------------------- checking


def check_index(table: np.ndarray, size: int, data: str, index_name: Optional[str]) -> None:
    """Raise :class:`StaleIndexError` unless ``table`` tiles ``[0, size)`` record by record."""
    where = f"index {index_name!r} for {data!r}" if index_name else f"index of {data!r}"
    n = len(table)
    if n == 0:
        if size != 0:
            raise StaleIndexError(
                f"stale index: {where} lists no records but the file has {size} bytes; "
                "rebuild it with create_index()",
                path=index_name or data,
            )
        return
    offsets = table[:, 0]
    lengths = table[:, 1]
    end = int(offsets[-1] + lengths[-1])
    if end != size:
        raise StaleIndexError(
            f"stale index: {where} ends at byte {end} but the file has {size} bytes; "
            "rebuild it with create_index()",
            path=index_name or data,
        )
    bad_entries = np.flatnonzero(lengths < RECORD_OVERHEAD)
    if offsets[0] != 0:
        bad = 0
    elif len(bad_entries):
        bad = int(bad_entries[0])
    else:
        gaps = np.flatnonzero(offsets[1:] != offsets[:-1] + lengths[:-1])
        bad = int(gaps[0]) + 1 if len(gaps) else -1
    if bad >= 0:
        raise StaleIndexError(
            f"stale index: {where} is not a record-by-record tiling of the file "
            f"(entry {bad}: offset {int(offsets[bad])}, length {int(lengths[bad])}); "
            "rebuild it with create_index()",
            path=index_name or data,
        )


def check_gz_index(index: _gzindex.GzIndex, data: str, size: int, index_name: str) -> None:
    """Raise :class:`StaleIndexError` unless ``index`` was built from the file ``data``
    as it is now (its size, and the hash of its first and last 64 KiB)."""
    if index.data_size != size:
        raise StaleIndexError(
            f"stale index: {index_name!r} was built for a file of {index.data_size} bytes, "
            f"and {data!r} has {size}: it is an index of another version of the file; "
            "rebuild it with create_index()",
            path=index_name,
        )
    if _gzindex.fingerprint(data, size) != index.file_hash:
        raise StaleIndexError(
            f"stale index: {index_name!r} was built for other bytes than {data!r} holds "
            "(the hash of its first and last 64 KiB differs): it is an index of another "
            "file, or of another version of it; rebuild it with create_index()",
            path=index_name,
        )
