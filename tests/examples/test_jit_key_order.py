"""The compiled walk compares each entry's key with the key the previous record had at
the same place before it hashes it (records of one writer mostly share their key
order). Whatever the orders, the columns and parses are the NumPy engine's: keys that
move, go missing, come twice, share a length or a prefix with the expected one, keys
that are not read (ASCII or not) where a read one was expected, more entries than
the order remembers."""

from __future__ import annotations

import importlib.util
import random
import struct
from typing import Any

import numpy as np
import pytest
from _helpers import ld as _ld
from _helpers import varint as _varint

import tfrecord_lite as tfr
from tfrecord_lite._examples._engines import EngineState, _jit, extract_examples

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None, reason="numba is not installed (the jit extra)"
)

#: Read keys: same lengths, kinds and prefixes on purpose (``ab``/``ae``, ``key_2``/``key_4``).
READ = {
    "ab": "int",
    "ac": "float",
    "ae": "int",
    "key_1": "bytes",
    "key_2": "int",
    "key_4": "int",
    "key_10": "float",
    "a_much_longer_key_name_of_some_size": "int",
}
#: Keys present in records but not in the spec.
UNREAD = [b"ad", b"key_3", b"zz", "schl\u00fcssel".encode()]


def _feature(kind: str, rng: random.Random) -> bytes:
    if kind == "int":
        values = b"".join(_varint(rng.randrange(0, 2**40)) for _ in range(rng.randint(0, 3)))
        return _ld(3, _ld(1, values))
    if kind == "float":
        values = b"".join(struct.pack("<f", rng.uniform(-9, 9)) for _ in range(rng.randint(0, 3)))
        return _ld(2, _ld(1, values))
    return _ld(
        1, b"".join(_ld(1, rng.randbytes(rng.randint(0, 9))) for _ in range(rng.randint(0, 2)))
    )


def _record(keys: list[bytes], rng: random.Random) -> bytes:
    entries = b""
    for key in keys:
        kind = READ.get(key.decode("utf-8", "replace"), rng.choice(["int", "float", "bytes"]))
        entries += _ld(1, _ld(1, key) + _ld(2, _feature(kind, rng)))
    return _ld(1, entries)


def _orders(seed: int, n: int) -> list[list[bytes]]:
    """Mostly one order; then moves, gaps, repeats, unread keys, long records."""
    rng = random.Random(seed)
    base = [k.encode() for k in READ] + UNREAD[: seed % 4]
    rng.shuffle(base)
    out = []
    for _ in range(n):
        keys = list(base)
        roll = rng.random()
        if roll < 0.1:
            rng.shuffle(keys)
        elif roll < 0.2:
            del keys[rng.randrange(len(keys))]
        elif roll < 0.25:
            keys.insert(rng.randrange(len(keys) + 1), rng.choice(UNREAD))
        elif roll < 0.28:
            keys.append(keys[rng.randrange(len(keys))])  # a key twice: the reference decides
        elif roll < 0.31:
            # more entries than the remembered order holds
            keys = [f"extra_{j}".encode() for j in range(40)] + keys
        elif roll < 0.34:
            i, j = rng.randrange(len(keys)), rng.randrange(len(keys))
            keys[i], keys[j] = keys[j], keys[i]
        out.append(keys)
    return out


def _needed() -> dict[str, Any]:
    return {
        k: {"int": tfr.int64, "float": tfr.float32, "bytes": tfr.string}[v] for k, v in READ.items()
    }


SPEC = {
    k: tfr.VarLenFeature({"int": tfr.int64, "float": tfr.float32, "bytes": tfr.string}[v])
    for k, v in READ.items()
}


@pytest.mark.parametrize("seed", range(8))
def test_columns_equal_the_numpy_engine_whatever_the_key_orders(seed: int) -> None:
    rng = random.Random(seed + 100)
    records = [_record(keys, rng) for keys in _orders(seed, 400)]
    found = _jit.jit_extract(records, _jit.jit_table(_needed()))
    with tfr.options(engine="numpy"):
        ref = extract_examples(records, _needed(), EngineState(_needed()))
    assert found is not None and ref is not None
    handled, cols = found
    ref_handled, ref_cols = ref
    # (records with a key twice or a non-ASCII unread key go to the reference path)
    assert 0 < int(handled.sum()) < len(records) or seed % 4 == 0
    assert handled.tolist() == ref_handled.tolist()
    for key, col in cols.items():
        want = ref_cols[key]
        assert col.present.tolist() == want.present.tolist(), key
        assert col.counts.tolist() == want.counts.tolist(), key
        assert np.array_equal(np.asarray(col.values), np.asarray(want.values)), key


@pytest.mark.parametrize("seed", range(4))
def test_parses_equal_the_numpy_engine_whatever_the_key_orders(seed: int, monkeypatch: Any) -> None:
    rng = random.Random(seed)
    records = [_record(keys, rng) for keys in _orders(seed + 50, 300)]
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "jit")
    got = tfr.parse_example(records, SPEC)
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "numpy")
    want = tfr.parse_example(records, SPEC)
    for key in SPEC:
        assert got[key].values.dtype == want[key].values.dtype
        assert got[key].values.tolist() == want[key].values.tolist(), key
        assert np.array_equal(got[key].indices, want[key].indices), key
        assert np.array_equal(got[key].dense_shape, want[key].dense_shape), key
