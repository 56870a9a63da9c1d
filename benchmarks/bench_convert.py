"""``tfrecord-lite convert`` benchmark: TFRecord -> Parquet against the read + parse rate.

    python -m benchmarks.bench_convert [--records 60000] [--reps 5] [--profile]

Runs from ``.venv`` (pyarrow: the ``arrow`` extra). The taxi-like records
(``benchmarks/data.taxi_records``: 18 int64 / float / bytes features, the VarLen ones
with missing values, ~500 B a record) are written once as four GZIP shards, as the
taxi-like set of ``benchmarks/run.py`` is, into ``benchmarks/_data/convert/``
(git-ignored). On them it times, in one process:

* **read + parse (spec)**: ``TFRecordDataset(shards).batch(1024).map(parse_example(b, TAXI))``
  with TFX's kind of spec, the library's read + parse rate;
* **read + parse (inferred)**: the same with the schema ``infer_schema`` gives, the
  spec ``convert`` parses with;
* **read_table**: ``tfrecord_lite.arrow.read_table(shards)`` (schema inferred, to Arrow);
* **convert -> Parquet**: ``tfrecord-lite convert -q SHARDS out.parquet`` in process
  (schema inferred and checked, parsed, converted to Arrow, written as Parquet);
* **convert --schema -> Parquet**: the same with TFX's kind of spec given as JSON
  (``--schema``: nothing inferred).

Each timing is the median of ``--reps`` rounds after one warm-up, as wall-clock and
as the process's CPU seconds (all threads), which other work on a shared machine
disturbs less; in each round every task runs once, in turn, and the ratios are the
median of the rounds' ratios (a change in the machine's load reaches every task). The target: convert >= 0.8x the read + parse rate. ``--profile`` prints
where one convert run spends its time (cProfile, top functions by own time).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tfrecord_lite as tfr
from benchmarks import data as bdata
from benchmarks.tasks import lite_features
from benchmarks.timing import round_ratios, timed_rounds
from tfrecord_lite._cli import main as cli

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "_data" / "convert"
TAXI = lite_features(tfr, "taxi")
BATCH = 1024


def shards(n: int) -> list[str]:
    """Four GZIP shards of ``n`` taxi-like records (written once)."""
    DATA.mkdir(parents=True, exist_ok=True)
    k = bdata.TAXI_SHARDS
    paths = [DATA / f"taxi-{n}.tfrecord-{i:05d}-of-{k:05d}.gz" for i in range(k)]
    if not all(p.exists() for p in paths):
        records, _ = bdata.taxi_records(n)
        for i, path in enumerate(paths):
            tmp = path.with_name(path.name + ".tmp")
            with tfr.TFRecordWriter(str(tmp), "GZIP") as w:
                w.write_all(records[i::k])
            tmp.replace(path)
    return [str(p) for p in paths]


def read_parse(paths: list[str], spec: Any) -> Callable[[], int]:
    def run() -> int:
        ds = tfr.TFRecordDataset(paths, compression="GZIP").batch(BATCH)
        return sum(
            len(next(iter(p.values()))) for p in ds.map(lambda b: tfr.parse_example(b, spec))
        )

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=60_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="profile one convert run")
    args = ap.parse_args()
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tfrecord_lite import arrow

    paths = shards(args.records)
    out = DATA / "out.parquet"
    n = args.records
    inferred = tfr.infer_schema(paths)

    def convert() -> None:
        assert cli(["-q", "convert", *paths, str(out)]) == 0

    spec = DATA / "taxi-spec.json"
    short = {"bytes": "string"}
    spec.write_text(
        json.dumps(
            {
                name: short.get(kind, kind) + ("[]" if how == "var" else "")
                for name, kind, how in bdata.TAXI_SPEC
            }
        )
    )

    def convert_given() -> None:
        assert cli(["-q", "convert", *paths, str(out), "--schema", str(spec)]) == 0

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    at = f", load {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}" if load else ""
    print(f"{n:,} taxi-like records in {len(paths)} GZIP shards, {cores} usable cores{at}")
    print(f"median of {args.reps} rounds after one warm-up; pyarrow {pa.__version__}")
    print()
    cases: dict[str, Callable[[], Any]] = {
        "read + parse (spec)": read_parse(paths, TAXI),
        "read + parse (inferred schema)": read_parse(paths, inferred),
        "arrow.read_table": lambda: arrow.read_table(paths),
        "convert -> Parquet": convert,
        "convert --schema -> Parquet": convert_given,
    }
    rounds = timed_rounds(cases, args.reps)
    meta = pq.read_metadata(out)
    assert meta.num_rows == n
    base_walls, base_cpus = rounds["read + parse (spec)"]
    print("| task | seconds | CPU seconds | records/s | vs read + parse (wall, CPU) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (walls, cpus) in rounds.items():
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        print(
            f"| {name} | {wall:.3f} | {cpu:.3f} | {n / wall:,.0f} | "
            f"{round_ratios(base_walls, walls):.2f}x, {round_ratios(base_cpus, cpus):.2f}x |"
        )
    end = os.getloadavg() if hasattr(os, "getloadavg") else None
    if end:
        print(f"\nload at the end {end[0]:.1f} / {end[1]:.1f} / {end[2]:.1f}")
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    print()
    print(f"Parquet file (convert --schema): {out.stat().st_size:,} bytes, row groups {groups}")
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(convert)
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
