"""The entry walk of SequenceExamples.

The context's map entries are walked as an Example's, then the feature lists'
entries, then the steps (``Feature`` s) of every list at once
(:func:`_sequence_window`). A batch with any record this cannot read with
certainty goes to the generic path whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional

import numpy as np

from .._feature_kinds import KIND_OF_TAG
from .._schema import DType
from ._buffers import _contiguous
from ._numpy_entries import (
    _columns,
    _entries,
    _gather_kind,
    _key_value,
    _KindValues,
    _length_field,
    _owner_major,
    _place_keys,
    _values_by_kind,
    _walk_features,
    _walk_fields,
)
from ._numpy_keys import KeyTable
from ._numpy_vectors import _ranges
from ._output import FastColumn, SequenceColumns


def _sequence_parts(
    data: np.ndarray, starts: np.ndarray, ends: np.ndarray, ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The context (field 1) and feature_lists (field 2) regions of each
    SequenceExample: (context start, end, lists start, end), empty where absent.
    A record with anything else, or either field twice, is marked in ``ok``."""
    cs, ce, fs, fe = starts.copy(), starts.copy(), starts.copy(), starts.copy()
    seen = np.zeros((2, len(starts)), dtype=bool)
    act = np.flatnonzero(ends > starts)
    cur, lim = starts[act], ends[act]
    while len(act):
        tag = data.take(cur)
        s, e, fits = _length_field(data, cur + 1, lim)
        field = np.where(tag == 0x0A, 0, np.where(tag == 0x12, 1, -1))
        good = fits & (field >= 0)
        good[good] &= ~seen[field[good], act[good]]
        ok[act[~good]] = False
        for f, (rs, re_) in enumerate(((cs, ce), (fs, fe))):
            mine = good & (field == f)
            rs[act[mine]] = s[mine]
            re_[act[mine]] = e[mine]
            seen[f, act[mine]] = True
        more = good & (e < lim)
        act, cur, lim = act[more], e[more], lim[more]
    return cs, ce, fs, fe


def _step_values(
    data: np.ndarray, fs: np.ndarray, fe: np.ndarray, zero: int
) -> Optional[tuple[np.ndarray, dict[int, _KindValues], np.ndarray]]:
    """The Feature messages ``fs..fe`` (steps of feature lists; each empty, or one
    list of any kind): (kind code per Feature, 0 if empty; :func:`_values_by_kind`'s
    lists per kind and places). None when any is malformed.
    """
    nonempty = fs < fe
    code = np.where(nonempty, KIND_OF_TAG.take(data.take(np.where(nonempty, fs, zero))), 0)
    if (code < 0).any():
        return None
    ls, le, fits = _length_field(data, np.where(nonempty, fs + 1, zero), fe)
    if not (~nonempty | (fits & (le == fe))).all():
        return None
    per_kind, local, good = _values_by_kind(data, code, ls, le)
    if not good.all():
        return None
    return code, per_kind, local


def _sequence_window(
    records: Sequence[bytes],
    lengths: np.ndarray,
    context: Mapping[str, DType],
    lists: Mapping[str, DType],
    ctable: KeyTable,
    ltable: KeyTable,
) -> Optional[SequenceColumns]:
    """:func:`extract_sequences` of one window of records."""
    n = len(records)
    buf, starts, zero = _contiguous(records, lengths)
    data = np.frombuffer(buf, dtype=np.uint8)
    ok = np.ones(n, dtype=bool)
    cs, ce, fs, fe = _sequence_parts(data, starts, starts + lengths, ok)
    # The context: an Example's Features.
    owner, es, ee, steps = _walk_features(data, cs, ce, ok)
    found = np.zeros(n * len(ctable.names), dtype=bool)
    ent = _entries(data, owner, es, ee, ctable, ok, zero, found, steps)
    if not ok.all():
        return None
    cols = _columns(buf, data, ent, ok, ctable, context)
    if not ok.all():
        return None
    has = found.reshape(n, len(ctable.names))
    ctx = {
        name: cols[name]._replace(present=has[:, slot]) for slot, name in enumerate(ctable.names)
    }
    # The feature lists: entries of the same shape, each value a FeatureList.
    owner, es, ee, steps = _walk_features(data, fs, fe, ok)
    ks, ke, vs, good = _key_value(data, es, ee)
    _, place, _, _ = _place_keys(data, owner, ks, ke, good, ltable, ok, steps)
    if not ok.all():
        return None
    # Every step of every list, read or not (as protobuf checks them all): its
    # Feature's region, entry by entry; then each kind's values for all steps at once.
    good = np.ones(len(es), dtype=bool)
    act = np.flatnonzero(vs < ee)
    owners, step_starts, step_ends = _walk_fields(data, act, vs[act], ee[act], good)
    if not good.all():
        return None
    if owners:
        step_owner, step_start, step_end = _owner_major(len(es), owners, step_starts, step_ends)
    else:
        step_owner = step_start = step_end = np.zeros(0, dtype=np.int64)
    steps_of = _step_values(data, step_start, step_end, zero)
    if steps_of is None:
        return None
    code, per_kind, local = steps_of
    per_entry = np.bincount(step_owner, minlength=len(es)).astype(np.int64)
    first = np.zeros(len(es), dtype=np.int64)
    np.cumsum(per_entry[:-1], out=first[1:])
    out: dict[str, tuple[np.ndarray, np.ndarray, FastColumn]] = {}
    where = place.reshape(n, len(ltable.names))
    for slot, name in enumerate(ltable.names):
        entry = where[:, slot]
        present = entry >= 0
        mine = entry[present]  # this key's entries, in record order
        steps = np.zeros(n, dtype=np.int64)
        steps[present] = per_entry[mine]
        idx = _ranges(first[mine], per_entry[mine])  # their steps, in order
        kind = int(ltable.codes[slot])
        filled = code[idx] != 0  # steps that are not an empty Feature()
        if (code[idx][filled] != kind).any():
            return None  # a kind other than the spec's: the generic path words the error
        per_step, values = _gather_kind(buf, data, per_kind[kind], kind, local[idx[filled]])
        counts = np.zeros(len(idx), dtype=np.int64)
        counts[filled] = per_step
        out[name] = (present, steps, FastColumn(filled, counts, values))
    return SequenceColumns(ctx, out)
