"""Hostile input: nothing a file or a record holds makes the library allocate without
bound, loop forever, or raise anything but a documented error (docs/reliability.md).

Files: huge length fields, deflate bombs, garbage. Records: nested / truncated /
mistyped protobufs, over-long varints, non-Example payloads, through every parser,
with the vectorized fast path on and off (which must agree whenever they parse).
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import textwrap
import tracemalloc
import zlib
from pathlib import Path
from typing import Any, Callable

import pytest
from _helpers import ld as _ld
from _helpers import outcome
from _helpers import varint as _varint
from conftest import COMPRESSIONS

import tfrecord_lite as tfr
from tfrecord_lite._files import _inflate, _stream
from tfrecord_lite._record._format import record_header

# Errors a caller may see for bad data or bad arguments; anything else is a bug.


# --------------------------------------------------------------------------- files

MEASURE = textwrap.dedent(
    """
    import gzip, json, resource, sys, tracemalloc
    import tfrecord_lite as tfr
    from tfrecord_lite._record._format import record_header

    path = sys.argv[1]
    hostile = record_header(2**62) + bytes(4)
    assert len(hostile) == 16
    with open(path, "wb") as f:
        f.write(hostile)
    with open(path + ".gz", "wb") as f:
        f.write(gzip.compress(hostile, mtime=0))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    outcomes = []
    for p in (path, path + ".gz"):
        for mode in ("raise", "skip", "stop"):
            try:
                out = list(tfr.read_records(p, on_error=mode, on_skip=lambda r: None))
                outcomes.append([mode, len(out), None])
            except tfr.TFRecordError as err:
                outcomes.append([mode, 0, type(err).__name__])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"peak": peak, "rss_before_kib": before, "rss_after_kib": after,
                      "outcomes": outcomes}))
    """
)


def test_a_16_byte_file_claiming_2_62_bytes_costs_nothing(tmp_path: Path) -> None:
    # Measured in a fresh process: tracemalloc's peak, and the growth of ru_maxrss.
    res = subprocess.run(
        [sys.executable, "-c", MEASURE, str(tmp_path / "hostile.tfrecord")],
        capture_output=True,
        text=True,
        check=True,
    )
    m = json.loads(res.stdout)
    assert m["outcomes"] == [
        ["raise", 0, "TruncatedRecordError"],
        ["skip", 0, None],
        ["stop", 0, None],
        ["raise", 0, "TruncatedRecordError"],
        ["skip", 0, None],
        ["stop", 0, None],
    ]
    assert m["peak"] < 256 * 1024
    assert m["rss_after_kib"] - m["rss_before_kib"] < 8 * 1024
    print(
        f"\nhostile 16-byte file (2**62-byte claim): tracemalloc peak {m['peak']} bytes, "
        f"ru_maxrss {m['rss_before_kib']} -> {m['rss_after_kib']} KiB"
    )


@pytest.mark.parametrize("length", [2**62, 2**63, 2**64 - 1, 2**32, 2**31])
def test_huge_length_fields(tmp_path: Path, length: int) -> None:
    after = tfr.encode_records([b"after", b"the claim"])
    stream = tfr.encode_record(b"before") + record_header(length) + bytes(4) + after
    tracemalloc.start()
    try:
        for compression in COMPRESSIONS:
            path = tmp_path / f"f{compression}"
            path.write_bytes(
                gzip.compress(stream, mtime=0)
                if compression == "GZIP"
                else zlib.compress(stream)
                if compression
                else stream
            )
            with pytest.raises((tfr.TruncatedRecordError, tfr.RecordTooLargeError)):
                list(tfr.read_records(path))
            reports: list[tfr.SkipReport] = []
            out = list(tfr.read_records(path, on_error="skip", on_skip=reports.append))
            assert out == [b"before", b"after", b"the claim"]
            assert len(reports) == 1 and reports[0].length == 16
            # (plain files: a claim past the end of the file is a truncation first)
            expected = tfr.RecordTooLargeError if compression else tfr.TruncatedRecordError
            with pytest.raises(expected):
                list(tfr.read_records(path, max_record_size=2**20))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20


def _bomb(claim: int, zeros_mib: int) -> bytes:
    """A GZIP stream: a record header claiming ``claim`` bytes, then ``zeros_mib`` MiB of zeros."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [z.compress(record_header(claim))]
    mib = bytes(2**20)
    parts += [z.compress(mib) for _ in range(zeros_mib)]
    parts.append(z.flush())
    return b"".join(parts)


