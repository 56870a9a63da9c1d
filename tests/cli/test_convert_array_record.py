"""``tfrecord-lite convert IN out.array_record``: the records' bytes as they are, read
back with the ``array_record`` package's own reader; without the package, an error
naming the extra and nothing written."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._cli import main


def _source(tmp_path: Path, n: int = 50) -> tuple[Path, list[bytes]]:
    records = [
        tfr.encode_example({"x": np.arange(i, dtype=np.int64), "b": [bytes(range(i % 256))]})
        for i in range(n)
    ]
    path = tmp_path / "in.tfrecord.gz"
    with tfr.TFRecordWriter(path, "GZIP") as w:
        w.write_all(records)
    return path, records


def test_the_records_read_back_with_array_records_reader(tmp_path: Path, capsys: Any) -> None:
    module = pytest.importorskip("array_record.python.array_record_module")
    src, records = _source(tmp_path)
    out = tmp_path / "sub" / "train.array_record"
    assert main(["convert", str(src), str(out)]) == 0
    assert "wrote 50 records to" in capsys.readouterr().out
    reader = module.ArrayRecordReader(str(out))
    try:
        assert reader.num_records() == 50
        assert list(reader.read_all()) == records
        assert reader.read([7, 3]) == [records[7], records[3]]  # random access
    finally:
        reader.close()
    # --to names the format of a name without the extension
    plain = tmp_path / "plain"
    assert main(["-q", "convert", str(src), str(plain), "--to", "array_record"]) == 0
    reader = module.ArrayRecordReader(str(plain))
    assert list(reader.read_all()) == records
    reader.close()


def test_grains_data_source_reads_it(tmp_path: Path) -> None:
    pytest.importorskip("array_record.python.array_record_module")
    sources = pytest.importorskip("array_record.python.array_record_data_source")
    src, records = _source(tmp_path, n=20)
    out = tmp_path / "t.array_record"
    assert main(["-q", "convert", str(src), str(out)]) == 0
    ds = sources.ArrayRecordDataSource([str(out)])
    assert len(ds) == 20 and ds[19] == records[19]


def test_damage_leaves_nothing(tmp_path: Path, capsys: Any) -> None:
    pytest.importorskip("array_record.python.array_record_module")
    records = [tfr.encode_example({"x": np.array([i], np.int64)}) for i in range(9)]
    src = tmp_path / "in.tfrecord"
    with tfr.TFRecordWriter(src) as w:
        w.write_all(records)
    data = bytearray(src.read_bytes())
    data[-5] ^= 0xFF  # the last record's data CRC fails
    src.write_bytes(bytes(data))
    assert main(["convert", str(src), str(tmp_path / "o.array_record")]) == 1
    assert "record 8" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.tfrecord"]


def test_without_the_package_the_error_names_the_extra(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, _ = _source(tmp_path, n=3)
    monkeypatch.setitem(sys.modules, "array_record.python.array_record_module", None)
    assert main(["convert", str(src), str(tmp_path / "o.array_record")]) == 1
    err = capsys.readouterr().err
    assert 'pip install "tfrecord-lite-np[array_record]"' in err, err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.tfrecord.gz"]
