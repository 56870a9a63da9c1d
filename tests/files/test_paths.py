"""Expanding "files" arguments: paths, globs, directories, shard specs, file objects (§G24)."""

from __future__ import annotations

import io
import os
import pathlib

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files._paths import is_file_object, parse_shard_spec


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
    with pytest.raises(FileNotFoundError, match=r"only 3 of 4 shards.*train-00002-of-00004"):
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


# --------------------------------------------------------------------------- the directory rule


def _write_records(path: pathlib.Path, n: int, compression: str = "") -> list[bytes]:
    recs = [bytes([i % 256]) * (i + 1) for i in range(n)]
    with tfr.TFRecordWriter(str(path), compression) as w:
        for r in recs:
            w.write(r)
    return recs


def test_directory_skips_sidecars_markers_and_hidden_files(tmp_path: pathlib.Path) -> None:
    a = _write_records(tmp_path / "part-0", 3)
    b = _write_records(tmp_path / "part-1.gz", 4, "GZIP")
    tfr.create_index(str(tmp_path / "part-0"))
    (tmp_path / "labels.txt").write_text("cat\ndog\n")
    (tmp_path / "train.labels.txt").write_text("cat\n")
    (tmp_path / "features.json").write_text("{}")
    (tmp_path / "dataset_info.json").write_text("{}")
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / "_metadata").write_text("x")
    (tmp_path / ".part-2.tmp-abc").write_text("partial")
    assert tfr.expand_paths(tmp_path) == [str(tmp_path / "part-0"), str(tmp_path / "part-1.gz")]
    assert list(tfr.TFRecordDataset(str(tmp_path))) == a + b


def test_directory_with_another_file_is_an_error_naming_it_and_the_rule(
    tmp_path: pathlib.Path,
) -> None:
    _write_records(tmp_path / "part-0", 3)
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")
    with pytest.raises(tfr.CorruptRecordError) as info:
        tfr.TFRecordDataset(str(tmp_path))
    err = info.value
    assert err.path == str(tmp_path / "notes.csv")
    assert "not a TFRecord file" in str(err)
    assert "skipping hidden files" in str(err) and "labels.txt" in str(err)
    # a glob or a list chooses the files: no rule applies
    assert tfr.expand_paths(str(tmp_path / "part-*")) == [str(tmp_path / "part-0")]


def test_from_images_output_directory_reads_back(tmp_path: pathlib.Path) -> None:
    # issue 11, defect 3: from-images writes labels.txt beside its shards; reading
    # or verifying the output directory must not trip over it.
    pil = pytest.importorskip("PIL.Image")
    from tfrecord_lite._cli import main

    photos = tmp_path / "photos"
    for label in ("apple", "orange"):
        (photos / label).mkdir(parents=True)
        for i in range(3):
            pil.new("RGB", (8, 8), (i * 40, 0, 0)).save(photos / label / f"{i}.png")
    out = tmp_path / "out"
    assert main(["-q", "from-images", str(photos), str(out / "photos")]) == 0
    assert (out / "labels.txt").exists()
    assert len(list(tfr.TFRecordDataset(str(out)))) == 6
    assert main(["-q", "verify", str(out)]) == 0


# --------------------------------------------------------------------------- URLs (memory://)


@pytest.fixture
def mem() -> str:
    pytest.importorskip("fsspec")
    import uuid

    return f"memory://tfr-{uuid.uuid4().hex[:10]}"


def test_url_forms_expand_like_local_paths(mem: str) -> None:
    names = [f"{mem}/d/data_tfrecord-{i:05d}-of-00003.gz" for i in range(3)]
    for i, url in enumerate(names):
        with tfr.TFRecordWriter(url, "GZIP") as w:
            w.write(b"r%d" % i)
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe(f"{mem}/d/labels.txt", b"a\nb\n")
    fs.pipe(f"{mem}/d/_SUCCESS", b"")
    assert tfr.expand_paths(f"{mem}/d/data_tfrecord@3.gz") == names
    assert tfr.expand_paths(f"{mem}/d/*.gz") == names
    assert tfr.expand_paths(f"{mem}/d") == names
    assert tfr.expand_paths([names[2], names[0]]) == [names[2], names[0]]
    assert list(tfr.TFRecordDataset(f"{mem}/d", num_parallel_reads=3)) == [b"r0", b"r1", b"r2"]
    for missing in (f"{mem}/d/nothing-*", f"{mem}/d/x@2", f"{mem}/empty/"):
        with pytest.raises(FileNotFoundError) as info:
            tfr.expand_paths(missing)
        assert info.value.filename == missing
        assert "%s" not in str(info.value)


