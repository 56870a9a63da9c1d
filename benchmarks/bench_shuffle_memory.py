"""Peak memory of ``TFRecordDataset.shuffle`` on data 20x larger than its buffer.

    python -m benchmarks.bench_shuffle_memory [--record-size 1024] [--buffer 10000] [--factor 20]

Writes a TFRecord file of ``factor * buffer`` records (and the same records as 16
shards), then reads it in a fresh child process per mode and reports the child's
peak RSS (``ru_maxrss``) and how much it grew while reading:

* ``stream``: read every record, no shuffle (the floor: interpreter + read buffers)
* ``shuffle``: ``.shuffle(buffer)`` over the one file
* ``shuffle 16 files``: ``.shuffle(buffer)`` over 16 shards read 16 at a time
  (``num_parallel_reads=16``): memory is one buffer, not files x buffer
* ``naive``: ``list()`` of every record then ``random.shuffle`` (what you do without a buffer)

A shuffle buffer of ``buffer`` records of ``record-size`` bytes holds about
``buffer * (record-size + 33)`` bytes of Python ``bytes`` objects.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

MODES = ("stream", "shuffle", "shuffle 16 files", "naive")


def _child(mode: str, path: str, shards: str, buffer: int) -> None:
    import random

    from tfrecord_lite._data import TFRecordDataset

    next(iter(TFRecordDataset(path)))  # imports and first buffers before the baseline
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    n = 0
    if mode == "stream":
        for _ in TFRecordDataset(path):
            n += 1
    elif mode == "shuffle":
        for _ in TFRecordDataset(path).shuffle(buffer, seed=0):
            n += 1
    elif mode == "shuffle 16 files":
        for _ in TFRecordDataset(shards, num_parallel_reads=16).shuffle(buffer, seed=0):
            n += 1
    elif mode == "naive":
        everything = list(TFRecordDataset(path))
        random.Random(0).shuffle(everything)
        n = len(everything)
    else:  # pragma: no cover
        raise SystemExit(f"unknown mode {mode!r}")
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"records": n, "before_kib": before, "peak_kib": after, "seconds": seconds}))


def _write(path: str, shard_prefix: str, n: int, size: int) -> None:
    import tfrecord_lite as tfr
    from tfrecord_lite._files._sharded import ShardedWriter

    payload = os.urandom(size)
    with tfr.TFRecordWriter(path) as w, ShardedWriter(shard_prefix, num_shards=16) as sw:
        for i in range(n):
            record = i.to_bytes(8, "little") + payload[8:]
            w.write(record)
            sw.write(record)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--record-size", type=int, default=1024, help="bytes per record")
    ap.add_argument("--buffer", type=int, default=10_000, help="shuffle buffer, in records")
    ap.add_argument("--factor", type=int, default=20, help="the data is this many buffers")
    ap.add_argument("--modes", nargs="*", default=list(MODES), choices=MODES)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--child", nargs=3, metavar=("MODE", "PATH", "SHARDS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child[0], args.child[1], args.child[2], args.buffer)
        return 0

    n = args.factor * args.buffer
    with tempfile.TemporaryDirectory(prefix="bench-shuffle-") as tmp:
        path = os.path.join(tmp, "data.tfrecord")
        prefix = os.path.join(tmp, "shard")
        t0 = time.perf_counter()
        _write(path, prefix, n, args.record_size)
        file_mib = os.path.getsize(path) / 2**20
        buffer_mib = args.buffer * (args.record_size + 33) / 2**20
        print(
            f"data: {n} records x {args.record_size} B = {file_mib:.1f} MiB "
            f"(written in {time.perf_counter() - t0:.1f} s); shuffle buffer: {args.buffer} records "
            f"~ {buffer_mib:.1f} MiB; file / buffer = {file_mib / buffer_mib:.1f}x"
        )
        results = {}
        for mode in args.modes:
            cmd = [
                sys.executable,
                "-m",
                "benchmarks.bench_shuffle_memory",
                "--buffer",
                str(args.buffer),
                "--child",
                mode,
                path,
                f"{prefix}@16",
            ]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=_root())
            res = json.loads(out.stdout.strip().splitlines()[-1])
            assert res["records"] == n, res
            results[mode] = res
        print()
        print("| mode | peak RSS (MiB) | grew while reading (MiB) | time (s) |")
        print("| --- | ---: | ---: | ---: |")
        for mode, res in results.items():
            peak = res["peak_kib"] / 1024
            grew = (res["peak_kib"] - res["before_kib"]) / 1024
            print(f"| {mode} | {peak:.1f} | {grew:.1f} | {res['seconds']:.2f} |")
        summary = {
            "records": n,
            "record_size": args.record_size,
            "buffer_records": args.buffer,
            "file_mib": file_mib,
            "buffer_mib": buffer_mib,
            "results": results,
        }
        if args.json:
            with open(args.json, "w") as f:
                json.dump(summary, f, indent=2)
    return 0


def _root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


if __name__ == "__main__":
    sys.exit(main())
