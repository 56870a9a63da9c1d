"""The entry walk: Example features of records of any layout, all at once.

The map entries of all records are walked in lockstep *by entry index* (the n-th
entry of every record at once), so key order, missing keys, extra keys, list
lengths and varint widths do not matter. Each entry's key is looked up in the
:class:`~._numpy_keys.KeyTable`, which places each entry in a (record, key slot)
table; each feature's values are gathered per kind for all entries at once
(packed or unpacked numbers, BytesList items), and finally per key, in record
order, through that table (:func:`_walk`). A record this cannot read with
certainty is marked not handled and left to the generic path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Optional

import numpy as np

from ..._record import Buffer, unaligned
from .._feature_kinds import KIND_BYTES, KIND_FLOAT, KIND_INT64, KIND_OF_TAG
from .._schema import DType
from .._wire import MAX_LENGTH_LEN
from ._buffers import _bytes_objects
from ._numpy_keys import KeyTable
from ._numpy_vectors import (
    _decode_packed_varints,
    _gather_regions,
    _packed_varints_ok,
    _ranges,
    _varints,
)
from ._output import FastColumn


def _reject(ok: np.ndarray, rec: np.ndarray, good: np.ndarray) -> None:
    """Mark the records of the entries that are not ``good`` as not handled."""
    if not good.all():
        ok[rec[~good]] = False


def _length_field(
    data: np.ndarray, pos: np.ndarray, limit: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A length prefix at ``pos``: (payload start, payload end, fits within ``limit``)."""
    b = data.take(pos)
    if not len(b) or int(b.max()) < 0x80:  # one-byte lengths (the common case)
        start = pos + 1
        end = start + b
        fits = end <= limit
        if fits.all():
            return start, end, fits
        return start, np.where(fits, end, start), fits
    n, w = _varints(data, pos)
    start = pos + w
    fits = (w <= MAX_LENGTH_LEN) & (n >= 0) & (n <= limit - start)
    return start, start + np.where(fits, n, 0), fits


