"""Encoding whole NumPy columns into Example records at once (:func:`encode_columns`).

encode_columns builds many records at once. Each column yields, per record i,
``d[i]`` bytes of *data* (packed varints, packed float32, one bytes value, or a
whole serialized Feature); everything in front of the data in the record's map
entry (tag, sizes, key, Feature/list headers) depends only on the column and
d[i], so it is computed once per distinct size. Records are then put together
one of two ways:

* rows: when every column's data comes from a NumPy array, records with the same
  sizes in every column are laid out as the rows of one 2-D byte array (one
  group per distinct size pattern; usually one or two);
* join: otherwise, each record is one ``b"".join`` of its pieces.

Where the engine for the batch is ``jit`` (:func:`._jit.engine`), the checked and
converted columns go to the compiled writer instead (:mod:`._jit_encode`), which
builds the same bytes in one buffer: always for a file's framed records, and for
``encode_columns`` unless the records all have one size (rows are as fast).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Final, Optional, Union

import numpy as np
import numpy.typing as npt

from .._record import (
    HEADER_SIZE,
    RECORD_OVERHEAD,
    FramedRecords,
    encode_records,
    frame_rows,
)
from ._classify import (
    INT64_MAX,
    KIND_BYTES,
    KIND_FLOAT,
    KIND_INT64,
    KIND_NAMES,
    Where,
    check_int64,
    check_key,
    check_mapping,
    classify,
    describe_where,
    feature_where,
    str_bytes,
)
from ._engines import choose as engine
from ._feature_wire import feature_bytes, key_field, vlen
from ._jit_encode import (
    BYTES,
    ENCODE_KERNELS,
    FEATURE,
    FLOATS,
    INTS,
    jit_framed,
    jit_records,
)
from ._wire import (
    _encode_varints_array,
    encode_varint,
    varint_sizes,
)

__all__ = ["encode_columns"]


#: Mean bytes per record under which a list-backed column still uses 2-D rows.
_SMALL_DATA: Final = 64


def _int64_header(d: int) -> bytes:
    if not d:
        return b"\x1a\x00"
    ln = encode_varint(d)
    return b"\x1a" + encode_varint(1 + len(ln) + d) + b"\x0a" + ln


def _float_header(d: int) -> bytes:
    if not d:
        return b"\x12\x00"
    ln = encode_varint(d)
    return b"\x12" + encode_varint(1 + len(ln) + d) + b"\x0a" + ln


def _single_bytes_header(d: int) -> bytes:
    ln = encode_varint(d)
    return b"\x0a" + encode_varint(1 + len(ln) + d) + b"\x0a" + ln


def _no_header(d: int) -> bytes:
    return b""


def _rows_to_bytes(rows: npt.NDArray[np.uint8]) -> list[bytes]:
    """Each row of a 2-D uint8 array as one ``bytes`` (exact: NUL bytes kept)."""
    n, width = rows.shape
    if width == 0:
        return [b""] * n
    # A void ("V") view converts to bytes in C; unlike "S" it keeps trailing NULs.
    records: list[bytes] = (
        np.ascontiguousarray(rows).view(np.dtype((np.void, width))).reshape(n).tolist()
    )
    return records


def _split(buf: bytes, sizes: npt.NDArray[np.int64]) -> list[bytes]:
    """``buf`` cut into consecutive pieces of ``sizes`` bytes."""
    ends = np.cumsum(sizes).tolist()
    return [buf[a:b] for a, b in zip([0, *ends[:-1]], ends)]


def _join_rows(
    data: list[bytes], idx: Optional[npt.NDArray[np.intp]], width: int
) -> npt.NDArray[np.uint8]:
    """Equal-sized ``data[i]`` (``i`` in ``idx``, or all) as rows of a 2-D array."""
    joined = b"".join(data) if idx is None else b"".join([data[i] for i in idx.tolist()])
    count = len(data) if idx is None else len(idx)
    return np.frombuffer(joined, dtype=np.uint8).reshape(count, width)


#: Map-entry prefixes by (key field, header kind), then data size: shared by every chunk
#: and call, so a column of many distinct sizes computes each prefix once.
_PREFIXES: dict[tuple[bytes, Callable[[int], bytes]], dict[int, bytes]] = {}


_PREFIX_KEYS_MAX: Final = 4096


_PREFIX_SIZES_MAX: Final = 65536


def _prefix_cache(key_field: bytes, header: Callable[[int], bytes]) -> dict[int, bytes]:
    cache = _PREFIXES.get((key_field, header))
    if cache is None or len(cache) >= _PREFIX_SIZES_MAX:
        if len(_PREFIXES) >= _PREFIX_KEYS_MAX:
            _PREFIXES.clear()
        cache = _PREFIXES[key_field, header] = {}
    return cache


class _Column:
    """One column of :func:`encode_columns`.

    ``d[i]`` is the size of record ``i``'s data; its map entry is
    ``prefix(d[i]) + data_i``. ``data_list()`` gives every record's data;
    ``data_rows(idx, width)`` the data of records ``idx`` (all if None), all of
    size ``width``, as a 2-D array. ``array_backed`` columns make rows cheaply
    (NumPy data, or short values). ``kind`` and ``source`` describe the column to
    the compiled writer (:class:`._jit_encode.EncodeColumn`).
    """

    __slots__ = (
        "_cache",
        "_header",
        "_key_field",
        "array_backed",
        "d",
        "data_list",
        "data_rows",
        "kind",
        "source",
    )

    def __init__(
        self,
        name: str,
        header: Callable[[int], bytes],
        d: npt.NDArray[np.int64],
        data_list: Callable[[], list[bytes]],
        data_rows: Callable[[Optional[npt.NDArray[np.intp]], int], npt.NDArray[np.uint8]],
        array_backed: bool,
        source: Any,
    ) -> None:
        self._key_field = key_field(name)
        self._header = header
        self._cache = _prefix_cache(self._key_field, header)
        self.d = d
        self.data_list = data_list
        self.data_rows = data_rows
        self.array_backed = array_backed
        self.kind = _KINDS[header]
        self.source = source

    def prefix(self, d: int) -> bytes:
        """Map-entry bytes in front of ``d`` bytes of data."""
        p = self._cache.get(d)
        if p is None:
            fh = self._header(d)
            f = len(fh) + d
            lf = encode_varint(f)
            size = len(self._key_field) + 1 + len(lf) + f
            p = b"".join((b"\x0a", encode_varint(size), self._key_field, b"\x12", lf, fh))
            self._cache[d] = p
        return p

    def prefixes(self, sizes: list[int]) -> list[bytes]:
        """:meth:`prefix` of each size."""
        get = self._cache.get
        return [get(d) or self.prefix(d) for d in sizes]


def _rows_ok(d: npt.NDArray[np.int64], n: int) -> bool:
    """Whether data held as a list of bytes is small enough to go through 2-D rows.

    Rows cost a join and an extra copy of the data, the per-record join path costs a
    ``b"".join`` per record: for short values (dtype strings, ids) rows win.
    """
    return int(d.sum()) <= _SMALL_DATA * n


#: The compiled writer's kind of a column, by its header.
_KINDS: dict[Callable[[int], bytes], int] = {
    _int64_header: INTS,
    _float_header: FLOATS,
    _single_bytes_header: BYTES,
    _no_header: FEATURE,
}


def _bytes_list_column(name: str, values: list[bytes], n: int) -> _Column:
    """One bytes value per record."""
    d = np.fromiter(map(len, values), dtype=np.int64, count=n)

    def data_rows(idx: Optional[npt.NDArray[np.intp]], width: int) -> npt.NDArray[np.uint8]:
        return _join_rows(values, idx, width)

    return _Column(name, _single_bytes_header, d, lambda: values, data_rows, _rows_ok(d, n), values)


def _array_rows_column(
    name: str, header: Callable[[int], bytes], rows: npt.NDArray[np.uint8], n: int
) -> _Column:
    """Every record's data is one row of a 2-D uint8 array (void and float columns)."""
    d = np.full(n, rows.shape[1], dtype=np.int64)

    def data_rows(idx: Optional[npt.NDArray[np.intp]], width: int) -> npt.NDArray[np.uint8]:
        return rows if idx is None else rows[idx]

    return _Column(name, header, d, lambda: _rows_to_bytes(rows), data_rows, True, rows)


