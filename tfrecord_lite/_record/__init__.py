"""The TFRecord record format, bytes in and bytes out (no I/O): CRC-32C and the masked
checksum, framing records, scanning blocks for record spans, and finding the next record
after damage.

Other units import from this package only, and only these names.
"""

from ._crc import available_crc_backends, crc32c, crc32c_checksum, crc_backend, mask, masked_crc32c
from ._framing import (
    HEADER_SIZE,
    RECORD_OVERHEAD,
    FramedRecords,
    RecordDecoder,
    as_buffer,
    encode_record,
    encode_records,
    frame_parts,
    frame_rows,
    header_error,
    iter_records,
    record_header,
    truncated_error,
)
from ._recover import (
    Damage,
    Item,
    Record,
    SkippedDataWarning,
    SkipReport,
    check_max_record_size,
    check_on_error,
    crc32c_combine,
    find_next_record,
    find_next_record_in_file,
    located,
    salvage,
    warn_skip,
)
from ._scan import Buffer, RecordSpans, unaligned

__all__ = [
    "HEADER_SIZE",
    "RECORD_OVERHEAD",
    "Buffer",
    "Damage",
    "FramedRecords",
    "Item",
    "Record",
    "RecordDecoder",
    "RecordSpans",
    "SkipReport",
    "SkippedDataWarning",
    "as_buffer",
    "available_crc_backends",
    "check_max_record_size",
    "check_on_error",
    "crc32c",
    "crc32c_checksum",
    "crc32c_combine",
    "crc_backend",
    "encode_record",
    "encode_records",
    "find_next_record",
    "find_next_record_in_file",
    "frame_parts",
    "frame_rows",
    "header_error",
    "iter_records",
    "located",
    "mask",
    "masked_crc32c",
    "record_header",
    "salvage",
    "truncated_error",
    "unaligned",
    "warn_skip",
]
