"""Run the benchmarks and write ``benchmarks/RESULTS.md`` and ``benchmarks/results.json``.

    python -m benchmarks.run [--quick] [--peers] [--tasks T ...] [--out benchmarks/RESULTS.md]
    python -m benchmarks.run --render results.json [RESULTS.md]   # re-render saved numbers

Every (task, implementation) runs in its own child process per repetition, so
imports, TensorFlow's thread pools and peak RSS never leak from one run into the
next. Implementations alternate (A B C A B C ...) so that drift on a shared,
noisy machine hits them alike. Inside a child the variants first run in turn,
untimed, for a few seconds (``tasks.WARMUP_S``: imports, the page cache, the compiled
kernels' background load), then each is timed repeatedly
for ``--min-time`` seconds and the child reports its median; across children the
report gives the median, min and max. Rates are records/s (``krec/s``) or bytes
of the file per second (``MB/s``, 10^6 bytes).

Columns: ``tfrecord_lite`` (CRC backend chosen automatically: the ``fast`` extra
when installed), ``tfrecord_lite (crcmod)`` (``TFRECORD_LITE_CRC_BACKEND=crcmod``:
what users without the ``fast`` extra get), and with ``--peers`` TensorFlow, the
``tfrecord`` package and a naive per-record loop. A name missing from our API
shows as "n/a (missing: name)".

The report replaces the sections it writes (:data:`OWNED_SECTIONS`); any other ``## ``
section of the file it overwrites (a hand-written one, such as "Threads", measured by
another script) is kept verbatim after them. ``--render JSON`` prints the report; with a
file after it, it rewrites that file the same way.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.metadata
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from . import data, tasks
from .tasks import TASKS, TaskInfo

ROOT = Path(__file__).resolve().parent.parent
CRC_ENV = "TFRECORD_LITE_CRC_BACKEND"


@dataclass(frozen=True)
class Column:
    """One column of the report: an implementation run in a given environment."""

    key: str
    impl: str
    env: dict[str, str] = field(default_factory=dict)
    ours: bool = False
    peer: bool = False
    module: Optional[str] = None  # must be importable (checked without importing it)


COLUMNS = [
    Column("tfrecord_lite", "tfrecord_lite", ours=True),
    Column("tfrecord_lite (crcmod)", "tfrecord_lite", {CRC_ENV: "crcmod"}, ours=True),
    Column("tensorflow", "tensorflow", peer=True, module="tensorflow"),
    Column("tfrecord", "tfrecord", peer=True, module="tfrecord"),
    Column("naive", "naive", peer=True),
    Column("machine", "machine"),
]
PEER_TITLES = {"tensorflow": "TensorFlow", "tfrecord": "tfrecord (PyPI)", "naive": "naive loop"}
#: The sections :func:`render` writes, by the start of their ``## `` titles (some end with
#: the run's numbers). Any other section of the file the report replaces is hand-written and
#: kept (:func:`keep_hand_written`).
OWNED_SECTIONS = (
    "tfrecord_lite (CRC backend:",
    "GZIP: deflate and inflate backends",
    "Taxi-like data beside the real TFX shards",
    "Without the `fast` extra (TFRECORD_LITE_CRC_BACKEND=crcmod)",
    "Machine limits (ImageNet-like file, page cache)",
    "Streaming a big file: peak RSS (",
    "Every variant",
    "Data",
    "Environment",
    "Method",
)
#: The tasks the crcmod column (no `fast` extra) runs: the CRC-bound ones.
CRCMOD_TASKS = {"mnist_raw", "mnist_parse", "mnist_write", "imagenet_raw", "gzip_raw", "stream_rss"}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- running


def run_child(task: str, col: Column, args: argparse.Namespace) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop(CRC_ENV, None)
    env.update(col.env)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.tasks",
        "--task",
        task,
        "--impl",
        col.impl,
        "--data-dir",
        str(args.data_dir),
        "--work-dir",
        str(args.data_dir / "out"),
        "--min-time",
        str(args.min_time),
        "--max-inner",
        str(args.max_inner),
    ]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.timeout
        )
    except subprocess.TimeoutExpired:
        return {"status": "error", "error": f"timed out after {args.timeout:g} s"}
    wall = time.perf_counter() - t0
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(tasks.RESULT_PREFIX):
            result: dict[str, Any] = json.loads(line[len(tasks.RESULT_PREFIX) :])
            result["wall_s"] = wall
            return result
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"status": "error", "error": f"child exited {proc.returncode}: {tail[0][:300]}"}


def expected(task: TaskInfo, manifest: dict[str, Any]) -> Optional[tuple[int, int]]:
    """(records, checksum) every implementation must report, or None."""
    sets = manifest["datasets"]
    entry = sets[task.dataset]
    if task.check == "payload":
        return entry["records"], entry["payload_bytes"]
    if task.check == "label":
        return entry["records"], entry["check"]
    if task.check == "written":
        return entry["records"], entry["payload_bytes"]
    return None


def validate(task: TaskInfo, result: dict[str, Any], manifest: dict[str, Any]) -> None:
    """Turn a result whose counts or checksums are wrong into a "wrong" status."""
    want = expected(task, manifest)
    if result.get("status") != "ok" or want is None or result.get("impl") == "machine":
        return
    for name, v in result["variants"].items():
        if (v["records"], v["check"]) != want:
            result["status"] = "wrong"
            result["error"] = (
                f"{name}: got {v['records']} records, checksum {v['check']}; "
                f"expected {want[0]}, {want[1]}"
            )
            return


def rate(task: TaskInfo, variant: dict[str, Any]) -> float:
    """The child's median rate for one variant, in the task's unit."""
    t = float(statistics.median(variant["times"]))
    if task.unit == "krec/s":
        return float(variant["records"]) / t / 1e3
    return float(variant["nbytes"]) / t / 1e6


# --------------------------------------------------------------------------- statistics


def summarize(task: TaskInfo, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per variant: median / min / max rate over the runs, and RSS figures."""
    ok = [r for r in runs if r.get("status") == "ok"]
    if not ok:
        last = runs[-1] if runs else {"status": "not run"}
        status = last.get("status", "error")
        if status == "missing":
            text = f"n/a (missing: {last.get('missing')})"
        elif status == "not installed":
            text = "not installed"
        else:
            text = f"{status}: {last.get('error', '')}"
        return {"status": status, "text": text}
    variants: dict[str, Any] = {}
    for name in ok[0]["variants"]:
        rates = [rate(task, r["variants"][name]) for r in ok if name in r["variants"]]
        sizes = [r["variants"][name].get("out_bytes") for r in ok if name in r["variants"]]
        sizes = [x for x in sizes if x is not None]
        variants[name] = {
            "median": statistics.median(rates),
            "min": min(rates),
            "max": max(rates),
            "reps": len(rates),
            "rates": rates,
            "out_bytes": statistics.median(sizes) if sizes else None,
            "note": ok[0]["variants"][name].get("note", ""),
        }
    growth = [(r["maxrss_kb"] - r["rss_before_kb"]) / 1024 for r in ok]
    return {
        "status": "ok",
        "variants": variants,
        "crc_backend": ok[0].get("crc_backend"),
        "peak_rss_mib": statistics.median(r["maxrss_kb"] / 1024 for r in ok),
        "rss_growth_mib": statistics.median(growth),
        "setup_s": statistics.median(r.get("setup_s", 0.0) for r in ok),
    }