def _check_uint64(where: Where, values: np.ndarray) -> None:
    if values.dtype.kind == "u" and values.dtype.itemsize == 8 and values.size:
        top = int(values.max())
        if top > INT64_MAX:
            raise ValueError(
                f"{describe_where(where)}: value {top} is out of int64 range [-2**63, 2**63)"
            )


def _int_column(where: Where, name: str, values: np.ndarray, n: int) -> _Column:
    """``values``: (n, m) integer/bool array; each record gets its row."""
    _check_uint64(where, values)
    if values.dtype.kind == "b":
        values = values.astype(np.uint8)
    sizes = varint_sizes(values)
    d = sizes.sum(axis=1, dtype=np.int64)
    one_byte_each = not sizes.size or int(sizes.max()) == 1
    uniform = not n or int(d.min()) == int(d.max())

    def data_rows(idx: Optional[npt.NDArray[np.intp]], width: int) -> npt.NDArray[np.uint8]:
        sub = values if idx is None else values[idx]
        if one_byte_each:
            return sub.astype(np.uint8)
        return _encode_varints_array(sub).reshape(len(sub), width)

    def data_list() -> list[bytes]:
        if uniform:
            return _rows_to_bytes(data_rows(None, int(d[0])))
        return _split(_encode_varints_array(values).tobytes(), d)

    return _Column(name, _int64_header, d, data_list, data_rows, True, values)