def test_deflate_bomb_is_refused_in_bounded_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    limit = 16 * 2**20
    monkeypatch.setattr(_stream, "DEFAULT_MAX_COMPRESSED_RECORD", limit)
    blob = _bomb(2**62, 256)  # ~250 KB that inflates to 256 MiB
    assert len(blob) < 300_000
    for mode in ("raise", "skip", "stop"):
        tracemalloc.start()
        try:
            reports: list[tfr.SkipReport] = []
            try:
                out = list(
                    tfr.read_records(
                        io.BytesIO(blob), "GZIP", on_error=mode, on_skip=reports.append
                    )
                )
            except tfr.RecordTooLargeError as err:
                assert mode == "raise" and err.limit == limit
            else:
                assert mode != "raise" and out == []
                assert reports[0].reason == "too-large"
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        # The record's buffered bytes (up to the cap) plus one inflate chunk.
        assert peak < limit + 4 * _inflate.INFLATE_CHUNK, mode
    # An explicit max_record_size refuses it from its header alone.
    tracemalloc.start()
    try:
        with pytest.raises(tfr.RecordTooLargeError):
            list(tfr.read_records(io.BytesIO(blob), "GZIP", max_record_size=2**20))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * _inflate.INFLATE_CHUNK


@pytest.mark.slow
def test_a_bomb_of_valid_records_streams() -> None:
    # 512 Ki records of 48 zero bytes = 32 MiB decompressed from ~100 KB: bounded memory.
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = tfr.encode_record(bytes(48)) * 65536
    blob = b"".join([z.compress(block) for _ in range(8)] + [z.flush()])
    assert len(blob) < 200_000
    tracemalloc.start()
    try:
        count = sum(1 for _ in tfr.read_records(io.BytesIO(blob), "GZIP"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 8 * 65536
    assert peak < 12 * 2**20


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"\x00",
        bytes(11),
        bytes(4096),
        b"\xff" * 4096,
        b"\x1f\x8b",
        b"\x1f\x8b\x08\x00" + bytes(6) + b"garbage" * 50,
        b"\x78\x9c" + b"garbage" * 50,
        b"\x78\x9c\x03\x00",
        bytes(range(256)) * 20,
        gzip.compress(b"not records at all" * 100, mtime=0),
        zlib.compress(bytes(10_000)),
    ],
)
def test_garbage_files_raise_only_documented_errors(blob: bytes) -> None:
    for compression in ("auto", "", "GZIP", "ZLIB"):
        for mode in ("raise", "skip", "stop"):
            reports: list[tfr.SkipReport] = []
            try:
                out = list(
                    tfr.read_records(
                        io.BytesIO(blob), compression, on_error=mode, on_skip=reports.append
                    )
                )
            except tfr.DataLossError:
                assert mode == "raise"
                continue
            # Nothing here holds a record, so nothing is returned...
            assert out == [] or blob == b"", (compression, mode)
            # ... and unless the stream was empty, that is reported, not silent.
            if mode != "raise":
                assert reports or _empty_stream(blob, compression), (compression, mode)


def _empty_stream(blob: bytes, compression: str) -> bool:
    if blob == b"":
        return True  # an empty file is an empty stream, whatever its compression
    try:
        if compression == "GZIP":
            return gzip.decompress(blob) == b""
        if compression == "ZLIB":
            return zlib.decompress(blob) == b""
        if compression == "auto":
            comp = tfr.detect_compression(blob[:12])
            return _empty_stream(blob, comp) if comp else blob == b""
    except (OSError, zlib.error, EOFError):
        return False
    return blob == b""


# --------------------------------------------------------------------------- records

SPEC = {
    "a": tfr.VarLenFeature(tfr.int64),
    "b": tfr.FixedLenFeature([], tfr.float32, default_value=0.0),
    "c": tfr.VarLenFeature(tfr.string),
    "d": tfr.RaggedFeature(tfr.int64),
}
GOOD = tfr.encode_example({"a": [1, 2, 3], "b": [0.5], "c": [b"xy"], "d": [7]})
SEQ_GOOD = tfr.encode_sequence_example({"c": [b"k"]}, {"s": [[1, 2], [3]]})

