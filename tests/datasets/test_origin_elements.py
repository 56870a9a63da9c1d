"""An error raised on an element that is no longer a record (the dicts ``parse`` makes,
what ``map`` makes of them, a ``batch`` of them that cannot be stacked) names the file,
index and byte offset of the record it was made from (the first, for several): as a
note on any error (``__notes__``), as ``path`` / ``index`` / ``offset`` on a
TFRecordError; and never a wrong place."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr

F = {"x": tfr.FixedLenFeature([], tfr.int64), "v": tfr.VarLenFeature(tfr.int64)}
N = 300
BAD = 1000 + 137  # the x of record 137 of the second file


def _records(base: int) -> list[bytes]:
    return [
        tfr.make_example({"x": [base + i], "v": list(range(i % 3 + 1))}).SerializeToString()
        for i in range(N)
    ]


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    out = []
    for k, base in enumerate((0, 1000)):
        path = os.fspath(tmp_path / f"part{k}.tfrecord")
        with tfr.TFRecordWriter(path) as w:
            w.write_all(_records(base))
        out.append(path)
    return out


def _offset(base: int, index: int) -> int:
    return sum(len(r) + 16 for r in _records(base)[:index])


def _place(path: str, base: int, index: int) -> str:
    return f"file {path!r}, record {index}, byte offset {_offset(base, index)}"


def _fail_on_bad(d: dict[str, Any]) -> dict[str, Any]:
    if int(d["x"]) == BAD:
        raise KeyError("no label for this id")
    return d


def _error(ds: tfr.data.Dataset) -> BaseException:
    with pytest.raises(Exception) as info:
        for _ in ds:
            pass
    return info.value


def _notes(err: BaseException) -> list[str]:
    return list(getattr(err, "__notes__", []))


ONE_RECORD: dict[str, Callable[[list[str]], Any]] = {
    "parse.map": lambda f: tfr.TFRecordDataset(f).parse(F).map(_fail_on_bad),
    "parse.map.map": lambda f: (
        tfr.TFRecordDataset(f).parse(F).map(lambda d: {"x": d["x"]}).map(_fail_on_bad)
    ),
    "map(parse_single_example).map": lambda f: (
        tfr.TFRecordDataset(f).map(lambda r: tfr.io.parse_single_example(r, F)).map(_fail_on_bad)
    ),
    "parse.map-threads": lambda f: (
        tfr.TFRecordDataset(f).parse(F).map(_fail_on_bad, num_parallel_calls=3)
    ),
    "parse.filter": lambda f: tfr.TFRecordDataset(f).parse(F).filter(_fail_on_bad),
    "parse.take.map": lambda f: tfr.TFRecordDataset(f).parse(F).take(2 * N).map(_fail_on_bad),
    "parse-threads.map": lambda f: (
        tfr.TFRecordDataset(f).parse(F, num_parallel_calls=2).map(_fail_on_bad)
    ),
}


@pytest.mark.parametrize("name", sorted(ONE_RECORD))
def test_an_error_on_a_parsed_element_names_its_record(files: list[str], name: str) -> None:
    err = _error(ONE_RECORD[name](files))
    assert isinstance(err, KeyError)  # the function's own error, as it raised it
    (note,) = _notes(err)
    assert note.startswith(f"the element that failed was made from {_place(files[1], 1000, 137)}")
    assert ".ignore_errors()" in note


def test_a_batch_that_cannot_be_stacked_names_where_it_starts(files: list[str]) -> None:
    ds = (
        tfr.TFRecordDataset(files)
        .parse(F)
        .skip(N + 64)
        .map(lambda d: {"v": np.asarray(d["v"].values)})
        .batch(8, ragged="error")
    )
    err = _error(ds)
    assert isinstance(err, ValueError) and "cannot batch key ['v']" in str(err)
    (note,) = _notes(err)
    start = f"the batch that failed starts with the element made from {_place(files[1], 1000, 64)}"
    assert note.startswith(start), note


def test_an_error_on_a_parsed_batch_names_its_first_record(files: list[str]) -> None:
    def fail(batch: dict[str, Any]) -> Any:
        if BAD in np.asarray(batch["x"]):
            raise ValueError("this batch holds a bad id")
        return batch

    err = _error(tfr.TFRecordDataset(files).parse(F).batch(32).map(fail))
    (note,) = _notes(err)
    # Batches run across the files: record 137 of the second file is in the batch
    # that starts at its record (N + 137) // 32 * 32 - N (116).
    first = _place(files[1], 1000, (N + 137) // 32 * 32 - N)
    assert note.startswith(f"the element that failed was made from {first} (its first record)")


def test_a_tfrecord_error_raised_on_an_element_gets_its_place(files: list[str]) -> None:
    def fail(d: dict[str, Any]) -> Any:
        if int(d["x"]) == BAD:
            raise tfr.ParseError("the id is not in the table")
        return d

    err = _error(tfr.TFRecordDataset(files).parse(F).map(fail))
    assert isinstance(err, tfr.ParseError)
    assert (err.path, err.index, err.offset) == (files[1], 137, _offset(1000, 137))
    assert "the id is not in the table" in str(err) and ".ignore_errors()" in str(err)


def test_after_a_shuffle_the_place_is_right_or_not_given(files: list[str]) -> None:
    for seed in range(4):
        ds = tfr.TFRecordDataset(files).parse(F).shuffle(50, seed=seed).map(_fail_on_bad)
        notes = _notes(_error(ds))
        assert len(notes) <= 1 and all(_place(files[1], 1000, 137) in n for n in notes)


def test_shared_objects_are_never_placed_wrong(files: list[str]) -> None:
    # A function that returns one constant for every element: after a shuffle buffer,
    # the element met is an old one, and the same object as the newest: no place.
    constant = {"k": 1}
    seen = [0]

    def fail_late(d: dict[str, Any]) -> Any:
        seen[0] += 1
        if seen[0] == 150:  # while the shuffle still reads
            raise RuntimeError("late")
        return d

    ds = tfr.TFRecordDataset(files).parse(F).map(lambda d: constant).shuffle(100, seed=3)
    assert _notes(_error(ds.map(fail_late))) == []


def test_elements_not_made_from_records_get_no_note() -> None:
    ds = tfr.data.Dataset.from_tensor_slices(np.arange(10)).map(lambda i: {"i": i})

    def fail(d: dict[str, Any]) -> Any:
        if int(d["i"]) == 5:
            raise ValueError("five")
        return d

    assert _notes(_error(ds.map(fail))) == []


def test_values_are_unchanged(files: list[str]) -> None:
    ds = tfr.TFRecordDataset(files).parse(F).map(lambda d: {"x": d["x"]}).batch(50)
    got = np.concatenate([np.asarray(b["x"]) for b in ds])
    assert got.tolist() == list(range(N)) + list(range(1000, 1000 + N))
