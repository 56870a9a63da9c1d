"""The parse engines: what turns a chunk of serialized records into columns.

The contract, for every engine
------------------------------
**Takes** a chunk of records (a list of ``bytes``, or a
:class:`~tfrecord_lite._record.RecordSpans` left where the blocks were read), their
lengths where the caller has them, and the compiled plan's state for that engine:
the keys read and their dtypes, as the engine looks them up (the NumPy engine's
:class:`KeyTable`, the compiled engine's :class:`JitTable`). The records are joined
into one buffer of at most :data:`WINDOW_BYTES` (a bigger batch is cut into windows
of records, a bigger record is a window of its own), with zero bytes after the last
record so varint reads may run past a record's end (:mod:`._buffers`).

**Gives** ``(handled, columns)``: ``handled`` a bool mask over the records, and per
key read one column over the handled records, in record order: a
:class:`FastColumn` (``present``, ``counts``, the values of every record
concatenated: int64, float32, or an object array of ``bytes``), or, for a wide batch
(:func:`wide`: thousands of keys, each in a few records) where the caller takes it, a
:class:`SparseColumn` (only the records that have the key). SequenceExamples give
:class:`SequenceColumns` (context columns, and per feature-list key the steps and a
column over every step), or nothing.

**Leaves to the protobuf reference** (:mod:`._reference`) every record it cannot
read with certainty, so values, shapes and errors are always the reference's:
concatenated (merged) Examples, a key given twice, unknown fields, a ``Feature``
with two kinds set, several packed chunks in one list, keys that are not ASCII,
kinds that do not match the spec (the reference words the error), anything
malformed. A SequenceExample batch with any such record goes to the reference whole.

The engines
-----------
* ``numpy`` (:mod:`._numpy`, always there): records of one layout cut into whole
  columns from a 2-D array (:mod:`._numpy_layout`), the rest walked entry by entry,
  all records at once (:mod:`._numpy_entries`, wide batches :mod:`._numpy_wide`,
  SequenceExamples :mod:`._numpy_sequences`), keys found through a :class:`KeyTable`
  (:mod:`._numpy_keys`).
* ``jit`` (:mod:`._jit`, with numba): compiled kernels walk each record once
  (:mod:`._jit_kernels`, :mod:`._jit_columns`, :mod:`._jit_sequences`), loaded or compiled in the
  background (:mod:`._kernels`).

:func:`choose` picks the engine for a batch (one rule for Examples,
SequenceExamples and the compiled writers), and the dispatcher (:mod:`._dispatch`:
:func:`extract_examples`, :func:`extract_sequence_columns`) sends the batch there;
a plan keeps each engine's state (:class:`EngineState`: engine name -> its key
tables). The pieces every engine shares are written once: the buffer and its
windows (:mod:`._buffers`), the columns (:mod:`._output`), the key hash
(:mod:`._keyhash`), and the wire facts, one kind numbering and the tags, which the
writers share too (:mod:`tfrecord_lite._examples._feature_kinds`). No engine imports
another's private pieces; the rest of ``_examples`` imports only the names below.
"""

from __future__ import annotations

from ._buffers import WINDOW_BYTES
from ._choose import choose
from ._dispatch import EngineState, extract_examples, extract_sequence_columns
from ._jit import JitTable
from ._kernels import jit_available
from ._kernels import load as load_kernels
from ._numpy_keys import KeyTable
from ._output import (
    AnyColumn,
    FastColumn,
    SequenceColumns,
    SparseColumn,
    dense,
    enabled,
    grid_rows,
    merge_columns,
    merge_sparse,
    wide,
)
from ._reference import decode_records, reference_column, reference_columns

__all__ = [
    "WINDOW_BYTES",
    "AnyColumn",
    "EngineState",
    "FastColumn",
    "JitTable",
    "KeyTable",
    "SequenceColumns",
    "SparseColumn",
    "choose",
    "decode_records",
    "dense",
    "enabled",
    "extract_examples",
    "extract_sequence_columns",
    "grid_rows",
    "jit_available",
    "load_kernels",
    "merge_columns",
    "merge_sparse",
    "reference_column",
    "reference_columns",
    "wide",
]
