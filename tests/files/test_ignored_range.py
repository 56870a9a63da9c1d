"""A server that ignores ``Range`` (answers 200 with the whole object) is an error naming
the URL and what the server did, never data read at the wrong offset.

Two servers: an fsspec filesystem of the test's own whose ranged reads return the whole
object (what fsspec's HTTP filesystem hands back from such a server), always run; and a
real HTTP server on 127.0.0.1 that ignores ``Range``, read through fsspec's ``http://``
filesystem, where ``aiohttp`` is installed (``make test-cloud`` runs this file again in
``.venv-cloud``, which has it).
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tfrecord_lite as tfr

fsspec = pytest.importorskip("fsspec")
from fsspec.implementations.memory import MemoryFileSystem  # noqa: E402

#: More than one remote block (4 MiB), so a sequential read asks for a range too.
RECORDS = [bytes([i % 251]) * 100_000 for i in range(50)]


class _IgnoresRange(MemoryFileSystem):  # type: ignore[misc]
    """``cat_file(path, start, end)`` answers with the whole object, as a server that
    ignores Range does."""

    protocol = "ignorerange"

    def cat_file(self, path: str, start: Any = None, end: Any = None, **kwargs: Any) -> bytes:
        return bytes(super().cat_file(path, **kwargs))


def _check(err: BaseException, url: str) -> None:
    assert isinstance(err, OSError) and err.filename == url, err
    assert "ignored the byte range" in str(err) and "HTTP 200" in str(err), err


def test_a_filesystem_that_ignores_range_is_an_error_not_data(tmp_path: Path) -> None:
    fsspec.register_implementation("ignorerange", _IgnoresRange, clobber=True)
    url = "ignorerange://bucket/data.tfrecord"
    with tfr.TFRecordWriter(url) as w:
        w.write_all(RECORDS)
    for verify in (True, False):
        with pytest.raises(OSError) as info:
            list(tfr.tf_record_iterator(url, verify=verify))
        _check(info.value, url)
    with pytest.raises(OSError) as info:
        tfr.TFRecordFile(url)[3]
    _check(info.value, url)


class _Handler(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()

    def do_GET(self) -> None:
        self.do_HEAD()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    pytest.importorskip(
        "aiohttp",
        reason="fsspec's http:// filesystem needs aiohttp; make test-cloud runs this test",
    )
    _Handler.body = tfr.encode_records(RECORDS)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/data.tfrecord"
    finally:
        httpd.shutdown()
        thread.join()


def test_an_http_server_that_ignores_range_is_an_error_not_data(server: str) -> None:
    for verify in (True, False):
        with pytest.raises(OSError) as info:
            list(tfr.tf_record_iterator(server, verify=verify))
        _check(info.value, server)
    with pytest.raises(OSError) as info:
        tfr.TFRecordFile(server)[3]
    _check(info.value, server)
