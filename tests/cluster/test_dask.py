"""tfrecord_lite.dask on a real dask.distributed LocalCluster (two worker processes)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite import arrow as tfa
from tfrecord_lite import dask as tfdask

dd = pytest.importorskip("dask.dataframe")
cloudpickle = pytest.importorskip("cloudpickle")
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SHARD = re.compile(r"^part-\d{5}-of-\d{5}$")
ID = {"id": tfr.FixedLenFeature([], tfr.int64)}


def write_shards(root: Path, n_files: int = 4, per_file: int = 150) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for s in range(n_files):
        ids = np.arange(per_file) + s * per_file
        path = str(root / f"data-{s:02d}.tfrecord")
        tfr.write_examples(
            path,
            {
                "id": ids,
                "name": [b"\xff\x00" + b"%d" % i for i in ids],  # not text
                "vec": np.stack([ids, -ids], 1).astype(np.float32),
                "tags": [list(range(i % 3)) for i in ids],
            },
            compression="ZLIB" if s == 2 else None,
        )
        paths.append(path)
    return paths


def test_read_equals_the_local_parse(dask_client: Any, tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in")
    df = tfdask.read_tfrecords(str(tmp_path / "in" / "data-*.tfrecord"))
    assert df.npartitions == 4
    got = df.compute().sort_values("id").reset_index(drop=True)
    want = tfa.read_table(paths).to_pandas()
    assert got["id"].tolist() == list(range(600))  # every record exactly once
    assert got["name"].tolist() == want["name"].tolist()
    assert all(isinstance(v, bytes) for v in got["name"])
    assert [list(v) for v in got["vec"]] == [list(v) for v in want["vec"]]
    assert [list(v) for v in got["tags"]] == [list(v) for v in want["tags"]]
    assert list(got.columns) == list(df.columns)


def test_indexed_file_gives_several_partitions(dask_client: Any, tmp_path: Path) -> None:
    (path,) = write_shards(tmp_path / "in", n_files=1, per_file=1000)
    tfr.create_index(path)
    df = tfdask.read_tfrecords(path, ID, records_per_partition=300, include_paths=True)
    assert df.npartitions == 4
    pdf = df.compute()
    assert sorted(pdf["id"]) == list(range(1000))
    assert set(pdf["path"]) == {path}
    assert df.map_partitions(len).compute().tolist() == [250, 250, 250, 250]


def test_to_tfrecords_round_trip(dask_client: Any, tmp_path: Path) -> None:
    write_shards(tmp_path / "in")
    df = tfdask.read_tfrecords(str(tmp_path / "in"))
    df = df[df["id"] % 2 == 0]
    paths = tfdask.to_tfrecords(df, tmp_path / "out", compression="GZIP")
    assert sorted(os.listdir(tmp_path / "out")) == [os.path.basename(p) for p in paths]
    assert all(SHARD.match(os.path.basename(p)) for p in paths)
    assert len(paths) == 4
    back = tfa.read_table(paths).to_pandas()
    assert back["id"].tolist() == list(range(0, 600, 2))
    assert back["name"].tolist() == [b"\xff\x00" + b"%d" % i for i in range(0, 600, 2)]
    assert [list(v) for v in back["tags"]] == [list(range(i % 3)) for i in range(0, 600, 2)]


def _die_once(marker: str) -> Any:
    def fn(pdf: Any) -> Any:
        if len(pdf) and int(pdf["id"].iloc[0]) == 150 and not os.path.exists(marker):
            with open(marker, "w") as f:
                f.write("first attempt\n")
            os._exit(1)  # the worker process dies; the scheduler reruns its tasks
        return pdf

    return fn


def test_worker_killed_mid_job_leaves_every_record_once(dask_client: Any, tmp_path: Path) -> None:
    write_shards(tmp_path / "in")
    marker = str(tmp_path / "marker")
    df = tfdask.read_tfrecords(str(tmp_path / "in"))
    df = df.map_partitions(_die_once(marker), meta=df._meta)
    paths = tfdask.to_tfrecords(df, tmp_path / "out", retries=2)
    assert os.path.exists(marker)
    assert sorted(os.listdir(tmp_path / "out")) == [os.path.basename(p) for p in paths]
    ids = tfa.read_table(paths, ID).column("id").to_pylist()
    assert sorted(ids) == list(range(600))


def test_dask_string_conversion_does_not_decode_bytes(dask_client: Any, tmp_path: Path) -> None:
    import dask

    write_shards(tmp_path / "in", n_files=1, per_file=10)
    with dask.config.set({"dataframe.convert-string": True}):
        df = tfdask.read_tfrecords(str(tmp_path / "in"))
        assert df["name"].compute().tolist()[0] == b"\xff\x000"
