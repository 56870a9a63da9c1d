"""What a file is, from its first bytes: plain, GZIP or ZLIB TFRecord, or none of them.

The one compression sniffer of the package. Auto-detection (``compression="auto"``,
the readers' default), per file: a valid plain record header (its length CRC
verifies) means plain, even if the bytes could also start a gzip or zlib stream;
otherwise the gzip magic ``1f 8b`` means GZIP and a valid zlib header (CMF method
8, check bits) means ZLIB; anything else is read as plain, so its error says so.
"""

from __future__ import annotations

from typing import Optional

from .._record import HEADER_SIZE, header_ok

__all__ = ["detect_compression", "looks_like_tfrecord", "sniff_compression"]

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
