"""How read + parse grows with threads in one process (taxi-like GZIP shards).

    python -m benchmarks.bench_threads [--threads 1,2,4,8,16] [--shards 16]
        [--records 20000] [--batch 1024] [--repeat 3] [--engine auto|numpy|jit]
    python -m benchmarks.bench_threads --user [--threads 1,2] [--records 8192]
        [--batch 1024] [--repeat 7] [--engine auto|numpy|jit]

``--user``: user threads, each calling ``tfr.io.parse_example`` on batches of
in-memory records (taxi-like, CSV-ExampleGen-like and tf.Transform-like records of
:mod:`benchmarks.data`), as a training script's own threads would; each repeat
runs every thread count in turn, so load from elsewhere on the machine falls on
all of them alike. Prints the core count, a calibration (the same thread counts
hashing 1 MiB buffers with ``hashlib``, which releases the GIL: what the machine's
cores give threads at that moment), and per record set the median records/s of
each thread count and its speed-up over one thread, and the CPU time one thread
spends per batch outside the compiled kernels (holding the GIL: what threads
cannot run at once), with its share of the batch's CPU time.

Writes ``--shards`` GZIP shards of taxi-like Examples (:func:`benchmarks.data.taxi_records`,
the same records in each shard) to a temporary directory, then for each thread count N
reads and parses every shard with N threads in one process: each task reads one shard
(``TFRecordDataset(shard, "GZIP").batch(B)``, CRCs checked) and parses each batch with one
compiled plan; the compiled kernels release the GIL. ``parse alone`` parses the records,
in memory, in batches over N threads (:func:`tfrecord_lite._files.map_ahead` of the plan's parse).
Prints the core count and a table of medians (records/s, wall time); needs only numpy,
protobuf, crcmod and (for the compiled engine) numba: no TensorFlow.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks import data, tasks


def _read_parse(path: str, plan: Any, batch: int) -> int:
    import tfrecord_lite as tfr

    n = 0
    for records in tfr.TFRecordDataset(path, "GZIP").batch(batch):
        parsed = plan.parse(records)
        n += len(parsed["trip_start_timestamp"])
    return n


#: The record sets of ``--user``: (records maker, features of benchmarks.tasks).
USER_SETS = {
    "taxi-like": (data.taxi_records, "taxi"),
    "CSV-ExampleGen-like": (data.tabular_records, "tabular"),
    "tf.Transform-like": (data.transformed_records, "transformed"),
}


def _run_threads(n: int, work: Any) -> float:
    """Wall seconds of ``n`` threads each running ``work()``."""
    import threading

    threads = [threading.Thread(target=work) for _ in range(n)]
    t = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - t


def _hash_calibration(counts: list[int], repeat: int) -> dict[int, float]:
    """Each thread count's speed-up over the first hashing 1 MiB buffers with
    ``hashlib`` (sha256 releases the GIL): the cores threads get right now."""
    import hashlib

    buf = os.urandom(1 << 20)

    def work() -> None:
        for _ in range(64):
            hashlib.sha256(buf).digest()

    walls: dict[int, list[float]] = {n: [] for n in counts}
    for _ in range(repeat):
        for n in counts:
            walls[n].append(_run_threads(n, work))
    rates = {n: n / statistics.median(walls[n]) for n in counts}
    return {n: rates[n] / rates[counts[0]] for n in counts}


def _outside_kernels(batches: list[list[bytes]], features: Any, repeat: int) -> tuple[float, float]:
    """One thread's CPU time per batch outside the compiled kernels (ms, median of
    ``repeat`` passes) and its share of the batch's CPU time: every kernel the
    Example path runs is timed (``time.thread_time``) while it runs."""
    import tfrecord_lite as tfr
    from tfrecord_lite._examples._engines import _jit

    kern = _jit._example_kernels()  # (the namespace of kernels the driver calls)
    inside = [0]
    real = {name: f for name, f in vars(kern).items() if callable(f)}

    def timed(f: Any) -> Any:
        def run(*a: Any) -> Any:
            t = time.thread_time_ns()
            try:
                return f(*a)
            finally:
                inside[0] += time.thread_time_ns() - t

        return run

    outside, shares = [], []
    try:
        for name, f in real.items():
            setattr(kern, name, timed(f))
        for _ in range(repeat):
            inside[0] = 0
            t = time.thread_time_ns()
            for batch in batches:
                tfr.io.parse_example(batch, features)
            total = time.thread_time_ns() - t
            outside.append((total - inside[0]) / len(batches) / 1e6)
            shares.append((total - inside[0]) / total)
    finally:
        for name, f in real.items():
            setattr(kern, name, f)
    return statistics.median(outside), statistics.median(shares)


def _user_threads(args: argparse.Namespace, counts: list[int]) -> None:
    """``tfr.io.parse_example`` over in-memory batches on N user threads at once."""
    import tfrecord_lite as tfr
    from tfrecord_lite._examples._engines import _kernels

    _kernels.wait()  # (auto takes the compiled engine once it is loaded)
    print(f"user threads calling tfr.io.parse_example, {args.records} in-memory records "
          f"each, batch {args.batch}, median of {args.repeat} (thread counts interleaved)")  # fmt: skip
    calibration = _hash_calibration(counts, args.repeat)
    print("hashlib calibration (1 MiB sha256 buffers): "
          + ", ".join(f"{n} threads {x:.2f}x" for n, x in calibration.items()))  # fmt: skip
    header = "".join(f"{f'{n} thread rec/s':>17s} {'x':>5s}" for n in counts)
    print(f"{'records':>20s} {header} {'GIL ms/batch':>12s} {'share':>6s}")
    for label, (make, dataset) in USER_SETS.items():
        records = make(args.records)[0]
        features = tasks.lite_features(tfr, dataset)
        batches = [records[i : i + args.batch] for i in range(0, len(records), args.batch)]
        for batch in batches:  # (warm: compiled plan, allocator)
            tfr.io.parse_example(batch, features)

        def parse_all(batches: list[list[bytes]] = batches, features: Any = features) -> None:
            for batch in batches:
                tfr.io.parse_example(batch, features)

        walls: dict[int, list[float]] = {n: [] for n in counts}
        for _ in range(args.repeat):
            for n in counts:
                walls[n].append(_run_threads(n, parse_all))
        rates = {n: n * len(records) / statistics.median(walls[n]) for n in counts}
        base = rates[counts[0]]
        cells = "".join(f"{rates[n]:17,.0f} {rates[n] / base:5.2f}" for n in counts)
        outside, share = _outside_kernels(batches, features, args.repeat)
        print(f"{label:>20s} {cells} {outside:12.3f} {share:6.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2,4,8,16")
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--records", type=int, default=20000, help="records per shard")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--engine", default="auto", choices=["auto", "numpy", "jit"])
    parser.add_argument(
        "--user", action="store_true", help="in-memory parse_example on user threads"
    )
    args = parser.parse_args(
        ["--threads", "1,2", "--records", "8192", "--repeat", "7", *sys.argv[1:]]
        if "--user" in sys.argv[1:]
        else None
    )
    os.environ["TFRECORD_LITE_ENGINE"] = args.engine
    import tfrecord_lite as tfr
    from tfrecord_lite._examples import compile_features
    from tfrecord_lite._examples._engines import choose as engine
    from tfrecord_lite._files import map_ahead

    counts = [int(t) for t in args.threads.split(",")]
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    print(f"cores: {os.cpu_count()} (usable: {affinity})  python {sys.version.split()[0]}")
    if args.user:
        _user_threads(args, counts)
        return
    print(f"engine: {engine(args.batch)}  shards: {args.shards} x {args.records} taxi-like "
          f"records, GZIP, batch {args.batch}, median of {args.repeat}")  # fmt: skip
    records, _ = data.taxi_records(args.records)
    plan = compile_features(tasks.lite_features(tfr, "taxi"))
    plan.parse(records[: args.batch])  # compile or load the kernels before timing
    chunks = [records[i : i + args.batch] for i in range(0, len(records), args.batch)]
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for s in range(args.shards):
            path = Path(tmp) / f"taxi-{s:05d}-of-{args.shards:05d}.tfrecord.gz"
            data._write(path, records, "GZIP")
            paths.append(str(path))
        total = args.records * args.shards
        print(f"{'threads':>7s} {'read+parse rec/s':>17s} {'wall s':>7s} {'speed-up':>8s} "
              f"{'parse alone rec/s':>18s} {'speed-up':>8s}")  # fmt: skip
        base_rp = base_p = 0.0
        for n in counts:
            walls, parse_walls = [], []
            with ThreadPoolExecutor(n) as pool:
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    got = sum(pool.map(lambda p: _read_parse(p, plan, args.batch), paths))
                    walls.append(time.perf_counter() - t)
                    assert got == total, (got, total)
                    t = time.perf_counter()
                    for _ in range(max(1, n)):
                        for _parsed in map_ahead(plan.parse, iter(chunks), n):
                            pass
                    parse_walls.append(time.perf_counter() - t)
            rate = total / statistics.median(walls)
            prate = len(records) * max(1, n) / statistics.median(parse_walls)
            base_rp = base_rp or rate
            base_p = base_p or prate
            print(f"{n:7d} {rate:17,.0f} {statistics.median(walls):7.2f} {rate / base_rp:8.2f} "
                  f"{prate:18,.0f} {prate / base_p:8.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
