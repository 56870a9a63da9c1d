"""Reader semantics: tf_record_iterator's kept offset, one meaning of compression=None,
the wrong-compression hint, and what TFRecordWriter.write() accepts."""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest

import tfrecord_lite as tfr


def framed(record: bytes) -> bytes:
    return tfr.encode_record(record)


# --------------------------------------------------------------------------- TF's own tests, ported
# (tensorflow/python/lib/io/tf_record_test.py: TFRecordIteratorTest)


def test_read_growing_file_preserves_read_offset(tmp_path: pathlib.Path) -> None:
    fn = os.fspath(tmp_path / "file.tfrecord")
    with tfr.TFRecordWriter(fn) as writer:
        writer.write(b"one")
        writer.write(b"two")
        writer.flush()
        iterator = tfr.tf_record_iterator(fn)
        assert next(iterator) == b"one"
        assert next(iterator) == b"two"
        with pytest.raises(StopIteration):
            next(iterator)
        with pytest.raises(StopIteration):
            next(iterator)
        writer.write(b"three")
        writer.flush()
        assert next(iterator) == b"three"
        with pytest.raises(StopIteration):
            next(iterator)


def test_read_truncated_file_preserves_read_offset(tmp_path: pathlib.Path) -> None:
    record_bytes = framed(b"truncated")
    fn = os.fspath(tmp_path / "truncated_file")
    with tfr.TFRecordWriter(fn) as writer:
        writer.write(b"good")
    with open(fn, "ab", buffering=0) as f:
        f.write(record_bytes[:-1])
        iterator = tfr.tf_record_iterator(fn)
        assert next(iterator) == b"good"
        with pytest.raises(tfr.DataLossError):
            next(iterator)
        with pytest.raises(tfr.DataLossError):
            next(iterator)
        f.write(record_bytes[-1:])
        assert next(iterator) == b"truncated"
        with pytest.raises(StopIteration):
            next(iterator)


def test_tailing_a_file_written_piece_by_piece(tmp_path: pathlib.Path) -> None:
    """Every cut (in a header, the data or the footer) raises until the record is whole."""
    fn = tmp_path / "tail.tfrecord"
    fn.write_bytes(b"")
    records = [b"a" * n for n in (0, 1, 5, 300)]
    stream = b"".join(framed(r) for r in records)
    it = tfr.tf_record_iterator(fn)
    got: list[bytes] = []
    with open(fn, "ab", buffering=0) as f:
        for pos in range(0, len(stream), 7):
            f.write(stream[pos : pos + 7])
            while True:
                try:
                    got.append(next(it))
                except StopIteration:
                    break
                except tfr.TruncatedRecordError as err:
                    assert err.path == os.fspath(fn) and err.index == len(got)
                    break
    assert got == records
    with pytest.raises(StopIteration):
        next(it)
    it.close()
    with pytest.raises(tfr.ClosedError):
        next(it)


def test_a_corrupt_record_raises_on_every_next(tmp_path: pathlib.Path) -> None:
    data = bytearray(framed(b"ok") + framed(b"bad!"))
    data[-6] ^= 1  # a data byte of the second record
    fn = tmp_path / "c.tfrecord"
    fn.write_bytes(bytes(data))
    it = tfr.tf_record_iterator(fn)
    assert next(it) == b"ok"
    for _ in range(3):
        with pytest.raises(tfr.CorruptRecordError) as info:
            next(it)
        assert info.value.index == 1


def test_compressed_iterator_reads_once_and_stays_at_the_end(tmp_path: pathlib.Path) -> None:
    fn = os.fspath(tmp_path / "g.tfrecord")
    with tfr.TFRecordWriter(fn, "GZIP") as w:
        w.write(b"x")
    with tfr.tf_record_iterator(fn) as it:
        assert list(it) == [b"x"]
        with pytest.raises(StopIteration):
            next(it)


def test_iterator_over_several_files_and_file_objects(tmp_path: pathlib.Path) -> None:
    paths = []
    for k, comp in enumerate(["", "GZIP", "ZLIB", ""]):
        p = os.fspath(tmp_path / f"f{k}")
        with tfr.TFRecordWriter(p, comp) as w:
            w.write(b"r%d" % k)
        paths.append(p)
    assert list(tfr.tf_record_iterator(paths)) == [b"r0", b"r1", b"r2", b"r3"]
    with open(paths[0], "rb") as fh:
        assert list(tfr.tf_record_iterator(fh)) == [b"r0"]


# --------------------------------------------------------------------------- compression=None


