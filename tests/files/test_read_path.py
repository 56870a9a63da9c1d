"""The plain-file read path: blocks that start at an incomplete record (read again from its
start instead of joined onto the previous block's tail) give exactly the records and errors
of decoding the whole stream at once, for every block size and record size."""

from __future__ import annotations

import pathlib
import random

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._record import _decoder


def records_for(seed: int, n: int) -> list[bytes]:
    rng = random.Random(seed)
    sizes = [0, 1, 11, 12, 13, 100, 1000, 5000, 70_000]
    return [rng.randbytes(rng.choice(sizes) + rng.randint(0, 3)) for _ in range(n)]


def whole(blob: bytes) -> tuple[list[bytes], object]:
    """Records and error of decoding the stream in one piece (the reference)."""
    got: list[bytes] = []
    try:
        for r in tfr.iter_records(blob):
            got.append(r)
    except tfr.TFRecordError as err:
        return got, (type(err), err.offset, err.index)
    return got, None


def via_file(path: pathlib.Path, buffer_size: int, iterator: bool) -> tuple[list[bytes], object]:
    got: list[bytes] = []
    try:
        if iterator:
            # tf_record_iterator reads 1 MiB blocks: the files here are bigger.
            for r in tfr.tf_record_iterator(path, ""):
                got.append(r)
        else:
            for r in tfr.read_records(path, "", buffer_size=buffer_size):
                got.append(r)
    except tfr.TFRecordError as err:
        return got, (type(err), err.offset, err.index)
    return got, None


@pytest.mark.parametrize(
    ("buffer_size", "iterator"),
    [*((b, False) for b in (13, 64, 1000, 4096, 65_536, 2**20)), (2**20, True)],
)
def test_blocks_give_the_whole_streams_records(
    tmp_path: pathlib.Path, buffer_size: int, iterator: bool
) -> None:
    records = records_for(buffer_size, 300)
    blob = tfr.encode_records(records)
    path = tmp_path / "f.tfrecord"
    rng = random.Random(buffer_size)
    cuts = [len(blob), *(rng.randrange(len(blob)) for _ in range(4))]
    for cut in cuts:
        path.write_bytes(blob[:cut])
        assert via_file(path, buffer_size, iterator) == whole(blob[:cut]), cut
    # A damaged data CRC in the middle, and a damaged length field.
    for pos in (len(tfr.encode_records(records[:150])) + 12, len(tfr.encode_records(records[:77]))):
        bad = bytearray(blob)
        bad[pos] ^= 0x40
        path.write_bytes(bytes(bad))
        assert via_file(path, buffer_size, iterator) == whole(bytes(bad)), pos


def test_release_only_when_waiting_for_a_record_that_fits() -> None:
    rec = tfr.encode_record(b"x" * 100)  # 116 bytes
    d = _decoder.RecordDecoder()
    d.feed(rec + rec[:50])
    assert d.records() == [b"x" * 100]
    assert d._release_tail(4096) == 50  # the head of the second record: read it again
    assert d.pending == 0 and d.offset == 116
    d.feed(rec)
    assert d.records() == [b"x" * 100]
    assert d.offset == 232
    d.feed(rec[:50])
    assert d._release_tail(100) == 0  # the record does not fit in a block of 100
    d.feed(rec[50:])
    assert d.records() == [b"x" * 100]
    skip = _decoder.RecordDecoder(on_error="skip")
    skip.feed(rec + rec[:50])
    assert skip.records() == [b"x" * 100]
    assert skip._release_tail(4096) == 0  # only in on_error="raise"
