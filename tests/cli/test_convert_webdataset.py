"""``tfrecord-lite convert IN out.tar``: WebDataset samples, read back with ``tarfile``.

One sample per record: an encoded image kept byte for byte as ``KEY.jpg`` /
``KEY.png``, the other features in ``KEY.json``, long or non-JSON arrays as
``KEY.FEATURE.npy``, bytes that are not text as ``KEY.FEATURE.bin``; shards by size;
atomic outputs; an existing target refused unless ``--overwrite``.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._cli import main

PNG_1x1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a2b3b5a90000000049454e44ae426082"
)


def _jpeg(i: int) -> bytes:
    # a JPEG's start (SOI, APP0) is enough for the sniffer; the bytes must come back as they are
    return b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes([i % 256]) * (50 + i) + b"\xff\xd9"


def _record(i: int) -> bytes:
    return tfr.encode_example(
        {
            "image": [_jpeg(i)],
            "label": np.array([i], np.int64),
            "name": [f"sample {i}".encode()],
            "score": np.array([0.1 * i], np.float32),
            "embedding": np.arange(40, dtype=np.float32) * i,
            "blob": [bytes([0xFF, 0xFE, i])],
            "id": [f"id{i:03d}".encode()],
        }
    )


def _source(tmp_path: Path, n: int = 12, name: str = "in.tfrecord") -> Path:
    path = tmp_path / name
    with tfr.TFRecordWriter(path) as w:
        w.write_all([_record(i) for i in range(n)])
    return path


def _members(path: Path) -> list[tuple[str, bytes]]:
    with tarfile.open(path) as tar:
        out = []
        for m in tar.getmembers():
            f = tar.extractfile(m)
            assert f is not None
            out.append((m.name, f.read()))
        return out


def _samples(paths: list[Path]) -> dict[str, dict[str, bytes]]:
    """Files grouped by key as WebDataset groups them (the name up to the first dot)."""
    samples: dict[str, dict[str, bytes]] = {}
    for path in paths:
        for name, data in _members(path):
            key, ext = name.split(".", 1)
            samples.setdefault(key, {})[ext] = data
    return samples


def _npy(data: bytes) -> np.ndarray:
    array: np.ndarray = np.load(io.BytesIO(data), allow_pickle=False)
    return array


def test_each_record_is_a_sample_with_its_image_kept_byte_for_byte(
    tmp_path: Path, capsys: Any
) -> None:
    src = _source(tmp_path)
    out = tmp_path / "train.tar"
    assert main(["convert", str(src), str(out)]) == 0
    assert "wrote 12 samples to" in capsys.readouterr().out
    names = [n for n, _ in _members(out)]
    # the samples in the records' order, each key's files together
    keys = [n.split(".", 1)[0] for n in names]
    assert list(dict.fromkeys(keys)) == [f"{i:09d}" for i in range(12)]
    samples = _samples([out])
    for i in range(12):
        s = samples[f"{i:09d}"]
        assert set(s) == {"jpg", "json", "embedding.npy", "blob.bin"}
        assert s["jpg"] == _jpeg(i)
        assert json.loads(s["json"]) == {
            "id": f"id{i:03d}",
            "label": i,
            "name": f"sample {i}",
            "score": float(str(np.float32(0.1 * i))),
        }
        assert np.float32(json.loads(s["json"])["score"]) == np.float32(0.1 * i)
        emb = _npy(s["embedding.npy"])
        assert emb.dtype == np.float32 and np.array_equal(emb, np.arange(40, dtype=np.float32) * i)
        assert s["blob.bin"] == bytes([0xFF, 0xFE, i])


def test_several_images_nan_and_sequence_examples(tmp_path: Path) -> None:
    src = tmp_path / "in.tfrecord"
    seq = tfr.encode_sequence_example(
        {
            "a/png": [PNG_1x1],
            "b/png": [PNG_1x1 + b"x"],
            "nan": np.array([np.nan], np.float32),
            "burst": [PNG_1x1 + b"0", PNG_1x1 + b"1"],
        },
        {
            "frames": [[PNG_1x1], [PNG_1x1]],
            "xy": [np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)],
            "words": [[b"a", b"b"], [b"c"]],
            "long": [np.arange(10, dtype=np.int64)] * 3,
        },
    )
    with tfr.TFRecordWriter(src) as w:
        w.write(seq)
    out = tmp_path / "s.tar"
    assert main(["-q", "convert", str(src), str(out)]) == 0
    s = _samples([out])["000000000"]
    # two image features: each under its (file-safe) name
    assert s["a_png.png"] == PNG_1x1 and s["b_png.png"] == PNG_1x1 + b"x"
    assert np.isnan(_npy(s["nan.npy"])).all()  # NaN is not JSON
    assert s["burst.0.png"] == PNG_1x1 + b"0" and s["burst.1.png"] == PNG_1x1 + b"1"
    assert s["frames.0.png"] == PNG_1x1 and s["frames.1.png"] == PNG_1x1
    doc = json.loads(s["json"])
    assert doc == {"xy": [[1.0, 2.0], [3.0, 4.0]], "words": [["a", "b"], ["c"]]}
    assert np.array_equal(_npy(s["long.npy"]), np.tile(np.arange(10), (3, 1)))


def test_shards_are_named_and_bounded(tmp_path: Path, capsys: Any) -> None:
    src = _source(tmp_path, n=40)
    out = tmp_path / "out" / "train.tar"
    assert main(["convert", str(src), str(out), "--shard-size", "20kB"]) == 0
    shards = sorted((tmp_path / "out").iterdir())
    assert len(shards) > 1
    assert [p.name for p in shards] == [f"train-{i:06d}.tar" for i in range(len(shards))]
    assert all(p.stat().st_size <= 20_000 for p in shards)
    said = capsys.readouterr().out
    assert f"train-{{000000..{len(shards) - 1:06d}}}.tar" in said
    samples = _samples(shards)
    assert list(samples) == [f"{i:09d}" for i in range(40)]  # in order across the shards
    assert all(samples[f"{i:09d}"]["jpg"] == _jpeg(i) for i in range(40))
    # a %d pattern in the name is used as it is
    pattern = tmp_path / "p" / "shard-%03d.tar"
    assert main(["-q", "convert", str(src), str(pattern), "--shard-size", "1MB"]) == 0
    assert [p.name for p in (tmp_path / "p").iterdir()] == ["shard-000.tar"]


def test_key_from_a_feature(tmp_path: Path, capsys: Any) -> None:
    src = _source(tmp_path, n=3)
    out = tmp_path / "k.tar"
    assert main(["-q", "convert", str(src), str(out), "--key", "id"]) == 0
    assert list(_samples([out])) == ["id000", "id001", "id002"]
    # integers too
    assert main(["-q", "convert", str(src), str(tmp_path / "l.tar"), "--key", "label"]) == 0
    assert list(_samples([tmp_path / "l.tar"])) == ["0", "1", "2"]


@pytest.mark.parametrize(
    "value, said",
    [
        ([b"a.b"], "is not a WebDataset key"),
        ([b"x", b"y"], "must hold one string or integer"),
        (None, "no feature 'k'"),
    ],
)
def test_a_bad_key_fails_and_leaves_nothing(
    tmp_path: Path, capsys: Any, value: Any, said: str
) -> None:
    src = tmp_path / "in.tfrecord"
    with tfr.TFRecordWriter(src) as w:
        w.write(tfr.encode_example({"k": [b"fine"]}))
        w.write(tfr.encode_example({"k": value} if value is not None else {"j": [b"x"]}))
    argv = ["convert", str(src), str(tmp_path / "o.tar"), "--key", "k", "--shard-size", "1"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert said in err and "record 1" in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.tfrecord"]


def test_the_same_key_twice_in_a_row_is_refused(tmp_path: Path, capsys: Any) -> None:
    src = tmp_path / "in.tfrecord"
    with tfr.TFRecordWriter(src) as w:
        w.write_all([tfr.encode_example({"k": [b"same"]})] * 2)
    assert main(["convert", str(src), str(tmp_path / "o.tar"), "--key", "k"]) == 1
    assert "previous record's too" in capsys.readouterr().err
    assert not (tmp_path / "o.tar").exists()


def test_an_existing_target_is_refused_unless_overwrite(tmp_path: Path, capsys: Any) -> None:
    src = _source(tmp_path, n=30)
    out = tmp_path / "o.tar"
    out.write_bytes(b"keep me")
    assert main(["convert", str(src), str(out)]) == 2
    assert "pass --overwrite" in capsys.readouterr().err
    assert out.read_bytes() == b"keep me"
    assert main(["-q", "convert", str(src), str(out), "--overwrite"]) == 0
    assert len(_samples([out])) == 30
    # shards: any shard of the pattern counts; --overwrite removes the old run's extra shards
    d = tmp_path / "d"
    d.mkdir()
    (d / "t-000007.tar").write_bytes(b"old")
    assert main(["convert", str(src), str(d / "t.tar"), "--shard-size", "10kB"]) == 2
    assert "t-000007.tar" in capsys.readouterr().err
    assert [p.name for p in d.iterdir()] == ["t-000007.tar"]
    argv = ["-q", "convert", str(src), str(d / "t.tar"), "--shard-size", "60kB", "--overwrite"]
    assert main(argv) == 0
    names = sorted(p.name for p in d.iterdir())
    assert names == [f"t-{i:06d}.tar" for i in range(len(names))] and len(names) < 7
    assert len(_samples(sorted(d.iterdir()))) == 30


def test_a_failure_midway_leaves_nothing(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _source(tmp_path, n=30)
    data = bytearray(src.read_bytes())
    data[-5] ^= 0xFF  # the last record's data: its CRC fails after 29 samples are written
    src.write_bytes(bytes(data))
    d = tmp_path / "d"
    argv = ["convert", str(src), str(d / "t.tar"), "--shard-size", "10kB"]
    assert main(argv) == 1
    assert "record 29" in capsys.readouterr().err
    assert list(d.iterdir()) == []  # no shard, no temporary file
    # --skip-bad: the damaged record left out, the rest written
    assert main([*argv, "--skip-bad"]) == 1
    assert len(_samples(sorted(d.iterdir()))) == 29
    # Ctrl-C while a shard is being written: its and earlier shards' temporary files go
    from tfrecord_lite._cli._convert_webdataset import TarShards

    real_add = TarShards.add

    def add_then_interrupt(self: TarShards, key: str, files: Any) -> None:
        real_add(self, key, files)
        if len(self.paths) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(TarShards, "add", add_then_interrupt)
    e = tmp_path / "e"
    argv = ["-q", "convert", str(src), str(e / "t.tar"), "--shard-size", "10kB", "--skip-bad"]
    assert main(argv) == 130
    assert list(e.iterdir()) == []


@pytest.mark.parametrize(
    "options, said",
    [
        (["--shard-size", "1GB"], "--shard-size is for WebDataset"),
        (["--key", "id"], "--key is for WebDataset"),
        (["--overwrite"], "--overwrite is for WebDataset"),
    ],
)
def test_webdataset_options_elsewhere_are_refused(
    tmp_path: Path, capsys: Any, options: list[str], said: str
) -> None:
    src = _source(tmp_path, n=2)
    assert main(["convert", str(src), str(tmp_path / "o.tfrecord"), *options]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "o.tfrecord").exists()


@pytest.mark.parametrize("size", ["1XB", "-3", "MB", "0"])
def test_a_bad_shard_size_is_a_usage_error(tmp_path: Path, capsys: Any, size: str) -> None:
    src = _source(tmp_path, n=2)
    assert main(["convert", str(src), str(tmp_path / "o.tar"), "--shard-size", size]) == 2
    assert "--shard-size" in capsys.readouterr().err


def test_parse_size() -> None:
    from tfrecord_lite._cli._convert_webdataset import parse_size

    assert parse_size("1GB") == 10**9
    assert parse_size("2GiB") == 2 * 2**30
    assert parse_size("500mb") == 500 * 10**6
    assert parse_size("1.5k") == 1500
    assert parse_size("4096") == 4096


def test_tables_and_records_that_are_not_examples(tmp_path: Path, capsys: Any) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    src = _source(tmp_path, n=5)
    assert main(["-q", "convert", str(src), str(tmp_path / "t.parquet")]) == 0
    out = tmp_path / "from_table.tar"
    assert main(["-q", "convert", str(tmp_path / "t.parquet"), str(out)]) == 0
    assert pq.read_table(tmp_path / "t.parquet").num_rows == 5
    samples = _samples([out])
    assert [samples[f"{i:09d}"]["jpg"] for i in range(5)] == [_jpeg(i) for i in range(5)]
    # records that are not Examples: a clear error, nothing written
    bad = tmp_path / "bad.tfrecord"
    with tfr.TFRecordWriter(bad) as w:
        w.write(b"\xff\xff\xff not a protobuf")
    assert main(["convert", str(bad), str(tmp_path / "bad.tar")]) == 1
    err = capsys.readouterr().err
    assert "not a tf.train.Example" in err and "record 0" in err
    assert not (tmp_path / "bad.tar").exists()


def test_the_webdataset_package_reads_the_shards(tmp_path: Path) -> None:
    wds = pytest.importorskip("webdataset")
    pytest.importorskip("PIL")
    import io as _io

    from PIL import Image

    src = tmp_path / "in.tfrecord"
    pngs = []
    for i in range(30):
        buf = _io.BytesIO()
        Image.new("RGB", (4 + i % 3, 3), (i, 2 * i, 3 * i)).save(buf, "PNG")
        pngs.append(buf.getvalue())
    with tfr.TFRecordWriter(src) as w:
        for i, png in enumerate(pngs):
            w.write(tfr.encode_example({"image": [png], "label": np.array([i % 5], np.int64)}))
    out = tmp_path / "shards" / "train.tar"
    assert main(["-q", "convert", str(src), str(out), "--shard-size", "20kB"]) == 0
    n = len(list((tmp_path / "shards").iterdir()))
    assert n > 1
    urls = str(tmp_path / "shards" / f"train-{{000000..{n - 1:06d}}}.tar")
    raw = list(wds.WebDataset(urls, shardshuffle=False).to_tuple("__key__", "png", "json"))
    assert [k for k, _, _ in raw] == [f"{i:09d}" for i in range(30)]
    assert [png for _, png, _ in raw] == pngs  # the image's bytes as stored
    decoded = wds.WebDataset(urls, shardshuffle=False).decode("rgb8").to_tuple("png", "json")
    for i, (image, doc) in enumerate(decoded):
        assert image.shape == (3, 4 + i % 3, 3) and image[0, 0].tolist() == [i, 2 * i, 3 * i]
        assert doc == {"label": i % 5}
