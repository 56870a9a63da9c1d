"""The command line on inputs that are not what they seem: records that parse as
Examples only by accident (TensorBoard event files, TF-Ranking ELWC records) and
files that are not TFRecord files at all (JPEG, JSON, text, .npz)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import tfrecord_lite as tfr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _helpers import elwc_records, event_records
from test_cli import run


def write(path: Path, records: list[bytes]) -> Path:
    with tfr.TFRecordWriter(str(path)) as w:
        for r in records:
            w.write(r)
    return path


# --------------------------------------------------------------------------- not Examples


def test_info_says_an_events_file_is_not_examples(tmp_path):
    events = write(tmp_path / "events.out.tfevents.1700000000.host", event_records(28))
    res = run("info", events)
    assert res.returncode == 0, res.stderr
    assert "records:      28" in res.stdout
    assert "record type:  not tf.train.Example (looks like a TensorBoard Event)" in res.stdout
    assert "features (0" not in res.stdout
    report = json.loads(run("info", events, "--json").stdout)["files"][0]
    assert report["record_type"] == "not Example" and report["schema"] is None
    assert report["looks_like"] == "TensorBoard Event"


def test_info_says_elwc_records_are_not_sequence_examples(tmp_path):
    elwc = write(tmp_path / "elwc.tfrecord", elwc_records(5))
    res = run("info", elwc)
    assert "looks like a TF-Ranking ExampleListWithContext" in res.stdout
    assert "SequenceExample" not in res.stdout and "feature lists" not in res.stdout


def test_verify_fails_on_records_that_are_examples_only_by_accident(tmp_path):
    events = write(tmp_path / "events.out.tfevents.1", event_records(28))
    elwc = write(tmp_path / "elwc.tfrecord", elwc_records(5))
    good = write(tmp_path / "good.tfrecord", [tfr.encode_example({"a": [1]}), b""])
    res = run("verify", events, elwc, good)
    assert res.returncode == 1
    lines = res.stdout.splitlines()
    assert any(
        line.startswith(f"{events}: the records are not tf.train.Example")
        and "TensorBoard Event" in line
        for line in lines
    ), res.stdout
    assert any(line.startswith(f"FAILED {events}: 1 problem, 28 intact") for line in lines)
    assert any("ExampleListWithContext" in line for line in lines)
    assert any(line.startswith(f"ok     {good}") for line in lines)
    assert "2 of 3 files failed verification" in res.stdout and "--no-parse" in res.stdout
    assert run("verify", "--no-parse", events, elwc).returncode == 0


def test_schema_refuses_an_events_file(tmp_path):
    events = write(tmp_path / "events.out.tfevents.1", event_records(28))
    res = run("schema", events)
    assert res.returncode == 1 and res.stdout == ""
    line = res.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "TensorBoard Event" in line and str(events) in line
