"""The equal-layout extractor: records that share a template record's layout.

Records of one length whose structural bytes (tags, lengths, keys) equal a
template record's parse along the same path, so a 2-D array of them gives whole
columns at once (MNIST-like and tabular files: one writer; each of the few most
common lengths, as varint widths vary, has its template).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from ..._errors import ParseError
from ..._record import RecordSpans
from .._feature_kinds import LIST_OF_TAG
from .._schema import DType, dtype_of_kind, string
from .._wire import MAX_LENGTH_LEN, decode_varint
from ._numpy_vectors import (
    _decode_packed_varints,
    _packed_varints_ok,
    _uniform_values,
    _uniform_width,
)
from ._output import FastColumn, _joined


class _GiveUp(Exception):
    """The template record has a layout this module does not handle."""


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """The length prefix at ``buf[pos:]`` (:func:`~tfrecord_lite._examples._wire.decode_varint`) that ends
    by ``end``; :class:`_GiveUp` if it does not, or takes over
    :data:`~tfrecord_lite._examples._wire.MAX_LENGTH_LEN` bytes (protobuf refuses those)."""
    try:
        value, after = decode_varint(buf, pos)
    except ParseError:
        raise _GiveUp from None
    if after > end or after - pos > MAX_LENGTH_LEN:
        raise _GiveUp
    return value, after


class _Layout(NamedTuple):
    """Where everything is in a record of a given length.

    ``struct``: positions of every byte that steers parsing (tags, lengths, keys);
    ``template``: their values; ``regions``: per key, its kind and the (start,
    length) of each value payload (every BytesList item, or the one packed chunk).
    """

    length: int
    struct: np.ndarray
    template: np.ndarray
    regions: dict[str, tuple[Optional[str], list[tuple[int, int]]]]


_Regions = dict[str, tuple[Optional[str], list[tuple[int, int]]]]


#: Records of more features than this are left to the entry walk.
LAYOUT_MAX_KEYS = 512


def _regions(record: bytes) -> _Regions:
    """Parse one record fully: per key, its kind and the (start, length) of each payload.

    A payload is a BytesList item or the one packed chunk of a number list; an
    empty ``Feature()`` has kind None. Raises :class:`_GiveUp` on anything this
    module leaves to the generic path (see the module docstring), and on records of
    more than :data:`LAYOUT_MAX_KEYS` features (the entry walk reads those faster:
    a template is parsed here in Python, and its columns are cut key by key).
    """
    end = len(record)
    regions: _Regions = {}
    if end:
        if record[0] != 0x0A:
            raise _GiveUp
        flen, pos = _varint(record, 1, end)
        if pos + flen != end:
            raise _GiveUp
        while pos < end:
            if record[pos] != 0x0A or len(regions) >= LAYOUT_MAX_KEYS:
                raise _GiveUp
            elen, pos = _varint(record, pos + 1, end)
            eend = pos + elen
            if eend > end or pos >= eend or record[pos] != 0x0A:
                raise _GiveUp
            klen, pos = _varint(record, pos + 1, eend)
            try:
                key = record[pos : pos + klen].decode("utf-8")
            except UnicodeDecodeError:
                raise _GiveUp from None
            pos += klen
            if pos >= eend or record[pos] != 0x12 or key in regions:
                raise _GiveUp
            vlen, pos = _varint(record, pos + 1, eend)
            if pos + vlen != eend:
                raise _GiveUp
            if vlen == 0:
                regions[key] = (None, [])
                continue
            kind = LIST_OF_TAG.get(record[pos])
            if kind is None:
                raise _GiveUp
            llen, pos = _varint(record, pos + 1, eend)
            lend = pos + llen
            if lend != eend:
                raise _GiveUp
            items: list[tuple[int, int]] = []
            while pos < lend:
                if record[pos] != 0x0A:
                    raise _GiveUp  # unpacked values, or another field
                ilen, pos = _varint(record, pos + 1, lend)
                if pos + ilen > lend:
                    raise _GiveUp
                items.append((pos, ilen))
                pos += ilen
            if kind != "bytes_list" and len(items) > 1:
                raise _GiveUp  # several packed chunks
            if kind == "float_list" and items and items[0][1] % 4:
                raise _GiveUp
            regions[key] = (kind, items)
    return regions


def _layout(record: bytes) -> _Layout:
    """Parse one record fully, recording which bytes are structure and which are values.

    Two records of the same length whose structural bytes are equal parse along
    exactly the same path (every decision is made from those bytes), so their
    values sit at the same offsets.
    """
    regions = _regions(record)
    is_value = np.zeros(len(record), dtype=bool)
    for _, items in regions.values():
        for pos, ilen in items:
            is_value[pos : pos + ilen] = True
    struct = np.flatnonzero(~is_value)
    template = np.frombuffer(record, dtype=np.uint8)[struct]
    return _Layout(len(record), struct, template, regions)


def _layout_columns(
    rows: np.ndarray, layout: _Layout, needed: Mapping[str, DType], widths: Mapping[int, int]
) -> Optional[dict[str, FastColumn]]:
    """Columns of ``rows`` (records of one layout, one per row of a 2-D uint8 array).

    ``widths``: for packed int64 lists (by start) whose varints have one width in
    every row (:func:`_uniform_width`), that width.
    """
    g = len(rows)
    cols: dict[str, FastColumn] = {}
    for name, dtype in needed.items():
        kind, items = layout.regions.get(name, (None, []))
        if kind is None:
            empty = np.zeros(0, dtype=object if dtype is string else dtype.np_dtype)
            cols[name] = FastColumn(np.zeros(g, bool), np.zeros(g, np.int64), empty)
            continue
        if dtype_of_kind(kind) is not dtype:
            raise _GiveUp  # a dtype mismatch: the generic path reports it exactly
        present = np.ones(g, dtype=bool)
        if kind == "bytes_list":
            per_item: list[list[Any]] = []
            for start, length in items:
                if length == 0:
                    per_item.append([b""] * g)
                else:
                    # Each row's bytes as one fixed-size item (a view: only the
                    # bytes objects are copies).
                    block = rows[:, start : start + length].view(np.dtype((np.void, length)))
                    per_item.append(block[:, 0].tolist())
            values = np.empty(g * len(items), dtype=object)
            for j, item_values in enumerate(per_item):
                values[j :: len(items)] = item_values
            cols[name] = FastColumn(present, np.full(g, len(items), np.int64), values)
            continue
        if not items:
            empty = np.zeros(0, dtype=dtype.np_dtype)
            cols[name] = FastColumn(present, np.zeros(g, np.int64), empty)
            continue
        start, length = items[0]
        block = np.ascontiguousarray(rows[:, start : start + length])
        if kind == "float_list":
            floats = block.view("<f4").astype(np.float32, copy=False).reshape(-1)
            cols[name] = FastColumn(present, np.full(g, length // 4, np.int64), floats)
        elif block.size == 0 or int(block.max()) < 0x80:
            ints = block.astype(np.int64).reshape(-1)  # every varint is one byte
            cols[name] = FastColumn(present, np.full(g, length, np.int64), ints)
        elif w := widths.get(start, 0):
            ints = _uniform_values(block, w)
            cols[name] = FastColumn(present, np.full(g, length // w, np.int64), ints)
        else:
            decoded = _decode_packed_varints(block.reshape(-1), np.full(g, length, np.int64))
            if decoded is None:
                return None
            cols[name] = FastColumn(present, decoded[1], decoded[0])
    return cols


def _layout_group(
    records: Sequence[bytes], group: np.ndarray, needed: Mapping[str, DType]
) -> Optional[tuple[np.ndarray, dict[str, FastColumn]]]:
    """Handle the records of ``group`` (equal lengths) that follow the first one's layout."""
    layout = _layout(records[int(group[0])])
    width = layout.length
    pieces: list[np.ndarray]
    if isinstance(records, RecordSpans):
        # Each block read on its own: a strided view of it where its records lie
        # evenly (no copy), not one array copied together from several blocks.
        chosen = records if len(group) == len(records) else records.take(group)
        pieces = [RecordSpans([part]).rows(width) for part in chosen.parts]
    else:
        picked = records if len(group) == len(records) else [records[i] for i in group.tolist()]
        pieces = [np.frombuffer(b"".join(picked), dtype=np.uint8).reshape(len(group), width)]
    oks: list[np.ndarray] = []
    found: list[dict[str, FastColumn]] = []
    for rows in pieces:
        fits = (rows[:, layout.struct] == layout.template).all(axis=1)
        widths = _packed_widths(rows, layout, fits)
        cols = _layout_columns(rows if fits.all() else rows[fits], layout, needed, widths)
        if cols is None:
            return None
        oks.append(fits)
        found.append(cols)
    fits = oks[0] if len(oks) == 1 else np.concatenate(oks)
    return group[fits], found[0] if len(found) == 1 else _joined(found, needed)