def best_variant(summary: dict[str, Any], prefer: Optional[str] = None) -> Optional[str]:
    if summary.get("status") != "ok":
        return None
    variants = summary["variants"]
    if prefer is not None and prefer in variants:
        return prefer
    return str(max(variants, key=lambda v: variants[v]["median"]))


def value(summary: dict[str, Any], prefer: Optional[str] = None) -> Optional[float]:
    v = best_variant(summary, prefer)
    return None if v is None else float(summary["variants"][v]["median"])


def machine_limits(results: dict[str, Any]) -> dict[str, float]:
    """Best file read and each CRC backend's speed, MB/s (measured beside imagenet_raw)."""
    summary = results.get("imagenet_raw", {}).get("machine")
    if not summary or summary.get("status") != "ok":
        return {}
    out: dict[str, float] = {}
    for name, v in summary["variants"].items():
        if name.startswith("file read"):
            out["file read"] = max(out.get("file read", 0.0), v["median"])
        elif name.startswith("crc32c "):
            out[name[len("crc32c ") :]] = v["median"]
    return out


def judge(
    task: TaskInfo, ours: dict[str, Any], tf: Optional[dict[str, Any]], limits: dict[str, float]
) -> dict[str, Any]:
    """Ratio to TensorFlow and the target verdict for one of our columns."""
    out: dict[str, Any] = {"ratio_tf": None, "verdict": "", "detail": ""}
    mine = value(ours, task.ours_ref)
    tf_value = value(tf, task.tf_ref) if tf else None
    if mine is not None and tf_value:
        out["ratio_tf"] = mine / tf_value
    if mine is None:
        out["verdict"] = "n/a"
        return out
    if task.target_kind == "tf":
        if out["ratio_tf"] is None:
            out["verdict"] = "no TF"
        else:
            out["verdict"] = "met" if out["ratio_tf"] >= task.target_value else "missed"
    elif task.target_kind == "limit":
        backend = ours.get("crc_backend")
        if "file read" in limits and backend in limits:
            limit = min(limits["file read"], limits[backend])
            out["ratio_limit"] = mine / limit
            out["detail"] = f"{mine / limit:.0%} of {fmt(limit)} MB/s ({backend})"
            out["verdict"] = "met" if mine >= task.target_value * limit else "missed"
        else:
            out["verdict"] = "no limits"
    elif task.target_kind == "rss":
        growth = ours["rss_growth_mib"]
        out["detail"] = f"peak RSS +{growth:.0f} MiB"
        out["verdict"] = "met" if growth <= task.target_value else "missed"
    return out


