"""``tfrecord-lite convert DATASET_DIR OUT --split S``: TFDS and RLDS directories.

To Parquet / Arrow the rows equal what ``tfrecord_lite.tfds`` decodes (images kept
encoded); RLDS episodes' steps are list columns, or one row per step with
``--steps rows``; to TFRecord / ArrayRecord / WebDataset the split's records as they
are stored. A directory with a missing shard is refused before anything is written.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
import tfrecord_lite.tfds as tfds
from tfrecord_lite._cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "tfds"
RLDS = DATA / "tfl_rlds" / "1.0.0"
FEATURES = DATA / "tfl_features" / "1.0.0"
IN_ORDER = tfds.ReadConfig(interleave_cycle_length=1)
RLDS_IMAGES = {"steps": {"observation": {"image": tfds.SkipDecoding()}}}
RLDS_IMAGES["steps"]["observation"]["wrist_image"] = tfds.SkipDecoding()

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _same(got: Any, want: Any, where: str) -> None:
    """A Parquet value (Python lists) equals a decoded TFDS value (NumPy)."""
    if isinstance(want, dict):
        assert set(got) == set(want), where
        for k in want:
            _same(got[k], want[k], f"{where}/{k}")
    elif isinstance(want, tfr.RaggedValue):
        _same(got, want.to_list(), where)
    elif isinstance(want, np.ndarray) and want.dtype.kind == "O":
        assert got == [bytes(v) for v in want.ravel()], where
    elif isinstance(want, list):  # a ragged value's rows
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{i}]")
    elif isinstance(want, (np.ndarray, np.generic)):
        w = np.asarray(want)
        if w.size == 0:  # an empty list keeps no inner dimensions
            assert np.asarray(got).size == 0, where
            return
        g = np.asarray(got, dtype=w.dtype)
        assert g.shape == w.shape and np.array_equal(g, w, equal_nan=w.dtype.kind == "f"), where
    else:
        assert got == want, where


def test_rlds_episodes_with_their_steps_as_list_columns(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "episodes.parquet"
    assert main(["convert", str(RLDS), str(out), "--split", "train"]) == 0
    assert "wrote 6 rows to" in capsys.readouterr().out
    table = pq.read_table(out)
    builder = tfds.builder_from_directory(RLDS)
    want = list(builder.as_dataset("train", decoders=RLDS_IMAGES, read_config=IN_ORDER))
    rows = table.to_pylist()
    assert len(rows) == len(want) == 6
    for i, (got, w) in enumerate(zip(rows, want)):
        _same(got, w, f"episode {i}")
    # the PNG and JPEG frames are kept as they are stored
    assert rows[0]["steps"]["observation"]["image"][0][:8] == b"\x89PNG\r\n\x1a\n"
    assert rows[0]["steps"]["observation"]["wrist_image"][0][:3] == b"\xff\xd8\xff"
    lengths = [len(r["steps"]["reward"]) for r in rows]
    assert 0 in lengths and max(lengths) > 1  # empty and long episodes alike


def test_episodes_are_converted_a_bounded_number_of_bytes_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfrecord_lite._cli import _convert_tables, _convert_tfds

    monkeypatch.setattr(_convert_tfds, "TABLE_BYTES", 1)  # one episode a table
    sizes: list[int] = []
    real = _convert_tables.TableFile.write

    def write(self: Any, table: Any) -> None:
        sizes.append(table.num_rows)
        real(self, table)

    monkeypatch.setattr(_convert_tables.TableFile, "write", write)
    out = tmp_path / "e.parquet"
    assert main(["-q", "convert", str(RLDS), str(out), "--split", "train"]) == 0
    assert sizes == [1] * 6
    assert pq.read_table(out).num_rows == 6


def test_rlds_one_row_per_step(tmp_path: Path) -> None:
    out = tmp_path / "steps.arrow"
    assert main(["-q", "convert", str(RLDS), str(out), "--split", "train", "--steps", "rows"]) == 0
    import pyarrow.feather as feather

    table = feather.read_table(out)
    assert table.column_names[:2] == ["episode_index", "step_index"]
    builder = tfds.builder_from_directory(RLDS)
    want = list(builder.as_steps("train", decoders=RLDS_IMAGES, read_config=IN_ORDER))
    rows = table.to_pylist()
    assert len(rows) == len(want) > 6
    for i, (got, w) in enumerate(zip(rows, want)):
        _same(got, w, f"step {i}")


def test_every_tfds_feature_kind_to_parquet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "features.parquet"
    argv = ["-q", "convert", str(FEATURES), str(out), "--split", "train"]
    if int(pa.__version__.split(".")[0]) < 15:
        # Parquet stores float16 from pyarrow 15 on: before, a clear error and no output
        assert main(argv) == 1
        assert "halffloat" in capsys.readouterr().err
        assert not out.exists() and list(tmp_path.iterdir()) == []
        return
    assert main(argv) == 0
    builder = tfds.builder_from_directory(FEATURES)
    skip = {
        k: tfds.SkipDecoding()
        for k in ("image", "image_f32", "image_gray", "image_gray_jpeg", "image_jpeg")
    }
    skip.update({k: tfds.SkipDecoding() for k in ("image_rgba", "image_u16", "video")})
    skip["video_jpeg"] = tfds.SkipDecoding()
    want = list(builder.as_dataset("train", decoders=skip, read_config=IN_ORDER))
    table = pq.read_table(out)
    assert str(table.schema.field("t_uint16").type) == "list<element: uint16>"
    assert str(table.schema.field("t_float16").type) == "list<element: halffloat>"
    rows = table.to_pylist()
    assert len(rows) == len(want) > 1
    for i, (got, w) in enumerate(zip(rows, want)):
        _same(got, w, f"example {i}")


def test_records_as_they_are_stored(tmp_path: Path) -> None:
    builder = tfds.builder_from_directory(RLDS)
    shards = builder.info.splits["train"].filepaths
    stored = [r for s in shards for r in tfr.tf_record_iterator(s)]
    out = tmp_path / "train.tfrecord"
    assert main(["-q", "convert", str(RLDS), str(out), "--split", "train"]) == 0
    assert list(tfr.tf_record_iterator(out)) == stored
    # a slice of the split: its records
    argv = ["-q", "convert", str(RLDS), str(tmp_path / "s.tfrecord"), "--split", "train[2:5]"]
    assert main(argv) == 0
    assert list(tfr.tf_record_iterator(tmp_path / "s.tfrecord")) == stored[2:5]


def test_records_as_they_are_stored_to_array_record(tmp_path: Path) -> None:
    module = pytest.importorskip("array_record.python.array_record_module")
    builder = tfds.builder_from_directory(RLDS)
    stored = [r for s in builder.info.splits["train"].filepaths for r in tfr.tf_record_iterator(s)]
    ar = tmp_path / "train.array_record"
    assert main(["-q", "convert", str(RLDS), str(ar), "--split", "train"]) == 0
    reader = module.ArrayRecordReader(str(ar))
    assert list(reader.read_all()) == stored
    reader.close()


def test_rlds_episodes_as_webdataset_samples(tmp_path: Path) -> None:
    import tarfile

    out = tmp_path / "episodes.tar"
    assert main(["-q", "convert", str(RLDS), str(out), "--split", "train"]) == 0
    builder = tfds.builder_from_directory(RLDS)
    episodes = list(builder.as_dataset("train", decoders=RLDS_IMAGES, read_config=IN_ORDER))
    with tarfile.open(out) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    for i, episode in enumerate(episodes):
        frames = episode["steps"]["observation"]["image"]
        for t, frame in enumerate(frames):  # each step's PNG, byte for byte
            assert files[f"{i:09d}.steps_observation_image.{t}.png"] == frame
        wrist = episode["steps"]["observation"]["wrist_image"]
        assert [
            files.get(f"{i:09d}.steps_observation_wrist_image.{t}.jpg") for t in range(len(wrist))
        ] == list(wrist)


def test_a_missing_shard_is_an_error_before_anything_is_written(
    tmp_path: Path, capsys: Any
) -> None:
    broken = tmp_path / "tfl_rlds" / "1.0.0"
    shutil.copytree(RLDS, broken)
    (broken / "tfl_rlds-train.tfrecord-00001-of-00002").unlink()
    out = tmp_path / "out"
    for name in ("e.parquet", "e.tar", "e.tfrecord", "e.arrow"):
        code = main(["convert", str(broken), str(out / name), "--split", "train"])
        err = capsys.readouterr().err
        assert code != 0 and "missing" in err and "tfl_rlds-train.tfrecord-00001" in err, err
        assert "Traceback" not in err
        assert not out.exists()
    # the other split is whole, and converts
    assert main(["-q", "convert", str(broken), str(out / "t.parquet"), "--split", "test"]) == 0


def test_a_short_shard_is_an_error_and_leaves_nothing(tmp_path: Path, capsys: Any) -> None:
    broken = tmp_path / "tfl_rlds" / "1.0.0"
    shutil.copytree(RLDS, broken)
    shard = broken / "tfl_rlds-train.tfrecord-00001-of-00002"
    first = next(iter(tfr.tf_record_iterator(shard)))
    with tfr.TFRecordWriter(shard) as w:
        w.write(first)  # one record where dataset_info.json says more
    assert main(["convert", str(broken), str(tmp_path / "o.tfrecord"), "--split", "train"]) == 1
    assert "dataset_info.json says" in capsys.readouterr().err
    assert not (tmp_path / "o.tfrecord").exists()


@pytest.mark.parametrize(
    "source, options, said",
    [
        (RLDS, [], "say which with --split"),
        (RLDS, ["--split", "validation"], "validation"),
        (FEATURES, ["--split", "train", "--steps", "rows"], "--steps rows is for episodic"),
        (RLDS, ["--split", "train", "--steps", "rows", "--to", "tfrecord"], "--steps rows is for"),
        (RLDS, ["--split", "train", "--skip-bad"], "--skip-bad is for input files"),
        (RLDS, ["--split", "train", "--from", "arrow"], "--from is for input files"),
    ],
)
def test_usage_errors(
    tmp_path: Path, capsys: Any, source: Path, options: list[str], said: str
) -> None:
    out = tmp_path / "o.parquet"
    if "--to" in options:
        out = tmp_path / "o"
    assert main(["convert", str(source), str(out), *options]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_split_and_steps_need_a_tfds_directory(tmp_path: Path, capsys: Any) -> None:
    src = tmp_path / "in.tfrecord"
    with tfr.TFRecordWriter(src) as w:
        w.write(tfr.encode_example({"x": np.array([1], np.int64)}))
    assert main(["convert", str(src), str(tmp_path / "o.parquet"), "--split", "train"]) == 2
    assert "are for TFDS dataset directories" in capsys.readouterr().err
