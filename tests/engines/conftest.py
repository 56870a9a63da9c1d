"""The real engines for the engine suite (``make test-engines``, in ``.venv-engines``):
Spark 4 (``local[2,2]``: two cores, a failed task tried twice), Daft's local runner and
Hugging Face ``datasets`` on local files.

One Spark session serves the whole test session (starting the JVM is the slow part).
The ``s3://`` tests use a moto_server on 127.0.0.1 (``tests/_servers.py``, shared with
``tests/cloud`` and ``tests/cluster``). Outside ``make test-engines`` (which sets
``TFRECORD_LITE_ENGINES=1``) the suite is not collected at all, so ``make test`` never
reports it as skipped.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

if not os.environ.get("TFRECORD_LITE_ENGINES"):
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local Spark session with the ``tfrecord`` data source registered."""
    # The Python workers must be this venv's Python (they import tfrecord_lite and pyarrow).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from tfrecord_lite import spark as tfspark

    session = (
        SparkSession.builder.master("local[2,2]")
        .appName("tfrecord-lite-engines")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    tfspark.register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A moto_server on 127.0.0.1 (the helper of tests/cloud); its endpoint URL."""
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
