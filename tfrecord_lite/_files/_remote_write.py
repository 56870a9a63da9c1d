"""Writing a URL: uploads, whose object appears only when complete, and their clean-up.

On object stores (``s3``, ``gs``, ``az`` ...) an upload becomes visible only when it is
complete, so an object is never seen half written; an atomic upload is also aborted
on an error (nothing appears under the name, an older object stays as it was).
Elsewhere (``memory://``, ``sftp://`` ...) an atomic write goes to a hidden temporary
name beside the target, moved onto it when complete. :func:`abort_uploads` aborts
the multipart uploads a killed writer left behind.
"""

from __future__ import annotations

import contextlib
import io
from typing import IO, Any, Callable, Optional

from ._urls import OBJECT_STORES, errors, filesystem, protocol, temp_name

__all__ = ["abort_uploads", "open_upload"]


def abort_uploads(directory: str, marker: str) -> Optional[int]:
    """Abort the unfinished multipart uploads in ``directory`` whose name contains ``marker``.

    A writer that is killed or cancelled mid-upload cannot abort its own upload; a
    job's clean-up calls this for the names it gave its writers. Returns how many
    were aborted, or ``None`` where uploads cannot be listed (only S3 can: elsewhere
    an upload that was not completed expires by itself).
    """
    if protocol(directory) not in ("s3", "s3a"):
        return None
    fs, p = filesystem(directory)
    bucket, _, prefix = p.strip("/").partition("/")
    prefix = prefix + "/" if prefix else ""
    aborted = 0
    with errors(directory, "clean up"):
        markers: dict[str, str] = {}
        while True:
            page = fs.call_s3("list_multipart_uploads", Bucket=bucket, Prefix=prefix, **markers)
            for upload in page.get("Uploads") or []:
                key = str(upload["Key"])
                if "/" not in key[len(prefix) :] and marker in key[len(prefix) :]:
                    fs.call_s3(
                        "abort_multipart_upload",
                        Bucket=bucket,
                        Key=key,
                        UploadId=upload["UploadId"],
                    )
                    aborted += 1
            if not page.get("IsTruncated"):
                return aborted
            markers = {
                "KeyMarker": page.get("NextKeyMarker", ""),
                "UploadIdMarker": page.get("NextUploadIdMarker", ""),
            }


class _Upload(io.RawIOBase):
    """The writable side of an upload, with errors that name the URL.

    ``publish=True``: ``close()`` completes the upload (the object appears).
    ``publish=False``: ``close()`` leaves it pending; :class:`Output` commits or
    discards it.
    """

    def __init__(self, f: Any, url: str, publish: bool) -> None:
        super().__init__()
        self._f = f
        self._publish = publish
        self.name = str(url)

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        with errors(self.name, "write"):
            self._f.write(data)
        return len(data)

    def flush(self) -> None:
        if self._publish and not self.closed and not self._f.closed:
            with errors(self.name, "write"):
                self._f.flush()  # uploads the parts that are full; nothing is visible yet

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self._publish:
                with errors(self.name, "write"):
                    self._f.close()
        finally:
            super().close()


def open_upload(
    path: str, atomic: bool
) -> tuple[IO[bytes], Callable[[], None], Callable[[], None]]:
    """Start writing the URL ``path``: ``(file, commit, discard)``.

    Not ``atomic``: closing the file (either callable) completes the upload. ``atomic``:
    ``commit`` completes it (object stores) or moves the temporary object onto
    ``path`` (other filesystems); ``discard`` aborts it and leaves nothing under the name.
    """
    fs, p = filesystem(path)
    store = protocol(path) in OBJECT_STORES
    target = path if (store or not atomic) else temp_name(path)
    tp = p if target is path else filesystem(target)[1]
    with errors(path, "write"):
        raw = fs.open(tp, "wb")
    if not atomic:
        upload = _Upload(raw, path, publish=True)
        return upload, upload.close, upload.close  # type: ignore[return-value]

    def commit_remote() -> None:
        with errors(path, "write"):
            raw.close()  # completes the upload
            if target is not path:
                fs.mv(tp, p)

    def discard_remote() -> None:
        if store:
            with contextlib.suppress(Exception):
                raw.discard()  # abort the multipart / resumable upload
            raw.closed = True  # never completed, not even by garbage collection
        else:
            with contextlib.suppress(Exception):
                raw.close()
            with contextlib.suppress(Exception):
                fs.rm_file(tp)

    pending = _Upload(raw, path, publish=False)
    return pending, commit_remote, discard_remote  # type: ignore[return-value]
