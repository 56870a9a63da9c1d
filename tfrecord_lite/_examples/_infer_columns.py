"""Schema inference of a sample from the engines' columns: what ``infer_schema`` learns
of each key, without a Python loop over every value.

:func:`summarize` reads a sample of Examples in two steps:

* the protobuf parse gives each record's keys (counted once per distinct key set, in
  the order the records first show them) and, per key, the kind (``bytes_list``,
  ``float_list`` or ``int64_list``) of the first record that gives it one;
* one engine call over the whole sample (the vectorized parse ``parse_example``
  runs, each key read as that kind) gives per key the records that hold it, how many
  values each holds and the values: the records with the key but not its kind hold an
  empty ``Feature()``, and no record may hold another kind, since an engine leaves
  such a record to the protobuf reference.

It gives None where only the record by record reading can tell (a record that does
not parse, feature lists: a field an Example does not have, a key of two kinds, a key
given twice, anything else an engine leaves to the reference, the fast path switched
off, a sample of fewer than a few records, keys that never hold a kind alone, or a
wide sample: thousands of keys, each in a few records): the
caller then reads the sample record by record. What it gives is that reading's
exactly: keys and kinds in the order it meets them, and the value ranges as Python's
``min`` / ``max`` of each record's values, then of those in record order, give them
(of ``0.0`` and ``-0.0`` the first seen, NaNs as :func:`_first_extreme` says).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

import numpy as np
from google.protobuf.message import DecodeError

from .. import example_pb2
from ._engines import EngineState, SparseColumn, extract_examples
from ._schema import dtype_of_kind

__all__ = ["ENTRIES_PER_KEY", "KeySummary", "summarize"]


#: The fewest (record, key) entries per key for which :func:`summarize` reads the
#: sample by columns: each key's column costs tens of microseconds, each entry about
#: two read record by record.
ENTRIES_PER_KEY = 16


class KeySummary(NamedTuple):
    """What the record by record reading learns of one key over a sample."""

    key: str
    #: (kind, records), in the order the records first show each kind (None: an
    #: empty ``Feature()``).
    kinds: list[tuple[Optional[str], int]]
    #: Records that have the key at all.
    present: int
    #: Fewest / most values in one record that has it.
    min_count: int
    max_count: int
    #: Smallest / largest value (None for bytes, or no values).
    min_value: Optional[Any]
    max_value: Optional[Any]


def summarize(records: Sequence[bytes]) -> Optional[list[KeySummary]]:
    """Per key of the Examples ``records``, in the order they first show it, its
    :class:`KeySummary`; None where only the record by record reading can tell
    (see the module documentation)."""
    n = len(records)
    parse = example_pb2.Example.FromString
    ids: dict[tuple[str, ...], int] = {}
    pending: list[list[str]] = []  # per key set: its keys not yet seen with a kind
    of_record = np.empty(n, dtype=np.int64)
    typed: dict[str, str] = {}
    for i, record in enumerate(records):
        try:
            fmap = parse(record).features.feature
        except (DecodeError, RuntimeError, ValueError):
            return None  # the record by record reading words the error
        keys = tuple(fmap)
        sid = ids.get(keys)
        if sid is None:
            sid = ids[keys] = len(ids)
            pending.append(list(keys))
        of_record[i] = sid
        todo = pending[sid]
        if todo:
            left = []
            for key in todo:
                if key in typed:
                    continue
                kind = fmap[key].WhichOneof("kind")
                if kind is None:
                    left.append(key)
                else:
                    typed[key] = kind
            pending[sid] = left
    if not typed:
        return None
    per_set = np.bincount(of_record, minlength=len(ids))
    records_with: dict[str, int] = {}  # in the order the records first show the keys
    sets_with: dict[str, list[int]] = {}
    for keys, sid in ids.items():
        for key in keys:
            records_with[key] = records_with.get(key, 0) + int(per_set[sid])
            sets_with.setdefault(key, []).append(sid)
    if sum(records_with.values()) < ENTRIES_PER_KEY * len(records_with):
        return None  # a wide sample (keys in few records): per key, columns cost more
    needed = {key: dtype_of_kind(kind) for key, kind in typed.items()}
    # Every record read by an engine as these kinds: no key holds another kind, no
    # feature lists (a field an Example does not have), no key given twice.
    found = extract_examples(records, needed, EngineState(needed), sparse=True)
    if found is None:
        return None
    handled, columns = found
    if len(handled) != n or not bool(np.all(handled)):
        return None
    out: list[KeySummary] = []
    for key, total in records_with.items():
        kind = typed.get(key)
        if kind is None:
            out.append(KeySummary(key, [(None, total)], total, 0, 0, None, None))
            continue
        col = columns[key]
        if isinstance(col, SparseColumn):
            rows, held, values = col.rows, col.counts, col.values
        else:
            rows = np.flatnonzero(col.present)
            held, values = col.counts[rows], col.values
        if not rows.size or rows.size > total:
            return None  # not what the protobuf parse said
        kinds: list[tuple[Optional[str], int]] = [(kind, int(rows.size))]
        lo, hi = int(held.min()), int(held.max())
        if rows.size < total:  # the others hold an empty Feature()
            empty = np.isin(of_record, sets_with[key])
            if not bool(empty[rows].all()):
                return None
            empty[rows] = False
            kinds.insert(
                0 if int(np.argmax(empty)) < int(rows[0]) else 1, (None, total - rows.size)
            )
            lo = 0
        low = high = None
        if kind != "bytes_list" and values.size:
            low = _first_extreme(values, held, np.less)
            high = _first_extreme(values, held, np.greater)
        out.append(KeySummary(key, kinds, total, lo, hi, low, high))
    return out


def _first_extreme(values: np.ndarray, counts: np.ndarray, beats: Any) -> Any:
    """``values``' minimum (``beats=np.less``) or maximum as the record by record
    reading gives it: Python's ``min`` (``max``) of each record's values in order,
    then of those in record order. So the first value no later one beats, as a Python
    number; a record whose first value is NaN has NaN as its own, which is kept when
    it is the first record's and passed over (with the record's other values) later."""
    if values.dtype.kind == "f":
        nan = np.isnan(values)
        if nan.any():
            held = counts[counts > 0]
            starts = np.cumsum(held) - held
            if nan[0]:
                return values[0].item()
            bad_record = np.repeat(nan[starts], held)
            values = values[~(nan | bad_record)]
    best = values.min() if beats is np.less else values.max()
    if best == 0:  # 0.0 and -0.0 compare equal: the first of them wins
        best = values[int(np.flatnonzero(values == best)[0])]
    return best.item()
