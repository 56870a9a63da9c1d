"""The layout-independent parse engine: entry walk, key table, chunked batches, parse plans.

Every fast result is compared with the generic protobuf path (``TFRECORD_LITE_FASTPATH=0``)
on heterogeneous batches: each record's map entries in its own order, keys missing or
mapped to empty lists or empty ``Feature()``s, keys the spec does not read (some not
ASCII), varints of every width, packed and unpacked lists, merged records and garbage.
Chunked batch parsing is compared with one ``parse_example`` call per batch, errors
included.
"""

from __future__ import annotations

import json
import platform
import random
import struct
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from _helpers import ld, varint
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_lite as tfr
from tfrecord_lite._examples import _batches as _stream
from tfrecord_lite._examples import _parse, _sequence
from tfrecord_lite._examples._engines import _buffers, _dispatch
from tfrecord_lite._examples._engines import _numpy as _fastparse
from tfrecord_lite._examples._engines import _numpy_keys as _keys
from tfrecord_lite._examples._engines import _numpy_vectors as _vectors
from tfrecord_lite._record._scan import RecordSpans

KIND_FIELD = {"bytes": 1, "float": 2, "int": 3}
DTYPE = {"bytes": tfr.string, "float": tfr.float32, "int": tfr.int64}
INT_POOL = [0, 1, 127, 128, 300, 16383, 16384, 2**31, 2**35, 2**56, 2**63 - 1, -1, -(2**63)]


@pytest.fixture(autouse=True)
def _numpy_engine(monkeypatch: Any) -> None:
    """These tests are about the NumPy extractor: without this, batches of
    ``JIT_MIN_RECORDS`` or more would go to the compiled one where numba is installed."""
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "numpy")


def _value(rng: random.Random, kind: str) -> Any:
    if kind == "int":
        return rng.choice(INT_POOL) if rng.random() < 0.4 else rng.randrange(0, 200)
    if kind == "float":
        return float(np.float32(rng.uniform(-1e3, 1e3)))
    return rng.randbytes(rng.choice([0, 1, 4, 7, 8, 9, 16, 30]))


def _list(kind: str, values: list[Any], style: str) -> bytes:
    if kind == "bytes":
        return b"".join(ld(1, v) for v in values)
    if not values:
        return b""
    if kind == "float":
        items = [struct.pack("<f", v) for v in values]
        if style == "unpacked":
            return b"".join(b"\x0d" + x for x in items)
    else:
        items = [varint(v) for v in values]
        if style == "unpacked":
            return b"".join(b"\x08" + x for x in items)
    if style == "chunks" and len(items) > 1:
        return ld(1, b"".join(items[:1])) + ld(1, b"".join(items[1:]))
    return ld(1, b"".join(items))


def _entry(key: bytes, kind: str | None, values: list[Any], style: str) -> bytes:
    feature = b"" if kind is None else ld(KIND_FIELD[kind], _list(kind, values, style))
    return ld(1, ld(1, key) + ld(2, feature))


KEYS = {
    # Keys of every window shape: empty, short, exactly 8 / 16, long, sharing first and
    # last 8 bytes and length (only the middle differs), and not ASCII.
    "": "int",
    "a": "float",
    "label": "int",
    "abcdefgh": "bytes",
    "abcdefghijklmnop": "float",
    "image/class/label": "int",
    "feature_one_long_name_x": "int",
    "feature_two_long_name_x": "float",
    "pickup_community_area": "int",
    "dropoff_community_area": "float",
    "payment_type": "bytes",
    "größe": "float",
}


def _records(rng: random.Random, n: int, keys: dict[str, str], messy: bool) -> list[bytes]:
    extra_keys = [b"extra", b"pickup_community_are", b"labe1", "zusätzlich".encode()]
    out = []
    for _ in range(n):
        entries = []
        for key, kind in keys.items():
            r = rng.random()
            if r < 0.06:
                continue  # absent
            k: str | None = kind
            count = rng.choice([1, 1, 1, 2, 3])
            if r < 0.10:
                count = 0  # an empty list
            elif r < 0.12:
                k = None  # an empty Feature()
            style = "packed"
            if messy and rng.random() < 0.08:
                style = rng.choice(["unpacked", "chunks"])
            values = [_value(rng, kind) for _ in range(count)]
            entries.append(_entry(key.encode(), k, values, style))
        for extra in extra_keys:
            if rng.random() < 0.1:
                kind = rng.choice(list(KIND_FIELD))
                values = [_value(rng, kind) for _ in range(rng.randrange(4))]
                entries.append(_entry(extra, kind, values, "packed"))
        rng.shuffle(entries)  # every record its own key order
        record = ld(1, b"".join(entries)) if entries or rng.random() < 0.5 else b""
        if messy:
            r = rng.random()
            if r < 0.02:
                record += ld(1, _entry(b"label", "int", [5], "packed"))  # merged Examples
            elif r < 0.03:
                record += b"\x10\x01"  # an unknown field
            elif r < 0.04:
                record = record[: rng.randrange(len(record) + 1)]  # truncated
            elif r < 0.05:
                k = rng.choice(list(keys))
                other = "int" if keys[k] != "int" else "float"
                record = ld(1, _entry(k.encode(), other, [1], "packed"))  # the wrong kind
        out.append(record)
    return out


def _specs(rng: random.Random, keys: dict[str, str]) -> dict[str, Any]:
    specs: dict[str, Any] = {}
    for key, kind in keys.items():
        if rng.random() < 0.15:
            continue  # a key the spec does not read
        dtype = DTYPE[kind]
        c = rng.random()
        if c < 0.4:
            specs[key] = tfr.VarLenFeature(dtype)
        elif c < 0.6:
            specs[key] = tfr.RaggedFeature(dtype)
        elif c < 0.8:
            specs[key] = tfr.FixedLenSequenceFeature([], dtype, allow_missing=True)
        else:
            default = b"?" if dtype is tfr.string else 7
            specs[key] = tfr.FixedLenFeature([], dtype, default_value=default)
    return specs


def _outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except (tfr.ParseError, ValueError) as err:
        return ("error", type(err).__name__, str(err), getattr(err, "index", None))


