"""tfrecord_lite.tfds beside TensorFlow Datasets on the same prepared directories, in one run.

    python -m benchmarks.bench_tfds [--rounds 3] [--images 4000] [--rows 50000] [--data-dir DIR]

Needs tensorflow-datasets (``.venv-bench``, or ``.venv-interop``). Prepares two
datasets with TFDS itself (once; kept in ``--data-dir``, default ``benchmarks/_data/tfds``):

* ``bench_images``: 96x96x3 JPEG images + a 10-class label (an ImageNet-style dataset
  at small scale), 8 shards;
* ``bench_tabular``: 12 scalar features (int64, float32, Text, ClassLabel), 8 shards.

Measured, alternating the two libraries each round (medians of ``--rounds``):

* a full pass of ``as_dataset("train")``, each library in a fresh process of its own: ``tfds.as_numpy(tfds.builder_from_directory(d)
  .as_dataset("train"))`` against ``tfrecord_lite.tfds.builder_from_directory(d)
  .as_dataset("train")`` (the same examples in the same order, as NumPy);
* ``as_data_source("train")[i]`` in a random order (tfrecord_lite only: TFDS's data
  source needs ArrayRecord files), and for images the share of that time spent
  decoding the JPEGs (the same reads with ``decoders={"image": SkipDecoding()}``).

The machine's core count is printed: TensorFlow decodes in parallel on all cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


def _prepare(data_dir: Path, images: int, rows: int) -> dict[str, Path]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow_datasets as tfds

    F = tfds.features

    class BenchImages(tfds.core.GeneratorBasedBuilder):
        VERSION = tfds.core.Version("1.0.0")

        def _info(self) -> Any:
            return tfds.core.DatasetInfo(
                builder=self,
                features=F.FeaturesDict(
                    {
                        "image": F.Image(shape=(96, 96, 3), encoding_format="jpeg"),
                        "label": F.ClassLabel(num_classes=10),
                    }
                ),
                supervised_keys=("image", "label"),
            )

        def _split_generators(self, dl_manager: Any) -> Any:
            return {"train": self._generate_examples()}

        def _generate_examples(self) -> Any:
            rng = np.random.default_rng(0)
            y, x = np.mgrid[0:96, 0:96]
            for i in range(images):
                f = rng.uniform(0.02, 0.3, size=3)
                img = 127 + 90 * np.sin(f[0] * x + f[1] * y)[..., None] * np.cos(
                    f[2] * x[..., None] + np.arange(3)
                )
                img = img + rng.normal(0, 8, size=(96, 96, 3))
                yield i, {"image": np.clip(img, 0, 255).astype(np.uint8), "label": i % 10}

    class BenchTabular(tfds.core.GeneratorBasedBuilder):
        VERSION = tfds.core.Version("1.0.0")

        def _info(self) -> Any:
            feats: dict[str, Any] = {f"i{k}": np.int64 for k in range(4)}
            feats.update({f"f{k}": np.float32 for k in range(5)})
            feats["name"] = F.Text()
            feats["label"] = F.ClassLabel(names=["no", "yes"])
            feats["vec"] = F.Tensor(shape=(4,), dtype=np.float32)
            return tfds.core.DatasetInfo(builder=self, features=F.FeaturesDict(feats))

        def _split_generators(self, dl_manager: Any) -> Any:
            return {"train": self._generate_examples()}

        def _generate_examples(self) -> Any:
            rng = np.random.default_rng(1)
            for i in range(rows):
                ex: dict[str, Any] = {f"i{k}": int(rng.integers(0, 1 << 40)) for k in range(4)}
                ex.update({f"f{k}": np.float32(rng.normal()) for k in range(5)})
                ex["name"] = f"row {i}"
                ex["label"] = i % 2
                ex["vec"] = rng.normal(size=4).astype(np.float32)
                yield i, ex

    out = {}
    for name, cls in [("bench_images", BenchImages), ("bench_tabular", BenchTabular)]:
        builder = cls(data_dir=str(data_dir))
        builder.download_and_prepare(
            download_config=tfds.download.DownloadConfig(num_shards=8),
        )
        out[name] = Path(builder.data_dir)
    return out


def _child(kind: str, path: str, extra: str) -> None:
    """One measurement in a fresh process (only the library measured is imported).

    Importing TensorFlow into a process slows NumPy-heavy Python code in it (its thread
    pools and allocator), so each side is timed in a process of its own, as users run it.
    """
    if kind == "tfds":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
        import tensorflow_datasets as tfds

        tf.config.set_visible_devices([], "GPU")
        start = time.perf_counter()
        ds = tfds.as_numpy(tfds.builder_from_directory(path).as_dataset(split="train"))
        n = sum(1 for _ in ds)
    else:
        import tfrecord_lite.tfds as tfl

        if kind == "ours":
            start = time.perf_counter()
            n = sum(1 for _ in tfl.builder_from_directory(path).as_dataset("train"))
        else:  # random access: extra = "count,skip_image,index_dir"
            count, skip, index_dir = extra.split(",", 2)
            decoders = {"image": tfl.SkipDecoding()} if skip == "1" else None
            src = tfl.builder_from_directory(path).as_data_source(
                "train", decoders=decoders, index_dir=index_dir
            )
            src[0]  # open the shards and their indexes before timing
            order = np.random.default_rng(0).permutation(len(src))[: int(count)]
            start = time.perf_counter()
            cpu = time.process_time()
            for i in order:
                src[int(i)]
            n = len(order)
            print(
                json.dumps(
                    {
                        "n": n,
                        "seconds": time.perf_counter() - start,
                        "cpu": time.process_time() - cpu,
                    }
                )
            )
            return
    print(json.dumps({"n": n, "seconds": time.perf_counter() - start}))


def _run(kind: str, path: Path, extra: str = "") -> tuple[float, int, float]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_tfds", "--child", kind, str(path), extra],
        check=True,
        capture_output=True,
        text=True,
        cwd=HERE.parent,
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return float(result["seconds"]), int(result["n"]), float(result.get("cpu", "nan"))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        _child(argv[1], argv[2], argv[3] if len(argv) > 3 else "")
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--images", type=int, default=4000)
    parser.add_argument("--rows", type=int, default=50000)
    parser.add_argument("--random", type=int, default=20000, help="random reads per round")
    parser.add_argument("--data-dir", type=Path, default=HERE / "_data" / "tfds")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    import tensorflow as tf
    import tensorflow_datasets as tfds

    import tfrecord_lite
    from tfrecord_lite._decoding._jpeg import jpeg_backend

    dirs = _prepare(args.data_dir, args.images, args.rows)
    cores = os.cpu_count() or 1
    jpeg = "simplejpeg (exact)" if jpeg_backend() == "simplejpeg" else "Pillow"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"tensorflow {tf.__version__}, tensorflow-datasets {tfds.__version__}, "
        f"tfrecord_lite {tfrecord_lite.__version__}; {cores} cores (load average {load:.1f}); "
        f"JPEG decoder: {jpeg}; medians of {args.rounds} rounds, each in a fresh process"
    )
    results: dict[str, Any] = {
        "cores": cores,
        "rounds": args.rounds,
        "jpeg_decoder": jpeg,
        "load_average": load,
    }
    rows = []
    for name, path in dirs.items():
        times: dict[str, list[float]] = {"tfds": [], "ours": []}
        count = 0
        for _ in range(args.rounds):  # alternate the two
            t, n1, _ = _run("tfds", path)
            times["tfds"].append(t)
            t, n2, _ = _run("ours", path)
            times["ours"].append(t)
            assert n1 == n2, (n1, n2)
            count = n1
        med = {k: statistics.median(v) for k, v in times.items()}
        ratio = med["tfds"] / med["ours"]
        results[name] = {
            "examples": count,
            "tfds_s": med["tfds"],
            "ours_s": med["ours"],
            "tfds_per_s": count / med["tfds"],
            "ours_per_s": count / med["ours"],
            "speedup": ratio,
        }
        rows.append(
            f"| as_dataset, {name} ({count:,} ex.) | {count / med['tfds']:,.0f} ex/s | "
            f"{count / med['ours']:,.0f} ex/s | {ratio:.2f}x |"
        )
    index_dir = str(args.data_dir / "_index")
    for name, path in dirs.items():
        full, skipped, per_cpu = [], [], []
        for _ in range(args.rounds):
            t, n, cpu = _run("random", path, f"{args.random},0,{index_dir}")
            full.append(n / t)
            per_cpu.append(n / cpu)
            if name == "bench_images":
                t, n, _ = _run("random", path, f"{args.random},1,{index_dir}")
                skipped.append(n / t)
        rate = statistics.median(full)
        cpu_rate = statistics.median(per_cpu)
        results[f"{name}_random"] = {"per_s": rate, "per_cpu_s": cpu_rate}
        extra = f"; {cpu_rate:,.0f} per CPU-second"
        if skipped:
            raw = statistics.median(skipped)
            share = 1 - rate / raw
            results[f"{name}_random"].update({"without_decode_per_s": raw, "decode_share": share})
            extra += (
                f" ({raw:,.0f} ex/s without decoding: JPEG decoding is {share:.0%} of the time)"
            )
        rows.append(f"| as_data_source[i], random order, {name} | - | {rate:,.0f} ex/s{extra} | |")
    print("\n| | tfds | tfrecord_lite | speed-up |\n|---|---|---|---|")
    print("\n".join(rows))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
