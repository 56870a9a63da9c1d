"""Run every atheris fuzz target for a bounded time; report executions and crashes.

    python tests/fuzz/run.py [--time SECONDS] [--only TARGET ...] [--work DIR]

(``make fuzz`` runs it in .venv-fuzz.) For each target: seeds from make_corpus.py,
then libFuzzer for ``--time`` seconds (default 60) with a 10 s per-input timeout
(an input that loops is a crash) and a 2 GiB memory limit. Prints one line per
target (executions, crashes) and a JSON summary in WORK/summary.json; exits 1 if
any target crashed (the crashing inputs are in WORK/<target>/crashes/).

Without atheris (it has no wheel for some Pythons) it says so and runs the
hypothesis properties of tests/test_fuzz_properties.py with many examples instead.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS = [
    "fuzz_framing",
    "fuzz_compressed",
    "fuzz_parse_example",
    "fuzz_parse_sequence_example",
    "fuzz_infer_schema",
    "fuzz_manifest",
    "fuzz_index",
]


def run_target(name: str, seconds: int, work: Path) -> dict[str, object]:
    corpus = work / "corpus" / name
    crashes = work / name / "crashes"
    crashes.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        str(HERE / f"{name}.py"),
        str(corpus),
        f"-max_total_time={seconds}",
        "-timeout=10",
        "-rss_limit_mb=2048",
        "-max_len=65536",
        "-print_final_stats=1",
        f"-artifact_prefix={crashes}/",
    ]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=work, check=False)
    log = proc.stdout + proc.stderr
    (work / name / "log.txt").write_text(log)
    runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log) or re.findall(
        r"Done (\d+) runs", log
    )
    found = sorted(p.name for p in crashes.iterdir())
    return {
        "target": name,
        "executions": int(runs[-1]) if runs else None,
        "seconds": round(time.monotonic() - started, 1),
        "exit_code": proc.returncode,
        "crashes": found,
        "corpus": len(list(corpus.iterdir())) if corpus.exists() else 0,
    }


def hypothesis_fallback(seconds: int) -> int:
    print("atheris is not installed here: running the hypothesis properties instead")
    env = dict(os.environ, TFRECORD_LITE_FUZZ_EXAMPLES=str(max(500, seconds * 40)))
    return subprocess.call(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(HERE.parent / "test_fuzz_properties.py"),
        ],
        env=env,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", type=int, default=60, help="seconds per target")
    parser.add_argument("--only", nargs="*", choices=TARGETS, help="targets to run")
    parser.add_argument("--work", type=Path, default=Path(".venv-fuzz/work"), help="work folder")
    args = parser.parse_args()
    try:
        import atheris  # noqa: F401
    except ImportError:
        return hypothesis_fallback(args.time * len(args.only or TARGETS))
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(HERE / "make_corpus.py"), str(work / "corpus")], check=True)
    results = []
    for name in args.only or TARGETS:
        res = run_target(name, args.time, work)
        results.append(res)
        print(
            f"{name:30s} {res['executions'] or '?':>10} executions in {res['seconds']:6.1f}s  "
            f"crashes: {len(res['crashes'])}  (exit {res['exit_code']})",
            flush=True,
        )
    (work / "summary.json").write_text(json.dumps(results, indent=1))
    bad = [r for r in results if r["crashes"] or r["exit_code"] != 0]
    total = sum(int(r["executions"] or 0) for r in results)
    print(f"total: {total} executions, {len(bad)} target(s) with crashes; logs in {work}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
