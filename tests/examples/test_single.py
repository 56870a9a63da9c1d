"""The one-record route of ``parse_single_example`` (``_examples._single``) gives what the
batch path gives for one record: values, dtypes, shapes and errors, on random records
and specs (FixedLen with and without defaults and shapes, VarLen, and specs it leaves
to the batch path); equal dict specs share one compiled plan."""

from __future__ import annotations

import random
import struct
from typing import Any

import numpy as np
import pytest
from _helpers import ld, varint
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_lite as tfr
from tfrecord_lite._examples import _parse, _single

FIELD = {"bytes": 1, "float": 2, "int": 3}
DTYPE = {"bytes": tfr.string, "float": tfr.float32, "int": tfr.int64}
KEYS = {"a": "int", "b": "float", "c": "bytes", "d": "int", "e": "float", "f": "bytes"}


def _values(rng: random.Random, kind: str, n: int) -> list[Any]:
    if kind == "int":
        return [rng.choice([0, 1, 300, 2**40, -1, -(2**63)]) for _ in range(n)]
    if kind == "float":
        return [float(np.float32(rng.uniform(-9, 9))) for _ in range(n)]
    return [rng.randbytes(rng.randrange(5)) for _ in range(n)]


def _feature(kind: str, values: list[Any]) -> bytes:
    if kind == "bytes":
        body = b"".join(ld(1, v) for v in values)
    elif kind == "float":
        body = ld(1, b"".join(struct.pack("<f", v) for v in values)) if values else b""
    else:
        body = ld(1, b"".join(varint(v) for v in values)) if values else b""
    return ld(FIELD[kind], body)


def _record(rng: random.Random) -> bytes:
    entries = []
    for key, kind in KEYS.items():
        r = rng.random()
        if r < 0.15:
            continue
        if r < 0.2:
            feature = b""  # an empty Feature()
        else:
            if r < 0.25:
                kind = rng.choice(list(FIELD))  # maybe the wrong kind
            feature = _feature(kind, _values(rng, kind, rng.choice([0, 1, 1, 1, 2, 4])))
        entries.append(ld(1, ld(1, key.encode()) + ld(2, feature)))
    rng.shuffle(entries)
    record = ld(1, b"".join(entries))
    if rng.random() < 0.03:
        record = record[: rng.randrange(len(record) + 1)]  # truncated
    return record


def _spec(rng: random.Random) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for key, kind in KEYS.items():
        dtype = DTYPE[kind]
        c = rng.random()
        if c < 0.35:
            spec[key] = tfr.VarLenFeature(dtype)
        elif c < 0.8:
            shape = rng.choice([[], [1], [2], [2, 2], [0]])
            size = int(np.prod(shape))
            default: Any = None
            if rng.random() < 0.6:
                default = _values(rng, kind, size)
                default = default[0] if not shape and default else default
            spec[key] = tfr.FixedLenFeature(shape, dtype, default_value=default)
        elif c < 0.9:
            spec[key] = tfr.RaggedFeature(dtype)
    return spec


def _outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except (tfr.ParseError, ValueError) as err:
        return ("error", type(err).__name__, str(err))


def _same(x: Any, y: Any) -> None:
    assert x[0] == y[0], (x, y)
    if x[0] == "error":
        assert x == y
        return
    assert x[1].keys() == y[1].keys()
    for key in x[1]:
        p, q = x[1][key], y[1][key]
        assert type(p) is type(q), key
        if isinstance(p, np.ndarray):
            assert p.dtype == q.dtype and p.shape == q.shape and p.tolist() == q.tolist(), key
        elif isinstance(p, tfr.SparseValue):
            for u, v in zip(p, q):
                assert u.dtype == v.dtype and u.shape == v.shape and u.tolist() == v.tolist()
        else:
            assert p.to_list() == q.to_list(), key


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_one_record_route_equals_the_batch_path(seed: int, monkeypatch: Any) -> None:
    rng = random.Random(seed)
    spec = _spec(rng)
    taken = []
    real = _parse.parse_one

    def spy(record: bytes, specs: Any) -> Any:
        taken.append(real(record, specs))
        return taken[-1]

    for _ in range(8):
        record = _record(rng)
        monkeypatch.setattr(_parse, "parse_one", spy)
        fast = _outcome(lambda r=record: tfr.parse_single_example(r, spec))
        monkeypatch.setattr(_parse, "parse_one", lambda record, specs: None)
        slow = _outcome(lambda r=record: tfr.parse_single_example(r, spec))
        _same(fast, slow)


