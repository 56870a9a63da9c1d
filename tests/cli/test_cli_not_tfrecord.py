"""The command line on files that are not TFRecord files (a CSV, JSON, a PNG, text, a
gzipped CSV): one clear line each (which file, what it is, what to do), exit 1, and
the other files of the command are still read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._cli import main

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00"
CSV = b"id,name,score\n" + b"".join(b"%d,item%d,%d.5\n" % (i, i, i) for i in range(30))

FILES = {
    "table.csv": (CSV, "starts like CSV text", "write_examples"),
    "config.json": (
        json.dumps({"a": [1, 2, 3], "b": "x"}).encode(),
        "starts like JSON",
        "write_examples",
    ),
    "image.png": (PNG, "starts like a PNG image", "from-images"),
    "notes.txt": (
        b"plain words, one line after another\n" * 5,
        "starts like text",
        "write_examples",
    ),
    "table.csv.gz": (
        gzip.compress(CSV),
        "a GZIP file whose content starts like CSV text",
        "write_examples",
    ),
}


@pytest.fixture(autouse=True)
def _no_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TFRECORD_LITE_PROGRESS", "0")


@pytest.fixture(params=sorted(FILES))
def other(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, str]:
    data, what, todo = FILES[request.param]
    path = tmp_path / request.param
    path.write_bytes(data)
    return str(path), what, todo


def _examples(path: Path, n: int = 3) -> str:
    tfr.write_examples(str(path), {"x": list(range(n))})
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _the_line(text: str, path: str, what: str, todo: str) -> None:
    # Which file, what it is, what to do.
    start = f"{path}: not a TFRecord file: {what}. tfrecord-lite reads TFRecord files (plain, "
    assert text.startswith(start + "GZIP or ZLIB) only; "), text
    assert todo in text
    assert "stored 0x" not in text and "CRC32C" not in text and "record 0" not in text


def test_info_prints_only_the_message(
    capsys: pytest.CaptureFixture[str], other: tuple[str, str, str]
) -> None:
    path, what, todo = other
    code, out, err = _run(capsys, "info", path)
    assert code == 1
    assert out == ""  # no version line, no "records: 0" report
    (line,) = err.splitlines()
    _the_line(line, path, what, todo)


def test_head_prints_the_message_once(
    capsys: pytest.CaptureFixture[str], other: tuple[str, str, str]
) -> None:
    path, what, todo = other
    code, out, err = _run(capsys, "head", path)
    assert code == 1 and out == ""
    (line,) = err.splitlines()
    _the_line(line, path, what, todo)


def test_commands_that_stop_say_it_in_one_line(
    capsys: pytest.CaptureFixture[str], other: tuple[str, str, str], tmp_path: Path
) -> None:
    path, what, todo = other
    for args in (["schema", path], ["convert", path, str(tmp_path / "out.tfrecord")]):
        code, out, err = _run(capsys, *args)
        assert code == 1 and out == "", args
        (line,) = err.splitlines()
        assert line.startswith("tfrecord-lite: error: "), line
        _the_line(line[len("tfrecord-lite: error: ") :], path, what, todo)


def test_info_reads_the_other_files(
    capsys: pytest.CaptureFixture[str], other: tuple[str, str, str], tmp_path: Path
) -> None:
    path, what, todo = other
    a, c = _examples(tmp_path / "a.tfrecord", 3), _examples(tmp_path / "c.tfrecord", 4)
    code, out, err = _run(capsys, "info", a, path, c)
    assert code == 1
    (line,) = err.splitlines()
    _the_line(line, path, what, todo)
    assert out.count("records:") == 2 and out.startswith("tfrecord-lite ")
    assert out.rstrip().endswith("total: 7 records in 2 files (and 1 not a TFRecord file)")


@pytest.mark.parametrize("parse", [True, False])
def test_verify_goes_on_after_a_file_that_is_not_a_tfrecord(
    capsys: pytest.CaptureFixture[str], other: tuple[str, str, str], tmp_path: Path, parse: bool
) -> None:
    path, what, todo = other
    a, c = _examples(tmp_path / "a.tfrecord", 3), _examples(tmp_path / "c.tfrecord", 4)
    code, out, _ = _run(capsys, "verify", *([] if parse else ["--no-parse"]), a, path, c)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"ok     {a}: 3 records"
    _the_line(lines[1], path, what, todo)
    assert lines[2] == f"FAILED {path}: not a TFRecord file"
    assert lines[3] == f"ok     {c}: 4 records"  # read on after it
    assert lines[4] == f"1 of 3 files failed verification: {path}"
    assert len(lines) == 5


def test_the_verify_summary_names_every_failure(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = _examples(tmp_path / "good.tfrecord")
    damaged = tmp_path / "damaged.tfrecord"
    data = bytearray(Path(good).read_bytes())
    data[20] ^= 0xFF  # inside the first record's data
    damaged.write_bytes(bytes(data))
    others = []
    for i in range(12):
        p = tmp_path / f"t{i:02d}.csv"
        p.write_bytes(CSV)
        others.append(str(p))
    code, out, _ = _run(capsys, "verify", good, str(damaged), *others)
    assert code == 1
    summary = out.splitlines()[-1]
    named = ", ".join([str(damaged), *others[:9]])
    assert summary == f"13 of 14 files failed verification: {named} and 3 more", summary
