"""Records handed to the parser as spans of the blocks read (``RecordSpans``), not copies.

``TFRecordDataset(...).parse(spec).batch(n)`` reads each block once and hands the parser
``(buffer, starts, lengths)``: every result and every error must be exactly what the
copying path (and one ``parse_example`` per batch) gives.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_parse_engine import KEYS, _records, _reference, _run, _same_runs, _specs

import tfrecord_lite as tfr
from tfrecord_lite._examples import _batches as _stream
from tfrecord_lite._examples._engines import _buffers as _extracted
from tfrecord_lite._examples._engines import _buffers as _fastparse
from tfrecord_lite._record import _framing, _scan
from tfrecord_lite._record._scan import RecordSpans, scan


def _spans_of(records: list[bytes]) -> RecordSpans:
    """The records framed in one buffer, as the reader's spans of it."""
    return scan(_framing.encode_records(records), spans=True).records  # type: ignore[return-value]


# --------------------------------------------------------------------------- the sequence


def test_spans_behave_as_the_list_of_records() -> None:
    rng = random.Random(1)
    records = [rng.randbytes(rng.randrange(40)) for _ in range(50)]
    spans = _spans_of(records)
    assert isinstance(spans, RecordSpans)
    assert len(spans) == 50 and list(spans) == records
    assert [spans[i] for i in range(-50, 50)] == records + records
    for sl in (
        slice(None),
        slice(3, 17),
        slice(None, None, 3),
        slice(5, 45, 7),
        slice(40, 10),
        slice(None, None, -1),
        slice(45, 2, -4),
    ):
        part = spans[sl]
        assert isinstance(part, RecordSpans) and list(part) == records[sl]
    assert spans.lengths().tolist() == [len(r) for r in records]
    assert spans.nbytes == sum(map(len, records))
    idx = np.array([0, 4, 5, 31, 49])
    assert list(spans.take(idx)) == [records[i] for i in idx]
    assert list(spans.take(np.array([7, 3, -1, 3]))) == [records[i] for i in (7, 3, -1, 3)]
    assert list(reversed(spans)) == records[::-1]
    with pytest.raises(IndexError):
        spans[50]
    with pytest.raises(IndexError):
        spans.take(np.array([1, 50]))


def test_joined_spans_merge_the_parts_of_one_buffer() -> None:
    a = [bytes([i]) * 30 for i in range(20)]
    b = [bytes([i]) * 9 for i in range(7)]
    sa, sb = _spans_of(a), _spans_of(b)
    whole = RecordSpans.join([sa[:5], sa[5:12], sb, sa[12:]])
    assert list(whole) == a[:12] + b + a[12:]
    # Consecutive slices of one block are one part again; the other block is its own.
    assert len(whole.parts) == 3
    assert list(whole[10:15]) == (a[:12] + b + a[12:])[10:15]
    flat = a[:12] + b + a[12:]
    assert list(whole.take(np.array([0, 11, 12, 18, 19, 26]))) == [
        flat[i] for i in (0, 11, 12, 18, 19, 26)
    ]
    assert list(whole[::-3]) == flat[::-3]


def test_rows_are_a_view_of_evenly_spaced_records_and_a_copy_otherwise() -> None:
    same = [bytes([i]) * 24 for i in range(10)]
    rows = _spans_of(same).rows(24)
    assert rows.shape == (10, 24) and not rows.flags.writeable
    assert [bytes(r) for r in rows] == same
    # Records of one length that are not evenly spaced in the buffer (others between).
    mixed = [bytes([i]) * (24 if i % 3 else 5) for i in range(12)]
    spans = _spans_of(mixed)
    keep = np.array([i for i in range(12) if i % 3])
    assert [bytes(r) for r in spans.take(keep).rows(24)] == [mixed[i] for i in keep]
    with pytest.raises(ValueError, match="24 bytes"):
        spans.rows(24)


def test_contiguous_holds_every_record_then_zero_padding() -> None:
    a, b = [b"abc", b"", b"defgh"], [b"ijklmnop", b"q"]
    spans = RecordSpans.join([_spans_of(a), _spans_of(b)[1:]])
    buf, starts, zero = spans.contiguous(16)
    assert bytes(buf[-16:]) == bytes(16) and buf[zero] == 0
    lengths = spans.lengths()
    assert [bytes(buf[s : s + n]) for s, n in zip(starts.tolist(), lengths.tolist())] == a + b[1:]