def test_plain_records_take_the_one_record_route(monkeypatch: Any) -> None:
    spec = {
        "a": tfr.FixedLenFeature([], tfr.int64),
        "b": tfr.FixedLenFeature([2], tfr.float32),
        "c": tfr.VarLenFeature(tfr.string),
        "d": tfr.FixedLenFeature([], tfr.string, default_value=b"x"),
    }
    record = tfr.encode_example({"a": 5, "b": [0.5, 1.5], "c": [b"p", b"q"]})
    got = _single.parse_one(record, _parse.compile_features(spec).specs)
    assert got is not None
    assert got["a"].shape == () and got["a"].dtype == np.int64 and int(got["a"]) == 5
    assert got["b"].tolist() == [0.5, 1.5] and got["b"].dtype == np.float32
    assert got["c"].indices.tolist() == [[0], [1]] and got["c"].values.tolist() == [b"p", b"q"]
    assert got["d"].shape == () and got["d"].item() == b"x"
    # A required feature missing: the batch path words the error.
    assert _single.parse_one(tfr.encode_example({"b": [1.0, 2.0]}), spec) is None
    with pytest.raises(tfr.ParseError, match="a"):
        tfr.parse_single_example(tfr.encode_example({"b": [1.0, 2.0]}), spec)


def test_equal_dict_specs_share_one_compiled_plan(monkeypatch: Any) -> None:
    made = []

    def compile_plan(features: Any) -> Any:
        made.append(features)
        return _parse.compile_features(features)

    def spec() -> dict[str, Any]:
        return {"a": tfr.FixedLenFeature([], tfr.int64), "v": tfr.VarLenFeature(tfr.float32)}

    monkeypatch.setattr(_single, "_plans", type(_single._plans)())
    one = spec()
    first = _single.cached_plan(one, compile_plan)
    assert _single.cached_plan(one, compile_plan) is first
    assert _single.cached_plan(spec(), compile_plan) is first  # equal, not the same dict
    assert len(made) == 1
    one["a"] = tfr.FixedLenFeature([], tfr.int64, default_value=3)  # changed in place
    changed = _single.cached_plan(one, compile_plan)
    assert changed is not first and changed["a"].default_value is not None
    # [] and () shapes are different keys; unhashable fields are compiled each time.
    _single.cached_plan({"a": tfr.FixedLenFeature((), tfr.int64)}, compile_plan)
    _single.cached_plan({"a": tfr.FixedLenFeature([], tfr.int64)}, compile_plan)
    arr = {"a": tfr.FixedLenFeature([2], tfr.int64, default_value=np.array([1, 2]))}
    _single.cached_plan(arr, compile_plan)
    _single.cached_plan(dict(arr), compile_plan)
    assert len(made) == 6


@pytest.mark.parametrize("threads", [1, 4])
def test_chunks_parsed_on_threads_come_in_order(threads: int) -> None:
    from tfrecord_lite._examples._threads import parse_chunks

    spec = {"a": tfr.FixedLenFeature([], tfr.int64), "s": tfr.VarLenFeature(tfr.string)}
    records = [tfr.encode_example({"a": i, "s": [b"x"] * (i % 3)}) for i in range(3000)]
    chunks = [records[i : i + 100] for i in range(0, 3000, 100)]
    got = list(parse_chunks(spec, chunks, threads))
    assert [int(p["a"][0]) for p in got] == list(range(0, 3000, 100))
    for parsed, chunk in zip(got, chunks):
        expect = tfr.parse_example(chunk, spec)
        assert parsed["a"].tolist() == expect["a"].tolist()
        assert parsed["s"].indices.tolist() == expect["s"].indices.tolist()
    # An error comes where its chunk's result would have.
    chunks[5] = [b"\xff garbage"] * 100
    out = parse_chunks(spec, chunks, threads)
    assert len([next(out) for _ in range(5)]) == 5
    with pytest.raises(tfr.ParseError):
        next(out)
