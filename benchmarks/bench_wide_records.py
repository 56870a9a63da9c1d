"""Records of many tiny features: parse time against protobuf's, and peak memory.

    python -m benchmarks.bench_wide_records [--features 20000,200000] [--records 1,8]
        [--engines numpy,jit] [--spec few|all] [--repeat 3]

Each record holds ``--features`` int64 features of one value (``f0``, ``f1``, ...,
about 15 bytes each); a batch of ``--records`` copies is parsed with
``parse_example`` and a spec of ten of the keys (``few``) or all of them (``all``),
``--repeat`` times; the median time is printed with protobuf's own parse of the
same records (``Example.FromString`` of each, no columns built) and the peak of
memory allocated during one parse (``tracemalloc``: NumPy's arrays and Python's
objects) as a multiple of the batch's bytes. A batch under 8 records is parsed by
the protobuf reference path whatever the engine (the engines take batches of 8 or
more).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time
import tracemalloc
from typing import Any


def _record(features: int) -> bytes:
    import tfrecord_lite as tfr

    return tfr.encode_example({f"f{i}": [i] for i in range(features)})


def _spec(features: int, which: str) -> dict[str, Any]:
    import tfrecord_lite as tfr

    keys = range(features) if which == "all" else range(0, features, max(1, features // 10))
    return {f"f{i}": tfr.FixedLenFeature([], tfr.int64) for i in keys}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", default="20000,200000")
    parser.add_argument("--records", default="1,8")
    parser.add_argument("--engines", default="numpy,jit")
    parser.add_argument("--spec", default="few", choices=["few", "all"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import tfrecord_lite as tfr
    from tfrecord_lite import example_pb2
    from tfrecord_lite._examples import compile_features

    engines = [
        e for e in args.engines.split(",") if e != "jit" or importlib.util.find_spec("numba")
    ]
    print(
        f"{'features':>9s} {'records':>7s} {'MiB':>6s} {'engine':>6s} {'spec':>5s} "
        f"{'parse s':>8s} {'protobuf s':>10s} {'ratio':>6s} {'peak/input':>10s}"
    )
    for features in map(int, args.features.split(",")):
        record = _record(features)
        plan = compile_features(_spec(features, args.spec))
        for n in map(int, args.records.split(",")):
            batch = [record] * n
            size = len(record) * n
            pb = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                for r in batch:
                    example_pb2.Example.FromString(r)
                pb.append(time.perf_counter() - t)
            for engine in engines:
                os.environ["TFRECORD_LITE_ENGINE"] = engine
                tfr.parse_example(batch[:8], plan)  # (kernels loaded, caches warm)
                times = []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    tfr.parse_example(batch, plan)
                    times.append(time.perf_counter() - t)
                tracemalloc.start()
                tfr.parse_example(batch, plan)
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                took, base = statistics.median(times), statistics.median(pb)
                print(
                    f"{features:9d} {n:7d} {size / 2**20:6.1f} {engine:>6s} {args.spec:>5s} "
                    f"{took:8.3f} {base:10.3f} {took / base:6.2f} {peak / size:10.1f}"
                )


if __name__ == "__main__":
    main()
