"""Scale-out benchmark: tfrecord_lite.ray / .dask / .arrow beside Ray Data's own TFRecord I/O.

    python -m benchmarks.bench_scaleout [--reps 3] [--cpus N] [--out benchmarks/SCALEOUT.md]

Runs from ``.venv-bench`` (TensorFlow, Ray and Dask; ``make bench-peers`` installs it).
A part whose packages are missing is reported as skipped, never guessed. In one run,
on one Ray instance and the same files:

* **read**: ``tfrecord_lite.ray.read_tfrecords(...).materialize()`` against
  ``ray.data.read_tfrecords(...).materialize()`` (which needs TensorFlow);
* **write**: ``tfrecord_lite.ray.write_tfrecords(ds, dir)`` against
  ``ds.write_tfrecords(dir)`` on the same materialized dataset;
* **dask**: reading 16 shards on a ``LocalCluster`` of 1 and of 2 worker processes
  (one thread each), reduced on the workers (``map_partitions(len)``);
* **to_arrow**: ``tfrecord_lite.arrow.to_arrow`` of a parsed batch against the
  ``parse_example`` that produced it (in this process).

Data sets (generated once into ``benchmarks/_data/scaleout/``, git-ignored):
``mnist`` (8 shards of 7,500 MNIST-like records: 784 raw pixel bytes, a label, a shape),
``taxi`` (8 shards of 2,500 records: the real TFX Chicago-taxi Examples from
``../shared/data/tfx-taxi``; 17 features, VarLen ones with missing values; Ray's own
reader needs ~4 ms per record of these, so the set is kept small),
``mnist16`` (16 shards of 12,500, for Dask: enough work per task that scheduling does
not dominate). Implementations alternate within each
repetition (ours, theirs, ours, theirs, ...); the table gives medians and the ratio.
The machine's core count is printed: the Dask speed-up depends on it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import tfrecord_lite as tfr

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "_data" / "scaleout"
TAXI_DIR = ROOT.parent.parent / "shared" / "data" / "tfx-taxi"

MNIST_FEATURES = {
    "image_raw": tfr.FixedLenFeature([], tfr.string),
    "label": tfr.FixedLenFeature([], tfr.int64),
    "dim": tfr.FixedLenFeature([3], tfr.int64),
}


def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


# --------------------------------------------------------------------------- data


def _mnist_shards(name: str, shards: int, per: int) -> list[str]:
    out = DATA / name
    paths = [str(out / tfr.shard_name("mnist", i, shards)) for i in range(shards)]
    if all(os.path.exists(p) for p in paths):
        return paths
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i, p in enumerate(paths):
        tfr.write_examples(
            p + ".tmp",
            {
                "image_raw": tfr.bytes_rows(rng.integers(0, 256, (per, 784), dtype=np.uint8)),
                "label": rng.integers(0, 10, per),
                "dim": np.tile(np.array([28, 28, 1]), (per, 1)),
            },
        )
        os.replace(p + ".tmp", p)
        del i
    return paths


def taxi_records() -> list[bytes]:
    if not TAXI_DIR.is_dir():
        raise FileNotFoundError(f"the taxi sample is missing: {TAXI_DIR}")
    return list(tfr.tf_record_iterator(str(TAXI_DIR)))


def _taxi_shards(shards: int = 8, per: int = 2_500) -> list[str]:
    out = DATA / f"taxi{shards * per}"
    paths = [str(out / tfr.shard_name("taxi", i, shards)) for i in range(shards)]
    if all(os.path.exists(p) for p in paths):
        return paths
    out.mkdir(parents=True, exist_ok=True)
    records = taxi_records()
    for i, p in enumerate(paths):
        with tfr.TFRecordWriter(p, atomic=True) as w:
            w.write_all(records[(j + i) % len(records)] for j in range(per))
    return paths


def taxi_features() -> dict[str, Any]:
    # The whole sample: some keys are missing from some records, so anything not in
    # every record is a VarLenFeature (a FixedLenFeature would need a default).
    return dict(tfr.infer_schema(str(TAXI_DIR), None))


# --------------------------------------------------------------------------- timing


def alternate(
    fns: dict[str, Callable[[], Any]], reps: int, first: dict[str, Any] | None = None
) -> dict[str, list[float]]:
    """Time every function ``reps`` times, interleaved, after one untimed warm-up run each
    (whose results go into ``first``)."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for k, fn in fns.items():
        result = fn()
        if first is not None:
            first[k] = result
    for _ in range(reps):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    return times


