"""Engine benchmark: tfrecord_lite.spark / .daft / .hf against the library in one process.

    python -m benchmarks.bench_engines [--records 25000] [--reps 3] [--engines spark daft hf]
                                       [--out benchmarks/ENGINES.md]

Runs from ``.venv-engines`` (``make test-engines`` installs it: PySpark 4 with the
machine's Java 17, Daft, Hugging Face ``datasets``; no TensorFlow). In one run, on
the same files:

* **read**: 16 taxi-like GZIP shards (``benchmarks/data.taxi_records``: 18 features,
  VarLen ones with missing values) read by Spark ``local[N]`` through the ``tfrecord``
  data source (``count()``, and ``collect()`` of two numeric columns) and by Daft's
  local runner (``count_rows()``, and ``to_pydict()`` of the two columns), against
  ``tfrecord_lite.arrow.read_table`` of the same shards in this process with
  ``TFRECORD_LITE_THREADS=1`` (one core: GZIP inflates in the calling thread; the same
  parse into the same Arrow columns). Target: each engine's rate per core at least
  half that rate. Beside them, Spark's ``toArrow()`` of the two columns (Arrow from the
  data source to this process) and ``collect()`` of as many rows of two float columns
  that Spark makes itself (``spark.range``): what ``collect()`` costs with no file read.
* **write**: the same rows, cached in Spark, written as 16 GZIP shards by
  ``df.write.format("tfrecord")`` against ``tfrecord_lite.arrow.write_table`` of the
  table in this process (one thread). Target: Spark's rate per core at least half ours.
* **hf**: a ``datasets.Dataset`` built from 8 MNIST-like shards by
  ``tfrecord_lite.hf.load_dataset`` (a fresh cache each time) against
  ``datasets.Dataset.from_generator`` over ``tf_record_iterator`` +
  ``parse_single_example``, the record-by-record port. Target: at least 5x.

Each timing is the median of ``--reps`` runs after one warm-up run (the JVM, the
Python workers and Daft's runner started). The machine's core count is printed and
Spark uses all of them (``local[N]``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import tfrecord_lite as tfr
from benchmarks import data as bdata

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "_data" / "engines"
SHARDS = 16
MNIST_SHARDS = 8
MNIST_FEATURES = {
    "image_raw": tfr.FixedLenFeature([], tfr.string),
    "label": tfr.FixedLenFeature([], tfr.int64),
    "dim": tfr.FixedLenFeature([3], tfr.int64),
}
TAXI_FEATURES = {
    name: tfr.VarLenFeature(getattr(tfr, kind if kind != "bytes" else "string"))
    if how == "var"
    else tfr.FixedLenFeature([], getattr(tfr, kind if kind != "bytes" else "string"))
    for name, kind, how in bdata.TAXI_SPEC
}
COLUMNS = ["fare", "trip_miles"]


def timed(fn: Callable[[], Any], reps: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def taxi_shards(per_shard: int) -> list[str]:
    out = DATA / f"taxi-{per_shard}"
    paths = [str(out / f"taxi-{i:02d}.tfrecord.gz") for i in range(SHARDS)]
    if all(os.path.exists(p) for p in paths):
        return paths
    out.mkdir(parents=True, exist_ok=True)
    for i, p in enumerate(paths):
        records, _ = bdata.taxi_records(per_shard, seed=100 + i)
        with tfr.TFRecordWriter(p + ".tmp", "GZIP") as w:
            w.write_all(records)
        os.replace(p + ".tmp", p)
    return paths


def mnist_shards(per_shard: int) -> list[str]:
    out = DATA / f"mnist-{per_shard}"
    paths = [str(out / f"mnist-{i:02d}.tfrecord") for i in range(MNIST_SHARDS)]
    if all(os.path.exists(p) for p in paths):
        return paths
    out.mkdir(parents=True, exist_ok=True)
    for i, p in enumerate(paths):
        records = bdata.mnist_records(bdata.mnist_arrays(per_shard, seed=200 + i))
        with tfr.TFRecordWriter(p + ".tmp") as w:
            w.write_all(records)
        os.replace(p + ".tmp", p)
    return paths


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """``TFRECORD_LITE_THREADS=1``: GZIP inflates and deflates in the calling thread, so a
    process uses one core (the per-core baseline)."""
    old = os.environ.get("TFRECORD_LITE_THREADS")
    os.environ["TFRECORD_LITE_THREADS"] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ["TFRECORD_LITE_THREADS"]
        else:
            os.environ["TFRECORD_LITE_THREADS"] = old


def record_by_record(files: list[str]) -> Any:
    """The port people write by hand: ``tf_record_iterator`` + ``parse_single_example``."""
    for f in files:
        for record in tfr.tf_record_iterator(f):
            ex = tfr.parse_single_example(record, MNIST_FEATURES)
            yield {
                "image_raw": ex["image_raw"].item(),
                "label": int(ex["label"]),
                "dim": ex["dim"].tolist(),
            }


def spark_session(cores: int) -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from tfrecord_lite import spark as tfspark

    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    tfspark.register(spark)
    return spark


def row(task: str, n: int, ours: float, theirs: float, cores: int, target: str) -> dict[str, Any]:
    ours_rate, their_rate = n / ours, n / theirs
    return {
        "task": task,
        "records": n,
        "ours_s": ours,
        "theirs_s": theirs,
        "ours_rate": ours_rate,
        "their_rate": their_rate,
        "per_core": their_rate / cores / ours_rate,
        "target": target,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=25_000, help="taxi records per shard")
    ap.add_argument("--mnist", type=int, default=7_500, help="MNIST-like records per shard")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--engines",
        nargs="+",
        choices=["spark", "daft", "hf"],
        default=["spark", "daft", "hf"],
        help="only these engines' rows",
    )
    args = ap.parse_args(argv)
    cores = os.cpu_count() or 1
    print(f"cores: {cores}", flush=True)
    from tfrecord_lite import arrow as tfa

    paths = taxi_shards(args.records)
    n = SHARDS * args.records
    results: list[dict[str, Any]] = []

    # -- ours, one process
    def ours_read() -> Any:
        return tfa.read_table(paths, TAXI_FEATURES)

    with one_thread():
        t_ours = timed(ours_read, args.reps)
    table = ours_read()
    print(f"ours read_table, one thread: {t_ours:.2f} s ({n / t_ours:,.0f} records/s)", flush=True)

    # -- Spark (its Python workers inflate in their own thread: tfrecord_lite.spark's default)
    spark = spark_session(cores) if "spark" in args.engines else None
    from tfrecord_lite import spark as tfspark

    def spark_df() -> Any:
        return tfspark.read_tfrecords(spark, paths, TAXI_FEATURES)

    if spark is not None:
        assert spark_df().count() == n
        t = timed(lambda: spark_df().count(), args.reps)
        results.append(row("Spark read, count()", n, t_ours, t, cores, ">= 0.5"))
        t = timed(lambda: spark_df().select(*COLUMNS).collect(), args.reps)
        results.append(row("Spark read, collect() of 2 columns", n, t_ours, t, cores, ">= 0.5"))
        t = timed(lambda: spark_df().select(*COLUMNS).toArrow(), args.reps)
        results.append(row("Spark read, toArrow() of 2 columns", n, t_ours, t, cores, ""))
        # What collect() costs without any file or data source: the same number of rows
        # of two float columns made by Spark itself, pickled to this process as Rows.
        floor = spark.range(n).selectExpr(*(f"cast(id as float) as {c}" for c in COLUMNS))
        t = timed(floor.collect, args.reps)
        results.append(
            row("collect() of 2 columns of spark.range, no file read", n, t_ours, t, cores, "")
        )
        print(results[-4:], flush=True)

    # -- writes: Spark (rows cached in Spark) against write_table in this process
    tmp = Path(tempfile.mkdtemp(prefix="bench-engines-"))
    try:
        if spark is not None:
            _spark_write(spark_df, table, tmp, args.reps, n, cores, results)
            spark.stop()
        if "daft" in args.engines:
            _daft(paths, args.reps, n, t_ours, cores, results)
        if "hf" in args.engines:
            _hf(args.mnist, args.reps, tmp, results)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _report(args, cores, results)
    return 0


def _spark_write(
    spark_df: Callable[[], Any],
    table: Any,
    tmp: Path,
    reps: int,
    n: int,
    cores: int,
    results: list[dict[str, Any]],
) -> None:
    """Spark's write (rows cached in Spark) against write_table in this process."""
    from tfrecord_lite import arrow as tfa

    cached = spark_df().repartition(SHARDS).cache()
    cached.count()

    def ours_write() -> None:
        tfa.write_table(table, str(tmp / "ours.tfrecord.gz"), compression="GZIP")

    def spark_write() -> None:
        cached.write.format("tfrecord").mode("overwrite").option("compression", "gzip").save(
            str(tmp / "spark")
        )

    with one_thread():
        t_w_ours = timed(ours_write, reps)
    t_w_spark = timed(spark_write, reps)
    assert sum(1 for _ in tfr.tf_record_iterator(str(tmp / "spark"), "auto")) == n
    results.append(row("Spark write (GZIP shards)", n, t_w_ours, t_w_spark, cores, ">= 0.5"))
    print(results[-1], flush=True)
    cached.unpersist()


