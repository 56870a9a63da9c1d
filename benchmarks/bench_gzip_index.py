"""Random access into a GZIP TFRecord file through its index.

    python -m benchmarks.bench_gzip_index [--records 500000] [--fields 10] [--reads 300]
        [--text-lines 10000000] [--members 1000000] [--dir DIR]

Writes a GZIP file of taxi-like Examples (``benchmarks.data.taxi_rows``, their
first ``--fields`` features: 10 make about 300 bytes a record, all 18 about 500)
with the library's writer, then measures:

* one sequential read of the file (``tf_record_iterator``, every record CRC-checked);
* ``create_index`` (records and seek points) and the index's size against the file's;
* opening ``TFRecordFile`` with the index, and ``f[i]`` for ``--reads`` random
  ``i`` in a fresh ``TFRecordFile`` each time (no inflater carried over from the
  read before): median and 90th percentile;
* ``f[i]`` for consecutive ``i`` (iterating by index);
* ``read_index`` of a text index of ``--text-lines`` lines (time, and the peak
  of traced memory against the table's own size);
* the same records written with ``TFRecordWriter(..., seekable=True)`` (one
  record a ``write``): its size against the first file's, its index's size, and
  random reads;
* reading a GZIP file of ``--members`` one-record members (each ~100 bytes of
  data) against the same records in one member.

The targets: median random read <= 10 ms, index <= 3% of the compressed file,
building <= 1.5x one sequential read.

    python -m benchmarks.bench_gzip_index --loader [--records 200000] [--shards 4]
        [--spacings 262144,65536,32768,16384] [--workers 2] [--batch 64]
        [--loader-records 20000] [--repeats 5] [--dir DIR]

``--loader`` measures ``tfrecord_lite.torch.MapDataset`` over ``--shards`` shards of
the taxi-like records in a ``DataLoader(shuffle=True, num_workers=--workers,
batch_size=--batch)`` (raw records, ``collate_fn=list``: nothing but the reads),
``--loader-records`` records a run after the first batch (worker start-up not
timed), each run in a fresh process, the configurations alternating; medians (min-max) of records/s and each one's ratio to
the plain shards' median. The shard sets, all written by ``ShardedWriter`` with
``write_index=True``: plain; GZIP as TensorFlow writes it (no flush points; its
binary index by ``create_index``, 32 KiB windows every 4 MiB of output); GZIP
``seekable=True`` (a flush point every 3 MiB, the writer's own index); GZIP
``seekable=N`` for each of ``--spacings``. For each: the files' size against the
plain GZIP set, the indexes' size against the files, and the median random read
(one record, a fresh inflater each time). The target: the shuffled GZIP shards at
>= 50% of the plain shards' rate, the seekable file <= 3% larger.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np


def _best(fn: Any, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def run(records: int, fields: int, reads: int, folder: Path) -> dict[str, Any]:
    import tfrecord_lite as tfr
    from benchmarks.data import _wire_example, taxi_rows

    path = folder / f"taxi-{records}-{fields}.tfrecord.gz"
    if not path.exists():
        rows, _ = taxi_rows(records)
        recs = [_wire_example(row[:fields]) for row in rows]
        tmp = path.with_suffix(".tmp")
        with tfr.TFRecordWriter(str(tmp), "GZIP") as w:
            w.write_all(recs)
        os.replace(tmp, path)
    size = path.stat().st_size
    index = str(path) + ".index"

    sequential = _best(lambda: sum(1 for _ in tfr.tf_record_iterator(str(path))))
    build = _best(lambda: tfr.create_index(str(path), index))
    index_size = os.path.getsize(index)

    t = time.perf_counter()
    f = tfr.TFRecordFile(str(path))
    open_s = time.perf_counter() - t
    n = len(f)
    raw = sum(1 for _ in tfr.tf_record_iterator(str(path)))
    assert n == raw == records, (n, raw, records)

    rng = np.random.default_rng(0)
    picks = rng.integers(0, n, reads).tolist()
    lat = []
    for k in picks:
        g = tfr.TFRecordFile(str(path))  # no inflater kept from the read before
        t = time.perf_counter()
        g[k]
        lat.append(time.perf_counter() - t)
        g.close()
    lat.sort()
    t = time.perf_counter()
    for k in range(1000, 21000):
        f[k]
    per_next = (time.perf_counter() - t) / 20000
    return {
        "records": n,
        "record_bytes": round(sum(len(r) for r in f[0:1000]) / 1000, 1),
        "file_bytes": size,
        "seek_points": len(f._gz.index.points) if f._gz is not None else 0,
        "sequential_read_s": round(sequential, 3),
        "build_index_s": round(build, 3),
        "build_over_read": round(build / sequential, 2),
        "index_bytes": index_size,
        "index_over_file_pct": round(100 * index_size / size, 2),
        "open_with_index_ms": round(1000 * open_s, 2),
        "random_read_median_ms": round(1000 * statistics.median(lat), 2),
        "random_read_p90_ms": round(1000 * lat[int(0.9 * len(lat))], 2),
        "consecutive_read_us": round(1e6 * per_next, 1),
        **seekable(path, reads),
    }


def seekable(path: Path, reads: int) -> dict[str, Any]:
    """The same records written with ``seekable=True``: its size and its index's."""
    import tfrecord_lite as tfr

    again = path.with_name(path.name.replace(".tfrecord.gz", "-seekable.tfrecord.gz"))
    if not again.exists():
        with tfr.TFRecordWriter(str(again), "GZIP", seekable=True) as w:
            for record in tfr.tf_record_iterator(str(path)):
                w.write(record)
    index = tfr.create_index(str(again))
    n = len(tfr.TFRecordFile(str(again)))
    lat = []
    for k in np.random.default_rng(1).integers(0, n, reads).tolist():
        g = tfr.TFRecordFile(str(again))
        t = time.perf_counter()
        g[k]
        lat.append(time.perf_counter() - t)
        g.close()
    return {
        "seekable_file_over_plain_gzip_pct": round(
            100 * (again.stat().st_size / path.stat().st_size - 1), 2
        ),
        "seekable_index_over_file_pct": round(
            100 * os.path.getsize(index) / again.stat().st_size, 2
        ),
        "seekable_random_read_median_ms": round(1000 * statistics.median(lat), 2),
    }


