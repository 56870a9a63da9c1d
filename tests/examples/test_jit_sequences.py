"""The compiled SequenceExample walk (``jit_extract_sequences``) gives what the protobuf
reference path gives: context and feature-list values, steps, empty ``Feature()`` s,
errors; records it cannot read with certainty send the batch to the reference path."""

from __future__ import annotations

import importlib.util
import random
from typing import Any

import pytest
from _helpers import ld
from test_parse_engine import (
    SEQ_CONTEXT,
    SEQUENCE_DAMAGES,
    _both,
    _damaged_sequence,
    _entry,
    _same_parsed,
    _sequence_record,
    _sequence_specs,
)

import tfrecord_lite as tfr
from tfrecord_lite._examples._engines import _dispatch, _jit

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None, reason="numba is not installed (the jit extra)"
)

WIDTHS: dict[str, int | None] = {"sensor": 2, "frame": None, "tokens": None, "other": None}


@pytest.fixture(autouse=True)
def _jit_engine(monkeypatch: Any) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "jit")


def _watch(monkeypatch: Any) -> list[Any]:
    seen: list[Any] = []
    real = _jit.jit_extract_sequences

    def spy(*args: Any) -> Any:
        seen.append(real(*args))
        return seen[-1]

    monkeypatch.setattr(_dispatch, "jit_extract_sequences", spy)
    return seen


@pytest.mark.parametrize("seed", range(8))
def test_compiled_sequences_equal_the_reference(seed: int, monkeypatch: Any) -> None:
    rng = random.Random(seed)
    records = [_sequence_record(rng, WIDTHS) for _ in range(rng.choice([1, 9, 70, 300]))]
    context, lists = _sequence_specs(SEQ_CONTEXT)
    seen = _watch(monkeypatch)
    fast, slow = _both(monkeypatch, lambda: tfr.parse_sequence_example(records, context, lists))
    assert fast[0] == slow[0] == "ok", (fast, slow)
    for x, y in zip(fast[1], slow[1]):
        _same_parsed(x, y)
    assert seen and seen[0] is not None  # the compiled walk read every record
    # Specs reading another key than their name, the same list twice, and no context.
    keyed = {
        "r": tfr.RaggedFeature(tfr.int64, value_key="tokens"),
        "tokens": tfr.VarLenFeature(tfr.int64),
        "frame": tfr.FixedLenSequenceFeature([], tfr.string, allow_missing=True),
    }
    fast, slow = _both(monkeypatch, lambda: tfr.parse_sequence_example(records, {}, keyed))
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        for x, y in zip(fast[1], slow[1]):
            _same_parsed(x, y)
    else:
        assert fast == slow
    # Errors worded from the same columns: an empty Feature() as a step of a
    # fixed-size list, and an empty Feature() in the context for a FixedLenFeature.
    for bad in (
        ld(2, ld(1, ld(1, b"sensor") + ld(2, ld(1, b"")))),
        ld(1, _entry(b"id", None, [], "packed")),
    ):
        broken = [*records[:-1], bad]
        fast, slow = _both(
            monkeypatch, lambda b=broken: tfr.parse_sequence_example(b, context, lists)
        )
        assert fast[0] == "error" and fast == slow


@pytest.mark.parametrize("damage", [*SEQUENCE_DAMAGES, "two kinds in a step"])
def test_unusual_sequences_go_to_the_reference_path(damage: str, monkeypatch: Any) -> None:
    rng = random.Random(11)
    records = [_sequence_record(rng, WIDTHS) for _ in range(20)]
    records[5] = _damaged_sequence(damage, records[5])
    context, lists = _sequence_specs(SEQ_CONTEXT)
    seen = _watch(monkeypatch)
    fast, slow = _both(monkeypatch, lambda: tfr.parse_sequence_example(records, context, lists))
    if fast[0] == "error" or slow[0] == "error":
        assert fast == slow
    else:
        for x, y in zip(fast[1], slow[1]):
            _same_parsed(x, y)
    assert seen[0] is None
