"""tfrecord_lite: TensorFlow's TFRecord files and ``tf.train.Example`` records, without TensorFlow.

Write and read TFRecord files (plain, GZIP, ZLIB) byte-compatible with TensorFlow,
and get records back as NumPy arrays. Names mirror TensorFlow's, so a script
ports by changing ``tf.io.`` / ``tf.train.`` into ``tfr.``::

    import tfrecord_lite as tfr

    with tfr.TFRecordWriter("train.tfrecord") as w:
        w.write(serialized_bytes)

    for record in tfr.tf_record_iterator("train.tfrecord"):
        ...

Layers, bottom up; a module imports only from its own row or the rows above it:

==========================================  ===================================================
``example_pb2``, ``feature_pb2``,           generated protobuf messages (private proto package)
``tensor_pb2``
``_errors``, ``_version``                   exceptions and the version, used by every layer
``_crc``                                    CRC-32C backends and TensorFlow's masked CRC
``_framing``, ``_scan``, ``_recover``       sans-I/O record framing, block scanning, recovery
``_fs``, ``_paths``, ``_compress``,        files and URLs, globs, shards, GZIP/ZLIB, writer and
``_io``, ``_ahead``                         reader, reading ahead in a thread
``_schema``, ``_values``, ``_wire``         feature specs and dtypes, sparse/ragged values
``_example``                                building Examples (wire format, protobuf objects)
``_parse``, ``_fastparse``, ``_infer``      parsing into NumPy (vectorized), schema inference
``_decode``, ``_arrays``, ``_tensor``       decode_raw and images; whole files as NumPy columns;
                                            serialize_tensor / parse_tensor
``_index``, ``_sharded``, ``_dataset``      random access, sharded writing, datasets,
``torch``, ``_cli``, ``_images``            PyTorch, the command line and its helpers,
``_progress``, ``io``, ``train``, ``data``  and the TensorFlow-named namespaces
``python_io``, ``compat``, ``image``
``arrow``, ``ray``, ``dask``                Arrow/pandas tables, Ray Data, Dask (extras)
==========================================  ===================================================
"""

from . import (
    compat,
    data,
    image,
    io,
    python_io,
    train,
)
from ._arrays import concat_parsed, read_examples, write_examples
from ._crc import available_crc_backends, crc_backend, masked_crc32c
from ._crc import crc32c_checksum as crc32c
from ._dataset import AUTOTUNE, TFRecordDataset
from ._decode import decode_image, decode_raw, encode_image
from ._errors import (
    ClosedError,
    CompressionError,
    CorruptRecordError,
    DataLossError,
    GraphOnlyError,
    ParseError,
    RecordTooLargeError,
    TFRecordError,
    TruncatedRecordError,
)
from ._example import (
    bytes_feature,
    bytes_rows,
    encode_example,
    encode_sequence_example,
    float_feature,
    int64_feature,
    make_example,
    make_sequence_example,
)
from ._framing import RecordDecoder, encode_record, encode_records, iter_records
from ._index import (
    RandomAccessError,
    StaleIndexError,
    TFRecordFile,
    create_index,
    find_index,
    read_index,
    write_index,
)
from ._infer import FeatureStats, Schema, infer_schema
from ._io import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordReader,
    TFRecordWriter,
    detect_compression,
    open,
    read_records,
    tf_record_iterator,
)
from ._parse import (
    parse_example,
    parse_sequence_example,
    parse_single_example,
    parse_single_sequence_example,
)
from ._paths import expand_paths, shard_name
from ._recover import SkippedDataWarning, SkipReport, find_next_record
from ._schema import (
    DType,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    SparseFeature,
    VarLenFeature,
    as_dtype,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    string,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._sharded import ShardedWriter
from ._values import RaggedValue, SparseValue
from ._version import __version__

__all__ = [
    "AUTOTUNE",
    "ClosedError",
    "CompressionError",
    "CorruptRecordError",
    "DType",
    "DataLossError",
    "FeatureStats",
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "GraphOnlyError",
    "ParseError",
    "RaggedFeature",
    "RaggedValue",
    "RandomAccessError",
    "RecordDecoder",
    "RecordTooLargeError",
    "Schema",
    "ShardedWriter",
    "SkipReport",
    "SkippedDataWarning",
    "SparseFeature",
    "SparseValue",
    "StaleIndexError",
    "TFRecordCompressionType",
    "TFRecordDataset",
    "TFRecordError",
    "TFRecordFile",
    "TFRecordOptions",
    "TFRecordReader",
    "TFRecordWriter",
    "TruncatedRecordError",
    "VarLenFeature",
    "__version__",
    "as_dtype",
    "available_crc_backends",
    "bytes_feature",
    "bytes_rows",
    "compat",
    "concat_parsed",
    "crc32c",
    "crc_backend",
    "create_index",
    "data",
    "decode_image",
    "decode_raw",
    "detect_compression",
    "encode_example",
    "encode_image",
    "encode_record",
    "encode_records",
    "encode_sequence_example",
    "expand_paths",
    "find_index",
    "find_next_record",
    "float16",
    "float32",
    "float64",
    "float_feature",
    "image",
    "infer_schema",
    "int8",
    "int16",
    "int32",
    "int64",
    "int64_feature",
    "io",
    "iter_records",
    "make_example",
    "make_sequence_example",
    "masked_crc32c",
    "open",
    "parse_example",
    "parse_sequence_example",
    "parse_single_example",
    "parse_single_sequence_example",
    "python_io",
    "read_examples",
    "read_index",
    "read_records",
    "shard_name",
    "string",
    "tf_record_iterator",
    "train",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "write_examples",
    "write_index",
]
