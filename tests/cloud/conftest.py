"""Fixtures of the object-store suite: a real S3 protocol server (moto_server) on
127.0.0.1 at a free port, started once per session and stopped at its end.

Run with ``make test-cloud`` (the ``.venv-cloud`` venv: s3fs, moto[server], boto3).
No request leaves the loopback interface: the endpoint is passed to every client,
and the environment's AWS settings are replaced by the server's for the session.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

KEY = "testing-key"
SECRET = "testing-secret"
REGION = "us-east-1"
START_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto_server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"moto_server did not listen on 127.0.0.1:{port} in {START_TIMEOUT} s")


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start moto_server; yield its endpoint URL; stop it."""
    port = free_port()
    server = Path(sys.executable).parent / "moto_server"
    log = (tmp_path_factory.mktemp("moto") / "server.log").open("wb")
    proc = subprocess.Popen(
        [str(server), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        _wait_for(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


@pytest.fixture(scope="session", autouse=True)
def _aws_environment(s3_endpoint: str) -> Iterator[None]:
    """Credentials for the local server only, so no default profile is ever used."""
    saved = {k: v for k, v in os.environ.items() if k.startswith(("AWS_", "FSSPEC_"))}
    for k in saved:
        del os.environ[k]
    os.environ.update(
        AWS_ACCESS_KEY_ID=KEY,
        AWS_SECRET_ACCESS_KEY=SECRET,
        AWS_DEFAULT_REGION=REGION,
        AWS_EC2_METADATA_DISABLED="true",
    )
    try:
        yield
    finally:
        for k in [k for k in os.environ if k.startswith(("AWS_", "FSSPEC_"))]:
            del os.environ[k]
        os.environ.update(saved)


@pytest.fixture(scope="session")
def s3_client(s3_endpoint: str) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
        region_name=REGION,
    )


@pytest.fixture(scope="session")
def storage_options(s3_endpoint: str) -> dict[str, Any]:
    """s3fs options for the local server, passed per call (the first way of configuring)."""
    return {"key": KEY, "secret": SECRET, "client_kwargs": {"endpoint_url": s3_endpoint}}


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
    port = free_port()
    exe = Path(sys.executable).parent / "gcp-storage-emulator"
    log = (tmp_path_factory.mktemp("gcs") / "server.log").open("wb")
    cmd = [str(exe), "start", "--host", "127.0.0.1", "--port", str(port), "--in-memory"]
    proc = subprocess.Popen([*cmd, "--default-bucket", "tfr"], stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_for(port, proc)
        yield {"endpoint_url": f"http://127.0.0.1:{port}", "token": "anon", "project": "test"}
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()
