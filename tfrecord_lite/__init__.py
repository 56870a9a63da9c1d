"""tfrecord_lite: TensorFlow's TFRecord files and ``tf.train.Example`` records, without TensorFlow.

Write and read TFRecord files (plain, GZIP, ZLIB) byte-compatible with TensorFlow,
and get records back as NumPy arrays. Names mirror TensorFlow's, so a script
ports by changing ``tf.io.`` / ``tf.train.`` into ``tfr.``::

    import tfrecord_lite as tfr

    with tfr.TFRecordWriter("train.tfrecord") as w:
        w.write(serialized_bytes)

    for record in tfr.tf_record_iterator("train.tfrecord"):
        ...

The layout, top layer first. A module imports only from its own unit, from the units
of its own row (integrations excepted: they never import each other) or from the rows
below; across units only public names travel, through the unit's package
(``tests/api/test_layers.py`` checks all of it, and that this table says the same):

==============================================  ==============================================
unit                                            what it holds
==============================================  ==============================================
``__init__``, ``__main__``, ``demo``            the public API assembled, ``python -m``, the demo
``_cli/``                                       the ``tfrecord-lite`` command, a module a command
``torch``, ``arrow``, ``ray``, ``dask``,        integrations, each an optional extra: PyTorch,
``spark``, ``daft``, ``hf``, ``polars``,        Arrow/pandas, Ray Data, Dask, Spark 4, Daft,
``tfds/``                                       Hugging Face datasets, Polars, TFDS directories
``io``, ``train``, ``data``, ``python_io``,     the TensorFlow-named namespaces (``tf.io``,
``compat``, ``image``                           ``tf.train``, ``tf.data``, TF1 names)
``_tables/``                                    what the table integrations share: the Arrow
                                                type mapping, read plan, file pieces, extras
``_data/``                                      datasets: sources, ops, cache, collate
``_decoding/``                                  decode_raw, images, tensors, image folders
``_examples/``                                  feature specs, values, building Examples, the
                                                compiled parse plan and its engines, inference
``_files/``                                     paths and URLs, compression, writer, readers,
                                                salvage, index files, sharded writing
``_record/``                                    the record format: framing, CRC, scanning,
                                                resync (bytes in, bytes out: no I/O)
``_errors``, ``_version``, ``_installed``,      exceptions, the version, the install check,
``_settings``                                   the settings (every environment variable)
``example_pb2``, ``feature_pb2``,               generated protobuf messages (a private proto
``tensor_pb2``                                  package, so they coexist with TensorFlow's)
==============================================  ==============================================
"""

from . import _installed, compat, data, image, io, python_io, train
from ._data import AUTOTUNE, IteratorStateError, TFRecordDataset
from ._decoding import (
    ImageFolderSummary,
    decode_raw,
    decode_with_pillow,
    encode_image,
    write_image_folder,
)
from ._decoding import missing_attributes as _missing_attributes
from ._decoding import tf_decode_image as decode_image
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
from ._examples import (
    DType,
    FeatureSpec,
    FeatureStats,
    FixedLenFeature,
    FixedLenSequenceFeature,
    NotExampleError,
    RaggedFeature,
    RaggedValue,
    Schema,
    SparseFeature,
    SparseValue,
    VarLenFeature,
    as_dtype,
    bytes_feature,
    bytes_rows,
    concat_parsed,
    encode_example,
    encode_sequence_example,
    float16,
    float32,
    float64,
    float_feature,
    infer_schema,
    int8,
    int16,
    int32,
    int64,
    int64_feature,
    make_example,
    make_sequence_example,
    parse_example,
    parse_sequence_example,
    parse_single_example,
    parse_single_sequence_example,
    read_examples,
    string,
    uint8,
    uint16,
    uint32,
    uint64,
    write_examples,
)
from ._files import (
    FileInUseError,
    IncompleteShardSetError,
    InvalidManifestError,
    NotATFRecordError,
    RandomAccessError,
    ShardedWriter,
    StaleIndexError,
    TFRecordCompressionType,
    TFRecordFile,
    TFRecordOptions,
    TFRecordReader,
    TFRecordWriter,
    create_index,
    detect_compression,
    expand_paths,
    find_index,
    open,
    read_index,
    read_records,
    shard_name,
    tf_record_iterator,
    write_index,
)
from ._record import (
    RecordDecoder,
    SkippedDataWarning,
    SkipReport,
    available_crc_backends,
    crc_backend,
    encode_record,
    encode_records,
    find_next_record,
    iter_records,
    masked_crc32c,
)
from ._record import crc32c_checksum as crc32c
from ._settings import options
from ._version import __version__

__all__ = [
    "AUTOTUNE",
    "ClosedError",
    "CompressionError",
    "CorruptRecordError",
    "DType",
    "DataLossError",
    "FeatureSpec",
    "FeatureStats",
    "FileInUseError",
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "GraphOnlyError",
    "ImageFolderSummary",
    "IncompleteShardSetError",
    "InvalidManifestError",
    "IteratorStateError",
    "NotATFRecordError",
    "NotExampleError",
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
    "decode_with_pillow",
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
    "options",
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
    "write_image_folder",
    "write_index",
]

# The unrelated ``tfrecord-lite`` distribution installs a module of the same name: say so
# when both are installed in this environment (one metadata look-up when it is not).
_installed.check(__file__)

#: ``tfr.reshape`` and the other TensorFlow tensor ops left to NumPy: the error gives the
#: NumPy one-liner and points to the porting table.
__getattr__ = _missing_attributes(__name__)
