"""The five tutorial scripts under real TensorFlow and ported, compared (``make interop``).

The script texts are ``tests/_tutorials.py``'s: TensorFlow runs them as written
(the TF1 ones as ``import tensorflow.compat.v1 as tf``), tfrecord_lite runs the
mechanical port. Same inputs, each in its own directory; every result must be
equal, and every file written must be byte-identical (GZIP files: their
decompressed bytes). The one allowed difference: JPEG bytes come from two
encoders, so pixels decoded from them are compared within JPEG's error.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pytest

tf: Any = pytest.importorskip("tensorflow")
pytest.importorskip("PIL")

import _tutorials as tut  # noqa: E402

N = 40


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tf_dir = tmp_path_factory.mktemp("tf")
    tfr_dir = tmp_path_factory.mktemp("tfr")
    return {
        "tf": tut.run_all(tf_dir, ported=False, n=N),
        "tfr": tut.run_all(tfr_dir, ported=True, n=N),
        "tf_inputs": tut.make_inputs(tf_dir, N),
        "tfr_inputs": tut.make_inputs(tfr_dir, N),
    }


def same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("name", ["a", "b", "c", "e"])
def test_results_are_tensorflows(both: dict[str, Any], name: str) -> None:
    want, got = both["tf"][name], both["tfr"][name]
    assert want.keys() == got.keys()
    for key in want:
        assert same(want[key], got[key]), f"pattern ({name}): {key} differs from TensorFlow's"


def test_guide_results_are_tensorflows(both: dict[str, Any]) -> None:
    want, got = both["tf"]["d"], both["tfr"]["d"]
    for key in ("feature0", "feature1", "feature3", "rows", "gz_rows", "pictures", "batches"):
        assert same(want[key], got[key]), f"pattern (d): {key} differs from TensorFlow's"
    # JPEG: each library's encoder, then its decoder; both near the picture and each other
    for (w, wl), (g, gl), picture in zip(want["decoded"], got["decoded"], want["pictures"]):
        assert wl == gl and w.shape == g.shape == picture.shape and g.dtype == w.dtype
        assert np.abs(w.astype(int) - g.astype(int)).mean() < 1.5
    # and TensorFlow decodes our JPEG bytes as we do (default dct_method: within 8)
    data = tf.io.encode_jpeg(want["pictures"][0], quality=95).numpy()
    import tfrecord_lite as tfr

    ours = tfr.io.decode_jpeg(data, channels=3)
    theirs = tf.io.decode_jpeg(data, channels=3).numpy()
    assert np.abs(ours.astype(int) - theirs.astype(int)).max() <= 8


FILES = ("RECORD_PATH", "TRAIN_PATH", "CV_PATH", "PATH", "GZ_PATH")


@pytest.mark.parametrize("key", FILES)
def test_files_are_byte_identical(both: dict[str, Any], key: str) -> None:
    a = Path(both["tf_inputs"][key]).read_bytes()
    b = Path(both["tfr_inputs"][key]).read_bytes()
    if key == "GZ_PATH":  # two deflate implementations: compare what they hold
        a, b = gzip.decompress(a), gzip.decompress(b)
    assert len(a) > 100 and a == b


def test_shards_are_byte_identical(both: dict[str, Any]) -> None:
    for s in range(both["tf_inputs"]["SHARDS"]):
        a = Path(both["tf_inputs"]["SHARD_PATH"] % s).read_bytes()
        b = Path(both["tfr_inputs"]["SHARD_PATH"] % s).read_bytes()
        assert a == b