# --------------------------------------------------------------------------- report


def fmt(x: Optional[float]) -> str:
    if x is None:
        return "–"
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def cell(summary: Optional[dict[str, Any]], prefer: Optional[str] = None) -> str:
    if summary is None:
        return "–"
    if summary.get("status") != "ok":
        return str(summary.get("text", summary.get("status")))
    return fmt(value(summary, prefer))


def environment(args: argparse.Namespace) -> dict[str, Any]:
    def version(dist: str) -> Optional[str]:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    try:
        from google.protobuf.internal import api_implementation

        pb_impl = api_implementation.Type()
    except Exception:
        pb_impl = "unknown"
    import tfrecord_lite as tfr

    try:
        rev = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        rev = ""
    dists = [
        "tfrecord-lite-np",
        "numba",
        "numpy",
        "protobuf",
        "crcmod",
        "crc32c",
        "google-crc32c",
        "tensorflow-cpu",
        "tensorflow",
        "tfrecord",
        "isal",
        "zlib-ng",
    ]
    try:
        from tfrecord_lite._files import _compress

        deflate = _compress.deflate_backend()
        deflate_all = _compress.available_deflate_backends()
    except Exception:
        deflate, deflate_all = "zlib", ["zlib"]
    return {
        "deflate_backend": deflate,
        "deflate_backends_available": deflate_all,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "git": rev,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory": mem,
        "packages": {d: version(d) for d in dists if version(d)},
        "protobuf_implementation": pb_impl,
        "crc_backend": tfr.crc_backend(),
        "crc_backends_available": tfr.available_crc_backends(),
        "args": " ".join(sys.argv[1:]),
        "load_average": _load(),
    }


def _load() -> Optional[str]:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg()) + " (1 / 5 / 15 min)"
    except OSError:
        return None


