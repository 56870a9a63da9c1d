"""Write rates of the two engines (``numpy``, and ``jit`` with numba) from NumPy columns.

    python -m benchmarks.bench_write_engines [--records N] [--repeat R] [--cpu]

Two sets of columns: MNIST-like (the ``mnist_write`` task of :mod:`benchmarks.tasks`:
784-byte images as :func:`tfrecord_lite.bytes_rows`, an int64 label, three int64 dims,
from :func:`benchmarks.data.mnist_arrays`) and taxi-like (the scalar columns of the
TFX taxi data: nine float32, five int64, two categorical strings as object arrays,
and one list-of-lists column with empty lists where a value is missing). For each,
``tfr.write_examples`` is timed three ways, the engines taking turns (numpy then jit,
then jit then numpy, ...: the page cache's writeback of one file slows the next
write), median of ``--repeat``:

* ``encode``: into a sink that drops the bytes (building and framing the records);
* ``file``: into a file in a temporary directory, the same path each time (what the
  ``mnist_write`` task does: the file written one round before is truncated when it is
  opened); each engine has a path of its own, so that neither truncates the file the
  other has just written (a truncation costs more while the file's pages are new);
* ``fresh``: into a new file each time (the engine's previous one removed first).

Rates are records/s; the last column is the ``jit`` file rate over TensorFlow's
``Example`` + ``TFRecordWriter`` loop on MNIST-like records, 94.8 k records/s, a figure
from ``benchmarks/RESULTS.md`` (not measured in this run). ``--cpu`` times the
process's CPU time instead of the wall clock (for a machine shared with other work;
it leaves out the kernel's own I/O time only where that runs in another thread).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

from benchmarks import data

#: TensorFlow's MNIST write loop in benchmarks/RESULTS.md (records/s), not measured here.
TF_MNIST_WRITE = 94_800.0
ENGINES = ("numpy", "jit")


class _Sink:
    """A binary file object that drops what it is given."""

    def write(self, data: Any) -> int:
        return memoryview(data).nbytes

    def flush(self) -> None:
        pass


def mnist_columns(n: int) -> dict[str, Any]:
    """The ``mnist_write`` task's columns."""
    import tfrecord_lite as tfr

    cols = data.mnist_arrays(n)
    return {
        "image_raw": tfr.bytes_rows(cols["image_raw"]),
        "label": cols["label"],
        "dim": cols["dim"],
    }


def taxi_columns(n: int, seed: int = 3) -> dict[str, Any]:
    """Taxi-like columns from NumPy: scalars of every kind, strings, a ragged column."""
    rng = np.random.default_rng(seed)
    companies = np.array(
        [b"Flash Cab", b"Taxi Affiliation Services", b"Sun Taxi", b"City Service", b""],
        dtype=object,
    )
    payments = np.array([b"Cash", b"Credit Card", b"No Charge", b"Dispute"], dtype=object)
    floats = {
        name: rng.normal(0.0, 50.0, n).astype(np.float32)
        for name in (
            "dropoff_latitude",
            "dropoff_longitude",
            "fare",
            "pickup_latitude",
            "pickup_longitude",
            "tips",
            "trip_miles",
            "trip_seconds",
            "dropoff_community_area",
        )
    }
    tract = rng.integers(17031010100, 17031990000, n)
    missing = rng.random(n) < 0.25
    return {
        "company": companies[rng.integers(0, len(companies), n)],
        **floats,
        "dropoff_census_tract": [
            [] if m else [t] for m, t in zip(missing.tolist(), tract.tolist())
        ],
        "payment_type": payments[rng.integers(0, len(payments), n)],
        "pickup_community_area": rng.integers(1, 78, n),
        "trip_start_day": rng.integers(1, 8, n),
        "trip_start_hour": rng.integers(0, 24, n),
        "trip_start_month": rng.integers(1, 13, n),
        "trip_start_timestamp": rng.integers(1_356_998_400, 1_483_228_800, n),
    }


def _rates(
    columns: dict[str, Any], n: int, repeat: int, clock: Callable[[], float], tmp: str
) -> dict[tuple[str, str], float]:
    """Records/s of each (way, engine); the engines take turns, median of ``repeat``."""
    import tfrecord_lite as tfr

    def encode(engine: str) -> None:
        tfr.write_examples(_Sink(), columns)  # type: ignore[arg-type]

    def file(engine: str) -> None:
        tfr.write_examples(os.path.join(tmp, f"{engine}.tfrecord"), columns)

    def new_file(engine: str) -> None:
        fresh = os.path.join(tmp, f"{engine}-fresh.tfrecord")
        if os.path.exists(fresh):
            os.unlink(fresh)
        tfr.write_examples(fresh, columns)

    ways = {"encode": encode, "file": file, "fresh": new_file}
    times: dict[tuple[str, str], list[float]] = {(w, e): [] for w in ways for e in ENGINES}
    for engine in ENGINES:  # compile / load the kernels, warm the caches
        os.environ["TFRECORD_LITE_ENGINE"] = engine
        file(engine)
    for r in range(repeat):
        for way in ways:
            for engine in ENGINES if r % 2 == 0 else ENGINES[::-1]:
                os.environ["TFRECORD_LITE_ENGINE"] = engine
                t = clock()
                ways[way](engine)
                times[way, engine].append(clock() - t)
    os.environ.pop("TFRECORD_LITE_ENGINE")
    return {key: n / statistics.median(taken) for key, taken in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=60000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument(
        "--cpu", action="store_true", help="CPU time of this process (a loaded machine), not wall"
    )
    args = parser.parse_args()
    clock = time.process_time if args.cpu else time.perf_counter
    print(f"cores: {os.cpu_count()}  python {sys.version.split()[0]}  clock: {clock.__name__}")
    print(f"records: {args.records}  repeat: {args.repeat} (medians, k records/s)")
    print(f"{'columns':8s} {'way':7s} {'numpy':>9s} {'jit':>9s} {'jit/numpy':>9s} {'jit/TF*':>8s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("mnist", mnist_columns), ("taxi", taxi_columns)):
            rates = _rates(make(args.records), args.records, args.repeat, clock, tmp)
            for way in ("encode", "file", "fresh"):
                numpy_rate, jit_rate = rates[way, "numpy"], rates[way, "jit"]
                vs_tf = f"{jit_rate / TF_MNIST_WRITE:7.1f}x" if name == "mnist" else ""
                print(
                    f"{name:8s} {way:7s} {numpy_rate / 1e3:9,.0f} {jit_rate / 1e3:9,.0f} "
                    f"{jit_rate / numpy_rate:9.2f} {vs_tf:>8s}"
                )
    print(
        "* TF: TensorFlow's Example+TFRecordWriter loop, MNIST-like, "
        f"{TF_MNIST_WRITE / 1e3:.1f} k records/s (figure from benchmarks/RESULTS.md, not this run)"
    )


if __name__ == "__main__":
    main()
