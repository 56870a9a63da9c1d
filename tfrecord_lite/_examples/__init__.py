"""``tf.train.Example`` and ``SequenceExample``: feature specs and dtypes, sparse and ragged
values, building records, the compiled parse plan and its engines, schema inference, and
whole files as NumPy columns.

Other units import from this package only, and only these names.
"""

from ._assemble import ParsedValue
from ._batches import parse_batches, parse_sequence_stream, parse_stream
from ._build import (
    bytes_feature,
    bytes_rows,
    encode_example,
    encode_sequence_example,
    float_feature,
    int64_feature,
    make_example,
    make_sequence_example,
)
from ._column_files import concat_parsed, read_examples, write_examples
from ._columnar import ColumnarValue, ExampleColumn, ExampleColumns, parse_example_columns
from ._encode_columns import encode_columns
from ._infer import (
    DEFAULT_SAMPLE,
    FeatureStats,
    Schema,
    add_records,
    infer_schema,
    schema_from_stats,
)
from ._kind import KIND_SAMPLE, KindProbe, NotExampleError, RecordKind, detect_kind
from ._parse import ParsePlan, compile_features, parse_example, parse_single_example
from ._schema import (
    DType,
    FeatureSpec,
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
    validate_features,
)
from ._sequence import (
    SequencePlan,
    compile_sequence_features,
    parse_sequence_example,
    parse_single_sequence_example,
)
from ._values import RaggedValue, SparseValue

__all__ = [
    "DEFAULT_SAMPLE",
    "KIND_SAMPLE",
    "ColumnarValue",
    "DType",
    "ExampleColumn",
    "ExampleColumns",
    "FeatureSpec",
    "FeatureStats",
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "KindProbe",
    "NotExampleError",
    "ParsePlan",
    "ParsedValue",
    "RaggedFeature",
    "RaggedValue",
    "RecordKind",
    "Schema",
    "SequencePlan",
    "SparseFeature",
    "SparseValue",
    "VarLenFeature",
    "add_records",
    "as_dtype",
    "bytes_feature",
    "bytes_rows",
    "compile_features",
    "compile_sequence_features",
    "concat_parsed",
    "detect_kind",
    "encode_columns",
    "encode_example",
    "encode_sequence_example",
    "float16",
    "float32",
    "float64",
    "float_feature",
    "infer_schema",
    "int8",
    "int16",
    "int32",
    "int64",
    "int64_feature",
    "make_example",
    "make_sequence_example",
    "parse_batches",
    "parse_example",
    "parse_example_columns",
    "parse_sequence_example",
    "parse_sequence_stream",
    "parse_single_example",
    "parse_single_sequence_example",
    "parse_stream",
    "read_examples",
    "schema_from_stats",
    "string",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "validate_features",
    "write_examples",
]