def test_one_block_with_room_after_its_records_is_used_where_it_is() -> None:
    records = [bytes([0xFF]) * 40 for _ in range(6)]
    spans = _spans_of(records)
    buf, starts, zero = spans[1:4].contiguous(16)
    (part,) = spans.parts
    assert buf is part[0]  # no copy: the block itself
    assert buf[zero] == 0 and zero < int(starts[0])
    assert [buf[s : s + 40] for s in starts.tolist()] == records[1:4]
    # The last records of the block have no room after them: copied, then padded.
    buf, starts, zero = spans[4:].contiguous(16)
    assert buf is not part[0] and bytes(buf[-16:]) == bytes(16) and buf[zero] == 0


@pytest.mark.parametrize("spans", [False, True])
def test_scan_finds_the_same_records_and_damage_either_way(spans: bool) -> None:
    rng = random.Random(5)
    records = [rng.randbytes(rng.choice([7, 7, 7, 300])) for _ in range(40)]
    framed = bytearray(_framing.encode_records(records))
    whole = scan(bytes(framed), spans=spans)
    assert list(whole.records) == records and whole.problem is None
    assert isinstance(whole.records, RecordSpans) is spans
    # A flipped data byte in record 17: the 17 before it come out, then a data error.
    offset = sum(len(r) + 16 for r in records[:17]) + 12
    framed[offset] ^= 1
    bad = scan(bytes(framed), spans=spans)
    assert list(bad.records) == records[:17] and bad.problem == "data"
    assert bad.consumed == offset - 12
    # A cut in the middle of record 30: the 30 before it, and how many bytes it needs.
    cut = sum(len(r) + 16 for r in records[:30]) + 5
    part = scan(bytes(framed[:cut])[offset + 400 :], spans=spans)
    assert part.need > 0


def test_spans_only_of_bytes_buffers() -> None:
    records = [b"x" * 100] * 20
    framed = _framing.encode_records(records)
    assert isinstance(scan(framed, spans=True).records, RecordSpans)
    # A bytearray may change after the scan: its records are copied out.
    assert isinstance(scan(bytearray(framed), spans=True).records, list)
    assert isinstance(scan(framed).records, list)


# --------------------------------------------------------------------------- the pipeline


def _write(path: Any, records: list[bytes]) -> str:
    with tfr.TFRecordWriter(str(path)) as w:
        for r in records:
            w.write(r)
    return str(path)


@pytest.mark.parametrize("messy", [False, True])
@pytest.mark.parametrize("drop_remainder", [False, True])
def test_dataset_parse_batch_over_spans_equals_parse_example(
    tmp_path: Any, monkeypatch: Any, messy: bool, drop_remainder: bool
) -> None:
    monkeypatch.setattr(_stream, "CHUNK_RECORDS", 96)
    rng = random.Random(11 + messy)
    records = _records(rng, 700, KEYS, messy=messy)
    files = [
        _write(tmp_path / "a.tfrecord", records[:450]),
        _write(tmp_path / "b.tfrecord", records[450:]),
    ]
    specs = _specs(random.Random(3), KEYS)
    batch = 40
    n = 700 - 700 % batch if drop_remainder else 700
    batches = [records[i : min(i + batch, n)] for i in range(0, n, batch)]
    expect = _reference(batches, specs)
    # Small blocks: batches span blocks and files.
    ds = tfr.TFRecordDataset(files, buffer_size=4096)
    got = _run(ds.parse(specs).batch(batch, drop_remainder=drop_remainder))
    _same_runs(got, expect)