def _packed_widths(rows: np.ndarray, layout: _Layout, fits: np.ndarray) -> dict[int, int]:
    """The packed int64 lists of ``layout`` (by start) whose varints have one width in
    every row, with that width (:func:`_uniform_width`); clears in ``fits`` the rows
    where another list does not hold whole varints."""
    widths: dict[int, int] = {}
    for kind, items in layout.regions.values():
        if kind == "int64_list" and items and items[0][1]:
            start, length = items[0]
            block = np.ascontiguousarray(rows[:, start : start + length])
            widths[start] = _uniform_width(block)
            if not widths[start]:  # (else every list holds whole varints)
                fits &= _packed_varints_ok(block.reshape(-1), np.full(len(rows), length, np.int64))
    return widths


#: Records :func:`shares_layout` compares with the template (spread over the batch).
LAYOUT_SAMPLE = 8
#: The share of a batch that must have the first record's length.
LAYOUT_SHARE = 0.95
#: The structural runs of the layout :func:`shares_layout` found last (one writer's
#: files: the next batch's too): its length and per run of structural bytes
#: ``(start, end, bytes)``.
_last_runs: Optional[tuple[int, list[tuple[int, int, bytes]]]] = None


def _follows(record: bytes, runs: list[tuple[int, int, bytes]]) -> bool:
    return all(record[a:b] == t for a, b, t in runs)


