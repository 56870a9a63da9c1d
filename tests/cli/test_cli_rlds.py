"""``info``, ``verify`` and ``preview`` on an episodic (RLDS) TFDS directory.

``tests/data/tfds/tfl_rlds/1.0.0`` was written by tensorflow-datasets 4.9.10: its ``steps``
feature is a ``tfds.features.Dataset`` of dicts (``observation/image`` a PNG,
``observation/wrist_image`` a JPEG, ``gripper`` a ClassLabel ...). ``preview`` draws the
steps of the episodes (one frame per step, captioned with the step's index in its episode),
``info`` lists the steps' features as ``Dataset(...)`` under ``steps/`` and ``verify``
decodes every episode.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _cli_run import run_cli

import tfrecord_lite.tfds as tfds
from tfrecord_lite._cli import main
from tfrecord_lite._cli._tfds import preview_cells
from tfrecord_lite._decoding import display_array
from tfrecord_lite._decoding._display import grid_size

pytest.importorskip("PIL")

RLDS = Path(__file__).resolve().parents[1] / "data" / "tfds" / "tfl_rlds" / "1.0.0"
#: Steps per episode, in the order as_dataset yields the episodes.
LENGTHS = {"train": [1, 2, 8, 3, 5, 0], "test": [4, 1]}


def run(*args: Any) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)  # (in this process: see tests/_cli_run.py)


def step_indexes(split: str) -> list[str]:
    return [str(t) for n in LENGTHS[split] for t in range(n)]


@pytest.fixture(scope="module")
def rlds() -> tfds.Builder:
    return tfds.builder_from_directory(RLDS)


def test_preview_draws_the_steps_of_the_episodes(tmp_path: Path) -> None:
    out = tmp_path / "grid.png"
    got = run("preview", RLDS, "--cell", "32", "-o", out)
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith(
        f"wrote {out}: 16 frames of steps/observation/image, episodes 0-4 of split 'train', "
    )
    from PIL import Image

    with Image.open(out) as img:
        assert img.size == grid_size(16, 32, 4, True)
    one = run("preview", RLDS, "--skip", "2", "-n", "3", "--cell", "32", "-o", out)
    assert one.returncode == 0, one.stderr
    assert "3 frames of steps/observation/image, episode 2 of split 'train'" in one.stdout
    with Image.open(out) as img:
        assert img.size == grid_size(3, 32, 2, True)


def test_preview_cells_are_the_steps_images_captioned_by_step(rlds: tfds.Builder) -> None:
    got = preview_cells(str(RLDS), None, None, None, 16, 0)
    assert got.unit == "frame" and len(got.cells) == 16
    assert [text for _, text in got.cells] == step_indexes("train")[:16]
    steps = list(rlds.as_steps("train").take(16))
    for (arr, _), step in zip(got.cells, steps):
        assert arr is not None
        assert np.array_equal(arr, display_array(step["observation"]["image"]))
    # --skip counts episodes: episode 2's eight steps, then episode 3's
    skipped = preview_cells(str(RLDS), "train", None, None, 10, 2)
    assert [text for _, text in skipped.cells] == [str(t) for t in range(8)] + ["0", "1"]
    assert "episodes 2-3" in skipped.source
    # every step of every episode when -n is larger than the split
    everything = preview_cells(str(RLDS), "test", None, None, 100, 0)
    assert [text for _, text in everything.cells] == step_indexes("test")


def test_preview_image_and_label_keys_of_steps_and_episodes(
    rlds: tfds.Builder, tmp_path: Path
) -> None:
    steps = list(rlds.as_steps("test", episode_keys=("episode_metadata",)))
    wrist = [display_array(s["observation"]["wrist_image"]) for s in steps]
    for key in ("steps/observation/wrist_image", "observation/wrist_image"):
        got = preview_cells(str(RLDS), "test", key, None, 16, 0)
        assert len(got.cells) == 5 and all(
            np.array_equal(arr, want) for (arr, _), want in zip(got.cells, wrist)
        )
    names = rlds.info.features["steps"]["gripper"].names
    gripper = preview_cells(str(RLDS), "test", None, "steps/gripper", 16, 0)
    want = [f"{int(s['gripper'])} {names[int(s['gripper'])]}" for s in steps]
    assert [text for _, text in gripper.cells] == want
    episode = preview_cells(str(RLDS), "test", None, "episode_metadata/episode_id", 16, 0)
    ids = [str(s["episode_metadata"]["episode_id"]) for s in steps]
    assert [text for _, text in episode.cells] == ids and len(set(ids)) == 2
    out = tmp_path / "wrist.png"
    cli = run(
        "preview",
        RLDS,
        "--split",
        "test",
        "--image-key",
        "observation/wrist_image",
        "--label-key",
        "gripper",
        "-o",
        out,
    )
    assert cli.returncode == 0, cli.stderr
    assert "5 frames of steps/observation/wrist_image, episodes 0-1 of split 'test'" in cli.stdout


def test_preview_errors_on_an_rlds_directory(tmp_path: Path) -> None:
    out = tmp_path / "grid.png"
    bad_image = run("preview", RLDS, "--image-key", "observation/nope", "-o", out)
    assert bad_image.returncode == 2 and "Traceback" not in bad_image.stderr
    assert "no feature 'observation/nope'" in bad_image.stderr
    assert "steps/observation/image" in bad_image.stderr  # says which features there are
    bad_label = run("preview", RLDS, "--label-key", "nope", "-o", out)
    assert bad_label.returncode == 2 and "Traceback" not in bad_label.stderr
    assert "no feature 'nope' in the steps of 'steps'" in bad_label.stderr
    assert "episode_metadata/episode_id" in bad_label.stderr
    past = run("preview", RLDS, "--skip", "6", "-o", out)
    assert past.returncode == 1 and not out.exists()
    assert "split 'train' after 6 episodes has no steps to preview" in past.stderr


def test_info_lists_the_steps_features_as_a_dataset() -> None:
    got = run("info", RLDS)
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert any(line.strip().startswith("episodes:") and "'steps'" in line for line in lines)
    assert "splits (2, 8 episodes):" in got.stdout

    def row(feature: str) -> str:
        """The table row of ``feature``, its columns one space apart."""
        (found,) = [" ".join(line.split()) for line in lines if line.split()[:1] == [feature]]
        return found

    image = "steps/observation/image Dataset(Image(png)) (None, 12, 16, 3) uint8"
    assert row("steps/observation/image") == image
    assert row("steps/observation/wrist_image").split()[1] == "Dataset(Image(jpeg))"
    gripper = "steps/gripper Dataset(ClassLabel(num_classes=2)) (None,) int64 open, closed"
    assert row("steps/gripper") == gripper
    assert row("steps/contacts").split()[1] == "Dataset(Sequence(Tensor))"
    assert row("episode_metadata/episode_id").split()[1] == "Scalar"
    report = json.loads(run("info", "--json", RLDS).stdout)["datasets"][0]
    assert report["episode_steps"] == ["steps"]
    feats = {f["feature"]: f for f in report["features"]}
    assert feats["steps/observation/state"]["connector"] == "Dataset(Tensor)"
    assert feats["steps/observation/state"]["shape"] == "(None, 7)"
    assert feats["steps/gripper"]["classes"] == ["open", "closed"]


def test_info_of_a_plain_tfds_directory_has_no_episodes_line() -> None:
    plain = RLDS.parents[1] / "tfl_tabular" / "1.2.0"
    got = run("info", plain)
    assert got.returncode == 0 and "episodes:" not in got.stdout
    assert "examples" in got.stdout
    assert json.loads(run("info", "--json", plain).stdout)["datasets"][0]["episode_steps"] == []


def _damaged(tmp_path: Path) -> Path:
    data = tmp_path / "tfl_rlds" / "1.0.0"
    shutil.copytree(RLDS, data)
    return data


def test_a_missing_shard_is_a_problem_with_the_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _damaged(tmp_path)
    shard = data / "tfl_rlds-train.tfrecord-00000-of-00002"
    shard.unlink()
    grid = tmp_path / "grid.png"
    for args in (("preview", data, "-o", grid), ("info", data), ("verify", data)):
        code = main([*map(str, args)])  # (in this process: the exit code main returns)
        out, err = capsys.readouterr()
        assert code == 1, (args, out + err)
        assert "Traceback" not in err and shard.name in out + err
    assert not grid.exists()
    # an input that is not there at all stays a usage error
    assert main(["preview", str(tmp_path / "absent"), "-o", str(grid)]) == 2


def test_verify_decodes_every_episode() -> None:
    for args in ((), ("--no-parse",)):
        got = run("verify", *args, RLDS)
        assert got.returncode == 0, got.stdout + got.stderr
        assert f"ok     {RLDS}: 8 examples in 2 splits" in got.stdout


def test_verify_fails_on_a_truncated_shard(tmp_path: Path) -> None:
    data = _damaged(tmp_path)
    shard = data / "tfl_rlds-train.tfrecord-00001-of-00002"
    shard.write_bytes(shard.read_bytes()[:-100])
    for args in ((), ("--no-parse",)):
        got = run("verify", *args, data)
        assert got.returncode == 1, got.stdout + got.stderr
        assert "Traceback" not in got.stderr
        assert "split 'train': truncated record" in got.stdout
        assert shard.name in got.stdout and f"FAILED {data}: 1 split with problems" in got.stdout


def test_verify_fails_on_a_damaged_step(tmp_path: Path) -> None:
    """A byte of an episode's record changed: its CRC says so, with the file and record."""
    data = _damaged(tmp_path)
    shard = data / "tfl_rlds-test.tfrecord-00000-of-00002"
    raw = bytearray(shard.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    shard.write_bytes(bytes(raw))
    got = run("verify", data)
    assert got.returncode == 1, got.stdout + got.stderr
    assert "split 'test'" in got.stdout and shard.name in got.stdout
    assert "record 0" in got.stdout and "Traceback" not in got.stderr
    out = tmp_path / "grid.png"
    drawn = run("preview", data, "--split", "test", "-o", out)
    assert drawn.returncode == 1 and "Traceback" not in drawn.stderr
    assert shard.name in drawn.stderr


@pytest.mark.slow
def test_verify_fails_on_a_step_image_that_does_not_decode(tmp_path: Path) -> None:
    """The records are intact (CRCs right) but a step's PNG is not one: only decoding, as
    verify does without --no-parse, finds it."""
    import tfrecord_lite as tfr

    data = _damaged(tmp_path)
    shard = data / "tfl_rlds-train.tfrecord-00000-of-00002"
    records = list(tfr.tf_record_iterator(str(shard)))
    episode = tfr.train.Example.FromString(records[0])
    episode.features.feature["steps/observation/image"].bytes_list.value[0] = b"not a png"
    records[0] = episode.SerializeToString()
    with tfr.TFRecordWriter(str(shard)) as writer:
        for record in records:
            writer.write(record)
    got = run("verify", data)
    assert got.returncode == 1, got.stdout + got.stderr
    assert "split 'train': feature 'steps/observation/image': cannot decode image" in got.stdout
    assert shard.name in got.stdout and "record 0" in got.stdout
    assert run("verify", "--no-parse", data).returncode == 0  # the records themselves are fine
    drawn = run("preview", data, "-o", tmp_path / "grid.png")
    assert drawn.returncode == 1 and "feature 'steps/observation/image'" in drawn.stderr