def test_values_outlive_the_reused_work_array_of_joined_blocks(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """Spans of several blocks are joined into one reused work array per thread; every
    value handed out is a copy, intact after later windows reuse the array."""
    monkeypatch.setattr(_fastparse, "WINDOW_BYTES", 20_000)  # several windows per chunk
    monkeypatch.setattr(_stream, "CHUNK_RECORDS", 40)
    monkeypatch.setattr(_extracted, "_PAD", 1 << 20)  # no block has room after: all joined
    joins: list[int] = []
    real = _scan.scratch

    def spy(name: str, size: int) -> np.ndarray:
        if name == "join":
            joins.append(size)
        return real(name, size)

    monkeypatch.setattr(_scan, "scratch", spy)
    rng = random.Random(5)
    records = [
        tfr.encode_example(
            {
                "blob": rng.randbytes(rng.randrange(100, 3000)),  # long values: one by one
                "tag": rng.randbytes(rng.randrange(0, 40)),  # short ones: gathered
                "score": [rng.random() for _ in range(rng.randrange(1, 4))],
                "label": rng.randrange(-(2**40), 2**40),
            }
        )
        for _ in range(300)
    ]
    path = _write(tmp_path / "w.tfrecord", records)
    specs = {
        "blob": tfr.FixedLenFeature([], tfr.string),
        "tag": tfr.FixedLenFeature([], tfr.string),
        "score": tfr.VarLenFeature(tfr.float32),
        "label": tfr.FixedLenFeature([], tfr.int64),
    }
    batches = [records[i : i + 64] for i in range(0, 300, 64)]
    # Small blocks: every window joins several of them.
    got = _run(tfr.TFRecordDataset(path, buffer_size=4096).parse(specs).batch(64))
    assert len(joins) > 1  # the work array was reused
    assert all(type(v) is bytes for _, b in got for v in b["blob"])
    assert all(type(v) is bytes for _, b in got for v in b["tag"])
    _same_runs(got, _reference(batches, specs))


@pytest.fixture
def parsed_types(monkeypatch: Any) -> list[type]:
    """The type of every batch the chunked parser is handed."""
    seen: list[type] = []
    real = _stream._parse_group

    def spy(group: list[Any], plan: Any) -> Any:
        seen.extend(type(b) for b in group)
        return real(group, plan)

    monkeypatch.setattr(_stream, "_parse_group", spy)
    return seen


def test_spans_reach_the_parser(tmp_path: Any, parsed_types: list[type]) -> None:
    records = _records(random.Random(2), 300, KEYS, messy=False)
    path = _write(tmp_path / "s.tfrecord", records)
    list(tfr.TFRecordDataset(path).parse({"fare": tfr.VarLenFeature(tfr.float32)}).batch(64))
    assert parsed_types and set(parsed_types) == {RecordSpans}


def test_a_shard_and_a_window_of_spans_are_the_same_records(
    tmp_path: Any, parsed_types: list[type]
) -> None:
    records = _records(random.Random(8), 500, KEYS, messy=False)
    path = _write(tmp_path / "w.tfrecord", records)
    spec = {"fare": tfr.VarLenFeature(tfr.float32)}
    ds = tfr.TFRecordDataset(path, buffer_size=2048)
    for pipeline, chosen in (
        (ds.shard(3, 1).parse(spec).batch(16), records[1::3]),
        (ds._derive(windows={path: (37, 222)}).parse(spec).batch(16), records[37:259]),
    ):
        parsed_types.clear()
        batches = [chosen[i : i + 16] for i in range(0, len(chosen), 16)]
        _same_runs(_run(pipeline), _reference(batches, spec))
        assert set(parsed_types) == {RecordSpans}


def test_a_corrupt_record_stops_spans_at_the_same_place(tmp_path: Any) -> None:
    records = _records(random.Random(4), 400, KEYS, messy=False)
    path = _write(tmp_path / "c.tfrecord", records)
    data = bytearray(Path(path).read_bytes())
    offset = sum(len(r) + 16 for r in records[:250]) + 12
    data[offset + len(records[250]) // 2] ^= 0x40
    Path(path).write_bytes(bytes(data))
    spec = {"fare": tfr.VarLenFeature(tfr.float32)}
    got = []
    with pytest.raises(tfr.CorruptRecordError) as info:
        for b in tfr.TFRecordDataset(path, buffer_size=4096).parse(spec).batch(50):
            got.append(b)
    assert info.value.index == 250 and info.value.offset == offset
    assert len(got) == 5  # the batches wholly before the damaged record


def test_interleaved_files_still_read_as_lists(tmp_path: Any, parsed_types: list[type]) -> None:
    records = _records(random.Random(6), 200, KEYS, messy=False)
    files = [_write(tmp_path / f"{k}.tfrecord", records[k::2]) for k in range(2)]
    spec = {"fare": tfr.VarLenFeature(tfr.float32)}
    ds = tfr.TFRecordDataset(files, num_parallel_reads=2)
    batches = [records[i : i + 25] for i in range(0, 200, 25)]
    _same_runs(_run(ds.parse(spec).batch(25)), _reference(batches, spec))
    assert set(parsed_types) == {list}


def test_blocks_grow_while_records_are_big_unless_the_block_size_is_given(
    tmp_path: Any, monkeypatch: Any
) -> None:
    seen: list[Any] = []
    real = _stream._parse_group

    def spy(group: list[Any], plan: Any) -> Any:
        seen.extend(group)
        return real(group, plan)

    monkeypatch.setattr(_stream, "_parse_group", spy)
    rng = random.Random(3)
    blobs = [rng.randbytes(rng.randrange(30_000, 50_000)) for _ in range(400)]
    path = str(tmp_path / "big.tfrecord")
    tfr.write_examples(path, {"blob": blobs, "n": np.arange(400)})
    spec = {"blob": tfr.FixedLenFeature([], tfr.string), "n": tfr.FixedLenFeature([], tfr.int64)}
    for buffer_size, biggest in ((None, 4 << 20), (2 << 20, 2 << 20)):
        seen.clear()
        got = list(tfr.TFRecordDataset(path, buffer_size=buffer_size).parse(spec).batch(100))
        assert [b["n"].tolist() for b in got] == [
            list(range(k, k + 100)) for k in (0, 100, 200, 300)
        ]
        assert [x for b in got for x in b["blob"].tolist()] == blobs
        sizes = {len(part[0]) for spans in seen for part in spans.parts}
        assert max(sizes) == biggest


def _prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "tfrecord_lite-prefetch"]


def _big_file(tmp_path: Any, n: int = 400) -> tuple[str, list[bytes]]:
    rng = random.Random(9)
    blobs = [rng.randbytes(rng.randrange(20_000, 40_000)) for _ in range(n)]
    path = str(tmp_path / "ahead.tfrecord")
    tfr.write_examples(path, {"blob": blobs, "n": np.arange(n)})
    return path, blobs


BIG_SPEC = {"blob": tfr.FixedLenFeature([], tfr.string), "n": tfr.FixedLenFeature([], tfr.int64)}


def test_big_records_are_read_ahead_in_a_thread_that_stops_with_the_loop(tmp_path: Any) -> None:
    path, blobs = _big_file(tmp_path)
    before = len(_prefetch_threads())
    it = iter(tfr.TFRecordDataset(path).parse(BIG_SPEC).batch(10))
    first = next(it)
    assert first["n"].tolist() == list(range(10))
    assert len(_prefetch_threads()) == before + 1  # reading ahead of the parser
    rest = list(it)
    assert [x for b in [first, *rest] for x in b["blob"].tolist()] == blobs
    # A loop left early stops the thread too.
    it = iter(tfr.TFRecordDataset(path).parse(BIG_SPEC).batch(10))
    next(it)
    it.close()
    for t in _prefetch_threads()[before:]:
        t.join(5)
    assert len(_prefetch_threads()) == before


def test_small_records_are_not_read_ahead(tmp_path: Any) -> None:
    records = _records(random.Random(2), 300, KEYS, messy=False)
    path = _write(tmp_path / "small.tfrecord", records)
    before = len(_prefetch_threads())
    it = iter(tfr.TFRecordDataset(path).parse({"fare": tfr.VarLenFeature(tfr.float32)}).batch(8))
    next(it)
    assert len(_prefetch_threads()) == before
    it.close()


def test_a_damaged_record_read_ahead_raises_after_the_records_before_it(tmp_path: Any) -> None:
    path, _ = _big_file(tmp_path)
    data = bytearray(Path(path).read_bytes())
    records = list(tfr.tf_record_iterator(path))
    offset = sum(len(r) + 16 for r in records[:77]) + 12
    data[offset + 100] ^= 0x01
    Path(path).write_bytes(bytes(data))
    got: list[int] = []
    with pytest.raises(tfr.CorruptRecordError) as info:
        for b in tfr.TFRecordDataset(path).parse(BIG_SPEC).batch(10):
            got.extend(b["n"].tolist())
    assert info.value.index == 77 and info.value.offset == offset
    assert got == list(range(70))  # the batches wholly before record 77
