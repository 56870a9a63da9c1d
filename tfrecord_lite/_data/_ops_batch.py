"""Grouping elements and splitting them again: ``batch`` (also cut straight from the
files' lists of records), ``padded_batch`` and ``unbatch``."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional, TypeVar, cast

import numpy as np

from .._record import RecordSpans
from ._collate import collate
from ._op import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, EpochKey, Upstream, _close, _Op
from ._ops_map import _mapped
from ._origin import handed, made_from, release
from ._state import _Level, decode_held, encode_held, resumed

_T = TypeVar("_T")


class _Batch(_Op):
    #: Set when the upstream hands out the files' records a list at a time
    #: (the batch follows the source directly): batches are cut from those lists.
    takes_lists = False

    def __init__(self, batch_size: int, drop_remainder: bool, ragged: str = "auto") -> None:
        self.batch_size = batch_size
        self.drop_remainder = drop_remainder
        self.ragged = ragged

    def cardinality(self, n: int) -> int:
        return _batch_cardinality(n, self.batch_size, self.drop_remainder)

    def batches(
        self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level
    ) -> Iterator[Sequence[Any]]:
        """The batches of elements (lists), their state published in ``lv``."""
        kind = f"batch({self.batch_size})"
        resumed(lv, below, kind)
        if self.takes_lists:
            return _rebatched(upstream(key), self.batch_size, self.drop_remainder, lv, below, kind)
        return _chunks(upstream(key), self.batch_size, self.drop_remainder, (lv, below, kind))

    def collate(self, items: Sequence[Any]) -> Any:
        """One batch of ``items``, as :func:`collate` makes it with this op's ``ragged``."""
        return collate(items, ragged=self.ragged)

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        return _mapped(self.collate, self.batches(upstream, key, lv, below))

    def describe(self) -> str:
        return f"batch({self.batch_size}, drop_remainder={self.drop_remainder})"


def _chunks(
    items: Iterator[_T],
    n: int,
    drop_remainder: bool = False,
    levels: Optional[tuple[_Level, _Level, str]] = None,
) -> Iterator[list[_T]]:
    """Lists of ``n`` items in order (the last one shorter unless ``drop_remainder``);
    closing it closes ``items``. Each list is handed out with the records its first
    item was made from (see ``_origin``), so that an error batching it names them.

    With ``levels`` (its level, the level below, its kind) it publishes its state:
    no partial batch is held between lists handed out, so it is the state below,
    rolled back by the items of the lists asked for."""
    chunk: list[_T] = []
    last = 0  # the size of the last list handed out
    if levels is not None:
        lv, below, kind = levels

        def state(behind: int) -> Optional[dict[str, Any]]:
            back = 0 if not behind else last + (behind - 1) * n
            up = below.state(back)
            return None if up is None else {"kind": kind, "up": up}

        lv.get = state
    try:
        while True:
            chunk = list(itertools.islice(items, 1))
            if not chunk:
                return
            records = made_from(chunk[0])  # (before the next items are read)
            chunk.extend(itertools.islice(items, n - 1))
            if len(chunk) < n and drop_remainder:
                return
            if records is not None:
                handed(chunk, records)
            last = len(chunk)
            yield chunk
            if len(chunk) < n:
                return
    finally:
        release(chunk)
        _close(items)


