"""Damaged files, crash-safe writing, appending, large files, concurrency (docs/reliability.md).

* on_error="raise" | "skip" | "stop" in RecordDecoder, read_records, TFRecordReader,
  tf_record_iterator: what is skipped, where the reader resumes, what is reported;
* TFRecordWriter(atomic=True), flush(), a writer killed with SIGKILL;
* TFRecordWriter(mode="a", repair=...);
* > 4 GiB files (sparse) and > 2 GiB records (length math on a generated stream);
* writers shared between threads and processes, readers in parallel.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
import warnings
import zlib
from pathlib import Path
from typing import Any, Optional

import pytest
from _helpers import run_in_fork
from conftest import COMPRESSIONS, make_records, read_all, write_tfrecord

import tfrecord_lite as tfr
from tfrecord_lite._files import FileInUseError, _inflate, _stream
from tfrecord_lite._files._salvage import (
    Damage,
    Record,
    find_next_record_in_file,
    salvage,
    salvage_file,
)
from tfrecord_lite._record._crc import crc32c_combine, crc32c_of_zeros, mask
from tfrecord_lite._record._format import HEADER_SIZE, RECORD_OVERHEAD, record_header

DATA = Path(__file__).resolve().parents[1] / "data"
REPO = Path(__file__).resolve().parents[2]


def _offsets(records: list[bytes]) -> list[int]:
    out, pos = [], 0
    for r in records:
        out.append(pos)
        pos += len(r) + RECORD_OVERHEAD
    return out


def _compress(blob: bytes, compression: str) -> bytes:
    if compression == "GZIP":
        return gzip.compress(blob, mtime=0)
    if compression == "ZLIB":
        return zlib.compress(blob)
    return blob


def _read(
    source: Any, on_error: str, compression: Any = "auto", **kw: Any
) -> tuple[list[bytes], list[tfr.SkipReport], Optional[Exception]]:
    reports: list[tfr.SkipReport] = []
    out: list[bytes] = []
    try:
        for r in tfr.read_records(
            source, compression, on_error=on_error, on_skip=reports.append, **kw
        ):
            out.append(r)
    except tfr.TFRecordError as err:
        return out, reports, err
    return out, reports, None


def _key(rep: Any) -> tuple[Any, ...]:
    err = rep.error
    return (
        rep.offset,
        rep.length,
        rep.reason,
        rep.index,
        rep.exact,
        rep.to_end,
        type(err),
        err.offset,
    )


def _decode(stream: bytes, chunk: Optional[int], **kw: Any) -> tuple[list[bytes], list[Any]]:
    decoder = tfr.RecordDecoder(**kw)
    out: list[bytes] = []
    pieces = (
        [stream] if chunk is None else [stream[i : i + chunk] for i in range(0, len(stream), chunk)]
    )
    for piece in pieces:
        decoder.feed(piece)
        while True:
            batch = decoder.records()
            if not batch:
                break
            out += batch
    out += decoder.close()
    return out, decoder.skipped


# --------------------------------------------------------------------------- skip / stop


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_skip_a_bad_data_crc_exactly(tmp_path: Path, compression: str) -> None:
    records = make_records(12, seed=40)
    offsets = _offsets(records)
    stream = bytearray(tfr.encode_records(records))
    stream[offsets[5] + HEADER_SIZE + 1 if records[5] else offsets[5] + HEADER_SIZE] ^= 0x20
    path = tmp_path / "bad.tfrecord"
    path.write_bytes(_compress(bytes(stream), compression))
    out, reports, err = _read(path, "skip")
    assert err is None
    assert out == records[:5] + records[6:]
    (rep,) = reports
    assert (rep.path, rep.offset, rep.length, rep.reason, rep.index) == (
        str(path),
        offsets[5],
        offsets[6] - offsets[5],
        "data",
        5,
    )
    assert rep.exact and not rep.to_end and rep.end == offsets[6]
    assert isinstance(rep.error, tfr.CorruptRecordError) and rep.error.part == "data"
    assert rep.error.path == str(path) and rep.error.offset == offsets[5] + HEADER_SIZE
    assert str(path) in rep.describe() and "skipped" in rep.describe()
    # raise mode is unchanged: the records before it, then the error
    out, _, err = _read(path, "raise")
    assert out == records[:5] and isinstance(err, tfr.CorruptRecordError)
    # stop: the records before it, reported, then quietly the end of the file
    out, reports, err = _read(path, "stop")
    assert err is None and out == records[:5]
    (rep,) = reports
    assert rep.reason == "data" and rep.to_end and rep.offset == offsets[5]
    if compression == "":
        assert rep.length == len(stream) - offsets[5]


def test_skip_a_bad_header_resyncs_on_the_next_whole_record(tmp_path: Path) -> None:
    records = make_records(10, seed=41)
    offsets = _offsets(records)
    stream = bytearray(tfr.encode_records(records))
    stream[offsets[4] + 3] ^= 0x01  # the length of record 4: its size is unknown now
    path = tmp_path / "f"
    path.write_bytes(bytes(stream))
    out, reports, err = _read(path, "skip")
    assert err is None and out == records[:4] + records[5:]
    (rep,) = reports
    assert (rep.reason, rep.offset, rep.length, rep.exact) == (
        "header",
        offsets[4],
        offsets[5] - offsets[4],
        False,
    )
    assert isinstance(rep.error, tfr.CorruptRecordError) and rep.error.part == "header"


@pytest.mark.parametrize("damage", ["insert", "delete", "zero-fill", "overwrite"])
@pytest.mark.parametrize("chunk", [None, 1, 7, 64, 4096])
def test_skip_shifted_and_overwritten_stretches(damage: str, chunk: Optional[int]) -> None:
    records = make_records(20, seed=42, max_len=120)
    offsets = _offsets(records)
    stream = bytearray(tfr.encode_records(records))
    rng = random.Random(7)
    a = offsets[6] + 5
    if damage == "insert":
        stream[a:a] = rng.randbytes(333)
        lost = [6]
    elif damage == "delete":
        del stream[a : a + 3]
        lost = [6]
    elif damage == "zero-fill":  # a lost disk block: records 6 .. 9 overwritten
        stream[offsets[6] : offsets[10] - 1] = bytes(offsets[10] - 1 - offsets[6])
        lost = [6, 7, 8, 9]
    else:
        stream[offsets[6] : offsets[8]] = rng.randbytes(offsets[8] - offsets[6])
        lost = [6, 7]
    expected = [r for i, r in enumerate(records) if i not in lost]
    out, reports = _decode(bytes(stream), chunk, on_error="skip")
    assert out == expected
    assert len(reports) == 1 and reports[0].offset == offsets[6]
    # A known stream size changes nothing but how early a bad length is rejected.
    out2, reports2 = _decode(bytes(stream), chunk, on_error="skip", stream_size=len(stream))
    assert out2 == expected and list(map(_key, reports2)) == list(map(_key, reports))


def test_skip_every_damaged_record_of_a_file() -> None:
    records = make_records(40, seed=43, max_len=60)
    offsets = _offsets(records)
    stream = bytearray(tfr.encode_records(records))
    bad = {3, 4, 17, 30, 39}
    for i in bad:
        stream[offsets[i] + (2 if i % 2 else HEADER_SIZE)] ^= 0xFF
    for chunk in (None, 1, 13, 500):
        out, reports = _decode(bytes(stream), chunk, on_error="skip")
        assert out == [r for i, r in enumerate(records) if i not in bad]
        assert sum(r.length for r in reports) == sum(len(records[i]) + RECORD_OVERHEAD for i in bad)
        # Records 3 (header) and 4 (data) go in one resync; each skip counts as one
        # record, so indexes after a resync are counts, not positions (exact=False).
        assert [(r.index, r.reason, r.exact) for r in reports] == [
            (3, "header", False),
            (16, "header", False),
            (29, "data", True),
            (38, "header", False),
        ]
        assert reports[-1].to_end


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("cut", [1, 11, 12, 20, -1])
def test_a_truncated_tail_is_reported_never_silent(
    tmp_path: Path, compression: str, cut: int
) -> None:
    records = [*make_records(6, seed=44, max_len=40), b"last record" * 3]
    stream = tfr.encode_records(records)
    last = _offsets(records)[-1]
    end = last + cut if cut > 0 else len(stream) + cut
    path = tmp_path / "cut"
    path.write_bytes(_compress(stream[:end], compression))
    for mode in ("skip", "stop"):
        out, reports, err = _read(path, mode)
        assert err is None and out == records[:-1]
        (rep,) = reports
        assert (rep.reason, rep.offset, rep.to_end) == ("truncated", last, True)
        assert rep.length == end - last
        assert isinstance(rep.error, tfr.TruncatedRecordError)
    out, _, err = _read(path, "raise")
    assert out == records[:-1] and isinstance(err, tfr.TruncatedRecordError)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_an_unfinished_compressed_stream_is_reported(tmp_path: Path, compression: str) -> None:
    records = make_records(8, seed=45)
    path = tmp_path / "open.tfrecord"
    writer = tfr.TFRecordWriter(path, compression)
    writer.write_all(records)
    writer.flush()  # readable, but no end marker yet
    try:
        for mode in ("skip", "stop"):
            out, reports, err = _read(path, mode)
            assert err is None and out == records
            (rep,) = reports
            assert (rep.reason, rep.length, rep.to_end) == ("truncated", 0, True)
            assert rep.offset == len(tfr.encode_records(records)) and rep.index == 8
            assert "end marker" in rep.error.message
    finally:
        writer.close()


@pytest.mark.parametrize("name", ["corrupt-deflate.gzip", "corrupt-deflate.zlib"])
def test_a_damaged_deflate_stream_skips_the_rest_of_the_file(tmp_path: Path, name: str) -> None:
    damaged = DATA / f"{name}.tfrecord"
    expect = json.loads((DATA / f"{name}.json").read_text())["expect"]
    good = write_tfrecord(tmp_path / "good", [b"next file"])
    reports: list[tfr.SkipReport] = []
    with tfr.TFRecordReader([damaged, good], on_error="skip", on_skip=reports.append) as reader:
        out = list(reader)
    assert out[-1] == b"next file"  # the reader moved on to the next file
    written = [_fingerprint(e) for e in json.loads((DATA / f"{name}.json").read_text())["records"]]
    assert _is_subsequence([_digest(r) for r in out[:-1]], written)
    assert len(out) - 1 >= expect.get("records_min", expect.get("records", 0))
    # The damage garbles the decompressed bytes first (a record fails its CRC; the
    # next intact record is found), then the stream's own check fails: the rest.
    rep = reports[-1]
    assert all(r.reason == "data" for r in reports[:-1])
    assert rep.reason == "compression" and rep.length is None and rep.to_end
    assert isinstance(rep.error, tfr.CompressionError) and rep.path == str(damaged)
    assert reader.skipped == reports
    assert reader.bytes_skipped == sum(r.length or 0 for r in reports[:-1])


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_skipping_inside_a_compressed_stream(compression: str) -> None:
    records = make_records(30, seed=46)
    offsets = _offsets(records)
    stream = bytearray(tfr.encode_records(records))
    stream[offsets[10] + 4] ^= 0x08  # header of record 10
    stream[offsets[20] + HEADER_SIZE] ^= 0x08  # data of record 20
    blob = _compress(bytes(stream), compression)
    for buffer_size in (1, 100, 1 << 20):
        out, reports, err = _read(io.BytesIO(blob), "skip", compression, buffer_size=buffer_size)
        assert err is None
        assert out == [r for i, r in enumerate(records) if i not in (10, 20)]
        assert [(r.reason, r.offset) for r in reports] == [
            ("header", offsets[10]),
            ("data", offsets[20]),
        ]


def test_sidecar_fixtures_with_skip_and_stop() -> None:
    # Every damaged file TensorFlow's writer made: "stop" gives exactly the records
    # "raise" gives before its error; "skip" never gives a record that is not in the
    # file, and at least those; and something is always reported.
    checked = 0
    for sidecar in sorted(DATA.glob("*.json")):
        meta = json.loads(sidecar.read_text())
        error = meta["expect"].get("error")
        if not error:
            continue
        path = DATA / meta["fixture"]
        written = [_fingerprint(e) for e in meta["records"]]
        comp = meta["compression"] or None
        base, _, raise_err = _read(path, "raise", comp)
        assert raise_err is not None, sidecar.name
        out, reports, err = _read(path, "stop", comp)
        assert err is None and out == base and len(reports) == 1, sidecar.name
        assert type(reports[0].error) is type(raise_err), sidecar.name
        out, reports, err = _read(path, "skip", comp)
        assert err is None and reports, sidecar.name
        assert out[: len(base)] == base, sidecar.name
        assert _is_subsequence([_digest(r) for r in out], written), sidecar.name
        checked += 1
    assert checked >= 15


def _fingerprint(entry: dict[str, Any]) -> tuple[int, str]:
    return entry["length"], entry.get("sha256") or hashlib.sha256(
        bytes.fromhex(entry["hex"])
    ).hexdigest()


def _digest(record: bytes) -> tuple[int, str]:
    return len(record), hashlib.sha256(record).hexdigest()


def _is_subsequence(items: list[Any], sequence: list[Any]) -> bool:
    it = iter(sequence)
    return all(any(x == y for y in it) for x in items)


def test_data_crc_fixture_skips_exactly_record_3() -> None:
    for name in ("corrupt-data.plain", "corrupt-data-crc.plain", "corrupt-data.gzip"):
        meta = json.loads((DATA / f"{name}.json").read_text())
        out, reports, _ = _read(DATA / meta["fixture"], "skip")
        written = [_fingerprint(e) for e in meta["records"]]
        assert [_digest(r) for r in out] == written[:3] + written[4:]
        assert reports[0].exact and reports[0].index == 3


def test_without_on_skip_each_skip_warns(tmp_path: Path) -> None:
    records = [b"a", b"b", b"c"]
    stream = bytearray(tfr.encode_records(records))
    stream[17 + HEADER_SIZE] ^= 1
    path = tmp_path / "f"
    path.write_bytes(bytes(stream))
    with pytest.warns(tfr.SkippedDataWarning, match="skipped 17 bytes at byte offset 17"):
        assert list(tfr.read_records(path, on_error="skip")) == [b"a", b"c"]
    with pytest.warns(tfr.SkippedDataWarning):
        assert list(tfr.tf_record_iterator(path, on_error="stop")) == [b"a"]
    with pytest.warns(tfr.SkippedDataWarning):
        reader = tfr.TFRecordReader(path, on_error="skip")
        assert list(reader) == [b"a", b"c"]
    assert len(reader.skipped) == 1 and reader.bytes_skipped == 17
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(tfr.read_records(path, on_error="skip", on_skip=lambda r: None)) == [
            b"a",
            b"c",
        ]


def test_on_error_arguments_are_checked(tmp_path: Path) -> None:
    path = write_tfrecord(tmp_path / "f", [b"x"])
    for bad in ("ignore", "SKIP", ""):
        with pytest.raises(ValueError, match="on_error must be one of"):
            tfr.read_records(path, on_error=bad)
        with pytest.raises(ValueError, match="on_error"):
            tfr.TFRecordReader(path, on_error=bad)
        with pytest.raises(ValueError, match="on_error"):
            tfr.RecordDecoder(on_error=bad)
    with pytest.raises(TypeError):
        tfr.read_records(path, on_error=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="on_skip must be callable"):
        tfr.read_records(path, on_skip=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_record_size"):
        tfr.read_records(path, max_record_size=-1)
    with pytest.raises(TypeError, match="max_record_size"):
        tfr.TFRecordReader(path, max_record_size=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="on_error"):
        list(tfr.tf_record_iterator(path, on_error="x"))


def test_reader_keeps_going_across_files_and_reports_each(tmp_path: Path) -> None:
    files, expected = [], []
    for i, compression in enumerate(["", "GZIP", "ZLIB", ""]):
        records = make_records(6, seed=50 + i)
        stream = bytearray(tfr.encode_records(records))
        stream[_offsets(records)[2] + 1] ^= 0x40  # header of record 2
        path = tmp_path / f"f{i}"
        path.write_bytes(_compress(bytes(stream), compression))
        files.append(path)
        expected += records[:2] + records[3:]
    reports: list[tfr.SkipReport] = []
    assert list(tfr.tf_record_iterator(files, on_error="skip", on_skip=reports.append)) == expected
    assert [r.path for r in reports] == [str(p) for p in files]
    assert all(r.reason == "header" and r.index == 2 for r in reports)


def test_max_record_size(tmp_path: Path) -> None:
    records = [b"a" * 10, b"b" * 5000, b"c" * 20]
    offsets = _offsets(records)
    for compression in COMPRESSIONS:
        path = write_tfrecord(tmp_path / f"m{compression}", records, compression)
        out, _, err = _read(path, "raise", max_record_size=4096)
        assert out == records[:1] and isinstance(err, tfr.RecordTooLargeError)
        assert (err.length, err.limit, err.offset, err.index) == (5000, 4096, offsets[1], 1)
        assert isinstance(err, tfr.DataLossError) and "max_record_size=4096" in str(err)
        out, reports, err = _read(path, "skip", max_record_size=4096)
        assert err is None and out == [records[0], records[2]]
        (rep,) = reports
        assert (rep.reason, rep.offset, rep.length, rep.exact) == (
            "too-large",
            offsets[1],
            5016,
            True,
        )
        assert read_all(path, max_record_size=5000) == records
    # Fed in one piece, a complete record over the limit is caught too.
    out, reports = _decode(tfr.encode_records(records), None, on_error="skip", max_record_size=100)
    assert out == [records[0], records[2]] and reports[0].reason == "too-large"


def test_default_cap_for_compressed_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_stream, "DEFAULT_MAX_COMPRESSED_RECORD", 64 * 1024)
    # Over one inflate chunk (1 MiB), so that it arrives in pieces.
    y = b"y" * (3 * _inflate.INFLATE_CHUNK)
    big = tfr.encode_records([b"x", y, b"z"])
    for compression in ("GZIP", "ZLIB"):
        blob = _compress(big, compression)
        out, _, err = _read(io.BytesIO(blob), "raise", compression)
        assert out == [b"x"] and isinstance(err, tfr.RecordTooLargeError)
        assert "by default" in str(err) and err.limit == 64 * 1024
        out, reports, err = _read(io.BytesIO(blob), "skip", compression)
        assert out == [b"x", b"z"] and reports[0].reason == "too-large" and reports[0].exact
        assert read_all(io.BytesIO(blob), compression, max_record_size=10**7) == [b"x", y, b"z"]
        # A stream that ends before the cap still reports its truncation.
        cut = _compress(tfr.encode_record(b"q" * 60_000)[:30_000], compression)
        out, _, err = _read(io.BytesIO(cut), "raise", compression)
        assert isinstance(err, tfr.TruncatedRecordError)


def test_decoder_skip_is_the_same_for_every_chunking() -> None:
    records = make_records(15, seed=47, max_len=50)
    offsets = _offsets(records)
    stream = bytearray(tfr.encode_records(records))
    stream[offsets[3] + 2] ^= 4
    stream[offsets[9] + HEADER_SIZE + 1] ^= 4
    stream = stream[:-5]
    expected, expected_reports = _decode(bytes(stream), None, on_error="skip")
    assert expected == [r for i, r in enumerate(records) if i not in (3, 9, 14)]
    for chunk in range(1, 80):
        out, reports = _decode(bytes(stream), chunk, on_error="skip")
        assert out == expected, chunk
        assert list(map(_key, reports)) == list(map(_key, expected_reports)), chunk


def test_iter_records_on_error() -> None:
    stream = bytearray(tfr.encode_records([b"a", b"b", b"c"]))
    stream[17 + HEADER_SIZE] ^= 1
    reports: list[tfr.SkipReport] = []
    assert list(tfr.iter_records(bytes(stream), on_error="skip", on_skip=reports.append)) == [
        b"a",
        b"c",
    ]
    assert reports[0].reason == "data"
    assert list(tfr.iter_records(bytes(stream), on_error="stop")) == [b"a"]


def test_find_next_record() -> None:
    records = make_records(8, seed=48)
    offsets = _offsets(records)
    stream = tfr.encode_records(records)
    for i, off in enumerate(offsets):
        assert tfr.find_next_record(stream, off) == off
        assert tfr.find_next_record(stream, off + 1) == (offsets[i + 1] if i + 1 < 8 else None)
    # A header whose record fails its data CRC is passed over when the record is there...
    damaged = bytearray(stream)
    damaged[offsets[4] + HEADER_SIZE] ^= 1
    assert tfr.find_next_record(bytes(damaged), offsets[3] + 1) == offsets[5]
    # ... and judged by its header alone when it runs past the buffer.
    assert tfr.find_next_record(stream[: offsets[4] + 14], offsets[3] + 1) == offsets[4]
    assert tfr.find_next_record(stream, 1, stream_size=offsets[2]) == offsets[1]
    assert tfr.find_next_record(stream, offsets[7] + 1) is None
    assert tfr.find_next_record(b"", 0) is None


def test_find_next_record_in_file(tmp_path: Path) -> None:
    records = [bytes(100)] * 3 + [b"tail" * 1000]
    offsets = _offsets(records)
    path = tmp_path / "f"
    junk = random.Random(3).randbytes(5000)
    path.write_bytes(junk + tfr.encode_records(records))
    assert find_next_record_in_file(path, 0, block_size=64) == len(junk)
    assert find_next_record_in_file(path, len(junk) + 1, block_size=64) == len(junk) + offsets[1]
    assert find_next_record_in_file(path, len(junk) + offsets[3] + 1) is None


def test_salvage_is_the_skip_mode() -> None:
    # The CLI's verify/recover (salvage) and the readers' on_error="skip" agree.
    records = make_records(25, seed=49)
    offsets = _offsets(records)
    stream = bytearray(tfr.encode_records(records))
    stream[offsets[4] + 1] ^= 2
    stream[offsets[12] + HEADER_SIZE] ^= 2
    stream = stream[:-7]
    items = list(salvage([bytes(stream[i : i + 100]) for i in range(0, len(stream), 100)]))
    got = [it.data for it in items if isinstance(it, Record)]
    out, reports = _decode(bytes(stream), None, on_error="skip")
    assert got == out
    damages = [it for it in items if isinstance(it, Damage)]
    assert [d.error.offset for d in damages] == [r.error.offset for r in reports]
    assert [d.resume for d in damages] == [offsets[5], offsets[13], None]
    recs = [it for it in items if isinstance(it, Record)]
    assert [r.offset for r in recs] == [offsets[i] for i in range(24) if i not in (4, 12)]
    assert [r.index for r in recs] == [i for i in range(24) if i not in (4, 12)]


def test_salvage_file_on_fixtures() -> None:
    for name in ("corrupt-header.plain", "corrupt-data.gzip", "cut-stream-middle.zlib"):
        path = DATA / f"{name}.tfrecord"
        items = list(salvage_file(path))
        out, reports, _ = _read(path, "skip")
        assert [it.data for it in items if isinstance(it, Record)] == out
        assert len([it for it in items if isinstance(it, Damage)]) == len(reports)


# --------------------------------------------------------------------------- crash-safe writing


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_atomic_writer_appears_only_on_clean_close(
    tmp_path: Path, compression: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    path = tmp_path / "out.tfrecord"
    records = make_records(50, seed=60)
    with tfr.TFRecordWriter(path, compression, atomic=True) as writer:
        assert writer.atomic
        writer.write_all(records)
        writer.flush()
        assert not path.exists()
        (tmp,) = tmp_path.iterdir()
        assert tmp.name.startswith(".out.tfrecord.tmp-")
    assert sorted(os.listdir(tmp_path)) == ["out.tfrecord"]
    assert read_all(path) == records
    assert synced  # the data was fsynced before the rename
    writer.close()  # idempotent


def test_atomic_writer_leaves_nothing_after_an_exception(tmp_path: Path) -> None:
    path = tmp_path / "out.tfrecord"
    with pytest.raises(RuntimeError, match="boom"), tfr.TFRecordWriter(path, atomic=True) as w:
        w.write(b"partial")
        raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []
    # An existing file is left exactly as it was.
    write_tfrecord(path, [b"old"])
    with pytest.raises(KeyError), tfr.TFRecordWriter(path, "GZIP", atomic=True) as w:
        w.write(b"new")
        raise KeyError("x")
    assert read_all(path) == [b"old"] and os.listdir(tmp_path) == ["out.tfrecord"]
    # A clean close replaces it.
    with tfr.TFRecordWriter(path, atomic=True) as w:
        w.write(b"new")
    assert read_all(path) == [b"new"]


def test_atomic_writer_dropped_without_close_leaves_nothing(tmp_path: Path) -> None:
    import gc

    writer = tfr.TFRecordWriter(tmp_path / "x", atomic=True)
    writer.write(b"data")
    del writer
    gc.collect()
    assert os.listdir(tmp_path) == []


def test_default_writer_keeps_records_after_an_exception(tmp_path: Path) -> None:
    # TensorFlow-compatible default: the file is visible while written and an
    # exception inside `with` closes it normally.
    path = tmp_path / "out.tfrecord"
    with pytest.raises(RuntimeError), tfr.TFRecordWriter(path, "GZIP") as w:
        w.write(b"kept")
        assert path.exists()
        raise RuntimeError
    assert read_all(path) == [b"kept"]


def test_atomic_and_append_argument_checks(tmp_path: Path) -> None:
    path = tmp_path / "f"
    with pytest.raises(ValueError, match="cannot be combined"):
        tfr.TFRecordWriter(path, atomic=True, mode="a")
    with pytest.raises(ValueError, match="need a file path"):
        tfr.TFRecordWriter(io.BytesIO(), atomic=True)
    with pytest.raises(ValueError, match="need a file path"):
        tfr.TFRecordWriter(io.BytesIO(), mode="a")
    with pytest.raises(ValueError, match="mode must be"):
        tfr.TFRecordWriter(path, mode="r")
    with pytest.raises(ValueError, match="repair=True goes with mode='a'"):
        tfr.TFRecordWriter(path, repair=True)
    with pytest.raises(ValueError, match="ZLIB stream cannot be continued"):
        tfr.TFRecordWriter(path, "ZLIB", mode="a")
    with pytest.raises(TypeError):
        tfr.TFRecordWriter(path, atomic=1)  # type: ignore[arg-type]
    assert not path.exists()


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_flush_is_visible_to_another_process(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "live.tfrecord"
    records = make_records(20, seed=61)
    code = textwrap.dedent(
        """
        import sys, tfrecord_lite as tfr
        out = list(tfr.read_records(sys.argv[1], on_error="stop", on_skip=lambda r: None))
        print(len(out), sum(map(len, out)))
        """
    )
    with tfr.TFRecordWriter(path, compression) as writer:
        writer.write_all(records)
        writer.flush(fsync=True)
        res = subprocess.run(
            [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
        )
        assert res.stdout.split() == [str(len(records)), str(sum(map(len, records)))]


KILLED_WRITER = textwrap.dedent(
    """
    import sys, tfrecord_lite as tfr
    path, compression, atomic, every = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])

    def record(i):
        return (b"record %d:" % i) * (1 + (i * 37) % 300)

    w = tfr.TFRecordWriter(path, compression or None, atomic=atomic)
    i = 0
    while True:
        w.write(record(i))
        i += 1
        if i % every == 0:
            w.flush()
            sys.stdout.write("%d\\n" % i)
            sys.stdout.flush()
    """
)


def _expected_record(i: int) -> bytes:
    return (b"record %d:" % i) * (1 + (i * 37) % 300)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_a_writer_killed_mid_write_loses_only_its_tail(tmp_path: Path, compression: str) -> None:
    rng = random.Random(hash(compression) & 0xFFFF)
    for trial in range(4):
        path = tmp_path / f"killed-{trial}.tfrecord"
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED_WRITER, str(path), compression, "0", "7"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        target = rng.randint(1, 60)
        flushed = 0
        while flushed < target:
            line = proc.stdout.readline()
            assert line, "the writer died on its own"
            flushed = int(line)
        time.sleep(rng.random() * 0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for line in proc.stdout:  # counts flushed after the target, before the kill
            flushed = max(flushed, int(line))
        proc.stdout.close()
        # "stop": every complete record, in order, then the tail reported.
        reports: list[tfr.SkipReport] = []
        out = list(tfr.read_records(path, on_error="stop", on_skip=reports.append))
        assert len(out) >= flushed
        assert out == [_expected_record(i) for i in range(len(out))]
        if compression:
            assert len(reports) == 1 and reports[0].reason == "truncated"
        assert all(r.reason == "truncated" for r in reports)
        # "raise": the same records, then the cut (or nothing, if it fell between records).
        got: list[bytes] = []
        with contextlib.suppress(tfr.TruncatedRecordError):
            got.extend(tfr.read_records(path))
        assert got == out
        # "skip" finds nothing more either: nothing after the cut was ever written.
        assert list(tfr.read_records(path, on_error="skip", on_skip=reports.append)) == out


def test_a_killed_atomic_writer_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "final.tfrecord"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(path), "GZIP", "1", "5"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    flushed = 0
    while flushed < 20:
        line = proc.stdout.readline()
        assert line, "the writer died on its own"  # (an endless loop, before)
        flushed = int(line)
    proc.kill()
    proc.wait()
    proc.stdout.close()
    assert not path.exists()
    (tmp,) = tmp_path.iterdir()  # the temporary file, for a cleaner to remove
    assert tmp.name.startswith(".final.tfrecord.tmp-")


# --------------------------------------------------------------------------- appending


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_append_continues_a_file(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "log.tfrecord"
    first, second = make_records(10, seed=62), make_records(7, seed=63)
    with tfr.TFRecordWriter(path, compression, mode="a") as w:  # a new file
        w.write_all(first)
    with tfr.TFRecordWriter(path, compression, mode="ab") as w:
        w.write_all(second)
        assert w.records_written == 7 and w.repaired is None
    assert read_all(path) == first + second
    assert read_all(path, compression) == first + second
    if compression == "GZIP":
        blob = path.read_bytes()
        assert blob.count(b"\x1f\x8b\x08") >= 2  # two gzip members
        assert gzip.decompress(blob) == tfr.encode_records(first + second)
    else:
        assert path.read_bytes() == tfr.encode_records(first + second)


def test_append_refuses_a_damaged_tail_unless_repaired(tmp_path: Path) -> None:
    records = make_records(9, seed=64)
    stream = tfr.encode_records(records)
    path = tmp_path / "crashed.tfrecord"
    for cut in (3, HEADER_SIZE, HEADER_SIZE + 2, len(records[-1]) + 15):
        partial = stream[: _offsets(records)[-1] + cut]
        path.write_bytes(partial)
        with pytest.raises(tfr.TruncatedRecordError) as info:
            tfr.TFRecordWriter(path, mode="a")
        assert info.value.offset == _offsets(records)[-1] and info.value.index == 8
        assert info.value.path == str(path)
        assert path.read_bytes() == partial  # untouched
        with tfr.TFRecordWriter(path, mode="a", repair=True) as w:
            w.write(b"after repair")
        assert w.repaired is not None
        assert (w.repaired.reason, w.repaired.offset, w.repaired.length) == (
            "truncated",
            _offsets(records)[-1],
            cut,
        )
        assert read_all(path) == [*records[:-1], b"after repair"]


def test_append_checks_the_last_records_data(tmp_path: Path) -> None:
    records = [b"one", b"two", b"three" * 500]
    stream = bytearray(tfr.encode_records(records))
    stream[-1] ^= 0xFF  # the last footer (e.g. a crash left zeros there)
    path = tmp_path / "f"
    path.write_bytes(bytes(stream))
    with pytest.raises(tfr.CorruptRecordError, match="last record"):
        tfr.TFRecordWriter(path, mode="a")
    with tfr.TFRecordWriter(path, mode="a", repair=True) as w:
        w.write(b"new")
    assert w.repaired is not None and w.repaired.reason == "data"
    assert read_all(path) == [b"one", b"two", b"new"]


def test_repair_never_destroys_intact_records(tmp_path: Path) -> None:
    records = make_records(8, seed=65)
    stream = bytearray(tfr.encode_records(records))
    stream[_offsets(records)[3] + 1] ^= 1  # damage in the middle, intact records after it
    path = tmp_path / "f"
    path.write_bytes(bytes(stream))
    with pytest.raises(tfr.DataLossError, match="followed by intact records"):
        tfr.TFRecordWriter(path, mode="a", repair=True)
    assert path.read_bytes() == bytes(stream)


def test_append_refuses_the_wrong_compression(tmp_path: Path) -> None:
    plain = write_tfrecord(tmp_path / "p", [b"x"])
    gz = write_tfrecord(tmp_path / "g", [b"x"], "GZIP")
    with pytest.raises(ValueError, match="it is uncompressed"):
        tfr.TFRecordWriter(plain, "GZIP", mode="a")
    with pytest.raises(ValueError, match="GZIP-compressed"):
        tfr.TFRecordWriter(gz, mode="a")
    with pytest.raises(ValueError, match="uncompressed files only"):
        tfr.TFRecordWriter(gz, "GZIP", mode="a", repair=True)
    unfinished = tmp_path / "u"
    w = tfr.TFRecordWriter(unfinished, "GZIP")
    w.write(b"x")
    w.flush()
    with pytest.raises(FileInUseError):  # its writer is still open: refused outright
        tfr.TFRecordWriter(unfinished, "GZIP", mode="a")
    copy = tmp_path / "copy"  # what a writer killed after flush() leaves
    copy.write_bytes(unfinished.read_bytes())
    with pytest.raises(tfr.TruncatedRecordError):
        tfr.TFRecordWriter(copy, "GZIP", mode="a")
    w.close()


# --------------------------------------------------------------------------- large data


def test_crc_combine_and_zeros() -> None:
    rng = random.Random(5)
    for la, lb in [(0, 0), (0, 9), (9, 0), (1, 1), (100, 3000), (70_000, 1 << 17)]:
        a, b = rng.randbytes(la), rng.randbytes(lb)
        assert tfr.crc32c(a + b) == crc32c_combine(tfr.crc32c(a), tfr.crc32c(b), lb)
    for n in (0, 1, 2, 3, 1000, 1 << 16, (1 << 20) + 7):
        assert crc32c_of_zeros(n) == tfr.crc32c(bytes(n))


def _sparse_file(path: Path, big: int) -> tuple[list[bytes], list[int]]:
    """rec0 | a record of `big` zero bytes (a hole on disk) | rec2: the file passes 4 GiB."""
    rec0, rec2 = b"first record", b"record after the hole"
    with path.open("wb") as f:
        f.write(tfr.encode_record(rec0))
        f.write(record_header(big))
        f.seek(big, os.SEEK_CUR)  # the data: never written, reads as zeros
        f.write(mask(crc32c_of_zeros(big)).to_bytes(4, "little"))
        f.write(tfr.encode_record(rec2))
    offsets = [0, len(rec0) + 16, len(rec0) + 16 + big + 16]
    return [rec0, rec2], offsets


def test_files_over_4_gib(tmp_path: Path) -> None:
    big = 5 * 2**30  # one record of 5 GiB of zeros: a hole in a sparse file
    path = tmp_path / "sparse.tfrecord"
    (rec0, rec2), offsets = _sparse_file(path, big)
    st = path.stat()
    if st.st_blocks * 512 > 64 * 2**20:
        pytest.skip("the filesystem does not keep sparse files sparse")
    size = st.st_size
    assert size > 2**32 + 1
    tracemalloc.start()
    try:
        # Appending walks the headers (seeking over the 5 GiB record) and checks the last one.
        with tfr.TFRecordWriter(path, mode="a") as w:
            w.write(b"appended beyond 4 GiB")
        assert path.stat().st_size == size + 16 + 21
        # A too-large record is skipped by seeking past it: nothing of it is read.
        reports: list[tfr.SkipReport] = []
        out = list(
            tfr.read_records(path, on_error="skip", on_skip=reports.append, max_record_size=2**20)
        )
        assert out == [rec0, rec2, b"appended beyond 4 GiB"]
        (rep,) = reports
        assert (rep.reason, rep.offset, rep.length, rep.exact) == (
            "too-large",
            offsets[1],
            big + 16,
            True,
        )
        with pytest.raises(tfr.RecordTooLargeError) as info:
            list(tfr.read_records(path, max_record_size=2**30))
        assert info.value.length == big and info.value.offset == offsets[1]
        # A cut tail beyond 4 GiB: offsets in errors and reports are u64.
        with path.open("r+b") as f:
            f.seek(0, os.SEEK_END)
            f.write(record_header(100) + b"cut")
        tail = offsets[2] + len(tfr.encode_record(rec2)) + 16 + 21
        assert tail > 2**32
        with pytest.raises(tfr.TruncatedRecordError) as cut:
            tfr.TFRecordWriter(path, mode="a")
        assert cut.value.offset == tail and cut.value.index == 4
        with tfr.TFRecordWriter(path, mode="a", repair=True) as w:
            pass
        assert w.repaired is not None and w.repaired.offset == tail
        assert path.stat().st_size == tail
        # Reading from a position beyond 4 GiB (as an index does) works as anywhere.
        with path.open("rb") as f:
            f.seek(offsets[2])
            assert read_all(f) == [rec2, b"appended beyond 4 GiB"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20


def test_record_over_2_gib_length_math() -> None:
    # A > 2 GiB (and > 4 GiB) record's framing, fed as a generated stream: the decoder
    # waits for it without trouble, reports its exact size when the stream is cut,
    # and with max_record_size skips it in bounded memory. Nothing of 2 GiB is allocated.
    chunk = bytes(1 << 20)
    for length in (2**31 + 5, 2**32 + 17):
        header = record_header(length)
        assert int.from_bytes(header[:8], "little") == length
        tracemalloc.start()
        try:
            d = tfr.RecordDecoder()
            d.feed(tfr.encode_record(b"before") + header)
            assert d.records() == [b"before"]
            for _ in range(8):
                d.feed(chunk)
                assert d.records() == []
            assert d.pending == HEADER_SIZE + 8 * len(chunk)
            with pytest.raises(tfr.TruncatedRecordError) as info:
                d.close()
            assert info.value.expected == length + RECORD_OVERHEAD
            assert info.value.available == HEADER_SIZE + 8 * len(chunk)
            assert info.value.offset == 22 and info.value.index == 1
            # Known stream size: rejected from its header alone.
            sized = tfr.RecordDecoder(stream_size=22 + 12 + 1000)
            sized.feed(tfr.encode_record(b"before") + header)
            assert sized.records() == [b"before"]
            with pytest.raises(tfr.TruncatedRecordError):
                sized.records()
            # Skipping it unbuffered: 64 MiB of it stream past, then the next record.
            reports: list[tfr.SkipReport] = []
            s = tfr.RecordDecoder(on_error="skip", on_skip=reports.append, max_record_size=2**20)
            s.feed(header)
            assert s.records() == []
            for _ in range(64):
                s.feed(chunk)
                assert s.records() == [] and s.pending == 0
            assert s.offset == HEADER_SIZE + 64 * len(chunk)
            s.close()
            (rep,) = reports
            assert rep.reason == "too-large" and rep.to_end and rep.offset == 0
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 32 * 2**20


# --------------------------------------------------------------------------- concurrency


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_writer_threads_racing_close(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "race.tfrecord"
    writer = tfr.TFRecordWriter(path, compression, atomic=True)
    stop = threading.Event()
    written: list[int] = []
    errors: list[BaseException] = []

    def work(t: int) -> None:
        i = 0
        while not stop.is_set():
            try:
                writer.write(b"%d-%d " % (t, i) + bytes(i % 70))
                written.append(t)
                i += 1
                if i % 50 == 0:
                    writer.flush()  # may meet the close() too: ClosedError, as write does
            except tfr.ClosedError:
                return
            except BaseException as err:  # pragma: no cover - the test fails below
                errors.append(err)
                return

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    writer.close()  # while the others write: they get ClosedError, nothing torn
    stop.set()
    for t in threads:
        t.join()
    assert not errors
    out = read_all(path)
    assert len(out) == len(written)
    for t in range(6):
        mine = [r for r in out if r.startswith(b"%d-" % t)]
        assert mine == [b"%d-%d " % (t, i) + bytes(i % 70) for i in range(len(mine))]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_cannot_use_its_parents_writer(tmp_path: Path) -> None:
    import gc

    path = tmp_path / "f"
    writer = tfr.TFRecordWriter(path, "GZIP")
    writer.write(b"parent's buffered record")

    def child() -> int:
        code = 1
        try:
            writer.write(b"child")
        except ValueError as err:
            code = 0 if "another process" in str(err) else 2
        writer.close()  # a no-op in the child: the buffer is the parent's
        try:
            gc.collect()
        except BaseException:
            return 3
        return code

    assert run_in_fork(child) == 0
    writer.write(b"parent again")
    writer.close()
    assert read_all(path) == [b"parent's buffered record", b"parent again"]


def _count_records(path: str) -> int:
    return sum(1 for _ in tfr.tf_record_iterator(path))


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_readers_in_threads_and_processes_are_independent(tmp_path: Path, compression: str) -> None:
    records = make_records(3000, seed=66, max_len=100)
    path = write_tfrecord(tmp_path / "shared", records, compression)
    results: list[list[bytes]] = [[] for _ in range(6)]

    def read(t: int) -> None:
        with tfr.TFRecordReader(path, buffer_size=1000 + t) as reader:
            for rec in reader:
                results[t].append(rec)

    threads = [threading.Thread(target=read, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(res == records for res in results)
    # One reader shared by threads hands out each record exactly once (small reads,
    # so that threads switch in the middle of a next()).
    shared = tfr.TFRecordReader(path, buffer_size=64)
    got: list[list[bytes]] = [[] for _ in range(4)]
    failures: list[BaseException] = []

    def drain(t: int) -> None:
        try:
            for rec in shared:
                got[t].append(rec)
        except BaseException as err:  # e.g. "generator already executing"
            failures.append(err)

    threads = [threading.Thread(target=drain, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert sorted(r for g in got for r in g) == sorted(records)
    ctx = multiprocessing.get_context("spawn" if compression == "ZLIB" else "fork")
    with ctx.Pool(3) as pool:
        assert pool.map(_count_records, [str(path)] * 3) == [3000] * 3