def _same(a: Any, b: Any, same: Any = None) -> None:
    """Equal outcomes: the same error, or results equal by ``same`` (default:
    :func:`_same_parsed`)."""
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a == b
        return
    (same or _same_parsed)(a[1], b[1])


def _same_parsed(x: dict[str, Any], y: dict[str, Any]) -> None:
    assert x.keys() == y.keys()
    for key in x:
        p, q = x[key], y[key]
        assert type(p) is type(q), key
        if isinstance(p, np.ndarray):
            assert p.dtype == q.dtype and p.shape == q.shape, key
            assert p.tolist() == q.tolist(), key
        elif isinstance(p, tfr.SparseValue):
            for u, v in zip(p, q):
                assert u.dtype == v.dtype and u.tolist() == v.tolist(), key
        else:
            assert p.to_list() == q.to_list(), key
            assert [s.tolist() for s in p.nested_row_splits] == [
                s.tolist() for s in q.nested_row_splits
            ], key


def _both(monkeypatch: Any, fn: Any) -> tuple[Any, Any]:
    monkeypatch.setenv("TFRECORD_LITE_FASTPATH", "1")
    fast = _outcome(fn)
    monkeypatch.setenv("TFRECORD_LITE_FASTPATH", "0")
    slow = _outcome(fn)
    monkeypatch.setenv("TFRECORD_LITE_FASTPATH", "1")
    return fast, slow


# --------------------------------------------------------------------------- entry walk


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.sampled_from([8, 33, 200]),
    messy=st.booleans(),
)
def test_shuffled_heterogeneous_batches_equal_the_generic_path(
    seed: int, size: int, messy: bool, monkeypatch: Any
) -> None:
    rng = random.Random(seed)
    keys = dict(rng.sample(sorted(KEYS.items()), rng.randint(1, len(KEYS))))
    records = _records(rng, size, keys, messy)
    specs = _specs(rng, keys)
    fast, slow = _both(monkeypatch, lambda: tfr.parse_example(records, specs))
    _same(fast, slow)


def test_clean_shuffled_records_are_all_read_by_the_entry_walk() -> None:
    # Guard against an equivalence that only ever compares the generic path with itself.
    rng = random.Random(1)
    records = _records(rng, 500, KEYS, messy=False)
    # An unread key that is not ASCII sends its record the generic way (tested below).
    records = [r for r in records if "zusätzlich".encode() not in r]
    assert len(records) > 400
    needed = {k: DTYPE[kind] for k, kind in KEYS.items()}
    result = _fastparse.extract(records, needed)
    assert result is not None
    handled, cols = result
    assert handled.all()
    maps = [tfr.example_pb2.Example.FromString(r).features.feature for r in records]
    for key, kind in KEYS.items():
        field = {"bytes": "bytes_list", "float": "float_list", "int": "int64_list"}[kind]
        expect = [
            list(getattr(m[key], field).value) if key in m and m[key].HasField(field) else None
            for m in maps
        ]
        col = cols[key]
        assert col.present.tolist() == [e is not None for e in expect], key
        assert col.counts.tolist() == [len(e or []) for e in expect], key
        flat = [v for e in expect if e for v in e]
        got = col.values.tolist()
        if kind == "float":
            assert np.array_equal(np.array(flat, np.float32), col.values), key
        else:
            assert got == flat, key


def test_records_with_non_ascii_unread_keys_and_merged_examples_go_the_generic_way() -> None:
    plain = tfr.encode_example({"a": 1, "b": 2.0})
    odd = ld(1, _entry("ключ".encode(), "int", [3], "packed") + _entry(b"a", "int", [4], "packed"))
    merged = plain + ld(1, _entry(b"a", "int", [9], "packed"))
    records = [plain] * 8 + [odd, merged]
    result = _fastparse.extract(records, {"a": tfr.int64})
    assert result is not None
    handled, _ = result
    assert handled.tolist() == [True] * 8 + [False, False]
    parsed = tfr.parse_example(records, {"a": tfr.FixedLenFeature([], tfr.int64)})
    assert parsed["a"].tolist() == [1] * 8 + [4, 9]


@pytest.mark.parametrize("value", [0, 1, 127, 128, 2**14, 2**35, 2**63 - 1, -1, -(2**63)])
def test_every_varint_width_in_any_key_order(value: int) -> None:
    rng = random.Random(value & 0xFFFF)
    records = []
    for i in range(40):
        entries = [
            _entry(b"x", "int", [value, i], "packed"),
            _entry(b"y", "float", [0.5], "unpacked" if i % 3 == 0 else "packed"),
            _entry(b"z", "int", [i, value], "unpacked" if i % 2 else "packed"),
        ]
        rng.shuffle(entries)
        records.append(ld(1, b"".join(entries)))
    handled, cols = _fastparse.extract(  # type: ignore[misc]
        records, {"x": tfr.int64, "y": tfr.float32, "z": tfr.int64}
    )
    assert handled.all()
    assert cols["x"].values.reshape(40, 2).tolist() == [[value, i] for i in range(40)]
    assert cols["z"].values.reshape(40, 2).tolist() == [[i, value] for i in range(40)]
    assert cols["y"].values.tolist() == [0.5] * 40


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1), messy=st.booleans())
def test_int64_positions_equal_the_generic_path(seed: int, messy: bool, monkeypatch: Any) -> None:
    # Buffers of 2 GiB or more are walked with int64 positions: the same results.
    monkeypatch.setattr(_fastparse, "_INT32_BYTES", 0)
    rng = random.Random(seed)
    keys = dict(rng.sample(sorted(KEYS.items()), rng.randint(1, len(KEYS))))
    records = _records(rng, 40, keys, messy)
    specs = _specs(rng, keys)
    fast, slow = _both(monkeypatch, lambda: tfr.parse_example(records, specs))
    _same(fast, slow)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1), window=st.sampled_from([1, 300, 2000]))
def test_a_batch_read_window_by_window_equals_the_generic_path(
    seed: int, window: int, monkeypatch: Any
) -> None:
    # Batches bigger than WINDOW_BYTES are extracted a window of records at a time.
    monkeypatch.setattr(_buffers, "WINDOW_BYTES", window)
    rng = random.Random(seed)
    keys = dict(rng.sample(sorted(KEYS.items()), rng.randint(1, len(KEYS))))
    records = _records(rng, 60, keys, messy=rng.random() < 0.5)
    specs = _specs(rng, keys)
    fast, slow = _both(monkeypatch, lambda: tfr.parse_example(records, specs))
    _same(fast, slow)


