"""The TF tutorial's tensor idioms: ``raw_record.numpy()`` and ``tf.reshape`` /
``tf.cast`` / ``tf.constant`` are NumPy here; a missing ``tfr.X`` that TensorFlow
has says the NumPy one-liner and points to the porting table, which lists them all."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._decoding import NUMPY_FOR_TF

DOCS = Path(__file__).resolve().parents[2] / "docs" / "coming-from-tensorflow.md"


def test_the_tutorial_take_one_loop_runs_with_the_record_as_bytes(tmp_path: Path) -> None:
    path = os.fspath(tmp_path / "t.tfrecord")
    with tfr.io.TFRecordWriter(path) as w:
        w.write(tfr.make_example({"feature0": [7], "feature1": [b"dog"]}).SerializeToString())
    raw_dataset = tfr.data.TFRecordDataset([path])
    for raw_record in raw_dataset.take(1):
        example = tfr.train.Example()
        example.ParseFromString(raw_record)  # the tutorial's raw_record.numpy()
    assert example.features.feature["feature0"].int64_list.value == [7]
    assert example.features.feature["feature1"].bytes_list.value == [b"dog"]


@pytest.mark.parametrize("module", [tfr, tfr.io, tfr.data, tfr.train, tfr.image, tfr.compat])
@pytest.mark.parametrize("name", ["reshape", "cast", "constant"])
def test_a_tensor_op_points_to_numpy_and_the_table(module: object, name: str) -> None:
    with pytest.raises(AttributeError) as info:
        getattr(module, name)
    text = str(info.value)
    assert f"tf.{name}" in text and NUMPY_FOR_TF[name] in text
    assert "coming-from-tensorflow.md" in text and "Tensor ops: use NumPy" in text


def test_other_missing_names_stay_plain_attribute_errors() -> None:
    with pytest.raises(AttributeError, match=r"^module 'tfrecord_lite' has no attribute 'nope'$"):
        tfr.nope  # noqa: B018
    assert not hasattr(tfr.io, "no_such_op")
    assert hasattr(tfr, "TFRecordDataset")  # real names are unaffected


def test_the_docs_table_lists_every_name_with_its_one_liner() -> None:
    text = DOCS.read_text()
    section = text.split("## Tensor ops: use NumPy", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `tf\.(\w+)` \| (.+?) \|$", section, flags=re.M))
    assert set(rows) == set(NUMPY_FOR_TF)
    for name, instead in NUMPY_FOR_TF.items():
        assert instead in rows[name]


def test_the_one_liners_do_what_the_tutorial_does() -> None:
    x = np.arange(6)
    assert eval(NUMPY_FOR_TF["reshape"], {"np": np, "x": x, "shape": (2, 3)}).shape == (2, 3)
    cast = eval(NUMPY_FOR_TF["cast"], {"np": np, "x": x})
    assert cast.dtype == np.float32 and cast.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    const = eval(NUMPY_FOR_TF["constant"].replace("...", "np.int64"), {"np": np, "value": [1, 2]})
    assert const.dtype == np.int64 and const.tolist() == [1, 2]
    hot = eval(NUMPY_FOR_TF["one_hot"], {"np": np, "depth": 3, "indices": np.array([2, 0])})
    assert hot.tolist() == [[0, 0, 1], [1, 0, 0]]
