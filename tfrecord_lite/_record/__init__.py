"""The TFRecord record format, bytes in and bytes out (no I/O): the format itself and its
one header check, CRC-32C and the masked checksum, framing records, decoding streams,
scanning blocks for record spans (following their length fields with a loop a layer
above may replace with a compiled one), and finding the next record after damage.

Other units import from this package only, and only these names.
"""

from ._crc import (
    available_crc_backends,
    crc32c,
    crc32c_checksum,
    crc32c_combine,
    crc32c_of_zeros,
    crc_backend,
    mask,
    masked_crc32c,
)
from ._decoder import RecordDecoder, iter_records
from ._format import (
    FOOTER_SIZE,
    HEADER_SIZE,
    LENGTH,
    RECORD_OVERHEAD,
    as_buffer,
    cut_short,
    data_ok,
    footer_of_crc,
    header_error,
    header_ok,
    record_footer,
    record_header,
    truncated_error,
    unframe,
)
from ._framing import FramedRecords, encode_record, encode_records, frame_parts, frame_rows
from ._lengths import follow_lengths, length_follower, use_length_follower
from ._resync import (
    SkippedDataWarning,
    SkipReport,
    check_max_record_size,
    check_on_error,
    find_next_record,
    located,
    next_header,
    warn_skip,
)
from ._scan import Buffer, RecordSpans, join_records, record_lengths, unaligned

__all__ = [
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "LENGTH",
    "RECORD_OVERHEAD",
    "Buffer",
    "FramedRecords",
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
    "crc32c_of_zeros",
    "crc_backend",
    "cut_short",
    "data_ok",
    "encode_record",
    "encode_records",
    "find_next_record",
    "follow_lengths",
    "footer_of_crc",
    "frame_parts",
    "frame_rows",
    "header_error",
    "header_ok",
    "iter_records",
    "join_records",
    "length_follower",
    "located",
    "mask",
    "masked_crc32c",
    "next_header",
    "record_footer",
    "record_header",
    "record_lengths",
    "truncated_error",
    "unaligned",
    "unframe",
    "use_length_follower",
    "warn_skip",
]