def test_big_records_in_a_batch_of_1024_equal_the_generic_path(monkeypatch: Any) -> None:
    # ImageNet-like: a large JPEG-sized bytes value per record, over several windows;
    # records of two layouts (key orders), and one the generic path must read.
    monkeypatch.setattr(_buffers, "WINDOW_BYTES", 4 << 20)
    rng = random.Random(5)
    records = []
    for i in range(1024):
        entries = [
            _entry(
                b"image/encoded", "bytes", [rng.randbytes(rng.randrange(8000, 12000))], "packed"
            ),
            _entry(b"image/class/label", "int", [i * 37], "packed"),
            _entry(b"image/format", "bytes", [b"jpeg"], "packed"),
        ]
        if i % 3 == 0:
            entries.reverse()
        records.append(ld(1, b"".join(entries)))
    records[700] += ld(1, _entry(b"image/class/label", "int", [1], "packed"))  # merged
    assert sum(map(len, records)) > _buffers.WINDOW_BYTES
    specs = {
        "image/encoded": tfr.FixedLenFeature([], tfr.string),
        "image/format": tfr.FixedLenFeature([], tfr.string),
        "image/class/label": tfr.FixedLenFeature([], tfr.int64),
    }
    plan = _parse.compile_features(specs)
    handled, _ = _fastparse.extract(records, plan.needed, plan.engines["numpy"][0])  # type: ignore[misc]
    assert handled.sum() == 1023 and not handled[700]
    fast, slow = _both(monkeypatch, lambda: tfr.parse_example(records, specs))
    _same(fast, slow)
    assert fast[1]["image/class/label"][699] == 699 * 37
    assert fast[1]["image/class/label"][700] == 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fixed_layout_records_of_several_lengths_equal_the_generic_path(
    seed: int, monkeypatch: Any
) -> None:
    # Tabular-like: the same keys in the same order, but integers of varying varint
    # widths give a few record lengths (each read by the equal-layout path); some
    # records of a common length have another key order.
    rng = random.Random(seed)
    records = []
    for i in range(600):
        ints = [rng.choice([rng.randrange(2**28, 2**35), rng.randrange(2**35, 2**42)])]
        ints += [rng.randrange(2**35, 2**42) for _ in range(3)]
        entries = [
            _entry(b"floats", "float", [float(np.float32(i * 0.5)), 1.0], "packed"),
            _entry(b"ints", "int", ints, "packed"),
            _entry(b"name", "bytes", [b"item-%06d" % i], "packed"),
        ]
        if i % 50 == 7:
            entries.reverse()
        records.append(ld(1, b"".join(entries)))
    lengths = {len(r) for r in records}
    assert len(lengths) >= 2
    layouts: list[int] = []
    real = _fastparse._layout_group

    def counted(*args: Any) -> Any:
        found = real(*args)
        layouts.append(0 if found is None else len(found[0]))
        return found

    monkeypatch.setattr(_fastparse, "_layout_group", counted)
    specs = {
        "floats": tfr.FixedLenFeature([2], tfr.float32),
        "ints": tfr.VarLenFeature(tfr.int64),
        "name": tfr.FixedLenFeature([], tfr.string),
    }
    fast, slow = _both(monkeypatch, lambda: tfr.parse_example(records, specs))
    _same(fast, slow)
    assert fast[0] == "ok"
    assert len(layouts) >= 2 and sum(layouts) > 450  # several layouts read most records
    # A varint that runs into the next one, in a record of a common length.
    at = records[3].index(b"\x1a") + 3  # the first varint byte of "ints"
    records[3] = records[3][:at] + b"\xff" + records[3][at + 1 :]
    fast, slow = _both(monkeypatch, lambda: tfr.parse_example(records, specs))
    _same(fast, slow)


#: A value whose varint is ``w`` bytes long, for w = 1..10 (10: negative numbers).
WIDTH_VALUES = {w: 2 ** (7 * (w - 1)) for w in range(1, 10)} | {10: -5}


@pytest.mark.parametrize("width", sorted(WIDTH_VALUES))
def test_int_lists_of_one_varint_width_equal_the_generic_path(width: int, monkeypatch: Any) -> None:
    # One writer, values of one magnitude: every list is whole varints of one width,
    # decoded as a (records, values, width) array; then rows whose widths differ.
    rng = random.Random(width)
    low = WIDTH_VALUES[width]
    high = low * 2 if low > 0 else low
    values = [
        [rng.choice([low, high - 1 if high > low else low]) for _ in range(4)] for _ in range(300)
    ]
    if width == 10:
        values = [[-rng.randrange(1, 2**40) for _ in range(4)] for _ in range(300)]
    records = [ld(1, _entry(b"ints", "int", v, "packed")) for v in values]
    assert len({len(r) for r in records}) == 1
    assert (
        _vectors._uniform_width(
            np.frombuffer(b"".join(records), np.uint8).reshape(300, -1)[:, -4 * width :]
        )
        == width
    )
    specs = {"ints": tfr.FixedLenFeature([4], tfr.int64)}
    fast, slow = _both(monkeypatch, lambda: tfr.parse_example(records, specs))
    _same(fast, slow)
    assert fast[1]["ints"].tolist() == values
    if width >= 2:
        # The same total length in other widths: (w-1, w+1, w, w) in some records.
        odd = [2 ** (7 * (width - 2)), 2 ** (7 * width) if width < 9 else -1, low, low]
        if width < 10:
            records[17] = ld(1, _entry(b"ints", "int", odd, "packed"))
            assert len(records[17]) == len(records[0])
            fast, slow = _both(monkeypatch, lambda: tfr.parse_example(records, specs))
            _same(fast, slow)
            assert fast[1]["ints"][17].tolist() == odd
            records[17] = ld(1, _entry(b"ints", "int", values[17], "packed"))
        # Two varints (1 and w-1 bytes) where one of w bytes would be: five values.
        records[23] = ld(
            1, _entry(b"ints", "int", [1, 2 ** (7 * (width - 2)), *values[23][1:]], "packed")
        )
        assert len(records[23]) == len(records[0])
        fast, slow = _both(monkeypatch, lambda: tfr.parse_example(records, specs))
        _same(fast, slow)
        assert fast[0] == "error"  # five values for a FixedLenFeature([4])
        var = {"ints": tfr.VarLenFeature(tfr.int64)}
        fast, slow = _both(monkeypatch, lambda: tfr.parse_example(records, var))
        _same(fast, slow)


