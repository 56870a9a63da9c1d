"""Reading ``offset length`` text indexes: in bounded pieces with NumPy, in memory about
the table's own size, and strict about what a line may hold."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from tfrecord_lite._files import _indexfile
from tfrecord_lite._files._index import StaleIndexError, read_index


def text_index(path: Path, lines: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(16, 10**6, lines)
    offsets = np.cumsum(lengths) - lengths
    table = np.stack([offsets, lengths], axis=1)
    path.write_text("".join(f"{a} {b}\n" for a, b in table.tolist()))
    return table


def test_a_big_index_is_read_in_about_the_memory_of_its_table(tmp_path: Path) -> None:
    path = tmp_path / "big.index"
    table = text_index(path, 300_000)
    tracemalloc.start()
    try:
        got = read_index(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(got, table)
    # The table (4.8 MB) and one piece's working arrays; a parser building Python
    # lists of the lines takes well over ten times the table.
    assert peak < table.nbytes + 40 * _indexfile.TEXT_CHUNK, (peak, table.nbytes)


@pytest.mark.parametrize("chunk", [1, 7, 64, 4096])
def test_lines_cut_by_the_pieces_read(
    tmp_path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_indexfile, "TEXT_CHUNK", max(chunk, 40))
    path = tmp_path / "x.index"
    table = text_index(path, 500, seed=chunk)
    assert np.array_equal(read_index(path), table)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n").rstrip(b"\r\n"))
    assert np.array_equal(read_index(path), table)


def test_numbers_up_to_eighteen_digits(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    path.write_text("0 16\n16 999999999999999999\n")
    assert read_index(path).tolist() == [[0, 16], [16, 999999999999999999]]
    path.write_text("0 16\n16 9999999999999999999\n")
    with pytest.raises(StaleIndexError, match="18 digits"):
        read_index(path)


@pytest.mark.parametrize(
    ("text", "line"), [("0 16\n16 +3\n", 2), ("0 16\n\n\n1_6 3\n", 4), ("0 1\x00\n", 1)]
)
def test_a_bad_byte_is_named_with_its_line(tmp_path: Path, text: str, line: int) -> None:
    path = tmp_path / "x.index"
    path.write_text(text)
    with pytest.raises(StaleIndexError, match=f"line {line} ") as info:
        read_index(path)
    assert info.value.path == str(path)


def test_a_line_without_end_is_refused_not_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_indexfile, "TEXT_CHUNK", 1024)
    path = tmp_path / "x.index"
    path.write_text("0 16\n" + " " * 5000 + "16 3\n")
    with pytest.raises(StaleIndexError, match="over 1024 bytes"):
        read_index(path)
