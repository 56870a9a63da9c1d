"""Property tests (hypothesis): random records, random damage at random offsets.

The reader never returns wrong data: with ``on_error="raise"`` it returns exactly a
prefix of the records written and then raises a documented :class:`DataLossError`
(or, if the damage left a valid stream, exactly what that stream holds); with
``"skip"`` every record it returns is one that was written, in order, and anything
missing is reported; ``"stop"`` returns what ``"raise"`` returns before its error.
Parsers: any bytes give a result or a documented error, the same with the
vectorized fast path on and off. The long atheris runs are in tests/fuzz/ (make fuzz).
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from typing import Any, Callable, Optional

import pytest
from _helpers import outcome
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tfrecord_lite as tfr

COMPRESSIONS = ("", "GZIP", "ZLIB")
#: Examples per property: 150 in `make test`; set TFRECORD_LITE_FUZZ_EXAMPLES for a long run.
EXAMPLES = int(os.environ.get("TFRECORD_LITE_FUZZ_EXAMPLES", "150"))
FAST = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

records_st = st.lists(
    st.one_of(st.binary(max_size=40), st.binary(min_size=100, max_size=600)),
    min_size=1,
    max_size=14,
)


@st.composite
def damage_st(draw: Any) -> list[tuple[str, int, int, bytes]]:
    """1-3 damage operations: (kind, where, size, bytes); ``where`` is taken modulo the length."""
    ops = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "set", "delete", "insert", "zero", "truncate"]))
        ops.append(
            (
                kind,
                draw(st.integers(0, 2**32)),
                draw(st.integers(1, 40)),
                draw(st.binary(min_size=1, max_size=40)),
            )
        )
    return ops


def _damage(blob: bytes, ops: list[tuple[str, int, int, bytes]]) -> bytes:
    b = bytearray(blob)
    for kind, where, size, data in ops:
        if not b:
            break
        i = where % len(b)
        if kind == "flip":
            b[i] ^= 1 << (size % 8)
        elif kind == "set":
            b[i : i + len(data)] = data[: len(b) - i]
        elif kind == "delete":
            del b[i : i + size]
        elif kind == "insert":
            b[i:i] = data
        elif kind == "zero":
            b[i : i + size] = bytes(min(size, len(b) - i))
        else:
            del b[i:]
    return bytes(b)


def _compress(blob: bytes, compression: str) -> bytes:
    if compression == "GZIP":
        return gzip.compress(blob, mtime=0)
    if compression == "ZLIB":
        return zlib.compress(blob)
    return blob


def _read(
    blob: bytes, compression: str, mode: str, buffer_size: int = 1 << 20
) -> tuple[list[bytes], list[tfr.SkipReport], Optional[BaseException]]:
    out: list[bytes] = []
    reports: list[tfr.SkipReport] = []
    try:
        for r in tfr.read_records(
            io.BytesIO(blob),
            compression,
            on_error=mode,
            on_skip=reports.append,
            buffer_size=buffer_size,
        ):
            out.append(r)
    except tfr.DataLossError as err:
        return out, reports, err
    return out, reports, None


def _subsequence(items: list[bytes], of: list[bytes]) -> bool:
    it = iter(of)
    return all(any(x == y for y in it) for x in items)


@FAST
@given(
    records=records_st,
    compression=st.sampled_from(COMPRESSIONS),
    ops=damage_st(),
    buffer_size=st.sampled_from([7, 64, 1 << 20]),
)
def test_damaged_files_never_yield_wrong_data(
    records: list[bytes], compression: str, ops: Any, buffer_size: int
) -> None:
    intact = _compress(tfr.encode_records(records), compression)
    damaged = _damage(intact, ops)
    # raise: a prefix of the records, then a documented error (or a valid stream)
    out, _, err = _read(damaged, compression, "raise", buffer_size)
    assert out == records[: len(out)]
    if err is None:
        if compression and damaged:  # (an empty file is an empty stream)
            assert out == records  # the stream's own checksum vouches for the rest
        else:
            assert tfr.encode_records(out) == damaged  # e.g. cut at a record boundary
    # stop: exactly what raise gave before its error, and the error reported
    out_stop, reports, err_stop = _read(damaged, compression, "stop", buffer_size)
    assert err_stop is None and out_stop == out
    assert len(reports) == (0 if err is None else 1)
    if err is not None:
        assert type(reports[0].error) is type(err) and reports[0].to_end
    # skip: only records that were written; nothing missing goes unreported
    out_skip, reports, err_skip = _read(damaged, compression, "skip", buffer_size)
    assert err_skip is None
    assert out_skip[: len(out)] == out
    if compression:
        # A garbled deflate stream can copy an earlier (intact) frame: the records
        # are still records that were written, but order is not guaranteed.
        assert all(r in records for r in out_skip)
    else:
        assert _subsequence(out_skip, records)
    if err is None:
        assert out_skip == out and not reports  # nothing was wrong
    else:
        assert reports  # something was: it is reported
    offsets = [r.offset for r in reports]
    assert offsets == sorted(offsets)


@FAST
@given(
    records=records_st,
    ops=damage_st(),
    cuts=st.lists(st.integers(0, 10_000), max_size=20),
    size=st.one_of(st.none(), st.just(True)),
)
def test_skip_mode_is_independent_of_chunking(
    records: list[bytes], ops: Any, cuts: list[int], size: Optional[bool]
) -> None:
    stream = _damage(tfr.encode_records(records), ops)
    stream_size = len(stream) if size else None

    def decode(pieces: list[bytes]) -> tuple[list[bytes], list[tuple[Any, ...]]]:
        d = tfr.RecordDecoder(on_error="skip", stream_size=stream_size)
        out: list[bytes] = []
        for p in pieces:
            d.feed(p)
            while True:
                batch = d.records()
                if not batch:
                    break
                out += batch
        out += d.close()
        return out, [(r.offset, r.length, r.reason, r.index, r.exact) for r in d.skipped]

    whole = decode([stream])
    points = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    assert decode([stream[a:b] for a, b in zip(points, points[1:])]) == whole
    assert _subsequence(whole[0], records)
    # The bytes reported skipped plus the records returned account for the stream.
    if all(r[1] is not None for r in whole[1]):
        framed = sum(len(r) + 16 for r in whole[0])
        assert framed + sum(r[1] for r in whole[1]) == len(stream)


@FAST
@given(blob=st.binary(max_size=3000), compression=st.sampled_from(["auto", *COMPRESSIONS]))
def test_arbitrary_bytes_as_a_file(blob: bytes, compression: str) -> None:
    for mode in ("raise", "skip", "stop"):
        out, _, err = _read(blob, compression, mode, 64)
        assert err is None or mode == "raise"
        for r in out:
            assert isinstance(r, bytes)


# --------------------------------------------------------------------------- parsers

value_lists = st.one_of(
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=4),
    st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=4),
    st.lists(st.binary(max_size=6), min_size=1, max_size=3),
)
features_st = st.dictionaries(st.sampled_from(["a", "b", "c", "ab", "zz"]), value_lists, max_size=4)

SPECS: list[dict[str, Any]] = [
    {
        "a": tfr.VarLenFeature(tfr.int64),
        "b": tfr.VarLenFeature(tfr.float32),
        "c": tfr.VarLenFeature(tfr.string),
    },
    {"a": tfr.FixedLenFeature([2], tfr.int64, default_value=[0, 0])},
    {
        "ab": tfr.RaggedFeature(tfr.int64),
        "c": tfr.FixedLenSequenceFeature([], tfr.string, allow_missing=True),
    },
    {"zz": tfr.FixedLenFeature([], tfr.float32, default_value=1.0)},
]


def _fast_and_generic(fn: Callable[[], Any]) -> Any:
    old = os.environ.get("TFRECORD_LITE_FASTPATH")
    try:
        os.environ["TFRECORD_LITE_FASTPATH"] = "1"
        fast = outcome(fn)
        os.environ["TFRECORD_LITE_FASTPATH"] = "0"
        generic = outcome(fn)
    finally:
        if old is None:
            os.environ.pop("TFRECORD_LITE_FASTPATH", None)
        else:
            os.environ["TFRECORD_LITE_FASTPATH"] = old
    assert fast == generic
    return generic


@FAST
@given(
    examples=st.lists(features_st, min_size=8, max_size=12),
    ops=st.lists(st.tuples(st.integers(0, 11), damage_st()), max_size=3),
    spec=st.sampled_from(range(len(SPECS))),
)
def test_parse_example_on_damaged_records(examples: Any, ops: Any, spec: int) -> None:
    records = [tfr.encode_example(f) for f in examples]
    for which, damage in ops:
        i = which % len(records)
        records[i] = _damage(records[i], damage)
    _fast_and_generic(lambda: tfr.parse_example(records, SPECS[spec]))
    outcome(lambda: tfr.parse_single_example(records[0], SPECS[spec]))
    outcome(lambda: tfr.infer_schema(records))


@FAST
@given(blobs=st.lists(st.binary(max_size=60), min_size=1, max_size=10), spec=st.integers(0, 3))
def test_parsers_on_arbitrary_bytes(blobs: list[bytes], spec: int) -> None:
    batch = blobs + [tfr.encode_example({"a": [1, 2]})] * 8  # so the fast path runs
    _fast_and_generic(lambda: tfr.parse_example(batch, SPECS[spec]))
    seq_spec = {"s": tfr.VarLenFeature(tfr.int64), "t": tfr.RaggedFeature(tfr.string)}
    outcome(
        lambda: tfr.parse_sequence_example(blobs, {"c": tfr.VarLenFeature(tfr.string)}, seq_spec)
    )
    outcome(lambda: tfr.parse_single_sequence_example(blobs[0], None, seq_spec))
    outcome(lambda: tfr.infer_schema(blobs))


@settings(max_examples=max(60, EXAMPLES // 2), deadline=None)
@given(
    context=features_st,
    lists=st.dictionaries(
        st.sampled_from(["s", "t"]), st.lists(value_lists, max_size=3), max_size=2
    ),
    ops=damage_st(),
)
def test_parse_sequence_example_on_damaged_records(context: Any, lists: Any, ops: Any) -> None:
    assume(all(len({type(v[0]) if v else None for v in fl}) <= 1 for fl in lists.values()))
    try:
        good = tfr.encode_sequence_example(context, lists)
    except (TypeError, ValueError):
        assume(False)
        return
    bad = _damage(good, ops)
    spec = {"s": tfr.RaggedFeature(tfr.int64), "t": tfr.VarLenFeature(tfr.string)}
    outcome(
        lambda: tfr.parse_sequence_example([good, bad], {"a": tfr.VarLenFeature(tfr.int64)}, spec)
    )
    outcome(lambda: tfr.parse_single_sequence_example(bad, None, spec))


def test_properties_module_is_collected() -> None:
    # Guard against the whole file being skipped silently (e.g. hypothesis missing).
    assert FAST.max_examples >= 100 or "TFRECORD_LITE_FUZZ_EXAMPLES" in os.environ
    pytest.importorskip("hypothesis")
