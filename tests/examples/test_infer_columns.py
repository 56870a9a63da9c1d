"""infer_schema reads its sample through the engines' columns (``_infer_columns``): the
schema, its statistics and its errors are those of the record by record reading."""

from __future__ import annotations

import json
import math
import random
from typing import Any, Optional

import pytest

import tfrecord_lite as tfr
from tfrecord_lite import example_pb2
from tfrecord_lite._examples import _infer as infer_module

KINDS = ("bytes_list", "float_list", "int64_list")
SPECIAL_FLOATS = (0.0, -0.0, math.nan, math.inf, -math.inf, 1.5, -2.25)


def _values(rng: random.Random, kind: str, n: int) -> list[Any]:
    if kind == "bytes_list":
        return [bytes(rng.randrange(256) for _ in range(rng.randrange(4))) for _ in range(n)]
    if kind == "int64_list":
        return [
            rng.choice((0, -1, 2**63 - 1, -(2**63), rng.randrange(-1000, 1000))) for _ in range(n)
        ]
    return [
        rng.choice(SPECIAL_FLOATS) if rng.random() < 0.4 else rng.uniform(-9, 9) for _ in range(n)
    ]


def _records(seed: int, n: int, conflicts: bool) -> list[bytes]:
    """Examples with missing keys, empty Feature()s, empty lists, several lengths, and
    (``conflicts``) a key that now and then holds another kind."""
    rng = random.Random(seed)
    keys = {f"k{i}": rng.choice(KINDS) for i in range(rng.randrange(1, 7))}
    fixed = {k: rng.choice((1, 1, 3)) for k in keys}
    out = []
    for _ in range(n):
        ex = example_pb2.Example()
        order = list(keys)
        rng.shuffle(order)
        for key in order:
            form = rng.random()
            if form < 0.1:
                continue  # absent
            feature = ex.features.feature[key]
            if form < 0.2:
                feature.SetInParent()  # an empty Feature()
                continue
            kind = keys[key]
            if conflicts and rng.random() < 0.05:
                kind = rng.choice(KINDS)
            count = fixed[key] if form < 0.7 else rng.randrange(0, 5)
            getattr(feature, kind).SetInParent()
            getattr(feature, kind).value.extend(_values(rng, kind, count))
        out.append(ex.SerializeToString())
    return out


def _infer(records: list[bytes], sample: Optional[int]) -> Any:
    try:
        schema = tfr.infer_schema(records, sample)
    except tfr.ParseError as err:
        return ("error", type(err).__name__, str(err), err.key, err.index)
    return json.dumps(schema.to_json(), default=repr) + repr(schema)


def _record_by_record(records: list[bytes], sample: Optional[int]) -> Any:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(infer_module, "_add_sample", infer_module.add_records)
        return _infer(records, sample)


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("conflicts", [False, True])
def test_the_schema_stats_and_errors_are_the_record_by_record_ones(
    seed: int, conflicts: bool
) -> None:
    records = _records(seed, random.Random(seed).choice((9, 40, 300)), conflicts)
    for sample in (None, 5, 30):
        assert _infer(records, sample) == _record_by_record(records, sample), (seed, sample)


def test_nan_and_signed_zero_ranges_follow_the_record_order() -> None:
    def rec(*values: float) -> bytes:
        ex = example_pb2.Example()
        ex.features.feature["x"].float_list.value.extend(values)
        return ex.SerializeToString()

    cases = [
        [rec(math.nan, 1.0)] + [rec(2.0)] * 10,  # NaN first in the first record: kept
        [rec(3.0)] + [rec(math.nan, -7.0)] + [rec(2.0)] * 10,  # a later NaN record passed over
        [rec(1.0, math.nan, -1.0)] + [rec(0.5)] * 10,  # a NaN inside a record skipped
        [rec(0.0)] + [rec(-0.0)] * 10,
        [rec(-0.0, 0.0)] + [rec(0.0)] * 10,
    ]
    for records in cases:
        assert _infer(records, None) == _record_by_record(records, None)
    stats = tfr.infer_schema(cases[1], None).stats["x"]
    assert (stats.min_value, stats.max_value) == (2.0, 3.0)
    zero = tfr.infer_schema(cases[3], None).stats["x"].min_value
    assert zero is not None and math.copysign(1, zero) == 1


def test_sequence_examples_and_kind_conflicts_are_read_record_by_record() -> None:
    seq = example_pb2.SequenceExample()
    seq.context.feature["id"].int64_list.value.append(1)
    seq.feature_lists.feature_list["f"].feature.add().float_list.value.extend([1.0, 2.0])
    records = [seq.SerializeToString()] * 12
    assert _infer(records, None) == _record_by_record(records, None)
    assert tfr.infer_schema(records, None).is_sequence


def test_plain_examples_are_not_read_record_by_record(monkeypatch: pytest.MonkeyPatch) -> None:
    records = _records(7, 200, conflicts=False)
    expected = _record_by_record(records, None)

    def refuse(*args: Any) -> int:
        raise AssertionError("the sample was read record by record")

    monkeypatch.setattr(infer_module, "add_records", refuse)
    assert _infer(records, None) == expected
