"""Whole datasets as NumPy columns: :func:`write_examples` and :func:`read_examples`.

What a data-prep script and a training script usually want::

    tfr.write_examples("mnist.tfrecord", {"image": images, "label": labels})
    data = tfr.read_examples("mnist.tfrecord")      # {"image": (N, 28, 28) uint8, "label": (N,)}

Column rules for :func:`write_examples` (``N`` records, one row each):

* ``(N,)`` ints / bools -> one int64 per record; ``(N, k)`` -> k int64s per record
* ``(N,)`` / ``(N, k)`` floats -> float32 values (float64 is narrowed, as in
  TensorFlow; a warning says when that changes a value)
* ``(N,)`` bytes / str (or a list of them) -> one bytes value per record
* arrays with 3 or more dimensions, 2-D ``uint8``/``int8`` arrays, and columns
  named in ``raw=`` -> each row's raw bytes under the column's key, plus
  ``"<key>/shape"`` (int64, the row's shape) and ``"<key>/dtype"`` (bytes, the
  NumPy dtype string). :func:`read_examples` turns such triples back into the
  original array, shape and dtype included. TensorFlow reads them with
  ``tf.io.decode_raw`` and a reshape.
* a list of lists -> a variable number of values per record

Values round-trip exactly (int64 and float32 values, bytes, raw arrays).
"""

from __future__ import annotations

import contextvars
import os
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Optional, Union

import numpy as np

from .._errors import ParseError
from .._files import PathOrFile, TFRecordOptions, TFRecordReader, TFRecordWriter
from .._record import RECORD_OVERHEAD, FramedRecords
from ._assemble import ParsedValue, padding_value
from ._build import bytes_rows
from ._encode_columns import _encode_columns_framed
from ._engines import choose as engine
from ._hints import located
from ._infer import DEFAULT_SAMPLE, infer_schema
from ._parse import compile_features, parse_example
from ._schema import FeatureSpec, FixedLenSequenceFeature
from ._sequence import parse_sequence_example
from ._values import RaggedValue, SparseValue

__all__ = ["concat_parsed", "read_examples", "write_examples"]

#: Most rows encoded per chunk while writing (bounds memory for large N).
WRITE_CHUNK = 65536
#: Framed bytes aimed at per chunk while writing: a chunk's buffer stays in the CPU
#: caches and is reused from the heap by the next chunk (no fresh pages to fault in).
WRITE_CHUNK_BYTES = 4 << 20
#: Chunks encoded ahead of the one being written, on a thread, where the compiled
#: writer encodes them and there are two cores or more (its kernels release the GIL:
#: a chunk is built while the one before it is written, and the first ones while the
#: file is opened; MNIST-like columns to a file: 1.36-1.40 -> 1.73-1.75 M records/s).
WRITE_AHEAD = 2
#: Records parsed per batch while reading, however many keys the schema has.
READ_BATCH = 8192
SHAPE_SUFFIX = "/shape"
DTYPE_SUFFIX = "/dtype"


def _length(key: str, column: Any) -> int:
    try:
        return len(column)
    except TypeError:
        raise TypeError(
            f"column {key!r}: expected an array or list with one entry per record, "
            f"got {type(column).__name__}"
        ) from None


def _is_raw(column: np.ndarray, key: str, raw: Sequence[str]) -> bool:
    if key in raw:
        return True
    if column.dtype.kind not in "iufb":
        return False
    return column.ndim >= 3 or (
        column.ndim == 2 and column.dtype.itemsize == 1 and column.dtype.kind in "iu"
    )