def extra_sections(report: dict[str, Any]) -> list[str]:
    """Parse rate as a share of raw read, the deflate backends, the taxi-like data check."""
    results = report["results"]
    lines: list[str] = []
    add = lines.append
    parse_task, raw_task, target = tasks.PARSE_OF_RAW
    if parse_task in results and raw_task in results:
        p = value(results[parse_task].get("tfrecord_lite", {}))
        r = value(results[raw_task].get("tfrecord_lite", {}))
        if p and r:
            verdict = "met" if p / r >= target else "missed"
            add(
                f"**Our MNIST-like parse rate is {p / r:.0%} of our raw-read rate** "
                f"({fmt(p)} vs {fmt(r)} krec/s; target >= {target:.0%}: {verdict})."
            )
            add("")

    gz_write = results.get("gzip_write", {})
    ours, tf = gz_write.get("tfrecord_lite"), gz_write.get("tensorflow")
    gz_read = results.get("gzip_raw", {}).get("tfrecord_lite")
    if ours and ours.get("status") == "ok":
        add("## GZIP: deflate and inflate backends")
        add("")
        add(
            "Writing the taxi-like records (GZIP, TensorFlow's default options) with each "
            "backend, selected per writer by `TFRECORD_LITE_DEFLATE_BACKEND`; `auto` is the "
            "default (the fastest of ISA-L 1 and zlib-ng one or two levels below the level "
            "asked for whose output is within 3% of zlib's on the writer's first 128 KiB, "
            "else zlib-ng at that level; ISA-L and zlib-ng deflate 1 MiB chunks on a thread "
            "per core). Size ratio = compressed size / TensorFlow's."
        )
        add("")
        tf_size = None
        if tf and tf.get("status") == "ok":
            tf_size = next(iter(tf["variants"].values()))["out_bytes"]
        tf_rate = value(tf) if tf else None
        add("| Writer | krec/s | vs TF | compressed bytes | size vs TF | encoder used |")
        add("|---|---|---|---|---|---|")
        rows = [(f"tfrecord_lite {k}", v) for k, v in ours["variants"].items()]
        if tf and tf.get("status") == "ok":
            rows += [(f"TensorFlow {k}", v) for k, v in tf["variants"].items()]
        for label, v in rows:
            speed = f"{v['median'] / tf_rate:.2f}x" if tf_rate else "–"
            size = v.get("out_bytes")
            ratio = f"{size / tf_size:.3f}" if size and tf_size else "–"
            add(
                f"| {label} | {fmt(v['median'])} | {speed} | "
                f"{f'{size:,.0f}' if size else '–'} | {ratio} | {v.get('note') or '–'} |"
            )
        add("")
        if gz_read and gz_read.get("status") == "ok":
            tf_read = results["gzip_raw"].get("tensorflow")
            tf_iter = value(tf_read, "tf_record_iterator") if tf_read else None
            add("| GZIP MNIST read (`tf_record_iterator`) | krec/s | vs TF |")
            add("|---|---|---|")
            for k, v in gz_read["variants"].items():
                label = k.replace("tf_record_iterator", "tfrecord_lite")
                if "(" not in label:
                    label += " (auto)"
                vs = f"{v['median'] / tf_iter:.2f}x" if tf_iter else "–"
                add(f"| {label} | {fmt(v['median'])} | {vs} |")
            if tf_iter:
                add(f"| TensorFlow | {fmt(tf_iter)} | 1.00x |")
            add("")

    check = report.get("taxi_check")
    if check:
        add("## Taxi-like data beside the real TFX shards")
        add("")
        add(
            f"`benchmarks/data.py` generates the taxi-like set; here it is set beside "
            f"the two real GZIP shards of TFX's Chicago taxi test data "
            f"({check['real']['records']:,} records, first as many of ours). Missing = key "
            "absent, empty `Feature`, or empty list. Same kinds, same features sometimes "
            "missing, mean record size within 25%: "
            f"**{'yes' if check['ok'] else 'NO'}** (size ratio {check['size_ratio']:.2f})."
        )
        add("")
        add(data.taxi_table(check))
        add("")
    return lines


def _busy(load: Optional[str], cpus: Any) -> Optional[str]:
    """The 1-minute load average, if it exceeded the core count (else None)."""
    try:
        first = float(str(load).split("/")[0])
    except ValueError:
        return None
    return f"{first:.1f}" if isinstance(cpus, int) and first > cpus else None


