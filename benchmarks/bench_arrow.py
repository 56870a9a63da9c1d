"""Arrow benchmark: ``tfrecord_lite.arrow.read_table`` against tf.data at its best.

    python -m benchmarks.bench_arrow [--records 60000] [--reps 5] [--sets taxi ...]

Runs where TensorFlow is installed (``.venv-interop``, or ``make bench-peers``' venv):
run it as above with that venv's python. On the same files, each side in fresh
processes of its own (``--runs`` of each, alternating ours and TensorFlow's: TensorFlow's
threads and allocator stay out of our timings), each process timing its variants in
turn for ``--reps`` rounds after a warm-up round; a variant's number is the median of
its processes' medians:

* **ours**: ``read_table(paths, features)`` (the specs given, as tf.data is given
  them; batches converted on a thread per core, the default), the same with
  ``use_threads=False`` (one thread converts, beside it), and ``read_table(paths)``
  (the schema inferred from the first 1,000 records first), the whole files as one
  ``pyarrow.Table``; GZIP inflates on a thread of its own, as by default. The core
  count is printed;
* **tf.data**: the three pipelines of ``benchmarks/tasks.py``'s parse tasks
  (``batch.map``, ``batch.map.prefetch``, ``batch.map(AUTOTUNE).prefetch`` of
  ``tf.io.parse_example``) at batch 1024 and at batch 256; the best median counts.

Data sets: ``taxi`` and ``transformed`` (``benchmarks/data.py``: taxi-like records, 4 GZIP
shards; the second with each record's keys in an order of its own, as tf.Transform
writes), ``tabular`` (fixed layout, one plain file) and ``tfx_taxi`` (the real TFX taxi
shards, ``--real-taxi``, when that directory is there). Target: read_table >= 3x tf.data
on the real taxi shards.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import data, tasks

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "_data" / "arrow"
BATCHES = (1024, 256)


def _prepare(sets: list[str], records: int, real_taxi: Path) -> dict[str, Any]:
    """The manifest of the data sets asked for (files written once, reused while fresh)."""
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / data.MANIFEST
    try:
        old: dict[str, Any] = json.loads(path.read_text())["datasets"]
    except (OSError, ValueError, KeyError):
        old = {}
    out: dict[str, Any] = {}
    for name in sets:
        entry = old.get(name)
        if name == "tfx_taxi":
            sources = sorted(real_taxi.glob("*.gz"))
            if sources:
                fresh = data._fresh_copies(entry, DATA, sources)
                out[name] = entry if fresh else data._copy_shards(DATA, name, sources)
        elif name == "tabular":
            file = DATA / "tabular.tfrecord"
            if not data._fresh(entry, file, records):
                recs, check = data.tabular_records(records)
                data._write(file, recs)
                entry = data._entry(file, recs, check)
            out[name] = entry
        else:
            if not data._fresh_shards(entry, DATA, records):
                make = data.taxi_records if name == "taxi" else data.transformed_records
                recs, check = make(records)
                entry = data._write_shards(DATA, name, recs, check)
            out[name] = entry
    manifest = {"version": data.GENERATOR_VERSION, "datasets": out}
    path.write_text(json.dumps({"datasets": {**old, **out}}, indent=1))
    return manifest


def _ours(ctx: tasks.Context, dataset: str) -> dict[str, Callable[[], int]]:
    import tfrecord_lite as tfr
    from tfrecord_lite import arrow as tfa

    paths = ctx.paths(dataset)
    features = tasks.lite_features(tfr, dataset)
    key = data.CHECK_KEY[dataset]

    def check(table: Any) -> int:
        return tasks._first_column_sum(tfa.from_arrow(table.select([key]))[key])

    def given() -> int:
        return check(tfa.read_table(paths, features))

    def one_thread() -> int:
        return check(tfa.read_table(paths, features, use_threads=False))

    def inferred() -> int:
        return check(tfa.read_table(paths))

    return {
        "read_table(specs given)": given,
        "read_table(specs given, use_threads=False)": one_thread,
        "read_table(inferred)": inferred,
    }


def _tf(ctx: tasks.Context, dataset: str) -> dict[str, Callable[[], int]]:
    out: dict[str, Callable[[], int]] = {}
    for batch in BATCHES:
        name = f"{dataset}_parse" + ("" if batch == 1024 else f"_{batch}")
        for variant, run in tasks.tf_parse(ctx, tasks.TASKS[name]).items():
            out[f"tf.data {variant}, batch {batch}"] = lambda r=run: r().check
    return out


def measure(ctx: tasks.Context, dataset: str, side: str, reps: int) -> dict[str, float]:
    """Median seconds of every variant of one side (``ours`` or ``tf``), the variants
    alternating round by round after a warm-up round; checksums checked."""
    variants = _ours(ctx, dataset) if side == "ours" else _tf(ctx, dataset)
    times: dict[str, list[float]] = {k: [] for k in variants}
    expected = ctx.entry(dataset)["check"]
    for round_ in range(reps + 1):
        for name, fn in variants.items():
            t = time.perf_counter()
            check = fn()
            if round_:
                times[name].append(time.perf_counter() - t)
            if check != expected:
                raise RuntimeError(f"{dataset} {name}: checksum {check}, expected {expected}")
    return {k: statistics.median(v) for k, v in times.items()}


def _child(dataset: str, side: str, reps: int) -> dict[str, float]:
    """:func:`measure` in a fresh process (TensorFlow's threads and allocator stay there)."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_arrow", "--child", dataset, side, str(reps)],
        cwd=ROOT.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    for line in out.stdout.splitlines():
        if line.startswith(RESULT):
            result: dict[str, float] = json.loads(line[len(RESULT) :])
            return result
    raise RuntimeError(f"{dataset} {side} failed:\n{out.stderr[-3000:]}")


RESULT = "RESULT "


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=60_000, help="records per generated set")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sets", nargs="+", default=["taxi", "transformed", "tabular", "tfx_taxi"])
    ap.add_argument("--real-taxi", type=Path, default=ROOT.parent.parent / "shared/data/tfx-taxi")
    ap.add_argument("--runs", type=int, default=2, help="fresh processes per side, alternating")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        dataset, side, reps = args.child
        manifest = json.loads((DATA / data.MANIFEST).read_text())
        ctx = tasks.Context(DATA, manifest, DATA / "work")
        print(RESULT + json.dumps(measure(ctx, dataset, side, int(reps))), flush=True)
        return 0
    manifest = _prepare(args.sets, args.records, args.real_taxi)
    print(f"cores: {os.cpu_count()}  engine: {os.environ.get('TFRECORD_LITE_ENGINE', 'auto')}")
    print("| data set | records | ours | median | krec/s | tf.data best | krec/s | ratio |")
    print("|---|---:|---|---:|---:|---|---:|---:|")
    for dataset in manifest["datasets"]:
        n = manifest["datasets"][dataset]["records"]
        runs: dict[str, list[float]] = {}
        for _ in range(args.runs):
            for side in ("ours", "tf"):
                for k, v in _child(dataset, side, args.reps).items():
                    runs.setdefault(k, []).append(v)
        medians = {k: statistics.median(v) for k, v in runs.items()}
        tf_best = min((k for k in medians if k.startswith("tf.data")), key=medians.__getitem__)
        for ours in (k for k in medians if k.startswith("read_table")):
            print(
                f"| {dataset} | {n:,} | {ours} | {medians[ours]:.3f} s | "
                f"{n / medians[ours] / 1e3:,.0f} | {tf_best} | "
                f"{n / medians[tf_best] / 1e3:,.0f} | {medians[tf_best] / medians[ours]:.2f}x |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
