"""Vectorized extraction of Example features from a whole batch of records.

Records written by one writer share a layout: the same feature keys in the same
order, each with the same kind. This module derives that layout (a *template*)
from one record with a small wire-format walker, then walks **every record of
the batch in lockstep** along the template with NumPy: each step (check a tag,
read a length, take a value) is one vectorized operation over per-record
positions, so variable-length values and varint widths cost nothing extra.

Records that do not follow the template (another key order or set, another
kind, unpacked lists, unknown fields, duplicated keys, anything malformed) are
left to the next template (up to :data:`MAX_TEMPLATES`) and finally to the
generic protobuf path, so the result is always exactly the generic path's.

Wire layout walked (proto3, TensorFlow's field numbers)::

    Example   { 1: Features  (LEN) }                       tag 0x0a
    Features  { 1: map entry (LEN), repeated }              tag 0x0a
    entry     { 1: key string (LEN)  2: Feature (LEN) }     tags 0x0a, 0x12
    Feature   { 1: BytesList | 2: FloatList | 3: Int64List } tags 0x0a/0x12/0x1a
    BytesList { 1: bytes, repeated }                        tag 0x0a each
    FloatList { 1: packed fixed32 (LEN) }                   tag 0x0a, one chunk
    Int64List { 1: packed varints (LEN) }                   tag 0x0a, one chunk

Set ``TFRECORD_LITE_FASTPATH=0`` to switch this path off (debugging).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from ._schema import DType, float32, int64, string
from ._wire import encode_varint

__all__ = ["FastColumn", "enabled", "extract", "merge_columns"]

#: Templates tried per batch before the remaining records go the generic way.
MAX_TEMPLATES = 4
#: Below this many records the generic path is as fast.
MIN_BATCH = 8

_KIND_TAG = {"bytes_list": 0x0A, "float_list": 0x12, "int64_list": 0x1A}
_TAG_KIND = {v: k for k, v in _KIND_TAG.items()}
_KIND_DTYPE = {"bytes_list": string, "float_list": float32, "int64_list": int64}


def enabled() -> bool:
    """Whether the vectorized path is on (``TFRECORD_LITE_FASTPATH``, default on)."""
    return os.environ.get("TFRECORD_LITE_FASTPATH", "1").strip().lower() not in (
        "0",
        "false",
        "no",
        "off",
    )


class FastColumn(NamedTuple):
    """Everything parsing needs of one feature key over a batch of records.

    ``present[i]``: record ``i`` has the key with a kind set (a key mapped to an
    empty ``Feature()`` counts as absent, as in TensorFlow); ``counts[i]``: its
    number of values (0 when absent); ``values``: all records' values, concatenated.
    Both extractors produce it: this module's, and the generic one in ``_parse``
    (which calls it ``Column``).
    """

    present: np.ndarray
    counts: np.ndarray
    values: np.ndarray


class _GiveUp(Exception):
    """The template record has a layout this module does not handle."""


# --------------------------------------------------------------------------- template


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _GiveUp
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _template(record: bytes) -> list[tuple[bytes, Optional[str]]]:
    """(key, kind) of each map entry in order; kind None for an empty ``Feature()``."""
    return [(key.encode("utf-8"), kind) for key, (kind, _) in _layout(record).regions.items()]


# --------------------------------------------------------------------------- lockstep walk


class _Walk:
    """Per-record cursors over one concatenated buffer; records that fail drop out."""

    def __init__(self, data: np.ndarray, pos: np.ndarray, end: np.ndarray) -> None:
        self.data = data
        self.pos = pos.copy()
        self.end = end
        self.ok = np.ones(len(pos), dtype=bool)
        self._last = len(data) - 1

    def _at(self, pos: np.ndarray) -> np.ndarray:
        return self.data.take(pos, mode="clip")

    def expect(self, token: bytes, limit: np.ndarray) -> None:
        """Every record has ``token`` at its cursor (within ``limit``); advance past it."""
        n = len(token)
        self.ok &= self.pos + n <= limit
        if n == 1:
            self.ok &= self._at(self.pos) == token[0]
        else:
            window = self.data.take(self.pos[:, None] + np.arange(n), mode="clip")
            self.ok &= (window == np.frombuffer(token, dtype=np.uint8)).all(axis=1)
        self.pos += n

    def varint(self, limit: np.ndarray) -> np.ndarray:
        """Read one varint at every cursor (a length or a value) as uint64; advance."""
        first = self._at(self.pos)
        self.ok &= self.pos < limit
        if first.max(initial=0) < 0x80:
            self.pos += 1
            return first.astype(np.uint64)
        value = np.zeros(len(first), dtype=np.uint64)
        live = np.ones(len(first), dtype=bool)
        width = np.zeros(len(first), dtype=np.int64)
        for k in range(10):
            b = self._at(self.pos + k)
            value |= np.where(live, (b & 0x7F).astype(np.uint64) << np.uint64(7 * k), 0).astype(
                np.uint64
            )
            width += live
            live &= b >= 0x80
            if not live.any():
                break
        self.ok &= ~live  # longer than 10 bytes
        self.ok &= self.pos + width <= limit
        self.pos += width
        return value

    def length(self, limit: np.ndarray) -> np.ndarray:
        """Read a length prefix and return the end of the region it announces."""
        n = self.varint(limit).astype(np.int64)  # a length over 2**63 turns negative
        end = self.pos + n
        self.ok &= (n >= 0) & (end <= limit)
        return end

    def at_end(self, end: np.ndarray) -> None:
        self.ok &= self.pos == end


def _gather_regions(data: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Concatenate ``data[start[i]:start[i]+length[i]]`` for every i, vectorized."""
    total = int(length.sum())
    if total == 0:
        return np.zeros(0, dtype=data.dtype)
    offsets = np.zeros(len(length) + 1, dtype=np.int64)
    np.cumsum(length, out=offsets[1:])
    idx = np.arange(total, dtype=np.int64) + np.repeat(start - offsets[:-1], length)
    return data[idx]