def _rebatched(
    lists: Iterator[Sequence[_T]],
    n: int,
    drop_remainder: bool,
    lv: Optional[_Level] = None,
    below: Optional[_Level] = None,
    kind: str = "batch",
) -> Iterator[Sequence[_T]]:
    """Batches of ``n`` items cut from lists of any length, in order (the last one
    shorter unless ``drop_remainder``); closing it closes ``lists``. Lists give
    lists; :class:`~tfrecord_lite._record._scan.RecordSpans` give spans.

    Its state is that of the lists below (whose ``behind`` counts records back from
    the end of the last list handed out), less the records of that list not yet
    batched: no partial batch is held across a batch handed out."""
    left = 0  # records of the last list taken not yet in a batch handed out
    last = 0  # the size of the last batch handed out

    def state(behind: int) -> Optional[dict[str, Any]]:
        back = left + (0 if not behind else last + (behind - 1) * n)
        up = below.state(back) if below is not None else None
        return None if up is None else {"kind": kind, "up": up}

    if lv is not None:
        lv.get = state
    try:
        pieces: list[Sequence[_T]] = []  # the next batch so far
        have = 0
        for lst in lists:
            i = 0
            size = len(lst)
            if have:
                i = n - have
                pieces.append(lst[:i])
                have += min(i, size)
                if have < n:
                    continue
                left, last = size - i, n
                yield _concatenated(pieces)
                pieces, have = [], 0
            end = size - n
            while i <= end:
                left, last = end - i, n
                yield lst[i : i + n]
                i += n
            if i < size:
                pieces, have = [lst[i:]], size - i
        if have and not drop_remainder:
            left, last = 0, have
            yield _concatenated(pieces)
    finally:
        _close(lists)


def _concatenated(pieces: list[Sequence[_T]]) -> Sequence[_T]:
    """The items of ``pieces`` as one list (or as one ``RecordSpans``, if all are)."""
    if len(pieces) == 1:
        return pieces[0]
    if all(isinstance(p, RecordSpans) for p in pieces):
        return cast("Sequence[_T]", RecordSpans.join(cast("list[RecordSpans]", pieces)))
    return [x for p in pieces for x in p]


class _RawBatch(_Batch):
    """``batch`` straight after the source: lists of the records' bytes."""

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        return self.batches(upstream, key, lv, below)


def _batch_cardinality(n: int, size: int, drop: bool) -> int:
    if n < 0:
        return n
    return n // size if drop else -(-n // size)


class _PaddedBatch(_Op):
    def __init__(self, batch_size: int, drop_remainder: bool, shapes: Any, values: Any) -> None:
        self.batch_size = batch_size
        self.drop_remainder = drop_remainder
        self.shapes = shapes
        self.values = values

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        kind = self.describe()
        resumed(lv, below, kind)
        chunks = _chunks(upstream(key), self.batch_size, self.drop_remainder, (lv, below, kind))
        return _mapped(lambda c: _pad_collate(c, self.shapes, self.values, ""), chunks)

    def cardinality(self, n: int) -> int:
        return _batch_cardinality(n, self.batch_size, self.drop_remainder)

    def describe(self) -> str:
        return f"padded_batch({self.batch_size})"


def _pad_collate(items: Sequence[Any], shapes: Any, values: Any, path: str) -> Any:
    first = items[0]
    if isinstance(first, Mapping):
        keys = list(first)
        for x in items:
            if not isinstance(x, Mapping) or list(x) != keys:
                raise ValueError(f"padded_batch: elements have different keys at {path or 'top'}")
        return {
            k: _pad_collate(
                [x[k] for x in items],
                _sub(shapes, k),
                _sub(values, k),
                f"{path}[{k!r}]",
            )
            for k in keys
        }
    if type(first) is tuple:
        return tuple(
            _pad_collate([x[j] for x in items], _sub(shapes, j), _sub(values, j), f"{path}[{j}]")
            for j in range(len(first))
        )
    arrays = [
        np.asarray(x, dtype=object) if isinstance(x, (bytes, str)) else np.asarray(x) for x in items
    ]
    ndim = arrays[0].ndim
    where = f" {path}" if path else ""
    if any(a.ndim != ndim for a in arrays):
        raise ValueError(
            f"padded_batch: component{where} has elements of different ranks: "
            f"{sorted({a.shape for a in arrays})}"
        )
    target = [max(a.shape[d] for a in arrays) for d in range(ndim)]
    if shapes is not None:
        want = list(np.atleast_1d(np.asarray(shapes, dtype=object))) if ndim else []
        if len(want) != ndim:
            raise ValueError(
                f"padded_batch: padded shape {shapes} of component{where} has rank "
                f"{len(want)}, its elements have rank {ndim}"
            )
        for d, w in enumerate(want):
            if w is not None and int(w) >= 0:
                if target[d] > int(w):
                    raise ValueError(
                        f"padded_batch: component{where} has an element of shape "
                        f"{max(arrays, key=lambda a: a.shape[d]).shape}, larger than its "
                        f"padded shape {list(shapes)} in dimension {d}"
                    )
                target[d] = int(w)
    dtype = np.result_type(*arrays) if arrays[0].dtype != object else np.dtype(object)
    if values is None:
        pad: Any = b"" if dtype.kind in "OSU" else 0
    else:
        pad = values
    out = np.full((len(arrays), *target), pad, dtype=dtype)
    for b, a in enumerate(arrays):
        index: tuple[Any, ...] = (b, *(slice(0, s) for s in a.shape))
        out[index] = a
    return out