def _generic_column(where: Where, name: str, values: Any, n: int) -> _Column:
    """Any per-record values, each converted like an ``encode_example`` value."""
    feats = []
    seen: Optional[int] = None
    record_prefix = f"{describe_where(where)}, record "
    for i in range(n):
        kind, payload = classify((record_prefix, i), values[i])
        if kind == KIND_BYTES or kind == KIND_FLOAT or kind == KIND_INT64:  # noqa: SIM109
            if seen is None:
                seen = kind
            elif kind != seen:
                raise TypeError(
                    f"{describe_where(where)}: record {i} is a {KIND_NAMES[kind]} but earlier records "
                    f"are {KIND_NAMES[seen]}; a column holds one kind of value "
                    "(convert it first, e.g. with np.asarray(column, np.float32))"
                )
        feats.append(feature_bytes(kind, payload))
    return _features_column(name, feats, n)


def _features_column(name: str, feats: list[bytes], n: int) -> _Column:
    """Each record's data is a whole serialized ``Feature``."""
    d = np.fromiter(map(len, feats), dtype=np.int64, count=n)

    def data_rows(idx: Optional[npt.NDArray[np.intp]], width: int) -> npt.NDArray[np.uint8]:
        return _join_rows(feats, idx, width)

    return _Column(name, _no_header, d, lambda: feats, data_rows, _rows_ok(d, n), feats)


def _int_lists_column(name: str, values: Sequence[list[Any]], n: int) -> Optional[_Column]:
    """A list per record, each of Python ints or empty (a ragged int64 column, an empty
    list an empty ``Feature``), converted all at once: the values' varints in one
    NumPy call, then each record's Feature cut out of them. None for anything else
    (the generic path converts it, and words its errors)."""
    flat = list(itertools.chain.from_iterable(values))
    if any(type(v) is not int for v in flat):
        return None
    try:
        ints = np.array(flat, dtype=np.int64)
    except OverflowError:
        return None
    value_bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=n), out=value_bounds[1:])
    byte_bounds = np.zeros(len(ints) + 1, dtype=np.int64)
    np.cumsum(varint_sizes(ints), out=byte_bounds[1:])
    bounds = byte_bounds[value_bounds].tolist()  # each record's varints in ``blob``
    blob = _encode_varints_array(ints).tobytes()
    headers: dict[int, bytes] = {}
    feats = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        if a == b:  # []
            feats.append(b"")
            continue
        head = headers.get(b - a)
        if head is None:
            head = headers[b - a] = _int64_header(b - a)
        feats.append(head + blob[a:b])
    return _features_column(name, feats, n)