@pytest.mark.parametrize("make", ["iterator", "reader"])
def test_for_loops_and_next_share_one_position(tmp_path: pathlib.Path, make: str) -> None:
    # ``for`` runs over the lists the decoder makes; breaking out, next() and a
    # second loop go on from the same record, and ``index`` counts what was handed out.
    records = [b"r%d" % i for i in range(300)]
    paths = []
    for k in range(2):
        paths.append(os.fspath(tmp_path / f"f{k}.tfrecord"))
        with tfr.TFRecordWriter(paths[-1]) as w:
            w.write_all(records[k * 150 : (k + 1) * 150])
    it = (
        tfr.tf_record_iterator(paths)
        if make == "iterator"
        else tfr.TFRecordReader(paths, buffer_size=100)
    )
    got = []
    for rec in it:
        got.append(rec)
        assert it.index == len(got)
        if len(got) == 7:
            break
    assert it.index == 7 and it.path == paths[0]
    got.append(next(it))
    assert it.index == 8
    for rec in it:
        got.append(rec)
        if len(got) == 160:
            assert it.path == paths[1] and it.index == 10
            break
    got.extend(it)
    assert got == records
    assert it.index == 150 and it.path == paths[1]
    with pytest.raises(StopIteration):
        next(it)


def test_closing_a_reader_stops_a_loop_over_it(tmp_path: pathlib.Path) -> None:
    path = os.fspath(tmp_path / "f.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        w.write_all([b"x" * 10] * 1000)
    reader = tfr.TFRecordReader(path)
    n = 0
    with pytest.raises(tfr.ClosedError):
        for _ in reader:
            n += 1
            if n == 5:
                reader.close()
    assert n == 5
    with pytest.raises(tfr.ClosedError):
        next(reader)


def test_none_means_detect_in_every_reader(tmp_path: pathlib.Path) -> None:
    fn = os.fspath(tmp_path / "g.tfrecord")
    with tfr.TFRecordWriter(fn, "GZIP") as w:
        w.write(b"zipped")
    want = [b"zipped"]
    assert list(tfr.tf_record_iterator(fn, None)) == want
    assert list(tfr.tf_record_iterator(fn, options=None)) == want
    assert list(tfr.TFRecordReader(fn, None)) == want
    assert list(tfr.read_records(fn, None)) == want
    with tfr.open(fn, "r", None) as r:
        assert list(r) == want  # type: ignore[arg-type]
    assert list(tfr.TFRecordDataset(fn, None)) == want
    assert list(tfr.TFRecordDataset(fn, compression_type=None)) == want
    assert list(tfr.data.TFRecordDataset(fn, compression=None)) == want


def test_wrong_compression_names_the_detected_one_and_the_fix(tmp_path: pathlib.Path) -> None:
    gz = os.fspath(tmp_path / "g.tfrecord")
    with tfr.TFRecordWriter(gz, "GZIP") as w:
        w.write(b"zipped")
    readers = [
        lambda p, c: list(tfr.tf_record_iterator(p, c)),
        lambda p, c: list(tfr.TFRecordReader(p, c)),
        lambda p, c: list(tfr.read_records(p, c)),
        lambda p, c: list(tfr.TFRecordDataset(p, c)),
    ]
    for read in readers:
        with pytest.raises(
            tfr.CorruptRecordError, match=r'looks GZIP-compressed.*compression_type="GZIP"'
        ):
            read(gz, "")
    plain = os.fspath(tmp_path / "p.tfrecord")
    with tfr.TFRecordWriter(plain) as w:
        w.write(b"plain")
    for read in readers:
        with pytest.raises(tfr.CompressionError, match=r'looks uncompressed.*compression_type=""'):
            read(plain, "GZIP")
        with pytest.raises(tfr.DataLossError, match='"auto"'):
            read(plain, "ZLIB")


# --------------------------------------------------------------------------- write() types


def test_write_takes_bytes_like_objects_only(tmp_path: pathlib.Path) -> None:
    fn = os.fspath(tmp_path / "w.tfrecord")
    example = tfr.train.Example()
    example.features.feature["a"].int64_list.value.append(1)
    with tfr.TFRecordWriter(fn) as w:
        with pytest.raises(TypeError, match=r"tobytes\(\)"):
            w.write(np.zeros((28, 28), np.uint8))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"SerializeToString\(\)"):
            w.write(example)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"SerializeToString\(\)"):
            w.write_all([example.SerializeToString(), example])  # type: ignore[list-item]
        with pytest.raises(TypeError, match=r"tobytes\(\)"):
            w.write_all([np.zeros(3, np.uint8)])  # type: ignore[list-item]
        w.write(example.SerializeToString())
        w.write(bytearray(b"ba"))
        w.write(memoryview(b"mv"))
    # a chunk of write_all with a bad record in it writes none of that chunk
    assert list(tfr.tf_record_iterator(fn)) == [
        example.SerializeToString(),
        b"ba",
        b"mv",
    ]