def render(report: dict[str, Any]) -> str:
    env = report["environment"]
    results = report["results"]
    judged = report["judged"]
    limits = report["limits"]
    manifest = report["manifest"]["datasets"]
    peers = [c for c in report["columns"] if c in PEER_TITLES]
    lines: list[str] = []
    add = lines.append
    add("# tfrecord_lite benchmarks")
    add("")
    add(
        f"Generated by `python -m benchmarks.run {env['args']}` on {env['date']} "
        f"(git {env['git'] or '?'}); the whole run took {report['elapsed_s'] / 60:.1f} min. "
        "Rates are medians over "
        f"{report['reps']} runs, each in its own process, implementations alternating; "
        "higher is better. `krec/s` = thousands of records per second, `MB/s` = 10^6 bytes "
        "of the file per second. Every reader verifies CRCs except the `tfrecord` package, "
        "which cannot. Ratios are taken within this run."
    )
    add("")
    busy = _busy(report.get("load_start"), env.get("cpus"))
    if busy:
        add(
            f"**The machine was busy during this run** (load average {busy} on "
            f"{env.get('cpus')} cores at the start, from other work): absolute rates are far "
            "below a quiet machine's and single ratios are noisy; compare within a row."
        )
        add("")

    def task_row(name: str) -> TaskInfo:
        return TASKS[name]

    # Main table.
    backend = env["crc_backend"]
    add(f"## tfrecord_lite (CRC backend: {backend})")
    add("")
    header = ["Task", "Unit", "tfrecord_lite", *[PEER_TITLES[p] for p in peers]]
    header += ["ours / TF", "Target", "Result"]
    add("| " + " | ".join(header) + " |")
    add("|" + "---|" * len(header))
    for name in report["tasks"]:
        task = task_row(name)
        res = results[name]
        j = judged.get(name, {}).get("tfrecord_lite", {})
        row = [task.title, task.unit, cell(res.get("tfrecord_lite"), task.ours_ref)]
        for p in peers:
            prefer = task.tf_ref if p == "tensorflow" else None
            row.append(cell(res.get(p), prefer))
        ratio = j.get("ratio_tf")
        row.append(f"{ratio:.2f}x" if ratio is not None else "–")
        row.append(task.target_text or "–")
        verdict = j.get("verdict", "")
        row.append(verdict + (f" ({j['detail']})" if j.get("detail") else ""))
        add("| " + " | ".join(row) + " |")
    add("")

    lines.extend(extra_sections(report))

    # crcmod-only table.
    add("## Without the `fast` extra (TFRECORD_LITE_CRC_BACKEND=crcmod)")
    add("")
    header = [
        "Task",
        "Unit",
        "tfrecord_lite (crcmod)",
        "TensorFlow",
        "ours / TF",
        "Target",
        "Result",
    ]
    add("| " + " | ".join(header) + " |")
    add("|" + "---|" * len(header))
    for name in report["tasks"]:
        if name not in CRCMOD_TASKS:
            continue
        task = task_row(name)
        res = results[name]
        j = judged.get(name, {}).get("tfrecord_lite (crcmod)", {})
        ratio = j.get("ratio_tf")
        verdict = j.get("verdict", "")
        row = [
            task.title,
            task.unit,
            cell(res.get("tfrecord_lite (crcmod)")),
            cell(res.get("tensorflow"), task.tf_ref),
            f"{ratio:.2f}x" if ratio is not None else "–",
            task.target_text or "–",
            verdict + (f" ({j['detail']})" if j.get("detail") else ""),
        ]
        add("| " + " | ".join(row) + " |")
    add("")

    # Machine limits.
    add("## Machine limits (ImageNet-like file, page cache)")
    add("")
    add(
        "Timed in the same alternation as the ImageNet-like raw read (the `machine` runs): "
        "`readinto` of the whole file into a preallocated buffer, and CRC32C of its bytes "
        "in 128 KiB pieces with each backend."
    )
    add("")
    lim = results.get("imagenet_raw", {}).get("machine")
    if lim and lim.get("status") == "ok":
        add("| Reference | MB/s median | min | max |")
        add("|---|---|---|---|")
        for vname, v in lim["variants"].items():
            label = vname.replace("file read", "file `readinto` preallocated buffer,")
            label = label.replace("crc32c ", "CRC32C, backend ")
            add(f"| {label} | {fmt(v['median'])} | {fmt(v['min'])} | {fmt(v['max'])} |")
        if limits:
            add("")
            add(
                "The ImageNet raw target is 70% of min(file read, CRC of the backend in use): "
                + ", ".join(f"{k} {fmt(v)} MB/s" for k, v in limits.items())
                + "."
            )
    else:
        add(cell(lim) if lim else "not measured")
    add("")

    # Streaming RSS.
    if "stream_rss" in results:
        big = manifest.get("big", {})
        add(
            f"## Streaming a big file: peak RSS ({big.get('file_bytes', 0) / 2**30:.2f} GiB, "
            f"{big.get('records', 0):,} records)"
        )
        add("")
        add(
            "Peak RSS growth = the process's peak resident set during the read minus its RSS "
            "just before (after imports and set-up). The peak is `VmHWM`, reset before the "
            "read (`/proc/self/clear_refs`): it is `ru_maxrss` for this process alone, since "
            "Linux carries `ru_maxrss` over `exec` from the runner. Flat = independent of the "
            "file's size (the file is far larger than any buffer)."
        )
        add("")
        add("| Implementation | MB/s | peak RSS growth (MiB) | peak RSS, VmHWM (MiB) |")
        add("|---|---|---|---|")
        for col, s in results["stream_rss"].items():
            if s.get("status") == "ok":
                add(f"| {col} | {cell(s)} | {s['rss_growth_mib']:.1f} | {s['peak_rss_mib']:.0f} |")
            else:
                add(f"| {col} | {cell(s)} | – | – |")
        add("")

    # Details.
    add("## Every variant")
    add("")
    add(
        "Median [min – max] over runs; setup (imports, pipeline construction) and a "
        f"{tasks.WARMUP_S:g} s warm-up of each run (every variant in turn) are not timed."
    )
    add("")
    add("| Task | Implementation | Variant | Rate | Unit | Runs | Peak RSS MiB |")
    add("|---|---|---|---|---|---|---|")
    for name in report["tasks"]:
        task = task_row(name)
        for col, s in results[name].items():
            if s.get("status") != "ok":
                add(f"| {name} | {col} | | {cell(s)} | | | |")
                continue
            for vname, v in s["variants"].items():
                add(
                    f"| {name} | {col} | {vname} | {fmt(v['median'])} "
                    f"[{fmt(v['min'])} – {fmt(v['max'])}] | {task.unit} | {v['reps']} | "
                    f"{s['peak_rss_mib']:.0f} |"
                )
    add("")

    # Data and environment.
    add("## Data")
    add("")
    add("| Data set | File | Records | File MB | Mean record B |")
    add("|---|---|---|---|---|")
    for dname, e in manifest.items():
        files = e.get("files", [e["file"]])
        name = e["file"] + (f" (+{len(files) - 1} shards)" if len(files) > 1 else "")
        add(
            f"| {dname} | {name} | {e['records']:,} | {e['file_bytes'] / 1e6:.1f} | "
            f"{e['payload_bytes'] / max(e['records'], 1):,.0f} |"
        )
    add("")
    add("## Environment")
    add("")
    for key in ("python", "platform", "cpu", "cpus", "cpus_usable", "memory"):
        add(f"- {key}: {env[key]}")
    add(
        f"- load average at the start: {report['load_start'] or '?'}; at the end: "
        f"{env['load_average'] or '?'} (other work on the machine slows every column alike, "
        "but widens the min – max spread)"
    )
    add(f"- protobuf implementation: {env['protobuf_implementation']}")
    add(
        f"- tfrecord_lite CRC backend: {env['crc_backend']} "
        f"(available: {', '.join(env['crc_backends_available'])})"
    )
    add(
        f"- tfrecord_lite deflate backend: {env.get('deflate_backend', '?')} (available: "
        f"{', '.join(env.get('deflate_backends_available', []))})"
    )
    add("- packages: " + ", ".join(f"{k} {v}" for k, v in env["packages"].items()))
    add("")
    add("## Method")
    add("")
    add(
        "Tasks and implementations are in `benchmarks/tasks.py`, data generation in "
        "`benchmarks/data.py`. Where an implementation has several variants (see the table "
        "above) its column shows its best median: for TensorFlow's parse tasks that is the "
        "best `tf.data` pipeline (`TFRecordDataset(files).batch(n).map(parse_example)`, with "
        "and without `prefetch(AUTOTUNE)` and `num_parallel_calls=AUTOTUNE`), for ours the "
        "best of `batch(n)` + `parse_example` and the dataset's own `parse(spec).batch(n)` "
        "(with and without `prefetch`, and with `num_parallel_calls=AUTOTUNE`, as tf.data's "
        "side has it), n = 1024 or 256; SequenceExamples go through "
        "`parse_sequence_example` on both sides. The taxi-like and transformed sets are four "
        "GZIP shards each, parsed with TFX's kind of spec (`VarLenFeature` for the features "
        "that can be missing, `FixedLenFeature([])` for the others); so are the real TFX "
        "taxi shards (`tfx_taxi`, two GZIP shards from `--real-taxi`, run only where that "
        "directory exists). For every GZIP set (and `mnist_gzip`: the MNIST-like "
        "records in one GZIP file, no target) ours also runs `parse(spec).batch(n)` with "
        "`TFRECORD_LITE_THREADS=1`: the file inflated inline instead of in a background "
        "thread (the default when a dataset parses a local GZIP file). Raw reads are compared "
        "with `tf.compat.v1.io.tf_record_iterator`, as the targets say; GZIP read and write "
        "use our default (`auto`) backend for the ratio, the other backends are shown beside "
        "it. The MNIST write task starts from NumPy arrays (784-byte uint8 images, int64 "
        "labels, int64 dims) and includes building each record; the GZIP write task writes "
        "the taxi-like records (already serialized) with TensorFlow's default options. Each "
        "run's counts and checksums (records, payload bytes or label sums) are checked "
        "against the data manifest, and every written file is read back."
    )
    add("")
    return "\n".join(lines)