@pytest.mark.parametrize("width", range(1, 11))
def test_varints_of_every_width_decode_to_their_values_bit_for_bit(width: int) -> None:
    # Every value bit of every byte position: random values whose varints are
    # ``width`` bytes, as whole rows of one width and mixed with other widths.
    rng = random.Random(100 + width)
    low = 0 if width == 1 else 1 << (7 * (width - 1))
    high = 1 << min(7 * width, 64)
    values = [rng.randrange(low, high) for _ in range(7 * 40)]
    raw = b"".join(varint(v) for v in values)
    assert len(raw) == 7 * 40 * width
    block = np.frombuffer(raw, np.uint8).reshape(40, 7 * width)
    assert _vectors._uniform_width(block) == width
    got = _vectors._uniform_values(block, width).view(np.uint64).tolist()
    assert got == values
    mixed = [rng.randrange(0, high) >> rng.randrange(0, 7 * width) for _ in range(200)]
    joined = b"".join(varint(v) for v in mixed + values)
    decoded = _vectors._decode_packed_varints(
        np.frombuffer(joined, np.uint8), np.array([len(joined)], dtype=np.int64)
    )
    assert decoded is not None
    assert decoded[0].view(np.uint64).tolist() == mixed + values
    assert decoded[1].tolist() == [len(mixed) + len(values)]


@pytest.mark.parametrize("lengths", [9, 30, 64])
def test_short_bytes_items_of_many_distinct_lengths_equal_the_generic_path(
    lengths: int, monkeypatch: Any
) -> None:
    # Items of up to 64 bytes are cut out a whole length at a time when there are
    # few distinct lengths for their number (here 3,000 items in 9, 30 or 64 lengths,
    # the keys in a different order per record, so the entry walk reads them).
    rng = random.Random(lengths)

    def record(i: int) -> bytes:
        name = _entry(b"name", "bytes", [rng.randbytes(rng.randrange(lengths))], "packed")
        key_id = _entry(b"id", "int", [i], "packed")
        return ld(1, name + key_id if rng.random() < 0.5 else key_id + name)

    records = [record(i) for i in range(3000)]
    specs = {"name": tfr.VarLenFeature(tfr.string), "id": tfr.FixedLenFeature([], tfr.int64)}
    fast, slow = _both(monkeypatch, lambda: tfr.parse_example(records, specs))
    _same(fast, slow)
    assert fast[1]["id"].tolist() == list(range(3000))


def test_key_table_finds_keys_that_share_length_and_outer_windows() -> None:
    needed = {"feature_one_long_name_x": tfr.int64, "feature_two_long_name_x": tfr.int64}
    table = _keys.KeyTable(needed)
    assert table.usable
    keys = [b"feature_two_long_name_x", b"feature_one_long_name_x", b"feature_six_long_name_x"]
    data = np.frombuffer(b"".join(keys) + bytes(16), dtype=np.uint8)
    starts = np.array([0, 23, 46], dtype=np.int64)
    slots, safe = table.lookup(data, starts, np.full(3, 23, dtype=np.int64))
    assert slots.tolist() == [1, 0, -1]
    assert safe.all()


# --------------------------------------------------------------------------- chunked batches


def _clean_taxi_like(n: int, seed: int = 0) -> list[bytes]:
    return _records(random.Random(seed), n, KEYS, messy=False)


def _run(iterable: Any) -> list[Any]:
    """Outcomes of iterating: each item, then the error that stopped it (if any)."""
    out: list[Any] = []
    try:
        for item in iterable:
            out.append(("ok", item))
    except (tfr.ParseError, ValueError) as err:
        if getattr(err, "path", None) is not None and isinstance(err.__context__, tfr.ParseError):
            err = err.__context__  # a pipeline names the file; parse_example's error is this
        out.append(("error", type(err).__name__, str(err), getattr(err, "index", None)))
    return out


def _reference(batches: list[Any], specs: Any, parse: Any = tfr.parse_example) -> list[Any]:
    """Outcomes of ``parse(batch, specs)`` batch by batch, up to the first error."""
    out = []
    for b in batches:
        out.append(_outcome(lambda b=b: parse(b, specs)))
        if out[-1][0] == "error":
            break
    return out


def _same_runs(got: list[Any], expect: list[Any], same: Any = _same_parsed) -> None:
    """Equal runs: the same errors, and results equal by ``same``."""
    assert len(got) == len(expect)
    for a, b in zip(got, expect):
        _same(a, b, same)


@pytest.mark.parametrize("chunk", [1, 50, 100_000])
@pytest.mark.parametrize("batch", [1, 7, 32])
def test_parse_batches_equals_one_parse_example_per_batch(
    chunk: int, batch: int, monkeypatch: Any
) -> None:
    monkeypatch.setattr(_stream, "CHUNK_RECORDS", chunk)
    records = _clean_taxi_like(150)
    specs = _specs(random.Random(batch), KEYS)
    batches = [records[i : i + batch] for i in range(0, len(records), batch)]
    expect = _reference(batches, specs)
    _same_runs(_run(_stream.parse_batches(iter(batches), specs)), expect)
    # Specs that cannot fail on these records: every batch comes out.
    loose: dict[str, Any] = {k: tfr.VarLenFeature(DTYPE[kind]) for k, kind in KEYS.items()}
    got = _run(_stream.parse_batches(iter(batches), loose))
    assert len(got) == len(batches)
    _same_runs(got, _reference(batches, loose))
    # Specs that read other keys than their name (Sparse, Ragged with a value_key).
    keyed = {
        "r": tfr.RaggedFeature(tfr.int64, value_key="label"),
        "sp": tfr.SparseFeature(index_key="label", value_key="a", dtype=tfr.float32, size=99),
        "a": tfr.VarLenFeature(tfr.float32),
    }
    _same_runs(_run(_stream.parse_batches(iter(batches), keyed)), _reference(batches, keyed))


