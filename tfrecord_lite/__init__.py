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

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import TYPE_CHECKING, Any

from . import _installed
from ._version import __version__

if TYPE_CHECKING:  # (for type checkers and IDEs; at run time, on first use: __getattr__ below)
    from . import compat, data, image, io, python_io, train
    from ._data import AUTOTUNE, IteratorStateError, TFRecordDataset
    from ._decoding import (
        ImageFolderSummary,
        decode_raw,
        decode_with_pillow,
        encode_image,
        write_image_folder,
    )
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

#: Each public name (``__version__`` aside) -> the unit that holds it
#: (tests/api/test_lazy_import.py checks this against ``__all__`` and the imports above).
_FROM: dict[str, str] = {
    "AUTOTUNE": "_data",
    "IteratorStateError": "_data",
    "TFRecordDataset": "_data",
    "decode_image": "_decoding",
    "decode_raw": "_decoding",
    "decode_with_pillow": "_decoding",
    "encode_image": "_decoding",
    "ImageFolderSummary": "_decoding",
    "write_image_folder": "_decoding",
    "ClosedError": "_errors",
    "CompressionError": "_errors",
    "CorruptRecordError": "_errors",
    "DataLossError": "_errors",
    "GraphOnlyError": "_errors",
    "ParseError": "_errors",
    "RecordTooLargeError": "_errors",
    "TFRecordError": "_errors",
    "TruncatedRecordError": "_errors",
    "as_dtype": "_examples",
    "bytes_feature": "_examples",
    "bytes_rows": "_examples",
    "concat_parsed": "_examples",
    "DType": "_examples",
    "encode_example": "_examples",
    "encode_sequence_example": "_examples",
    "FeatureSpec": "_examples",
    "FeatureStats": "_examples",
    "FixedLenFeature": "_examples",
    "FixedLenSequenceFeature": "_examples",
    "float16": "_examples",
    "float32": "_examples",
    "float64": "_examples",
    "float_feature": "_examples",
    "infer_schema": "_examples",
    "int16": "_examples",
    "int32": "_examples",
    "int64": "_examples",
    "int64_feature": "_examples",
    "int8": "_examples",
    "make_example": "_examples",
    "make_sequence_example": "_examples",
    "NotExampleError": "_examples",
    "parse_example": "_examples",
    "parse_sequence_example": "_examples",
    "parse_single_example": "_examples",
    "parse_single_sequence_example": "_examples",
    "RaggedFeature": "_examples",
    "RaggedValue": "_examples",
    "read_examples": "_examples",
    "Schema": "_examples",
    "SparseFeature": "_examples",
    "SparseValue": "_examples",
    "string": "_examples",
    "uint16": "_examples",
    "uint32": "_examples",
    "uint64": "_examples",
    "uint8": "_examples",
    "VarLenFeature": "_examples",
    "write_examples": "_examples",
    "create_index": "_files",
    "detect_compression": "_files",
    "expand_paths": "_files",
    "FileInUseError": "_files",
    "find_index": "_files",
    "IncompleteShardSetError": "_files",
    "InvalidManifestError": "_files",
    "NotATFRecordError": "_files",
    "open": "_files",
    "RandomAccessError": "_files",
    "read_index": "_files",
    "read_records": "_files",
    "shard_name": "_files",
    "ShardedWriter": "_files",
    "StaleIndexError": "_files",
    "tf_record_iterator": "_files",
    "TFRecordCompressionType": "_files",
    "TFRecordFile": "_files",
    "TFRecordOptions": "_files",
    "TFRecordReader": "_files",
    "TFRecordWriter": "_files",
    "write_index": "_files",
    "available_crc_backends": "_record",
    "crc32c": "_record",
    "crc_backend": "_record",
    "encode_record": "_record",
    "encode_records": "_record",
    "find_next_record": "_record",
    "iter_records": "_record",
    "masked_crc32c": "_record",
    "RecordDecoder": "_record",
    "SkippedDataWarning": "_record",
    "SkipReport": "_record",
    "options": "_settings",
}
#: The public names that a unit holds under another name.
_RENAMED = {"crc32c": "crc32c_checksum", "decode_image": "tf_decode_image"}
#: The TensorFlow-named namespaces (``tfr.io``, ``tfr.train``...), modules of their own.
_NAMESPACES = frozenset({"compat", "data", "image", "io", "python_io", "train"})


def _unit(unit: str) -> ModuleType:
    """The unit (a subpackage, or a namespace) named ``unit``, imported now. Each import
    is spelled out, so that what it loads is plain to readers and to the layering test
    (``import_module``, not ``from . import``: that asks this module's ``__getattr__``
    for the name first)."""
    if unit == "_data":
        return importlib.import_module("._data", __name__)
    if unit == "_decoding":
        return importlib.import_module("._decoding", __name__)
    if unit == "_errors":
        return importlib.import_module("._errors", __name__)
    if unit == "_examples":
        return importlib.import_module("._examples", __name__)
    if unit == "_files":
        return importlib.import_module("._files", __name__)
    if unit == "_record":
        return importlib.import_module("._record", __name__)
    if unit == "_settings":
        return importlib.import_module("._settings", __name__)
    if unit == "compat":
        return importlib.import_module(".compat", __name__)
    if unit == "data":
        return importlib.import_module(".data", __name__)
    if unit == "image":
        return importlib.import_module(".image", __name__)
    if unit == "io":
        return importlib.import_module(".io", __name__)
    if unit == "python_io":
        return importlib.import_module(".python_io", __name__)
    if unit == "train":
        return importlib.import_module(".train", __name__)
    raise AssertionError(unit)


def __getattr__(name: str) -> Any:
    """A public name, imported on first use (``import tfrecord_lite`` itself loads only
    the version and the install check, so a command or a worker starts quickly); a name
    TensorFlow has and this library leaves to NumPy (``tfr.reshape``) is an
    ``AttributeError`` that gives the NumPy one-liner and points to the porting table."""
    if name in _NAMESPACES:
        return _unit(name)
    unit = _FROM.get(name)
    if unit is None:
        if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is not None:
            # a submodule not imported yet (``from . import example_pb2`` asks here first,
            # then imports it), or a private name
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from ._decoding import missing_name

        missing_name(__name__, name)
    value = getattr(_unit(unit), _RENAMED.get(name, name))
    globals()[name] = value  # (the next look-up does not come here)
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


# The unrelated ``tfrecord-lite`` distribution installs a module of the same name: say so
# when both are installed in this environment (one metadata look-up when it is not).
_installed.check(__file__)
