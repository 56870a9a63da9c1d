"""PyTorch ``DataLoader`` throughput over ``tfrecord_lite.torch.IterableDataset`` by worker count.

    python -m benchmarks.bench_dataloader [--workers 0,1,2,4,8,16] [--repeats 5] [--epochs 3]
                                          [--records 60000] [--batch 1024] [--handoff shm,pickle]
                                          [--in-order true,false] [--prefetch 2]

The pipeline is the one of a training script reading MNIST-like records
(``image_raw`` 784 bytes, ``label``, ``dim``, written as ``--files`` shards):
``TFRecordDataset("mnist@16").parse(spec).batch(batch)`` in a ``DataLoader(batch_size=None, persistent_workers=True)``, read
for ``--epochs`` epochs (``set_epoch`` before each). Two element kinds:

* ``as_tensors=False``: batches as ``parse_example`` returns them (``image_raw`` an
  object array of ``bytes``), ``collate_fn=tfrecord_lite.torch.collate``;
* ``as_tensors=True``: the worker also decodes the images
  (``decode_raw`` -> ``(B, 28, 28)`` uint8) and the batch arrives as tensors.

``--handoff`` compares how batches cross from the workers to the main process:
``shm`` (the default of ``IterableDataset``: shared-memory slots reused across
batches, the queue carrying small descriptors) and ``pickle``
(``shared_memory=False``: torch's own pickling). ``workers=0`` is the in-process
rate every ratio is taken against. ``--in-order false`` also runs the worker
counts with ``DataLoader(in_order=False)`` (each worker's batches still come in
that worker's order; batches of different workers may come in a different
interleaving), ``--prefetch`` sets ``prefetch_factor``.

Every (workers, as_tensors, handoff) configuration runs in a fresh child process
per repetition, configurations alternate (A B C A B C ...) so that drift on a
shared machine hits them alike, and the report gives medians (min-max) of
records/s over the whole run, worker start-up included, and the ratio of the
medians to the in-process median. Because wall-clock rates on a shared machine
say more about the neighbours than about the code, the report also gives the
CPU time per batch of the main process and of the workers after the first
epoch (no start-up; read from /proc while the persistent workers live, else
over the whole run), and the rate those alone allow on the cores this run may
use: ``batch / max(main, workers / W, (main + workers) / cores)``, and the
share of those cores left idle after the first epoch
(``1 - (main + workers) / (cores * wall)`` per batch: waiting on the DataLoader's
in-order delivery, on the queues, or on other processes of the machine), and
the time per batch the main process and the workers were runnable but waiting
for a core (Linux schedstat: what the machine's other processes took, or what
these processes took from each other when there are more of them than cores). The
machine's core count (``os.cpu_count()``) and the number of cores this process
may run on (its affinity) are printed: worker counts above that cannot add
throughput.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Optional


def _cores() -> tuple[Optional[int], int]:
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        affinity = os.cpu_count() or 1
    return os.cpu_count(), affinity


def _children_cpu() -> float:
    """CPU seconds of this process's exited, waited-for children (the DataLoader workers)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _children() -> list[str]:
    pids: list[str] = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as f:
            pids += f.read().split()
    return pids


def _schedstat(pids: list[str], field: int) -> float:
    """Sum of one field of ``/proc/<pid>/task/*/schedstat`` (ns: 0 on a core, 1 runnable, waiting)."""
    total = 0
    for pid in pids:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[field])
    return total / 1e9


def _live_children_cpu() -> Optional[float]:
    """CPU seconds used so far by this process's live children (Linux /proc), else None.

    From schedstat (nanoseconds) where the kernel has it, else from ``stat``
    (clock ticks of 10 ms, coarse over a short run)."""
    try:
        pids = _children()
    except (OSError, ValueError):
        return None
    try:
        return _schedstat(pids, 0)
    except (OSError, ValueError, IndexError):
        pass
    try:
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for pid in pids:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / tick
    except (OSError, ValueError, IndexError):
        return None


