"""Files: paths, URLs and globs (``fs`` is the one file-system interface, local or fsspec),
GZIP/ZLIB compression, the writer and the readers, salvage, index files and random access
(``TFRecordFile``: ``f[i]`` is the one random-access read, one ``pread`` and both CRC
checks), and sharded writing.

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
from ._indexonce import ensure_index, indexed_count, known_count
from ._iterator import tf_record_iterator
from ._map_ahead import cores, map_ahead
from ._options import TFRecordCompressionType, TFRecordOptions, reader_compression
from ._paths import PathOrFile, expand_paths, is_file_object, shard_name
from ._private import UnsafeDirectoryError, private_directory, why_unsafe
from ._reader import TFRecordReader, open
from ._salvage import Damage, Record, SalvageInfo, salvage, salvage_file
from ._sharded import ShardedWriter
from ._shardset import (
    IncompleteShardSetError,
    InvalidManifestError,
    check_shard_records,
    check_shard_set,
)
from ._sniff import NotATFRecordError, check_start, detect_compression, sniff_format
from ._stream import READ_BLOCK_SIZE, read_batches, read_records
from ._writer import FileInUseError, TFRecordWriter

__all__ = [
    "READ_BLOCK_SIZE",
    "Damage",
    "FileInUseError",
    "IncompleteShardSetError",
    "InvalidManifestError",
    "NotATFRecordError",
    "PathOrFile",
    "RandomAccessError",
    "ReadAhead",
    "Record",
    "SalvageInfo",
    "ShardedWriter",
    "StaleIndexError",
    "TFRecordCompressionType",
    "TFRecordFile",
    "TFRecordOptions",
    "TFRecordReader",
    "TFRecordWriter",
    "UnsafeDirectoryError",
    "check_shard_records",
    "check_shard_set",
    "check_start",
    "cores",
    "create_index",
    "detect_compression",
    "ensure_index",
    "expand_paths",
    "find_index",
    "fs",
    "indexed_count",
    "is_file_object",
    "known_count",
    "map_ahead",
    "open",
    "private_directory",
    "read_batches",
    "read_index",
    "read_records",
    "reader_compression",
    "salvage",
    "salvage_file",
    "shard_name",
    "sniff_format",
    "tf_record_iterator",
    "why_unsafe",
    "write_index",
]
