"""Cold start: what an empty numba cache costs a fresh process.

Each case runs in a fresh process, in four settings, interleaved (one round runs
every setting once, then the next round):

- ``cold-env``: ``NUMBA_CACHE_DIR`` an empty folder (a new one each run);
- ``cold-default``: no ``NUMBA_CACHE_DIR``, the default place emptied (a copy of the
  package whose ``__pycache__`` holds no compiled kernels: the tree others use is
  left alone);
- ``warm``: ``NUMBA_CACHE_DIR`` a folder a earlier process has filled;
- ``numpy``: ``TFRECORD_LITE_ENGINE=numpy`` (numba never imported).

Cases: ``tfrecord-lite schema`` on one GZIP taxi shard (the real TFX one where it is
given, else the benchmarks' taxi-like shard); the first ``tfr.io.parse_example`` of
1024 taxi-like records (the time from the process' start to the first result, and the
whole process); the first 10 batches of 1024 of a ``TFRecordDataset``; ``python -m
tfrecord_lite.demo``'s first write rate. After each cold run the compile it started in
the background is waited for (so that it does not take the cores from the next run);
its length is printed too.

    python -m benchmarks.bench_cold_start [--repeats 5] [--shard PATH] [--cases ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
#: The runs' folder: not the checkout (``python -c`` would import the package from it).
CWD = tempfile.gettempdir()
REAL_SHARD = ROOT.parent / "shared" / "data" / "tfx-taxi" / "data_tfrecord-00000-of-00002.gz"

FIRST_PARSE = """
import os, sys, time
spawn = float(os.environ["BENCH_SPAWN"])
import tfrecord_lite as tfr
from benchmarks.data import TAXI_SPEC
records = list(tfr.tf_record_iterator(sys.argv[1]))[:1024]
spec = {n: (tfr.io.VarLenFeature if v == "var" else (lambda d: tfr.io.FixedLenFeature([], d)))(
    {"int64": tfr.int64, "float": tfr.float32, "float32": tfr.float32, "bytes": tfr.string}[k])
    for n, k, v in TAXI_SPEC}
t0 = time.time()
out = tfr.io.parse_example(records, spec)
t1 = time.time()
print(json.dumps({"first": t1 - spawn, "parse": t1 - t0, "numba": "numba" in sys.modules}))
""".replace("import os, sys, time", "import json, os, sys, time")

TEN_BATCHES = """
import json, os, sys, time
spawn = float(os.environ["BENCH_SPAWN"])
import tfrecord_lite as tfr
from benchmarks.data import TAXI_SPEC
spec = {n: (tfr.io.VarLenFeature if v == "var" else (lambda d: tfr.io.FixedLenFeature([], d)))(
    {"int64": tfr.int64, "float": tfr.float32, "float32": tfr.float32, "bytes": tfr.string}[k])
    for n, k, v in TAXI_SPEC}
ds = tfr.TFRecordDataset(sys.argv[1]).batch(1024).parse(spec)
marks = []
for i, batch in enumerate(ds):
    marks.append(time.time() - spawn)
    if i == 9:
        break
print(json.dumps({"first": marks[0], "tenth": marks[-1], "numba": "numba" in sys.modules}))
"""


def _compiles(tag: str) -> list[int]:
    """Processes whose command line names ``tag`` (the compile a cold run started)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if tag.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _wait_compiles(tag: str, limit: float = 300) -> float:
    start = time.monotonic()
    while _compiles(tag) and time.monotonic() - start < limit:
        time.sleep(0.1)
    return time.monotonic() - start


