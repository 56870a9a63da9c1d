"""Files: paths, URLs and globs (``fs`` is the one file-system interface, local or fsspec),
GZIP/ZLIB compression, the writer and the readers, salvage, index files and sharded writing.

Other units import from this package only, and only these names.
"""

from . import _fs as fs
from ._ahead import ReadAhead
from ._index import (
    RandomAccessError,
    StaleIndexError,
    TFRecordFile,
    create_index,
    find_index,
    read_index,
    write_index,
)
from ._io import (
    READ_BLOCK_SIZE,
    SalvageInfo,
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordReader,
    TFRecordWriter,
    detect_compression,
    open,
    read_batches,
    read_records,
    reader_compression,
    salvage_file,
    tf_record_iterator,
)
from ._paths import PathOrFile, expand_paths, is_file_object, shard_name
from ._sharded import ShardedWriter

__all__ = [
    "READ_BLOCK_SIZE",
    "PathOrFile",
    "RandomAccessError",
    "ReadAhead",
    "SalvageInfo",
    "ShardedWriter",
    "StaleIndexError",
    "TFRecordCompressionType",
    "TFRecordFile",
    "TFRecordOptions",
    "TFRecordReader",
    "TFRecordWriter",
    "create_index",
    "detect_compression",
    "expand_paths",
    "find_index",
    "fs",
    "is_file_object",
    "open",
    "read_batches",
    "read_index",
    "read_records",
    "reader_compression",
    "salvage_file",
    "shard_name",
    "tf_record_iterator",
    "write_index",
]