def _owner_major(
    n: int, owners: list[np.ndarray], *columns: list[np.ndarray]
) -> tuple[np.ndarray, ...]:
    """Put items found step by step (``owners[k]``: owners of the k-th items) owner-major.

    Within one owner, items keep their step order. No sort: each item's place is
    its owner's first place plus its step.
    """
    owner = np.concatenate(owners)
    if len(owners) == 1:
        return (owner, *(c[0] for c in columns))
    counts = np.bincount(owner, minlength=n)
    first = np.zeros(n, dtype=np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    steps = np.concatenate([np.full(len(o), k, dtype=np.int64) for k, o in enumerate(owners)])
    dest = first[owner] + steps
    out = [np.empty_like(owner)]
    out[0][dest] = owner
    for c in columns:
        flat = np.concatenate(c)
        placed = np.empty_like(flat)
        placed[dest] = flat
        out.append(placed)
    return tuple(out)


#: The lockstep walk hands the regions still going to :func:`_walk_rest` once this
#: many steps are done and no more than :data:`REST_REGIONS` regions are left.
REST_AFTER = 32
REST_REGIONS = 16


class _Bad(Exception):
    """A field :func:`_walk_rest` cannot read (the reference path words it)."""


def _long_length(buf: bytes, p: int) -> tuple[int, int]:
    """The length prefix at ``buf[p]`` of 2 to :data:`MAX_LENGTH_LEN` bytes: (length,
    position after it); :class:`_Bad` where it is longer."""
    n, shift, q = 0, 0, p
    while q - p < MAX_LENGTH_LEN:
        b = buf[q]
        n |= (b & 0x7F) << shift
        q += 1
        if b < 0x80:
            return n, q
        shift += 7
    raise _Bad


def _walk_rest(
    data: np.ndarray, act: np.ndarray, cur: np.ndarray, lim: np.ndarray, ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rest of a few long regions, each walked field by field in one Python loop:
    (owners, payload starts, payload ends), region after region.

    A step of the lockstep walk costs some NumPy calls whatever the number of
    regions it reads, so a few records of many fields (a record of 200,000 tiny
    features) would take a step per field; here a field costs a few byte reads.
    """
    owners: list[np.ndarray] = []
    spans: list[np.ndarray] = []
    for a, c, e in zip(act.tolist(), cur.tolist(), lim.tolist()):
        buf = data[c:e].tobytes()
        pos, end = 0, e - c
        found: list[int] = []
        add = found.append
        try:
            while pos < end:
                if buf[pos] != 0x0A:
                    raise _Bad
                n = buf[pos + 1]
                p = pos + 2
                if n >= 0x80:
                    n, p = _long_length(buf, pos + 1)
                pos = p + n
                if pos > end:
                    raise _Bad
                add(p)
                add(pos)
        except (_Bad, IndexError):
            ok[a] = False
            continue
        span = np.array(found, dtype=np.int64).reshape(-1, 2) + c
        owners.append(np.full(len(span), a, dtype=np.int64))
        spans.append(span)
    if not spans:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    span = np.concatenate(spans)
    return np.concatenate(owners), span[:, 0], span[:, 1]


def _walk_fields(
    data: np.ndarray,
    act: np.ndarray,
    cur: np.ndarray,
    lim: np.ndarray,
    ok: np.ndarray,
    ordered: bool = True,
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Walk regions ``cur[i]..lim[i]`` of fields 1 (tag 0x0A, length-delimited) in lockstep.

    Step k reads the k-th field of every region still going: returns, per step,
    the owners (``act`` values) and payload starts and ends. An owner whose region
    holds anything else, or a field running past its end, is marked in ``ok``.
    With ``ordered=False`` (the caller needs each field once, in no order of steps),
    the fields of a few long regions come last, all in one part (:func:`_walk_rest`).
    """
    owners: list[np.ndarray] = []
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    while len(act):
        if not ordered and len(owners) >= REST_AFTER and len(act) <= REST_REGIONS:
            rest = _walk_rest(data, act, cur, lim, ok)
            owners.append(rest[0])
            starts.append(rest[1])
            ends.append(rest[2])
            break
        tag_ok = data.take(cur) == 0x0A
        s, e, fits = _length_field(data, cur + 1, lim)
        good = tag_ok & fits
        if not good.all():
            ok[act[~good]] = False
            act, s, e, lim = act[good], s[good], e[good], lim[good]
        owners.append(act)
        starts.append(s)
        ends.append(e)
        more = e < lim
        act, cur, lim = act[more], e[more], lim[more]
    return owners, starts, ends


def _bytes_items(
    data: np.ndarray, ls: np.ndarray, le: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Walk BytesLists in lockstep: (items per list, item starts, item lengths, list ok).

    Items come list-major, in order.
    """
    m = len(ls)
    good_list = np.ones(m, dtype=bool)
    act = np.flatnonzero(ls < le)
    owners, starts, ends = _walk_fields(data, act, ls[act], le[act], good_list)
    if not owners:
        z = np.zeros(0, dtype=np.int64)
        return np.zeros(m, dtype=np.int64), z, z, good_list
    owner, start, end = _owner_major(m, owners, starts, ends)
    return np.bincount(owner, minlength=m).astype(np.int64), start, end - start, good_list


def _float_values(
    data: np.ndarray, ls: np.ndarray, le: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FloatLists: (values per list, all values, list ok). Packed (one chunk) or unpacked."""
    m = len(ls)
    size = le - ls
    first = data.take(ls)
    counts = np.zeros(m, dtype=np.int64)
    good = size == 0
    packed = (first == 0x0A) & ~good
    unpacked = (first == 0x0D) & ~good
    ps, pe, fits = _length_field(data, ls + 1, le)
    packed_ok = packed & fits & (pe == le) & ((pe - ps) % 4 == 0)
    if not unpacked.any() and ((pe - ps)[packed_ok] == 4).all():
        # One float per list (or none): read them as 4-byte words, no byte gather.
        counts[packed_ok] = 1
        good |= packed_ok
        scalars = unaligned(data, "<u4")
        return counts, scalars[ps[packed_ok]].view("<f4").astype(np.float32), good
    counts[packed_ok] = (pe - ps)[packed_ok] // 4
    good |= packed_ok
    if not unpacked.any():
        raw = _gather_regions(data, ps[packed_ok], (pe - ps)[packed_ok])
        return counts, raw.view("<f4").astype(np.float32), good
    unpacked &= size % 5 == 0
    idx = np.flatnonzero(unpacked)
    raw = _gather_regions(data, ls[idx], size[idx]).reshape(-1, 5)
    tag_bad = raw[:, 0] != 0x0D
    item_owner = np.repeat(idx, size[idx] // 5)
    unpacked[item_owner[tag_bad]] = False
    counts[unpacked] = size[unpacked] // 5
    good |= unpacked
    # Interleave both kinds of lists in list order.
    offsets = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    values = np.empty(int(offsets[-1]), dtype=np.float32)
    values[_ranges(offsets[:-1][packed_ok], counts[packed_ok])] = _gather_regions(
        data, ps[packed_ok], (pe - ps)[packed_ok]
    ).view("<f4")
    keep = unpacked[item_owner]
    values[_ranges(offsets[:-1][unpacked], counts[unpacked])] = (
        np.ascontiguousarray(raw[keep, 1:]).reshape(-1).view("<f4")
    )
    return counts, values, good


def _int64_values(
    data: np.ndarray, ls: np.ndarray, le: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Int64Lists: (values per list, all values, list ok). Packed (one chunk) or unpacked."""
    m = len(ls)
    size = le - ls
    first = data.take(ls)
    empty = size == 0
    packed = (first == 0x0A) & ~empty
    unpacked = (first == 0x08) & ~empty
    ps, pe, fits = _length_field(data, ls + 1, le)
    packed &= fits & (pe == le)
    if not unpacked.any():
        # One varint per list (or none): read them where they are, no byte gather.
        plen = pe - ps
        value, width = _varints(data, ps)
        single = packed & (width == plen) & (width <= 10)
        if (single | ~packed | (plen == 0)).all():
            counts = single.astype(np.int64)
            return counts, value[single], empty | packed
    # Unpacked lists are varints too (tag 0x08, value, tag, value, ...): decode both alike.
    rs = np.where(unpacked, ls, ps)
    rlen = np.where(packed | unpacked, np.where(unpacked, size, pe - ps), 0)
    good = empty | packed | unpacked
    raw = _gather_regions(data, rs, rlen)
    region_ok = _packed_varints_ok(raw, rlen)
    if not region_ok.all():
        good &= region_ok
        rlen = np.where(good, rlen, 0)
        raw = _gather_regions(data, rs, rlen)
    decoded = _decode_packed_varints(raw, rlen)
    assert decoded is not None  # every region was checked
    values, counts = decoded
    if unpacked.any():
        owner = np.repeat(np.arange(m, dtype=np.int64), counts)
        offsets = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        within = np.arange(len(values), dtype=np.int64) - offsets[:-1][owner]
        is_tag = unpacked[owner] & (within % 2 == 0)
        bad = unpacked & (counts % 2 == 1)
        bad[owner[is_tag & (values != 0x08)]] = True
        good &= ~bad
        values = values[~is_tag]
        counts = np.where(unpacked, counts // 2, counts)
    return counts, values, good


def _walk_features(
    data: np.ndarray, fs: np.ndarray, fe: np.ndarray, ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Walk the map entries of Features regions ``fs..fe`` in lockstep by entry index.

    Returns (owner, start, end) of every entry body, step by step (the first
    entries of all records, then the second ones, ...), and where each step's
    entries begin (with the end last: the runs :meth:`KeyTable.lookup` guesses a
    key for); owners whose entries are malformed are marked in ``ok``.
    """
    act = np.flatnonzero(ok & (fs < fe))
    owners, starts, ends = _walk_fields(data, act, fs[act], fe[act], ok, ordered=False)
    steps = np.zeros(len(owners) + 1, dtype=np.int64)
    if not owners:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, steps
    np.cumsum([len(o) for o in owners], out=steps[1:])
    if len(owners) == 1:
        return owners[0], starts[0], ends[0], steps
    return np.concatenate(owners), np.concatenate(starts), np.concatenate(ends), steps


class _Entries(NamedTuple):
    """The map entries of a chunk (in walk order): owner, kind code, list region.

    ``place``: per record and key slot (``n * slots``, record-major), the index of
    the entry giving that key a kind, or -1.
    """

    owner: np.ndarray
    code: np.ndarray
    ls: np.ndarray
    le: np.ndarray
    place: np.ndarray


def _key_value(
    data: np.ndarray, es: np.ndarray, ee: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Map entries ``es..ee`` (key: field 1, value: field 2, spanning the rest):
    (key start, key end, value start, well formed). The value ends at ``ee``."""
    tag_ok = (es < ee) & (data.take(es) == 0x0A)
    ks, ke, fits = _length_field(data, es + 1, ee)
    good = tag_ok & fits & (ke < ee)
    if not good.all():
        ke = np.where(good, ke, es)
    good &= data.take(ke) == 0x12
    vs, ve, fits = _length_field(data, ke + 1, ee)
    good &= fits & (ve == ee)
    return ks, ke, vs, good


def _place_keys(
    data: np.ndarray,
    owner: np.ndarray,
    ks: np.ndarray,
    ke: np.ndarray,
    good: np.ndarray,
    table: KeyTable,
    ok: np.ndarray,
    steps: Optional[np.ndarray] = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Look up the keys ``ks..ke`` of map entries (owned by records ``owner``) in
    ``table``: (slot per entry, -1 if not read; per record and slot, record-major,
    the entry giving it, else -1; the entries with a slot; their places).
    ``steps``: the walk's steps (:func:`_walk_features`), which the lookup guesses from.

    Records with an entry not ``good``, an unread key that is not ASCII, or a key
    given twice (merged messages) are marked in ``ok``: the generic path reads them.
    """
    _reject(ok, owner, good)
    slots, safe = table.lookup(data, ks, np.where(good, ke - ks, 0), steps)
    _reject(ok, owner, safe)
    ns = len(table.names)
    place = np.full(len(ok) * ns, -1, dtype=np.int64)
    known = np.flatnonzero(slots >= 0)
    flat = owner[known] * ns + slots[known]
    place[flat] = known
    twice = place[flat] != known
    if twice.any():
        ok[owner[known[twice]]] = False
    return slots, place, known, flat


def _entries(
    data: np.ndarray,
    owner: np.ndarray,
    es: np.ndarray,
    ee: np.ndarray,
    table: KeyTable,
    ok: np.ndarray,
    zero: int,
    found: Optional[np.ndarray] = None,
    steps: Optional[np.ndarray] = None,
) -> _Entries:
    """Read each entry's key (looked up in ``table``) and its Feature's kind and list region.

    ``zero``: the index of a zero byte in ``data`` (an empty Feature's length is read there).
    ``found``: when given (``n * slots`` bools, record-major), set where a record has
    the key at all, an empty Feature included. ``steps``: as :func:`_place_keys`.
    """
    ks, ke, vs, good = _key_value(data, es, ee)
    # The Feature: empty (no kind), or exactly one list field spanning it.
    nonempty = vs < ee
    if nonempty.all():
        code = KIND_OF_TAG.take(data.take(vs))
        lpos = vs + 1
    else:
        code = np.where(nonempty, KIND_OF_TAG.take(data.take(vs)), 0).astype(np.int8)
        # An empty Feature's length is read from a zero byte (not the next entry).
        lpos = np.where(nonempty, vs + 1, zero)
    ls, le, fits = _length_field(data, lpos, ee)
    good &= ~nonempty | ((code > 0) & fits & (le == ee))
    slots, place, known, flat = _place_keys(data, owner, ks, ke, good, table, ok, steps)
    if len(known):
        kslots = slots[known]
        if found is not None:
            found[flat] = True
        # A kind other than the spec's: the generic path words the error.
        kcode = code[known]
        wrong = (kcode != 0) & (kcode != table.codes[kslots])
        if wrong.any():
            ok[owner[known[wrong]]] = False
        empty = kcode == 0
        if empty.any():
            place[flat[empty]] = -1  # a key mapped to an empty Feature() is absent
    if not good.all():
        le = np.where(good & nonempty, le, ls)
    return _Entries(owner, code, ls, le, place)


def _walk_examples(
    data: np.ndarray, starts: np.ndarray, ends: np.ndarray, ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The Features region of each Example record (one field spanning it, or nothing)."""
    fs = starts.copy()
    idx = np.flatnonzero(ends > starts)
    if len(idx):
        s = starts[idx]
        e = ends[idx]
        ps, pe, fits = _length_field(data, s + 1, e)
        good = (data.take(s) == 0x0A) & fits & (pe == e)
        ok[idx[~good]] = False
        fs[idx] = ps
    return fs, ends


class _KindValues(NamedTuple):
    """The lists of one kind (in item order): values per list, where each list's
    values start, and the values (BytesLists: (item starts, item lengths))."""

    counts: np.ndarray
    offsets: np.ndarray
    values: Any


def _values_by_kind(
    data: np.ndarray, code: np.ndarray, ls: np.ndarray, le: np.ndarray
) -> tuple[dict[int, _KindValues], np.ndarray, np.ndarray]:
    """Decode the lists ``ls..le`` of every item (``code``: its kind, 0 for none), each
    kind at once: (per kind, each item's place among its kind, items well formed)."""
    per_kind: dict[int, _KindValues] = {}
    local = np.zeros(len(code), dtype=np.int64)
    good_items = np.ones(len(code), dtype=bool)
    for kind in (KIND_BYTES, KIND_FLOAT, KIND_INT64):
        idx = np.flatnonzero(code == kind)
        local[idx] = np.arange(len(idx), dtype=np.int64)
        values: Any
        if kind == KIND_BYTES:
            counts, istart, ilen, good = _bytes_items(data, ls[idx], le[idx])
            values = (istart, ilen)
        elif kind == KIND_FLOAT:
            counts, values, good = _float_values(data, ls[idx], le[idx])
        else:
            counts, values, good = _int64_values(data, ls[idx], le[idx])
        if not good.all():
            good_items[idx[~good]] = False
        offsets = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        per_kind[kind] = _KindValues(counts, offsets, values)
    return per_kind, local, good_items


def _gather_kind(
    buf: Buffer, data: np.ndarray, lists: _KindValues, kind: int, j: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(values per list, all values) of the lists at places ``j`` of one kind, in order."""
    counts = lists.counts[j]
    items = _ranges(lists.offsets[j], counts)
    if kind == KIND_BYTES:
        istart, ilen = lists.values
        return counts, _bytes_objects(buf, data, istart[items], ilen[items])
    values: np.ndarray = lists.values[items]
    return counts, values


def _columns(
    buf: Buffer,
    data: np.ndarray,
    ent: _Entries,
    ok: np.ndarray,
    table: KeyTable,
    needed: Mapping[str, DType],
) -> dict[str, FastColumn]:
    """Values of every entry (validated, read or not), then one column per needed key."""
    per_kind, local, good = _values_by_kind(data, ent.code, ent.ls, ent.le)
    _reject(ok, ent.owner, good)
    # Per handled record and slot: the entry giving the key a kind, or -1.
    place = ent.place.reshape(len(ok), len(table.names))
    if not ok.all():
        place = place[ok]
    m = len(place)
    cols: dict[str, FastColumn] = {}
    for slot, name in enumerate(table.names):
        entry = place[:, slot]
        present = entry >= 0
        kind = int(table.codes[slot])
        found, values = _gather_kind(buf, data, per_kind[kind], kind, local[entry[present]])
        counts = np.zeros(m, dtype=np.int64)
        counts[present] = found
        cols[name] = FastColumn(present, counts, values)
    return cols


def _walk(
    buf: Buffer,
    data: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    table: KeyTable,
    needed: Mapping[str, DType],
    zero: int,
) -> tuple[np.ndarray, dict[str, FastColumn]]:
    """The entry walk over records ``starts..ends``: (handled mask, columns of those).

    ``data`` (``buf``'s bytes) has at least :data:`_PAD` bytes after the last
    record, and a zero byte at ``zero``.
    """
    ok = np.ones(len(starts), dtype=bool)
    fs, fe = _walk_examples(data, starts, ends, ok)
    owner, es, ee, steps = _walk_features(data, fs, fe, ok)
    ent = _entries(data, owner, es, ee, table, ok, zero, steps=steps)
    return ok, _columns(buf, data, ent, ok, table, needed)
