"""Sans-I/O record framing (reference §A2-A4; peers.md #6 and the correctness pitfalls)."""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Iterator

import numpy as np
import pytest
from conftest import make_records
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecord_lite as tfr
from tfrecord_lite._record._crc import mask
from tfrecord_lite._record._format import HEADER_SIZE, RECORD_OVERHEAD, record_header

GOLDENS = {
    b"": "000000000000000029039807d8ea82a2",
    b"foo": "0300000000000000b099490e666f6f618abefe",
    b"hello": "0500000000000000eab2043e68656c6c6fbb1f1c19",
}


def _offsets(records: list[bytes]) -> list[int]:
    out, pos = [], 0
    for r in records:
        out.append(pos)
        pos += len(r) + RECORD_OVERHEAD
    return out


def _iter_chunks(stream: bytes, size: int, **kwargs: object) -> Iterator[bytes]:
    decoder = tfr.RecordDecoder(**kwargs)  # type: ignore[arg-type]
    for start in range(0, len(stream), size):
        decoder.feed(stream[start : start + size])
        yield from decoder.records()
    yield from decoder.records()
    decoder.close()


def _decode_in_chunks(stream: bytes, size: int, **kwargs: object) -> list[bytes]:
    return list(_iter_chunks(stream, size, **kwargs))


# --------------------------------------------------------------------------- encoding


@pytest.mark.parametrize(("record", "hex_bytes"), GOLDENS.items())
def test_goldens(record: bytes, hex_bytes: str) -> None:
    assert tfr.encode_record(record).hex() == hex_bytes
    assert list(tfr.iter_records(bytes.fromhex(hex_bytes))) == [record]


def test_layout() -> None:
    data = bytes(range(200))
    framed = tfr.encode_record(data)
    assert len(framed) == len(data) + RECORD_OVERHEAD == len(data) + 16
    (length,) = struct.unpack_from("<Q", framed, 0)
    assert length == 200
    assert struct.unpack_from("<I", framed, 8)[0] == mask(tfr.crc32c(framed[:8]))
    assert framed[12:-4] == data
    assert struct.unpack_from("<I", framed, 12 + 200)[0] == mask(tfr.crc32c(data))
    assert record_header(200) == framed[:12]


def test_zero_length_record() -> None:
    framed = tfr.encode_record(b"")
    assert len(framed) == 16
    assert list(tfr.iter_records(framed * 3)) == [b"", b"", b""]
    assert list(tfr.iter_records(b"")) == []


def test_encode_records_is_concatenation() -> None:
    records = make_records(20)
    assert tfr.encode_records(records) == b"".join(tfr.encode_record(r) for r in records)
    assert tfr.encode_records(iter(records)) == tfr.encode_records(records)
    assert tfr.encode_records([]) == b""


def test_encode_accepts_every_bytes_like() -> None:
    data = bytes(range(48))
    expected = tfr.encode_record(data)
    arr = np.frombuffer(data, dtype=np.uint8)
    inputs = [
        bytearray(data),
        memoryview(data),
        memoryview(data).cast("b"),
        memoryview(data).cast("I"),  # 4-byte items: len() would be 12
        memoryview(data).cast("B", (6, 8)),  # 2-D: len() would be 6
        arr,
        arr.reshape(4, 12),
        arr.view(np.float32),
    ]
    for item in inputs:
        assert tfr.encode_record(item) == expected, item
        assert tfr.encode_records([item, item]) == expected * 2
    # Non-contiguous views are encoded by value.
    strided = memoryview(bytes(range(96)))[::2]
    assert tfr.encode_record(strided) == tfr.encode_record(bytes(range(0, 96, 2)))
    assert tfr.encode_record(np.arange(96, dtype=np.uint8)[::2]) == tfr.encode_record(
        bytes(range(0, 96, 2))
    )