HOSTILE_RECORDS = {
    "deep nesting": b"",  # filled in below (needs _nest)
    "varint over 10 bytes": b"\x08" + b"\xff" * 11 + b"\x01",
    "10-byte varint overflow": _ld(
        1, _ld(1, _ld(1, b"a") + _ld(2, _ld(3, _ld(1, b"\xff" * 9 + b"\x7f"))))
    ),
    "length past the end": b"\x0a" + _varint(2**62) + b"abc",
    "length 2**64-1": b"\x0a" + b"\xff" * 9 + b"\x01",
    "truncated field": b"\x0a\x05ab",
    "wrong wire type": b"\x08\x01",
    "wrong wire type inside": _ld(1, b"\x0d\x01\x02\x03\x04"),
    "group tags": b"\x0b\x0c" * 100,
    "end group alone": b"\x0c",
    "field 0": b"\x00\x01",
    "reserved wire type 7": b"\x0f",
    "packed floats of odd length": _ld(1, _ld(1, _ld(1, b"b") + _ld(2, _ld(2, _ld(1, b"abc"))))),
    "packed varint cut": _ld(1, _ld(1, _ld(1, b"a") + _ld(2, _ld(3, _ld(1, b"\x80\x80"))))),
    "key not utf-8": _ld(1, _ld(1, _ld(1, b"\xff\xfe") + _ld(2, _ld(3, _ld(1, b"\x01"))))),
    "png": b"\x89PNG\r\n\x1a\n" + bytes(range(200)),
    "random": bytes((i * 7919) % 251 for i in range(300)),
    "zeros": bytes(64),
    "a TFRecord frame": tfr.encode_record(GOOD),
    "a SequenceExample": SEQ_GOOD,
    "empty": b"",
}


def _nest(depth: int) -> bytes:
    payload = b""
    for _ in range(depth):
        payload = _ld(1, payload)
    return payload


HOSTILE_RECORDS["deep nesting"] = _nest(2000)


def _both_paths(fn: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TFRECORD_LITE_FASTPATH", "1")
    fast = outcome(fn)
    monkeypatch.setenv("TFRECORD_LITE_FASTPATH", "0")
    generic = outcome(fn)
    assert fast[0] == generic[0], (fast, generic)
    if fast[0] == "ok":
        assert fast == generic
    return generic


@pytest.mark.parametrize("name", sorted(HOSTILE_RECORDS))
def test_hostile_records_through_every_parser(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = HOSTILE_RECORDS[name]
    for position in (0, 5, 11):  # alone, and among good records (the fast path's batch)
        batch = [GOOD] * 12
        batch[position] = bad
        _both_paths(lambda b=batch: tfr.parse_example(b, SPEC), monkeypatch)
        _both_paths(lambda b=batch: tfr.parse_example(b, {}), monkeypatch)
    _both_paths(lambda: tfr.parse_single_example(bad, SPEC), monkeypatch)
    seq_spec = {"s": tfr.VarLenFeature(tfr.int64), "r": tfr.RaggedFeature(tfr.string)}
    ctx_spec = {"c": tfr.VarLenFeature(tfr.string)}
    _both_paths(
        lambda: tfr.parse_sequence_example([SEQ_GOOD, bad, SEQ_GOOD], ctx_spec, seq_spec),
        monkeypatch,
    )
    _both_paths(lambda: tfr.parse_single_sequence_example(bad, ctx_spec, seq_spec), monkeypatch)
    outcome(lambda: tfr.infer_schema([GOOD, bad, GOOD]))


def test_non_examples_are_parse_errors() -> None:
    for bad in (b"\x89PNG\r\n\x1a\n", b"\x0a\x05ab", b"\x08" + b"\xff" * 11, _nest(5000)):
        with pytest.raises(tfr.ParseError) as info:
            tfr.parse_example([GOOD, bad], SPEC)
        assert info.value.index == 1 and "Could not parse example input" in str(info.value)
        with pytest.raises(tfr.ParseError):
            tfr.parse_single_example(bad, SPEC)
        with pytest.raises(tfr.ParseError):
            tfr.parse_sequence_example([bad], None, {"s": tfr.VarLenFeature(tfr.int64)})
        with pytest.raises(tfr.ParseError):
            tfr.infer_schema([bad])


def test_parsers_reject_wrong_arguments_plainly() -> None:
    with pytest.raises(TypeError):
        tfr.parse_example(GOOD, SPEC)  # one record where a batch is expected
    with pytest.raises(TypeError):
        tfr.parse_example([GOOD, 5], SPEC)  # type: ignore[list-item]
    with pytest.raises((TypeError, ValueError)):
        tfr.parse_example([GOOD], {"a": "not a spec"})  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        tfr.infer_schema([GOOD], sample=0)


def _entry(key: bytes, packed: bytes) -> bytes:
    """A Features map entry: ``key`` -> Int64List holding the packed bytes ``packed``."""
    return _ld(1, _ld(1, key) + _ld(2, _ld(3, _ld(1, packed))))


# Found by tests/fuzz/fuzz_parse_example.py: the fast path must check the packed values
# of features the spec does not read, as protobuf does.
def test_fast_path_rejects_a_cut_varint_in_an_unread_feature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    good = tfr.encode_example({"int": [1, 2]})
    bad = _ld(1, _entry(b"int", b"\x01") + _entry(b"label", b"\x87"))  # a varint cut short
    spec = {"int": tfr.VarLenFeature(tfr.int64)}
    assert _both_paths(lambda: tfr.parse_example([good] * 7 + [bad], spec), monkeypatch) == (
        "error",
        "ParseError",
    )