def _prepare(columns: Mapping[str, Any], raw: Sequence[str]) -> tuple[dict[str, Any], int]:
    if not isinstance(columns, Mapping) or not columns:
        raise ValueError("columns must be a non-empty dict of {feature key: array or list}")
    lengths = {k: _length(k, v) for k, v in columns.items()}
    n = next(iter(lengths.values()))
    if any(v != n for v in lengths.values()):
        raise ValueError(
            "every column needs the same number of records; got "
            + ", ".join(f"{k!r}: {v}" for k, v in lengths.items())
        )
    unknown = [k for k in raw if k not in columns]
    if unknown:
        raise ValueError(f"raw= names columns that are not given: {unknown}")
    out: dict[str, Any] = {}
    for key, col in columns.items():
        if isinstance(col, np.ndarray) and _is_raw(col, key, raw):
            for suffix in (SHAPE_SUFFIX, DTYPE_SUFFIX):
                if key + suffix in columns:
                    raise ValueError(
                        f"column {key!r} is stored as raw bytes with {key + suffix!r} beside it, "
                        "but a column of that name is given too"
                    )
            arr = np.ascontiguousarray(col)
            out[key] = bytes_rows(arr)
            out[key + SHAPE_SUFFIX] = np.broadcast_to(
                np.asarray(arr.shape[1:], dtype=np.int64), (n, arr.ndim - 1)
            )
            out[key + DTYPE_SUFFIX] = np.full(n, arr.dtype.str.encode(), dtype=object)
            continue
        if isinstance(col, np.ndarray) and col.dtype.kind == "f" and col.dtype.itemsize > 4:
            with np.errstate(over="ignore", invalid="ignore"):
                narrowed = col.astype(np.float32)
                lost = np.count_nonzero(
                    (narrowed.astype(col.dtype) != col) & ~(np.isnan(col) & np.isnan(narrowed))
                )
            if lost:
                warnings.warn(
                    f"column {key!r}: {col.dtype} narrowed to float32 (TFRecord floats are "
                    f"float32); {lost} of {col.size} values changed. Store them raw "
                    f"(raw=[{key!r}]) to keep every bit.",
                    RuntimeWarning,
                    stacklevel=3,
                )
        out[key] = col
    return out, n


def _value_bytes(value: Any) -> int:
    """A rough size of one record's value of a list or object-array column."""
    if isinstance(value, (bytes, bytearray, str)):
        return len(value)
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (list, tuple)):
        return 8 * len(value)
    return 8


