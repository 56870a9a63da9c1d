"""Continuing an existing file (``TFRecordWriter(..., mode="a")``): checking it, repairing it.

A plain file must be whole records up to its end (its headers read by
:func:`tfrecord_lite._files._offsets.record_offsets`, the last record's data CRC checked
too); a GZIP file must read cleanly. ``repair=True`` cuts a plain file back to its
last complete record when no intact record follows the damage. A URL is
downloaded, checked the same way, and copied into the new upload.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import IO, Optional

from .._errors import CorruptRecordError, DataLossError, TFRecordError, TruncatedRecordError
from .._record import (
    FOOTER_SIZE,
    HEADER_SIZE,
    SkipReport,
    crc32c,
    crc32c_combine,
    footer_of_crc,
)
from . import _fs
from ._handles import write_all
from ._offsets import record_offsets
from ._salvage import find_next_record_in_file
from ._sniff import detect_compression
from ._stream import READ_BLOCK_SIZE, read_records

__all__ = ["copy_for_append", "prepare_append"]


def copy_for_append(
    url: str, out: _fs.Output, compression: str, repair: bool
) -> Optional[SkipReport]:
    """``mode="a"`` on a URL: the object is downloaded to a temporary file, checked (and
    repaired) as a local file would be, and copied into the new upload ``out``."""
    local = _download_to_temp(url)
    if local is None:
        return None  # a new object
    try:
        try:
            report = prepare_append(local, compression, repair)
        except TFRecordError as err:
            moved = type(err).__new__(type(err))
            moved.__dict__.update(err.__dict__)
            TFRecordError.__init__(
                moved,
                err.message.replace(repr(local), repr(str(url))),
                path=url,
                offset=err.offset,
                index=err.index,
            )
            raise moved from None
        except ValueError as err:
            raise ValueError(str(err).replace(repr(local), repr(str(url)))) from None
        if report is not None:
            error = report.error.with_location(path=url) if report.error is not None else None
            report = dataclasses.replace(report, path=str(url), error=error)
        with open(local, "rb") as f:
            while True:
                block = f.read(_fs.REMOTE_BLOCK_SIZE)
                if not block:
                    break
                write_all(out.file, block)
    finally:
        os.unlink(local)
    return report


def prepare_append(path: str, compression: str, repair: bool) -> Optional[SkipReport]:
    """Check that ``path`` can be continued; with ``repair``, cut off a damaged tail."""
    if compression == "ZLIB":
        raise ValueError(
            "mode='a' works for plain and GZIP files: a ZLIB stream cannot be continued "
            "(readers ignore anything after its end)"
        )
    if repair and compression:
        raise ValueError("repair=True works for uncompressed files only")
    try:
        f = open(path, "rb", buffering=1024 * 1024)  # noqa: SIM115 - closed by `with f`
    except FileNotFoundError:
        return None  # a new file
    with f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return None
        found = detect_compression(f.read(HEADER_SIZE))
        if found != compression:
            raise ValueError(
                f"cannot append {compression or 'uncompressed'} records to {path!r}: "
                f"it is {found + '-compressed' if found else 'uncompressed'}"
            )
        if compression:  # GZIP: the whole stream must read cleanly
            f.seek(0)
            for _ in read_records(f, compression, buffer_size=READ_BLOCK_SIZE):
                pass
            return None
        problem = _check_plain_tail(f, size)
        if problem is None:
            return None
        start, index, damage, reason = problem
        err = damage.with_location(path=path)
        if not repair:
            raise err
        following = find_next_record_in_file(f, start + 1, stream_size=size)
        if following is not None:
            raise DataLossError(
                f"cannot repair {path!r} for appending: the damage at byte {start} is "
                f"followed by intact records (the next at byte {following}); cutting the "
                "file there would lose them. Read it with on_error='skip' and rewrite it",
                path=path,
                offset=start,
                index=index,
            ) from err
    with open(path, "r+b") as g:
        g.truncate(start)
        g.flush()
        os.fsync(g.fileno())
    return SkipReport(path, start, size - start, reason, index, err, to_end=True)


def _check_plain_tail(f: IO[bytes], size: int) -> Optional[tuple[int, int, DataLossError, str]]:
    """Walk the record headers of a plain file: (start, index, error, reason) of the
    first problem, or None when it is whole records up to its end (the last one's
    data CRC checked too)."""
    last: Optional[tuple[int, int]] = None
    index = 0
    try:
        for record in record_offsets(f, size):
            last = record
            index += 1
    except DataLossError as err:
        assert err.offset is not None and err.index is not None
        reason = "truncated" if isinstance(err, TruncatedRecordError) else "header"
        return err.offset, err.index, err, reason
    if last is not None:
        start, length = last
        f.seek(start + HEADER_SIZE)
        crc = 0
        left = length
        while left:
            piece = f.read(min(left, READ_BLOCK_SIZE))
            if not piece:  # pragma: no cover - the file shrank under us
                break
            crc = (
                crc32c_combine(crc, crc32c(piece), len(piece)) if left != length else crc32c(piece)
            )
            left -= len(piece)
        if f.read(FOOTER_SIZE) != footer_of_crc(crc):
            bad = CorruptRecordError(
                f"corrupted record: the CRC32C of the last record's {length} data bytes "
                "does not match; the file is damaged",
                part="data",
                offset=start + HEADER_SIZE,
                index=index - 1,
            )
            return start, index - 1, bad, "data"
    return None


def _download_to_temp(url: str) -> Optional[str]:
    """Copy an object to a local temporary file (streaming); None if it does not exist."""
    if not _fs.exists(url):
        return None
    fd, name = tempfile.mkstemp(prefix="tfrecord-lite-append-", suffix=".tfrecord")
    try:
        with os.fdopen(fd, "wb") as out, _fs.open_read(url) as src:
            while True:
                block = src.read(_fs.REMOTE_BLOCK_SIZE)
                if not block:
                    break
                out.write(block)
    except BaseException:
        os.unlink(name)
        raise
    return name
