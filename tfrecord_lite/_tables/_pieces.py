"""File pieces: what one read task of a table engine reads, and reading it into tables.

A piece is a whole file, or a range of records of a large uncompressed file that
has an index file (``<file>.index``, see :func:`tfrecord_lite.create_index`).
Ray read tasks, Dask partitions, Spark partitions and Daft scan tasks are each
one piece; :class:`PieceReader` (picklable, sent to the workers) reads a piece
into Arrow tables of its :class:`ReadPlan`'s schema.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from .._errors import TFRecordError
from .._examples import DEFAULT_SAMPLE, FeatureSpec
from .._files import (
    TFRecordFile,
    detect_compression,
    expand_paths,
    find_index,
    read_index,
)
from .._files import fs as _fs
from ._extras import require_pyarrow
from ._plan import DEFAULT_BATCH_SIZE, ReadPlan
from ._stream import stream_tables

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

#: A large indexed file is split into read tasks of at least this many records.
DEFAULT_RECORDS_PER_TASK = 100_000

#: What the engines' readers take as ``paths``.
Paths = Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]


def expand(paths: Paths, storage_options: Optional[Mapping[str, Any]] = None) -> list[str]:
    """Paths, globs, directories, ``name@N`` specs and URLs -> files (URLs keep their options)."""
    files = expand_paths(paths, storage_options=storage_options)
    out: list[str] = []
    for f in files:
        if not isinstance(f, (str, os.PathLike)):
            raise TypeError("read tasks run in other processes: pass paths or URLs, not files")
        out.append(f if isinstance(f, str) else os.fspath(f))
    return out


class Piece:
    """One read task's share: a whole file, or records ``[start, stop)`` of an indexed file."""

    __slots__ = ("index_path", "path", "size", "start", "stop")

    def __init__(
        self,
        path: str,
        size: Optional[int],
        start: Optional[int] = None,
        stop: Optional[int] = None,
        index_path: Optional[str] = None,
    ) -> None:
        self.path = path
        self.size = size
        self.start = start
        self.stop = stop
        self.index_path = index_path

    @property
    def rows(self) -> Optional[int]:
        """The number of records (known for a record range only)."""
        return None if self.start is None or self.stop is None else self.stop - self.start

    def __repr__(self) -> str:
        where = "" if self.start is None else f"[{self.start}:{self.stop}]"
        return f"Piece({self.path!r}{where})"