def test_parse_batches_with_empty_and_uneven_batches_equal_parse_example() -> None:
    records = _clean_taxi_like(120, seed=3)
    sizes = [5, 0, 17, 1, 0, 40, 57]
    batches, at = [], 0
    for size in sizes:
        batches.append(records[at : at + size])
        at += size
    for specs in (
        {k: tfr.VarLenFeature(DTYPE[kind]) for k, kind in KEYS.items()},
        _specs(random.Random(11), KEYS),
    ):
        _same_runs(_run(_stream.parse_batches(iter(batches), specs)), _reference(batches, specs))
    # Every batch non-empty: VarLen widths per batch from one reduction over the chunk.
    full = [records[i : i + 13] for i in range(0, 120, 13)]
    loose = {k: tfr.VarLenFeature(DTYPE[kind]) for k, kind in KEYS.items()}
    _same_runs(_run(_stream.parse_batches(iter(full), loose)), _reference(full, loose))


def test_parse_batches_error_comes_after_the_good_batches_with_its_batch_index(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(_stream, "CHUNK_RECORDS", 1000)
    spec = {"label": tfr.FixedLenFeature([], tfr.int64)}
    records = [tfr.encode_example({"label": i}) for i in range(100)]
    records[45] = tfr.encode_example({"label": [1, 2]})  # batch 4, index 5
    batches = [records[i : i + 10] for i in range(0, 100, 10)]
    out = []
    with pytest.raises(tfr.ParseError) as info:
        for parsed in _stream.parse_batches(iter(batches), spec):
            out.append(parsed["label"].tolist())
    assert out == [list(range(i, i + 10)) for i in range(0, 40, 10)]
    expect = _outcome(lambda: tfr.parse_example(batches[4], spec))
    assert ("error", "ParseError", str(info.value), info.value.index) == expect
    assert info.value.index == 5


def test_parse_batches_undecodable_record_in_a_later_batch(monkeypatch: Any) -> None:
    monkeypatch.setattr(_stream, "CHUNK_RECORDS", 1000)
    spec = {"label": tfr.VarLenFeature(tfr.int64)}
    records = [tfr.encode_example({"label": i}) for i in range(60)]
    records[33] = b"\xff\xff garbage"
    batches = [records[i : i + 16] for i in range(0, 60, 16)]
    got = []
    with pytest.raises(tfr.ParseError) as info:
        for parsed in _stream.parse_batches(iter(batches), spec):
            got.append(parsed["label"].values.tolist())
    assert got == [list(range(16)), list(range(16, 32))]
    assert info.value.index == 1


def test_an_upstream_error_comes_after_the_batches_read_before_it(monkeypatch: Any) -> None:
    monkeypatch.setattr(_stream, "CHUNK_RECORDS", 1000)
    spec = {"label": tfr.FixedLenFeature([], tfr.int64)}

    def batches() -> Any:
        for i in range(3):
            yield [tfr.encode_example({"label": 10 * i + j}) for j in range(10)]
        raise tfr.DataLossError("damaged")

    got = []
    with pytest.raises(tfr.DataLossError):
        for parsed in _stream.parse_batches(batches(), spec):
            got.append(int(parsed["label"][0]))
    assert got == [0, 10, 20]


def test_parse_stream_mixes_batches_and_single_records(monkeypatch: Any) -> None:
    monkeypatch.setattr(_stream, "CHUNK_RECORDS", 25)
    spec = {"x": tfr.VarLenFeature(tfr.float32)}
    recs = [tfr.encode_example({"x": [float(i)] * (i % 3)}) for i in range(40)]
    items: list[Any] = [recs[0:10], recs[10:20], recs[20], recs[21:30], recs[30:40]]
    got = list(_stream.parse_stream(iter(items), spec))
    assert len(got) == 5
    assert isinstance(got[2]["x"], tfr.SparseValue) and got[2]["x"].values.tolist() == [20.0] * 2
    for item, parsed in zip(items, got):
        if isinstance(item, list):
            _same_parsed(parsed, tfr.parse_example(item, spec))


@pytest.mark.parametrize("drop_remainder", [False, True])
def test_dataset_parse_batch_and_batch_parse_equal_parse_example(
    tmp_path: Any, drop_remainder: bool, monkeypatch: Any
) -> None:
    monkeypatch.setattr(_stream, "CHUNK_RECORDS", 64)
    records = _clean_taxi_like(300, seed=4)
    path = str(tmp_path / "h.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)
    specs = _specs(random.Random(9), KEYS)
    n = 300 - 300 % 32 if drop_remainder else 300
    batches = [records[i : min(i + 32, n)] for i in range(0, n, 32)]
    ds = tfr.TFRecordDataset(path)
    for s in (specs, {k: tfr.VarLenFeature(DTYPE[kind]) for k, kind in KEYS.items()}):
        expect = _reference(batches, s)
        for pipeline in (
            ds.parse(s).batch(32, drop_remainder=drop_remainder),
            ds.batch(32, drop_remainder=drop_remainder).parse(s),
        ):
            _same_runs(_run(pipeline), expect)


# --------------------------------------------------------------------------- parse plans


def test_a_plan_validates_the_spec_once(tmp_path: Any, monkeypatch: Any) -> None:
    calls = []
    real = _parse.validate_features

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_parse, "validate_features", counting)
    path = str(tmp_path / "p.tfrecord")
    tfr.write_examples(path, {"a": np.arange(20), "b": np.ones((20, 2), np.float32)})
    spec = {"a": tfr.FixedLenFeature([], tfr.int64), "b": tfr.VarLenFeature(tfr.float32)}
    data = tfr.read_examples(path, spec)
    assert data["a"].tolist() == list(range(20))
    assert len(calls) == 1
    plan = _parse.compile_features(spec)
    assert _parse.compile_features(plan) is plan
    calls.clear()
    for _ in range(3):
        tfr.parse_example([tfr.encode_example({"a": 1, "b": [1.0]})] * 3, plan)
    assert not calls
    assert dict(plan) == {k: s for k, s in plan.items()} and len(plan) == 2


def test_a_plan_keeps_errors_where_they_were() -> None:
    # Made from a bad spec: the same error, raised where it was raised before.
    with pytest.raises(TypeError):
        _parse.compile_features({"a": 3})
    plan = _parse.compile_features({"a": tfr.FixedLenSequenceFeature([], tfr.int64)})
    with pytest.raises(ValueError, match="allow_missing"):
        tfr.parse_example([b""], plan)


_FAULTS_SCRIPT = r"""
import json, random, resource, struct, sys
import tfrecord_lite as tfr
from tfrecord_lite._examples._engines import _buffers as _fastparse
if sys.argv[1] == "0":
    _fastparse.HEAP_SETTLE_BYTES = 0
rng = random.Random(5)
def ld(field, payload):
    n, out = len(payload), bytearray([field << 3 | 2])
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out) + payload
keys = [f"feature_{i:02d}" for i in range(16)]
records = []
for _ in range(4096):
    entries = []
    for i, k in enumerate(keys):
        if rng.random() < 0.1:
            continue
        feature = ld(2, ld(1, struct.pack("<f", i))) if i % 2 else ld(3, ld(1, bytes([i])))
        entries.append(ld(1, ld(1, k.encode()) + ld(2, feature)))
    rng.shuffle(entries)
    records.append(ld(1, b"".join(entries)))
spec = {k: tfr.VarLenFeature(tfr.float32 if i % 2 else tfr.int64) for i, k in enumerate(keys)}
first = tfr.parse_example(records, spec)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    again = tfr.parse_example(records, spec)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
assert all((again[k].values == first[k].values).all() for k in spec)
print(json.dumps({"faults": faults, "settled": _fastparse._heap_settled}))
"""


@pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc only"
)
def test_the_entry_walk_reuses_heap_memory_instead_of_faulting_it_in_each_time() -> None:
    # Records in their own key order (the entry walk), parsed again and again in a
    # fresh process: with the heap settled, the walk's temporaries come from memory
    # the process already has; without, glibc maps and trims them anew each time.
    def faults(settle: str) -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, "-c", _FAULTS_SCRIPT, settle],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        result: dict[str, Any] = json.loads(out.stdout)
        return result

    settled, unsettled = faults("1"), faults("0")
    assert settled["settled"] and unsettled["settled"]  # the walk ran in both
    if unsettled["faults"] < 2000:
        pytest.skip(f"this glibc kept its heap anyway ({unsettled['faults']} page faults)")
    assert settled["faults"] * 2 < unsettled["faults"], (settled, unsettled)


