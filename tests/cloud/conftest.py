"""Fixtures of the object-store suite: a real S3 protocol server (moto_server) on
127.0.0.1 at a free port, started once per session and stopped at its end.

Run with ``make test-cloud`` (the ``.venv-cloud`` venv: s3fs, moto[server], boto3).
No request leaves the loopback interface: the endpoint is passed to every client,
and the environment's AWS settings are replaced by the server's for the session.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

# tests/ is on sys.path (tests/conftest.py is loaded first): the servers both suites share.
from _servers import aws_environment, boto_client, gcs_emulator, moto_server, s3_options


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start moto_server; yield its endpoint URL; stop it."""
    with moto_server(tmp_path_factory.mktemp("moto")) as endpoint:
        yield endpoint


@pytest.fixture(scope="session", autouse=True)
def _aws_environment(s3_endpoint: str) -> Iterator[None]:
    """Credentials for the local server only, so no default profile is ever used."""
    with aws_environment():
        yield


@pytest.fixture(scope="session")
def s3_client(s3_endpoint: str) -> Any:
    return boto_client(s3_endpoint)


@pytest.fixture(scope="session")
def storage_options(s3_endpoint: str) -> dict[str, Any]:
    """s3fs options for the local server, passed per call (the first way of configuring)."""
    return s3_options(s3_endpoint)


@pytest.fixture
def bucket(s3_client: Any) -> str:
    """A fresh, empty bucket for one test."""
    name = f"tfr-{uuid.uuid4().hex[:12]}"
    s3_client.create_bucket(Bucket=name)
    return name


@pytest.fixture(autouse=True)
def _fresh_listings() -> Iterator[None]:
    """s3fs caches listings per filesystem instance: each test starts from the server."""
    yield
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture(scope="session")
def gcs_options(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Start gcp-storage-emulator (in memory, bucket "tfr"); yield gcsfs options; stop it."""
    # Without this gcsfs probes for hierarchical namespaces and stalls ~60 s per bucket.
    os.environ["GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"] = "false"
    with gcs_emulator(tmp_path_factory.mktemp("gcs"), "tfr") as endpoint:
        yield {"endpoint_url": endpoint, "token": "anon", "project": "test"}
