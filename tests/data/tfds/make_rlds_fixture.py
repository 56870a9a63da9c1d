"""Write the small RLDS dataset ``tests/data/tfds/tfl_rlds/`` with the real tensorflow-datasets.

RLDS (the layout of the Open X-Embodiment robotics datasets) stores one episode per
record: episode metadata, and the episode's ``steps`` as a ``tfds.features.Dataset``.
Run from the repository root with the interop environment::

    .venv-interop/bin/python tests/data/tfds/make_rlds_fixture.py tests/data/tfds

It writes ``OUT/tfl_rlds/1.0.0/`` as ``download_and_prepare`` lays it out, and
``OUT/reference/tfl_rlds-<split>.json``: every episode of
``tfds.as_numpy(builder.as_dataset(split))`` with its ``steps`` dataset stacked
(each step feature an array with the step as first axis, a ragged one for a list per
step; an empty episode stacks to arrays of length 0 shaped by the dataset's element
spec), in the format of
``make_tfds_fixtures.encode_leaf``.

The episodes have 5, 1, 3, 0, 8 and 2 steps (train, two shards) and 4 and 1 (test);
each step holds a PNG and a JPEG image, float vectors, a float and booleans (the
RLDS step fields), a text instruction, a list of contact points (a ``Sequence`` in the
steps: 0 to 2 per step) and a nested observation dict; each episode
holds metadata (text, int, bool, a float vector). Every run writes the same episodes
(the reference files are byte-identical; a shard's records may list their features in
another order, and TFDS stores the generation time); ``tests/interop/test_tfds_rlds_interop.py``
regenerates it and compares.
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

# The builders of make_tfds_fixtures.py are not imported here: TFDS registers a builder
# class by name once per process, and make interop loads that script on its own.


def _picture(rng: np.random.Generator, h: int, w: int, c: int) -> np.ndarray:
    """A smooth image with edges and some noise (make_tfds_fixtures.py's pictures)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    planes = []
    for k in range(c):
        f = rng.uniform(0.05, 0.4, size=2)
        plane = 127 + 100 * np.sin(f[0] * x + k) * np.cos(f[1] * y - k)
        plane += (x > w // 2) * 40 - (y > h // 3) * 30
        plane += rng.normal(0, 12, size=(h, w))
        planes.append(plane)
    return np.clip(np.stack(planes, axis=-1), 0, 255).astype(np.uint8)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def encode_leaf(value: Any) -> Any:
    """One decoded value as JSON, in the format tests/integrations/tfds_reference.py reads
    (``bytes``, ``scalar``, ``array``, ``strings`` or ``ragged``, as make_tfds_fixtures.py)."""
    if isinstance(value, tf.RaggedTensor):
        dtype = "object" if value.dtype == tf.string else value.dtype.as_numpy_dtype().dtype.str
        return {"ragged": value.to_list(), "dtype": dtype}
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
    return encode_leaf(value)


TRAIN_LENGTHS = (5, 1, 3, 0, 8, 2)
TEST_LENGTHS = (4, 1)


class TflRlds(tfds.core.GeneratorBasedBuilder):
    """Episodes of robot steps in the RLDS layout: ``steps`` is a ``tfds.features.Dataset``."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES: ClassVar[dict[str, str]] = {"1.0.0": "Fixture for tfrecord_lite."}

    def _info(self) -> tfds.core.DatasetInfo:
        F = tfds.features
        return tfds.core.DatasetInfo(
            builder=self,
            description="RLDS-style episodes (steps as a nested Dataset).",
            features=F.FeaturesDict(
                {
                    "steps": F.Dataset(
                        {
                            "observation": F.FeaturesDict(
                                {
                                    "image": F.Image(shape=(12, 16, 3)),
                                    "wrist_image": F.Image(shape=(8, 8, 3), encoding_format="jpeg"),
                                    "state": F.Tensor(shape=(7,), dtype=np.float32),
                                    "depth": F.Tensor(shape=(2, 3), dtype=np.float64),
                                }
                            ),
                            "action": F.Tensor(shape=(4,), dtype=np.float32),
                            "reward": F.Scalar(dtype=np.float32),
                            "discount": F.Scalar(dtype=np.float32),
                            "is_first": F.Scalar(dtype=np.bool_),
                            "is_last": F.Scalar(dtype=np.bool_),
                            "is_terminal": F.Scalar(dtype=np.bool_),
                            "language_instruction": F.Text(),
                            "gripper": F.ClassLabel(names=["open", "closed"]),
                            "contacts": F.Sequence(F.Tensor(shape=(2,), dtype=np.float32)),
                        }
                    ),
                    "episode_metadata": F.FeaturesDict(
                        {
                            "file_path": F.Text(),
                            "episode_id": F.Scalar(dtype=np.int64),
                            "success": F.Scalar(dtype=np.bool_),
                            "origin": F.Tensor(shape=(3,), dtype=np.float32),
                        }
                    ),
                }
            ),
        )

    def _split_generators(self, dl_manager: Any) -> dict[str, Any]:
        return {
            "train": self._generate_examples(TRAIN_LENGTHS, 0),
            "test": self._generate_examples(TEST_LENGTHS, 1),
        }

    def _generate_examples(self, lengths: tuple[int, ...], seed: int) -> Any:
        rng = np.random.default_rng(4000 + seed)
        instructions = ["pick up the red block", "open the drawer", "wipe the table ☕", ""]
        for e, n in enumerate(lengths):
            text = instructions[(e + seed) % len(instructions)]
            steps = [
                {
                    "observation": {
                        "image": _picture(rng, 12, 16, 3),
                        "wrist_image": _picture(rng, 8, 8, 3),
                        "state": rng.normal(size=7).astype(np.float32),
                        "depth": rng.uniform(0, 5, size=(2, 3)),
                    },
                    "action": rng.uniform(-1, 1, size=4).astype(np.float32),
                    "reward": np.float32(1.0 if t == n - 1 else 0.0),
                    "discount": np.float32(1.0),
                    "is_first": t == 0,
                    "is_last": t == n - 1,
                    "is_terminal": t == n - 1 and e % 2 == 0,
                    "language_instruction": text,
                    "gripper": int(rng.integers(0, 2)),
                    "contacts": rng.normal(size=(int(rng.integers(0, 3)), 2)).astype(np.float32),
                }
                for t in range(n)
            ]
            yield (
                f"episode{seed}-{e}",
                {
                    "steps": steps,
                    "episode_metadata": {
                        "file_path": f"/data/raw/run{seed}/episode_{e}.npz",
                        "episode_id": np.int64(1000 * seed + e),
                        "success": e % 3 != 1,
                        "origin": rng.normal(size=3).astype(np.float32),
                    },
                },
            )


def _empty(spec: Any) -> Any:
    """The stacked value of no steps: arrays of length 0 shaped by the element spec."""
    if isinstance(spec, dict):
        return {k: _empty(v) for k, v in spec.items()}
    shape = [0, *(0 if d is None else d for d in spec.shape.as_list())]
    dtype = object if spec.dtype == tf.string else spec.dtype.as_numpy_dtype
    return np.zeros(shape, dtype=dtype)


def stack_steps(steps: list[Any], spec: Any) -> Any:
    """TFDS's steps (one dict per step) -> one dict of arrays with the step first.

    A feature holding a list per step (a ``Sequence`` in the steps) stacks to a
    ``tf.RaggedTensor`` of one row per step.
    """
    if isinstance(spec, dict):
        return {k: stack_steps([s[k] for s in steps], spec[k]) for k in spec}
    if spec.shape.rank and spec.shape[0] is None:
        inner = [0, *spec.shape.as_list()[1:]]
        dtype = spec.dtype.as_numpy_dtype
        values = np.concatenate(steps) if steps else np.zeros(inner, dtype=dtype)
        return tf.RaggedTensor.from_row_lengths(values, [len(s) for s in steps])
    if not steps:
        return _empty(spec)
    if isinstance(steps[0], bytes):
        out = np.empty(len(steps), dtype=object)
        out[:] = steps
        return out
    return np.stack(steps)


def episodes(builder: Any, split: str) -> list[dict[str, Any]]:
    """Every episode as TFDS yields it, its ``steps`` dataset stacked."""
    out = []
    for episode in builder.as_dataset(split=split):
        spec = episode["steps"].element_spec
        steps = list(tfds.as_numpy(episode["steps"]))
        rest = tfds.as_numpy({k: v for k, v in episode.items() if k != "steps"})
        out.append({**rest, "steps": stack_steps(steps, spec)})
    return out


def write_reference(builder: Any, out: Path) -> None:
    ref = out / "reference"
    ref.mkdir(parents=True, exist_ok=True)
    for split in builder.info.splits:
        examples = [encode_tree(ex) for ex in episodes(builder, split)]
        text = json.dumps(examples, sort_keys=True, separators=(",", ":"))
        (ref / f"tfl_rlds-{split}.json").write_text(text + "\n", encoding="ascii")


def build(out: Path) -> Any:
    builder = TflRlds(data_dir=str(out))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(num_shards=2))
    write_reference(builder, out)
    return builder


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory to write (a TFDS data_dir)")
    args = parser.parse_args(argv)
    build(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