def med(xs: list[float]) -> float:
    return statistics.median(xs)


# --------------------------------------------------------------------------- parts


def bench_ray(reps: int, cpus: int, rows: list[list[str]]) -> None:
    import ray

    from tfrecord_lite import ray as tfray

    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    has_tf = have("tensorflow")
    try:
        for name, paths, features in (
            ("mnist", _mnist_shards("mnist", 8, 7_500), MNIST_FEATURES),
            ("taxi", _taxi_shards(), taxi_features()),
        ):
            n_records = sum(1 for p in paths for _ in tfr.tf_record_iterator(p))

            def ours(paths: list[str] = paths, features: Any = features) -> int:
                ds = tfray.read_tfrecords(paths, features=features).materialize()
                return int(ds.count())

            fns: dict[str, Callable[[], Any]] = {"tfrecord_lite": ours}
            if has_tf:

                def theirs(paths: list[str] = paths) -> int:
                    return int(ray.data.read_tfrecords(paths).materialize().count())

                fns["ray.data (TF)"] = theirs
            counts: dict[str, Any] = {}
            t = alternate(fns, reps, counts)
            assert set(counts.values()) == {n_records}, counts  # both read everything
            _row(rows, f"Ray read, {name} ({len(paths)} shards, {n_records:,} records)", t,
                 n_records)  # fmt: skip

            ds = tfray.read_tfrecords(paths, features=features).materialize()
            work = Path(tempfile.mkdtemp(prefix="scaleout-"))
            try:
                counter = iter(range(10**6))

                def write_ours(ds: Any = ds, work: Path = work, counter: Any = counter) -> None:
                    tfray.write_tfrecords(ds, str(work / f"ours-{next(counter)}"))

                wfns: dict[str, Callable[[], Any]] = {"tfrecord_lite": write_ours}
                if has_tf and have("crc32c"):

                    def write_theirs(
                        ds: Any = ds, work: Path = work, counter: Any = counter
                    ) -> None:
                        ds.write_tfrecords(str(work / f"theirs-{next(counter)}"))

                    wfns["ray.data (TF)"] = write_theirs
                t = alternate(wfns, reps)
                # what we wrote reads back, every record once
                last = sorted((work).glob("ours-*"))[-1]
                assert sum(1 for _ in tfr.tf_record_iterator(str(last))) == n_records
                _row(rows, f"Ray write, {name} ({n_records:,} records)", t, n_records)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    finally:
        ray.shutdown()


def _row(rows: list[list[str]], what: str, t: dict[str, list[float]], n: int) -> None:
    ours = med(t["tfrecord_lite"])
    cells = [what, f"{ours:.2f} s ({n / ours / 1e3:,.0f} krec/s)"]
    other = [k for k in t if k != "tfrecord_lite"]
    if other:
        theirs = med(t[other[0]])
        cells += [f"{theirs:.2f} s ({n / theirs / 1e3:,.0f} krec/s)", f"{theirs / ours:.1f}x"]
    else:
        cells += ["skipped (needs TensorFlow" + (" and crc32c" if "write" in what else "") + ")",
                  "-"]  # fmt: skip
    rows.append(cells)
    print(" | ".join(cells), flush=True)


