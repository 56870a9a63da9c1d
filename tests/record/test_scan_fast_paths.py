"""The scan's fast paths against its plain per-record loops.

* One CRC for a run of records (``_scan._run_ok``): the data CRCs of a run are
  checked with a single CRC over the run, falling back to one CRC per record when
  that does not match.
* Following length fields (``_lengths.follow_lengths``): a loop that only reads
  and adds, with which records are complete sorted out afterwards (the loop that
  checks every step is used when ``max_records`` caps the count).

Whatever the damage, the outcome (records, offset, problem, need, claim) must be
the per-record loop's, and every single damaged record must be caught.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from tfrecord_lite._record import _crc, _format, _scan
from tfrecord_lite._record._framing import encode_records


def _outcome(buf: bytes, per_record: bool, monkeypatch: Any, **kw: Any) -> tuple[Any, ...]:
    with monkeypatch.context() as m:
        if per_record:
            m.setattr(_scan, "RUN_CRC_BELOW", 0)
        got = _scan.scan(buf, **kw)
    return list(got.records), got.consumed, got.problem, got.need


@pytest.fixture
def crc_calls(monkeypatch: Any) -> list[int]:
    """The length of every buffer the scan (and the header CRCs it asks for) hands the
    CRC backend."""
    calls: list[int] = []

    def counting(data: Any) -> int:
        calls.append(len(data))
        return _crc.crc32c(data)

    monkeypatch.setattr(_scan, "crc32c", counting)
    monkeypatch.setattr(_format, "crc32c", counting)  # header CRCs (length_crc)
    return calls


@pytest.mark.parametrize("length", [0, 1, 7, 100, 842, 5000, -300, -20_000])
@pytest.mark.parametrize("spans", [False, True])
def test_same_outcome_as_one_crc_per_record(length: int, spans: bool, monkeypatch: Any) -> None:
    """``length`` < 0: records of lengths up to ``-length``, mixed."""
    rng = random.Random(length)
    for _ in range(60):
        sizes = [length if length >= 0 else rng.randrange(-length) for _ in range(40)]
        records = [rng.randbytes(k) for k in sizes[: rng.randrange(1, 40)]]
        buf = bytearray(encode_records(records))
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        cut = rng.choice([len(buf), rng.randrange(len(buf) + 1)])
        damaged = bytes(buf[:cut])
        run = _outcome(damaged, False, monkeypatch, spans=spans)
        assert run == _outcome(damaged, True, monkeypatch, spans=spans)
        if damaged == encode_records(records):
            assert run[0] == records and run[2] is None


@pytest.mark.parametrize("mixed", [False, True])
def test_every_damaged_data_or_crc_byte_is_caught(mixed: bool) -> None:
    """Each byte of each record's data and stored CRC, flipped in two ways."""
    rng = random.Random(3)
    count = 9
    records = [rng.randbytes(rng.randrange(30) if mixed else 13) for _ in range(count)]
    buf = encode_records(records)
    starts = [len(encode_records(records[:i])) for i in range(count)]
    for index in range(count):
        # Its data and stored CRC (the header has its own check).
        for at in range(12, len(records[index]) + 16):
            for flip in (0x01, 0xA5):
                damaged = bytearray(buf)
                damaged[starts[index] + at] ^= flip
                got = _scan.scan(bytes(damaged))
                assert got.problem == "data" and len(got.records) == index
                assert got.records == records[:index] and got.consumed == starts[index]


def test_a_run_takes_one_crc_call_not_one_per_record(
    crc_calls: list[int], monkeypatch: Any
) -> None:
    records = [bytes([i]) * 300 for i in range(200)]
    buf = encode_records(records)
    _scan._valid_run_crc.cache_clear()
    _format.length_crc.cache_clear()
    crc_calls.clear()
    # The first run of this length also computes its length's header CRC (8 bytes)
    # and its reference CRC; both are kept.
    assert list(_scan.scan(buf).records) == records
    assert crc_calls[0] == 8 and len(crc_calls) == 4
    crc_calls.clear()
    assert list(_scan.scan(buf).records) == records
    assert crc_calls == [len(buf)]  # one CRC over the whole run
    crc_calls.clear()
    monkeypatch.setattr(_scan, "RUN_CRC_BELOW", 0)
    assert list(_scan.scan(buf).records) == records
    assert crc_calls == [300] * 200  # one per record (the header CRC of 300 is kept)


def test_a_run_of_mixed_lengths_takes_two_crc_calls(crc_calls: list[int]) -> None:
    records = [bytes([i]) * (100 + i % 7) for i in range(200)]
    buf = encode_records(records)
    _format.length_crc.cache_clear()
    crc_calls.clear()
    assert list(_scan.scan(buf).records) == records
    # Seven header CRCs (8 bytes each; kept), the zero-filled CRC of each length
    # (kept), then the run and the valid run of zero-filled records it is compared
    # with (both the whole buffer).
    assert crc_calls[:7] == [8] * 7 and crc_calls[-2:] == [len(buf), len(buf)]
    crc_calls.clear()
    assert list(_scan.scan(buf).records) == records
    assert crc_calls == [len(buf), len(buf)]


def test_long_records_and_short_runs_are_checked_one_by_one(crc_calls: list[int]) -> None:
    for records in (
        [b"x" * _scan.RUN_CRC_BELOW] * 5,  # long records: the CRC itself costs more than a call
        [b"y" * 20] * (_scan._RUN_MIN - 1),  # too few records for a run
        # varied lengths above VARIED_RUN_CRC_BELOW: each length's zero CRC and the
        # zero-filled run would cost more than a call per record
        [b"z" * (_scan.VARIED_RUN_CRC_BELOW + i) for i in range(8)],
    ):
        buf = encode_records(records)
        crc_calls.clear()
        assert list(_scan.scan(buf).records) == records
        lengths = {len(r) for r in records}
        assert sum(n in lengths for n in crc_calls) == len(records)
        assert max(crc_calls) < len(buf)  # no CRC over the run


def test_following_lengths_finds_what_the_checked_loop_finds() -> None:
    """Damaged lengths (huge, past the end, in a cut header) included."""
    rng = random.Random(7)
    for _ in range(1500):
        records = [
            rng.randbytes(rng.choice([0, 1, 5, 30, rng.randrange(200)]))
            for _ in range(rng.randrange(0, 30))
        ]
        buf = bytearray(encode_records(records))
        for _ in range(rng.choice([0, 0, 1, 2])):
            if buf:
                buf[rng.randrange(len(buf))] = rng.randrange(256)
        if rng.random() < 0.2 and len(buf) > 8:
            at = rng.randrange(len(buf) - 8)
            buf[at : at + 8] = rng.randrange(2**64).to_bytes(8, "little")
        data = bytes(buf[: rng.choice([len(buf), rng.randrange(len(buf) + 1)])])
        limit = rng.choice([None, len(data), len(data) + rng.randrange(100)])
        fast = _scan._boundaries(data, len(data), -1, limit)
        checked = _scan._boundaries(data, len(data), 10**9, limit)  # the checked loop
        assert fast[0].tolist() == checked[0].tolist()
        assert fast[1].tolist() == checked[1].tolist()
        assert fast[2:] == checked[2:]
        for verify in (True, False):
            a = _scan.scan(data, verify=verify, limit=limit)
            b = _scan.scan(data, verify=verify, limit=limit, max_records=10**9)
            assert (list(a.records), a.consumed, a.problem, a.need) == (
                list(b.records),
                b.consumed,
                b.problem,
                b.need,
            )