def _chunk_rows(prepared: Mapping[str, Any]) -> int:
    """Rows per chunk: about :data:`WRITE_CHUNK_BYTES` of records, 256 to :data:`WRITE_CHUNK`."""
    per_row = 16  # framing
    for col in prepared.values():
        per_row += 8  # key and headers (roughly)
        if isinstance(col, np.ndarray) and col.dtype.kind != "O":
            per_row += col.dtype.itemsize * int(np.prod(col.shape[1:], dtype=np.int64))
        elif len(col):
            sample = [col[i] for i in range(0, len(col), max(1, len(col) // 32))]
            per_row += sum(map(_value_bytes, sample)) // len(sample)
    return max(256, min(WRITE_CHUNK, WRITE_CHUNK_BYTES // per_row))


def write_examples(
    path: PathOrFile,
    columns: Mapping[str, Any],
    *,
    compression: Union[str, TFRecordOptions, None] = None,
    raw: Sequence[str] = (),
    seekable: Union[bool, int] = False,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> int:
    """Write one ``tf.train.Example`` per row of ``columns``; return the record count.

    ``columns`` maps feature keys to arrays or lists that all have ``N`` entries.
    How each column is stored (row ``i`` goes into record ``i``):

    * ``(N,)`` ints / bools: one int64 value; ``(N, k)``: ``k`` int64 values.
    * ``(N,)`` / ``(N, k)`` floats: float32 values (float64 is narrowed, as in
      TensorFlow; a warning says when that changes a value).
    * ``(N,)`` bytes / str, or a list of them: one bytes value (str as UTF-8).
    * A list of lists: a variable number of values per record.
    * Arrays with 3 or more dimensions, 2-D ``uint8`` / ``int8`` arrays, and every
      column named in ``raw``: the row's raw bytes under the column's key, **plus
      two extra features per record**: ``"<key>/shape"`` (int64, the row's shape)
      and ``"<key>/dtype"`` (bytes, the NumPy dtype string such as ``b"<f8"`` or
      ``b"|u1"``). :func:`read_examples` uses them to give the original array back,
      shape and dtype included. Other readers see three ordinary features; with
      TensorFlow: ``tf.io.decode_raw(ex["<key>"], tf.float64)`` reshaped to
      ``ex["<key>/shape"]``. Choose keys so that ``"<key>/shape"`` and
      ``"<key>/dtype"`` do not clash with another column.

    ``compression``: ``None`` / ``""`` (plain), ``"GZIP"``, ``"ZLIB"`` or
    :class:`TFRecordOptions`. The records are built directly in the wire format, a
    whole chunk of rows at a time; values round-trip exactly. ``seekable=True``
    (GZIP/ZLIB) writes the file as ``TFRecordWriter(..., seekable=True)`` does:
    fully flushed at a record boundary every few MiB (``seekable=N``: every ``N``
    bytes of records), so its index
    (:func:`~tfrecord_lite.create_index`) needs no window for those seek points.
    """
    prepared, n = _prepare(columns, raw)
    step = _chunk_rows(prepared)
    starts = range(0, n, step)

    def encode(start: int) -> FramedRecords:
        stop = min(n, start + step)
        return _encode_columns_framed({k: v[start:stop] for k, v in prepared.items()}, stop - start)

    if len(starts) < 2 or (os.cpu_count() or 1) < 2 or engine(step) != "jit":
        with TFRecordWriter(
            path, compression, seekable=seekable, storage_options=storage_options
        ) as writer:
            for start in starts:
                writer.write_all(encode(start))
        return n
    pool = ThreadPoolExecutor(1, thread_name_prefix="tfrecord_lite-write")
    try:
        chunks = _ahead(pool, encode, starts)
        next_chunk = next(chunks)  # (submits the first ones before the file is opened)
        with TFRecordWriter(
            path, compression, seekable=seekable, storage_options=storage_options
        ) as writer:
            writer.write_all(next_chunk.result())
            for chunk in chunks:
                writer.write_all(chunk.result())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return n


def _ahead(
    pool: ThreadPoolExecutor, encode: Callable[[int], FramedRecords], starts: Sequence[int]
) -> Iterator[Future[FramedRecords]]:
    """``encode(start)`` of every start, in order, :data:`WRITE_AHEAD` submitted to
    ``pool`` ahead of the one handed out (the first ones before it is asked for)."""
    queue: deque[Future[FramedRecords]] = deque()
    for start in starts:
        # (in a copy of the caller's context: a tfr.options block reaches the encoder)
        queue.append(pool.submit(contextvars.copy_context().run, encode, start))
        if len(queue) > WRITE_AHEAD:
            yield queue.popleft()
    while queue:
        yield queue.popleft()


# --------------------------------------------------------------------------- reading


def _concat_ragged(parts: list[RaggedValue]) -> RaggedValue:
    splits = [np.zeros(1, dtype=parts[0].row_splits.dtype)]
    offset = 0
    for r in parts:
        s = r.row_splits
        splits.append(s[1:] - s[0] + offset)
        offset += int(s[-1] - s[0])
    inner = [r.values for r in parts]
    values: Union[np.ndarray, RaggedValue]
    if isinstance(inner[0], RaggedValue):
        values = _concat_ragged(inner)  # type: ignore[arg-type]
    else:
        values = np.concatenate(inner)  # type: ignore[arg-type]
    return RaggedValue(values, np.concatenate(splits), parts[0].uniform_row_length)


def _concat_sparse(parts: list[SparseValue]) -> SparseValue:
    rows = 0
    indices = []
    for sv in parts:
        idx = sv.indices.copy()
        idx[:, 0] += rows
        indices.append(idx)
        rows += int(sv.dense_shape[0])
    inner = np.max(np.stack([sv.dense_shape[1:] for sv in parts]), axis=0)
    return SparseValue(
        np.concatenate(indices),
        np.concatenate([sv.values for sv in parts]),
        np.concatenate([[rows], inner]).astype(np.int64),
    )


def concat_parsed(
    batches: Sequence[Mapping[str, ParsedValue]], features: Mapping[str, FeatureSpec]
) -> dict[str, ParsedValue]:
    """Join the outputs of several ``parse_example`` calls along the batch dimension.

    ``FixedLenSequenceFeature`` arrays are padded (with the spec's default) to the
    longest batch; sparse indices and ragged splits are offset.
    """
    specs = compile_features(features)
    if not batches:
        raise ValueError("concat_parsed needs at least one batch")
    out: dict[str, ParsedValue] = {}
    for key, spec in specs.items():
        parts = [b[key] for b in batches]
        first = parts[0]
        if isinstance(first, SparseValue):
            out[key] = _concat_sparse(parts)  # type: ignore[arg-type]
        elif isinstance(first, RaggedValue):
            out[key] = _concat_ragged(parts)  # type: ignore[arg-type]
        elif isinstance(spec, FixedLenSequenceFeature):
            arrays: list[np.ndarray] = parts  # type: ignore[assignment]
            rows = max(a.shape[1] for a in arrays)
            fill = padding_value(spec)
            padded = []
            for a in arrays:
                if a.shape[1] < rows:
                    pad = np.empty((a.shape[0], rows - a.shape[1], *a.shape[2:]), a.dtype)
                    pad.fill(fill)  # not np.full: it would strip a bytes fill's trailing NULs
                    a = np.concatenate([a, pad], axis=1)
                padded.append(a)
            out[key] = np.concatenate(padded)
        else:
            out[key] = np.concatenate(parts)  # type: ignore[arg-type]
    return out


def _row_shapes(shape_col: Union[np.ndarray, SparseValue], n: int) -> list[tuple[int, ...]]:
    """Each record's shape from a ``key/shape`` column.

    The column is sparse when it was inferred as a ``VarLenFeature``: rows of 1-D
    arrays stored with ``raw=`` have shape ``()`` (no values), and files written
    separately may hold rows with different numbers of dimensions.
    """
    if n == 0:
        return []
    if isinstance(shape_col, SparseValue):
        counts = np.bincount(shape_col.indices[:, 0], minlength=n)
        rows = np.split(np.asarray(shape_col.values), np.cumsum(counts)[:-1])
        return [tuple(int(d) for d in r) for r in rows]
    return [tuple(int(d) for d in r) for r in shape_col.reshape(n, -1).tolist()]


def _decode_raw_columns(data: dict[str, ParsedValue]) -> dict[str, Any]:
    """Turn ``key``, ``key/shape``, ``key/dtype`` triples back into arrays."""
    out: dict[str, Any] = dict(data)
    for key in list(data):
        shape_col = data.get(key + SHAPE_SUFFIX)
        dtype_col = data.get(key + DTYPE_SUFFIX)
        values = data[key]
        if not (
            isinstance(values, np.ndarray)
            and isinstance(shape_col, (np.ndarray, SparseValue))
            and isinstance(dtype_col, np.ndarray)
            and values.ndim == 1
            and values.dtype == object
        ):
            continue
        n = len(values)
        shapes = _row_shapes(shape_col, n)
        dtypes = set(dtype_col.tolist())
        if len(dtypes) > 1 or len(set(shapes)) > 1:
            arrays = [
                np.frombuffer(v, dtype=np.dtype(d.decode())).reshape(s).copy()
                for v, s, d in zip(values.tolist(), shapes, dtype_col.tolist())
            ]
            out[key] = arrays
        else:
            dtype = np.dtype(dtypes.pop().decode()) if dtypes else np.dtype(np.uint8)
            shape = shapes[0] if n else ()
            blob = b"".join(values.tolist())
            out[key] = np.frombuffer(blob, dtype=dtype).reshape((n, *shape)).copy()
        del out[key + SHAPE_SUFFIX], out[key + DTYPE_SUFFIX]
    return out


class _Places:
    """Where each record of the batch being read sits: its file, its index in that
    file and the byte offset of its header there (in the file's uncompressed
    stream), so a parse error names them."""

    def __init__(self) -> None:
        self.path: Optional[str] = None
        self.index = 0  # (of the next record, in its file)
        self.offset = 0
        self.batch: list[tuple[Optional[str], int, int]] = []

    def add(self, path: Optional[str], length: int) -> None:
        if path != self.path:
            self.path, self.index, self.offset = path, 0, 0
        self.batch.append((path, self.index, self.offset))
        self.index += 1
        self.offset += length + RECORD_OVERHEAD

    def parse(self, batch: list[bytes], plan: Any) -> dict[str, ParsedValue]:
        """``parse_example(batch, plan)``; an error names the record's file and place."""
        places, self.batch = self.batch, []
        try:
            return parse_example(batch, plan)
        except ParseError as err:
            if err.index is None or not 0 <= err.index < len(places):
                raise
            where, index, offset = places[err.index]
            raise located(err, where, offset, index) from None


def read_examples(
    path: Union[PathOrFile, Sequence[PathOrFile]],
    features: Optional[Mapping[str, FeatureSpec]] = None,
    *,
    compression: Union[str, TFRecordOptions, None] = "auto",
    verify: bool = True,
    sample: int = DEFAULT_SAMPLE,
    decode: bool = True,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> dict[str, Any]:
    """Read every ``Example`` of a file (or files) into one dict of columns.

    With ``features=None`` the schema is inferred by :func:`infer_schema` (the
    first ``sample`` records in full, every later one checked, so the schema fits
    the whole file; this reads the file twice). With ``decode=True`` (default), raw-array
    columns written by :func:`write_examples` (``key`` + ``key/shape`` +
    ``key/dtype``) come back as arrays of their original shape and dtype.
    The result has the layout of :func:`parse_example` over all records.

    SequenceExample files (an inferred schema with feature lists, or a ``Schema``
    with ``sequence_features`` given) come back as :func:`parse_sequence_example`
    of all records: the context columns and the feature lists in one dict, each
    list's lengths under ``key + "/length"``.
    """
    if features is None:
        features = infer_schema(
            path, sample, compression=compression, storage_options=storage_options
        )
    lists = getattr(features, "sequence_features", None)
    if lists:
        with TFRecordReader(
            path, compression, verify=verify, storage_options=storage_options
        ) as reader:
            records = list(reader)
        context, found, lengths = parse_sequence_example(records, dict(features), lists)
        clash = sorted(set(context) & set(found))
        if clash:
            raise ValueError(f"keys {clash} are both context features and feature lists")
        out: dict[str, Any] = {**context, **found}
        out.update({f"{key}/length": n for key, n in lengths.items()})
        return out
    specs = compile_features(features)
    batches: list[dict[str, ParsedValue]] = []
    batch: list[bytes] = []
    places = _Places()
    # One batch size whatever the key count: a batch of many keys (a sparse schema's
    # thousands) is walked entry by entry, in memory that follows the values present,
    # so cutting it smaller only multiplies the per-key work by the batches.
    with TFRecordReader(
        path, compression, verify=verify, storage_options=storage_options
    ) as reader:
        for record in reader:
            batch.append(record)
            places.add(reader.path, len(record))
            if len(batch) == READ_BATCH:
                batches.append(places.parse(batch, specs))
                batch = []
    if batch or not batches:
        batches.append(places.parse(batch, specs))
    result = concat_parsed(batches, specs)
    return _decode_raw_columns(result) if decode else dict(result)
