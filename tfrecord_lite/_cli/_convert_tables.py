"""``convert``'s table side: Parquet and Arrow IPC (Feather) files read a batch at a
time, and written atomically (a temporary file beside the output, renamed when every
row is in; on any error or Ctrl-C it is removed and nothing is left under the name).

Columns are as in :mod:`tfrecord_lite.arrow`: TFRecords become tables through the read
plan (the schema inferred from the first records), tables become Examples (or
SequenceExamples, for feature-list columns) through ``table_records``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator, Iterator
from typing import Any, Optional, Union

from .._tables import require, require_pyarrow

__all__ = ["TableFile", "dictionary_columns", "read_tables", "schema_of"]


def _pyarrow(fmt: str) -> tuple[Any, Any]:
    """pyarrow, and the module that writes ``fmt`` (``pyarrow.parquet`` / ``pyarrow.ipc``)."""
    who = f"convert to/from {'Parquet' if fmt == 'parquet' else 'Arrow'}"
    pa = require_pyarrow(who)
    if fmt == "parquet":
        return pa, require("pyarrow.parquet", who, "pyarrow", "arrow")
    return pa, pa.ipc


#: A Parquet row group holds at most this many rows, or ROW_GROUP_BYTES of them.
ROW_GROUP_ROWS = 65_536
ROW_GROUP_BYTES = 64 * 2**20
#: The first row group's rows; each next one twice the last, up to ROW_GROUP_ROWS.
FIRST_ROW_GROUP = 8192
#: A column is dictionary-encoded when the first table's values of it are at most this
#: share distinct (coordinates, timestamps, ids: hashed for nothing, and bigger).
DICTIONARY_SHARE = 0.5
#: Values of a column looked at for that (the first ones of the first table): the
#: first DICTIONARY_PEEK, and DICTIONARY_SAMPLE where those do not tell.
DICTIONARY_PEEK = 1024
DICTIONARY_SAMPLE = 4096


class TableFile:
    """A Parquet or Arrow IPC file written atomically, a table at a time.

    Parquet rows are written in row groups as they come: the first of
    :data:`FIRST_ROW_GROUP` rows, each next one twice as many, up to
    :data:`ROW_GROUP_ROWS` rows (or :data:`ROW_GROUP_BYTES` bytes), so encoding
    starts while later tables are still being made and little is left to encode
    after the last one, while the row groups of a big file stay big (readers skip
    and read whole row groups). Columns whose first values repeat get dictionaries
    (:func:`dictionary_columns`). Arrow IPC record batches are written as they come.
    """

    def __init__(self, path: str, fmt: str) -> None:
        self.path = path
        self.format = fmt
        self._pa, self._module = _pyarrow(fmt)
        head, tail = os.path.split(path)
        self.tmp = os.path.join(head, f".{tail}.tmp-{os.getpid()}")
        self._writer: Optional[Any] = None
        self._pending: list[Any] = []
        self._rows = 0
        self._bytes = 0
        self._group = FIRST_ROW_GROUP

    def _open(self, schema: Any, first: Optional[Any] = None) -> Any:
        if self._writer is None:
            if self.format == "parquet":
                use = True if first is None else dictionary_columns(first, self._module)
                self._writer = self._module.ParquetWriter(self.tmp, schema, use_dictionary=use)
            else:
                self._writer = self._module.new_file(self.tmp, schema)
        return self._writer

    def write(self, table: Any) -> None:
        """Append the table's rows (its schema must be the first table's)."""
        writer = self._open(table.schema, table)
        if self.format != "parquet":
            writer.write_table(table)
            return
        self._pending.append(table)
        self._rows += table.num_rows
        self._bytes += table.nbytes
        if self._bytes >= ROW_GROUP_BYTES:
            self._flush()
        while self._rows >= self._target():
            self._flush(self._target())

    def _target(self) -> int:
        return max(1, min(self._group, ROW_GROUP_ROWS))

    def _flush(self, rows: Optional[int] = None) -> None:
        """Write ``rows`` of the pending rows (all of them by default) as one row group."""
        if not self._pending:
            return
        table = (
            self._pending[0] if len(self._pending) == 1 else self._pa.concat_tables(self._pending)
        )
        rows = table.num_rows if rows is None else rows
        rest = table.slice(rows)
        self._pending = [rest] if rest.num_rows else []
        self._rows = rest.num_rows
        self._bytes = rest.nbytes if rest.num_rows else 0
        assert self._writer is not None
        group = table.slice(0, rows) if rest.num_rows else table
        self._writer.write_table(group, row_group_size=max(rows, 1))
        self._group = min(2 * self._group, ROW_GROUP_ROWS)

    def commit(self, schema: Any) -> None:
        """Close the file and give it its name (``schema`` for a file of no tables)."""
        writer = self._open(schema)
        self._flush()
        writer.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        """Drop what was written: the temporary file is removed."""
        self._pending = []
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
        with contextlib.suppress(OSError):
            os.remove(self.tmp)


def dictionary_columns(table: Any, parquet: Any) -> Union[bool, list[str]]:
    """The Parquet columns (leaf paths) to dictionary-encode: those whose first
    :data:`DICTIONARY_SAMPLE` values in ``table`` are at most :data:`DICTIONARY_SHARE`
    distinct (or hold none). ``True`` (every column) where the leaves cannot be told."""
    import io

    pa = require_pyarrow()
    compute = require("pyarrow.compute", "convert to Parquet", "pyarrow", "arrow")
    empty = io.BytesIO()  # the Parquet schema's leaf paths, from a file of no rows
    parquet.ParquetWriter(empty, table.schema).close()
    empty.seek(0)
    schema = parquet.ParquetFile(empty).schema
    paths = [schema.column(i).path for i in range(len(schema))]
    leaves: list[Any] = []
    for column in table.columns:
        head = column.slice(0, DICTIONARY_SAMPLE)  # (a list's values: at least so many)
        found = _leaves(pa, head.combine_chunks() if isinstance(head, pa.ChunkedArray) else head)
        if found is None:
            return True
        leaves += found
    if len(leaves) != len(paths):
        return True
    return [path for path, values in zip(paths, leaves) if _repeats(pa, compute, values)]


def _repeats(pa: Any, compute: Any, values: Any) -> bool:
    """Whether a column's first values are at most :data:`DICTIONARY_SHARE` distinct:
    judged on the first :data:`DICTIONARY_PEEK` where they are clearly few or clearly
    all different (hashing costs about 25 ns a value), else on :data:`DICTIONARY_SAMPLE`."""
    for size in (DICTIONARY_PEEK, DICTIONARY_SAMPLE):
        head = values.slice(0, size)
        try:
            distinct = len(compute.unique(head))
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            return True  # a type it cannot hash here: a dictionary, as by default
        share = distinct / max(len(head), 1)
        if len(head) == len(values) or share <= DICTIONARY_SHARE / 2 or share >= 0.9:
            break
    return share <= DICTIONARY_SHARE


def _leaves(pa: Any, arr: Any) -> Optional[list[Any]]:
    """The leaf arrays of ``arr`` in Parquet's column order (``None``: a type not walked)."""
    typ = arr.type
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        return _leaves(pa, arr.flatten())
    if pa.types.is_struct(typ):
        out: list[Any] = []
        for i in range(typ.num_fields):
            found = _leaves(pa, arr.field(i))
            if found is None:
                return None
            out += found
        return out
    if pa.types.is_nested(typ) or pa.types.is_dictionary(typ):
        return None
    return [arr]