# --------------------------------------------------------------------------- SequenceExamples

SEQ_CONTEXT = {"id": "int", "score": "float", "name": "bytes", "unread": "int"}
SEQ_LISTS = {"sensor": "float", "frame": "bytes", "tokens": "int", "other": "float"}


def _step(rng: random.Random, kind: str, width: int | None) -> bytes:
    """One Feature of a feature list: ``width`` values, or (no width) 0-3 values or
    sometimes an empty Feature()."""
    if width is None and rng.random() < 0.1:
        return b""  # an empty Feature()
    count = width if width is not None else rng.randrange(0, 4)
    style = rng.choice(["packed", "packed", "unpacked"])
    return ld(KIND_FIELD[kind], _list(kind, [_value(rng, kind) for _ in range(count)], style))


def _sequence_record(rng: random.Random, widths: dict[str, int | None]) -> bytes:
    entries = []
    for key, kind in SEQ_CONTEXT.items():
        roll = rng.random()
        if roll < 0.1:
            continue  # missing
        if roll < 0.15 and key in ("score", "unread"):
            entries.append(_entry(key.encode(), None, [], "packed"))  # empty Feature()
            continue
        entries.append(_entry(key.encode(), kind, [_value(rng, kind)], "packed"))
    rng.shuffle(entries)
    lists = []
    for key, kind in SEQ_LISTS.items():
        if rng.random() < 0.1:
            continue
        steps = b"".join(ld(1, _step(rng, kind, widths[key])) for _ in range(rng.randrange(0, 6)))
        lists.append(ld(1, ld(1, key.encode()) + ld(2, steps)))
    rng.shuffle(lists)
    parts = [ld(1, b"".join(entries)), ld(2, b"".join(lists))]
    if rng.random() < 0.3:
        parts.reverse()  # the feature lists first
    if rng.random() < 0.05:
        parts = parts[:1]  # no feature lists (or no context)
    return b"".join(parts)


