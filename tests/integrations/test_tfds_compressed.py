"""TFDS ``as_dataset`` / ``as_steps`` over a directory whose shards are GZIP or ZLIB.

TFDS names a shard the same whatever its compression (``name-split.tfrecord-00000-of-00003``)
and ``dataset_info.json`` does not record it, so the readers detect it per file, as
``as_data_source`` does."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import tfrecord_lite as tfr
import tfrecord_lite.tfds as tfds

DATA = Path(__file__).resolve().parents[1] / "data" / "tfds"
TABULAR = DATA / "tfl_tabular" / "1.2.0"


def compressed_copy(src: Path, dest: Path, compression: str, seekable: bool = False) -> Path:
    """``src`` with every shard rewritten as ``compression`` (same names)."""
    shutil.copytree(src, dest)
    shards = sorted(p for p in dest.glob("*.tfrecord-*") if not p.name.endswith(".index"))
    assert shards
    for shard in shards:
        recs = list(tfr.tf_record_iterator(str(shard)))
        with tfr.TFRecordWriter(str(shard), compression, seekable=seekable) as w:
            w.write_all(recs)
    return dest


def ids(items: Any) -> list[int]:
    return [int(e["id"]) for e in items]


@pytest.mark.parametrize("seekable", [False, True])
@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_as_dataset_reads_compressed_shards(
    tmp_path: Path, compression: str, seekable: bool
) -> None:
    data = compressed_copy(TABULAR, tmp_path / "ds", compression, seekable)
    plain = tfds.builder_from_directory(TABULAR)
    packed = tfds.builder_from_directory(data)
    for split in ("train", "train[10:30]", "train[:7]+train[-5:]"):
        assert ids(packed.as_dataset(split)) == ids(plain.as_dataset(split)), split
    rc = tfds.ReadConfig(shuffle_seed=3)
    want = ids(plain.as_dataset("train", shuffle_files=True, read_config=rc))
    assert ids(packed.as_dataset("train", shuffle_files=True, read_config=rc)) == want
    sup = list(packed.as_dataset("train[:4]", as_supervised=True))
    assert [tuple(map(repr, s)) for s in sup] == [
        tuple(map(repr, s)) for s in plain.as_dataset("train[:4]", as_supervised=True)
    ]


def test_a_decoding_error_in_a_compressed_shard_names_file_and_record(tmp_path: Path) -> None:
    data = compressed_copy(TABULAR, tmp_path / "ds", "GZIP")
    builder = tfds.builder_from_directory(data)
    from tfrecord_lite.tfds._decoder import make_decode

    decode = make_decode(builder.info, None, False, [str(p) for p in sorted(data.glob("*train*"))])
    shard = sorted(data.glob("*train*"))[0]
    record = list(tfr.tf_record_iterator(str(shard), compression="GZIP"))[2]
    err = tfr.ParseError("bad", key="id")
    located = decode.located(err, record)
    assert located.path == str(shard) and located.index == 2


def steps_of(items: Any) -> list[tuple[int, int, bytes, bytes]]:
    return [
        (
            int(s["episode_index"]),
            int(s["step_index"]),
            s["observation"]["image"].tobytes(),
            s["action"].tobytes(),
        )
        for s in items
    ]


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_as_steps_reads_compressed_shards(tmp_path: Path, compression: str) -> None:
    src = DATA / "tfl_rlds" / "1.0.0"
    data = compressed_copy(src, tmp_path / "rlds", compression, seekable=True)
    plain = tfds.builder_from_directory(src)
    packed = tfds.builder_from_directory(data)
    for split in ("train", "test", "train[1:4]"):
        want = steps_of(plain.as_steps(split))
        assert want and steps_of(packed.as_steps(split)) == want, split