def test_url_storage_options_travel_with_the_urls(mem: str) -> None:
    import pickle

    from tfrecord_lite._files import _fs

    url = _fs.bind(f"{mem}/x", {"skip_instance_cache": False})
    assert isinstance(url, _fs.URL) and url == f"{mem}/x"
    assert (url + ".index").storage_options == url.storage_options
    back = pickle.loads(pickle.dumps(url))
    assert back == url and back.storage_options == url.storage_options
    assert "skip_instance_cache" not in repr(url)
    with pytest.raises(ValueError, match="storage_options are for URLs"):
        tfr.expand_paths("local/file", storage_options={"key": "k"})


def test_url_reader_reads_in_ranged_blocks_with_read_ahead(mem: str) -> None:
    from tfrecord_lite._files import _fs

    data = bytes(range(256)) * 40_000  # ~10 MiB: three 4 MiB blocks
    import fsspec

    fsspec.filesystem("memory").pipe(f"{mem}/blob", data)
    with _fs.open_read(f"{mem}/blob") as f:
        assert f.read(10) == data[:10]
        f.seek(5_000_000)
        assert f.read(4_000_000) == data[5_000_000:9_000_000]
        f.seek(-3, 2)
        assert f.read() == data[-3:]
        assert f.read(5) == b""
    assert _fs.head(f"{mem}/blob", 16) == data[:16]
    assert _fs.read_range(f"{mem}/blob", 100, 7) == data[100:107]


def test_url_writers_index_and_random_access(mem: str) -> None:
    recs = [b"x" * i for i in range(100)]
    url = f"{mem}/f.tfrecord"
    with tfr.TFRecordWriter(url) as w:
        for r in recs:
            w.write(r)
    assert tfr.create_index(url) == url + ".index"
    f = tfr.TFRecordFile(url)
    assert f.index_path == url + ".index" and f[42] == recs[42] and len(f) == 100
    # atomic on a filesystem without commit-on-close: a hidden temporary, moved at close
    with pytest.raises(KeyError), tfr.TFRecordWriter(f"{mem}/a.tfrecord", atomic=True) as w:
        w.write(b"no")
        raise KeyError
    from tfrecord_lite._files import _fs

    assert not _fs.exists(f"{mem}/a.tfrecord")
    assert [p for p, _ in _fs.listdir(mem)] == [url, url + ".index"]
    with tfr.TFRecordWriter(f"{mem}/a.tfrecord", atomic=True) as w:
        w.write(b"yes")
    assert list(tfr.tf_record_iterator(f"{mem}/a.tfrecord")) == [b"yes"]
    with tfr.TFRecordWriter(f"{mem}/a.tfrecord", mode="a") as w:
        w.write(b"more")
    assert list(tfr.tf_record_iterator(f"{mem}/a.tfrecord")) == [b"yes", b"more"]
    with tfr.ShardedWriter(f"{mem}/s/train", records_per_shard=40, suffix=".tfr") as sw:
        sw.write_all(recs)
    assert list(tfr.TFRecordDataset(f"{mem}/s/train@3.tfr")) == recs


def test_torch_datasets_take_urls(mem: str) -> None:
    pytest.importorskip("torch")
    import tfrecord_lite.torch as tfrt

    recs = [tfr.encode_example({"id": [i]}) for i in range(12)]
    for shard in range(2):
        with tfr.TFRecordWriter(f"{mem}/t/train-0000{shard}-of-00002") as w:
            w.write_all(recs[shard * 6 : shard * 6 + 6])
    features = {"id": tfr.FixedLenFeature([], tfr.int64)}
    mapped = tfrt.MapDataset(f"{mem}/t/train@2", features, storage_options={})
    assert len(mapped) == 12 and int(mapped[7]["id"]) == 7
    streamed = tfrt.IterableDataset(f"{mem}/t", features, storage_options={})
    assert sorted(int(x["id"]) for x in streamed) == list(range(12))