def _make_column(name: str, values: Any, n: int) -> _Column:
    where = feature_where(name)
    if not isinstance(values, (np.ndarray, Sequence)) and hasattr(values, "__array__"):
        values = np.asarray(values)  # torch / jax tensors, pandas Series, ...
    if isinstance(values, np.ndarray):
        if values.ndim == 0:
            raise ValueError(
                f"{describe_where(where)}: a column needs one value per record, got a 0-d array"
            )
        if len(values) != n:
            raise ValueError(
                f"{describe_where(where)}: column has {len(values)} values, expected {n}"
            )
        kind = values.dtype.kind
        per_record = int(np.prod(values.shape[1:], dtype=np.int64))
        if kind in "iub":
            return _int_column(where, name, values.reshape(n, per_record), n)
        if kind == "f":
            with np.errstate(over="ignore"):
                f32 = np.ascontiguousarray(values.reshape(n, per_record), dtype="<f4")
            return _array_rows_column(name, _float_header, f32.view(np.uint8), n)
        if values.ndim == 1:
            if kind == "V" and values.dtype.names is None:
                rows = np.ascontiguousarray(values).view(np.uint8).reshape(n, values.dtype.itemsize)
                return _array_rows_column(name, _single_bytes_header, rows, n)
            if kind == "S":
                return _bytes_list_column(name, values.tolist(), n)
            if kind == "U":
                return _bytes_list_column(name, [str_bytes(where, s) for s in values.tolist()], n)
            if kind == "O":
                return _make_column(name, values.tolist(), n)
        if kind in "SUVO":
            return _generic_column(where, name, values, n)
        raise TypeError(
            f"{describe_where(where)}: unsupported NumPy dtype {values.dtype} for a column"
        )
    if isinstance(values, (str, bytes, bytearray, memoryview, Mapping)) or not isinstance(
        values, Sequence
    ):
        raise TypeError(
            f"{describe_where(where)}: a column is a list or array with one value per record, "
            f"not {type(values).__name__}"
        )
    if len(values) != n:
        raise ValueError(f"{describe_where(where)}: column has {len(values)} values, expected {n}")
    types = set(map(type, values))
    if len(types) == 1:
        t = next(iter(types))
        if t is bytes:
            return _bytes_list_column(name, list(values), n)
        if t is str:
            return _bytes_list_column(name, [str_bytes(where, s) for s in values], n)
        if t is int:
            try:
                arr = np.array(values, dtype=np.int64)
            except OverflowError:
                for v in values:
                    check_int64(where, v)
                raise  # pragma: no cover
            return _int_column(where, name, arr.reshape(n, 1), n)
        if t is float:
            with np.errstate(over="ignore"):
                f32 = np.array(values, dtype=np.float64).astype("<f4").reshape(n, 1)
            return _array_rows_column(name, _float_header, f32.view(np.uint8), n)
        if t is list:
            column = _int_lists_column(name, values, n)
            if column is not None:
                return column
    return _generic_column(where, name, values, n)


def _columns(columns: Mapping[str, Any], n: int) -> list[_Column]:
    if n < 0:
        raise ValueError(f"number of records must be >= 0, got {n}")
    columns = check_mapping("columns", columns)
    return [_make_column(check_key(k), v, n) for k, v in columns.items()]


