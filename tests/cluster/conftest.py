"""Real local clusters for the scale-out suite (``make test-cluster``, in ``.venv-cluster``).

One Ray instance (``ray.init(num_cpus=2)``) and one Dask ``LocalCluster`` (two worker
processes) serve the whole session: starting them is the slow part of the suite. The
``s3://`` tests use a moto_server on 127.0.0.1 (``tests/_servers.py``, shared with
``tests/cloud``), also one per session.
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


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A moto_server on 127.0.0.1 (the same helper as tests/cloud); its endpoint URL.

    The Ray and Dask workers are other processes: they reach it only through the
    ``storage_options`` a test passes (or the environment it gives them).
    """
    from _servers import moto_server

    with moto_server(tmp_path_factory.mktemp("moto")) as endpoint:
        yield endpoint


@pytest.fixture
def s3_bucket(s3_endpoint: str) -> Iterator[str]:
    """A fresh, empty bucket for one test; s3fs's cached listings dropped afterwards."""
    import uuid

    from _servers import boto_client

    name = f"tfr-{uuid.uuid4().hex[:12]}"
    boto_client(s3_endpoint).create_bucket(Bucket=name)
    yield name
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