def _run_queue_wait() -> Optional[float]:
    """Seconds this process and its live children have spent runnable but waiting
    for a core (Linux ``/proc/<pid>/task/*/schedstat``), else None: time taken by
    the machine's other processes, or by these processes from each other when
    there are more of them than cores."""
    try:
        return _schedstat(["self", *_children()], 1)
    except (OSError, ValueError, IndexError):
        return None


def write_data(path: str, records: int, files: int = 1) -> int:
    """Write ``records`` MNIST-like records to ``path`` (``files > 1``: shards
    ``path-0000i-of-0000n``); return the sum of labels (a checksum)."""
    import tfrecord_lite as tfr

    from .data import mnist_arrays, mnist_records

    cols = mnist_arrays(records)
    data = mnist_records(cols)
    if files <= 1:
        with tfr.TFRecordWriter(path) as w:
            w.write_all(data)
    else:
        per = -(-records // files)
        for i in range(files):
            with tfr.TFRecordWriter(f"{path}-{i:05d}-of-{files:05d}") as w:
                w.write_all(data[i * per : (i + 1) * per])
    return int(cols["label"].sum())


def _decode(batch: dict[str, Any]) -> dict[str, Any]:
    import tfrecord_lite as tfr

    out = dict(batch)
    out["image_raw"] = tfr.decode_raw(batch["image_raw"], tfr.uint8).reshape(-1, 28, 28)
    return out


def child(args: argparse.Namespace) -> None:
    """Run one configuration; print one JSON line."""
    import torch
    from torch.utils.data import DataLoader

    import tfrecord_lite as tfr
    import tfrecord_lite.torch as tt

    torch.set_num_threads(1)
    spec = {
        "image_raw": tfr.FixedLenFeature([], tfr.string),
        "label": tfr.FixedLenFeature([], tfr.int64),
        "dim": tfr.FixedLenFeature([3], tfr.int64),
    }
    source = args.file if args.files <= 1 else f"{args.file}@{args.files}"
    pipeline = tfr.TFRecordDataset(source).parse(spec).batch(args.batch)
    if args.tensors:
        pipeline = pipeline.map(_decode)
    kwargs: dict[str, Any] = {}
    if args.handoff == "pickle":
        kwargs["shared_memory"] = False
    ds = tt.IterableDataset(pipeline, as_tensors=args.tensors, **kwargs)
    loader_kwargs: dict[str, Any] = {}
    if args.child_workers > 0:
        loader_kwargs = {"persistent_workers": True, "prefetch_factor": args.prefetch}
        if not args.in_order_one:
            loader_kwargs["in_order"] = False
    start = time.perf_counter()
    cpu_start = time.process_time()
    children_start = _children_cpu()
    loader = DataLoader(
        ds,
        batch_size=None,
        num_workers=args.child_workers,
        collate_fn=tt.collate,
        **loader_kwargs,
    )
    records = 0
    labels = 0
    first_epoch = 0.0
    main_after_first = cpu_start
    workers_after_first: Optional[float] = None
    wait_after_first: Optional[float] = None
    for epoch in range(args.epochs):
        ds.set_epoch(epoch)
        for batch in loader:
            label = batch["label"]
            records += len(label)
            labels += int(label.sum())
        if epoch == 0:
            first_epoch = time.perf_counter() - start
            main_after_first = time.process_time()
            workers_after_first = _live_children_cpu()
            wait_after_first = _run_queue_wait()
    seconds = time.perf_counter() - start
    main_cpu = time.process_time() - cpu_start
    main_later = time.process_time() - main_after_first
    workers_end = _live_children_cpu()
    wait_end = _run_queue_wait()
    workers_later = (
        workers_end - workers_after_first
        if workers_end is not None and workers_after_first is not None
        else None
    )
    del loader
    gc.collect()  # the loader's iterator goes: its workers are shut down and joined
    result = {
        "records": records,
        "labels": labels,
        "seconds": seconds,
        "first": first_epoch,
        "main_cpu": main_cpu,
        "worker_cpu": _children_cpu() - children_start,
        # after the first epoch: no start-up, persistent workers still alive
        "main_cpu_later": main_later,
        "worker_cpu_later": workers_later if args.child_workers else 0.0,
        # after the first epoch: runnable, but the machine's cores were busy elsewhere
        "run_queue_later": (
            wait_end - wait_after_first
            if wait_end is not None and wait_after_first is not None
            else None
        ),
    }
    print(json.dumps(result))


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--workers", default="0,1,2", help="comma-separated worker counts (0: in-process)"
    )
    p.add_argument("--tensors", default="false,true", help="as_tensors values to run")
    p.add_argument("--handoff", default="shm,pickle", help="shm, pickle or both")
    p.add_argument(
        "--in-order",
        default="true",
        help="DataLoader in_order values to run with workers: true, false or both",
    )
    p.add_argument("--prefetch", type=int, default=2, help="DataLoader prefetch_factor")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--records", type=int, default=60_000)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument(
        "--files",
        type=int,
        default=16,
        help="shards to write the records into (workers split whole files; with 1 file "
        "every worker reads the whole file and keeps its share of the records)",
    )
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    # child mode
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--file", help=argparse.SUPPRESS)
    p.add_argument("--child-workers", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--tensors-one", choices=("false", "true"), help=argparse.SUPPRESS)
    p.add_argument("--in-order-one", choices=("false", "true"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        args.tensors = args.tensors_one == "true"
        args.in_order_one = args.in_order_one != "false"
        child(args)
        return 0

    workers = [int(w) for w in args.workers.split(",")]
    tensors = [t.strip().lower() == "true" for t in args.tensors.split(",")]
    handoffs = [h.strip() for h in args.handoff.split(",")]
    orders = [o.strip().lower() != "false" for o in args.in_order.split(",")]
    cpu_count, affinity = _cores()
    print(
        f"os.cpu_count() = {cpu_count}, cores this run may use (affinity) = {affinity}; "
        f"{args.records:,} records in {args.files} file(s), batch {args.batch}, "
        f"{args.epochs} epochs, "
        f"{args.repeats} repeats, prefetch_factor {args.prefetch}",
        flush=True,
    )
    configs: list[tuple[bool, int, str, bool]] = []
    for t in tensors:
        for w in workers:
            for h in handoffs if w > 0 else ["-"]:
                for o in orders if w > 0 else [True]:
                    configs.append((t, w, h, o))
    runs: dict[tuple[bool, int, str, bool], list[tuple[float, ...]]] = {c: [] for c in configs}
    batches = args.epochs * -(-args.records // args.batch)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mnist.tfrecord")
        check = write_data(path, args.records, args.files)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH", "")]))
        for rep in range(args.repeats):
            for t, w, h, o in configs:
                cmd = [
                    sys.executable,
                    "-m",
                    "benchmarks.bench_dataloader",
                    "--child",
                    "--file",
                    path,
                    "--child-workers",
                    str(w),
                    "--tensors-one",
                    "true" if t else "false",
                    "--handoff",
                    h if w > 0 else "shm",
                    "--epochs",
                    str(args.epochs),
                    "--batch",
                    str(args.batch),
                    "--files",
                    str(args.files),
                    "--prefetch",
                    str(args.prefetch),
                    "--in-order-one",
                    "true" if o else "false",
                ]
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=root)
                if out.returncode != 0:
                    print(out.stderr, file=sys.stderr)
                    raise SystemExit(f"child failed: {' '.join(cmd)}")
                result = json.loads(out.stdout.strip().splitlines()[-1])
                if (
                    result["records"] != args.records * args.epochs
                    or result["labels"] != check * args.epochs
                ):
                    raise SystemExit(f"wrong data from {(t, w, h, o)}: {result}")
                total = result["records"] / result["seconds"]
                later = (
                    args.records * (args.epochs - 1) / (result["seconds"] - result["first"])
                    if args.epochs > 1
                    else total
                )
                main_us = result["main_cpu"] / batches * 1e6
                worker_us = result["worker_cpu"] / batches * 1e6
                later_batches = batches - batches // args.epochs
                if result["worker_cpu_later"] is not None and later_batches:
                    main_us = result["main_cpu_later"] / later_batches * 1e6
                    worker_us = result["worker_cpu_later"] / later_batches * 1e6
                if args.epochs > 1:
                    later_wall_us = (result["seconds"] - result["first"]) / later_batches * 1e6
                else:
                    later_wall_us = result["seconds"] / batches * 1e6
                idle = 1 - (main_us + worker_us) / (affinity * later_wall_us)
                queued = result["run_queue_later"]
                wait_us = (
                    queued / later_batches * 1e6
                    if queued is not None and later_batches
                    else float("nan")
                )
                runs[(t, w, h, o)].append((total, later, main_us, worker_us, idle, wait_us))
                print(
                    f"  repeat {rep + 1}: as_tensors={t!s:5} workers={w:<2} {h:6} "
                    f"{'' if o else 'in_order=False '}"
                    f"{total / 1e3:8.1f} k rec/s all epochs, {later / 1e3:8.1f} after the first; "
                    f"CPU per batch: main {main_us:7.0f} us, workers {worker_us:7.0f} us, "
                    f"idle {idle:4.0%}, runnable but waiting for a core {wait_us:6.0f} us",
                    file=sys.stderr,
                    flush=True,
                )
    print()
    print(
        "| as_tensors | workers | hand-off | in_order | k rec/s, all epochs (median, min-max) "
        "| ratio | k rec/s after epoch 1 (median, min-max) | ratio | CPU us/batch: main "
        f"| workers | CPU-bound k rec/s on {affinity} cores | ratio | idle after epoch 1 "
        "| waiting for a core us/batch |"
    )
    print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    table = []
    bound_base: dict[bool, float] = {}
    for t, w, h, o in configs:
        row: dict[str, Any] = {
            "as_tensors": t,
            "workers": w,
            "handoff": h if w else "in-process",
            "in_order": o,
        }
        cells = []
        for k, name in enumerate(("all_epochs", "after_first")):
            rates = [r[k] for r in runs[(t, w, h, o)]]
            med = statistics.median(rates)
            base_runs = runs.get((t, 0, "-", True))
            base = statistics.median(r[k] for r in base_runs) if base_runs else None
            ratio = med / base if base else None
            row[name] = {"rates": rates, "median": med, "ratio": ratio}
            cells.append(
                f"{med / 1e3:.0f} ({min(rates) / 1e3:.0f}-{max(rates) / 1e3:.0f}) | "
                + (f"{ratio:.2f}x" if ratio else "-")
            )
        main_us = statistics.median(r[2] for r in runs[(t, w, h, o)])
        worker_us = statistics.median(r[3] for r in runs[(t, w, h, o)])
        idle = statistics.median(r[4] for r in runs[(t, w, h, o)])
        waiting = statistics.median(r[5] for r in runs[(t, w, h, o)])
        # What the CPU time alone allows on this many cores, whatever else runs on them:
        # the main process is one core at most, W workers W cores, all of them `affinity`.
        per_batch = max(main_us, worker_us / max(w, 1), (main_us + worker_us) / affinity)
        bound = args.batch / per_batch * 1e6
        if w == 0:
            bound_base[t] = bound
        bound_ratio = bound / bound_base[t] if t in bound_base else None
        row.update(
            main_cpu_us=main_us,
            worker_cpu_us=worker_us,
            cpu_bound=bound,
            idle=idle,
            run_queue_wait_us=waiting,
        )
        cells.append(
            f"{main_us:.0f} | {worker_us:.0f} | {bound / 1e3:.0f} | "
            + (f"{bound_ratio:.2f}x" if bound_ratio else "-")
            + f" | {idle:.0%} | {waiting:.0f}"
        )
        order = "-" if w == 0 else str(o)
        print(f"| {t} | {w} | {row['handoff']} | {order} | " + " | ".join(cells) + " |")
        table.append(row)
    print(f"\ncores: os.cpu_count() = {cpu_count}, affinity = {affinity}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "cpu_count": cpu_count,
                    "affinity": affinity,
                    "args": vars(args),
                    "results": table,
                },
                f,
                indent=2,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
