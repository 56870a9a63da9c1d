"""The NumPy engine's key lookup: guesses from the walk's steps, and key signatures (issue 36).

The entry walk reads the k-th map entry of every record in one step, so where
records are written in one key order a step holds one key. ``KeyTable.lookup``
looks up each step's first key and compares the step's other keys with it. A key
left over is looked up by its signature (its length and last byte): where only one
key read has that signature it is compared with that key, where none has it it is
no key read, and only where several share it is it hashed. These tests check that
the slots (and the ASCII flags of unread keys) are the hash lookup's whatever the
route, and that each route is taken where it should be (counting the keys hashed;
no timing).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from _helpers import canon

import tfrecord_lite as tfr
from tfrecord_lite._examples._engines import _numpy_keys as _keys
from tfrecord_lite._record import unaligned

KEYS = [
    "company",
    "fare",
    "pickup_community_area",
    "trip_start_timestamp",
    "dropoff_census_tract",
    "a",
    "",
    "abcdefgh",
    "abcdefghi",
    "sensor_00001_reading",
    "sensor_00002_reading",
]


def _stepped(records: list[list[bytes]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The keys of ``records`` laid out as the walk gives them: the first key of
    every record, then the second ones, ... (data, start, length, steps)."""
    order: list[bytes] = []
    steps = [0]
    for k in range(max(map(len, records))):
        order += [r[k] for r in records if len(r) > k]
        steps.append(len(order))
    data = np.frombuffer(b"".join(order) + bytes(16), dtype=np.uint8)
    length = np.array([len(k) for k in order], dtype=np.int64)
    start = np.zeros(len(order), dtype=np.int64)
    np.cumsum(length[:-1], out=start[1:])
    return data, start, length, np.array(steps, dtype=np.int64)


def _layouts() -> dict[str, list[list[bytes]]]:
    rng = random.Random(7)
    enc = [k.encode() for k in KEYS]
    fixed = [list(enc) for _ in range(400)]
    missing = [[k for k in enc if rng.random() > 0.3] or [enc[0]] for _ in range(400)]
    shuffled = [rng.sample(enc, len(enc)) for _ in range(400)]
    # Same length, first and last 8 bytes as the step's first key; other middle bytes.
    alike = [list(enc) for _ in range(400)]
    for r in alike[1::3]:
        r[9] = b"sensor_00003_reading"  # a key not read, alike the read one
    for r in alike[2::5]:
        r[9], r[10] = r[10], r[9]
    unread = [list(enc) for _ in range(400)]
    for i, r in enumerate(unread):
        if i % 4 == 1:
            r[1] = b"fa\xc3\xa9"  # 4 bytes, as "fare"; not ASCII: not safe to leave unread
        if i % 4 == 2:
            r[0] = b"company_name_that_is_longer_than_any_key_read"
        if i % 4 == 3:
            r[3] = b"trip_start_timestamq"
        if i % 8 == 2:
            r[1] = b"fxre"  # the signature of "fare" (4 bytes, last "e"), not its bytes
    return {
        "fixed": fixed,
        "missing": missing,
        "shuffled": shuffled,
        "alike": alike,
        "unread": unread,
    }


#: Keys of KEYS whose (length, last byte) another key of KEYS has too: hashed.
SHARED = {b"sensor_00001_reading", b"sensor_00002_reading"}


def _hash_only(table: _keys.KeyTable, data: Any, start: Any, length: Any) -> list[int]:
    """The slots by the hash alone, as the lookup finds them without signatures."""
    slots = np.full(len(length), -1, dtype=np.int64)
    several = table.signature.copy()
    table.signature[:] = -1  # every signature shared: every key hashed
    try:
        table._probe(data, unaligned(data, "<u8"), start, length, slots, None)
    finally:
        table.signature[:] = several
    return slots.tolist()


