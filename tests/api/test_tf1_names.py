"""TensorFlow 1 names: ``tfr.python_io``, ``tfr.compat.v1`` and the queue APIs' errors.

A TF1 script ports by prefix: ``tf.python_io.TFRecordWriter`` /
``tf_record_iterator`` / ``TFRecordOptions`` / ``TFRecordCompressionType``, the
top-level ``tf.parse_single_example`` / ``tf.FixedLenFeature`` / ``tf.decode_raw``,
and ``tf.compat.v1``'s spellings. The queue API (``string_input_producer`` ->
``TFRecordReader().read(queue)`` -> ``shuffle_batch``) cannot run eagerly: each
name raises :class:`tfrecord_lite.GraphOnlyError` (a ``NotImplementedError``)
whose message names ``TFRecordDataset`` and shows the translation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import tfrecord_lite as tfr


def test_python_io_names_are_the_librarys() -> None:
    assert tfr.python_io.TFRecordWriter is tfr.TFRecordWriter
    assert tfr.python_io.tf_record_iterator is tfr.tf_record_iterator
    assert tfr.python_io.TFRecordOptions is tfr.TFRecordOptions
    assert tfr.python_io.TFRecordCompressionType is tfr.TFRecordCompressionType
    assert sorted(tfr.python_io.__all__) == [
        "TFRecordCompressionType",
        "TFRecordOptions",
        "TFRecordWriter",
        "tf_record_iterator",
    ]


def test_python_io_gzip_round_trip(tmp_path: Path) -> None:
    path = str(tmp_path / "x.tfrecord.gz")
    options = tfr.python_io.TFRecordOptions(tfr.python_io.TFRecordCompressionType.GZIP)
    writer = tfr.python_io.TFRecordWriter(path, options=options)
    for i in range(5):
        writer.write(b"record %d" % i)
    writer.close()
    assert (tmp_path / "x.tfrecord.gz").read_bytes()[:2] == b"\x1f\x8b"
    got = list(tfr.python_io.tf_record_iterator(path, options=options))
    assert got == [b"record %d" % i for i in range(5)]


TF1_TOP_LEVEL = [
    "parse_single_example",
    "parse_example",
    "parse_single_sequence_example",
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "VarLenFeature",
    "SparseFeature",
    "decode_raw",
    "TFRecordReader",
    "python_io",
]


@pytest.mark.parametrize("name", TF1_TOP_LEVEL)
def test_tf1_top_level_and_compat_v1_names(name: str) -> None:
    assert hasattr(tfr, name)
    assert hasattr(tfr.compat.v1, name)
    assert name in tfr.compat.v1.__all__


def test_compat_v1_namespaces() -> None:
    v1 = tfr.compat.v1
    assert v1.python_io is tfr.python_io and v1.train is tfr.train and v1.data is tfr.data
    assert v1.io.tf_record_iterator is tfr.tf_record_iterator
    assert v1.io.TFRecordWriter is tfr.TFRecordWriter
    assert v1.TFRecordDataset is tfr.TFRecordDataset
    for name in tfr.io.__all__:  # every tf.io name is in tf.compat.v1.io as well
        assert hasattr(v1.io, name), name


def test_compat_v1_parse_takes_tf1_argument_order() -> None:
    """TF1: parse_example(serialized, features, name=None, example_names=None)."""
    rec = tfr.encode_example({"a": [1, 2]})
    spec = {"a": tfr.FixedLenFeature([2], tfr.int64)}
    out = tfr.compat.v1.parse_example([rec], spec, "a_name", ["rec0"])
    assert out["a"].tolist() == [[1, 2]]
    one = tfr.compat.v1.parse_single_example(rec, spec, "a_name")
    assert one["a"].tolist() == [1, 2]
    bad = tfr.encode_example({"a": [1]})
    with pytest.raises(tfr.ParseError, match="rec0"):
        tfr.compat.v1.parse_example([bad], spec, None, ["rec0"])


QUEUE_CALLS: list[tuple[str, Callable[[], Any], str]] = [
    (
        "string_input_producer",
        lambda: tfr.train.string_input_producer(["a.tfrecords"], num_epochs=2),
        "TFRecordDataset(filenames).repeat(num_epochs)",
    ),
    (
        "shuffle_batch",
        lambda: tfr.train.shuffle_batch([1, 2], batch_size=4, capacity=10, min_after_dequeue=5),
        ".shuffle(min_after_dequeue).batch(batch_size)",
    ),
    ("batch", lambda: tfr.train.batch([1], batch_size=4), ".batch(batch_size)"),
    ("start_queue_runners", lambda: tfr.train.start_queue_runners(), "for batch in ds"),
    ("Coordinator", lambda: tfr.train.Coordinator(), "for batch in ds"),
    ("TFRecordReader", lambda: tfr.TFRecordReader(), "TFRecordDataset(filenames)"),
    (
        "TFRecordReader",
        lambda: tfr.compat.v1.TFRecordReader(options=tfr.TFRecordOptions("GZIP")),
        "TFRecordDataset(filenames)",
    ),
]


@pytest.mark.parametrize(
    ("name", "call", "translation"), QUEUE_CALLS, ids=[c[0] for c in QUEUE_CALLS]
)
def test_queue_api_names_the_replacement(
    name: str, call: Callable[[], Any], translation: str
) -> None:
    with pytest.raises(tfr.GraphOnlyError) as info:
        call()
    err = info.value
    assert isinstance(err, NotImplementedError) and isinstance(err, tfr.TFRecordError)
    text = str(err)
    assert name in text and translation in text and "docs/tf1-queues.md" in text
    assert "TFRecordDataset" in text


def test_tf1_queue_script_fails_at_the_first_queue_call_with_the_fix() -> None:
    script = (
        "filename_queue = tfr.train.string_input_producer(['train.tfrecords'])\n"
        "reader = tfr.TFRecordReader()\n"
    )
    with pytest.raises(NotImplementedError, match="string_input_producer"):
        exec(script, {"tfr": tfr})


def test_docs_page_has_the_translations() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "tf1-queues.md"
    text = page.read_text(encoding="utf-8")
    for needle in (
        "From TF1 queues to TFRecordDataset",
        "string_input_producer",
        "shuffle_batch",
        "decode_raw",
        "tfr.python_io.TFRecordWriter",
        "TFRecordDataset",
    ):
        assert needle in text


def test_reader_with_files_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "r.tfrecord"
    with tfr.TFRecordWriter(str(path)) as w:
        w.write(b"x")
    with tfr.TFRecordReader(str(path)) as reader:
        assert list(reader) == [b"x"]


def test_numpy_bools_are_ints_as_other_bools() -> None:
    """np.bool_ inside a list (NumPy 2 refuses operator.index on it) is 0/1."""
    assert list(tfr.int64_feature(np.bool_(True)).int64_list.value) == [1]
    assert list(tfr.int64_feature([np.bool_(False), True, 3]).int64_list.value) == [0, 1, 3]
    rec = tfr.encode_example({"a": [np.bool_(True), np.bool_(False)], "b": np.bool_(True)})
    out = tfr.parse_single_example(
        rec, {"a": tfr.FixedLenFeature([2], tfr.int64), "b": tfr.FixedLenFeature([], tfr.int64)}
    )
    assert out["a"].tolist() == [1, 0] and int(out["b"]) == 1
    assert list(tfr.float_feature([np.bool_(True)]).float_list.value) == [1.0]
    # an error inside a list names the key
    with pytest.raises(TypeError, match=r"^feature 'a': unsupported value type object"):
        tfr.encode_example({"a": [np.bool_(True), object()]})


def test_tf_image_codecs_are_the_tf_io_ones() -> None:
    """TF1 scripts decode with tf.image.decode_jpeg(...): tfr.image has the same codecs."""
    for name in ("decode_image", "decode_jpeg", "decode_png", "encode_jpeg", "encode_png"):
        assert getattr(tfr.image, name) is getattr(tfr.io, name)
    assert tfr.compat.v1.image is tfr.image
    pytest.importorskip("PIL")
    picture = np.zeros((4, 6, 3), np.uint8)
    picture[:, :, 1] = 200
    rec = tfr.encode_example({"image/encoded": tfr.image.encode_png(picture)})
    parsed = tfr.parse_single_example(rec, {"image/encoded": tfr.FixedLenFeature([], tfr.string)})
    assert np.array_equal(tfr.image.decode_png(parsed["image/encoded"], channels=3), picture)
