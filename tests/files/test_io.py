"""TFRecord files: writer, reader, GZIP/ZLIB (reference §A3-A4, §B5-B9, §C10-C12; peers.md)."""

from __future__ import annotations

import gzip
import io
import pathlib
import threading
import tracemalloc
import zlib
from typing import Any, Optional

import numpy as np
import pytest
from conftest import COMPRESSIONS, make_records, read_all, write_tfrecord
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_lite as tfr
from tfrecord_lite._record._format import record_header

GZIP_HEADER = bytes.fromhex("1f8b0800000000000003")


def _decompress(blob: bytes, compression: str) -> bytes:
    if compression == "GZIP":
        return gzip.decompress(blob)
    if compression == "ZLIB":
        return zlib.decompress(blob)
    return blob


class Pipe(io.RawIOBase):
    """A non-seekable stream (no fileno, no seek) that returns at most ``step`` bytes a read."""

    def __init__(self, data: bytes, step: int = 5) -> None:
        self._data = data
        self._pos = 0
        self._step = step

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self._step, len(self._data) - self._pos)
        buffer[:n] = self._data[self._pos : self._pos + n]
        self._pos += n
        return n


class ReadOnly:
    """The bare minimum file object: only ``read``."""

    def __init__(self, data: bytes) -> None:
        self._f = io.BytesIO(data)

    def read(self, n: int = -1) -> bytes:
        return self._f.read(min(n, 3) if n > 0 else n)