def bench_dask(reps: int, rows: list[list[str]]) -> None:
    from dask.distributed import Client, LocalCluster

    from tfrecord_lite import dask as tfdask

    paths = _mnist_shards("mnist16x12500", 16, 12_500)
    n_records = 16 * 12_500
    times: dict[str, list[float]] = {}
    for workers in (1, 2):
        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster),
        ):

            def run() -> int:
                df = tfdask.read_tfrecords(paths, MNIST_FEATURES)
                return int(df.map_partitions(len).compute().sum())

            assert run() == n_records
            times[f"{workers}"] = alternate({"x": run}, reps)["x"]
    one, two = med(times["1"]), med(times["2"])
    cells = [
        f"Dask read, 16 shards ({n_records:,} records), {os.cpu_count()} cores, load "
        f"{os.getloadavg()[0]:.1f}",
        f"2 workers: {two:.2f} s",
        f"1 worker: {one:.2f} s",
        f"{one / two:.2f}x",
    ]
    rows.append(cells)
    print(" | ".join(cells), flush=True)


def bench_to_arrow(reps: int, rows: list[list[str]]) -> None:
    from tfrecord_lite import arrow as tfa

    for name, records, features in (
        ("mnist", list(tfr.tf_record_iterator(_mnist_shards("mnist", 8, 7_500)[0])), MNIST_FEATURES),
        ("taxi", taxi_records()[:8192], taxi_features()),
    ):  # fmt: skip
        batch = records[:8192]
        parsed = tfr.parse_example(batch, features)
        t = alternate(
            {
                "parse": lambda b=batch, f=features: tfr.parse_example(b, f),
                "to_arrow": lambda p=parsed, f=features: tfa.to_arrow(p, f),
            },
            max(reps, 20),
        )
        p, a = med(t["parse"]), med(t["to_arrow"])
        cells = [
            f"to_arrow vs parse_example, {name} ({len(batch):,} records)",
            f"to_arrow: {a * 1e3:.2f} ms",
            f"parse: {p * 1e3:.2f} ms",
            f"{a / p:.0%} of the parse",
        ]
        rows.append(cells)
        print(" | ".join(cells), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions per implementation")
    ap.add_argument("--cpus", type=int, default=os.cpu_count() or 1, help="Ray's num_cpus")
    ap.add_argument("--out", type=Path, help="also write the table (Markdown) here")
    ap.add_argument("--parts", nargs="+", default=["to_arrow", "ray", "dask"],
                    choices=["to_arrow", "ray", "dask"])  # fmt: skip
    args = ap.parse_args(argv)
    print(f"{os.cpu_count()} cores; Python {sys.version.split()[0]}; tfrecord_lite "
          f"{tfr.__version__}", flush=True)  # fmt: skip
    rows: list[list[str]] = []
    skipped: list[str] = []
    if "to_arrow" in args.parts:
        if have("pyarrow"):
            bench_to_arrow(args.reps, rows)
        else:
            skipped.append("to_arrow (needs pyarrow)")
    if "ray" in args.parts:
        if have("ray"):
            bench_ray(args.reps, args.cpus, rows)
        else:
            skipped.append("Ray (needs ray[data])")
    if "dask" in args.parts:
        if have("dask") and have("distributed"):
            bench_dask(args.reps, rows)
        else:
            skipped.append("Dask (needs dask[dataframe] and distributed)")
    versions = []
    for mod in ("ray", "dask", "tensorflow", "pyarrow"):
        if have(mod):
            versions.append(f"{mod} {__import__(mod).__version__}")
    head = ["what", "tfrecord_lite", "peer / baseline", "ratio"]
    lines = [
        f"Scale-out benchmark: {os.cpu_count()} cores, medians of {args.reps} runs "
        f"(alternating); {', '.join(versions)}",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(r) + " |" for r in rows),
    ]
    if skipped:
        lines += ["", "Skipped: " + "; ".join(skipped)]
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
