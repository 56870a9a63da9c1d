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
from typing import Any, Optional

from .._tables import require, require_pyarrow

__all__ = ["TableFile", "read_tables", "schema_of"]


def _pyarrow(fmt: str) -> tuple[Any, Any]:
    """pyarrow, and the module that writes ``fmt`` (``pyarrow.parquet`` / ``pyarrow.ipc``)."""
    who = f"convert to/from {'Parquet' if fmt == 'parquet' else 'Arrow'}"
    pa = require_pyarrow(who)
    if fmt == "parquet":
        return pa, require("pyarrow.parquet", who, "pyarrow", "arrow")
    return pa, pa.ipc


#: A Parquet row group is written once this many rows, or ROW_GROUP_BYTES of them, are in.
ROW_GROUP_ROWS = 65_536
ROW_GROUP_BYTES = 64 * 2**20


class TableFile:
    """A Parquet or Arrow IPC file written atomically, a table at a time.

    Parquet tables are gathered into row groups of up to :data:`ROW_GROUP_ROWS` rows
    or :data:`ROW_GROUP_BYTES` bytes (readers skip and read whole row groups, so tiny
    ones make a slow file); Arrow IPC record batches are written as they come.
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

    def _open(self, schema: Any) -> Any:
        if self._writer is None:
            if self.format == "parquet":
                self._writer = self._module.ParquetWriter(self.tmp, schema)
            else:
                self._writer = self._module.new_file(self.tmp, schema)
        return self._writer

    def write(self, table: Any) -> None:
        """Append the table's rows (its schema must be the first table's)."""
        writer = self._open(table.schema)
        if self.format != "parquet":
            writer.write_table(table)
            return
        self._pending.append(table)
        self._rows += table.num_rows
        self._bytes += table.nbytes
        if self._rows >= ROW_GROUP_ROWS or self._bytes >= ROW_GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            table = self._pa.concat_tables(self._pending)
            self._pending, self._rows, self._bytes = [], 0, 0
            assert self._writer is not None
            self._writer.write_table(table, row_group_size=max(table.num_rows, 1))

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
