"""Reading records through the tf.data surface, tfrecord_lite beside TensorFlow.

    python -m benchmarks.bench_tfdata [--records 60000] [--repeats 5] [--shards 4]

Pipelines (each reads every record once and counts them):

* ``buffer_size=100``: ``TFRecordDataset(file, buffer_size=100)``, the MNIST
  tutorial's call (a tiny read-ahead must not make reading slower);
* ``default``: ``TFRecordDataset(file)``;
* ``interleave``: ``Dataset.list_files(shards, shuffle=False).interleave(lambda f:
  TFRecordDataset(f), cycle_length=shards, num_parallel_calls=AUTOTUNE)``, the TF2
  guide's parallel read.

The records are MNIST-like Examples (``image_raw``: 784 bytes, ``label``,
``dimension``), ``--records`` of them in one file and again split into
``--shards`` files. With TensorFlow importable (``.venv-interop``), the same
pipelines run in ``tf.data`` (consumed with ``as_numpy_iterator()``, as a NumPy
training loop would); otherwise only tfrecord_lite's are timed. Pipelines
alternate (A B C A B C ...) so that drift on a shared machine hits them alike;
the report gives the median (min-max) seconds per pass and the ratio of
TensorFlow's median to tfrecord_lite's, and says how many cores this process may
use.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any, Callable

import numpy as np

import tfrecord_lite as tfr


def _write(directory: str, records: int, shards: int) -> tuple[str, str]:
    rng = np.random.default_rng(0)
    examples = [
        tfr.encode_example(
            {
                "image_raw": rng.integers(0, 255, 784, dtype=np.uint8).tobytes(),
                "label": i % 10,
                "dimension": 28,
            }
        )
        for i in range(records)
    ]
    single = os.path.join(directory, "mnist.tfrecord")
    with tfr.TFRecordWriter(single) as w:
        w.write_all(examples)
    for k in range(shards):
        with tfr.TFRecordWriter(os.path.join(directory, f"shard-{k:03d}.tfrecord")) as w:
            w.write_all(examples[k::shards])
    return single, os.path.join(directory, "shard-*.tfrecord")


def _pipelines(single: str, pattern: str, shards: int) -> dict[str, Callable[[], Any]]:
    data = tfr.data
    out: dict[str, Callable[[], Any]] = {
        "tfr buffer_size=100": lambda: data.TFRecordDataset(single, buffer_size=100),
        "tfr default": lambda: data.TFRecordDataset(single),
        "tfr interleave": lambda: data.Dataset.list_files(pattern, shuffle=False).interleave(
            lambda f: data.TFRecordDataset(f),
            cycle_length=shards,
            num_parallel_calls=data.AUTOTUNE,
        ),
    }
    try:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return out
    out.update(
        {
            "tf buffer_size=100": lambda: tf.data.TFRecordDataset(
                single, buffer_size=100
            ).as_numpy_iterator(),
            "tf default": lambda: tf.data.TFRecordDataset(single).as_numpy_iterator(),
            "tf interleave": lambda: (
                tf.data.Dataset.list_files(pattern, shuffle=False)
                .interleave(
                    lambda f: tf.data.TFRecordDataset(f),
                    cycle_length=shards,
                    num_parallel_calls=tf.data.AUTOTUNE,
                )
                .as_numpy_iterator()
            ),
        }
    )
    return out


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=60_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--shards", type=int, default=4)
    args = parser.parse_args(argv)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        single, pattern = _write(tmp, args.records, args.shards)
        pipelines = _pipelines(single, pattern, args.shards)
        times: dict[str, list[float]] = {name: [] for name in pipelines}
        for make in pipelines.values():  # warm-up (imports, page cache)
            sum(1 for _ in make())
        for _ in range(args.repeats):
            for name, make in pipelines.items():
                start = time.perf_counter()
                count = sum(1 for _ in make())
                times[name].append(time.perf_counter() - start)
                assert count == args.records, (name, count)
    print(
        f"{args.records} MNIST-like records, {args.shards} shards, {args.repeats} passes each, "
        f"{cores} cores usable (os.cpu_count() = {os.cpu_count()})"
    )
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    for name, ts in times.items():
        line = f"  {name:22s} {medians[name]:7.3f} s  ({min(ts):.3f}-{max(ts):.3f})"
        twin = "tf" + name[3:] if name.startswith("tfr ") else None
        if twin in medians:
            line += f"  TensorFlow / tfrecord_lite = {medians[twin] / medians[name]:.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
