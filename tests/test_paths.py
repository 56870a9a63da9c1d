"""Expanding "files" arguments: paths, globs, directories, shard specs, file objects (§G24)."""

from __future__ import annotations

import io
import os
import pathlib

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._paths import is_file_object, parse_shard_spec


def _touch(*paths: pathlib.Path) -> None:
    for p in paths:
        p.write_bytes(b"")


def test_shard_name() -> None:
    assert tfr.shard_name("train", 3, 10) == "train-00003-of-00010"
    assert tfr.shard_name("a/b", 0, 1) == "a/b-00000-of-00001"
    assert tfr.shard_name("x", 99999, 100000) == "x-99999-of-100000"
    for index, count in ((10, 10), (-1, 10), (0, 0)):
        with pytest.raises(ValueError):
            tfr.shard_name("train", index, count)


def test_single_paths(tmp_path: pathlib.Path) -> None:
    f = tmp_path / "one.tfrecord"
    _touch(f)
    assert tfr.expand_paths(str(f)) == [str(f)]
    assert tfr.expand_paths(f) == [str(f)]  # os.PathLike
    # A path that does not exist is passed through: opening it reports the error.
    assert tfr.expand_paths(str(tmp_path / "missing")) == [str(tmp_path / "missing")]
    assert tfr.expand_paths(f"file://{f}") == [str(f)]


def test_lists_keep_their_order(tmp_path: pathlib.Path) -> None:
    a, b, c = (tmp_path / n for n in ("a", "b", "c"))
    _touch(a, b, c)
    assert tfr.expand_paths([c, str(a), b]) == [str(c), str(a), str(b)]
    assert tfr.expand_paths((c, a)) == [str(c), str(a)]
    assert tfr.expand_paths(p for p in (b, a)) == [str(b), str(a)]
    assert tfr.expand_paths([a, a]) == [str(a), str(a)]


def test_glob_is_sorted_and_skips_index_files_and_directories(tmp_path: pathlib.Path) -> None:
    names = ["part-10", "part-2", "part-1", "part-01"]
    for n in reversed(names):
        _touch(tmp_path / n)
    _touch(tmp_path / "part-1.index", tmp_path / "part-2.idx", tmp_path / "other")
    (tmp_path / "part-dir").mkdir()
    pattern = str(tmp_path / "part-*")
    assert tfr.expand_paths(pattern) == [str(tmp_path / n) for n in sorted(names)]
    assert tfr.expand_paths(str(tmp_path / "part-?")) == [
        str(tmp_path / "part-1"),
        str(tmp_path / "part-2"),
    ]
    assert tfr.expand_paths(str(tmp_path / "part-[12]")) == [
        str(tmp_path / "part-1"),
        str(tmp_path / "part-2"),
    ]
    with pytest.raises(FileNotFoundError, match="no files match"):
        tfr.expand_paths(str(tmp_path / "nothing-*"))


def test_existing_name_with_glob_characters_is_taken_literally(tmp_path: pathlib.Path) -> None:
    odd = tmp_path / "weird[1]*"
    _touch(odd, tmp_path / "weird1x")
    assert tfr.expand_paths(str(odd)) == [str(odd)]


def test_directory(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    _touch(data / "b", data / "a", data / "c.tfrecord")  # empty files: zero records
    _touch(data / ".hidden", data / "a.index", data / "b.idx")
    (data / "sub").mkdir()
    _touch(data / "sub" / "nested")
    expected = [str(data / n) for n in ("a", "b", "c.tfrecord")]
    assert tfr.expand_paths(data) == expected
    assert tfr.expand_paths(str(data)) == expected
    assert tfr.expand_paths(f"file://{data}") == expected
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "sub").mkdir()
    _touch(empty / "_SUCCESS")
    with pytest.raises(FileNotFoundError, match="holds no TFRecord files") as info:
        tfr.expand_paths(empty)
    assert info.value.filename == str(empty)


