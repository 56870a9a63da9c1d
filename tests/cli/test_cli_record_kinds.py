"""The command line on records that are not plain Examples: SequenceExamples whose images
are a feature list (MediaPipe clips: ``image/encoded`` one JPEG per step), TensorBoard
event files and TF-Ranking ELWC records (which parse as Examples only by accident), and
records that do not parse at all. Small files written in ``tmp_path``."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite import example_pb2
from tfrecord_lite._cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _helpers import elwc_records, event_records


def _write(path: Path, records: list[bytes]) -> Path:
    with tfr.TFRecordWriter(path) as w:
        w.write_all(records)
    return path


def _jpeg(value: int) -> bytes:
    image = pytest.importorskip("PIL.Image")
    buf = io.BytesIO()
    image.fromarray(np.full((16, 20, 3), value, np.uint8)).save(buf, "JPEG")
    return buf.getvalue()


def _clips(path: Path, clips: int = 2, frames: int = 3) -> Path:
    """SequenceExamples as MediaPipe writes video clips: metadata in the context, one
    JPEG per step in the feature list ``image/encoded``, a timestamp per step."""
    records = []
    for c in range(clips):
        se = example_pb2.SequenceExample()
        ctx = se.context.feature
        ctx["clip/media_id"].bytes_list.value.append(b"clip%d" % c)
        ctx["clip/label/index"].int64_list.value.append(c)
        ctx["image/height"].int64_list.value.append(16)
        ctx["image/width"].int64_list.value.append(20)
        images = se.feature_lists.feature_list["image/encoded"]
        stamps = se.feature_lists.feature_list["image/timestamp"]
        for t in range(frames):
            images.feature.add().bytes_list.value.append(_jpeg(30 * t + 100 * c))
            stamps.feature.add().int64_list.value.append(1000 * t)
        records.append(se.SerializeToString())
    return _write(path, records)


def test_preview_draws_the_frames_of_a_feature_list(tmp_path: Path, capsys: Any) -> None:
    image = pytest.importorskip("PIL.Image")
    clips = _clips(tmp_path / "clips.tfrecord")
    grid = tmp_path / "grid.png"
    argv = ["preview", str(clips), "-o", str(grid), "--label-key", "clip/label/index"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "images from feature list 'image/encoded'" in captured.err
    assert "6 images" in captured.out  # 2 clips x 3 frames
    cells = np.asarray(image.open(grid).convert("L"))
    assert cells.shape == (226, 296)  # 3 x 2 cells of 96 px, labels under them
    # each frame is drawn: the centres of the six cells differ (frames 0, 30, ... grey)
    centres = {int(cells[r * 113 + 48, c * 99 + 48]) for r in range(2) for c in range(3)}
    assert len(centres) == 6, centres
    # -n counts frames; a label feature list labels each frame
    argv = ["preview", str(clips), "-o", str(grid), "--image-key", "image/encoded", "-n", "4"]
    assert main([*argv, "--label-key", "image/timestamp"]) == 0
    assert "4 images" in capsys.readouterr().out


def test_a_missing_feature_names_context_features_and_feature_lists(
    tmp_path: Path, capsys: Any
) -> None:
    pytest.importorskip("PIL")
    clips = _clips(tmp_path / "clips.tfrecord")
    out = tmp_path / "grid.png"
    assert main(["preview", str(clips), "-o", str(out), "--image-key", "image"]) == 1
    err = capsys.readouterr().err
    assert (
        "no feature 'image' (context features: clip/label/index, clip/media_id, "
        "image/height, image/width; feature lists: image/encoded, image/timestamp)"
    ) in err
    assert not out.exists()
    # a SequenceExample with no image anywhere: both kinds of feature are named
    se = example_pb2.SequenceExample()
    se.context.feature["id"].int64_list.value.append(1)
    se.feature_lists.feature_list["tokens"].feature.add().int64_list.value.append(7)
    plain = _write(tmp_path / "tokens.tfrecord", [se.SerializeToString()])
    assert main(["preview", str(plain), "-o", str(out)]) == 2
    assert "(context features: id; feature lists: tokens): pass --image-key" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "name, records, looks_like",
    [
        ("events.out.tfevents.1700000000.host", event_records(6), "TensorBoard Event"),
        ("elwc.tfrecord", elwc_records(4), "TF-Ranking ExampleListWithContext"),
    ],
)
def test_info_head_and_verify_describe_other_records_alike(
    tmp_path: Path, capsys: Any, name: str, records: list[bytes], looks_like: str
) -> None:
    path = _write(tmp_path / name, records)
    said = f"not tf.train.Example (looks like a {looks_like})"
    assert main(["info", str(path)]) == 0
    assert f"record type:  {said}" in capsys.readouterr().out
    assert main(["verify", str(path)]) == 1
    assert f"{path}: the records are {said}: " in capsys.readouterr().out
    assert main(["head", str(path), "-n", "2"]) == 0
    text = capsys.readouterr().out
    assert text.count(f"bytes, not an Example: looks like a {looks_like})") == 2, text
    assert "SequenceExample" not in text and "feature" not in text, text  # no made-up keys
    assert main(["head", str(path), "-n", "1", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["type"] is None and shown["looks_like"] == looks_like
    assert shown["description"] == said and "features" not in shown


@pytest.mark.parametrize(
    "name, records, looks_like",
    [
        ("events.out.tfevents.1700000000.host", event_records(6), "TensorBoard Event"),
        ("elwc.tfrecord", elwc_records(4), "TF-Ranking ExampleListWithContext"),
    ],
)
def test_preview_says_so_too(
    tmp_path: Path, capsys: Any, name: str, records: list[bytes], looks_like: str
) -> None:
    pytest.importorskip("PIL")
    path = _write(tmp_path / name, records)
    assert main(["preview", str(path), "-o", str(tmp_path / "grid.png")]) == 1
    said = f"not tf.train.Example (looks like a {looks_like})"
    assert f"{path}: the records are {said}: no image to preview" in capsys.readouterr().err
    assert not (tmp_path / "grid.png").exists()


def test_verify_says_in_one_line_why_a_record_is_not_an_example(
    tmp_path: Path, capsys: Any
) -> None:
    good = tfr.encode_example({"a": [1]})
    path = _write(tmp_path / "mixed.tfrecord", [good, b"\xff\xff\xff", good, b"\x0a\x05abc"])
    assert main(["verify", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    bad = [line for line in lines if "not a tf.train.Example or SequenceExample" in line]
    assert bad == [
        f"{path}: record 1, byte offset 30: not a tf.train.Example or SequenceExample: "
        "its 3 bytes do not parse as a protocol buffer (ff ff ff)",
        f"{path}: record 3, byte offset 79: not a tf.train.Example or SequenceExample: "
        "its 5 bytes do not parse as a protocol buffer (0a 05 61 62 63)",
    ]
    assert not any(
        "tfrecord_lite.SequenceExample" in line or "Wire format" in line for line in lines
    )