def _sequence_specs(kind_of: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    context = {
        "id": tfr.FixedLenFeature([], tfr.int64, default_value=-1),
        "score": tfr.VarLenFeature(tfr.float32),
        "name": tfr.FixedLenFeature([], tfr.string, default_value=b""),
    }
    lists: dict[str, Any] = {
        "sensor": tfr.FixedLenSequenceFeature([2], tfr.float32, allow_missing=True),
        "frame": tfr.VarLenFeature(tfr.string),
        "tokens": tfr.RaggedFeature(tfr.int64),
    }
    return context, lists


def _watch_sequences(monkeypatch: Any) -> list[Any]:
    """What each call of ``extract_sequences`` returns from now on (None: the batch
    went the generic way), in a list."""
    seen: list[Any] = []
    real = _fastparse.extract_sequences

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(real(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(_dispatch, "extract_sequences", spy)
    return seen


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("window", [None, 3000])
def test_sequence_examples_read_fast_equal_the_generic_path(
    seed: int, window: int | None, monkeypatch: Any
) -> None:
    if window is not None:  # a window of records at a time, as for big records
        monkeypatch.setattr(_buffers, "WINDOW_BYTES", window)
    rng = random.Random(seed)
    widths: dict[str, int | None] = {"sensor": 2, "frame": None, "tokens": None, "other": None}
    records = [_sequence_record(rng, widths) for _ in range(rng.choice([8, 40, 300]))]
    context, lists = _sequence_specs(SEQ_CONTEXT)
    seen = _watch_sequences(monkeypatch)
    fast, slow = _both(monkeypatch, lambda: tfr.parse_sequence_example(records, context, lists))
    assert fast[0] == slow[0] == "ok", (fast, slow)
    for x, y in zip(fast[1], slow[1]):
        _same_parsed(x, y)
    # The same records with an empty Feature() as one step of the fixed-size list:
    # an error, worded from the same columns.
    broken = [*records[:-1], ld(2, ld(1, ld(1, b"sensor") + ld(2, ld(1, b""))))]
    fast, slow = _both(monkeypatch, lambda: tfr.parse_sequence_example(broken, context, lists))
    assert fast[0] == "error" and fast == slow
    # An empty Feature() in the context is present with no values (not missing, as in
    # an Example): for a FixedLenFeature with a default, an error too.
    broken = [*records[:-1], ld(1, _entry(b"id", None, [], "packed"))]
    fast, slow = _both(monkeypatch, lambda: tfr.parse_sequence_example(broken, context, lists))
    assert fast[0] == "error" and fast == slow
    # Every record here is one the vectorized path reads (every other call ran with
    # it off).
    assert all(found is not None for found in seen[::2])


SEQUENCE_DAMAGES = [
    "unknown top field",
    "context twice",
    "list key twice",
    "wrong kind in a step",
    "unpacked then packed",
    "truncated",
    "non-ascii unread list key",
    "malformed step of an unread list",
]


def _damaged_sequence(damage: str, record: bytes) -> bytes:
    """A SequenceExample (``record`` damaged, or one of its own) no fast path reads."""
    sensor = ld(1, ld(1, b"sensor") + ld(2, ld(1, ld(2, _list("float", [1.0, 2.0], "packed")))))
    return {
        "unknown top field": lambda: record + b"\x18\x01",
        "context twice": lambda: record + ld(1, _entry(b"id", "int", [7], "packed")),
        "list key twice": lambda: ld(2, sensor + sensor),
        "wrong kind in a step": lambda: ld(
            2, ld(1, ld(1, b"sensor") + ld(2, ld(1, ld(3, ld(1, b"\x01")))))
        ),
        "unpacked then packed": lambda: ld(
            2, ld(1, ld(1, b"tokens") + ld(2, ld(1, ld(3, b"\x08\x05" + ld(1, b"\x06")))))
        ),
        "truncated": lambda: record[:-3],
        "non-ascii unread list key": lambda: ld(2, ld(1, ld(1, "ключ".encode()) + ld(2, b""))),
        # (found by the fuzz target: protobuf checks every list, read or not)
        "malformed step of an unread list": lambda: ld(
            2, ld(1, ld(1, b"zz") + ld(2, ld(1, b"\x12\x05\x0a")))
        ),
        "two kinds in a step": lambda: ld(
            2, ld(1, ld(1, b"tokens") + ld(2, ld(1, ld(3, ld(1, b"\x05")) + ld(3, ld(1, b"\x06")))))
        ),
    }[damage]()


@pytest.mark.parametrize("damage", SEQUENCE_DAMAGES)
def test_unusual_sequence_examples_go_the_generic_way(damage: str, monkeypatch: Any) -> None:
    rng = random.Random(11)
    widths: dict[str, int | None] = {"sensor": 2, "frame": None, "tokens": None, "other": None}
    records = [_sequence_record(rng, widths) for _ in range(20)]
    bad = _damaged_sequence(damage, records[5])
    records[5] = bad
    context, lists = _sequence_specs(SEQ_CONTEXT)
    seen = _watch_sequences(monkeypatch)
    fast, slow = _both(monkeypatch, lambda: tfr.parse_sequence_example(records, context, lists))
    if fast[0] == "error" or slow[0] == "error":
        assert fast == slow
    else:
        for x, y in zip(fast[1], slow[1]):
            _same_parsed(x, y)
    assert seen[0] is None  # left to the generic path


# --------------------------------------------------------------------------- SequenceExample streams


def _same_sequences(x: Any, y: Any) -> None:
    """Two ``parse_sequence_example`` results (context, feature lists, lengths) are equal."""
    assert len(x) == len(y) == 3
    for p, q in zip(x, y):
        _same_parsed(p, q)


def _sequence_reference(batches: list[Any], context: Any, lists: Any) -> list[Any]:
    """Outcomes of ``parse_sequence_example`` batch by batch, up to the first error."""
    return _reference(batches, lists, lambda b, s: tfr.parse_sequence_example(b, context, s))


def _same_sequence_runs(got: list[Any], expect: list[Any]) -> None:
    _same_runs(got, expect, _same_sequences)


def _sequence_batches(seed: int, n: int, batch: int) -> list[list[bytes]]:
    rng = random.Random(seed)
    widths: dict[str, int | None] = {"sensor": 2, "frame": None, "tokens": None, "other": None}
    records = [_sequence_record(rng, widths) for _ in range(n)]
    return [records[i : i + batch] for i in range(0, n, batch)]


@pytest.mark.parametrize("chunk", [1, 50, 100_000])
@pytest.mark.parametrize("batch", [1, 7, 32])
def test_sequence_stream_equals_one_parse_sequence_example_per_batch(
    chunk: int, batch: int, monkeypatch: Any
) -> None:
    monkeypatch.setattr(_stream, "CHUNK_RECORDS", chunk)
    batches = _sequence_batches(batch, 150, batch)
    context, lists = _sequence_specs(SEQ_CONTEXT)
    expect = _sequence_reference(batches, context, lists)
    assert all(outcome[0] == "ok" for outcome in expect)
    seen = _watch_sequences(monkeypatch)
    plan = _sequence.compile_sequence_features(context, lists)
    got = _run(_stream.parse_sequence_stream(iter(batches), plan))
    _same_sequence_runs(got, expect)
    if chunk == 100_000 and batch < 150:
        # One extraction for every batch, by the vectorized path.
        assert len(seen) == 1 and seen[0] is not None
    # Specs that read another key than their name, and a list read twice.
    keyed = {
        "r": tfr.RaggedFeature(tfr.int64, value_key="tokens"),
        "tokens": tfr.VarLenFeature(tfr.int64),
    }
    _same_sequence_runs(
        _run(_stream.parse_sequence_stream(iter(batches), _sequence.SequencePlan({}, keyed))),
        _sequence_reference(batches, {}, keyed),
    )


def test_sequence_stream_error_comes_after_the_good_batches_with_its_batch_index(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(_stream, "CHUNK_RECORDS", 1000)
    batches = _sequence_batches(5, 100, 10)
    # Batch 4, record 3: a step of the fixed-size list with 3 values, not 2. Every
    # record is still one the vectorized path reads: the count is checked per batch.
    steps = ld(1, ld(2, _list("float", [1.0, 2.0, 3.0], "packed")))
    batches[4][3] = ld(2, ld(1, ld(1, b"sensor") + ld(2, steps)))
    context, lists = _sequence_specs(SEQ_CONTEXT)
    seen = _watch_sequences(monkeypatch)
    expect = _sequence_reference(batches, context, lists)
    assert [o[0] for o in expect] == ["ok"] * 4 + ["error"] and expect[-1][3] == 3
    del seen[:]
    plan = _sequence.compile_sequence_features(context, lists)
    got = _run(_stream.parse_sequence_stream(iter(batches), plan))
    _same_sequence_runs(got, expect)
    assert len(seen) == 1 and seen[0] is not None
    # An undecodable record in a later batch: the chunk goes batch by batch.
    batches = _sequence_batches(6, 100, 10)
    batches[7][2] = b"\xff\xff garbage"
    expect = _sequence_reference(batches, context, lists)
    assert [o[0] for o in expect] == ["ok"] * 7 + ["error"] and expect[-1][3] == 2
    _same_sequence_runs(_run(_stream.parse_sequence_stream(iter(batches), plan)), expect)


def test_sequence_stream_upstream_error_and_single_records(monkeypatch: Any) -> None:
    monkeypatch.setattr(_stream, "CHUNK_RECORDS", 1000)
    context, lists = _sequence_specs(SEQ_CONTEXT)
    plan = _sequence.compile_sequence_features(context, lists)
    batches = _sequence_batches(8, 30, 10)

    def upstream() -> Any:
        yield from batches
        raise tfr.DataLossError("damaged")

    got = []
    with pytest.raises(tfr.DataLossError):
        for parsed in _stream.parse_sequence_stream(upstream(), plan):
            got.append(parsed)
    assert len(got) == 3
    for parsed, b in zip(got, batches):
        _same_sequences(parsed, tfr.parse_sequence_example(b, context, lists))
    # A single record (bytes) between batches: parse_single_sequence_example's pair.
    items: list[Any] = [batches[0], batches[1][0], batches[2]]
    out = list(_stream.parse_sequence_stream(iter(items), plan))
    assert len(out) == 3 and len(out[1]) == 2
    single = tfr.parse_single_sequence_example(batches[1][0], context, lists)
    for p, q in zip(out[1], single):
        _same_parsed(p, q)


@pytest.mark.parametrize("drop_remainder", [False, True])
def test_dataset_batch_parse_sequence_equals_parse_sequence_example(
    tmp_path: Any, drop_remainder: bool, monkeypatch: Any
) -> None:
    monkeypatch.setattr(_stream, "CHUNK_RECORDS", 64)
    records = [r for b in _sequence_batches(9, 200, 200) for r in b]
    path = str(tmp_path / "s.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)
    context, lists = _sequence_specs(SEQ_CONTEXT)
    n = 200 - 200 % 32 if drop_remainder else 200
    batches = [records[i : min(i + 32, n)] for i in range(0, n, 32)]
    # The parser gets the batches as spans of the blocks read (no record copied).
    kinds: list[type] = []
    real = _stream._parse_sequence_group

    def spy(group: Any, plan: Any) -> Any:
        kinds.extend(type(b) for b in group)
        return real(group, plan)

    monkeypatch.setattr(_stream, "_parse_sequence_group", spy)
    ds = tfr.TFRecordDataset(path)
    pipeline = ds.batch(32, drop_remainder=drop_remainder).parse_sequence(context, lists)
    _same_sequence_runs(_run(pipeline), _sequence_reference(batches, context, lists))
    assert kinds and set(kinds) == {RecordSpans}
    # Unbatched: one (context, feature lists) pair per record.
    singles = list(ds.parse_sequence(context, lists).take(5))
    assert len(singles) == 5
    for got, record in zip(singles, records):
        expect = tfr.parse_single_sequence_example(record, context, lists)
        for p, q in zip(got, expect):
            _same_parsed(p, q)
    assert "parse_sequence(['id', 'name', 'score'], ['frame', 'sensor', 'tokens'])" in repr(
        pipeline
    )


def test_dataset_parse_sequence_checks_its_specs_when_called(tmp_path: Any) -> None:
    ds = tfr.TFRecordDataset(str(tmp_path / "none.tfrecord"))
    with pytest.raises(TypeError, match="sequence_features must be a mapping"):
        ds.parse_sequence({}, [tfr.VarLenFeature(tfr.int64)])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="use FixedLenSequenceFeature"):
        ds.parse_sequence({}, {"x": tfr.FixedLenFeature([], tfr.int64)})
    with pytest.raises(ValueError, match="belongs in sequence_features"):
        ds.parse_sequence({"x": tfr.FixedLenSequenceFeature([], tfr.int64)}, {})


def test_a_plan_parses_and_can_give_sequence_rows_unpadded() -> None:
    spec = {
        "s": tfr.FixedLenSequenceFeature([2], tfr.int64, allow_missing=True),
        "a": tfr.FixedLenFeature([], tfr.int64, default_value=0),
    }
    records = [tfr.encode_example({"s": list(range(2 * i)), "a": i}) for i in range(4)]
    padded = _parse.compile_features(spec)
    assert padded.parse(records)["s"].shape == (4, 3, 2)
    assert padded.parse_single(records[2])["s"].tolist() == [[0, 1], [2, 3]]
    rows = _parse.compile_features(padded, sequence_rows=True)
    assert rows is not padded and _parse.compile_features(rows, sequence_rows=True) is rows
    got = rows.parse(records)
    assert isinstance(got["s"], tfr.RaggedValue)
    assert got["s"].row_splits.tolist() == [0, 0, 1, 3, 6]
    assert got["s"].values.shape == (6, 2)
    assert got["s"].to_list() == [[], [[0, 1]], [[0, 1], [2, 3]], [[0, 1], [2, 3], [4, 5]]]
    assert got["a"].tolist() == [0, 1, 2, 3]
    bad = [tfr.encode_example({"s": [1, 2, 3]})]
    with pytest.raises(tfr.ParseError, match="not a multiple of stride length"):
        rows.parse(bad)
