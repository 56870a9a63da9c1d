"""``tfrecord-lite convert`` writes the format its output's name says, or refuses.

The name's extension (``.tfrecord.gz`` GZIP, ``.zz`` ZLIB, ``.parquet``, ``.arrow`` /
``.feather``) picks the format and compression; ``--to`` / ``--compression`` that
disagree with it, or an extension of another or an unknown format, are refused with
exit 2 before anything is written, and a table output that fails leaves nothing behind.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._cli import main

SPEC = {"x": tfr.FixedLenFeature([], tfr.int64), "name": tfr.FixedLenFeature([], tfr.string)}


def _source(tmp_path: Path, n: int = 9) -> tuple[Path, list[bytes]]:
    records = [
        tfr.encode_example({"x": np.array([i], np.int64), "name": [f"r{i}".encode()]})
        for i in range(n)
    ]
    path = tmp_path / "in.tfrecord"
    with tfr.TFRecordWriter(path) as w:
        w.write_all(records)
    return path, records


def _records(path: Path) -> list[bytes]:
    return list(tfr.tf_record_iterator(path))


def _leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name not in keep)


def test_the_compression_comes_from_the_name(tmp_path: Path) -> None:
    src, records = _source(tmp_path)
    for name, magic in (
        ("out.tfrecord.gz", "GZIP"),
        ("out.gz", "GZIP"),
        ("out.tfrecord.zz", "ZLIB"),
        ("out.zlib", "ZLIB"),
        ("out.tfrecord.gzip", "GZIP"),
    ):
        assert main(["-q", "convert", str(src), str(tmp_path / name)]) == 0, name
        head = (tmp_path / name).read_bytes()[:16]
        assert tfr.detect_compression(head) == magic, name
        assert _records(tmp_path / name) == records, name
    # --compression may say what the name says
    same = tmp_path / "same.tfrecord.gz"
    assert main(["-q", "convert", str(src), str(same), "--compression", "GZIP"]) == 0
    assert same.read_bytes()[:2] == b"\x1f\x8b"
    # and a shard prefix's name says it for every shard
    argv = ["-q", "convert", str(src), str(tmp_path / "sh.tfrecord.gz"), "--shards", "2"]
    assert main(argv) == 0
    shards = [tmp_path / tfr.shard_name("sh.tfrecord.gz", i, 2) for i in range(2)]
    assert [s.read_bytes()[:2] for s in shards] == [b"\x1f\x8b", b"\x1f\x8b"]
    assert _records(shards[0]) + _records(shards[1]) == records
    # names that say no format stay uncompressed TFRecords
    for name in ("plain", "part.00001", "run.2024-01-05", "out.tfrecords", "out.record"):
        assert main(["-q", "convert", str(src), str(tmp_path / name)]) == 0, name
        assert _records(tmp_path / name) == records
        assert tfr.detect_compression((tmp_path / name).read_bytes()[:16]) == "", name


def test_parquet_and_arrow_come_from_the_name(tmp_path: Path, capsys: Any) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow.feather as feather

    src, _ = _source(tmp_path)
    want = pa.table({"name": [f"r{i}".encode() for i in range(9)], "x": list(range(9))})

    def check(table: Any) -> None:
        got = table.select(["name", "x"])
        assert got.column("x").to_pylist() == want.column("x").to_pylist()
        assert got.column("name").to_pylist() == want.column("name").to_pylist()

    assert main(["convert", str(src), str(tmp_path / "t.parquet")]) == 0
    assert "wrote 9 records" in capsys.readouterr().out
    check(pq.read_table(tmp_path / "t.parquet"))
    for name in ("t.arrow", "t.feather", "t.ipc"):
        assert main(["-q", "convert", str(src), str(tmp_path / name)]) == 0
        check(feather.read_table(tmp_path / name))
    # --to names the format of a name without an extension
    assert main(["-q", "convert", str(src), str(tmp_path / "table"), "--to", "arrow"]) == 0
    check(feather.read_table(tmp_path / "table"))
    # and a table back to TFRecords, GZIP by its name
    back = tmp_path / "back.tfrecord.gz"
    assert main(["-q", "convert", str(tmp_path / "t.feather"), str(back)]) == 0
    assert back.read_bytes()[:2] == b"\x1f\x8b"
    assert tfr.parse_example(_records(back), SPEC)["x"].tolist() == list(range(9))
    # Parquet <-> Arrow: the same columns in the other container
    assert main(["-q", "convert", str(tmp_path / "t.parquet"), str(tmp_path / "p.arrow")]) == 0
    check(feather.read_table(tmp_path / "p.arrow"))
    assert main(["-q", "convert", str(tmp_path / "p.arrow"), str(tmp_path / "a.parquet")]) == 0
    check(pq.read_table(tmp_path / "a.parquet"))


@pytest.mark.parametrize(
    "out, options, said",
    [
        ("out.parquet", ["--to", "tfrecord"], "named as a Parquet file"),
        ("out.tfrecord", ["--to", "parquet"], "named as a TFRecord file"),
        ("out.feather", ["--to", "parquet"], "named as an Arrow IPC"),
        ("out.gz", ["--compression", "ZLIB"], "--compression ZLIB"),
        ("out.tfrecord.zz", ["--compression", "NONE"], "--compression NONE"),
        ("out.parquet", ["--compression", "GZIP"], "--compression is for TFRecord"),
        ("out.parquet.gz", [], "'.parquet.gz'"),
        ("out.arrow", ["--shards", "2"], "--shards and --index"),
        ("out.xyz", [], "'.xyz', that convert does not know"),
        ("out.csv", [], "named as a CSV file"),
        ("out.tar.gz", [], "'.tar.gz' asks for GZIP compression of a WebDataset"),
        ("out.tar", ["--to", "array_record"], "named as a WebDataset (tar) file"),
        ("out.array_record", ["--to", "tfrecord"], "named as an ArrayRecord file"),
        ("out.riegeli", [], "named as a Riegeli file"),
        ("new/dir/out.json", [], "named as a JSON file"),
    ],
)
def test_a_name_the_options_disagree_with_is_refused_before_writing(
    tmp_path: Path, capsys: Any, out: str, options: list[str], said: str
) -> None:
    src, _ = _source(tmp_path)
    assert main(["convert", str(src), str(tmp_path / out), *options]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err, err
    assert _leftovers(tmp_path, {"in.tfrecord"}) == []  # no output, temp file or folder


def test_a_failed_table_output_leaves_nothing_behind(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    feather = pytest.importorskip("pyarrow.feather")
    from tfrecord_lite._cli._convert_tables import TableFile

    src, records = _source(tmp_path)
    data = bytearray(src.read_bytes())
    size = len(records[0]) + 16  # every record is as long (one-digit values)
    assert all(len(r) + 16 == size for r in records)
    data[3 * size + 12] ^= 0xFF  # record 3's first data byte: its data CRC fails
    src.write_bytes(bytes(data))
    out = tmp_path / "out.arrow"
    assert main(["convert", str(src), str(out)]) == 1
    assert "record 3" in capsys.readouterr().err
    assert _leftovers(tmp_path, {"in.tfrecord"}) == []
    # --skip-bad: the damaged record reported and left out, the rest written as Arrow
    assert main(["convert", str(src), str(out), "--skip-bad"]) == 1
    captured = capsys.readouterr()
    assert "record 3" in captured.err and "1 damaged record skipped" in captured.out
    assert feather.read_table(out).column("x").to_pylist() == [0, 1, 2, 4, 5, 6, 7, 8]
    # interrupted once rows are in the temporary file: it is removed, nothing is renamed
    real_write = TableFile.write

    def write_then_interrupt(self: TableFile, table: Any) -> None:
        real_write(self, table)
        assert os.path.getsize(self.tmp) > 0
        raise KeyboardInterrupt

    monkeypatch.setattr(TableFile, "write", write_then_interrupt)
    for name in ("new.parquet", "new.arrow"):
        assert main(["-q", "convert", str(src), str(tmp_path / name), "--skip-bad"]) == 130
        assert _leftovers(tmp_path, {"in.tfrecord", "out.arrow"}) == []


def test_formats_convert_writes_but_does_not_read_are_refused_as_inputs(
    tmp_path: Path, capsys: Any
) -> None:
    src, records = _source(tmp_path)
    for name in ("in.tar", "in.array_record"):
        (tmp_path / name).write_bytes(src.read_bytes())
        assert main(["convert", str(tmp_path / name), str(tmp_path / "o.tfrecord")]) == 2
        assert "writes but does not read" in capsys.readouterr().err
        # --from tfrecord reads a TFRecord file of any name
        argv = ["-q", "convert", str(tmp_path / name), str(tmp_path / "o.tfrecord")]
        assert main([*argv, "--from", "tfrecord"]) == 0
        assert _records(tmp_path / "o.tfrecord") == records
