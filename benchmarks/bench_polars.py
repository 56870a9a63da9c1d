"""Polars benchmark: what projection pushdown saves in ``tfrecord_lite.polars.scan_tfrecord``.

    python -m benchmarks.bench_polars [--records 200000] [--reps 5]

Runs from ``.venv`` (Polars and pyarrow: the ``polars`` extra). On the taxi-like records
(``benchmarks/data.taxi_records``: 18 int64 / float / bytes features, VarLen ones with
missing values, ~500 B a record), written once as a plain file and as a GZIP file into
``benchmarks/_data/polars/`` (git-ignored), it times, for each file:

* **all columns**: ``scan_tfrecord(path, spec).collect()``;
* **one column**: ``scan_tfrecord(path, spec).select("fare").collect()``: only ``fare``
  is parsed and converted (target: at least 1.5x the all-columns rate);
* **filter + one column**: ``.filter(pl.col("trip_miles") > 5).select("fare")``
  (two features parsed, the filter applied to each batch);
* **head**: ``.head(1000).collect()`` (reading stops after the first batch).

Each timing is the median of ``--reps`` rounds after one warm-up run, in one process
(in each round every query runs once, in turn; the ratios are the median of the
rounds' ratios), as wall-clock seconds and as the process's CPU seconds (all its
threads: the GZIP inflater's and Polars' too), which a machine shared with other work
disturbs less.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tfrecord_lite as tfr
from benchmarks import data as bdata
from benchmarks.tasks import lite_features
from benchmarks.timing import round_ratios, timed_rounds

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "_data" / "polars"
TAXI_FEATURES = lite_features(tfr, "taxi")


def files(n: int) -> dict[str, Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    out = {"plain": DATA / f"taxi-{n}.tfrecord", "gzip": DATA / f"taxi-{n}.tfrecord.gz"}
    if all(p.exists() for p in out.values()):
        return out
    records, _ = bdata.taxi_records(n)
    for kind, path in out.items():
        tmp = path.with_name(path.name + ".tmp")
        with tfr.TFRecordWriter(str(tmp), "GZIP" if kind == "gzip" else None) as w:
            for r in records:
                w.write(r)
        tmp.replace(path)
    return out


def main() -> None:
    import polars as pl

    from tfrecord_lite import polars as tfpl

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    at = f", load {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}" if load else ""
    print(
        f"polars {pl.__version__}, {args.records:,} taxi-like records, median of {args.reps} "
        f"rounds, {os.cpu_count()} cores{at}"
    )
    print()
    print("| file | query | seconds | CPU seconds | records/s | vs all columns (wall, CPU) |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for kind, path in files(args.records).items():
        lf = tfpl.scan_tfrecord(path, TAXI_FEATURES)
        n = lf.select(pl.len()).collect().item()
        assert n == args.records, n
        queries: dict[str, Callable[[], Any]] = {
            "all columns": lf.collect,
            'select("fare")': lf.select("fare").collect,
            'filter(trip_miles > 5).select("fare")': (
                lf.filter(pl.col("trip_miles") > 5).select("fare").collect
            ),
            "head(1000)": lf.head(1000).collect,
        }
        rounds = timed_rounds(queries, args.reps)
        base_walls, base_cpus = rounds["all columns"]
        for name, (walls, cpus) in rounds.items():
            wall, cpu = statistics.median(walls), statistics.median(cpus)
            rate = (1000 if name.startswith("head") else n) / wall
            print(
                f"| {kind} | `{name}` | {wall:.3f} | {cpu:.3f} | {rate:,.0f} | "
                f"{round_ratios(base_walls, walls):.2f}x, {round_ratios(base_cpus, cpus):.2f}x |"
            )
    end = os.getloadavg() if hasattr(os, "getloadavg") else None
    if end:
        print(f"\nload at the end {end[0]:.1f} / {end[1]:.1f} / {end[2]:.1f}")


if __name__ == "__main__":
    main()