def text_index(lines: int, folder: Path) -> dict[str, Any]:
    """``read_index`` of a text index of ``lines`` lines."""
    import tracemalloc

    from tfrecord_lite import read_index

    path = folder / f"text-{lines}.index"
    if not path.exists():
        rng = np.random.default_rng(0)
        with open(path, "w") as f:
            offset = 0
            for start in range(0, lines, 1_000_000):
                lengths = rng.integers(16, 400, min(1_000_000, lines - start))
                ends = offset + np.cumsum(lengths)
                offsets = ends - lengths
                offset = int(ends[-1])
                f.write("".join(f"{a} {b}\n" for a, b in zip(offsets.tolist(), lengths.tolist())))
    seconds = _best(lambda: read_index(path), repeat=2)
    tracemalloc.start()
    table = read_index(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "text_index_lines": len(table),
        "text_index_bytes": path.stat().st_size,
        "read_index_s": round(seconds, 2),
        "read_index_peak_mib": round(peak / 2**20, 1),
        "read_index_table_mib": round(table.nbytes / 2**20, 1),
    }


def many_members(count: int, folder: Path) -> dict[str, Any]:
    """A GZIP file of ``count`` one-record members against one member."""
    import gzip

    import tfrecord_lite as tfr

    record = tfr.encode_record(b"x" * 100)
    many = folder / f"members-{count}.gz"
    one = folder / f"one-member-{count}.gz"
    if not many.exists():
        many.write_bytes(gzip.compress(record, mtime=0) * count)
        one.write_bytes(gzip.compress(record * count, mtime=0))
    out: dict[str, Any] = {"members": count}
    for name, path in (("many_members_read_s", many), ("one_member_read_s", one)):
        n = 0

        def read(path: Path = path) -> None:
            nonlocal n
            n = sum(1 for _ in tfr.tf_record_iterator(str(path)))

        out[name] = round(_best(read, repeat=2), 3)
        assert n == count, (n, count)
    return out