def _daft(
    paths: list[str], reps: int, n: int, t_ours: float, cores: int, results: list[dict[str, Any]]
) -> None:
    from tfrecord_lite import daft as tfdaft

    def daft_df() -> Any:
        return tfdaft.read_tfrecords(paths, TAXI_FEATURES)

    assert daft_df().count_rows() == n
    t = timed(lambda: daft_df().count_rows(), reps)
    results.append(row("Daft read, count_rows()", n, t_ours, t, cores, ">= 0.5"))
    t = timed(lambda: daft_df().select(*COLUMNS).to_pydict(), reps)
    results.append(row("Daft read, to_pydict() of 2 columns", n, t_ours, t, cores, ">= 0.5"))
    print(results[-2:], flush=True)


def _hf(per_shard: int, reps: int, tmp: Path, results: list[dict[str, Any]]) -> None:
    import datasets

    from tfrecord_lite import hf as tfhf

    datasets.disable_progress_bars()
    mpaths = mnist_shards(per_shard)
    m = MNIST_SHARDS * per_shard
    counter = iter(range(10**9))

    def ours_hf() -> None:
        cache = tmp / f"hf-{next(counter)}"
        ds = tfhf.load_dataset(mpaths, MNIST_FEATURES, cache_dir=str(cache))
        assert len(ds) == m

    def their_hf() -> None:
        k = next(counter)
        ds = datasets.Dataset.from_generator(
            record_by_record,
            gen_kwargs={"files": mpaths},
            cache_dir=str(tmp / f"gen-{k}"),
            fingerprint=f"bench-engines-{os.getpid()}-{k}",
        )
        assert len(ds) == m

    t_hf = timed(ours_hf, reps)
    t_gen = timed(their_hf, reps)
    r = row("HF Dataset from MNIST-like shards", m, t_gen, t_hf, 1, ">= 5")
    r["per_core"] = t_gen / t_hf  # a speed-up, both in one process
    results.append(r)
    print(results[-1], flush=True)


