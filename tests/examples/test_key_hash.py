"""The feature-key hash and the key tables of both engines (issue 34, item 11).

Keys alike in length and in their first and last 8 bytes (``sensor_00001_reading``
...) used to share one hash in the compiled engine, so its table was probed
linearly through all of them: quadratic to build and to look up. The hash now
covers the whole key, one definition for the NumPy engine, the compiled kernels and
the table builders, and each spec's tables are built once. These tests count the
probe work (no timing).
"""

from __future__ import annotations

import importlib.util
import random
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._examples._engines import _jit, _keyhash
from tfrecord_lite._examples._engines import _numpy_keys as _keys
from tfrecord_lite._record import unaligned

HAS_NUMBA = importlib.util.find_spec("numba") is not None
ALIKE = [f"sensor_{i:05d}_reading" for i in range(3000)]


def _random_keys(n: int) -> list[bytes]:
    rng = random.Random(3)
    keys = [rng.randbytes(rng.randrange(0, 41)) for _ in range(n)]
    return keys + [k.encode() for k in ALIKE[:200]] + [b"", b"a", b"abcdefgh", b"abcdefghi"]


def _buffer(keys: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = np.frombuffer(b"".join(keys) + bytes(16), dtype=np.uint8)
    length = np.array([len(k) for k in keys], dtype=np.int64)
    start = np.zeros(len(keys), dtype=np.int64)
    np.cumsum(length[:-1], out=start[1:])
    return data, start, length


def test_numpy_hash_equals_the_one_key_hash() -> None:
    keys = _random_keys(2000)
    data, start, length = _buffer(keys)
    got = _keyhash.key_hashes(unaligned(data, "<u8"), start, length)
    assert got.tolist() == [_keyhash.key_hash(k) for k in keys]


@pytest.mark.skipif(not HAS_NUMBA, reason="numba not installed")
def test_compiled_hash_equals_the_one_key_hash() -> None:
    from tfrecord_lite._examples._engines import _kernels

    kern = _kernels.load()
    keys = _random_keys(500)
    data, start, length = _buffer(keys)
    got = [int(kern.key_hash(data, int(s), int(n))) for s, n in zip(start, length)]
    assert got == [_keyhash.key_hash(k) for k in keys]


def test_keys_alike_but_for_their_middle_spread_over_the_tables() -> None:
    needed = {k: tfr.int64 for k in ALIKE}
    # 3,000 keys of one length and the same first and last 8 bytes: every key is found
    # within a few buckets of its own (it was a chain through all of them).
    assert _jit.JitTable(needed).probes <= 8
    assert _keys.KeyTable(needed).probes <= 8
    homes = {_keyhash.key_hash(k.encode()) & (4 * 4096 - 1) for k in ALIKE}
    assert len(homes) > 0.8 * len(ALIKE)


def test_the_numpy_lookup_finds_every_alike_key_and_no_other() -> None:
    table = _keys.KeyTable({k: tfr.int64 for k in ALIKE})
    probe = [k.encode() for k in ALIKE] + [b"sensor_03000_reading", b"sensor_0000_reading"]
    data, start, length = _buffer(probe)
    slots, safe = table.lookup(data, start, length)
    assert slots.tolist() == [*range(len(ALIKE)), -1, -1]
    assert safe.all()


def test_each_spec_builds_its_key_tables_once(monkeypatch: Any) -> None:
    built: list[str] = []
    for cls in (_keys.KeyTable, _jit.JitTable):
        real = cls.__init__

        def counting(self: Any, needed: Any, _real: Any = real, _name: str = cls.__name__) -> None:
            built.append(_name)
            _real(self, needed)

        monkeypatch.setattr(cls, "__init__", counting)
    _keys._key_table.cache_clear()
    _jit._jit_table.cache_clear()
    keys = [f"k{i}_x" for i in range(50)]
    records = [tfr.encode_example({k: [i] for k in keys[i % 7 :]}) for i in range(100)]
    for engine in ("numpy", "jit") if HAS_NUMBA else ("numpy",):
        monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
        for _ in range(4):  # a new, equal spec dict each call
            spec = {k: tfr.VarLenFeature(tfr.int64) for k in keys}
            tfr.parse_example(records, spec)
    assert built.count("KeyTable") == 1
    assert built.count("JitTable") == (1 if HAS_NUMBA else 0)


@pytest.mark.parametrize("engine", ["numpy", "jit"] if HAS_NUMBA else ["numpy"])
def test_alike_keys_parse_as_the_reference(engine: str, monkeypatch: Any) -> None:
    keys = ALIKE[:1500]
    rng = random.Random(1)
    records = []
    for i in range(70):
        chosen = rng.sample(keys, 40)  # each record its own keys, in its own order
        records.append(tfr.encode_example({k: [i, len(k)] for k in chosen}))
    spec = {k: tfr.VarLenFeature(tfr.int64) for k in keys}
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    fast = tfr.parse_example(records, spec)
    monkeypatch.setenv("TFRECORD_LITE_FASTPATH", "0")
    slow = tfr.parse_example(records, spec)
    for k in keys:
        assert fast[k].indices.tolist() == slow[k].indices.tolist()
        assert fast[k].values.tolist() == slow[k].values.tolist()