def _sub(spec: Any, k: Any) -> Any:
    """The part of a padded_shapes / padding_values structure for key or position ``k``."""
    if isinstance(spec, Mapping):
        return spec.get(k)
    if type(spec) is tuple:
        return spec[k]
    return spec if not isinstance(spec, (list, np.ndarray)) else None


class _Unbatch(_Op):
    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        kind = self.describe()
        saved = resumed(lv, below, kind)
        rows: list[Any] = [] if saved is None else decode_held(saved, kind)
        return _unbatched(upstream(key), rows, lv, below, kind)

    def cardinality(self, n: int) -> int:
        return n if n == INFINITE_CARDINALITY else UNKNOWN_CARDINALITY


def _unbatched(
    items: Iterator[Any], rows: list[Any], lv: _Level, below: _Level, kind: str
) -> Iterator[Any]:
    """The rows of each batch, after ``rows`` (the rows of a batch being split
    when the state was saved). State: the rows of the current batch not yet
    handed out."""
    left: deque[Any] = deque(rows)

    def state(behind: int) -> Optional[dict[str, Any]]:
        if behind:
            return None
        return {"kind": kind, "up": below.state(0), "held": encode_held(list(left))}

    lv.get = state
    try:
        while True:
            while left:
                yield left.popleft()
            x = next(items, _END)
            if x is _END:
                return
            left.extend(_rows(x, ""))
    finally:
        _close(items)


_END = object()


def _rows(x: Any, path: str) -> list[Any]:
    """The rows of a batch (its slices along the first dimension)."""
    from .._examples import RaggedValue, SparseValue

    if isinstance(x, Mapping):
        cols = {k: _rows(v, f"{path}[{k!r}]") for k, v in x.items()}
        n = _same_length(cols.values(), path)
        return [{k: c[j] for k, c in cols.items()} for j in range(n)]
    if type(x) is tuple:
        parts = [_rows(v, f"{path}[{j}]") for j, v in enumerate(x)]
        n = _same_length(parts, path)
        return [tuple(p[j] for p in parts) for j in range(n)]
    if isinstance(x, list):
        return list(x)
    if isinstance(x, RaggedValue):
        return [x[j] for j in range(len(x))]
    if isinstance(x, SparseValue):
        idx = np.asarray(x.indices).reshape(len(x.indices), -1)
        vals = np.asarray(x.values)
        shape = np.asarray(x.dense_shape, dtype=np.int64)
        out = []
        for j in range(int(shape[0])):
            keep = idx[:, 0] == j
            out.append(SparseValue(idx[keep, 1:], vals[keep], shape[1:].copy()))
        return out
    arr = np.asarray(x)
    if arr.ndim == 0:
        raise ValueError(f"unbatch: component{' ' + path if path else ''} is a scalar, not a batch")
    return list(arr)


def _same_length(parts: Any, path: str) -> int:
    lengths = {len(p) for p in parts}
    if len(lengths) > 1:
        raise ValueError(
            f"unbatch: the components of {path or 'the element'} have different batch sizes {sorted(lengths)}"
        )
    return lengths.pop() if lengths else 0