@pytest.mark.parametrize("longest", [_keys.SIGNATURE_LONGEST, 8])
@pytest.mark.parametrize("layout", sorted(_layouts()))
def test_every_route_gives_the_hash_lookups_slots(
    layout: str, longest: int, monkeypatch: Any
) -> None:
    monkeypatch.setattr(_keys, "SIGNATURE_LONGEST", longest)  # 8: longer keys are hashed
    table = _keys.KeyTable({k: tfr.int64 for k in KEYS[:-1]})  # (the last key is not read)
    records = _layouts()[layout]
    data, start, length, steps = _stepped(records)
    want = table.lookup(data, start, length)
    got = table.lookup(data, start, length, steps)
    assert got[0].tolist() == want[0].tolist() == _hash_only(table, data, start, length)
    assert got[1].tolist() == want[1].tolist()
    # And that is right: each key's slot is its name's place, or -1.
    names = {k.encode(): i for i, k in enumerate(table.names)}
    expect = [names.get(bytes(data[s : s + n]), -1) for s, n in zip(start, length)]
    assert want[0].tolist() == expect
    if layout == "unread":
        assert not want[1].all()  # the non-ASCII key is flagged


def _hashed(monkeypatch: Any) -> list[int]:
    """Counts of keys hashed by each ``hash_parts`` call of the lookup."""
    counts: list[int] = []
    real = _keys.hash_parts

    def counting(words: Any, start: Any, length: Any) -> Any:
        counts.append(len(length))
        return real(words, start, length)

    monkeypatch.setattr(_keys, "hash_parts", counting)
    return counts


def test_only_keys_of_a_shared_signature_are_hashed(monkeypatch: Any) -> None:
    table = _keys.KeyTable({k: tfr.int64 for k in KEYS})
    records = _layouts()["unread"]
    data, start, length, _ = _stepped(records)
    counts = _hashed(monkeypatch)
    slots, _ = table.lookup(data, start, length)
    keys = [bytes(data[s : s + n]) for s, n in zip(start, length)]
    assert counts == [sum(k in SHARED for k in keys)]
    # "fxre" has the signature of "fare": compared with it, not hashed, and not read
    assert {slots[i] for i, k in enumerate(keys) if k == b"fxre"} == {-1}


def test_one_key_order_compares_each_step_with_its_first_key(monkeypatch: Any) -> None:
    table = _keys.KeyTable({k: tfr.int64 for k in KEYS})
    data, start, length, steps = _stepped(_layouts()["fixed"])
    counts = _hashed(monkeypatch)
    table.lookup(data, start, length, steps)
    assert counts == [len(SHARED)]  # the steps' first keys of a shared signature, once


def test_a_key_that_differs_from_its_guess_takes_its_own_route(monkeypatch: Any) -> None:
    table = _keys.KeyTable({k: tfr.int64 for k in KEYS})
    records = _layouts()["alike"]
    data, start, length, steps = _stepped(records)
    counts = _hashed(monkeypatch)
    slots, _ = table.lookup(data, start, length, steps)
    # The keys unlike their step's first key are all of the sensor keys' signature.
    differ = sum(r[9] != KEYS[9].encode() for r in records) + sum(
        r[10] != KEYS[10].encode() for r in records
    )
    assert counts == [len(SHARED), differ]
    assert (slots == -1).sum() == sum(b"sensor_00003_reading" in r for r in records) > 100


def test_varied_key_order_is_not_guessed(monkeypatch: Any) -> None:
    table = _keys.KeyTable({k: tfr.int64 for k in KEYS})
    records = _layouts()["shuffled"]
    data, start, length, steps = _stepped(records)
    counts = _hashed(monkeypatch)
    table.lookup(data, start, length, steps)
    # The steps' first keys, then every key by its signature: the sample showed the
    # guess would miss.
    firsts = [bytes(data[s : s + n]) for s, n in zip(start[steps[:-1]], length[steps[:-1]])]
    hashed = [sum(k in SHARED for k in firsts), len(SHARED) * len(records)]
    assert counts == [n for n in hashed if n]


def test_records_in_shifted_key_orders_parse_as_the_reference() -> None:
    rng = random.Random(5)
    keys = [f"sensor_{i:05d}_reading" for i in range(30)] + ["label", "x"]
    records = []
    for i in range(3000):
        chosen = [k for k in keys if rng.random() > 0.2]
        if i % 11 == 0:
            rng.shuffle(chosen)
        records.append(tfr.encode_example({k: [i, len(k)] for k in chosen}))
    spec = {k: tfr.VarLenFeature(tfr.int64) for k in keys[::2]}
    with tfr.options(engine="numpy"):
        fast = tfr.parse_example(records, spec)
    with tfr.options(fastpath=False):
        slow = tfr.parse_example(records, spec)
    assert canon(fast) == canon(slow)