def _report(args: argparse.Namespace, cores: int, results: list[dict[str, Any]]) -> None:
    lines = [
        "# Engine benchmark (tfrecord_lite.spark / .daft / .hf)",
        "",
        f"{cores} cores; Spark local[{cores}], Daft's local runner; {SHARDS} taxi-like GZIP "
        f"shards of {args.records:,} records, {MNIST_SHARDS} MNIST-like shards of "
        f"{args.mnist:,}; medians of {args.reps} runs after a warm-up. `python -m "
        "benchmarks.bench_engines` (see its docstring for the method).",
        "",
        "| task | records | one process, one thread | engine | engine rate per core / ours |"
        " target |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in results:
        if r["task"].startswith("HF"):
            lines.append(
                f"| {r['task']} (load_dataset vs from_generator) | {r['records']:,} | "
                f"{r['ours_s']:.2f} s ({r['ours_rate']:,.0f}/s, from_generator) | "
                f"{r['theirs_s']:.2f} s ({r['their_rate']:,.0f}/s, load_dataset) | "
                f"{r['per_core']:.1f}x faster | {r['target']}x |"
            )
        else:
            lines.append(
                f"| {r['task']} | {r['records']:,} | {r['ours_s']:.2f} s "
                f"({r['ours_rate']:,.0f}/s) | {r['theirs_s']:.2f} s ({r['their_rate']:,.0f}/s) "
                f"| {r['per_core']:.2f} | {r['target']} |"
            )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
