"""Files that are not TFRecord files are said to be so, in one line: what they start like."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._cli import main
from tfrecord_lite._files import NotATFRecordError, sniff_format


def _jpeg() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(out, "JPEG")
    return out.getvalue()


def _npz() -> bytes:
    out = io.BytesIO()
    np.savez(out, a=np.arange(10))
    return out.getvalue()


FILES = {
    "photo.jpg": (_jpeg, "a JPEG image"),
    "config.json": (lambda: json.dumps({"a": [1, 2, 3], "b": "text"}).encode(), "JSON"),
    "notes.txt": (lambda: b"some notes, one line after another\n" * 10, "text"),
    "arrays.npz": (_npz, "a ZIP archive"),
}


@pytest.fixture(params=sorted(FILES))
def not_tfrecord(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    make, what = FILES[request.param]
    path = tmp_path / request.param
    path.write_bytes(make())
    return path, what


def test_every_reader_says_what_the_file_is(not_tfrecord: tuple[Path, str]) -> None:
    path, what = not_tfrecord
    readers = [
        lambda: list(tfr.tf_record_iterator(path)),
        lambda: list(tfr.TFRecordDataset(str(path))),
        lambda: tfr.create_index(path),
        lambda: tfr.TFRecordFile(path),
    ]
    for read in readers:
        with pytest.raises(NotATFRecordError) as info:
            read()
        err = info.value
        assert str(err).startswith(f"not a TFRecord file: starts like {what}"), str(err)
        assert err.path == str(path) and err.offset == 0
        assert isinstance(err, tfr.CorruptRecordError) and isinstance(err, ValueError)
        assert "stored 0x" not in str(err)
    # Skipping damage: the whole file is one report (never a record), and reading goes on.
    for mode in ("skip", "stop"):
        reports: list[tfr.SkipReport] = []
        assert list(tfr.read_records(path, on_error=mode, on_skip=reports.append)) == []
        (report,) = reports
        assert isinstance(report.error, NotATFRecordError) and report.to_end
        assert (report.path, report.offset, report.length) == (str(path), 0, path.stat().st_size)


def test_the_cli_says_what_the_file_is(
    not_tfrecord: tuple[Path, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # in-process (the console script and `python -m tfrecord_lite` run the same main():
    # tests/cli/test_cli.py starts them as processes)
    path, what = not_tfrecord
    monkeypatch.setenv("TFRECORD_LITE_PROGRESS", "0")
    for command in ("count", "info", "verify", "head"):
        code = main([command, str(path)])
        out = capsys.readouterr()
        text = (out.out + out.err).strip()
        assert code != 0, text
        assert f"not a TFRecord file: starts like {what}" in text, (command, text)
        assert "stored 0x" not in text and "CRC32C of its" not in text, (command, text)


def test_a_directory_with_a_stray_file_names_it(tmp_path: Path) -> None:
    with tfr.TFRecordWriter(tmp_path / "data.tfrecord") as w:
        w.write(b"x")
    (tmp_path / "photo.jpg").write_bytes(_jpeg())
    with pytest.raises(NotATFRecordError, match="starts like a JPEG image") as info:
        tfr.expand_paths(str(tmp_path))
    assert info.value.path == str(tmp_path / "photo.jpg")


def test_tfrecord_files_and_damaged_ones_are_not_mistaken(tmp_path: Path) -> None:
    records = [b"abc", b"", b"x" * 300]
    for compression in ("", "GZIP", "ZLIB"):
        path = tmp_path / f"data{compression}"
        with tfr.TFRecordWriter(path, compression) as w:
            w.write_all(records)
        assert sniff_format(path.read_bytes()[:64]) is None
    assert sniff_format(b"") is None
    # A file whose first record is damaged is still salvaged, not refused.
    framed = bytearray(tfr.encode_records(records))
    framed[9] ^= 0xFF
    (tmp_path / "damaged").write_bytes(bytes(framed))
    reports: list[tfr.SkipReport] = []
    got = list(tfr.read_records(tmp_path / "damaged", on_error="skip", on_skip=reports.append))
    assert got == records[1:] and reports[0].reason == "header"
