"""Write the small TFDS datasets of ``tests/data/tfds/`` with the real tensorflow-datasets.

Run from the repository root with the interop environment (TensorFlow and
tensorflow-datasets installed)::

    .venv-interop/bin/python tests/data/tfds/make_tfds_fixtures.py tests/data/tfds

It writes, under ``OUT``:

* ``OUT/<name>/<version>/``: each dataset exactly as ``download_and_prepare`` lays
  it out (``dataset_info.json``, ``features.json``, ``*.labels.txt``, shards);
* ``OUT/reference/<name>-<split>.json``: what ``tfds.as_numpy(builder.as_dataset(split))``
  yields for every example, in order (see :func:`encode_leaf` for the format).

Everything is deterministic (fixed seeds; TFDS orders examples by a hash of their
keys), so running it again reproduces the committed files apart from the
generation timestamps TFDS itself stores. ``tests/interop/test_tfds_interop.py``
runs it into a temporary directory and checks tfrecord_lite against the fresh output.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf
import tensorflow_datasets as tfds

tf.config.set_visible_devices([], "GPU")

# --------------------------------------------------------------------------- data


def _picture(rng: np.random.Generator, h: int, w: int, c: int) -> np.ndarray:
    """A smooth image with edges and some noise (so JPEG's DCT has work to do)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    planes = []
    for k in range(c):
        f = rng.uniform(0.05, 0.4, size=2)
        plane = 127 + 100 * np.sin(f[0] * x + k) * np.cos(f[1] * y - k)
        plane += (x > w // 2) * 40 - (y > h // 3) * 30
        plane += rng.normal(0, 12, size=(h, w))
        planes.append(plane)
    return np.clip(np.stack(planes, axis=-1), 0, 255).astype(np.uint8)


class TflFeatures(tfds.core.GeneratorBasedBuilder):
    """Every feature connector tfrecord_lite decodes, 12 examples."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES: ClassVar[dict[str, str]] = {"1.0.0": "Fixture for tfrecord_lite."}

    def _info(self) -> tfds.core.DatasetInfo:
        F = tfds.features
        return tfds.core.DatasetInfo(
            builder=self,
            description="Every TFDS feature connector tfrecord_lite supports.",
            features=F.FeaturesDict(
                {
                    "image": F.Image(shape=(None, None, 3)),
                    "image_jpeg": F.Image(shape=(None, None, 3), encoding_format="jpeg"),
                    "image_gray": F.Image(shape=(8, 8, 1)),
                    "image_gray_jpeg": F.Image(shape=(16, 16, 1), encoding_format="jpeg"),
                    "image_rgba": F.Image(shape=(None, None, 4)),
                    "image_u16": F.Image(shape=(6, 5, 1), dtype=np.uint16),
                    "image_f32": F.Image(shape=(4, 3, 1), dtype=np.float32),
                    "label": F.ClassLabel(names=["cat", "dog", "bird"]),
                    "label_n": F.ClassLabel(num_classes=5),
                    "text": F.Text(),
                    "scalar_f": F.Scalar(dtype=np.float32),
                    "scalar_b": F.Scalar(dtype=np.bool_),
                    "t_int32": F.Tensor(shape=(2, 3), dtype=np.int32),
                    "t_int8": F.Tensor(shape=(3,), dtype=np.int8),
                    "t_int16": F.Tensor(shape=(3,), dtype=np.int16),
                    "t_uint8": F.Tensor(shape=(3,), dtype=np.uint8),
                    "t_uint16": F.Tensor(shape=(3,), dtype=np.uint16),
                    "t_uint32": F.Tensor(shape=(3,), dtype=np.uint32),
                    "t_uint64": F.Tensor(shape=(2,), dtype=np.uint64),
                    "t_int64": F.Tensor(shape=(), dtype=np.int64),
                    "t_float16": F.Tensor(shape=(2,), dtype=np.float16),
                    "t_float64": F.Tensor(shape=(2,), dtype=np.float64),
                    "t_bool": F.Tensor(shape=(4,), dtype=np.bool_),
                    "t_str": F.Tensor(shape=(None,), dtype=np.str_),
                    "t_var": F.Tensor(shape=(None, 3), dtype=np.float32),
                    "t_mid": F.Tensor(shape=(2, None), dtype=np.int64),
                    "t_zlib": F.Tensor(shape=(None, None), dtype=np.int16, encoding="zlib"),
                    "t_bytes": F.Tensor(shape=(3,), dtype=np.uint64, encoding="bytes"),
                    "t_bytes_f64": F.Tensor(shape=(2, 2), dtype=np.float64, encoding="bytes"),
                    "bbox": F.BBoxFeature(),
                    "objects": F.Sequence(
                        {
                            "bbox": F.BBoxFeature(),
                            "kind": F.ClassLabel(names=["small", "large"]),
                            "area": np.int64,
                        }
                    ),
                    "seq_f": F.Sequence(F.Tensor(shape=(2,), dtype=np.float32)),
                    "seq_fixed": F.Sequence(np.int32, length=3),
                    "seq_text": F.Sequence(F.Text()),
                    "ragged": F.Sequence(F.Sequence(np.int64)),
                    "ragged_vec": F.Sequence(F.Sequence(F.Tensor(shape=(2,), dtype=np.float32))),
                    "nested": {
                        "inner": {"x": np.float32, "name": F.Text()},
                        "tag": F.ClassLabel(names=["a", "b"]),
                    },
                    "video": F.Video(shape=(None, 8, 10, 3)),
                    "video_jpeg": F.Video(shape=(3, 16, 16, 3), encoding_format="jpeg"),
                    "audio": F.Audio(shape=(None,), dtype=np.int64, sample_rate=16000),
                    "audio_f": F.Audio(shape=(None, 2), dtype=np.float32, sample_rate=8000),
                }
            ),
            supervised_keys=("image", "label"),
            homepage="https://example.invalid/tfl_features",
        )

    def _split_generators(self, dl_manager: Any) -> dict[str, Any]:
        return {"train": self._generate_examples(12, 0), "test": self._generate_examples(4, 1)}

    def _generate_examples(self, n: int, seed: int) -> Any:
        rng = np.random.default_rng(1000 + seed)
        for i in range(n):
            h, w = int(rng.integers(5, 17)), int(rng.integers(5, 17))
            n_obj = int(rng.integers(0, 4))
            n_var = int(rng.integers(0, 3))
            boxes = np.sort(rng.uniform(0, 1, size=(n_obj, 2, 2)), axis=1).reshape(n_obj, 4)
            ragged = [
                list(rng.integers(-50, 50, size=int(rng.integers(0, 4)))) for _ in range(n_var + 1)
            ]
            yield (
                f"key{seed}-{i}",
                {
                    "image": _picture(rng, h, w, 3),
                    "image_jpeg": _picture(rng, 24, 20, 3),
                    "image_gray": _picture(rng, 8, 8, 1),
                    "image_gray_jpeg": _picture(rng, 16, 16, 1),
                    "image_rgba": _picture(rng, h, w, 4),
                    "image_u16": rng.integers(0, 65536, size=(6, 5, 1)).astype(np.uint16),
                    "image_f32": rng.normal(0, 100, size=(4, 3, 1)).astype(np.float32),
                    "label": int(rng.integers(0, 3)),
                    "label_n": int(rng.integers(0, 5)),
                    "text": ["hello", "", "naïve café ☕", "multi\nline", "\x00nul"][i % 5]
                    + str(i),
                    "scalar_f": np.float32(rng.normal()),
                    "scalar_b": bool(i % 2),
                    "t_int32": rng.integers(-(2**31), 2**31, size=(2, 3)).astype(np.int32),
                    "t_int8": rng.integers(-128, 128, size=3).astype(np.int8),
                    "t_int16": rng.integers(-(2**15), 2**15, size=3).astype(np.int16),
                    "t_uint8": rng.integers(0, 256, size=3).astype(np.uint8),
                    "t_uint16": rng.integers(0, 2**16, size=3).astype(np.uint16),
                    "t_uint32": rng.integers(0, 2**32, size=3, dtype=np.uint64).astype(np.uint32),
                    "t_uint64": np.array([2**64 - 1 - i, i], dtype=np.uint64),
                    "t_int64": np.int64(rng.integers(-(2**62), 2**62)),
                    "t_float16": rng.normal(size=2).astype(np.float16),
                    "t_float64": np.array([1 / 3 + i, 1e300 if i == 0 else -i], dtype=np.float64),
                    "t_bool": rng.integers(0, 2, size=4).astype(bool),
                    "t_str": np.array(
                        [f"s{j}" for j in range(i % 3)] + (["é"] if i % 4 == 1 else []),
                        dtype=np.str_,
                    ).astype(object),
                    "t_var": rng.normal(size=(n_var, 3)).astype(np.float32),
                    "t_mid": rng.integers(0, 9, size=(2, n_var)).astype(np.int64),
                    "t_zlib": rng.integers(
                        -300, 300, size=(n_var + 1, int(rng.integers(0, 4)))
                    ).astype(np.int16),
                    "t_bytes": np.array([2**64 - 1, i, 2**63], dtype=np.uint64),
                    "t_bytes_f64": rng.normal(size=(2, 2)),
                    "bbox": tfds.features.BBox(
                        *np.sort(rng.uniform(0, 1, size=(2, 2)), axis=0).ravel()
                    ),
                    "objects": {
                        "bbox": boxes.astype(np.float32),
                        "kind": rng.integers(0, 2, size=n_obj),
                        "area": rng.integers(0, 1000, size=n_obj),
                    },
                    "seq_f": rng.normal(size=(n_var, 2)).astype(np.float32),
                    "seq_fixed": rng.integers(-9, 9, size=3).astype(np.int32),
                    "seq_text": [f"w{j}" for j in range(n_var)],
                    "ragged": ragged,
                    "ragged_vec": [
                        rng.normal(size=(int(rng.integers(0, 3)), 2)).astype(np.float32)
                        for _ in range(n_var)
                    ],
                    "nested": {
                        "inner": {"x": np.float32(i / 7), "name": f"n{i}"},
                        "tag": i % 2,
                    },
                    "video": np.stack([_picture(rng, 8, 10, 3) for _ in range(1 + i % 3)]),
                    "video_jpeg": np.stack([_picture(rng, 16, 16, 3) for _ in range(3)]),
                    "audio": rng.integers(-(2**15), 2**15, size=int(rng.integers(0, 20))).astype(
                        np.int64
                    ),
                    "audio_f": rng.uniform(-1, 1, size=(int(rng.integers(1, 10)), 2)).astype(
                        np.float32
                    ),
                },
            )


class TflTabular(tfds.core.GeneratorBasedBuilder):
    """A tabular dataset with two splits over several shards, for slicing and random access."""

    VERSION = tfds.core.Version("1.2.0")
    RELEASE_NOTES: ClassVar[dict[str, str]] = {"1.2.0": "Fixture for tfrecord_lite."}

    def _info(self) -> tfds.core.DatasetInfo:
        F = tfds.features
        return tfds.core.DatasetInfo(
            builder=self,
            description="Tabular rows in several shards.",
            features=F.FeaturesDict(
                {
                    "id": np.int64,
                    "x": F.Tensor(shape=(3,), dtype=np.float32),
                    "city": F.Text(),
                    "label": F.ClassLabel(names=["no", "yes"]),
                }
            ),
            supervised_keys=("x", "label"),
        )

    def _split_generators(self, dl_manager: Any) -> dict[str, Any]:
        return {
            "train": self._generate_examples(103, 0),
            "test": self._generate_examples(37, 1),
            "validation": self._generate_examples(10, 2),
        }

    def _generate_examples(self, n: int, split: int) -> Any:
        rng = np.random.default_rng(split)
        for i in range(n):
            yield (
                i,
                {
                    "id": split * 1000 + i,
                    "x": rng.normal(size=3).astype(np.float32),
                    "city": ["Oslo", "Lima", "Pune", "Kyiv"][i % 4],
                    "label": i % 2,
                },
            )


class TflDigits(tfds.core.GeneratorBasedBuilder):
    """An MNIST-shaped dataset (28x28x1 PNG digits, 10 classes) with a builder config."""

    VERSION = tfds.core.Version("3.0.1")
    BUILDER_CONFIGS: ClassVar[list[Any]] = [
        tfds.core.BuilderConfig(name="small", description="40 digits")
    ]

    def _info(self) -> tfds.core.DatasetInfo:
        F = tfds.features
        return tfds.core.DatasetInfo(
            builder=self,
            description="Digits.",
            features=F.FeaturesDict(
                {"image": F.Image(shape=(28, 28, 1)), "label": F.ClassLabel(num_classes=10)}
            ),
            supervised_keys=("image", "label"),
        )

    def _split_generators(self, dl_manager: Any) -> dict[str, Any]:
        return {"train": self._generate_examples(40, 0), "test": self._generate_examples(10, 1)}

    def _generate_examples(self, n: int, seed: int) -> Any:
        rng = np.random.default_rng(50 + seed)
        for i in range(n):
            img = np.zeros((28, 28, 1), np.uint8)
            y, x = rng.integers(4, 20, size=2)
            img[y : y + 6, x : x + 6, 0] = rng.integers(100, 256)
            yield i, {"image": img, "label": i % 10}


class TflTensors(tfds.core.GeneratorBasedBuilder):
    """Every shape form TFDS stores an encoded Tensor in, for encoding bytes and zlib.

    All dimensions known: the raw bytes alone. Exactly one unknown: the raw bytes
    alone too (the dimension is what the byte count leaves). Several unknown: the
    bytes and a ``shape`` feature beside them.
    """

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES: ClassVar[dict[str, str]] = {"1.0.0": "Fixture for tfrecord_lite."}

    def _info(self) -> tfds.core.DatasetInfo:
        F = tfds.features
        features: dict[str, Any] = {}
        for enc in ("bytes", "zlib"):
            features.update(
                {
                    f"{enc}_static": F.Tensor(shape=(2, 3), dtype=np.int16, encoding=enc),
                    f"{enc}_one": F.Tensor(shape=(None,), dtype=np.float32, encoding=enc),
                    f"{enc}_one_inner": F.Tensor(shape=(None, 3), dtype=np.uint8, encoding=enc),
                    f"{enc}_one_mid": F.Tensor(shape=(2, None, 2), dtype=np.int32, encoding=enc),
                    f"{enc}_several": F.Tensor(shape=(None, None), dtype=np.float64, encoding=enc),
                    f"{enc}_several_known": F.Tensor(
                        shape=(None, 2, None), dtype=np.int64, encoding=enc
                    ),
                }
            )
        return tfds.core.DatasetInfo(
            builder=self,
            description="Encoded tensors of every shape form.",
            features=F.FeaturesDict(features),
        )

    def _split_generators(self, dl_manager: Any) -> dict[str, Any]:
        return {"train": self._generate_examples(6)}

    def _generate_examples(self, n: int) -> Any:
        rng = np.random.default_rng(77)
        for i in range(n):
            k, m = i % 4, int(rng.integers(0, 3))  # unknown sizes, zero included
            example: dict[str, Any] = {}
            for enc in ("bytes", "zlib"):
                example.update(
                    {
                        f"{enc}_static": rng.integers(-999, 999, size=(2, 3)).astype(np.int16),
                        f"{enc}_one": rng.normal(size=k).astype(np.float32),
                        f"{enc}_one_inner": rng.integers(0, 256, size=(k, 3)).astype(np.uint8),
                        f"{enc}_one_mid": rng.integers(-9, 9, size=(2, m, 2)).astype(np.int32),
                        f"{enc}_several": rng.normal(size=(k, m)),
                        f"{enc}_several_known": rng.integers(-(2**40), 2**40, size=(m, 2, k)),
                    }
                )
            yield i, example


BUILDERS = {
    "tfl_features": (TflFeatures, {}, 1),
    "tfl_tabular": (TflTabular, {}, 3),
    "tfl_digits": (TflDigits, {"config": "small"}, 2),
    "tfl_tensors": (TflTensors, {}, 1),
}

# --------------------------------------------------------------------------- reference


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def encode_leaf(value: Any) -> Any:
    """One decoded value as JSON.

    * ``{"bytes": b64}``: a Python ``bytes`` (scalar string features);
    * ``{"scalar": dtype, "data": b64}``: a NumPy scalar (little-endian bytes);
    * ``{"array": dtype, "shape": [...], "data": b64}``: a numeric NumPy array;
    * ``{"strings": [b64...], "shape": [...]}``: an object array of ``bytes``;
    * ``{"ragged": [...], "dtype": dtype}``: a ``tf.RaggedTensor`` as nested lists
      (bytes in it as ``{"bytes": b64}``).
    """
    if isinstance(value, tf.RaggedTensor):
        lists = value.to_list()

        def conv(x: Any) -> Any:
            if isinstance(x, list):
                return [conv(v) for v in x]
            if isinstance(x, bytes):
                return {"bytes": _b64(x)}
            return float(x) if isinstance(x, float) else x

        return {
            "ragged": conv(lists),
            "dtype": value.dtype.as_numpy_dtype().dtype.str
            if value.dtype != tf.string
            else "object",
        }
    if isinstance(value, bytes):
        return {"bytes": _b64(value)}
    if isinstance(value, np.generic):
        return {"scalar": value.dtype.str, "data": _b64(value.tobytes())}
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return {"strings": [_b64(bytes(v)) for v in value.ravel()], "shape": list(value.shape)}
        arr = np.ascontiguousarray(value)
        return {"array": arr.dtype.str, "shape": list(arr.shape), "data": _b64(arr.tobytes())}
    raise TypeError(f"unexpected value {type(value)}: {value!r}")


def encode_tree(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: encode_tree(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return {"tuple": [encode_tree(v) for v in value]}
    return encode_leaf(value)


def write_reference(builder: Any, out: Path, name: str) -> None:
    ref = out / "reference"
    ref.mkdir(parents=True, exist_ok=True)
    for split in builder.info.splits:
        examples = [encode_tree(ex) for ex in tfds.as_numpy(builder.as_dataset(split=split))]
        text = json.dumps(examples, sort_keys=True, separators=(",", ":"))
        (ref / f"{name}-{split}.json").write_text(text + "\n", encoding="ascii")


def build(out: Path, names: list[str]) -> None:
    for name in names:
        cls, kwargs, shards = BUILDERS[name]
        builder = cls(data_dir=str(out), **kwargs)
        builder.download_and_prepare(
            download_config=tfds.download.DownloadConfig(num_shards=shards)
        )
        write_reference(builder, out, name)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory to write (a TFDS data_dir)")
    parser.add_argument("--only", action="append", choices=sorted(BUILDERS), help="just these")
    args = parser.parse_args(argv)
    build(args.out, args.only or sorted(BUILDERS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