class Settings:
    def __init__(self, work: Path, root: Path) -> None:
        self.work = work
        self.root = root
        work.mkdir(parents=True, exist_ok=True)
        self.base = {
            k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "TFRECORD_LITE"))
        }
        self.base["PYTHONPATH"] = str(root)
        self.warm_dir = work / "warm-cache"
        self.copy = work / "copy"
        shutil.copytree(
            root / "tfrecord_lite",
            self.copy / "tfrecord_lite",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        self.n = 0

    def env(self, mode: str) -> tuple[dict[str, str], Optional[str]]:
        """The environment of one run in ``mode``, and the tag of its compile process."""
        env = dict(self.base)
        self.n += 1
        if mode == "cold-env":
            where = self.work / f"cold-{self.n}"
            env["NUMBA_CACHE_DIR"] = str(where)
            return env, str(where)
        if mode == "cold-default":
            cache = self.copy / "tfrecord_lite" / "_examples" / "_engines" / "__pycache__"
            for old in cache.glob("kernels-*"):
                shutil.rmtree(old)
            env["PYTHONPATH"] = os.pathsep.join([str(self.copy), str(self.root)])
            return env, str(cache)
        if mode == "warm":
            env["NUMBA_CACHE_DIR"] = str(self.warm_dir)
            return env, None
        if mode == "numpy":
            env["TFRECORD_LITE_ENGINE"] = "numpy"
            return env, None
        raise ValueError(mode)


def run(cmd: list[str], env: dict[str, str], tag: Optional[str]) -> dict[str, Any]:
    env = dict(env, BENCH_SPAWN=repr(time.time()))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=CWD)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # (the compile a cold run starts outlives it: its CPU is not counted here)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if out.returncode:
        raise RuntimeError(f"{cmd} failed: {out.stderr[-2000:]}")
    result: dict[str, Any] = {"wall": wall, "cpu": cpu}
    last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    if last.startswith("{"):
        result.update(json.loads(last))
    rate = re.search(r"write ([\d,]+)k records/s", out.stdout)
    if rate:
        result["write_k"] = float(rate.group(1).replace(",", ""))
    if tag is not None:
        result["compile_after"] = _wait_compiles(tag)
    return result


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--tree",
        action="append",
        help="NAME=PATH: a checkout to run (its tfrecord_lite and benchmarks); repeat to "
        "interleave several (default: this one)",
    )
    parser.add_argument("--shard", type=Path, default=REAL_SHARD if REAL_SHARD.exists() else None)
    parser.add_argument("--cases", nargs="*", default=["schema", "parse", "batches", "demo"])
    parser.add_argument("--modes", nargs="*", default=["cold-env", "cold-default", "warm", "numpy"])
    args = parser.parse_args(argv)
    print(
        f"load average {os.getloadavg()}, cpu_count {os.cpu_count()}, python {sys.version.split()[0]}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
        work = Path(tmp)
        sys.path.insert(0, str(ROOT))
        import tfrecord_lite as tfr
        from benchmarks.data import taxi_records

        records, _ = taxi_records(10240)
        results: dict[tuple[str, str], list[dict[str, Any]]]
        taxi = work / "taxi.tfrecord"
        with tfr.TFRecordWriter(str(taxi)) as w:
            for r in records:
                w.write(r)
        shard = args.shard
        if shard is None:
            shard = work / "data_tfrecord-00000-of-00001.gz"
            with tfr.TFRecordWriter(str(shard), "GZIP") as w:
                for r in records:
                    w.write(r)
        print(f"schema shard: {shard} ({shard.stat().st_size} bytes)")
        trees = dict(t.split("=", 1) for t in args.tree) if args.tree else {"this": str(ROOT)}
        py = sys.executable
        cli = str(Path(py).parent / "tfrecord-lite")
        commands = {
            "schema": [cli, "schema", str(shard)],
            "parse": [py, "-c", FIRST_PARSE, str(taxi)],
            "batches": [py, "-c", TEN_BATCHES, str(taxi)],
            "demo": [py, "-m", "tfrecord_lite.demo", "--out", str(work / "demo-out")],
        }
        fill = (
            "from tfrecord_lite._examples._engines import _kernels\n"
            "for n in _kernels.KERNEL_MODULES: _kernels.load(n)\n"
        )
        every: dict[str, Settings] = {}
        for name, root in trees.items():
            s = every[name] = Settings(work / name, Path(root).resolve())
            # fill the warm cache
            run([py, "-c", fill], dict(s.base, NUMBA_CACHE_DIR=str(s.warm_dir)), None)
        for case in args.cases:
            results = {(t, m): [] for t in every for m in args.modes}
            for _ in range(args.repeats):
                for t, s in every.items():
                    for mode in args.modes:
                        env, tag = s.env(mode)
                        results[t, mode].append(run(commands[case], env, tag))
            print(f"\n== {case}  (load average now {os.getloadavg()[0]:.2f})")
            for (t, mode), runs in results.items():
                fields = sorted({k for x in runs for k in x if k != "numba"})
                parts = []
                for k in fields:
                    vals = [x[k] for x in runs if k in x]
                    parts.append(f"{k} {statistics.median(vals):.3f}")
                numba = [x["numba"] for x in runs if "numba" in x]
                if numba:
                    parts.append(f"numba-in-process-at-first {sum(numba)}/{len(numba)}")
                print(f"  {t:6s} {mode:13s} " + ", ".join(parts))
                print("    walls: " + " ".join(f"{x['wall']:.2f}" for x in runs))
        print(f"\nload average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