def test_shard_spec(tmp_path: pathlib.Path) -> None:
    prefix = str(tmp_path / "train")
    names = [prefix + f"-0000{i}-of-00003" for i in range(3)]
    _touch(*map(pathlib.Path, names))
    assert tfr.expand_paths(prefix + "@3") == names
    _touch(pathlib.Path(prefix + "-00000-of-00001"))
    assert tfr.expand_paths(pathlib.Path(prefix + "@1")) == [prefix + "-00000-of-00001"]
    with pytest.raises(ValueError, match="at least one shard"):
        tfr.expand_paths(prefix + "@0")
    # A file that really is named like a spec is that file.
    literal = tmp_path / "model@2"
    _touch(literal)
    assert tfr.expand_paths(literal) == [str(literal)]


def test_shard_spec_that_matches_nothing_names_the_spec(tmp_path: pathlib.Path) -> None:
    spec = str(tmp_path / "train@4")
    with pytest.raises(FileNotFoundError, match="no shard of") as info:
        tfr.expand_paths(spec)
    assert info.value.filename == spec
    _touch(*(tmp_path / f"train-0000{i}-of-00004" for i in (0, 1, 3)))
    with pytest.raises(FileNotFoundError, match=r"1 of 4 shards.*train-00002-of-00004"):
        tfr.expand_paths(spec)


def test_shard_spec_with_a_suffix(tmp_path: pathlib.Path) -> None:
    # TFX / Beam: data_tfrecord-00000-of-00012.gz ...
    names = [tmp_path / f"data_tfrecord-{i:05d}-of-00012.gz" for i in range(12)]
    _touch(*names)
    assert tfr.expand_paths(str(tmp_path / "data_tfrecord@12.gz")) == [str(n) for n in names]
    multi = [tmp_path / f"t-{i:05d}-of-00002.tfrecord.gz" for i in range(2)]
    _touch(*multi)
    assert tfr.expand_paths(str(tmp_path / "t@2.tfrecord.gz")) == [str(n) for n in multi]
    # Not specs: the suffix must start with "." and hold no "/" or "@".
    assert parse_shard_spec("a@12x") is None
    assert parse_shard_spec("a@x") is None
    assert parse_shard_spec("dir@3/file") is None
    assert parse_shard_spec("a@3.gz") == ("a", 3, ".gz")
    assert parse_shard_spec("user@host/a@3") == ("user@host/a", 3, "")
    assert parse_shard_spec("gs://b/data_tfrecord@12.gz") == ("gs://b/data_tfrecord", 12, ".gz")
    # A real file named like a spec (with a suffix) is that file.
    odd = tmp_path / "weights@3.bin"
    _touch(odd)
    assert tfr.expand_paths(odd) == [str(odd)]


def test_file_objects_pass_through(tmp_path: pathlib.Path) -> None:
    buf = io.BytesIO(b"")
    f = tmp_path / "f"
    _touch(f)
    with f.open("rb") as handle:
        out = tfr.expand_paths([buf, f, handle])
        assert out[0] is buf
        assert out[1] == str(f)
        assert out[2] is handle
        assert tfr.expand_paths(handle) == [handle]


def test_is_file_object() -> None:
    assert is_file_object(io.BytesIO())
    assert is_file_object(io.StringIO())
    assert not is_file_object("path")
    assert not is_file_object(b"path")
    assert not is_file_object(pathlib.Path("path"))
    assert not is_file_object(3)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="no files given"):
        tfr.expand_paths([])
    with pytest.raises(TypeError, match="got int"):
        tfr.expand_paths(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got NoneType"):
        tfr.expand_paths([None])  # type: ignore[list-item]

    class BytesPath(os.PathLike):  # type: ignore[type-arg]
        def __fspath__(self) -> bytes:
            return b"/tmp/x"

    with pytest.raises(TypeError, match=r"str or os\.PathLike"):
        tfr.expand_paths(BytesPath())