def encode_columns(columns: Mapping[str, Any], n: int) -> list[bytes]:
    """Serialize ``n`` Examples from columns: record ``i`` holds ``{k: columns[k][i]}``.

    A column is a list or NumPy array of length ``n``; record ``i`` gets exactly
    what ``encode_example({k: columns[k][i] for k in columns})`` gives it: a
    ``(n, ...)`` numeric array gives each record its row, flattened; a ``(n,)``
    bytes / str / void / object array or a list gives each record one item (one
    value, or the list it holds). In addition, all non-empty records of a column
    must share one kind (``TypeError`` otherwise: no column changes type from row
    to row). Map entries are in the order of ``columns``.

    Fast layouts: numeric arrays, :func:`bytes_rows` views, lists of ``bytes``,
    lists of ``int`` / ``float``. Anything else is converted record by record.
    """
    cols = _columns(columns, n)
    if n == 0:
        return []
    if not cols:
        return [b"\x0a\x00"] * n
    groups = _row_groups(cols, n)
    # (records of one size are copied here as fast as built there: NumPy for those)
    if (groups is None or len(groups) > 1) and engine(n, ENCODE_KERNELS) == "jit":
        records = jit_records(cols, n)
        if records is not None:
            return records
    if groups is None:
        return _assemble_join(cols, n)
    if len(groups) == 1:
        return _group_records(cols, None, n)
    return _in_order([_group_records(cols, idx, n) for idx in groups], groups, n)


#: Records of one size are built as 2-D rows about this many bytes at a time (so a
#: 512 MiB column does not take a few times its size in temporaries at once).
ROWS_CHUNK_BYTES = 8 << 20


def _group_records(cols: list[_Column], idx: Optional[npt.NDArray[np.intp]], n: int) -> list[bytes]:
    """Records ``idx`` (all if None) of one size pattern, as ``bytes``, built a run of
    rows of about :data:`ROWS_CHUNK_BYTES` at a time."""
    m = n if idx is None else len(idx)
    first = 0 if idx is None else int(idx[0])
    width = 16 + sum(int(c.d[first]) + 8 for c in cols)  # (about a row's bytes)
    step = max(1024, ROWS_CHUNK_BYTES // width)
    if m <= step:
        return _rows_to_bytes(_assemble_rows(cols, idx, n, framed=False))
    every = np.arange(n) if idx is None else idx
    out: list[bytes] = []
    for a in range(0, m, step):
        out += _rows_to_bytes(_assemble_rows(cols, every[a : a + step], n, framed=False))
    return out


def _encode_columns_framed(columns: Mapping[str, Any], n: int) -> FramedRecords:
    """The records of :func:`encode_columns`, framed: one buffer holding the file's bytes.

    Equals ``encode_records(encode_columns(columns, n))``. When every column is
    array-backed and the records share a size, the framed records are built as the
    rows of one 2-D array (headers, data and CRCs filled column by column), with no
    ``bytes`` object per record.
    """
    cols = _columns(columns, n)
    if n == 0:
        return FramedRecords(b"", 0)
    if not cols:
        return FramedRecords(encode_records([b"\x0a\x00"] * n), n)
    if engine(n, ENCODE_KERNELS) == "jit":
        built = jit_framed(cols, n)
        if built is not None:
            return built
    groups = _row_groups(cols, n)
    if groups is None:
        return FramedRecords(encode_records(_assemble_join(cols, n)), n)
    if len(groups) == 1:
        rows = _assemble_rows(cols, None, n, framed=True)
        return FramedRecords(rows.reshape(-1).data, n)
    framed = [_rows_to_bytes(_assemble_rows(cols, idx, n, framed=True)) for idx in groups]
    return FramedRecords(b"".join(_in_order(framed, groups, n)), n)


def _row_groups(cols: list[_Column], n: int) -> Optional[list[Optional[npt.NDArray[np.intp]]]]:
    """How to lay out the records as 2-D rows: groups of record indices of equal sizes.

    ``[None]`` means all records in one group; ``None`` means no rows at all (a column
    is not array-backed, or there are too many size patterns): join record by record.
    """
    if not all(c.array_backed for c in cols):
        return None
    varying = [c.d for c in cols if int(c.d.min()) != int(c.d.max())]
    if not varying:
        return [None]
    codes = _size_pattern_codes(varying)
    n_groups = int(codes.max()) + 1
    if n_groups * 64 > n:
        return None
    order = np.argsort(codes.astype(np.int16 if n_groups < 2**15 else np.int64), kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=n_groups))[:-1]
    return list(np.split(order, bounds))