def _decode_packed_varints(
    raw: np.ndarray, lengths: np.ndarray
) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """Decode concatenated packed-varint regions: (values int64, count per region).

    Returns None when a region does not end on a complete varint or holds one
    longer than 10 bytes.
    """
    n = len(lengths)
    if len(raw) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(n, dtype=np.int64)
    term = raw < 0x80
    region_end = np.cumsum(lengths) - 1
    nonempty = lengths > 0
    if not term[region_end[nonempty]].all():
        return None  # a varint runs past the end of its region
    ends = np.flatnonzero(term)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    widths = ends - starts + 1
    if (widths > 10).any():
        return None
    if (widths == 1).all():
        values = raw.astype(np.int64)
    else:
        k = np.arange(len(raw), dtype=np.int64) - np.repeat(starts, widths)
        parts = (raw & 0x7F).astype(np.uint64) << (np.uint64(7) * k.astype(np.uint64))
        values = np.bitwise_or.reduceat(parts, starts).view(np.int64)
    cum = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum(term, out=cum[1:])
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    counts = cum[offsets[1:]] - cum[offsets[:-1]]
    return values, counts


def _packed_varints_ok(raw: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per region of concatenated packed-varint regions: does it hold whole varints only?

    A region must end on a varint's last byte (< 0x80) and hold no varint longer
    than 10 bytes, or protobuf rejects the record, read or not.
    """
    n = len(lengths)
    ok = np.ones(n, dtype=bool)
    if len(raw) == 0:
        return ok
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    nonempty = lengths > 0
    ok[nonempty] = raw[offsets[1:][nonempty] - 1] < 0x80
    ends = np.flatnonzero(raw < 0x80)
    if len(ends):
        widths = np.diff(ends, prepend=-1)
        too_long = ends[widths > 10]
        if len(too_long):
            ok[np.searchsorted(offsets, too_long, side="right") - 1] = False
    return ok


def _run_template(
    data: np.ndarray,
    buf: bytes,
    start: np.ndarray,
    end: np.ndarray,
    entries: list[tuple[bytes, Optional[str]]],
    needed: Mapping[str, DType],
) -> tuple[np.ndarray, dict[str, FastColumn]]:
    """Walk records ``start..end`` along ``entries``; return (matched mask, columns)."""
    n = len(start)
    w = _Walk(data, start, end)
    raw_cols: dict[str, tuple[str, np.ndarray, np.ndarray]] = {}
    if entries:
        w.expect(b"\x0a", end)
        fend = w.length(end)
        w.ok &= fend == end  # nothing after the Features field
    else:
        w.at_end(end)
        fend = end
    for key, kind in entries:
        w.expect(b"\x0a", fend)
        eend = w.length(fend)
        w.expect(b"\x0a" + encode_varint(len(key)) + key + b"\x12", eend)
        vend = w.length(eend)
        w.ok &= vend == eend  # the entry holds only key and value
        if kind is None:
            w.at_end(vend)
            continue
        w.expect(bytes([_KIND_TAG[kind]]), vend)
        lend = w.length(vend)
        w.ok &= lend == vend  # the Feature holds only its one list
        name = key.decode("utf-8")
        if kind == "bytes_list":
            raw_cols[name] = (kind, *_bytes_items(w, lend))
        else:
            raw_cols[name] = (kind, *_packed_chunk(w, lend))
        w.at_end(lend)
    if entries:
        w.at_end(fend)
    for kind, a, b in raw_cols.values():
        if kind == "int64_list":
            w.ok &= _packed_varints_ok(_gather_regions(data, a, b), b)
        elif kind == "float_list":
            w.ok &= b % 4 == 0
    ok = w.ok
    cols: dict[str, FastColumn] = {}
    m = int(ok.sum())
    for name, dtype in needed.items():
        if name not in raw_cols:
            empty = np.zeros(0, dtype=object if dtype is string else dtype.np_dtype)
            cols[name] = FastColumn(np.zeros(m, bool), np.zeros(m, np.int64), empty)
            continue
        kind, a, b = raw_cols[name]
        if _KIND_DTYPE[kind] is not dtype:
            raise _GiveUp  # a dtype mismatch: the generic path reports it exactly
        col = _values(kind, data, buf, a, b, ok)
        if col is None:
            ok = np.zeros(n, dtype=bool)  # malformed values: leave all to the generic path
            return ok, {}
        cols[name] = col
    # Features present but not requested still had to parse (validated above).
    return ok, cols


def _packed_chunk(w: _Walk, lend: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A Float/Int64List holding one packed chunk or nothing: (chunk starts, lengths)."""
    n = len(lend)
    starts = np.zeros(n, dtype=np.int64)
    lengths = np.zeros(n, dtype=np.int64)
    idx = np.flatnonzero(w.ok & (w.pos < lend))
    if len(idx):
        limit = lend[idx]
        sub = _Walk(w.data, w.pos[idx], limit)
        sub.expect(b"\x0a", limit)
        cend = sub.length(limit)
        sub.ok &= cend == limit  # exactly one chunk
        w.ok[idx] &= sub.ok
        starts[idx] = sub.pos
        lengths[idx] = np.where(sub.ok, cend - sub.pos, 0)
        w.pos[idx] = limit
    return starts, lengths


def _bytes_items(w: _Walk, lend: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walk a BytesList of any length per record; return (starts, lengths) record-major.

    Returned as a structured pair: ``a`` holds (record, item start) pairs and ``b``
    the item lengths, already in record-major order.
    """
    recs: list[np.ndarray] = []
    starts: list[np.ndarray] = []
    lens: list[np.ndarray] = []
    steps: list[np.ndarray] = []
    step = 0
    while True:
        active = w.ok & (w.pos < lend)
        if not active.any():
            break
        idx = np.flatnonzero(active)
        sub = _Walk(w.data, w.pos[idx], lend[idx])
        sub.expect(b"\x0a", lend[idx])
        item_end = sub.length(lend[idx])
        w.ok[idx] &= sub.ok
        good = sub.ok
        recs.append(idx[good])
        starts.append(sub.pos[good])
        lens.append((item_end - sub.pos)[good])
        steps.append(np.full(int(good.sum()), step, dtype=np.int64))
        new_pos = np.where(sub.ok, item_end, lend[idx])
        w.pos[idx] = new_pos
        step += 1
    if not recs:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
    r = np.concatenate(recs)
    s = np.concatenate(starts)
    ln = np.concatenate(lens)
    order = np.lexsort((np.concatenate(steps), r))
    return np.stack([r[order], s[order]], axis=1), ln[order]


def _values(
    kind: str, data: np.ndarray, buf: bytes, a: np.ndarray, b: np.ndarray, ok: np.ndarray
) -> Optional[FastColumn]:
    n = len(ok)
    present = np.ones(n, dtype=bool)[ok]
    if kind == "bytes_list":
        rec, starts = a[:, 0], a[:, 1]
        keep = ok[rec]
        rec, starts, lens = rec[keep], starts[keep], b[keep]
        counts_all = np.bincount(rec, minlength=n)
        values = np.empty(len(starts), dtype=object)
        values[:] = [buf[s : s + ln] for s, ln in zip(starts.tolist(), lens.tolist())]
        return FastColumn(present, counts_all[ok].astype(np.int64), values)
    start, length = a[ok], b[ok]
    raw = _gather_regions(data, start, length)
    if kind == "float_list":
        if (length % 4).any():
            return None
        values = raw.view("<f4").astype(np.float32, copy=False)
        return FastColumn(present, length // 4, values)
    decoded = _decode_packed_varints(raw, length)
    if decoded is None:
        return None
    values, counts = decoded
    return FastColumn(present, counts, values)


# --------------------------------------------------------------------------- equal-length layout


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


def _layout(record: bytes) -> _Layout:
    """Parse one record fully, recording which bytes are structure and which are values.

    Two records of the same length whose structural bytes are equal parse along
    exactly the same path (every decision is made from those bytes), so their
    values sit at the same offsets.
    """
    end = len(record)
    is_value = np.zeros(end, dtype=bool)
    regions: dict[str, tuple[Optional[str], list[tuple[int, int]]]] = {}
    if end:
        if record[0] != 0x0A:
            raise _GiveUp
        flen, pos = _varint(record, 1, end)
        if pos + flen != end:
            raise _GiveUp
        while pos < end:
            if record[pos] != 0x0A:
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
            kind = _TAG_KIND.get(record[pos])
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
                is_value[pos : pos + ilen] = True
                pos += ilen
            if kind != "bytes_list" and len(items) > 1:
                raise _GiveUp  # several packed chunks
            if kind == "float_list" and items and items[0][1] % 4:
                raise _GiveUp
            regions[key] = (kind, items)
    struct = np.flatnonzero(~is_value)
    template = np.frombuffer(record, dtype=np.uint8)[struct]
    return _Layout(end, struct, template, regions)


def _layout_columns(
    rows: np.ndarray, layout: _Layout, needed: Mapping[str, DType]
) -> Optional[dict[str, FastColumn]]:
    """Columns of ``rows`` (records of one layout, one per row of a 2-D uint8 array)."""
    g = len(rows)
    cols: dict[str, FastColumn] = {}
    for name, dtype in needed.items():
        kind, items = layout.regions.get(name, (None, []))
        if kind is None:
            empty = np.zeros(0, dtype=object if dtype is string else dtype.np_dtype)
            cols[name] = FastColumn(np.zeros(g, bool), np.zeros(g, np.int64), empty)
            continue
        if _KIND_DTYPE[kind] is not dtype:
            raise _GiveUp  # a dtype mismatch: the generic path reports it exactly
        present = np.ones(g, dtype=bool)
        if kind == "bytes_list":
            per_item: list[list[Any]] = []
            for start, length in items:
                if length == 0:
                    per_item.append([b""] * g)
                else:
                    block = np.ascontiguousarray(rows[:, start : start + length])
                    per_item.append(block.view(np.dtype((np.void, length))).ravel().tolist())
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
        else:
            decoded = _decode_packed_varints(block.reshape(-1), np.full(g, length, np.int64))
            if decoded is None:
                return None
            cols[name] = FastColumn(present, decoded[1], decoded[0])
    return cols


def _layout_group(
    records: Sequence[bytes],
    data: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    group: np.ndarray,
    needed: Mapping[str, DType],
) -> Optional[tuple[np.ndarray, dict[str, FastColumn]]]:
    """Handle the records of ``group`` (equal lengths) that follow the first one's layout."""
    layout = _layout(records[int(group[0])])
    width = layout.length
    if len(group) == len(records) and width:
        rows = data[: len(records) * width].reshape(len(records), width)  # no copy
    else:
        rows = data[starts[group][:, None] + np.arange(width)]
    ok = (rows[:, layout.struct] == layout.template).all(axis=1)
    for kind, items in layout.regions.values():
        if kind == "int64_list" and items and items[0][1]:
            start, length = items[0]
            block = np.ascontiguousarray(rows[:, start : start + length])
            ok &= _packed_varints_ok(block.reshape(-1), np.full(len(rows), length, np.int64))
    if not ok.all():
        rows = rows[ok]
    cols = _layout_columns(rows, layout, needed)
    if cols is None:
        return None
    return group[ok], cols


def extract(
    records: Sequence[bytes], needed: Mapping[str, DType]
) -> Optional[tuple[np.ndarray, dict[str, FastColumn]]]:
    """Extract ``needed`` keys from as many records as templates can handle.

    Returns ``(handled, columns)``: ``handled`` is a bool mask over the records and
    each column covers the handled records, in order. ``None`` when nothing was
    handled (the caller then runs the generic path on everything).
    """
    n = len(records)
    if n < MIN_BATCH or not enabled():
        return None
    buf = b"".join(records)
    data = np.frombuffer(buf, dtype=np.uint8)
    if len(data) == 0:
        return None
    lengths = np.fromiter(map(len, records), dtype=np.int64, count=n)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    handled = np.zeros(n, dtype=bool)
    parts: list[tuple[np.ndarray, dict[str, FastColumn]]] = []
    # 1. Records of the first record's length that share its layout: whole columns
    #    at once from a 2-D view.
    group = np.flatnonzero(lengths == lengths[0])
    if len(group) * 2 >= n:
        try:
            found = _layout_group(records, data, starts, lengths, group, needed)
        except _GiveUp:
            found = None
        if found is not None and len(found[0]):
            handled[found[0]] = True
            parts.append(found)
    # 2. The rest: lockstep walks along up to MAX_TEMPLATES templates. A record that
    #    cannot serve as a template (or does not fit its own) is left to the generic
    #    path and the next one is tried.
    remaining = np.flatnonzero(~handled)
    for _ in range(2 * MAX_TEMPLATES):
        if len(remaining) == 0 or len(parts) > MAX_TEMPLATES:
            break
        first = int(remaining[0])
        try:
            entries = _template(records[first])
            ok, cols = _run_template(data, buf, starts[remaining], ends[remaining], entries, needed)
        except _GiveUp:
            ok = np.zeros(len(remaining), dtype=bool)
        if not ok[0]:
            remaining = remaining[1:]
            continue
        idx = remaining[ok]
        handled[idx] = True
        parts.append((idx, cols))
        remaining = remaining[~ok]
    if not parts:
        return None
    parts.sort(key=lambda part: int(part[0][0]) if len(part[0]) else n)
    return handled, _merge(parts, handled, needed)


def merge_columns(n: int, parts: list[tuple[np.ndarray, FastColumn]], dtype: DType) -> FastColumn:
    """Interleave columns covering disjoint record subsets back into record order.

    ``parts`` pairs each column with the positions (among ``n``) of its records.
    """
    present = np.zeros(n, dtype=bool)
    counts = np.zeros(n, dtype=np.int64)
    for idx, col in parts:
        present[idx] = col.present
        counts[idx] = col.counts
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    values = np.empty(int(offsets[-1]), dtype=object if dtype is string else dtype.np_dtype)
    for idx, col in parts:
        local = np.zeros(len(col.counts) + 1, dtype=np.int64)
        np.cumsum(col.counts, out=local[1:])
        dest = np.arange(len(col.values), dtype=np.int64) + np.repeat(
            offsets[idx] - local[:-1], col.counts
        )
        values[dest] = col.values
    return FastColumn(present, counts, values)


def _merge(
    parts: list[tuple[np.ndarray, dict[str, FastColumn]]],
    handled: np.ndarray,
    needed: Mapping[str, DType],
) -> dict[str, FastColumn]:
    """Put the columns of several templates back in record order."""
    if len(parts) == 1:
        return parts[0][1]
    pos_of = np.cumsum(handled) - 1  # record index -> position among handled records
    m = int(handled.sum())
    return {
        name: merge_columns(m, [(pos_of[idx], cols[name]) for idx, cols in parts], dtype)
        for name, dtype in needed.items()
    }
