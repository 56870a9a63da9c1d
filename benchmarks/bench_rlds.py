"""RLDS benchmark: episodes read by tfrecord_lite.tfds against TFDS's own ``as_dataset``.

    .venv-interop/bin/python -m benchmarks.bench_rlds [--episodes 40] [--reps 3] [--no-images]

Runs from ``.venv-interop`` (TensorFlow and tensorflow-datasets; ``make interop`` installs
it). An RLDS dataset is prepared once by the real tensorflow-datasets into
``benchmarks/_data/rlds/`` (git-ignored): ``--episodes`` episodes of 20 to 119 steps, each
step a 128x128 PNG camera frame and a 64x64 JPEG wrist frame, a 7-float state, a 7-float
action, reward, discount, the RLDS booleans and a text instruction (the layout of the
Open X-Embodiment datasets), in 4 shards; with ``--no-images`` the steps hold no frames
(a 32-float state instead: the state-based datasets). It times, on the same directory:

* **episodes**: every episode with its steps decoded: ``tfrecord_lite.tfds``'s
  ``as_dataset("train")`` (steps stacked) against ``tfds.as_numpy`` of TFDS's
  ``as_dataset("train")`` iterating each episode's nested ``steps`` dataset;
* **steps**: one element per step: ``as_steps("train")`` against TFDS's
  ``as_dataset("train").flat_map(lambda e: e["steps"])`` through ``tfds.as_numpy``.

Target: episodes at least 2x TFDS's rate. Each timing is the median of ``--reps`` runs
after one warm-up run, as wall-clock seconds and as the process's CPU seconds (all its
threads), which a machine shared with other work disturbs less. Both read with their
defaults: TFDS decodes on its tf.data thread pool, tfrecord_lite decodes an episode's
frames on its frame pool (``tfrecord_lite.tfds._frames``), PNG image data inflated by
ISA-L and handed to Pillow stored (``tfrecord_lite.tfds._image_features``). The
machine's core count and load average are printed.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from benchmarks.timing import timed

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "_data" / "rlds"


def prepare(episodes: int, images: bool = True) -> Path:
    """The dataset directory, prepared by tensorflow-datasets if it is not there yet."""
    import tensorflow_datasets as tfds

    F = tfds.features

    frames: dict[str, Any] = (
        {
            "image": F.Image(shape=(128, 128, 3)),
            "wrist_image": F.Image(shape=(64, 64, 3), encoding_format="jpeg"),
            "state": F.Tensor(shape=(7,), dtype=np.float32),
        }
        if images
        else {"state": F.Tensor(shape=(32,), dtype=np.float32)}
    )

    class BenchRlds(tfds.core.GeneratorBasedBuilder):
        """RLDS-style episodes for the benchmark."""

        name = "bench_rlds" if images else "bench_rlds_state"

        VERSION = tfds.core.Version(f"1.0.{episodes}")
        RELEASE_NOTES: ClassVar[dict[str, str]] = {VERSION.__str__(): "Benchmark data."}

        def _info(self) -> Any:
            return tfds.core.DatasetInfo(
                builder=self,
                features=F.FeaturesDict(
                    {
                        "steps": F.Dataset(
                            {
                                "observation": F.FeaturesDict(frames),
                                "action": F.Tensor(shape=(7,), dtype=np.float32),
                                "reward": F.Scalar(dtype=np.float32),
                                "discount": F.Scalar(dtype=np.float32),
                                "is_first": F.Scalar(dtype=np.bool_),
                                "is_last": F.Scalar(dtype=np.bool_),
                                "is_terminal": F.Scalar(dtype=np.bool_),
                                "language_instruction": F.Text(),
                            }
                        ),
                        "episode_metadata": F.FeaturesDict({"file_path": F.Text()}),
                    }
                ),
            )

        def _split_generators(self, dl_manager: Any) -> Any:
            return {"train": self._generate_examples()}

        def _generate_examples(self) -> Any:
            rng = np.random.default_rng(7)
            y, x = np.mgrid[0:128, 0:128]
            for e in range(episodes):
                n = int(rng.integers(20, 120))
                steps = []
                for t in range(n):
                    base = (np.sin(x / (9 + t % 5)) * 60 + np.cos(y / 7) * 60 + 128).astype(
                        np.uint8
                    )
                    noise = rng.integers(0, 24, (128, 128, 3), dtype=np.uint8)
                    image = np.stack([base, base[::-1], base.T], -1) + noise
                    steps.append(
                        {
                            "observation": (
                                {
                                    "image": image,
                                    "wrist_image": image[::2, ::2].copy(),
                                    "state": rng.normal(size=7).astype(np.float32),
                                }
                                if images
                                else {"state": rng.normal(size=32).astype(np.float32)}
                            ),
                            "action": rng.uniform(-1, 1, 7).astype(np.float32),
                            "reward": np.float32(t == n - 1),
                            "discount": np.float32(1),
                            "is_first": t == 0,
                            "is_last": t == n - 1,
                            "is_terminal": t == n - 1,
                            "language_instruction": "put the block in the bowl",
                        }
                    )
                yield e, {"steps": steps, "episode_metadata": {"file_path": f"ep{e}"}}

    builder = BenchRlds(data_dir=str(DATA))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(num_shards=4))
    return Path(builder.data_dir)


def _load() -> str:
    """The machine's load average (1 / 5 / 15 min), for the record."""
    if not hasattr(os, "getloadavg"):
        return ""
    one, five, fifteen = os.getloadavg()
    return f", load {one:.1f} / {five:.1f} / {fifteen:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-images", action="store_true", help="steps without camera frames")
    args = ap.parse_args()

    import tensorflow as tf
    import tensorflow_datasets as tfds_real

    import tfrecord_lite.tfds as tfds

    tf.config.set_visible_devices([], "GPU")
    path = prepare(args.episodes, images=not args.no_images)
    ours = tfds.builder_from_directory(path)
    theirs = tfds_real.builder_from_directory(str(path))
    steps = sum(len(e["steps"]["is_first"]) for e in ours.as_dataset("train"))

    def ours_episodes() -> int:
        return sum(len(e["steps"]["is_first"]) for e in ours.as_dataset("train"))

    def tfds_episodes() -> int:
        n = 0
        for episode in theirs.as_dataset(split="train"):
            n += sum(1 for _ in tfds_real.as_numpy(episode["steps"]))
        return n

    def ours_steps() -> int:
        return sum(1 for _ in ours.as_steps("train"))

    def tfds_steps() -> int:
        flat = theirs.as_dataset(split="train").flat_map(lambda e: e["steps"])
        return sum(1 for _ in tfds_real.as_numpy(flat))

    for fn in (ours_episodes, tfds_episodes, ours_steps, tfds_steps):
        assert fn() == steps, fn.__name__
    print(
        f"{args.episodes} episodes{' (no images)' if args.no_images else ''}, {steps:,} steps ({sum(f.stat().st_size for f in path.iterdir()) / 2**20:.1f} MiB), "
        f"{os.cpu_count()} cores, tensorflow {tf.__version__}, tensorflow-datasets "
        f"{tfds_real.__version__}, median of {args.reps}{_load()}"
    )
    print()
    print(
        "| read | tfrecord_lite s (CPU s) | TFDS s (CPU s) | steps/s ours | steps/s TFDS "
        "| ratio (wall, CPU) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, a, b in (
        ("episodes (as_dataset)", ours_episodes, tfds_episodes),
        ("steps (as_steps / flat_map)", ours_steps, tfds_steps),
    ):
        (ta, ca), (tb, cb) = timed(a, args.reps), timed(b, args.reps)
        print(
            f"| {name} | {ta:.2f} ({ca:.2f}) | {tb:.2f} ({cb:.2f}) | {steps / ta:,.0f} | "
            f"{steps / tb:,.0f} | {tb / ta:.2f}x, {cb / ca:.2f}x |"
        )


if __name__ == "__main__":
    main()