def test_non_bytes_records_are_rejected_helpfully() -> None:
    with pytest.raises(TypeError, match=r"got str: encode it first"):
        tfr.encode_record("foo")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bytes-like object, got int"):
        tfr.encode_record(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got str"):
        tfr.encode_records(["foo"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="got str"):
        list(tfr.iter_records("abcdefghijklmnop"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got str"):
        tfr.RecordDecoder().feed("abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bytes-like object, got NoneType"):
        tfr.RecordDecoder().feed(None)  # type: ignore[arg-type]


def test_record_header_range() -> None:
    assert record_header(2**64 - 1)[:8] == b"\xff" * 8
    with pytest.raises(ValueError):
        record_header(-1)
    with pytest.raises(ValueError):
        record_header(2**64)


# --------------------------------------------------------------------------- decoding


def test_decoder_every_chunk_size() -> None:
    records = make_records(12, seed=5, max_len=40)
    stream = tfr.encode_records(records)
    for size in range(1, len(stream) + 1):
        assert _decode_in_chunks(stream, size) == records, size


def test_decoder_records_only_at_the_end() -> None:
    records = make_records(30, seed=6)
    stream = tfr.encode_records(records)
    decoder = tfr.RecordDecoder()
    for start in range(0, len(stream), 7):
        decoder.feed(stream[start : start + 7])
    assert decoder.pending == len(stream)
    assert decoder.records(max_records=5) == records[:5]
    assert decoder.index == 5
    assert decoder.offset == _offsets(records)[5]
    assert decoder.records() == records[5:]
    assert decoder.pending == 0
    assert decoder.offset == len(stream)
    decoder.close()
    decoder.close()  # idempotent
    with pytest.raises(ValueError, match="after close"):
        decoder.feed(b"x")


def test_decoder_partial_record_is_not_returned() -> None:
    framed = tfr.encode_record(b"foo")
    decoder = tfr.RecordDecoder()
    decoder.feed(framed[:-1])
    assert decoder.records() == []
    decoder.feed(framed[-1:])
    assert decoder.records() == [b"foo"]


@settings(max_examples=60, deadline=None)
@given(
    records=st.lists(st.binary(max_size=200), max_size=15),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=12),
)
def test_decoder_roundtrip_random_splits(records: list[bytes], cuts: list[int]) -> None:
    stream = tfr.encode_records(records)
    points = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    decoder = tfr.RecordDecoder()
    out: list[bytes] = []
    for a, b in zip(points, points[1:]):
        decoder.feed(stream[a:b])
        out.extend(decoder.records())
    decoder.close()
    assert out == records
    assert list(tfr.iter_records(stream)) == records


def test_records_are_independent_bytes() -> None:
    records = [b"same" * 10] * 5 + [b"other"]
    stream = tfr.encode_records(records)
    for out in (list(tfr.iter_records(stream)), _decode_in_chunks(stream, 17)):
        assert out == records
        assert all(type(r) is bytes for r in out)
        assert len({id(r) for r in out}) == len(out)


def test_decoder_copies_mutable_input() -> None:
    # A caller that reuses its buffer (readinto) must not change data already fed.
    records = [b"a" * 10, b"b" * 10]
    stream = tfr.encode_records(records)
    buffer = bytearray(stream[:20])
    for verify in (True, False):
        decoder = tfr.RecordDecoder(verify=verify)
        decoder.feed(buffer)
        assert decoder.records() == []
        saved = bytes(buffer)
        buffer[:] = b"\xff" * 20
        decoder.feed(memoryview(bytearray(stream[20:])))
        assert decoder.records() == records
        decoder.close()
        buffer[:] = saved


# --------------------------------------------------------------------------- errors


def _corrupt(stream: bytes, pos: int) -> bytes:
    return stream[:pos] + bytes([stream[pos] ^ 0x01]) + stream[pos + 1 :]


def test_header_crc_error() -> None:
    records = make_records(6, seed=7)
    stream = tfr.encode_records(records)
    offsets = _offsets(records)
    for bad in (0, 3, 5):
        for pos in range(offsets[bad], offsets[bad] + HEADER_SIZE):
            damaged = _corrupt(stream, pos)
            out: list[bytes] = []
            with pytest.raises(tfr.CorruptRecordError) as info:
                out.extend(tfr.iter_records(damaged))
            assert out == records[:bad]
            err = info.value
            assert err.part == "header"
            assert err.offset == offsets[bad]
            assert err.index == bad
            assert isinstance(err, tfr.DataLossError)
            assert isinstance(err, ValueError)
            assert "corrupted record" in str(err)
            assert f"byte offset {offsets[bad]}" in str(err)


def test_data_crc_error() -> None:
    records = [b"x" * 5, b"hello world", b"y" * 30]
    stream = tfr.encode_records(records)
    offsets = _offsets(records)
    # Any byte of the data or of the footer.
    first = offsets[1] + HEADER_SIZE
    for pos in range(first, offsets[2]):
        out: list[bytes] = []
        with pytest.raises(tfr.CorruptRecordError) as info:
            out.extend(tfr.iter_records(_corrupt(stream, pos)))
        assert out == records[:1]
        assert info.value.part == "data"
        assert info.value.offset == offsets[1] + 12
        assert info.value.index == 1


def test_good_records_before_an_error_come_first_from_the_decoder() -> None:
    records = make_records(5, seed=8)
    stream = tfr.encode_records(records)
    bad_at = _offsets(records)[3] + HEADER_SIZE  # data of record 3
    decoder = tfr.RecordDecoder()
    decoder.feed(_corrupt(stream, bad_at))
    assert decoder.records() == records[:3]
    with pytest.raises(tfr.CorruptRecordError) as first:
        decoder.records()
    with pytest.raises(tfr.CorruptRecordError) as again:
        decoder.records()
    assert first.value.index == again.value.index == 3
    # close() reports the same error, not a misleading truncation.
    with pytest.raises(tfr.CorruptRecordError) as closing:
        decoder.close()
    assert closing.value.part == "data"
    assert closing.value.offset == bad_at


def test_error_alone_is_raised_at_once_and_kept() -> None:
    stream = tfr.encode_record(b"data")
    decoder = tfr.RecordDecoder()
    decoder.feed(_corrupt(stream, 13))
    with pytest.raises(tfr.CorruptRecordError):
        decoder.records()
    with pytest.raises(tfr.CorruptRecordError):
        decoder.close()


@pytest.mark.parametrize(
    ("cut", "what", "expected", "available"),
    [
        (1, "header", 12, 1),
        (11, "header", 12, 11),
        (12, "data", 16 + 10, 12),
        (21, "data", 16 + 10, 21),
        (22, "footer", 16 + 10, 22),
        (25, "footer", 16 + 10, 25),
    ],
)
def test_truncation(cut: int, what: str, expected: int, available: int) -> None:
    good = [b"a", b"bc"]
    prefix = tfr.encode_records(good)
    stream = prefix + tfr.encode_record(b"0123456789")[:cut]
    for run in ("iter", "decoder", "chunks"):
        out: list[bytes] = []
        with pytest.raises(tfr.TruncatedRecordError) as info:
            if run == "iter":
                out.extend(tfr.iter_records(stream))
            elif run == "decoder":
                decoder = tfr.RecordDecoder()
                decoder.feed(stream)
                out.extend(decoder.records())
                decoder.close()
            else:
                out.extend(_iter_chunks(stream, 3))
        assert out == good
        err = info.value
        assert isinstance(err, EOFError)
        assert isinstance(err, ValueError)
        assert isinstance(err, tfr.DataLossError)
        assert err.expected == expected
        assert err.available == available
        assert err.offset == len(prefix)
        assert err.index == 2
        assert f"record's {what}" in str(err)


def test_offset_and_index_bases() -> None:
    stream = tfr.encode_records([b"a", b"b"])
    damaged = _corrupt(stream, 17 + 12)  # data of the second record
    with pytest.raises(tfr.CorruptRecordError) as info:
        list(tfr.iter_records(damaged, offset=1000, index=10))
    assert info.value.offset == 1000 + 17 + 12
    assert info.value.index == 11


@pytest.mark.parametrize("length", [2**62, 2**64 - 1, 2**40])
def test_hostile_length_does_not_allocate(length: int) -> None:
    header = record_header(length)
    hostile = header + b"\0" * 4
    assert len(hostile) == 16
    tracemalloc.start()
    try:
        with pytest.raises(tfr.TruncatedRecordError) as info:
            list(tfr.iter_records(hostile))
        assert info.value.expected == length + 16
        assert info.value.available == 16
        # Fed as a stream of unknown size: nothing is returned, close() reports it.
        decoder = tfr.RecordDecoder()
        decoder.feed(hostile)
        assert decoder.records() == []
        decoder.feed(b"\0" * 1000)
        assert decoder.records() == []
        with pytest.raises(tfr.TruncatedRecordError):
            decoder.close()
        # With a known stream size the header alone is enough to reject it.
        sized = tfr.RecordDecoder(stream_size=16)
        sized.feed(hostile)
        with pytest.raises(tfr.TruncatedRecordError):
            sized.records()
        for verify in (True, False):
            with pytest.raises(tfr.TruncatedRecordError):
                list(tfr.iter_records(tfr.encode_record(b"ok") + hostile, verify=verify))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * 1024 * 1024


def test_verify_false_skips_crc_checks() -> None:
    records = [b"first", b"second", b"third"]
    stream = bytearray(tfr.encode_records(records))
    offsets = _offsets(records)
    stream[offsets[0] + 8] ^= 0xFF  # header CRC of record 0
    stream[offsets[1] + HEADER_SIZE] = ord("S")  # data of record 1
    stream[-1] ^= 0xFF  # footer of record 2
    damaged = bytes(stream)
    assert list(tfr.iter_records(damaged, verify=False)) == [b"first", b"Second", b"third"]
    assert _decode_in_chunks(damaged, 5, verify=False) == [b"first", b"Second", b"third"]
    with pytest.raises(tfr.CorruptRecordError):
        list(tfr.iter_records(damaged))


@settings(max_examples=80, deadline=None)
@given(
    records=st.lists(st.binary(max_size=60), min_size=1, max_size=8),
    where=st.integers(min_value=0),
    flip=st.integers(min_value=1, max_value=255),
)
def test_any_single_byte_change_is_detected(records: list[bytes], where: int, flip: int) -> None:
    stream = tfr.encode_records(records)
    pos = where % len(stream)
    damaged = stream[:pos] + bytes([stream[pos] ^ flip]) + stream[pos + 1 :]
    damaged_index = max(i for i, off in enumerate(_offsets(records)) if off <= pos)
    out: list[bytes] = []
    with pytest.raises(tfr.DataLossError) as info:
        out.extend(tfr.iter_records(damaged))
    assert out == records[:damaged_index]
    assert info.value.index == damaged_index
