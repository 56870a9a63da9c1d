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

Each timing is the median of ``--reps`` runs after one warm-up run, in one process, as
wall-clock seconds and as the process's CPU seconds (all its threads: the GZIP inflater's
and Polars' too), which a machine shared with other work disturbs less.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tfrecord_lite as tfr
from benchmarks import data as bdata
from benchmarks.tasks import lite_features
from benchmarks.timing import timed

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
    print(f"polars {pl.__version__}, {args.records:,} taxi-like records, median of {args.reps}")
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
        base: tuple[float, float] = (0.0, 0.0)
        for name, fn in queries.items():
            wall, cpu = timed(fn, args.reps)
            base = base if base[0] else (wall, cpu)
            rate = (1000 if name.startswith("head") else n) / wall
            print(
                f"| {kind} | `{name}` | {wall:.3f} | {cpu:.3f} | {rate:,.0f} | "
                f"{base[0] / wall:.2f}x, {base[1] / cpu:.2f}x |"
            )


if __name__ == "__main__":
    main()
