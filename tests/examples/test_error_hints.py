"""Parse errors say where and what to do (issue 35, item 4): ``read_examples`` names
the file, the record's index in it and its byte offset; a missing required key
suggests the close key the record has (``did you mean 'image/height'?``), or a
default when other records have it; a ``FixedLenFeature`` over lists of varying
length suggests ``VarLenFeature``. The same through every engine and batch size.
"""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path
from typing import Any

import pytest

import tfrecord_lite as tfr

HAS_NUMBA = importlib.util.find_spec("numba") is not None
ENGINES = [
    "numpy",
    pytest.param("jit", marks=pytest.mark.skipif(not HAS_NUMBA, reason="numba not installed")),
]


def _image(i: int, widths: int = 1) -> bytes:
    return tfr.encode_example(
        {"image/height": 28 + i % 3, "image/width": [28] * widths, "image/encoded": b"x" * (i % 5)}
    )


def _write(path: Path, records: list[bytes]) -> None:
    with tfr.TFRecordWriter(str(path)) as w:
        for r in records:
            w.write(r)


def _offset_of(path: Path, index: int) -> int:
    """The byte offset of record ``index``'s header, walked from the file itself."""
    data, pos = path.read_bytes(), 0
    for _ in range(index):
        pos += 16 + struct.unpack_from("<Q", data, pos)[0]
    return pos


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("n", [3, 200])
def test_a_misspelled_required_key_names_the_file_and_the_close_key(
    tmp_path: Path, engine: str, n: int, monkeypatch: Any
) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    first, second = tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"
    _write(first, [_image(i) for i in range(n)])
    _write(second, [_image(i) for i in range(n)])
    spec = {"image/heigth": tfr.FixedLenFeature([], tfr.int64)}
    with pytest.raises(tfr.ParseError) as err:
        tfr.read_examples([str(first), str(second)], spec)
    e = err.value
    assert e.path == str(first) and e.index == 0 and e.offset == 0
    assert "did you mean 'image/height'?" in str(e).lower()
    assert e.key == "image/heigth"
    assert str(first) in str(e)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_error_in_a_later_file_names_that_file_and_its_own_record_index(
    tmp_path: Path, engine: str, monkeypatch: Any
) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    first, second = tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"
    _write(first, [_image(i) for i in range(150)])
    bad = [_image(i) for i in range(150)]
    bad[97] = tfr.encode_example({"image/width": [28]})  # no height in record 97 of b
    _write(second, bad)
    spec = {"image/height": tfr.FixedLenFeature([], tfr.int64)}
    with pytest.raises(tfr.ParseError) as err:
        tfr.read_examples([str(first), str(second)], spec)
    e = err.value
    assert (e.path, e.index, e.offset) == (str(second), 97, _offset_of(second, 97))
    assert "Other records have 'image/height'" in str(e) and "default_value" in str(e)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("n", [1, 8, 100])
def test_a_fixed_len_feature_over_varying_lengths_suggests_var_len(
    engine: str, n: int, monkeypatch: Any
) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    records = [_image(i, widths=1 + i % 2) for i in range(n)] + [_image(1, widths=2)]
    spec = {"image/width": tfr.FixedLenFeature([], tfr.int64)}
    with pytest.raises(tfr.ParseError, match="Values size: 2") as err:
        tfr.parse_example(records, spec)
    assert "tfr.VarLenFeature(tfr.int64)" in str(err.value)
    # every record with two: the shape that reads them
    with pytest.raises(tfr.ParseError) as err:
        tfr.parse_example([_image(i, widths=2) for i in range(n)], spec)
    assert "tfr.FixedLenFeature([2], tfr.int64)" in str(err.value)


@pytest.mark.parametrize("engine", ENGINES)
def test_parse_single_example_suggests_the_close_key_too(engine: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    spec = {
        "image/encoded": tfr.FixedLenFeature([], tfr.string),
        "label": tfr.FixedLenFeature([], tfr.int64),
    }
    record = tfr.encode_example({"image/encoded": b"png", "image/class/label": 3})
    with pytest.raises(tfr.ParseError) as err:
        tfr.parse_single_example(record, spec)
    # no close key: the record's keys are listed instead
    assert "'image/class/label'" in str(err.value) and err.value.key == "label"
    with pytest.raises(tfr.ParseError, match="Did you mean 'image/encoded'"):
        tfr.parse_single_example(record, {"image/encode": tfr.FixedLenFeature([], tfr.string)})
