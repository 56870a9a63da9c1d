"""The compiled SequenceExample walk: numba kernels over a chunk's concatenated records.

Loaded (compiled, or read from numba's cache) only when SequenceExamples are
parsed with the ``jit`` engine (:func:`~._jit._load`), so an Example reader
never pays for them. The context is walked as an Example's features
(:func:`~._jit_kernels._walk_record`, an empty ``Feature()`` flagged EMPTY: a
SequenceExample's context counts it as present); every step of every feature
list is checked, read or not, as protobuf does (:func:`_walk_lists`); anything
uncertain sends the whole batch to the reference path. :func:`fill_steps` then
writes each list's steps and values, as :func:`~._jit_kernels.fill_values`.

Wire layout walked::

    SequenceExample { 1: Features context (LEN)  2: FeatureLists (LEN) }
    FeatureLists    { 1: map entry (LEN), repeated }
    entry           { 1: key string (LEN)  2: FeatureList (LEN) }
    FeatureList     { 1: Feature (LEN), repeated }      (one a step)
"""

from __future__ import annotations

import numba
import numpy as np

from ._jit_kernels import (
    _BUF,
    _I8,
    _I8_2D,
    _I32,
    _I64,
    _I64_2D,
    _OPTIONS,
    _U8,
    _copy_values,
    _entry,
    _feature,
    _jit,
    _length,
    _t,
    _walk_record,
)

__all__ = ["fill_steps", "walk_sequences"]


@_jit
def _walk_lists(
    buf: np.ndarray,
    i: int,
    p: int,
    end: int,
    slots: np.ndarray,
    koff: np.ndarray,
    kbytes: np.ndarray,
    kkind: np.ndarray,
    seen: np.ndarray,
    lstart: np.ndarray,
    lend: np.ndarray,
    lsteps: np.ndarray,
    lcount: np.ndarray,
    lflag: np.ndarray,
) -> bool:
    """Walk the ``FeatureLists`` message ``buf[p:end]`` of record ``i``: every
    step of every list is checked (read or not, as protobuf does); False where the
    reference path decides."""
    while p < end:
        k, vp, ee = _entry(buf, p, end, i, slots, koff, kbytes, seen, -1)
        if ee < 0:
            return False
        steps = 0
        total = 0
        q = vp
        while q < ee:
            if buf[q] != 0x0A:
                return False
            sn, sp = _length(buf, q + 1, ee)
            if sp < 0:
                return False
            kind, _, count, _ = _feature(buf, sp, sp + sn)
            if kind < 0 or (k >= 0 and kind and kind != kkind[k]):
                return False
            steps += 1
            total += count
            q = sp + sn
        if k >= 0:
            lstart[i, k] = vp
            lend[i, k] = ee
            lsteps[i, k] = steps
            lcount[i, k] = total
            lflag[i, k] = 1
        p = ee
    return True


_SEQ_SIGNATURE = _t.boolean(
    _BUF, _I64, _I64,
    _I32, _I64, _U8, _I8, _I64, _I64_2D, _I64_2D, _I64_2D, _I8_2D,
    _I32, _I64, _U8, _I8, _I64, _I64_2D, _I64_2D, _I64_2D, _I64_2D, _I8_2D,
)  # fmt: skip


@numba.njit(_SEQ_SIGNATURE, **_OPTIONS)
def walk_sequences(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    cslots: np.ndarray,
    ckoff: np.ndarray,
    ckbytes: np.ndarray,
    ckkind: np.ndarray,
    cseen: np.ndarray,
    cstart: np.ndarray,
    cend: np.ndarray,
    ccount: np.ndarray,
    cflag: np.ndarray,
    lslots: np.ndarray,
    lkoff: np.ndarray,
    lkbytes: np.ndarray,
    lkkind: np.ndarray,
    lseen: np.ndarray,
    lstart: np.ndarray,
    lend: np.ndarray,
    lsteps: np.ndarray,
    lcount: np.ndarray,
    lflag: np.ndarray,
) -> bool:
    """Walk SequenceExamples ``starts[i]..ends[i]``: the context as an Example's
    features (``c*``, as :func:`walk_examples`; an empty ``Feature()`` flagged
    EMPTY), and per feature-list key read the list's bytes ``lstart..lend``, its
    steps, its number of values and ``lflag`` 1 where the record has the key.
    False (at the first such record) where the reference path decides."""
    for i in range(len(starts)):
        p = starts[i]
        end = ends[i]
        had_context = False
        had_lists = False
        while p < end:
            tag = buf[p]
            n, q = _length(buf, p + 1, end)
            if q < 0:
                return False
            if tag == 0x0A and not had_context:
                had_context = True
                if not _walk_record(
                    buf, i, p, q + n, cslots, ckoff, ckbytes, ckkind,
                    cstart, cend, ccount, cflag, cseen, cseen[:0],  # (no key order)
                ):  # fmt: skip
                    return False
            elif tag == 0x12 and not had_lists:
                had_lists = True
                if not _walk_lists(
                    buf, i, q, q + n, lslots, lkoff, lkbytes, lkkind, lseen,
                    lstart, lend, lsteps, lcount, lflag,
                ):  # fmt: skip
                    return False
            else:
                return False
            p = q + n
    return True


@numba.njit(
    _t.void(_BUF, _I8, _I64, _I64, _I64_2D, _I64_2D, _I64_2D, _U8, _I64, _I64, _U8, _I64, _I64),
    **_OPTIONS,
)
def fill_steps(
    buf: np.ndarray,
    kkind: np.ndarray,
    scursor: np.ndarray,
    vcursor: np.ndarray,
    lstart: np.ndarray,
    lend: np.ndarray,
    lsteps: np.ndarray,
    filled: np.ndarray,
    scount: np.ndarray,
    ints: np.ndarray,
    floats: np.ndarray,
    bstart: np.ndarray,
    blength: np.ndarray,
) -> None:
    """Every feature-list key's steps, record by record: per step whether it is
    not an empty ``Feature()`` (``filled``) and its number of values (``scount``),
    from ``scursor[k]`` on; the values from ``vcursor[k]`` on in their kind's
    output (as :func:`fill_values`). Both cursors are moved past them."""
    for i in range(lsteps.shape[0]):
        for k in range(len(kkind)):
            if lsteps[i, k] == 0:
                continue
            q = lstart[i, k]
            ee = lend[i, k]
            s = scursor[k]
            o = vcursor[k]
            while q < ee:
                sn, sp = _length(buf, q + 1, ee)
                kind, ls, count, flag = _feature(buf, sp, sp + sn)
                filled[s] = kind != 0
                scount[s] = count
                if count:
                    o = _copy_values(
                        buf, kind, flag, ls, sp + sn, count, o, ints, floats, bstart, blength
                    )
                s += 1
                q = sp + sn
            scursor[k] = s
            vcursor[k] = o