def split_file(path: str, per_task: int, compression: Optional[str] = "auto") -> list[Piece]:
    """How one file is read: whole, or in record ranges when it is large, plain and indexed."""
    if _fs.is_url(path):
        return [Piece(path, None)]
    try:
        size = os.path.getsize(path)
    except OSError:
        return [Piece(path, None)]  # the read task reports the error
    index_path = find_index(path)
    if index_path is None or compression not in ("auto", None, ""):
        return [Piece(path, size)]
    with open(path, "rb") as f:
        if detect_compression(f.read(16)):
            return [Piece(path, size)]
    table = read_index(index_path, data_size=size)
    n = len(table)
    if n <= per_task:
        return [Piece(path, size)]
    k = math.ceil(n / per_task)
    bounds = [n * i // k for i in range(k + 1)]
    offsets = [int(table[b, 0]) if b < n else size for b in bounds]
    return [
        Piece(path, offsets[i + 1] - offsets[i], bounds[i], bounds[i + 1], index_path)
        for i in range(k)
    ]


def split_files(
    files: Sequence[str], per_task: int, compression: Optional[str] = "auto"
) -> list[Piece]:
    """:func:`split_file` of every file, in order."""
    return [p for f in files for p in split_file(f, per_task, compression)]


#: An engine's partition holds at most about this many bytes of file when pieces are
#: grouped (Spark's own default for its file sources, ``spark.sql.files.maxPartitionBytes``).
DEFAULT_PARTITION_BYTES = 128 * 1024 * 1024


def group_pieces(
    pieces: Sequence[Piece], count: Optional[int] = None, max_bytes: int = DEFAULT_PARTITION_BYTES
) -> list[list[Piece]]:
    """The pieces grouped into partitions of about equal bytes, for an engine whose cost is
    per partition (Spark starts a Python task for each: ~0.1 s, more than reading a small
    file). ``count`` partitions (at most one per piece); by default as many as the cores
    of this machine, or more where a partition would exceed ``max_bytes``. Each piece is
    in exactly one group; a group keeps the pieces in their order; the largest pieces are
    placed first, each in the group with the fewest bytes."""
    if not pieces:
        return []
    sizes = [p.size if p.size is not None else max_bytes for p in pieces]
    if count is None:
        count = max(os.cpu_count() or 1, math.ceil(sum(sizes) / max(1, max_bytes)))
    if count < 1:
        raise ValueError(f"the number of partitions must be at least 1, got {count}")
    count = min(count, len(pieces))
    loads = [0] * count
    members: list[list[int]] = [[] for _ in range(count)]
    for i in sorted(range(len(pieces)), key=lambda i: (-sizes[i], i)):
        g = min(range(count), key=lambda g: (loads[g], g))
        loads[g] += sizes[i]
        members[g].append(i)
    groups = [sorted(m) for m in members]
    groups.sort(key=lambda m: m[0])
    return [[pieces[i] for i in m] for m in groups]


def check_read_options(batch_size: int, on_error: str) -> None:
    """The checks every engine's reader makes of its common options."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if on_error not in ("raise", "skip", "stop"):
        raise ValueError(f"on_error must be 'raise', 'skip' or 'stop', got {on_error!r}")


def read_pieces(
    paths: Paths,
    features: Optional[Mapping[str, FeatureSpec]] = None,
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None,
    *,
    compression: Any = "auto",
    verify: bool = True,
    on_error: str = "raise",
    storage_options: Optional[Mapping[str, Any]] = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    records_per_task: int = DEFAULT_RECORDS_PER_TASK,
    include_paths: bool = False,
    sample: Optional[int] = DEFAULT_SAMPLE,
) -> tuple[PieceReader, list[Piece]]:
    """What every engine's reader starts with: the options checked, the files expanded,
    the specs (inferred from the first file when both are ``None``), the
    :class:`PieceReader` of their plan and the pieces, one per read task."""
    check_read_options(batch_size, on_error)
    if records_per_task < 1:
        raise ValueError(f"records_per_task must be at least 1, got {records_per_task}")
    files = expand(paths, storage_options)
    plan = ReadPlan(features, sequence_features, files[0], compression=compression, sample=sample)
    reader = PieceReader(
        plan,
        compression=compression,
        verify=verify,
        on_error=on_error,
        batch_size=batch_size,
        include_paths=include_paths,
    )
    return reader, split_files(files, records_per_task, compression)


class PieceReader:
    """Reads pieces into Arrow tables of one :class:`ReadPlan`; pickled to the workers."""

    def __init__(
        self,
        plan: ReadPlan,
        *,
        compression: Any = "auto",
        verify: bool = True,
        on_error: str = "raise",
        batch_size: int = DEFAULT_BATCH_SIZE,
        include_paths: bool = False,
    ) -> None:
        self.plan = plan
        self.compression = compression
        self.verify = verify
        self.on_error = on_error
        self.batch_size = batch_size
        self.include_paths = include_paths

    @property
    def schema(self) -> pa.Schema:
        """The schema of every table read (the plan's, with ``path`` when included)."""
        schema = self.plan.schema
        if self.include_paths:
            pa = require_pyarrow()
            schema = schema.append(pa.field("path", pa.string()))
        return schema

    def _with_path(self, table: pa.Table, piece: Piece) -> pa.Table:
        if not self.include_paths:
            return table
        pa = require_pyarrow()
        return table.append_column(
            "path", pa.array([str(piece.path)] * table.num_rows, pa.string())
        )

    def tables(self, piece: Piece) -> Iterator[pa.Table]:
        """The piece as tables of up to ``batch_size`` rows (a file without records: one
        empty table)."""
        size = self.batch_size
        if piece.start is not None and piece.stop is not None:
            with TFRecordFile(piece.path, piece.index_path, verify=self.verify) as f:
                for a in range(piece.start, piece.stop, size):
                    yield self._convert(f[a : min(piece.stop, a + size)], piece, a)
            return
        # The records parsed where they lie in the blocks read (no object per record);
        # a record that does not parse is named by file, index and byte offset.
        empty = True
        for table in stream_tables(
            self.plan,
            piece.path,
            compression=self.compression,
            verify=self.verify,
            on_error=self.on_error,
            batch_size=size,
        ):
            empty = False
            yield self._with_path(table, piece)
        if empty:
            yield self._with_path(self.plan.schema.empty_table(), piece)

    def _convert(self, records: Sequence[bytes], piece: Piece, first: int) -> pa.Table:
        """A batch as a table; a record that does not parse is named by file and index."""
        try:
            table = self.plan.convert(records)
        except TFRecordError as e:
            if e.path is not None:
                raise
            raise e.with_location(path=piece.path, index_base=first) from None
        return self._with_path(table, piece)

    def table(self, piece: Piece) -> pa.Table:
        """The whole piece as one table."""
        pa = require_pyarrow()
        return pa.concat_tables([self.schema.empty_table(), *self.tables(piece)])
