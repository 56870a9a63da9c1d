"""infer_schema / read_examples / ``tfrecord-lite schema`` never fail on a valid file.

The first ``sample`` records are read in full; every later one is checked and a
FixedLenFeature that a later record does not fit is widened to a VarLenFeature.
Each case compares the result with a full read (``sample=None``), parses the
whole file with it, and runs the command line on the same file.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest
from _cli_run import run_cli

import tfrecord_lite as tfr
from tfrecord_lite._examples import _infer

TAXI = Path("/work/shared/data/tfx-taxi")


def write(path: Path, rows: list[dict[str, Any]], compression: Optional[str] = None) -> Path:
    with tfr.TFRecordWriter(path, compression) as w:
        for row in rows:
            w.write(row if isinstance(row, bytes) else tfr.encode_example(row))
    return path


def cli_schema(*args: Any) -> subprocess.CompletedProcess[str]:
    return run_cli("schema", *args)  # (in this process: see tests/_cli_run.py)


def assert_cli_agrees(source: Any, *paths: Path) -> None:
    """``tfrecord-lite schema`` prints exactly what ``tfr.infer_schema`` returns."""
    schema = tfr.infer_schema(source)
    out = cli_schema(*paths)
    assert out.returncode == 0, out.stderr
    scope: dict[str, Any] = {}
    exec(out.stdout, scope)
    assert repr(scope["features"]) == repr(dict(schema))
    js = cli_schema(*paths, "--format", "json")
    assert json.loads(js.stdout) == json.loads(json.dumps(schema.to_json()))


def read_all(path: Any) -> list[bytes]:
    return list(tfr.tf_record_iterator(path))


# --------------------------------------------------------------------------- later records differ


def test_feature_missing_after_record_1000(tfr_path: Path) -> None:
    rows = [
        {"id": i, "x": float(i), **({} if i in (1000, 1500) else {"late": i})} for i in range(1600)
    ]
    write(tfr_path, rows)
    quick = tfr.infer_schema(tfr_path, check=False)
    assert quick["late"] == tfr.FixedLenFeature([], tfr.int64)  # what the first 1000 show
    with pytest.raises(tfr.ParseError, match="late"):
        tfr.parse_example(read_all(tfr_path), quick)  # ... which fails on record 1000
    schema = tfr.infer_schema(tfr_path)
    assert (
        schema
        == tfr.infer_schema(tfr_path, sample=None)
        == {
            "id": tfr.FixedLenFeature([], tfr.int64),
            "late": tfr.VarLenFeature(tfr.int64),
            "x": tfr.FixedLenFeature([], tfr.float32),
        }
    )
    assert (schema.records, schema.checked) == (1000, 600)
    st = schema.stats["late"]
    assert (st.checked_min_count, st.checked_max_count) == (0, 1)
    assert (schema.stats["id"].checked_min_count, schema.stats["id"].checked_max_count) == (1, 1)
    data = tfr.read_examples(tfr_path)
    assert data["id"].tolist() == list(range(1600))
    late = data["late"].to_list()
    assert late[999] == [999] and late[1000] == [] and late[1500] == [] and late[1599] == [1599]
    assert_cli_agrees(tfr_path, tfr_path)
    out = cli_schema(tfr_path, "--no-check")  # the quick look agrees with check=False
    scope: dict[str, Any] = {}
    exec(out.stdout, scope)
    assert repr(scope["features"]) == repr(dict(quick))


def test_empty_feature_after_the_sample_like_the_taxi_data(tfr_path: Path) -> None:
    from tfrecord_lite.example_pb2 import Example

    records = []
    for i in range(2000):
        e = Example()
        e.features.feature["trip_seconds"].float_list.value.append(i)
        if i == 1924:
            e.features.feature["trip_seconds"].Clear()  # present, but an empty Feature()
        e.features.feature["fare"].float_list.value.append(1.5)
        records.append(e.SerializeToString())
    write(tfr_path, records)  # type: ignore[arg-type]
    schema = tfr.infer_schema(tfr_path)
    assert schema["trip_seconds"] == tfr.VarLenFeature(tfr.float32)
    assert schema["fare"] == tfr.FixedLenFeature([], tfr.float32)
    assert schema == tfr.infer_schema(tfr_path, None)
    assert tfr.read_examples(tfr_path)["trip_seconds"].to_list()[1924] == []


def test_key_first_typed_after_the_sample_like_csv_example_gen(tfr_path: Path) -> None:
    """A key the sample holds only as an empty Feature() and a later record as an empty
    int64_list: the sampled read and a full read (and the command line) keep it."""
    from tfrecord_lite.example_pb2 import Example

    records = []
    for i in range(2500):
        e = Example()
        e.features.feature["fare"].float_list.value.append(i / 4)
        tract = e.features.feature["pickup_census_tract"]
        if i < 1500:
            tract.Clear()  # present, but an empty Feature(): its dtype is unknown
        else:
            tract.int64_list.SetInParent()  # an empty int64_list: an int64 feature
        records.append(e.SerializeToString())
    write(tfr_path, records)  # type: ignore[arg-type]
    schema = tfr.infer_schema(tfr_path)
    assert schema["pickup_census_tract"] == tfr.VarLenFeature(tfr.int64)
    assert dict(schema) == dict(tfr.infer_schema(tfr_path, sample=None))
    assert dict(tfr.infer_schema(tfr_path, sample=7)) == dict(schema)
    assert_cli_agrees(tfr_path, tfr_path)
    assert tfr.read_examples(tfr_path)["pickup_census_tract"].to_list()[2000] == []


def test_key_first_typed_after_the_sample_then_another_kind(tfr_path: Path) -> None:
    from tfrecord_lite.example_pb2 import Example

    rows: list[Any] = []

    for i in range(30):
        e = Example()
        e.features.feature["a"].int64_list.value.append(i)
        k = e.features.feature["k"]
        if i == 10:
            k.int64_list.value.append(1)
        elif i == 20:
            k.float_list.value.append(1.0)
        else:
            k.Clear()
        rows.append(e.SerializeToString())
    write(tfr_path, rows)
    for sample in (5, None):
        with pytest.raises(tfr.ParseError, match="'k'") as err:
            tfr.infer_schema(tfr_path, sample=sample)
        assert err.value.key == "k"


def test_later_records_with_another_count(tfr_path: Path) -> None:
    rows = [{"xy": [i, i + 1], "f": [0.5] * 3} for i in range(1200)]
    rows[1100]["xy"] = [1, 2, 3]
    rows[1199]["f"] = []  # an empty list of the same kind
    write(tfr_path, rows, "GZIP")
    schema = tfr.infer_schema(tfr_path, sample=100)
    assert (
        schema
        == tfr.infer_schema(tfr_path, None)
        == {
            "f": tfr.VarLenFeature(tfr.float32),
            "xy": tfr.VarLenFeature(tfr.int64),
        }
    )
    xy = tfr.read_examples(tfr_path, sample=100)["xy"].to_list()
    assert xy[1100] == [1, 2, 3] and xy[0] == [0, 1]
    out = cli_schema(tfr_path, "--sample", "100")
    scope: dict[str, Any] = {}
    exec(out.stdout, scope)
    assert scope["features"] == schema


def test_later_record_with_another_kind_is_a_clear_error(tmp_path: Path) -> None:
    a = write(tmp_path / "a.tfrecord", [{"v": i} for i in range(1000)])
    b = write(tmp_path / "b.tfrecord", [{"v": i} for i in range(5)] + [{"v": 0.5}])
    with pytest.raises(tfr.ParseError) as err:
        tfr.infer_schema([a, b])
    e = err.value
    assert e.key == "v" and e.index == 1005
    assert "float_list in record 1005" in e.message and "int64_list" in e.message
    assert "pass a feature dict yourself" in e.message
    with pytest.raises(tfr.ParseError, match="holds different kinds"):
        tfr.infer_schema([a, b], None)  # the full read says the same
    with pytest.raises(tfr.ParseError, match="float_list in record 1005"):
        tfr.read_examples([a, b])
    out = cli_schema(a, b)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    line = out.stderr.strip()
    assert "b.tfrecord" in line and "record 5" in line and "'v'" in line  # file and record in it
    assert tfr.infer_schema([a, b], check=False) == {"v": tfr.FixedLenFeature([], tfr.int64)}


def test_not_an_example_after_the_sample(tfr_path: Path) -> None:
    write(tfr_path, [tfr.encode_example({"v": i}) for i in range(10)] + [b"\xff\xff not one"])  # type: ignore[list-item]
    with pytest.raises(tfr.ParseError) as err:
        tfr.infer_schema(tfr_path, sample=4)
    assert err.value.index == 10


def test_keys_first_seen_after_the_sample(tfr_path: Path) -> None:
    write(tfr_path, [{"a": 1}] * 5 + [{"a": 1, "new": b"x"}])
    # documented: the check counts the sampled keys; a full read finds the others
    assert "new" not in tfr.infer_schema(tfr_path, sample=5)
    assert tfr.infer_schema(tfr_path, sample=None)["new"] == tfr.VarLenFeature(tfr.string)
    assert tfr.read_examples(tfr_path, sample=5)["a"].tolist() == [1] * 6  # parses, ignoring it


def test_small_files_are_read_in_full_and_chunks_do_not_matter(
    tfr_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [{"k": [1] * (1 + (i == 2950))} for i in range(3000)]
    write(tfr_path, rows)
    monkeypatch.setattr(_infer, "CHECK_CHUNK", 7)
    small = tfr.infer_schema(tfr_path, sample=10)
    assert small["k"] == tfr.VarLenFeature(tfr.int64) and small.checked == 2990
    st = small.stats["k"]
    assert (st.checked_min_count, st.checked_max_count) == (1, 2)
    assert tfr.infer_schema(tfr_path, sample=2951)["k"] == tfr.VarLenFeature(tfr.int64)
    assert tfr.infer_schema(tfr_path, sample=2950)["k"] == tfr.VarLenFeature(tfr.int64)
    assert tfr.infer_schema(tfr_path, sample=5000).checked == 0


def test_sequence_examples_are_read_in_full_after_the_sample() -> None:
    records = [
        tfr.encode_sequence_example({"id": i}, {"s": [[1.0]] * (i % 3 + 1)}) for i in range(12)
    ]
    records.append(tfr.encode_sequence_example({}, {"s": [[1.0, 2.0]]}))
    schema = tfr.infer_schema(records, sample=4)
    assert schema == {"id": tfr.VarLenFeature(tfr.int64)} == tfr.infer_schema(records, None)
    assert schema.sequence_features == {"s": tfr.VarLenFeature(tfr.float32)}
    assert schema.records == 13


# --------------------------------------------------------------------------- taxi


def _taxi_like(directory: Path) -> list[Path]:
    """Two GZIP shards shaped like TFX's taxi data: 18 keys (17 ever set), values missing as
    empty ``Feature()``s at several rates, one feature empty only after record 2,000."""
    from tfrecord_lite.example_pb2 import Example

    rng = np.random.default_rng(7)
    floats = ["fare", "tips", "trip_miles", "pickup_latitude", "pickup_longitude"]
    sometimes = {
        "dropoff_latitude": 0.035,
        "dropoff_longitude": 0.035,
        "dropoff_census_tract": 0.28,
    }
    ints = ["trip_start_hour", "trip_start_day", "trip_start_month", "trip_start_timestamp"]
    paths = []
    index = 0
    for shard, n in enumerate((3000, 1500)):
        path = directory / f"data_tfrecord-{shard:05d}-of-00002.gz"
        with tfr.TFRecordWriter(path, "GZIP") as w:
            for _ in range(n):
                e = Example()
                f = e.features.feature
                for k in floats:
                    f[k].float_list.value.append(float(rng.uniform(0, 100)))
                for k, rate in sometimes.items():
                    if rng.random() >= rate:
                        f[k].float_list.value.append(float(rng.uniform(0, 100)))
                    else:
                        f[k].Clear()
                for k in ints:
                    f[k].int64_list.value.append(int(rng.integers(0, 2**40)))
                f["company"].bytes_list.value.extend([b"Taxi Co"] if rng.random() > 0.34 else [])
                f["payment_type"].bytes_list.value.append(b"Cash")
                f["pickup_community_area"].int64_list.value.append(int(rng.integers(1, 78)))
                f["dropoff_community_area"].float_list.value.extend(
                    [] if rng.random() < 0.035 else [float(rng.integers(1, 78))]
                )
                f["trip_seconds"].float_list.value.append(float(rng.integers(0, 9000)))
                if index in (2925, 3100):
                    f["trip_seconds"].Clear()
                f["pickup_census_tract"].Clear()  # never set: no dtype, left out
                w.write(e.SerializeToString())
                index += 1
        paths.append(path)
    return paths


@pytest.mark.slow
def test_taxi_like_shards(tmp_path: Path) -> None:
    paths = _taxi_like(tmp_path)
    quick = tfr.infer_schema(paths[0], check=False)
    assert quick["trip_seconds"] == tfr.FixedLenFeature([], tfr.float32)  # the old trap
    for source in (paths[0], paths, str(tmp_path)):
        schema = tfr.infer_schema(source)
        assert schema["trip_seconds"] == tfr.VarLenFeature(tfr.float32)
        assert dict(schema) == dict(tfr.infer_schema(source, None))
        assert len(schema) == 17 and "pickup_census_tract" not in schema
        data = tfr.read_examples(source)
        assert len(data["fare"]) == (3000 if source == paths[0] else 4500)
    assert tfr.read_examples(paths)["trip_seconds"].to_list()[2925] == []
    assert_cli_agrees(paths, *paths)


@pytest.mark.slow
@pytest.mark.skipif(
    not TAXI.is_dir(), reason=f"{TAXI} (TFX's taxi shards, outside the repository) is absent"
)
def test_real_tfx_taxi_shards() -> None:
    paths = sorted(TAXI.glob("*.gz"))
    assert paths
    for path in paths:
        schema = tfr.infer_schema(path)
        assert dict(schema) == dict(tfr.infer_schema(path, None))
        data = tfr.read_examples(path)  # failed with "trip_seconds ... is required" before
        assert len(data["fare"]) == schema.records + schema.checked
    assert tfr.infer_schema(paths[0])["trip_seconds"] == tfr.VarLenFeature(tfr.float32)
    assert_cli_agrees(paths, *paths)