def _open_arrow(pa: Any, source: Any, path: str) -> Any:
    """A reader of an Arrow IPC file (Feather v2), or of the IPC stream format."""
    try:
        return pa.ipc.open_file(source)
    except pa.ArrowInvalid:  # no footer: perhaps the stream format
        source.seek(0)
    try:
        return pa.ipc.open_stream(source)
    except pa.ArrowInvalid:
        raise OSError(
            f"{path}: not an Arrow IPC (Feather v2) file or stream; write one with "
            "pyarrow.feather.write_feather or pyarrow.ipc.new_file"
        ) from None


def _batches(pa: Any, module: Any, path: str, fmt: str) -> Generator[Any, None, None]:
    if fmt == "parquet":
        try:
            parquet = module.ParquetFile(path)
        except pa.ArrowInvalid as e:
            raise OSError(f"{path}: not a Parquet file ({e})") from None
        yield parquet.schema_arrow
        yield from parquet.iter_batches()
        return
    with pa.memory_map(path) as source:
        reader = _open_arrow(pa, source, path)
        yield reader.schema
        if isinstance(reader, pa.ipc.RecordBatchFileReader):
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)
        else:
            yield from reader


def schema_of(path: str, fmt: str) -> Any:
    """The Arrow schema of a Parquet or Arrow IPC file."""
    pa, module = _pyarrow(fmt)
    batches = _batches(pa, module, path, fmt)
    try:
        return next(batches)
    finally:
        batches.close()


def read_tables(path: str, fmt: str) -> Iterator[Any]:
    """The rows of a Parquet or Arrow IPC file as tables of one record batch each."""
    pa, module = _pyarrow(fmt)
    batches = _batches(pa, module, path, fmt)
    next(batches)  # the schema
    for batch in batches:
        yield pa.Table.from_batches([batch])