def _sections(text: str) -> list[tuple[str, str]]:
    """``(title, text)`` of each ``## `` section of a Markdown report, in order (the text
    runs to the next ``## `` heading; what comes before the first is left out)."""
    out: list[tuple[str, list[str]]] = []
    fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        if line.startswith("## ") and not fence:
            out.append((line[3:].strip(), [line]))
        elif out:
            out[-1][1].append(line)
    return [(title, "\n".join(lines).rstrip("\n")) for title, lines in out]


def _owned(title: str) -> bool:
    """Whether :func:`render` writes the section of this title (an entry of
    :data:`OWNED_SECTIONS` that ends with ``:`` or ``(`` is the start of its titles)."""
    return any(
        title == t or (t.endswith((":", "(")) and title.startswith(t)) for t in OWNED_SECTIONS
    )


def keep_hand_written(report: str, previous: Optional[str]) -> str:
    """``report`` followed by the sections of ``previous`` (the file it replaces) that
    :func:`render` does not write, verbatim and in their order."""
    kept = [text for title, text in _sections(previous or "") if not _owned(title)]
    if not kept:
        return report
    return report.rstrip("\n") + "\n\n" + "\n\n".join(kept) + "\n"


def _write_report(path: Path, report: str) -> None:
    """Write ``report`` to ``path``, keeping the hand-written sections already there."""
    previous = path.read_text() if path.exists() else None
    path.write_text(keep_hand_written(report, previous))