def loader_sets(records: int, shards: int, spacings: list[int], folder: Path) -> dict[str, Any]:
    """The shard sets ``--loader`` reads (written once into ``folder``): their paths,
    sizes, index sizes and median random read."""
    import tfrecord_lite as tfr
    from benchmarks.data import _wire_example, taxi_rows

    rows, _ = taxi_rows(records)
    recs = [_wire_example(row[:10]) for row in rows]
    configs: list[tuple[str, str, Any]] = [("plain", "", False), ("gzip", "GZIP", False)]
    configs.append(("gzip seekable=True", "GZIP", True))
    configs += [(f"gzip seekable={n}", "GZIP", n) for n in spacings]
    sets: dict[str, Any] = {}
    for name, compression, seekable in configs:
        prefix = folder / f"loader-{records}-{name.replace(' ', '-').replace('=', '')}"
        with tfr.ShardedWriter(
            prefix,
            shards,
            compression=compression,
            write_index=not compression or bool(seekable),
            seekable=seekable,
        ) as w:
            w.write_all(recs)
        paths = list(w.paths)
        if compression and not seekable:
            for path in paths:
                tfr.create_index(path)
        size = sum(os.path.getsize(p) for p in paths)
        index = sum(os.path.getsize(p + ".index") for p in paths)
        lat = []
        files = [tfr.TFRecordFile(p) for p in paths]
        rng = np.random.default_rng(7)
        for _ in range(300):
            k = int(rng.integers(0, shards))
            f = files[k]
            i = int(rng.integers(0, len(f)))
            if f._gz is not None:
                f._gz.drop()  # no inflater kept from the read before
            t = time.perf_counter()
            f[i]
            lat.append(time.perf_counter() - t)
        for f in files:
            f.close()
        sets[name] = {
            "paths": paths,
            "file_bytes": size,
            "index_over_file_pct": round(100 * index / size, 2),
            "random_read_median_us": round(1e6 * statistics.median(lat), 1),
        }
    base = sets["gzip"]["file_bytes"]
    for entry in sets.values():
        entry["over_plain_gzip_pct"] = round(100 * (entry["file_bytes"] / base - 1), 2)
    return sets


_CHILD = """
import json, sys, time
import torch
from torch.utils.data import DataLoader
import tfrecord_lite.torch as tt

paths, workers, batch, count, seed = json.loads(sys.argv[1])
torch.manual_seed(seed)
loader = DataLoader(
    tt.MapDataset(paths), batch_size=batch, shuffle=True, num_workers=workers, collate_fn=list
)
it = iter(loader)
next(it)  # the workers started and each made its first batch: time the rest
t = time.perf_counter()
n = 0
for records in it:
    n += len(records)
    if n >= count:
        break
print(json.dumps(n / (time.perf_counter() - t)))
"""


def loader(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """``--loader``: MapDataset in a shuffled DataLoader over each shard set."""
    import subprocess

    spacings = [int(x) for x in args.spacings.split(",") if x]
    sets = loader_sets(args.records, args.shards, spacings, folder)
    rates: dict[str, list[float]] = {name: [] for name in sets}
    for rep in range(args.repeats):
        for name, entry in sets.items():
            job = json.dumps([entry["paths"], args.workers, args.batch, args.loader_records, rep])
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, job], capture_output=True, text=True, check=True
            )
            rates[name].append(float(out.stdout.strip().splitlines()[-1]))
    plain = statistics.median(rates["plain"])
    result: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "records": args.records,
        "shards": args.shards,
        "workers": args.workers,
        "batch": args.batch,
        "records_a_run": args.loader_records,
        "repeats": args.repeats,
    }
    for name, entry in sets.items():
        got = rates[name]
        result[name] = {
            "records_per_s_median": round(statistics.median(got)),
            "records_per_s_min_max": [round(min(got)), round(max(got))],
            "over_plain": round(statistics.median(got) / plain, 3),
            **{k: v for k, v in entry.items() if k != "paths"},
        }
    return result


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--fields", type=int, default=10, help="features a record keeps")
    parser.add_argument("--text-lines", type=int, default=10_000_000)
    parser.add_argument("--members", type=int, default=1_000_000)
    parser.add_argument("--reads", type=int, default=300)
    parser.add_argument("--dir", type=Path, default=None, help="where the data file is kept")
    parser.add_argument("--loader", action="store_true", help="MapDataset in a DataLoader")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--spacings", default="262144,65536,32768,16384")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--loader-records", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    def everything(folder: Path) -> dict[str, Any]:
        if args.loader:
            return loader(args, folder)
        result = run(args.records, args.fields, args.reads, folder)
        if args.text_lines:
            result.update(text_index(args.text_lines, folder))
        if args.members:
            result.update(many_members(args.members, folder))
        return result

    if args.dir is None:
        with tempfile.TemporaryDirectory() as tmp:
            result = everything(Path(tmp))
    else:
        args.dir.mkdir(parents=True, exist_ok=True)
        result = everything(args.dir)
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
