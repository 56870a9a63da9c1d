"""A GZIP or ZLIB file whose content is not TFRecord framing (a gzipped CSV, JSON or
text) is a NotATFRecordError from every reader, judged on its first inflated bytes;
a compressed TFRecord file whose first record header is damaged is still a damaged
TFRecord file. Also: sniff_format tells CSV and tab-separated text from other text."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files import NotATFRecordError, sniff_format

CSV = b"id,name,score,label\n" + b"".join(
    b"%d,item%d,%d.5,%d\n" % (i, i, i, i % 2) for i in range(200)
)
JSON = json.dumps([{"id": i, "name": f"item{i}"} for i in range(50)]).encode()
TEXT = b"a line of plain words that is not a table at all\n" * 40

CONTENTS = {"csv": (CSV, "CSV text"), "json": (JSON, "JSON"), "txt": (TEXT, "text")}
PACKERS: dict[str, Callable[[bytes], bytes]] = {"GZIP": gzip.compress, "ZLIB": zlib.compress}

F = {"id": tfr.FixedLenFeature([], tfr.int64)}

READERS: dict[str, Callable[[Path], Any]] = {
    "tf_record_iterator": lambda p: list(tfr.tf_record_iterator(str(p))),
    "read_records": lambda p: list(tfr.read_records(p)),
    "TFRecordDataset": lambda p: list(tfr.TFRecordDataset(str(p))),
    "TFRecordDataset.parse": lambda p: list(tfr.TFRecordDataset(str(p)).parse(F)),
    "TFRecordDataset.parse.batch": lambda p: list(tfr.TFRecordDataset(str(p)).parse(F).batch(4)),
    "forced compression": lambda p: list(
        tfr.tf_record_iterator(str(p), options=("GZIP" if p.suffix == ".gz" else "ZLIB"))
    ),
    "create_index": lambda p: tfr.create_index(p, p.with_suffix(".index")),
}


@pytest.fixture(params=[(c, k) for c in sorted(CONTENTS) for k in sorted(PACKERS)], ids=str)
def packed(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str, str]:
    content, compression = request.param
    data, what = CONTENTS[content]
    path = tmp_path / f"data.{content}.{'gz' if compression == 'GZIP' else 'zz'}"
    path.write_bytes(PACKERS[compression](data))
    return path, compression, what


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_compressed_file_of_other_content_is_not_a_tfrecord(
    packed: tuple[Path, str, str], reader: str
) -> None:
    path, compression, what = packed
    with pytest.raises(NotATFRecordError) as info:
        READERS[reader](path)
    err = info.value
    expected = f"not a TFRecord file: a {compression} file whose content starts like {what}"
    assert str(err).startswith(expected), str(err)
    assert (err.path, err.offset, err.what) == (str(path), 0, what)
    assert isinstance(err, tfr.CorruptRecordError) and isinstance(err, ValueError)
    assert "stored 0x" not in str(err) and "CRC32C" not in str(err)


def test_skipping_reports_the_whole_compressed_file(packed: tuple[Path, str, str]) -> None:
    path, _, _ = packed
    reports: list[tfr.SkipReport] = []
    assert list(tfr.read_records(path, on_error="skip", on_skip=reports.append)) == []
    (report,) = reports
    assert isinstance(report.error, NotATFRecordError) and report.to_end
    assert (report.path, report.offset, report.length) == (str(path), 0, path.stat().st_size)


def test_a_cut_gzipped_csv_is_still_said_to_be_csv(tmp_path: Path) -> None:
    path = tmp_path / "cut.csv.gz"
    data = gzip.compress(CSV)
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(NotATFRecordError, match="GZIP file whose content starts like CSV text"):
        list(tfr.tf_record_iterator(str(path)))


def _records() -> list[bytes]:
    # Records that are themselves text: the framing around them is what counts.
    return [b"id,name,score,label", b"1,item1,1.5,1"] + [b"%d,x,y,z" % i for i in range(50)]


@pytest.mark.parametrize("compression", sorted(PACKERS))
def test_compressed_tfrecord_files_of_text_records_read(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "text-records"
    with tfr.TFRecordWriter(path, compression) as w:
        w.write_all(_records())
    assert list(tfr.tf_record_iterator(str(path))) == _records()


@pytest.mark.parametrize("compression", sorted(PACKERS))
def test_a_damaged_first_header_of_a_compressed_tfrecord_is_corrupt(
    tmp_path: Path, compression: str
) -> None:
    framed = bytearray(tfr.encode_records(_records()))
    framed[9] ^= 0xFF  # the first header's length CRC
    path = tmp_path / "damaged"
    path.write_bytes(PACKERS[compression](bytes(framed)))
    with pytest.raises(tfr.CorruptRecordError) as info:
        list(tfr.tf_record_iterator(str(path)))
    assert not isinstance(info.value, NotATFRecordError)
    assert info.value.offset == 0 and "length field" in str(info.value)
    reports: list[tfr.SkipReport] = []
    got = list(tfr.read_records(path, on_error="skip", on_skip=reports.append))
    assert got == _records()[1:] and reports[0].reason == "header"


def test_random_bytes_gzipped_are_a_corrupt_record(tmp_path: Path) -> None:
    # Not a known format: read as a (damaged) TFRecord file, as a plain file would be.
    path = tmp_path / "noise.gz"
    path.write_bytes(gzip.compress(bytes(range(256)) * 4))
    with pytest.raises(tfr.CorruptRecordError) as info:
        list(tfr.tf_record_iterator(str(path)))
    assert not isinstance(info.value, NotATFRecordError)


@pytest.mark.parametrize(
    ("head", "what"),
    [
        (b"id,name,score\n1,a,2.5\n2,b,3.5\n", "CSV text"),
        (b"a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u,v,w,x,y,z\n1,2,3,", "CSV text"),
        (b"id\tname\tscore\n1\ta\t2.5\n", "tab-separated text"),
        (b"some notes, one line after another\n" * 3, "text"),  # one comma: prose
        (b"one, two, three\nfour\n", "text"),  # counts differ
        (b"a line without any separator, long enough", "text"),  # no whole line
        (b"[1, 2, 3]\n", None),  # fewer bytes than a record header: a cut file
        (b'{"a": 1, "b": 2, "c": 3}\n', "JSON"),
    ],
)
def test_sniff_format_tells_tables_from_other_text(head: bytes, what: str) -> None:
    assert sniff_format(head) == what
