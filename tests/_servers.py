"""Local servers shared by the object-store suite (``tests/cloud``) and the cluster suite
(``tests/cluster``): a real S3 protocol server (``moto_server``) and the GCS emulator,
each on 127.0.0.1 at a free port, started from the running venv's ``bin`` directory.

No request leaves the loopback interface: every client is given the endpoint.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

KEY = "testing-key"
SECRET = "testing-secret"
REGION = "us-east-1"
START_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(port: int, proc: subprocess.Popen[bytes], name: str) -> None:
    """Return once ``proc`` listens on 127.0.0.1:``port``; raise if it exits or takes too long."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{name} did not listen on 127.0.0.1:{port} in {START_TIMEOUT} s")


@contextlib.contextmanager
def serve(
    args: Sequence[str],
    port: int,
    log_path: Path,
    name: str,
    env: Optional[Mapping[str, str]] = None,
) -> Iterator[None]:
    """Run a server until the block ends: started, waited for, terminated (killed if stuck)."""
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            list(args),
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env} if env is not None else None,
        )
        try:
            wait_for(port, proc, name)
            yield
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def _exe(name: str) -> str:
    return str(Path(sys.executable).parent / name)


@contextlib.contextmanager
def moto_server(log_dir: Path) -> Iterator[str]:
    """A moto_server on 127.0.0.1 at a free port; yields its endpoint URL."""
    port = free_port()
    args = [_exe("moto_server"), "-H", "127.0.0.1", "-p", str(port)]
    with serve(args, port, log_dir / "moto.log", "moto_server"):
        yield f"http://127.0.0.1:{port}"


def enforce_iam(endpoint: str, after: float = 0) -> None:
    """Make a moto_server check every request's signature and IAM policy from now on
    (after ``after`` more unchecked requests; ``float("inf")`` turns checking off again)."""
    req = urllib.request.Request(
        f"{endpoint}/moto-api/reset-auth",
        data=str(after).encode(),
        headers={"Content-Type": "text/plain"},  # not a form: moto reads the raw body
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert json.load(resp)["status"] == "ok"


def s3_options(endpoint: str, key: str = KEY, secret: str = SECRET) -> dict[str, Any]:
    """s3fs ``storage_options`` for a local server."""
    return {"key": key, "secret": secret, "client_kwargs": {"endpoint_url": endpoint}}


def boto_client(endpoint: str, service: str = "s3", key: str = KEY, secret: str = SECRET) -> Any:
    import boto3

    return boto3.client(
        service,
        endpoint_url=endpoint,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        region_name=REGION,
    )


@contextlib.contextmanager
def aws_environment(**extra: str) -> Iterator[None]:
    """The environment's AWS/fsspec settings replaced by the local server's keys (so no
    default profile or instance metadata is ever used); restored afterwards."""
    saved = {k: v for k, v in os.environ.items() if k.startswith(("AWS_", "FSSPEC_"))}
    for k in saved:
        del os.environ[k]
    os.environ.update(
        AWS_ACCESS_KEY_ID=KEY,
        AWS_SECRET_ACCESS_KEY=SECRET,
        AWS_DEFAULT_REGION=REGION,
        AWS_EC2_METADATA_DISABLED="true",
        **extra,
    )
    try:
        yield
    finally:
        for k in [k for k in os.environ if k.startswith(("AWS_", "FSSPEC_"))]:
            del os.environ[k]
        os.environ.update(saved)


@contextlib.contextmanager
def gcs_emulator(log_dir: Path, bucket: str) -> Iterator[str]:
    """gcp-storage-emulator (in memory, with ``bucket``) on 127.0.0.1; yields its endpoint."""
    port = free_port()
    args = [_exe("gcp-storage-emulator"), "start", "--host", "127.0.0.1", "--port", str(port)]
    args += ["--in-memory", "--default-bucket", bucket]
    with serve(args, port, log_dir / "gcs.log", "gcp-storage-emulator"):
        yield f"http://127.0.0.1:{port}"
