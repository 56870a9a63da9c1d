"""Reading TFRecords from an S3 server: tfrecord_lite against the raw fetch of the same objects.

    python -m benchmarks.bench_cloud [--shards 16] [--mib 8] [--repeat 3]

Run from the ``.venv-cloud`` venv (``make .venv-cloud/.installed``): it starts its
own ``moto_server`` on 127.0.0.1 at a free port (no traffic leaves the machine),
writes ``shards`` GZIP shards of about ``mib`` MiB of Examples each, and measures,
alternating the variants within each repetition and reporting medians:

* ``raw fetch``: every object fetched at once with s3fs (``fs.cat(urls)``, its
  concurrent gather): the limit for reading these objects here;
* ``dataset, N reads``: ``TFRecordDataset(urls, num_parallel_reads=N)
  .parse(spec).batch(1024)``, CRCs checked, every batch parsed to NumPy;
* ``local``: the same pipeline over the same files on local disk;
* random access: ``TFRecordFile(url)[i]`` (with its index) for random ``i``,
  against the same ranged reads issued directly with ``fs.cat_file``.

Rates are compressed MB/s (10**6 bytes of objects per second). The machine's
core count is printed: moto_server, the fetch threads and the parser share them.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

import tfrecord_lite as tfr

KEY, SECRET = "bench-key", "bench-secret"
SPECS = {
    # small tabular Examples (~180 bytes): parsing dominates the CPU time
    "tabular": {
        "id": tfr.FixedLenFeature([], tfr.int64),
        "x": tfr.FixedLenFeature([32], tfr.float32),
        "tokens": tfr.VarLenFeature(tfr.int64),
    },
    # image-like Examples (16 KiB of encoded bytes each): I/O and CRCs dominate
    "images": {
        "id": tfr.FixedLenFeature([], tfr.int64),
        "image": tfr.FixedLenFeature([], tfr.string),
        "label": tfr.FixedLenFeature([], tfr.int64),
    },
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_server() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    server = os.path.join(os.path.dirname(sys.executable), "moto_server")
    proc = subprocess.Popen(
        [server, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("moto_server did not start")


def _write_shard(path: str, target_bytes: int, seed: int, kind: str) -> None:
    """GZIP Examples until the file holds about ``target_bytes`` compressed bytes."""
    rng = np.random.default_rng(seed)
    n = 4096
    with tfr.TFRecordWriter(path, "GZIP") as w:
        k = 0
        while kind == "images":
            for _ in range(64):
                image = rng.bytes(16 * 1024)
                w.write(tfr.encode_example({"id": [k], "image": [image], "label": [k % 10]}))
                k += 1
            w.flush()
            if os.path.getsize(path) >= target_bytes:
                return
        while True:
            x = rng.normal(size=(n, 32)).astype(np.float32)
            tokens = rng.integers(0, 50_000, size=(n, 8))
            for i in range(n):
                w.write(
                    tfr.encode_example(
                        {"id": [k + i], "x": x[i], "tokens": tokens[i, : 1 + (k + i) % 8]}
                    )
                )
            k += n
            w.flush()
            if os.path.getsize(path) >= target_bytes:
                return


def _rate(nbytes: int, fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return nbytes / (time.perf_counter() - start) / 1e6


def _consume(ds: Any) -> int:
    n = 0
    for batch in ds:
        n += len(batch["id"])
    return n


def main(argv: Any = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--mib", type=float, default=8.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--random-reads", type=int, default=300)
    ap.add_argument("--data", choices=sorted(SPECS), default="images")
    args = ap.parse_args(argv)

    import fsspec

    proc, endpoint = _start_server()
    try:
        so = {"key": KEY, "secret": SECRET, "client_kwargs": {"endpoint_url": endpoint}}
        import boto3

        boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=KEY,
            aws_secret_access_key=SECRET,
            region_name="us-east-1",
        ).create_bucket(Bucket="bench")
        fs = fsspec.filesystem("s3", **so)
        with tempfile.TemporaryDirectory() as tmp:
            local = [
                os.path.join(tmp, f"train-{i:05d}-of-{args.shards:05d}.gz")
                for i in range(args.shards)
            ]
            print(f"writing {args.shards} GZIP shards of ~{args.mib} MiB ...", flush=True)
            _write_shard(local[0], int(args.mib * 2**20), 0, args.data)
            spec = SPECS[args.data]
            for p in local[1:]:  # the same bytes: writing is not what is measured
                with open(local[0], "rb") as a, open(p, "wb") as b:
                    b.write(a.read())
            urls = [f"s3://bench/{os.path.basename(p)}" for p in local]
            for p, u in zip(local, urls):
                fs.put_file(p, u)
            total = sum(os.path.getsize(p) for p in local)
            n_records = sum(1 for _ in tfr.tf_record_iterator(local[0])) * args.shards

            def raw() -> None:
                fsspec.filesystem("s3", **so).cat(urls)

            def dataset(n: int) -> Callable[[], None]:
                def run() -> None:
                    ds = tfr.TFRecordDataset(urls, num_parallel_reads=n, storage_options=so)
                    assert _consume(ds.parse(spec).batch(1024)) == n_records

                return run

            def local_read(n: int) -> Callable[[], None]:
                def run() -> None:
                    ds = tfr.TFRecordDataset(local, num_parallel_reads=n)
                    assert _consume(ds.parse(spec).batch(1024)) == n_records

                return run

            variants: dict[str, Callable[[], None]] = {
                "raw fetch (s3fs, all objects at once)": raw,
                "dataset, num_parallel_reads=1": dataset(1),
                "dataset, num_parallel_reads=4": dataset(4),
                "dataset, num_parallel_reads=16": dataset(16),
                "local files, num_parallel_reads=1": local_read(1),
                "local files, num_parallel_reads=16": local_read(16),
            }
            results: dict[str, list[float]] = {k: [] for k in variants}
            for _ in range(args.repeat):
                for name, fn in variants.items():
                    results[name].append(_rate(total, fn))

            # random access: one plain object with its index
            plain_local = os.path.join(tmp, "plain.tfrecord")
            with tfr.TFRecordWriter(plain_local) as w:
                w.write_all(tfr.tf_record_iterator(local[0]))
            url = "s3://bench/plain.tfrecord"
            fs.put_file(plain_local, url)
            tfr.create_index(url, storage_options=so)
            f = tfr.TFRecordFile(url, storage_options=so)
            rng = random.Random(0)
            picks = [rng.randrange(len(f)) for _ in range(args.random_reads)]
            spans = [(int(f.offsets[i]), int(f.offsets[i] + f.lengths[i])) for i in picks]
            key = "bench/plain.tfrecord"
            ra: dict[str, list[float]] = {"TFRecordFile[i]": [], "fs.cat_file ranges": []}
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                for i in picks:
                    f[i]
                ra["TFRecordFile[i]"].append(len(picks) / (time.perf_counter() - t0))
                t0 = time.perf_counter()
                for a, b in spans:
                    fs.cat_file(key, start=a, end=b)
                ra["fs.cat_file ranges"].append(len(picks) / (time.perf_counter() - t0))
    finally:
        proc.terminate()
        proc.wait(10)

    cores = os.cpu_count()
    print(
        f"\n{args.shards} GZIP shards x {total / args.shards / 2**20:.1f} MiB "
        f"({total / 1e6:.0f} MB, {n_records:,} {args.data} Examples), moto_server on 127.0.0.1, "
        f"{cores} cores, medians of {args.repeat}"
    )
    limit = statistics.median(results["raw fetch (s3fs, all objects at once)"])
    print(f"{'variant':42} {'MB/s':>8} {'of raw fetch':>13}")
    for name, rates in results.items():
        med = statistics.median(rates)
        print(f"{name:42} {med:8.1f} {med / limit:12.0%}")
    print(f"\nrandom access, {args.random_reads} single-record reads of one plain object:")
    base = statistics.median(ra["fs.cat_file ranges"])
    for name, rates in ra.items():
        med = statistics.median(rates)
        print(f"{name:42} {med:8.1f} reads/s {med / base:6.0%}")


if __name__ == "__main__":
    main()