def wanted(task: str, col: Column) -> bool:
    """Whether a column runs a task (the crcmod column only runs the CRC-bound tasks)."""
    return CRC_ENV not in col.env or task in CRCMOD_TASKS


# --------------------------------------------------------------------------- main


def parse_args(argv: Optional[list[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smaller files, 3 runs, shorter timing")
    p.add_argument("--peers", action="store_true", help="also TensorFlow, tfrecord, naive loop")
    p.add_argument("--tasks", nargs="+", choices=sorted(TASKS), help="only these tasks")
    p.add_argument("--impls", nargs="+", help="only these columns (e.g. tfrecord_lite tensorflow)")
    p.add_argument("--reps", type=int, help="runs per implementation (default 5, quick 3)")
    p.add_argument("--min-time", type=float, help="seconds of timing per variant per run")
    p.add_argument("--max-inner", type=int, default=50, help="max timed calls per run")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per child process")
    p.add_argument("--data-dir", type=Path, default=data.DATA_DIR)
    p.add_argument(
        "--real-taxi",
        type=Path,
        default=ROOT.parent / "shared" / "data" / "tfx-taxi",
        help="real TFX taxi shards: compared with the taxi-like data, and parsed as the "
        "tfx_taxi tasks (left out when the directory is not there)",
    )
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "RESULTS.md")
    p.add_argument("--json", type=Path, help="raw numbers (default: results.json beside --out)")
    args = p.parse_args(argv)
    if args.reps is None:
        args.reps = 3 if args.quick else 5
    if args.min_time is None:
        args.min_time = 0.2 if args.quick else 0.5
    if args.json is None:
        args.json = args.out.with_name("results.json")
    args.data_dir = args.data_dir.resolve()
    return args


def main(argv: Optional[list[str]] = None) -> int:
    if argv is None and len(sys.argv) in (3, 4) and sys.argv[1] == "--render":
        # Render a results.json again (after a change to the report's layout).
        report = json.loads(Path(sys.argv[2]).read_text())
        if len(sys.argv) == 4:
            _write_report(Path(sys.argv[3]), render(report))
        else:
            sys.stdout.write(render(report))
        return 0
    args = parse_args(argv)
    start = time.perf_counter()
    load_start = _load()
    manifest = data.prepare(args.quick, args.data_dir, log=log, real_taxi=args.real_taxi)
    task_names = [t for t in TASKS if not args.tasks or t in args.tasks]
    absent = [t for t in task_names if TASKS[t].dataset not in manifest["datasets"]]
    if absent:
        log(f"left out (their data is not here: see --real-taxi): {', '.join(absent)}")
        task_names = [t for t in task_names if t not in absent]
    columns = [
        c for c in COLUMNS if (args.peers or not c.peer) and (not args.impls or c.key in args.impls)
    ]
    installed = {
        c.key: c.module is None or importlib.util.find_spec(c.module) is not None for c in columns
    }
    # Warm the page cache: every task reads its file from memory, not disk.
    for name in {TASKS[t].dataset for t in task_names}:
        entry = manifest["datasets"][name]
        for file in entry.get("files", [entry["file"]]):
            with open(args.data_dir / file, "rb") as f:
                while f.read(8 * 2**20):
                    pass

    plan = {
        t: [c for c in columns if (t, c.impl) in tasks.IMPLS and installed[c.key] and wanted(t, c)]
        for t in task_names
    }
    total = sum(len(cols) for cols in plan.values()) * args.reps
    done = 0
    raw: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for t in task_names:
        task = TASKS[t]
        raw[t] = {c.key: [] for c in columns if (t, c.impl) in tasks.IMPLS and wanted(t, c)}
        active = list(plan[t])
        for rep in range(args.reps):
            for col in list(active):
                result = run_child(t, col, args)
                validate(task, result, manifest)
                raw[t][col.key].append(result)
                done += 1
                if result.get("status") == "ok":
                    rates = ", ".join(
                        f"{v} {fmt(rate(task, d))}" for v, d in result["variants"].items()
                    )
                    msg = f"{rates} {task.unit}"
                else:
                    msg = result.get("missing") or result.get("error", "")
                    msg = f"{result.get('status')}: {msg}"
                    active.remove(col)  # a missing name or an error will not go away
                log(f"[{done:3d}/{total}] {t} rep {rep + 1}/{args.reps} {col.key}: {msg}")
        for c in columns:
            if (t, c.impl) in tasks.IMPLS and wanted(t, c) and not installed[c.key]:
                raw[t][c.key] = [{"status": "not installed"}]

    results = {
        t: {col: summarize(TASKS[t], runs) for col, runs in cols.items()} for t, cols in raw.items()
    }
    limits = machine_limits(results)
    judged = {
        t: {
            c.key: judge(TASKS[t], results[t][c.key], results[t].get("tensorflow"), limits)
            for c in columns
            if c.ours and c.key in results[t]
        }
        for t in task_names
    }
    taxi_check = None
    real_taxi = args.real_taxi
    if "taxi" in {TASKS[t].dataset for t in task_names} and real_taxi.is_dir():
        try:
            taxi_check = data.compare_taxi(real_taxi, args.data_dir)
        except Exception as err:  # reported, not fatal
            log(f"taxi-like check failed: {err}")
    report = {
        "environment": environment(args),
        "taxi_check": taxi_check,
        "elapsed_s": time.perf_counter() - start,
        "load_start": load_start,
        "reps": args.reps,
        "quick": args.quick,
        "tasks": task_names,
        "columns": [c.key for c in columns],
        "task_info": {t: vars(TASKS[t]) for t in task_names},
        "manifest": manifest,
        "limits": limits,
        "judged": judged,
        "results": results,
        "runs": raw,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    _write_report(args.out, render(report))
    args.json.write_text(json.dumps(report, indent=1, default=str) + "\n")
    log(f"wrote {args.out} and {args.json} in {report['elapsed_s'] / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
