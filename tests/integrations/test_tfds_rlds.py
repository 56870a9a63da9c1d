"""RLDS episodes (``steps`` as a ``tfds.features.Dataset``) through tfrecord_lite.tfds, no TensorFlow.

``tests/data/tfds/tfl_rlds/1.0.0`` and ``reference/tfl_rlds-*.json`` were written by the
real tensorflow-datasets with ``tests/data/tfds/make_rlds_fixture.py``: the reference is
every episode of ``tfds.as_numpy(builder.as_dataset(split))`` with its ``steps``
dataset stacked. ``tests/interop/test_tfds_rlds_interop.py`` regenerates it with TFDS.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _cli_run import run_cli

import tfrecord_lite as tfr
import tfrecord_lite.tfds as tfds

sys.path.insert(0, str(Path(__file__).parent))
from tfds_reference import JPEG_TOLERANCE, assert_same, load_reference

pytest.importorskip("PIL")

ROOT = Path(__file__).resolve().parents[1] / "data" / "tfds"
RLDS = ROOT / "tfl_rlds" / "1.0.0"
#: Steps per episode, in the order as_dataset yields the episodes (TFDS's order).
LENGTHS = {"train": [1, 2, 8, 3, 5, 0], "test": [4, 1]}


@pytest.fixture(scope="module")
def rlds() -> tfds.Builder:
    return tfds.builder_from_directory(RLDS)


def assert_episode(ours: Any, ref: Any) -> None:
    """``ours`` equals TFDS's stacked episode (the JPEG frames within the decoder's tolerance)."""
    from tfrecord_lite._decoding._jpeg import jpeg_backend

    ours, ref = copy.copy(ours), copy.copy(ref)
    a = _pop_wrist(ours)
    b = _pop_wrist(ref)
    assert a.dtype == b.dtype == np.uint8 and a.shape == b.shape
    diff = int(np.abs(a.astype(np.int32) - b.astype(np.int32)).max()) if a.size else 0
    assert diff <= (0 if jpeg_backend() == "simplejpeg" else JPEG_TOLERANCE)
    assert_same(ours, ref)


def _pop_wrist(episode: dict[str, Any]) -> np.ndarray:
    steps = episode["steps"] = dict(episode["steps"])
    obs = steps["observation"] = dict(steps["observation"])
    return obs.pop("wrist_image")  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- episodes


def test_the_steps_feature_is_a_dataset_connector(rlds: tfds.Builder) -> None:
    steps = rlds.info.features["steps"]
    assert isinstance(steps, tfds.Dataset)
    assert steps.shape["observation"]["image"] == (None, 12, 16, 3)
    assert steps.dtype["is_first"] == np.bool_
    assert "'steps': Dataset({" in repr(rlds.info.features)
    assert rlds.info.features["steps"]["gripper"].names == ["open", "closed"]


@pytest.mark.parametrize("split", ["train", "test"])
def test_episodes_equal_tfds_with_its_steps_stacked(rlds: tfds.Builder, split: str) -> None:
    ours = list(rlds.as_dataset(split))
    ref = load_reference(ROOT, "tfl_rlds", split)
    assert [len(e["steps"]["is_first"]) for e in ours] == LENGTHS[split]
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        assert_episode(a, b)


def test_episode_values(rlds: tfds.Builder) -> None:
    episodes = list(rlds.as_dataset("train"))
    long = episodes[2]
    steps = long["steps"]
    assert steps["observation"]["image"].shape == (8, 12, 16, 3)
    assert steps["observation"]["image"].dtype == np.uint8
    assert steps["observation"]["state"].shape == (8, 7)
    assert steps["observation"]["depth"].dtype == np.float64
    assert steps["is_first"].tolist() == [True] + [False] * 7
    assert steps["is_last"].tolist() == [False] * 7 + [True]
    assert steps["language_instruction"].dtype == object
    assert isinstance(steps["language_instruction"][0], bytes)
    assert isinstance(long["episode_metadata"]["file_path"], bytes)
    one = episodes[0]["steps"]
    assert one["action"].shape == (1, 4) and one["is_first"].tolist() == [True]
    assert one["is_last"].tolist() == [True]
    contacts = steps["contacts"]  # 0 to 2 points a step: one ragged row per step
    assert isinstance(contacts, tfr.RaggedValue) and len(contacts) == 8
    assert contacts.values.shape[1:] == (2,) and contacts.values.dtype == np.float32
    empty = episodes[5]["steps"]
    assert empty["observation"]["image"].shape == (0, 12, 16, 3)
    assert empty["action"].shape == (0, 4) and empty["language_instruction"].shape == (0,)
    assert len(empty["contacts"]) == 0


def test_data_source_by_episode(rlds: tfds.Builder, tmp_path: Path) -> None:
    source = rlds.as_data_source("train", index_dir=str(tmp_path))
    assert len(source) == 6
    ref = load_reference(ROOT, "tfl_rlds", "train")
    for i in range(len(source)):  # shards of fewer than 16 episodes: the same order
        assert_episode(source[i], ref[i])
    again = pickle.loads(pickle.dumps(source))
    assert_episode(again[4], ref[4])


def test_batched_and_parallel_decoding_agree(rlds: tfds.Builder) -> None:
    ref = load_reference(ROOT, "tfl_rlds", "train")
    for a, b in zip(rlds.as_dataset("train", num_parallel_calls=2), ref):
        assert_episode(a, b)


def test_skip_decoding_leaves_the_frames_encoded(rlds: tfds.Builder) -> None:
    ep = next(
        iter(
            rlds.as_dataset(
                "test", decoders={"steps": {"observation": {"image": tfds.SkipDecoding()}}}
            )
        )
    )
    frames = ep["steps"]["observation"]["image"]
    assert frames.dtype == object and frames.shape == (4,)
    assert all(f.startswith(b"\x89PNG") for f in frames)
    assert ep["steps"]["observation"]["wrist_image"].shape == (4, 8, 8, 3)


# --------------------------------------------------------------------------- steps


def test_as_steps_flattens_every_episode_in_order(rlds: tfds.Builder) -> None:
    ref = load_reference(ROOT, "tfl_rlds", "train")
    steps = list(rlds.as_steps("train"))
    assert len(steps) == sum(LENGTHS["train"])
    expected = [(e, t) for e, n in enumerate(LENGTHS["train"]) for t in range(n)]
    assert [(int(s["episode_index"]), int(s["step_index"])) for s in steps] == expected
    for s in steps:
        e, t = int(s["episode_index"]), int(s["step_index"])
        want = ref[e]["steps"]
        assert sorted(s) == sorted(["episode_index", "step_index", *want])
        assert np.array_equal(s["observation"]["image"], want["observation"]["image"][t])
        assert s["observation"]["state"].tobytes() == want["observation"]["state"][t].tobytes()
        assert s["action"].shape == (4,) and s["action"].dtype == np.float32
        # the elements TFDS's nested steps dataset yields: NumPy scalars and bytes
        assert type(s["reward"]) is np.float32 and s["reward"] == want["reward"][t]
        assert type(s["is_last"]) is np.bool_ and s["is_last"] == want["is_last"][t]
        assert s["language_instruction"] == want["language_instruction"][t]
        assert type(s["language_instruction"]) is bytes
        assert type(s["episode_index"]) is np.int64
        # a list per step (a Sequence in the steps): that step's row of TFDS's ragged value
        assert s["contacts"].dtype == np.float32 and s["contacts"].shape[1:] == (2,)
        assert s["contacts"].tolist() == want["contacts"][1][t]


def test_as_steps_with_episode_features_and_batching(rlds: tfds.Builder) -> None:
    steps = list(rlds.as_steps("test", episode_keys=["episode_metadata"]))
    assert [int(s["episode_metadata"]["episode_id"]) for s in steps] == [1000] * 4 + [1001]
    batches = list(rlds.as_steps("train").batch(4))
    assert [len(b["step_index"]) for b in batches] == [4, 4, 4, 4, 3]
    assert batches[0]["observation"]["image"].shape == (4, 12, 16, 3)
    assert batches[0]["episode_index"].tolist() == [0, 1, 1, 2]
    shuffled = list(rlds.as_steps("train").shuffle(64, seed=1))
    assert len(shuffled) == 19
    config = tfds.ReadConfig(shuffle_seed=3, interleave_cycle_length=1)
    by_file = list(rlds.as_steps("train", shuffle_files=True, read_config=config))
    order = list(rlds.as_dataset("train", shuffle_files=True, read_config=config))
    lengths = [len(e["steps"]["is_first"]) for e in order]
    assert lengths != LENGTHS["train"]  # the two shards swapped: another episode order
    expected = [(e, t) for e, n in enumerate(lengths) for t in range(n)]
    assert [(int(s["episode_index"]), int(s["step_index"])) for s in by_file] == expected


def test_as_steps_refuses_what_it_cannot_flatten(rlds: tfds.Builder) -> None:
    with pytest.raises(ValueError, match=r"no tfds\.features\.Dataset feature"):
        tfds.builder_from_directory(ROOT / "tfl_tabular" / "1.2.0").as_steps("train")
    with pytest.raises(ValueError, match="no Dataset feature 'episode_metadata'"):
        rlds.as_steps("train", steps="episode_metadata")
    with pytest.raises(ValueError, match="episode_keys: 'nope'"):
        rlds.as_steps("train", episode_keys=["nope"])
    with pytest.raises(ValueError, match="episode_keys: 'steps'"):
        rlds.as_steps("train", episode_keys=["steps"])


# --------------------------------------------------------------------------- hostile or unsupported


def _copy(tmp_path: Path, edit_features: Any = None) -> Path:
    data = tmp_path / "rlds"
    shutil.copytree(RLDS, data)
    if edit_features is not None:
        feats = json.loads((data / "features.json").read_text())
        edit_features(feats)
        (data / "features.json").write_text(json.dumps(feats))
    return data


def _steps_features(feats: dict[str, Any]) -> dict[str, Any]:
    return feats["featuresDict"]["features"]["steps"]["sequence"]["feature"]["featuresDict"][
        "features"
    ]  # type: ignore[no-any-return]


def test_unsupported_step_features_are_named(tmp_path: Path) -> None:
    def edit(feats: dict[str, Any]) -> None:
        _steps_features(feats)["caption"] = {
            "pythonClassName": "tensorflow_datasets.core.features.translation_feature.Translation"
        }

    with pytest.raises(tfds.UnsupportedFeatureError, match="Translation"):
        tfds.builder_from_directory(_copy(tmp_path, edit))


def test_a_dataset_inside_a_dataset_is_refused(tmp_path: Path) -> None:
    def edit(feats: dict[str, Any]) -> None:
        steps = feats["featuresDict"]["features"]["steps"]
        _steps_features(feats)["sub"] = copy.deepcopy(steps)

    with pytest.raises(tfds.UnsupportedFeatureError, match="Dataset inside a Dataset"):
        tfds.builder_from_directory(_copy(tmp_path, edit))


def test_a_dataset_with_a_fixed_length_is_refused(tmp_path: Path) -> None:
    def edit(feats: dict[str, Any]) -> None:
        feats["featuresDict"]["features"]["steps"]["sequence"]["length"] = "3"

    with pytest.raises(ValueError, match="a Dataset has no fixed length"):
        tfds.builder_from_directory(_copy(tmp_path, edit))


def test_missing_shard_is_named(tmp_path: Path) -> None:
    data = _copy(tmp_path)
    (data / "tfl_rlds-train.tfrecord-00001-of-00002").unlink()
    b = tfds.builder_from_directory(data)
    with pytest.raises(tfds.DatasetNotFoundError, match="00001-of-00002"):
        b.as_steps("train")
    assert len(list(b.as_dataset("test"))) == 2


def test_steps_of_different_lengths_are_a_parse_error(tmp_path: Path) -> None:
    import tfrecord_lite as tfr
    from tfrecord_lite.example_pb2 import Example

    data = _copy(tmp_path)
    shard = data / "tfl_rlds-test.tfrecord-00001-of-00002"
    (record,) = list(tfr.TFRecordFile(str(shard)))
    ex = Example.FromString(record)
    ex.features.feature["steps/reward"].float_list.value.append(0.5)  # one reward too many
    with tfr.TFRecordWriter(str(shard)) as w:
        w.write(ex.SerializeToString())
    b = tfds.builder_from_directory(data)
    for read in (
        lambda: list(b.as_steps("test")),
        lambda: list(b.as_dataset("test")),
        lambda: b.as_data_source("test", index_dir=str(tmp_path))[1],
    ):
        with pytest.raises(tfr.ParseError, match="different numbers of steps") as err:
            read()
        assert "steps/reward has 2" in str(err.value) and err.value.key == "steps"
        assert err.value.path is not None and err.value.path.endswith("00001-of-00002")


# --------------------------------------------------------------------------- command line


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)  # (in this process: see tests/_cli_run.py)


def test_cli_info_and_verify_on_an_rlds_directory(tmp_path: Path) -> None:
    info = _cli("info", str(RLDS))
    assert info.returncode == 0, info.stderr
    assert "TFDS dataset: tfl_rlds 1.0.0" in info.stdout
    assert "steps/observation/image" in info.stdout and "(None, 12, 16, 3)" in info.stdout
    verify = _cli("verify", str(RLDS))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "8 examples in 2 splits" in verify.stdout
    data = _copy(tmp_path)
    (data / "tfl_rlds-test.tfrecord-00000-of-00002").unlink()
    broken = _cli("verify", str(data))
    assert broken.returncode != 0
    assert "00000-of-00002" in broken.stdout + broken.stderr


# --------------------------------------------------------------------------- frames on threads


def test_frames_decode_on_threads_in_order(rlds: tfds.Builder) -> None:
    import tfrecord_lite as tfr
    from tfrecord_lite.tfds import _frames

    calls: list[int] = []
    real = _frames.frame_pool

    def counting() -> Any:
        pool = real()
        calls.append(pool is not None)
        return pool

    _frames.frame_pool = counting  # type: ignore[assignment]
    try:
        threaded = list(rlds.as_dataset("train"))
    finally:
        _frames.frame_pool = real  # type: ignore[assignment]
    if (os.cpu_count() or 1) > 1:
        assert any(calls)  # the 8-step episode's frames went to the pool
    with tfr.options(threads=1):
        assert _frames.frame_pool() is None
        serial = list(rlds.as_dataset("train"))
    for a, b in zip(threaded, serial):
        assert_same(a, b)


def test_a_bad_frame_names_its_feature_and_record(tmp_path: Path) -> None:
    import tfrecord_lite as tfr
    from tfrecord_lite.example_pb2 import Example

    data = _copy(tmp_path)
    shard = data / "tfl_rlds-test.tfrecord-00000-of-00002"
    (record,) = list(tfr.TFRecordFile(str(shard)))
    ex = Example.FromString(record)
    frames = ex.features.feature["steps/observation/image"].bytes_list.value
    frames[2] = frames[2][:40]  # a PNG cut short, in the middle of a 4-step episode
    with tfr.TFRecordWriter(str(shard)) as w:
        w.write(ex.SerializeToString())
    b = tfds.builder_from_directory(data)
    with pytest.raises(tfr.ParseError, match="steps/observation/image") as err:
        list(b.as_dataset("test"))
    assert err.value.path is not None and err.value.path.endswith("00000-of-00002")
    assert err.value.index == 0


def test_cli_verify_decodes_every_episode(tmp_path: Path) -> None:
    import tfrecord_lite as tfr
    from tfrecord_lite.example_pb2 import Example

    data = _copy(tmp_path)
    shard = data / "tfl_rlds-test.tfrecord-00001-of-00002"
    (record,) = list(tfr.TFRecordFile(str(shard)))
    ex = Example.FromString(record)
    ex.features.feature["steps/reward"].float_list.value.append(0.5)
    with tfr.TFRecordWriter(str(shard)) as w:
        w.write(ex.SerializeToString())
    out = _cli("verify", str(data))
    assert out.returncode == 1
    assert "different numbers of steps" in out.stdout + out.stderr
    assert "00001-of-00002" in out.stdout + out.stderr


def test_episodes_are_decoded_one_at_a_time(rlds: tfds.Builder, monkeypatch: Any) -> None:
    from tfrecord_lite.tfds import _decoder

    sizes: list[int] = []
    many = _decoder._Decode.many

    def counting(self: Any, records: list[bytes]) -> list[Any]:
        sizes.append(len(records))
        return many(self, records)

    monkeypatch.setattr(_decoder._Decode, "many", counting)
    assert len(list(rlds.as_dataset("train"))) == 6
    assert sizes == [1] * 6  # memory holds one decoded episode, not a batch of 64
    sizes.clear()
    tabular = tfds.builder_from_directory(ROOT / "tfl_tabular" / "1.2.0")
    list(tabular.as_dataset("test", read_config=tfds.ReadConfig(interleave_cycle_length=1)))
    assert max(sizes) > 1  # other datasets still parse many records at once
