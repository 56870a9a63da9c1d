"""tfrecord_lite.ray on a real local Ray instance: reads equal the local parse, every record
exactly once, and writes that survive a killed or failing task without duplicates or partial
shards."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite import arrow as tfa
from tfrecord_lite import ray as tfray
from tfrecord_lite._tables import FAILED_SWEEPS_QUIET

ray = pytest.importorskip("ray")
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

SHARD = re.compile(r"^part-\d{5}-of-\d{5}$")


def write_shards(root: Path, n_files: int = 3, per_file: int = 200) -> list[Path]:
    """MNIST-like shards: an id, a label, raw 28x28 pixels, a variable-length list; one GZIP."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for s in range(n_files):
        ids = np.arange(per_file) + s * per_file
        path = root / f"data-{s}.tfrecord"
        tfr.write_examples(
            path,
            {
                "id": ids,
                "label": ids % 10,
                "image": tfr.bytes_rows(rng.integers(0, 255, (per_file, 28 * 28), np.uint8)),
                "tags": [[b"t%d" % j for j in range(i % 4)] for i in ids],
                "score": (ids / 7).astype(np.float32),
            },
            compression="GZIP" if s == 1 else None,
        )
        paths.append(path)
    return paths


def by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["id"])


def test_read_equals_the_local_parse(ray_cluster: Any, tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in")
    ds = tfray.read_tfrecords(str(tmp_path / "in"))
    got = by_id(ds.take_all())
    want = tfa.read_table(sorted(map(str, paths))).to_pylist()
    assert [r["id"] for r in got] == list(range(600))  # every record exactly once
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert set(g) == set(w)
        for key in w:
            value = g[key]
            value = value.tolist() if isinstance(value, np.ndarray) else value
            assert value == w[key], key
    assert ds.schema().base_schema == tfa.read_table(paths[0]).schema


def test_remote_args_go_as_named_parameters_without_a_deprecation_warning(
    ray_cluster: Any, tmp_path: Path
) -> None:
    import warnings

    write_shards(tmp_path / "in", n_files=2, per_file=50)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = tfray.read_tfrecords(
            str(tmp_path / "in"), ray_remote_args={"num_cpus": 0.5, "memory": 10**8}
        )
        assert sorted(r["id"] for r in ds.take_all()) == list(range(100))
    # Ray deprecates ray_remote_args= for reads; the options went as named parameters.
    assert not [w for w in caught if "ray_remote_args" in str(w.message)]
    kwargs = tfray._remote_kwargs(ray.data.read_datasource, {"num_cpus": 1, "max_retries": 1})
    assert kwargs == {"num_cpus": 1, "ray_remote_args": {"max_retries": 1}}


def test_read_with_features_and_paths(ray_cluster: Any, tmp_path: Path) -> None:
    write_shards(tmp_path / "in")
    features = {"id": tfr.FixedLenFeature([], tfr.int64), "tags": tfr.VarLenFeature(tfr.string)}
    ds = tfray.read_tfrecords(
        str(tmp_path / "in" / "data-*.tfrecord"), features=features, include_paths=True
    )
    rows = by_id(ds.take_all())
    assert set(rows[0]) == {"id", "tags", "path"}
    assert rows[250]["path"].endswith("data-1.tfrecord")
    assert list(rows[7]["tags"]) == [b"t0", b"t1", b"t2"]


def test_indexed_file_is_read_in_ranges_exactly_once(ray_cluster: Any, tmp_path: Path) -> None:
    (path,) = write_shards(tmp_path / "in", n_files=1, per_file=1000)
    tfr.create_index(path)
    source = tfray.TFRecordDatasource(str(path), records_per_task=150)
    assert len(source.pieces) == 7
    assert [p.rows for p in source.pieces] == [142, 143, 143, 143, 143, 143, 143]
    ds = tfray.read_tfrecords(str(path), records_per_task=150, batch_size=64)
    assert ds.count() == 1000
    ids = sorted(r["id"] for r in ds.take_all())
    assert ids == list(range(1000))


def test_sequence_examples(ray_cluster: Any, tmp_path: Path) -> None:
    path = tmp_path / "seq.tfrecord"
    with tfr.TFRecordWriter(path) as w:
        for i in range(50):
            w.write(
                tfr.encode_sequence_example(
                    {"id": i}, {"tok": [list(range(j)) for j in range(i % 4)]}
                )
            )
    rows = by_id(tfray.read_tfrecords(str(path)).take_all())
    assert [r["id"] for r in rows] == list(range(50))
    assert [[list(s) for s in r["tok"]] for r in rows] == [
        [list(range(j)) for j in range(i % 4)] for i in range(50)
    ]


def test_damaged_file_raise_and_skip(ray_cluster: Any, tmp_path: Path) -> None:
    (path,) = write_shards(tmp_path / "in", n_files=1, per_file=100)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    features = {"id": tfr.FixedLenFeature([], tfr.int64)}
    with pytest.raises(Exception, match=r"DataLossError|corrupt|CRC"):
        tfray.read_tfrecords(str(path), features=features).take_all()
    rows = tfray.read_tfrecords(str(path), features=features, on_error="skip").take_all()
    ids = [r["id"] for r in rows]
    assert 90 < len(ids) < 100 and len(set(ids)) == len(ids)


# --------------------------------------------------------------------------- writing


def shard_files(root: Path) -> list[str]:
    return sorted(os.listdir(root))


def read_ids(paths: list[str]) -> list[int]:
    table = tfa.read_table(paths, {"id": tfr.FixedLenFeature([], tfr.int64)})
    return table.column("id").to_pylist()


def test_write_round_trip(ray_cluster: Any, tmp_path: Path) -> None:
    write_shards(tmp_path / "in")
    ds = tfray.read_tfrecords(str(tmp_path / "in"))
    out = tmp_path / "out"
    paths = tfray.write_tfrecords(ds, str(out))
    names = shard_files(out)
    assert names == [os.path.basename(p) for p in paths]
    assert all(SHARD.match(n) for n in names), names
    assert names[-1].endswith(f"-of-{len(names):05d}")
    assert sorted(read_ids(paths)) == list(range(600))
    # the values survive: the written shards read back to the same rows
    assert (
        by_id(tfa.read_table(paths).to_pylist())
        == tfa.read_table(sorted(map(str, (tmp_path / "in").iterdir()))).to_pylist()
    )


def test_write_gzip_and_sequence_examples(ray_cluster: Any, tmp_path: Path) -> None:
    path = tmp_path / "seq.tfrecord"
    with tfr.TFRecordWriter(path) as w:
        for i in range(30):
            w.write(tfr.encode_sequence_example({"id": i}, {"f": [[1.0 * i]] * (i % 3)}))
    ds = tfray.read_tfrecords(str(path))
    paths = tfray.write_tfrecords(ds, str(tmp_path / "out"), compression="GZIP")
    assert all(tfr.detect_compression(Path(p).read_bytes()[:16]) == "GZIP" for p in paths)
    back = by_id(tfa.read_table(paths).to_pylist())
    assert back == tfa.read_table(path).to_pylist()


def test_existing_shards_are_refused_unless_overwrite(ray_cluster: Any, tmp_path: Path) -> None:
    ds = ray.data.from_items([{"id": i} for i in range(20)], override_num_blocks=2)
    out = tmp_path / "out"
    tfray.write_tfrecords(ds, str(out))
    with pytest.raises(Exception, match="already holds shards"):
        tfray.write_tfrecords(ds, str(out))
    ds1 = ray.data.from_items([{"id": i} for i in range(5)], override_num_blocks=1)
    paths = tfray.write_tfrecords(ds1, str(out), overwrite=True)
    assert shard_files(out) == ["part-00000-of-00001"]
    assert read_ids(paths) == list(range(5))


PAYLOAD = 200_000  # big rows: the writer's buffer reaches the disk before the kill


def _rows(n: int) -> list[dict[str, Any]]:
    return [{"id": i, "blob": bytes([i % 256]) * PAYLOAD} for i in range(n)]


def _die_once(marker: str, at: int, how: str) -> Any:
    def fn(batch: dict[str, Any]) -> dict[str, Any]:
        if at in set(batch["id"].tolist()) and not os.path.exists(marker):
            with open(marker, "w") as f:
                f.write("first attempt\n")
            if how == "exit":
                os._exit(1)  # the worker process dies mid-task, as a killed node would
            raise RuntimeError("first attempt fails")
        return batch

    return fn


@pytest.mark.parametrize("how", ["exit", "raise"])
def test_task_killed_mid_write_is_retried_without_duplicates_or_partial_files(
    ray_cluster: Any, tmp_path: Path, how: str
) -> None:
    out = tmp_path / "out"
    marker = str(tmp_path / "marker")
    n = 40
    # map_batches fuses with the write: the task dies after it has written part of its
    # shard (ids 20.. are one block; the kill comes at id 25, five rows into it).
    ctx = ray.data.DataContext.get_current()
    saved = ctx.retried_map_errors, ctx.max_map_retries
    # a worker that dies is retried by Ray itself; an exception when Ray Data is told to
    # (a dataset keeps the context it was made under)
    ctx.retried_map_errors, ctx.max_map_retries = ["first attempt fails"], 2
    try:
        ds = ray.data.from_items(_rows(n), override_num_blocks=4).map_batches(
            _die_once(marker, at=25, how=how), batch_size=1
        )
        paths = tfray.write_tfrecords(ds, str(out), ray_remote_args={"max_retries": 2})
    finally:
        ctx.retried_map_errors, ctx.max_map_retries = saved
    assert os.path.exists(marker)  # the first attempt did fail
    names = shard_files(out)
    assert all(SHARD.match(n) for n in names), names  # no staging / temporary file left
    assert len(names) == 4
    ids = read_ids(paths)
    assert sorted(ids) == list(range(n))  # every record exactly once
    table = tfa.read_table(paths)
    for i, blob in zip(table.column("id").to_pylist(), table.column("blob").to_pylist()):
        assert blob == bytes([i % 256]) * PAYLOAD


def test_failed_job_leaves_no_shard_and_no_partial_file(ray_cluster: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"

    def always_fails(batch: dict[str, Any]) -> dict[str, Any]:
        if 25 in set(batch["id"].tolist()):
            raise RuntimeError("this row cannot be written")
        return batch

    ds = ray.data.from_items(_rows(40), override_num_blocks=4).map_batches(
        always_fails, batch_size=1
    )
    with pytest.raises(Exception, match="cannot be written"):
        tfray.write_tfrecords(ds, str(out))
    assert shard_files(out) == []


def test_a_failed_job_sweeps_until_cancelled_tasks_are_done(tmp_path: Path) -> None:
    """Ray does not wait for the write tasks a failure cancelled: a staging shard one
    of them completes after the first sweep is removed by a later one."""
    sink = tfray.TFRecordDatasink(tmp_path)
    sink.on_write_start()
    Path(sink.shards.staging(0)).write_bytes(b"complete before the failure")
    (tmp_path / "unrelated.txt").write_bytes(b"not this job's")
    late = Path(sink.shards.staging(1))
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:  # the clean-up's pauses, made instant
        sleeps.append(seconds)
        if len(sleeps) == 2:  # a cancelled task finishes its shard between two sweeps
            late.write_bytes(b"complete after the first sweeps")

    sink.shards.clock = SimpleNamespace(monotonic=time.monotonic, sleep=sleep)
    sink.on_write_failed(RuntimeError("a row cannot be written"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["unrelated.txt"]
    # Found at sweep 3; then FAILED_SWEEPS_QUIET sweeps in a row found nothing.
    assert len(sleeps) == 2 + FAILED_SWEEPS_QUIET


# --------------------------------------------------------------------------- image folders


def test_images_to_tfrecords_equals_the_cli(ray_cluster: Any, tmp_path: Path) -> None:
    from tfrecord_lite._cli import main
    from tfrecord_lite._decoding._folders import make_digit_folder

    make_digit_folder(str(tmp_path / "digits"), per_class=6)
    local = tmp_path / "local" / "digits"
    assert main(["-q", "from-images", str(tmp_path / "digits"), str(local), "--shards", "3",
                 "--shuffle", "--encode", "png"]) == 0  # fmt: skip
    result = tfray.images_to_tfrecords(
        tmp_path / "digits", tmp_path / "onray" / "digits", shards=3, shuffle=True, encode="png"
    )
    assert result["written"] == 60 and result["skipped"] == []
    for i, path in enumerate(result["paths"]):
        want = local.parent / f"digits-{i:05d}-of-00003"
        assert Path(path).read_bytes() == want.read_bytes()
    assert (tmp_path / "onray" / "labels.txt").read_text() == "".join(f"{d}\n" for d in range(10))
    assert sorted(os.listdir(tmp_path / "onray")) == sorted(
        ["labels.txt", *(os.path.basename(p) for p in result["paths"])]
    )


def test_cli_from_images_engine_ray(ray_cluster: Any, tmp_path: Path) -> None:
    from tfrecord_lite._cli import main
    from tfrecord_lite._decoding._folders import make_digit_folder

    make_digit_folder(str(tmp_path / "digits"), per_class=3, bad=1)
    base = ["-q", "from-images", str(tmp_path / "digits")]
    assert main([*base, str(tmp_path / "local" / "d"), "--shards", "2"]) == 1  # one bad file
    argv = [*base, str(tmp_path / "ray" / "d"), "--shards", "2", "--runner", "ray"]
    assert main(argv) == 1
    assert main([*argv, "--allow-skips"]) == 0
    # no bad file ended up in a shard; every good image is in one, labelled as locally
    local = tfa.read_table(sorted(map(str, (tmp_path / "local").glob("d-*"))))
    onray = tfa.read_table(sorted(map(str, (tmp_path / "ray").glob("d-*"))))
    key = "image/filename"
    assert sorted(onray.column(key).to_pylist()) == sorted(local.column(key).to_pylist())
    assert onray.num_rows == 30
