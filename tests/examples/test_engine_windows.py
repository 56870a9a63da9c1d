"""Every parse engine reads a big batch a window of records at a time, with the same
results; the wire facts the engines and writers share are numbered once.

The NumPy engine bounded the records it joins into one buffer to ``WINDOW_BYTES``; the
compiled engine joined a whole batch (a 1 GB batch of big records: a 1 GB buffer and
grids over all of it). Both now go through one windowing step
(``_engines._buffers.by_windows``).
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_parse_engine import SEQ_CONTEXT, _same_parsed, _sequence_record, _sequence_specs

import tfrecord_lite as tfr
from tfrecord_lite._examples import _classify, _jit_encode
from tfrecord_lite._examples import _feature_kinds as kinds
from tfrecord_lite._examples._engines import _buffers, _jit, _kernels, _numpy, _numpy_sequences

HAS_NUMBA = importlib.util.find_spec("numba") is not None
ENGINES = ["numpy", pytest.param("jit", marks=pytest.mark.skipif(not HAS_NUMBA, reason="numba"))]
WINDOW = 20_000


def _joins(monkeypatch: Any) -> list[int]:
    """The bytes of records every engine joins into one buffer from now on."""
    sizes: list[int] = []
    real = _buffers._contiguous

    def counting(records: Any, lengths: np.ndarray) -> Any:
        sizes.append(int(np.sum(lengths)))
        return real(records, lengths)

    for module in (_numpy, _numpy_sequences, _jit):
        monkeypatch.setattr(module, "_contiguous", counting)
    return sizes


def _examples(n: int) -> list[bytes]:
    rng = random.Random(n)
    return [
        tfr.encode_example(
            {
                "id": i,
                "x": [rng.random() for _ in range(rng.randint(0, 40))],
                "s": [rng.randbytes(rng.randint(0, 30))],
            }
        )
        for i in range(n)
    ]


SPEC = {
    "id": tfr.FixedLenFeature([], tfr.int64),
    "x": tfr.VarLenFeature(tfr.float32),
    "s": tfr.VarLenFeature(tfr.string),
}


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_joins_at_most_a_window_of_records(engine: str, monkeypatch: Any) -> None:
    records = _examples(2000)
    with tfr.options(fastpath=False):
        reference = tfr.parse_example(records, SPEC)
    monkeypatch.setattr(_buffers, "WINDOW_BYTES", WINDOW)
    sizes = _joins(monkeypatch)
    with tfr.options(engine=engine):
        if engine == "jit":
            assert _kernels.wait()
        parsed = tfr.parse_example(records, SPEC)
    assert sum(map(len, records)) > 10 * WINDOW
    assert len(sizes) > 10 and max(sizes) <= WINDOW  # (the jit engine: one buffer before)
    assert sum(sizes) == sum(map(len, records))  # every record joined once
    _same_parsed(parsed, reference)


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_reads_sequences_a_window_at_a_time(engine: str, monkeypatch: Any) -> None:
    rng = random.Random(3)
    widths: dict[str, int | None] = {"sensor": 2, "frame": None, "tokens": None, "other": None}
    records = [_sequence_record(rng, widths) for _ in range(300)]
    context, lists = _sequence_specs(SEQ_CONTEXT)
    with tfr.options(fastpath=False):
        reference = tfr.parse_sequence_example(records, context, lists)
    window = sum(map(len, records)) // 6
    monkeypatch.setattr(_buffers, "WINDOW_BYTES", window)
    sizes = _joins(monkeypatch)
    with tfr.options(engine=engine):
        if engine == "jit":
            assert _kernels.wait("_jit_kernels", "_jit_sequences")
        parsed = tfr.parse_sequence_example(records, context, lists)
    assert len(sizes) >= 6 and max(sizes) <= window
    for x, y in zip(parsed, reference):
        _same_parsed(x, y)


def test_one_kind_numbering_for_readers_and_writers() -> None:
    # The kind of a Feature is its list's field number, everywhere.
    assert (kinds.KIND_BYTES, kinds.KIND_FLOAT, kinds.KIND_INT64) == (1, 2, 3)
    assert (_classify.KIND_BYTES, _classify.KIND_FLOAT, _classify.KIND_INT64) == (1, 2, 3)
    assert (_jit_encode.BYTES, _jit_encode.FLOATS, _jit_encode.INTS) == (1, 2, 3)
    for name, kind in kinds.KIND_OF_LIST.items():
        tag = (kind << 3) | 2
        assert kinds.LIST_OF_TAG[tag] == name
        assert kinds.KIND_OF_TAG[tag] == kind
        feature = tfr.train.Feature(**{name: {}}).SerializeToString()
        assert feature[0] == tag  # protobuf's own encoding of that list
    assert (kinds.KIND_OF_TAG >= 0).sum() == 3


def test_every_kernel_source_is_hashed_from_its_file() -> None:
    # A kernel source that moved would be hashed as empty: its changes would then
    # load an old compile.
    here = Path(_kernels.__file__).parent.parent
    for name in _kernels.KERNEL_SOURCES:
        assert (here / Path(*name.split("."))).with_suffix(".py").is_file(), name
    for full in _kernels.KERNEL_IMPORTS:
        found = importlib.util.find_spec(full.rpartition(".")[0])
        assert found is not None and found.origin
        assert (Path(found.origin).parent / f"{full.rpartition('.')[2]}.py").is_file(), full
    assert {f.rpartition(".")[2] for f in _kernels.KERNEL_IMPORTS} == set(_kernels.KERNEL_MODULES)