def _runs_of(record: bytes) -> list[tuple[int, int, bytes]]:
    """The runs of structural bytes of ``record`` 's layout (a previous batch's where
    ``record`` follows it); :class:`_GiveUp` as :func:`_layout`."""
    global _last_runs
    last = _last_runs
    if last is not None and last[0] == len(record) and _follows(record, last[1]):
        return last[1]
    struct = _layout(bytes(record)).struct
    cuts = np.flatnonzero(np.diff(struct) != 1) + 1
    runs = [
        (int(run[0]), int(run[-1]) + 1, bytes(record[int(run[0]) : int(run[-1]) + 1]))
        for run in np.split(struct, cuts)
        if len(run)
    ]
    _last_runs = (len(record), runs)
    return runs


def shares_layout(records: Sequence[bytes], lengths: np.ndarray) -> bool:
    """Whether a batch follows one layout: :data:`LAYOUT_SHARE` of its records have
    the first record's length, and a sample of those (:data:`LAYOUT_SAMPLE`, spread
    over the batch) all have its structural bytes (tags, lengths, keys, in one order).

    What the equal-layout path cuts whole columns from in one pass. Records of one
    length whose keys come in another order per record (tf.Transform output) do not
    count, nor a batch split between lengths (varints of several widths: the
    equal-layout path then runs a template per length and walks the rest).
    """
    n = len(records)
    if not n:
        return False
    first = int(lengths[0])
    if np.count_nonzero(lengths == first) < LAYOUT_SHARE * n:
        return False
    try:
        runs = _runs_of(records[0])
    except _GiveUp:
        return False
    step = max(1, n // LAYOUT_SAMPLE)
    return all(_follows(records[i], runs) for i in range(step, n, step) if int(lengths[i]) == first)
