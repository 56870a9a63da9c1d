"""Real local clusters for the scale-out suite (``make test-cluster``, in ``.venv-cluster``).

One Ray instance (``ray.init(num_cpus=2)``) and one Dask ``LocalCluster`` (two worker
processes) serve the whole session: starting them is the slow part of the suite.
Outside ``make test-cluster`` (which sets ``TFRECORD_LITE_CLUSTER=1``) the suite is not
collected at all, so the default ``make test`` (no Ray, no Dask) never reports it as
skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

if not os.environ.get("TFRECORD_LITE_CLUSTER"):
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Any]:
    from dask.distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client
