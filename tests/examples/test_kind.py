"""What a file's records are (tfrecord_lite._examples._kind): messages that parse as
Examples only by accident (a TensorBoard event file, TF-Ranking ExampleListWithContext
records) are told apart from Examples, and infer_schema / read_examples refuse them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._examples import KindProbe, detect_kind

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _helpers import elwc_records, event_records, ld

TAXI = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "tfx-taxi"


def write(path: Path, records: list[bytes]) -> str:
    with tfr.TFRecordWriter(str(path)) as w:
        for r in records:
            w.write(r)
    return str(path)


def test_tensorboard_events_are_not_examples():
    kind = detect_kind(event_records(28))
    assert (kind.name, kind.looks_like) == ("not Example", "TensorBoard Event")
    assert not kind.is_example and kind.accidental == 28
    assert kind.describe() == "not tf.train.Example (looks like a TensorBoard Event)"
    assert "field 1 (fixed64) at the top level" in kind.reason


def test_an_event_without_file_version_is_still_recognised():
    # the scalar records alone (wall_time fixed64, step varint, summary)
    kind = detect_kind(event_records(10)[1:])
    assert kind.looks_like == "TensorBoard Event"


def test_elwc_records_are_not_sequence_examples():
    records = elwc_records(6)
    # protobuf parses them as SequenceExamples with binary keys: the accident itself
    msg = tfr.train.SequenceExample.FromString(records[0])
    assert msg.feature_lists.feature_list and all("\n" in k for k in msg.context.feature)
    kind = detect_kind(records)
    assert (kind.name, kind.looks_like) == ("not Example", "TF-Ranking ExampleListWithContext")
    assert "encoded features" in kind.reason


@pytest.mark.parametrize(
    "records, name",
    [
        ([], "none"),
        ([b""] * 4, "Example"),  # Examples with no features at all stay Examples
        ([b"", tfr.encode_example({"a": [1]}), ld(1, b"")], "Example"),
        (
            [tfr.encode_sequence_example({"id": [1]}, {"steps": [[1], [2, 3]]})] * 3,
            "SequenceExample",
        ),
    ],
)
def test_proper_records_keep_their_kind(records, name):
    kind = detect_kind(records)
    assert kind.name == name and kind.is_example


def test_odd_but_legal_keys_stay_examples():
    records = [tfr.encode_example({'odd "key" \\ \u00e9\n': [1, 2], "\n\x01x": [b"v"]})] * 3
    assert detect_kind(records).name == "Example"


def test_a_few_odd_records_among_real_examples_do_not_refuse_the_file():
    records = [tfr.encode_example({"x": [float(i)]}) for i in range(20)]
    records.insert(3, event_records(2)[1])
    assert detect_kind(records).name == "Example"


def test_probe_looks_at_the_first_records_only():
    probe = KindProbe(limit=5)
    for r in event_records(5) + [tfr.encode_example({"a": [1]})] * 5:
        probe.add(r)
    assert probe.full and probe.records == 5 and not probe.result().is_example


def test_real_tfx_shards_are_examples():
    shard = TAXI / "data_tfrecord-00000-of-00002.gz"
    if not shard.exists():
        pytest.skip(f"the real TFX sample is not here: {shard}")
    kind = detect_kind(tfr.tf_record_iterator(str(shard)))
    assert kind.name == "Example" and kind.records == 100 and kind.accidental == 0


def test_infer_schema_and_read_examples_refuse_an_events_file(tmp_path):
    path = write(tmp_path / "events.out.tfevents.1700000000.host", event_records(28))
    with pytest.raises(tfr.NotExampleError) as info:
        tfr.infer_schema(path)
    err = info.value
    assert isinstance(err, tfr.TFRecordError) and isinstance(err, ValueError)
    assert err.path == path and path in str(err)
    assert "TensorBoard Event" in str(err) and err.kind is not None
    with pytest.raises(tfr.NotExampleError):
        tfr.read_examples(path)


def test_infer_schema_refuses_elwc_records_given_as_bytes():
    with pytest.raises(tfr.NotExampleError, match="ExampleListWithContext"):
        tfr.infer_schema(elwc_records(4))


def test_infer_schema_keeps_examples_with_empty_records(tmp_path):
    records = [b"", tfr.encode_example({"a": [1]}), b""]
    path = write(tmp_path / "some-empty.tfrecord", records)
    schema = tfr.infer_schema(path)
    assert dict(schema) == {"a": tfr.VarLenFeature(tfr.int64)}
    assert tfr.infer_schema(write(tmp_path / "empty.tfrecord", [])) == {}
    data = tfr.read_examples(path)
    assert np.asarray(data["a"].values).tolist() == [1]
