"""What a file is, from its first bytes: plain, GZIP or ZLIB TFRecord, or what else.

The one compression sniffer of the package. Auto-detection (``compression="auto"``,
the readers' default), per file: a valid plain record header (its length CRC
verifies) means plain, even if the bytes could also start a gzip or zlib stream;
otherwise the gzip magic ``1f 8b`` means GZIP and a valid zlib header (CMF method
8, check bits) means ZLIB; anything else is read as plain, so its error says so.

Files that are plainly something else (an image, JSON, CSV or other text, a NumPy or
ZIP archive...) are told apart by :func:`sniff_format` and refused by
:func:`check_start` with one line, :class:`NotATFRecordError` (``not a TFRecord file:
starts like a JPEG image``), instead of a "corrupted record" with CRC values. A GZIP or
ZLIB file is judged the same way on its first inflated bytes (:func:`peek_start`): a
gzipped CSV is ``not a TFRecord file: a GZIP file whose content starts like CSV text``.
Only signatures are trusted, and only at the first record header: bytes that match
none (or a first header whose CRC verifies) are read as a (possibly damaged) TFRecord
file, so ``on_error="skip"`` still salvages a file whose first record is damaged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Optional

from .._errors import CorruptRecordError
from .._record import HEADER_SIZE, header_ok

__all__ = [
    "SNIFF_BYTES",
    "NotATFRecordError",
    "check_start",
    "detect_compression",
    "looks_like_tfrecord",
    "not_a_tfrecord",
    "peek_start",
    "sniff_compression",
    "sniff_format",
]

GZIP_MAGIC = b"\x1f\x8b"


def sniff_compression(head: bytes) -> Optional[str]:
    """``""`` (a plain record header), ``"GZIP"``, ``"ZLIB"``, or ``None`` when the bytes
    start none of them."""
    if len(head) >= HEADER_SIZE and header_ok(head):
        return ""
    if head[:2] == GZIP_MAGIC:
        return "GZIP"
    if (
        len(head) >= 2
        and head[0] & 0x0F == 8
        and head[0] >> 4 <= 7
        and (head[0] << 8 | head[1]) % 31 == 0
    ):
        return "ZLIB"
    return None


def detect_compression(head: bytes) -> str:
    """Guess a file's compression from its first bytes: ``""``, ``"GZIP"`` or ``"ZLIB"``.

    At least 12 bytes should be given (fewer are read as plain, which then fails
    as a truncated record).
    """
    return sniff_compression(head) or ""


def looks_like_tfrecord(head: bytes) -> bool:
    """True when a file's first bytes can start a TFRecord file (plain, GZIP or ZLIB);
    an empty file is one (of zero records)."""
    return not head or sniff_compression(head) is not None


class NotATFRecordError(CorruptRecordError):
    """The file is not a TFRecord file at all: its first bytes are those of another
    format (the message says which). A :class:`~tfrecord_lite.CorruptRecordError`
    (so a ``DataLossError`` and a ``ValueError``) at offset 0, with ``path``.

    ``what`` is that format (``"a JPEG image"``, ``"CSV text"`` ...) when it is known."""

    what: Optional[str] = None


#: (signature at offset 0, what a file starting so is).
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"BM", "a BMP image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (a NumPy .npz, a .zip, ...)"),
    (b"\x93NUMPY", "a NumPy .npy array"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file"),
    (b"PAR1", "a Parquet file"),
    (b"ARROW1", "an Arrow file"),
    (b"BZh", "a bzip2 stream"),
    (b"\xfd7zXZ\x00", "an xz stream"),
    (b"(\xb5/\xfd", "a Zstandard stream"),
    (b"\x80\x04", "a Python pickle"),
    (b"\x80\x05", "a Python pickle"),
)


#: The first bytes :func:`sniff_format` wants (fewer only when the file is shorter).
SNIFF_BYTES = 64


def sniff_format(head: bytes) -> Optional[str]:
    """What a file that starts with ``head`` plainly is when it is *not* a TFRecord file
    (``"a JPEG image"``, ``"JSON"``, ``"text"`` ...), else ``None``: a TFRecord file
    (plain, GZIP, ZLIB), an empty one, or bytes that match no known format.

    Give it the first :data:`SNIFF_BYTES` bytes (or the whole file, if shorter): text is
    judged on all of them."""
    head = head[:SNIFF_BYTES]
    if not head or sniff_compression(head) is not None:
        return None
    for signature, what in _SIGNATURES:
        if head.startswith(signature):
            if signature == b"BM" and len(head) >= 6 and head[2:6] == bytes(4):
                continue  # a BMP's size field is never 0
            return what
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "a WebP image"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.start < len(head) - 3:
            return None  # (a multi-byte character cut at the end is still text)
        text = head[: err.start].decode("utf-8")
    # (Fewer bytes than a record header: a file cut short, reported as such.)
    if len(text) >= HEADER_SIZE and all(c.isprintable() or c in "\t\n\r" for c in text):
        stripped = text.lstrip("\ufeff \t\r\n")
        if stripped[:1] in ("{", "["):
            return "JSON"
        return _table_text(stripped) or "text"
    return None


def _table_text(text: str) -> Optional[str]:
    """``"CSV text"`` (or tab-separated) when the whole lines of ``text`` hold the same
    number, at least 2, of commas (tabs), and the cut last line no more; else None."""
    *lines, rest = text.split("\n")
    for sep, what in ((",", "CSV text"), ("\t", "tab-separated text")):
        counts = {line.count(sep) for line in lines}
        if len(counts) == 1 and min(counts) >= 2 and rest.count(sep) <= min(counts):
            return what
    return None


def not_a_tfrecord(
    head: bytes, path: Optional[str], compression: str = ""
) -> Optional[NotATFRecordError]:
    """The :class:`NotATFRecordError` for a file whose first :data:`SNIFF_BYTES` bytes (or
    all of it) are those of another format (:func:`sniff_format`), else None.

    With ``compression`` (``"GZIP"``, ``"ZLIB"``), ``head`` is the start of the file's
    inflated content: ``not a TFRecord file: a GZIP file whose content starts like ...``.
    """
    what = sniff_format(head)
    if what is None:
        return None
    start = f"a {compression} file whose content starts" if compression else "starts"
    err = NotATFRecordError(
        f"not a TFRecord file: {start} like {what}", part="header", path=path, offset=0, index=0
    )
    err.what = what
    return err


def check_start(head: bytes, path: Optional[str]) -> None:
    """Raise :func:`not_a_tfrecord`'s error, if there is one."""
    err = not_a_tfrecord(head, path)
    if err is not None:
        raise err


def peek_start(chunks: Iterator[bytes]) -> tuple[bytes, Iterator[bytes]]:
    """The first :data:`SNIFF_BYTES` bytes of a stream of chunks (fewer only when it is
    shorter), and the stream again, whole. An error met while peeking (a damaged or cut
    stream) is raised by the returned stream where it was met, after the bytes before it."""
    got: list[bytes] = []
    size = 0
    error: Optional[BaseException] = None
    try:
        while size < SNIFF_BYTES:
            chunk = next(chunks, None)
            if chunk is None:
                break
            got.append(chunk)
            size += len(chunk)
    except Exception as err:  # (raised by the stream below, in order)
        error = err
    head = got[0] if len(got) == 1 else b"".join(got)
    return head[:SNIFF_BYTES], _again(head, error, chunks)


def _again(head: bytes, error: Optional[BaseException], rest: Iterator[bytes]) -> Iterator[bytes]:
    if head:
        yield head
    if error is not None:
        raise error
    yield from rest