def _in_order(
    parts: list[list[bytes]], groups: list[Optional[npt.NDArray[np.intp]]], n: int
) -> list[bytes]:
    """The records of several groups (``parts[g][j]`` is record ``groups[g][j]``) in order."""
    result = np.empty(n, dtype=object)
    for idx, records in zip(groups, parts):
        result[idx] = records
    ordered: list[bytes] = result.tolist()
    return ordered


def _size_pattern_codes(varying: list[npt.NDArray[np.int64]]) -> npt.NDArray[np.intp]:
    """A code per record, equal for records whose sizes are equal in every column."""
    code: Optional[npt.NDArray[np.int64]] = None
    radix = 1
    for d in varying:
        _, inverse = np.unique(d, return_inverse=True)
        inverse = inverse.reshape(-1).astype(np.int64)
        levels = int(inverse.max()) + 1
        if code is None:
            code = inverse
        elif radix * levels < 2**62:
            code = code * levels + inverse
        else:  # too many combinations for one int64 key: compact first
            code = np.unique(code, return_inverse=True)[1].reshape(-1).astype(np.int64)
            code = code * levels + inverse
        radix = int(code.max()) + 1
    assert code is not None
    return np.unique(code, return_inverse=True)[1].reshape(-1)


def _assemble_rows(
    cols: list[_Column], idx: Optional[npt.NDArray[np.intp]], n: int, *, framed: bool
) -> npt.NDArray[np.uint8]:
    """Records ``idx`` (all if None), whose sizes agree column by column, as 2-D rows.

    With ``framed``, each row is the framed record (header, record, footer).
    """
    first = 0 if idx is None else int(idx[0])
    m = n if idx is None else len(idx)
    pieces: list[Union[bytes, npt.NDArray[np.uint8]]] = []
    body = 0
    for c in cols:
        d = int(c.d[first])
        p = c.prefix(d)
        pieces.append(p)
        pieces.append(c.data_rows(idx, d))
        body += len(p) + d
    pieces.insert(0, b"\x0a" + vlen(body))
    size = len(pieces[0]) + body
    pos = HEADER_SIZE if framed else 0
    out = np.empty((m, size + (RECORD_OVERHEAD if framed else 0)), dtype=np.uint8)
    for piece in pieces:
        if isinstance(piece, bytes):
            w = len(piece)
            if w:
                out[:, pos : pos + w] = np.frombuffer(piece, dtype=np.uint8)
        else:
            w = piece.shape[1]
            if w:
                out[:, pos : pos + w] = piece
        pos += w
    if framed:
        frame_rows(out)
    return out


def _assemble_join(cols: list[_Column], n: int) -> list[bytes]:
    """Records of any sizes: one ``b"".join`` of its pieces per record."""
    lists: list[list[bytes]] = []
    body = np.zeros(n, dtype=np.int64)
    for c in cols:
        d0 = int(c.d[0])
        if int(c.d.min()) == int(c.d.max()):
            p = c.prefix(d0)
            lists.append([p] * n)
            body += len(p) + d0
        else:
            uniq, inverse = np.unique(c.d, return_inverse=True)
            prefixes = c.prefixes(uniq.tolist())
            lens = np.fromiter(map(len, prefixes), dtype=np.int64, count=len(prefixes))
            inverse = inverse.reshape(-1)
            body += lens[inverse] + c.d
            lists.append(np.array(prefixes, dtype=object)[inverse].tolist())
        lists.append(c.data_list())
    ub, binv = np.unique(body, return_inverse=True)
    heads = [b"\x0a" + vlen(int(b)) for b in ub.tolist()]
    lists.insert(0, np.array(heads, dtype=object)[binv.reshape(-1)].tolist())
    return [b"".join(parts) for parts in zip(*lists)]