def _read_until_error(
    source: Any, compression: Any = "auto", **kw: Any
) -> tuple[list[bytes], Optional[BaseException]]:
    out: list[bytes] = []
    try:
        for record in tfr.read_records(source, compression, **kw):
            out.append(record)
    except tfr.TFRecordError as err:
        return out, err
    return out, None


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("level", [-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
def test_roundtrip_every_level(tfr_path: pathlib.Path, compression: str, level: int) -> None:
    records = make_records(40, seed=level + 10)
    write_tfrecord(tfr_path, records, compression, compression_level=level)
    assert read_all(tfr_path) == records
    assert read_all(tfr_path, compression) == records
    assert _decompress(tfr_path.read_bytes(), compression) == tfr.encode_records(records)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
@pytest.mark.parametrize(
    "options",
    [
        {"window_bits": 8},
        {"window_bits": 9},
        {"window_bits": 12},
        {"window_bits": 15},
        {"window_bits": 31},
        {"window_bits": 25},
        {"mem_level": 1},
        {"mem_level": 5},
        {"mem_level": 9},
        {"compression_strategy": 1},
        {"compression_strategy": 2},
        {"compression_strategy": 3},
        {"compression_strategy": 4},
        {"flush_mode": zlib.Z_SYNC_FLUSH},
        {"flush_mode": zlib.Z_FULL_FLUSH},
        {"output_buffer_size": 1},
        {"compression_level": 9, "window_bits": 10, "mem_level": 2, "compression_strategy": 1},
    ],
)
def test_roundtrip_zlib_options(
    tfr_path: pathlib.Path, compression: str, options: dict[str, int]
) -> None:
    records = make_records(60, seed=3, max_len=2000)
    write_tfrecord(tfr_path, records, compression, **options)
    blob = tfr_path.read_bytes()
    assert _decompress(blob, compression) == tfr.encode_records(records)
    assert read_all(tfr_path) == records
    if compression == "GZIP":
        assert blob[:2] == b"\x1f\x8b"
    else:
        assert blob[0] & 0x0F == 8 and (blob[0] << 8 | blob[1]) % 31 == 0


def test_plain_file_is_the_framed_records(tfr_path: pathlib.Path) -> None:
    records = [b"", b"foo", b"hello"]
    write_tfrecord(tfr_path, records)
    assert tfr_path.read_bytes().hex() == (
        "000000000000000029039807d8ea82a2"
        "0300000000000000b099490e666f6f618abefe"
        "0500000000000000eab2043e68656c6c6fbb1f1c19"
    )


def test_default_headers(tmp_path: pathlib.Path) -> None:
    records = make_records(5)
    g = write_tfrecord(tmp_path / "g", records, "GZIP")
    z = write_tfrecord(tmp_path / "z", records, "ZLIB")
    assert g.read_bytes()[:10] == GZIP_HEADER  # mtime 0, OS byte 3 (§B7)
    assert z.read_bytes()[:2] == b"\x78\x9c"
    assert gzip.decompress(g.read_bytes()) == zlib.decompress(z.read_bytes())


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_zero_record_files(tfr_path: pathlib.Path, compression: str) -> None:
    write_tfrecord(tfr_path, [], compression)
    blob = tfr_path.read_bytes()
    if compression == "":
        assert blob == b""
    else:
        assert _decompress(blob, compression) == b""
    if compression == "GZIP":
        assert blob[:10] == GZIP_HEADER
    assert read_all(tfr_path) == []
    assert read_all(tfr_path, compression) == []


@pytest.mark.parametrize(
    ("hex_bytes", "compression", "records"),
    [
        ("789c030000000001", "ZLIB", []),
        ("1f8b080000000000000303000000000000000000", "GZIP", []),
        ("789c636680800d333df9d2f2f313bbf6fd03001e02058f", "ZLIB", [b"foo"]),
        ("0300000000000000b099490e666f6f618abefe", "", [b"foo"]),
        ("", "", []),
    ],
)
def test_golden_files(
    tfr_path: pathlib.Path, hex_bytes: str, compression: str, records: list[bytes]
) -> None:
    tfr_path.write_bytes(bytes.fromhex(hex_bytes))
    assert read_all(tfr_path) == records
    assert read_all(tfr_path, compression) == records
    if hex_bytes:
        assert tfr.detect_compression(bytes.fromhex(hex_bytes)[:12]) == compression


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(st.binary(max_size=300), max_size=20),
    compression=st.sampled_from(COMPRESSIONS),
    buffer_size=st.sampled_from([1, 3, 17, 4096, None]),
)
def test_roundtrip_random(
    records: list[bytes], compression: str, buffer_size: Optional[int]
) -> None:
    target = io.BytesIO()
    write_tfrecord(target, records, compression)
    blob = target.getvalue()
    assert _decompress(blob, compression) == tfr.encode_records(records)
    kw = {} if buffer_size is None else {"buffer_size": buffer_size}
    assert list(tfr.read_records(io.BytesIO(blob), compression, **kw)) == records
    assert list(tfr.read_records(io.BytesIO(blob), **kw)) == records
    assert read_all(Pipe(blob, step=7)) == records


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("first_bytes", "length"),
    [("1f8b", 0x8B1F), ("789c", 0x9C78), ("7801", 0x0178), ("78da", 0xDA78), ("081d", 0x1D08)],
)
def test_detection_never_mistakes_plain_files(
    tfr_path: pathlib.Path, first_bytes: str, length: int
) -> None:
    records = [bytes(range(256)) * (length // 256) + b"x" * (length % 256), b"second"]
    write_tfrecord(tfr_path, records)
    blob = tfr_path.read_bytes()
    head = blob[:2]
    assert head.hex() == first_bytes  # the file really starts like a gzip/zlib stream
    if first_bytes != "1f8b":
        assert (head[0] << 8 | head[1]) % 31 == 0 and head[0] & 0x0F == 8
    assert tfr.detect_compression(blob[:12]) == ""
    assert read_all(tfr_path) == records
    # Fed through a stream that returns a few bytes per read, detection still sees 12.
    assert read_all(Pipe(blob, step=1)) == records
    assert read_all(ReadOnly(blob)) == records


def test_our_gzip_header_never_passes_as_a_plain_header() -> None:
    # Bytes 8-11 of every gzip file we write start with 00 03; the masked CRC of our
    # fixed first 8 bytes is not 00 03 xx xx, so detection cannot read it as plain.
    for tail in (b"\x00\x00", b"\x03\x00", b"\xff\xff", b"\x63\x60"):
        assert tfr.detect_compression(GZIP_HEADER + tail) == "GZIP"


def test_detection_per_file(tmp_path: pathlib.Path) -> None:
    paths = []
    expected: list[bytes] = []
    for i, compression in enumerate(["GZIP", "", "ZLIB", "", "GZIP"]):
        records = make_records(5, seed=i)
        paths.append(write_tfrecord(tmp_path / f"f{i}", records, compression))
        expected += records
    assert read_all(paths) == expected
    assert read_all([io.BytesIO(p.read_bytes()) for p in paths]) == expected


def test_explicit_compression_overrides_detection(tmp_path: pathlib.Path) -> None:
    records = make_records(5)
    plain = write_tfrecord(tmp_path / "p", records)
    gz = write_tfrecord(tmp_path / "g", records, "GZIP")
    zl = write_tfrecord(tmp_path / "z", records, "ZLIB")
    with pytest.raises(tfr.CompressionError):
        read_all(plain, "GZIP")
    with pytest.raises(tfr.CompressionError):
        read_all(plain, "ZLIB")
    with pytest.raises(tfr.CorruptRecordError) as info:
        read_all(gz, "")
    assert info.value.offset == 0 and info.value.part == "header"
    with pytest.raises(tfr.CompressionError):
        read_all(zl, "GZIP")
    with pytest.raises(tfr.CompressionError):
        read_all(gz, "ZLIB")
    assert read_all(gz, tfr.TFRecordCompressionType.GZIP) == records
    assert read_all(zl, tfr.TFRecordOptions("ZLIB")) == records
    assert read_all(plain, None) == records
    assert read_all(plain, tfr.TFRecordCompressionType.NONE) == records


# --------------------------------------------------------------------------- gzip / zlib streams


@pytest.mark.parametrize("buffer_size", [1, 2, 3, 5, 7, 16, 1024, None])
def test_concatenated_gzip_members(buffer_size: Optional[int]) -> None:
    records = make_records(12, seed=4, max_len=50)
    members = [
        gzip.compress(tfr.encode_records(records[:3]), mtime=0),
        gzip.compress(tfr.encode_records(records[3:4]), mtime=0),
        gzip.compress(b"", mtime=0),  # an empty member
        # A member boundary in the middle of a record.
        gzip.compress(tfr.encode_records(records[4:9]) + tfr.encode_record(records[9])[:7]),
        gzip.compress(tfr.encode_record(records[9])[7:] + tfr.encode_records(records[10:])),
    ]
    blob = b"".join(members)
    kw = {} if buffer_size is None else {"buffer_size": buffer_size}
    # Every block size puts member boundaries at every place relative to reads.
    assert list(tfr.read_records(io.BytesIO(blob), "GZIP", **kw)) == records
    assert list(tfr.read_records(io.BytesIO(blob), **kw)) == records


def test_concatenated_gzip_members_every_read_size(tfr_path: pathlib.Path) -> None:
    records = make_records(4, seed=9, max_len=30)
    blob = b"".join(gzip.compress(tfr.encode_record(r), mtime=0) for r in records)
    tfr_path.write_bytes(blob)
    for step in range(1, 60):
        assert read_all(Pipe(blob, step=step)) == records, step
    assert read_all(tfr_path) == records


def test_gzip_zero_padding_and_trailing_garbage() -> None:
    records = [b"a", b"bb"]
    blob = gzip.compress(tfr.encode_records(records), mtime=0)
    for buffer_size in (1, 4, 1024):
        kw = {"buffer_size": buffer_size}
        assert list(tfr.read_records(io.BytesIO(blob + bytes(100)), "GZIP", **kw)) == records
        out, err = _read_until_error(io.BytesIO(blob + b"garbage!"), "GZIP", **kw)
        assert out == records and isinstance(err, tfr.CompressionError)
        out, err = _read_until_error(io.BytesIO(blob + bytes(10) + b"x"), "GZIP", **kw)
        assert out == records and isinstance(err, tfr.CompressionError)
        out, err = _read_until_error(io.BytesIO(blob + b"Z"), "GZIP", **kw)
        assert out == records and isinstance(err, tfr.CompressionError)
        # One byte of a next member, then EOF: a member cut short.
        out, err = _read_until_error(io.BytesIO(blob + b"\x1f"), "GZIP", **kw)
        assert out == records and isinstance(err, tfr.TruncatedRecordError)


@pytest.mark.parametrize("trailer", [b"x", b"trailing garbage" * 10, gzip.compress(b"zz", mtime=0)])
def test_zlib_trailing_data_is_ignored(trailer: bytes) -> None:
    records = make_records(6)
    blob = zlib.compress(tfr.encode_records(records)) + trailer
    for buffer_size in (1, 7, 1024):
        assert list(tfr.read_records(io.BytesIO(blob), "ZLIB", buffer_size=buffer_size)) == records
    assert read_all(io.BytesIO(blob)) == records


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_corrupt_deflate_stream(tfr_path: pathlib.Path, compression: str) -> None:
    records = make_records(30, seed=2)
    write_tfrecord(tfr_path, records, compression, compression_level=0)  # stored blocks
    blob = bytearray(tfr_path.read_bytes())
    start = 10 if compression == "GZIP" else 2
    blob[start] = 0xFF  # first block header: BTYPE 11, which is invalid
    tfr_path.write_bytes(bytes(blob))
    for source in (tfr_path, str(tfr_path)):
        with pytest.raises(tfr.CompressionError) as info:
            read_all(source)
        err = info.value
        assert not isinstance(err, zlib.error)
        assert isinstance(err, tfr.DataLossError) and isinstance(err, ValueError)
        assert err.path == str(tfr_path)
        assert str(tfr_path) in str(err)
        assert compression in str(err)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_bad_checksum_of_compressed_stream(tfr_path: pathlib.Path, compression: str) -> None:
    records = make_records(3)
    write_tfrecord(tfr_path, records, compression)
    blob = bytearray(tfr_path.read_bytes())
    blob[-5 if compression == "GZIP" else -1] ^= 0xFF  # CRC32 (gzip) / Adler-32 (zlib)
    tfr_path.write_bytes(bytes(blob))
    out, err = _read_until_error(tfr_path)
    assert out == records
    assert isinstance(err, tfr.CompressionError)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_truncated_compressed_file_at_every_length(
    tfr_path: pathlib.Path, compression: str
) -> None:
    records = make_records(8, seed=11, max_len=40)
    write_tfrecord(tfr_path, records, compression, compression_level=0)
    blob = tfr_path.read_bytes()
    plain = tfr.encode_records(records)
    for cut in range(1, len(blob)):
        for source, comp in ((io.BytesIO(blob[:cut]), compression), (Pipe(blob[:cut], 3), "auto")):
            out, err = _read_until_error(source, comp)
            assert isinstance(err, tfr.TruncatedRecordError), (cut, err)
            assert isinstance(err, EOFError)
            assert records[: len(out)] == out
            # Every record whose bytes were fully decompressible was returned: with
            # stored blocks the decompressed prefix is at least cut - 10 - 5*blocks bytes.
            if err.offset is not None:
                assert err.offset == len(tfr.encode_records(out))
    assert _decompress(blob, compression) == plain


def test_truncated_compressed_file_reports_the_cut_record(tfr_path: pathlib.Path) -> None:
    records = [b"a" * 100, b"b" * 100_000]
    write_tfrecord(tfr_path, records, "GZIP")
    blob = tfr_path.read_bytes()
    tfr_path.write_bytes(blob[: len(blob) // 2])
    out, err = _read_until_error(tfr_path)
    assert out == records[:1]
    assert isinstance(err, tfr.TruncatedRecordError)
    assert err.index == 1 and err.offset == 116
    assert err.path == str(tfr_path)


def test_empty_file_with_explicit_compression(tfr_path: pathlib.Path) -> None:
    tfr_path.write_bytes(b"")
    for compression in COMPRESSIONS:
        assert read_all(tfr_path, compression) == []


# --------------------------------------------------------------------------- plain reader


def test_plain_errors_carry_location(tfr_path: pathlib.Path) -> None:
    records = make_records(5, seed=1)
    stream = bytearray(tfr.encode_records(records))
    offset = len(tfr.encode_records(records[:3]))
    stream[offset + 12] ^= 0x40
    tfr_path.write_bytes(bytes(stream))
    out, err = _read_until_error(tfr_path)
    assert out == records[:3]
    assert isinstance(err, tfr.CorruptRecordError)
    assert (err.path, err.offset, err.index, err.part) == (str(tfr_path), offset + 12, 3, "data")
    assert str(tfr_path) in str(err)
    assert list(tfr.read_records(tfr_path, verify=False))[3] != records[3]


@pytest.mark.parametrize("cut_into", ["header", "data", "footer"])
def test_truncated_plain_file(tfr_path: pathlib.Path, cut_into: str) -> None:
    records = [b"x" * 10, b"y" * 20]
    stream = tfr.encode_records(records)
    cut = {"header": 26 + 5, "data": 26 + 12 + 3, "footer": len(stream) - 1}[cut_into]
    tfr_path.write_bytes(stream[:cut])
    for source in (tfr_path, Pipe(stream[:cut], 4)):
        out, err = _read_until_error(source)
        assert out == records[:1]
        assert isinstance(err, tfr.TruncatedRecordError)
        assert err.index == 1 and err.offset == 26
        assert err.available == cut - 26
        assert err.expected == (12 if cut_into == "header" else 36)


def test_hostile_length_in_a_file(tmp_path: pathlib.Path) -> None:
    hostile = record_header(2**62) + bytes(4)
    plain = tmp_path / "plain"
    plain.write_bytes(hostile)
    gz = tmp_path / "gz"
    gz.write_bytes(gzip.compress(hostile + bytes(100_000), mtime=0))
    tracemalloc.start()
    try:
        for path in (plain, gz):
            with pytest.raises(tfr.TruncatedRecordError) as info:
                read_all(path)
            assert info.value.index == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024


def test_records_are_distinct_objects(tfr_path: pathlib.Path) -> None:
    records = [b"same record"] * 50 + [bytes(range(100))] * 50
    for compression in COMPRESSIONS:
        write_tfrecord(tfr_path, records, compression)
        with tfr.TFRecordReader(tfr_path, buffer_size=64) as reader:
            out = list(reader)
        assert out == records
        assert all(type(r) is bytes for r in out)
        assert len({id(r) for r in out}) == len(out)


def test_reader_attributes_and_close(tmp_path: pathlib.Path) -> None:
    a = write_tfrecord(tmp_path / "a", [b"1", b"2"])
    b = write_tfrecord(tmp_path / "b", [b"3"], "GZIP")
    reader = tfr.TFRecordReader([a, b])
    assert reader.files == [str(a), str(b)]
    assert next(reader) == b"1"
    assert (reader.path, reader.index) == (str(a), 1)
    assert next(reader) == b"2"
    assert next(reader) == b"3"
    assert (reader.path, reader.index) == (str(b), 1)
    with pytest.raises(StopIteration):
        next(reader)
    reader.close()
    reader.close()
    with pytest.raises(tfr.ClosedError):
        next(reader)
    with tfr.TFRecordReader(a) as r2:
        assert next(r2) == b"1"
    with pytest.raises(tfr.ClosedError, match="Reader is closed"):
        next(r2)


def test_reader_options(tfr_path: pathlib.Path) -> None:
    records = make_records(20)
    write_tfrecord(tfr_path, records, "ZLIB")
    opts = tfr.TFRecordOptions("ZLIB", input_buffer_size=5)
    assert list(tfr.TFRecordReader(tfr_path, opts)) == records
    assert list(tfr.TFRecordReader(tfr_path, options=opts)) == records
    assert list(tfr.tf_record_iterator(tfr_path, options="ZLIB")) == records
    assert list(tfr.tf_record_iterator(tfr_path, opts)) == records
    with pytest.raises(TypeError, match="not both"):
        tfr.TFRecordReader(tfr_path, "ZLIB", options=opts)
    with pytest.raises(ValueError):
        tfr.TFRecordReader(tfr_path, buffer_size=-1)
    with pytest.raises(ValueError, match="Not a valid compression_type"):
        tfr.TFRecordReader(tfr_path, "BZ2")


def test_appended_records_are_read(tfr_path: pathlib.Path) -> None:
    # The reader takes the file's size when it opens it; records a writer appends
    # while it reads are read, not reported as a truncation.
    writer = tfr.TFRecordWriter(tfr_path)
    writer.write(b"r0")
    writer.flush()
    it = tfr.read_records(tfr_path)
    assert next(it) == b"r0"
    for i in range(1, 5):
        writer.write(b"r%d" % i)
    writer.flush()
    assert list(it) == [b"r1", b"r2", b"r3", b"r4"]
    writer.close()


# --------------------------------------------------------------------------- sources


def test_sources(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    expected: list[bytes] = []
    for i in range(3):
        records = make_records(3, seed=20 + i)
        write_tfrecord(data / f"train-{i:05d}-of-00003", records, COMPRESSIONS[i])
        expected += records
    (data / "train-00000-of-00003.index").write_bytes(b"not a tfrecord")
    (data / ".hidden").write_bytes(b"not a tfrecord")
    (data / "subdir-of-00003").mkdir()
    first = data / "train-00000-of-00003"
    assert read_all(data / "train@3") == expected
    assert read_all(str(data / "train@3")) == expected
    assert read_all(str(data / "train-*")) == expected
    assert read_all(str(data / "*-of-00003")) == expected  # the subdirectory is skipped
    assert read_all(data) == expected
    assert read_all(str(data)) == expected
    assert read_all(first) == expected[:3]  # os.PathLike
    assert read_all([first, str(data / "train-00002-of-00003")]) == expected[:3] + expected[6:]
    assert read_all(f"file://{first}") == expected[:3]
    blobs = [(data / f"train-{i:05d}-of-00003").read_bytes() for i in range(3)]
    assert read_all([io.BytesIO(b) for b in blobs]) == expected
    assert read_all([Pipe(b, 2) for b in blobs]) == expected
    assert read_all([ReadOnly(b) for b in blobs]) == expected
    with first.open("rb") as f:
        assert read_all(f) == expected[:3]
        assert not f.closed  # a file object passed in is left open


def test_file_object_read_from_its_position() -> None:
    records = make_records(4)
    buf = io.BytesIO(b"junk" + tfr.encode_records(records))
    buf.seek(4)
    assert read_all(buf) == records


def test_missing_sources(tmp_path: pathlib.Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_all(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        read_all(str(tmp_path / "missing-*"))
    with pytest.raises(FileNotFoundError):
        read_all(tmp_path / "nothing@2")


# --------------------------------------------------------------------------- writer


def test_writer_closed_errors(tfr_path: pathlib.Path) -> None:
    writer = tfr.TFRecordWriter(tfr_path)
    writer.write(b"a")
    writer.close()
    assert writer.closed
    for call in (lambda: writer.write(b"b"), writer.flush, lambda: writer.write_all([b"c"])):
        with pytest.raises(tfr.ClosedError, match=r"^Writer is closed\.") as info:
            call()
        assert isinstance(info.value, ValueError)
        assert info.value.path == str(tfr_path)
    writer.close()  # twice is fine
    assert read_all(tfr_path) == [b"a"]


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_writer_context_manager_and_truncation(tfr_path: pathlib.Path, compression: str) -> None:
    with tfr.TFRecordWriter(tfr_path, compression) as writer:
        writer.write_all(make_records(200))
        assert writer.records_written == 200
    assert writer.closed
    with tfr.TFRecordWriter(str(tfr_path), compression) as writer:
        writer.write(b"only")
    assert read_all(tfr_path) == [b"only"]
    if compression == "":
        assert tfr_path.stat().st_size == 20


def test_writer_leaves_a_file_object_open() -> None:
    target = io.BytesIO()
    target.write(b"")
    with tfr.TFRecordWriter(target, "GZIP") as writer:
        writer.write(b"foo")
    assert not target.closed
    assert gzip.decompress(target.getvalue()) == tfr.encode_record(b"foo")


def test_writer_options_keyword_and_types(tmp_path: pathlib.Path) -> None:
    for i, opts in enumerate(
        [
            "GZIP",
            "gzip",
            tfr.TFRecordCompressionType.GZIP,
            tfr.TFRecordOptions("GZIP"),
            tfr.TFRecordOptions(tfr.TFRecordCompressionType.GZIP, compression_level=1),
        ]
    ):
        path = tmp_path / f"f{i}"
        with tfr.TFRecordWriter(path, options=opts) as w:
            w.write(b"x")
        assert path.read_bytes()[:2] == b"\x1f\x8b"
        path2 = tmp_path / f"g{i}"
        with tfr.TFRecordWriter(path2, opts) as w:
            w.write(b"x")
        assert read_all(path2, "GZIP") == [b"x"]
    with pytest.raises(TypeError, match="not both"):
        tfr.TFRecordWriter(tmp_path / "z", "GZIP", options="GZIP")
    with pytest.raises(ValueError):
        tfr.TFRecordWriter(tmp_path / "z", "auto")


def test_writer_copies_reused_buffers(tfr_path: pathlib.Path) -> None:
    buffer = bytearray(4)
    with tfr.TFRecordWriter(tfr_path) as writer:
        for i in range(3):
            buffer[:] = b"rec%d" % i
            writer.write(buffer)
        view = memoryview(buffer)
        writer.write(view)
        buffer[:] = b"XXXX"
        writer.write_all([buffer])
        buffer[:] = b"YYYY"
    assert read_all(tfr_path) == [b"rec0", b"rec1", b"rec2", b"rec2", b"XXXX"]


def test_writer_handles_short_writes() -> None:
    class ShortWriter(io.RawIOBase):
        def __init__(self) -> None:
            self.data = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, b: Any) -> int:
            n = min(len(b), 7)
            self.data += bytes(b[:n])
            return n

    records = make_records(30, seed=5)
    for compression in COMPRESSIONS:
        target = ShortWriter()
        write_tfrecord(target, records, compression)
        assert _decompress(bytes(target.data), compression) == tfr.encode_records(records)


def test_writer_rejects_non_bytes(tfr_path: pathlib.Path) -> None:
    with tfr.TFRecordWriter(tfr_path) as writer:
        with pytest.raises(TypeError, match="encode it first"):
            writer.write("text")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"tobytes\(\)"):
            writer.write(np.arange(4, dtype=np.uint8))  # type: ignore[arg-type]
        writer.write(np.arange(4, dtype=np.uint8).tobytes())
    assert read_all(tfr_path) == [bytes([0, 1, 2, 3])]


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_flush_makes_records_readable(tfr_path: pathlib.Path, compression: str) -> None:
    writer = tfr.TFRecordWriter(tfr_path, compression)
    written: list[bytes] = []
    for batch in range(3):
        records = make_records(10 + batch, seed=30 + batch)
        for r in records:
            writer.write(r)
        written += records
        writer.flush()
        for comp in ("auto", compression):
            out, err = _read_until_error(tfr_path, comp)
            assert out == written  # every flushed record, before any error
            if compression:
                # The stream has no end marker yet: reported, but only after the records.
                assert isinstance(err, tfr.TruncatedRecordError)
                assert err.index == len(written)
            else:
                assert err is None
    writer.close()
    assert read_all(tfr_path) == written


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_writer_shared_between_threads(tfr_path: pathlib.Path, compression: str) -> None:
    n_threads, per_thread = 8, 250
    writer = tfr.TFRecordWriter(tfr_path, compression, options=None)
    barrier = threading.Barrier(n_threads)

    def work(t: int) -> None:
        barrier.wait()
        for i in range(per_thread):
            writer.write(b"thread %d record %d " % (t, i) + bytes(i % 50))
            if i % 100 == 0:
                writer.flush()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    out = read_all(tfr_path)
    assert len(out) == n_threads * per_thread
    for t in range(n_threads):
        mine = [r for r in out if r.startswith(b"thread %d " % t)]
        assert mine == [b"thread %d record %d " % (t, i) + bytes(i % 50) for i in range(per_thread)]


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_large_record(tfr_path: pathlib.Path, compression: str) -> None:
    big = np.random.default_rng(0).bytes(16 * 1024 * 1024 + 12345)
    records = [b"before", big, b"after"]
    write_tfrecord(tfr_path, records, compression, compression_level=1)
    out = read_all(tfr_path)
    assert len(out) == 3
    assert out[0] == b"before" and out[2] == b"after"
    assert out[1] == big


def test_options_validation() -> None:
    with pytest.raises(ValueError, match="Not a valid compression_type") as info:
        tfr.TFRecordOptions("BZ2")
    assert "BZ2" in str(info.value)
    with pytest.raises(ValueError, match="Not a valid compression_type"):
        tfr.TFRecordOptions(7)
    with pytest.raises(TypeError):
        tfr.TFRecordOptions(True)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tfr.TFRecordOptions(1.5)  # type: ignore[arg-type]
    bad: list[dict[str, Any]] = [
        {"compression_level": 10},
        {"compression_level": -2},
        {"mem_level": 0},
        {"mem_level": 10},
        {"compression_strategy": 5},
        {"window_bits": 7},
        {"window_bits": 20},
        {"window_bits": 32},
        {"compression_method": 9},
        {"flush_mode": 4},  # Z_FINISH
        {"input_buffer_size": 0},
        {"output_buffer_size": -1},
    ]
    for kwargs in bad:
        with pytest.raises(ValueError):
            tfr.TFRecordOptions("GZIP", **kwargs)
    with pytest.raises(TypeError):
        tfr.TFRecordOptions("GZIP", compression_level="6")  # type: ignore[arg-type]
    opts = tfr.TFRecordOptions(
        "ZLIB", compression_level=9, window_bits=12, mem_level=8, compression_strategy=1
    )
    assert opts == tfr.TFRecordOptions(
        "ZLIB", compression_level=9, window_bits=12, mem_level=8, compression_strategy=1
    )
    assert opts != tfr.TFRecordOptions("ZLIB")
    assert "ZLIB" in repr(opts)


def test_get_compression_type_string() -> None:
    get = tfr.TFRecordOptions.get_compression_type_string
    assert get(None) == ""
    assert get("") == ""
    assert get("GZIP") == "GZIP"
    assert get("ZLIB") == "ZLIB"
    assert get(tfr.TFRecordCompressionType.NONE) == ""
    assert get(tfr.TFRecordCompressionType.ZLIB) == "ZLIB"
    assert get(tfr.TFRecordCompressionType.GZIP) == "GZIP"
    assert get(tfr.TFRecordOptions("GZIP")) == "GZIP"
    assert get(tfr.TFRecordOptions()) == ""
    with pytest.raises(ValueError, match="Not a valid compression_type"):
        get("BZ2")


def test_open(tfr_path: pathlib.Path) -> None:
    with tfr.open(tfr_path, "w") as writer:
        assert isinstance(writer, tfr.TFRecordWriter)
        writer.write(b"one")
    with tfr.open(tfr_path, "r") as reader:
        assert isinstance(reader, tfr.TFRecordReader)
        assert list(reader) == [b"one"]
    with tfr.open(tfr_path, "wb", "GZIP") as writer:
        writer.write(b"two")
    assert tfr_path.read_bytes()[:2] == b"\x1f\x8b"
    assert list(tfr.open(tfr_path)) == [b"two"]
    assert list(tfr.open(str(tfr_path), "rb", "GZIP")) == [b"two"]
    with pytest.raises(ValueError, match="mode"):
        tfr.open(tfr_path, "a")


# --------------------------------------------------------------------------- corruption


@settings(max_examples=60, deadline=None)
@given(
    records=st.lists(st.binary(max_size=80), min_size=1, max_size=10),
    compression=st.sampled_from(COMPRESSIONS),
    where=st.integers(min_value=0),
    flip=st.integers(min_value=1, max_value=255),
)
def test_random_corruption_never_yields_wrong_data(
    records: list[bytes], compression: str, where: int, flip: int
) -> None:
    target = io.BytesIO()
    write_tfrecord(target, records, compression)
    blob = target.getvalue()
    pos = where % len(blob)
    damaged = blob[:pos] + bytes([blob[pos] ^ flip]) + blob[pos + 1 :]
    out, err = _read_until_error(io.BytesIO(damaged), compression)
    if compression and out != records[: len(out)]:
        # A damaged deflate stream can turn a literal into a back-reference that
        # replays earlier decompressed bytes, i.e. whole, validly framed records:
        # record CRCs cannot tell such a copy from the original (TensorFlow cannot
        # either). What is guaranteed: the damage is always reported (the deflate
        # stream or its trailer checksum fails), and every record yielded is one of
        # the file's records.
        assert isinstance(err, tfr.DataLossError)
        assert all(r in records for r in out)
        return
    # A prefix of the original records, then an error; never a wrong record.
    assert out == records[: len(out)]
    if compression and err is None:
        assert out == records  # e.g. a flip in the gzip header's mtime: nothing lost
    if compression == "":
        # With both CRCs checked, every change to a plain file is detected, exactly
        # at the damaged record.
        assert isinstance(err, tfr.DataLossError)
        assert len(out) == err.index
        assert len(tfr.encode_records(records[: len(out)])) <= pos
        assert len(tfr.encode_records(records[: len(out) + 1])) > pos
    elif err is None:
        # Only a change that leaves the decompressed stream as it was goes unnoticed:
        # gzip FTEXT/MTIME/XFL/OS, zlib FLEVEL, padding bits after the last block.
        assert _decompress(damaged, compression) == tfr.encode_records(records)
        assert out == records


# --------------------------------------------------------------------------- more peer complaints


@pytest.mark.parametrize(("compression", "wbits"), [("GZIP", 31), ("ZLIB", 15)])
def test_default_zlib_settings_are_tensorflows(
    tfr_path: pathlib.Path, compression: str, wbits: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # §B6: level -1 (zlib 6), mem_level 9 (zlib's own default is 8), strategy 0.
    # Byte for byte with the zlib backend (the fast one's output is tested in test_compress.py).
    monkeypatch.setenv("TFRECORD_LITE_DEFLATE_BACKEND", "zlib")
    records = make_records(300, seed=12, max_len=500)
    write_tfrecord(tfr_path, records, compression)
    z = zlib.compressobj(6, zlib.DEFLATED, wbits, 9, 0)
    expected = z.compress(tfr.encode_records(records)) + z.flush()
    assert tfr_path.read_bytes() == expected


def test_bytes_are_never_mangled(tfr_path: pathlib.Path) -> None:
    # peers.md #10: trailing NULs, invalid UTF-8, and every byte value survive.
    records = [b"abc\x00\x00", b"\x00", b"\xff\xfe\x80", bytes(range(256)), b"", b"\x00" * 33]
    for compression in COMPRESSIONS:
        write_tfrecord(tfr_path, records, compression)
        out = read_all(tfr_path)
        assert out == records
        assert [len(r) for r in out] == [len(r) for r in records]


def test_reading_stops_at_the_first_damaged_record(tmp_path: pathlib.Path) -> None:
    # §A4g: after a data-loss error the rest of that file is abandoned.
    records = make_records(6, seed=13)
    stream = bytearray(tfr.encode_records(records))
    stream[len(tfr.encode_records(records[:2])) + 12] ^= 0x10
    bad = tmp_path / "bad"
    bad.write_bytes(bytes(stream))
    good = write_tfrecord(tmp_path / "good", [b"later"])
    reader = tfr.TFRecordReader([bad, good])
    assert [next(reader), next(reader)] == records[:2]
    with pytest.raises(tfr.CorruptRecordError) as info:
        next(reader)
    assert (info.value.path, info.value.index) == (str(bad), 2)
    with pytest.raises(StopIteration):
        next(reader)


def test_one_file_open_at_a_time(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # peers.md #12: memory and handles do not grow with the number of files.
    from tfrecord_lite._files import _handles

    paths = [
        write_tfrecord(tmp_path / f"f{i}", [b"r%d" % i] * 3, COMPRESSIONS[i % 3]) for i in range(12)
    ]
    opened: list[Any] = []
    real_open = _handles._builtin_open

    def tracking_open(*args: Any, **kwargs: Any) -> Any:
        f = real_open(*args, **kwargs)
        opened.append(f)
        return f

    monkeypatch.setattr(_handles, "_builtin_open", tracking_open)
    count = 0
    for _record in tfr.tf_record_iterator(paths):
        assert sum(not f.closed for f in opened) == 1
        count += 1
    assert count == 36
    assert len(opened) == 12
    assert all(f.closed for f in opened)
    # Breaking out of a reader early closes its file too.
    with tfr.TFRecordReader(paths) as reader:
        next(reader)
    assert all(f.closed for f in opened)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_memory_is_bounded_by_blocks_not_files(tfr_path: pathlib.Path, compression: str) -> None:
    record = bytes(range(256)) * 4
    with tfr.TFRecordWriter(tfr_path, compression) as writer:
        writer.write_all([record] * 24_000)  # ~25 MB of framed records
    tracemalloc.start()
    try:
        count = 0
        for r in tfr.tf_record_iterator(tfr_path):
            count += 1
            assert len(r) == 1024
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 24_000
    assert peak < 12 * 1024 * 1024


def test_dropped_writer_finishes_its_file(tfr_path: pathlib.Path) -> None:
    import gc

    writer = tfr.TFRecordWriter(tfr_path, "GZIP")
    writer.write(b"unclosed")
    del writer
    gc.collect()
    assert read_all(tfr_path) == [b"unclosed"]


def test_urls_go_through_fsspec() -> None:
    # peers.md #8: gs://, s3://, ... through fsspec (the memory:// filesystem here).
    pytest.importorskip("fsspec")
    records = make_records(20, seed=14)
    for compression in COMPRESSIONS:
        url = f"memory://tfrecord-lite-tests/data-{compression or 'plain'}.tfrecord"
        write_tfrecord(url, records, compression)
        assert read_all(url) == records
        assert read_all([url, url], compression) == records * 2


def test_urls_without_fsspec_explain_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(ImportError, match=r'needs fsspec.*pip install "tfrecord-lite-np\[gcs\]"'):
        read_all("gs://bucket/train.tfrecord")
    with pytest.raises(ImportError, match=r'needs fsspec.*pip install "tfrecord-lite-np\[s3\]"'):
        tfr.TFRecordWriter("s3://bucket/train.tfrecord")
