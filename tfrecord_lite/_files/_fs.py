"""One path abstraction for every entry point: local paths and fsspec URLs.

Local paths (``str``, ``os.PathLike``, ``file://...``) go to the operating system.
Anything else with ``://`` (``s3://``, ``gs://``, ``memory://``, ``az://`` ...) goes
through `fsspec <https://filesystem-spec.readthedocs.io>`_, imported only when a URL
is used; ``s3://`` needs ``pip install "tfrecord-lite-np[s3]"``, ``gs://``
``pip install "tfrecord-lite-np[gcs]"``.

``storage_options`` (the keyword pandas and fsspec use) are the keyword arguments
of the fsspec filesystem, e.g. ``{"key": ..., "secret": ..., "client_kwargs":
{"endpoint_url": ...}}`` for s3fs or ``{"token": ...}`` for gcsfs. Without them the
filesystem finds credentials as it always does (environment variables, config
files, instance metadata). :func:`bind` attaches the options to a URL string
(:class:`URL`, a ``str``), so a URL carries them wherever it goes: through
listings, into datasets, and across pickling to worker processes.

Reading a URL (:func:`open_read`) fetches the object in large ranged requests
(:data:`REMOTE_BLOCK_SIZE`), with the next block requested in the background
while the current one is parsed; :func:`prefetch` starts fetching files before
they are opened (datasets use it to fetch ``num_parallel_reads`` objects at once).
:func:`read_range` is one ranged request (random access).

Writing a URL (:func:`open_write`): on object stores (``s3``, ``gs``, ``az`` ...) an
upload becomes visible only when it is complete, so an object is never seen half
written; ``atomic=True`` additionally aborts the upload on an error (nothing appears
under the name, an older object stays as it was). Elsewhere (``memory://``, ``sftp://``
...) an atomic write goes to a hidden temporary name beside the target, moved onto it
when complete.

Errors name the path or URL and never show the filesystem library's internals:
``FileNotFoundError`` for a missing object or bucket, ``PermissionError`` for
refused credentials, ``ImportError`` with the ``pip install`` line for a missing
filesystem package.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any, Callable, Optional, Union

__all__ = [
    "REMOTE_BLOCK_SIZE",
    "URL",
    "Output",
    "bind",
    "exists",
    "filesystem",
    "fsync_directory",
    "head",
    "is_url",
    "isdir",
    "isfile",
    "listdir",
    "open_read",
    "open_write",
    "prefetch",
    "read_range",
    "remove",
    "rename",
    "size",
]

_builtin_open = open

#: Bytes per ranged request when reading a URL front to back (and the read-ahead:
#: one such block is fetched in the background while the previous one is parsed).
REMOTE_BLOCK_SIZE = 4 * 1024 * 1024
#: Requests in flight at once in this process (all readers and prefetches together).
MAX_FETCH_THREADS = 32
#: Files whose first block may be fetched ahead of being opened (see :func:`prefetch`).
_MAX_WARM = 32

#: Protocols whose uploads become visible only once complete (no partial object).
OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "oss"})
#: The extra that installs a protocol's filesystem.
_EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs"}
_PACKAGES = {"s3": "s3fs", "gcs": "gcsfs"}


# --------------------------------------------------------------------------- URLs


class URL(str):
    """A URL string that carries the ``storage_options`` it was given with.

    It is a ``str`` (equal to, and hashing as, the plain URL); the options travel
    with it through listings, datasets and pickling. Its ``repr`` never shows them.
    """

    storage_options: dict[str, Any]

    def __new__(cls, url: str, storage_options: Optional[Mapping[str, Any]] = None) -> URL:
        self = super().__new__(cls, url)
        self.storage_options = dict(storage_options or {})
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (URL, (str(self), self.storage_options))

    def __add__(self, other: str) -> URL:
        """``url + ".index"`` is a URL with the same options."""
        return URL(str(self) + other, self.storage_options)

    def with_path(self, url: str) -> URL:
        """Another URL on the same filesystem, with the same options."""
        return URL(url, self.storage_options)


def is_url(path: object) -> bool:
    """True for a URL handled by fsspec (``scheme://...`` other than ``file://``)."""
    return isinstance(path, str) and "://" in path and not path.startswith("file://")


def protocol(url: str) -> str:
    """The scheme of a URL (``"s3"`` for ``"s3://bucket/key"``)."""
    return url.split("://", 1)[0].lower()


def options_of(path: object) -> dict[str, Any]:
    """The storage options a path was bound with (``{}`` for a plain string)."""
    return dict(getattr(path, "storage_options", None) or {})


def bind(
    path: Union[str, os.PathLike[str]], storage_options: Optional[Mapping[str, Any]] = None
) -> str:
    """The path as a ``str``: a URL bound to ``storage_options`` (a :class:`URL`), or a
    local path (``file://`` removed). Options given for a local path are an error."""
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"paths must be str or os.PathLike[str], got {type(text).__name__}")
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise TypeError(
            f"storage_options must be a dict of filesystem options, got "
            f"{type(storage_options).__name__}"
        )
    if not is_url(text):
        if storage_options:
            raise ValueError(
                f"storage_options are for URLs (s3://, gs://, ...), not the local path {text!r}"
            )
        return text[len("file://") :] if text.startswith("file://") else text
    if storage_options is None:
        if isinstance(text, URL):
            return text
        return URL(text)
    return URL(text, storage_options)


def join(directory: str, name: str) -> str:
    """``directory/name`` for a local path or a URL (a URL keeps its options)."""
    if is_url(directory):
        joined = directory.rstrip("/") + "/" + name
        return directory.with_path(joined) if isinstance(directory, URL) else URL(joined)
    return os.path.join(directory, name)


def split(path: str) -> tuple[str, str]:
    """``(directory, name)`` of a local path or a URL."""
    if is_url(path):
        head, _, tail = str(path).rpartition("/")
        if head.endswith(":/"):  # "s3://bucket": no directory part
            return str(path), ""
        return (path.with_path(head) if isinstance(path, URL) else head), tail
    return os.path.split(path)


# --------------------------------------------------------------------------- filesystems


def _install_hint(proto: str) -> str:
    extra = _EXTRAS.get(proto)
    if extra is not None:
        return f'pip install "tfrecord-lite-np[{extra}]"'
    return f"pip install fsspec (and the fsspec filesystem package for {proto}://)"


def filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of a URL (made with its storage options) and the path in it."""
    proto = protocol(url)
    try:
        import fsspec  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        raise ImportError(
            f"{str(url)!r} is a URL: reading and writing {proto}:// needs fsspec and its "
            f"filesystem package: {_install_hint(proto)}"
        ) from None
    options = options_of(url)
    try:
        fs = fsspec.filesystem(proto, **options)
    except ImportError:
        package = _PACKAGES.get(_EXTRAS.get(proto, ""), f"the filesystem package for {proto}://")
        raise ImportError(
            f"{str(url)!r}: {proto}:// needs {package}: {_install_hint(proto)}"
        ) from None
    except ValueError as err:
        if "Protocol not known" in str(err):
            raise ValueError(
                f"{str(url)!r}: unknown URL scheme {proto!r} (fsspec has no filesystem for it)"
            ) from None
        raise
    except TypeError as err:
        raise TypeError(
            f"{str(url)!r}: storage_options {sorted(options)} are not accepted by the "
            f"{proto}:// filesystem ({err})"
        ) from None
    return fs, fs._strip_protocol(str(url))


def _clean(text: str) -> str:
    """The underlying library's message, if it is a readable sentence."""
    text = " ".join(text.split())
    if " " not in text.strip():
        return ""  # a bare path or code, not a sentence
    if not text or "%s" in text or "Errno" in text or len(text) > 300:
        return ""
    return text


@contextlib.contextmanager
def errors(url: str, action: str = "read") -> Iterator[None]:
    """Re-raise a filesystem library's exceptions as builtin ones that name ``url``."""
    try:
        yield
    except (FileNotFoundError, PermissionError, IsADirectoryError, FileExistsError) as err:
        detail = _clean(err.strerror or (str(err.args[0]) if err.args else ""))
        if str(url) in detail or (detail and detail.strip("'\"") == _strip_scheme(url)):
            detail = ""
        if isinstance(err, FileNotFoundError):
            what = "No such file or directory (or no such bucket)"
            code = errno.ENOENT
        elif isinstance(err, PermissionError):
            what = (
                f"Permission denied to {action} it (check the credentials: "
                "storage_options= or the environment)"
            )
            code = errno.EACCES
        elif isinstance(err, IsADirectoryError):
            what, code = "Is a directory", errno.EISDIR
        else:
            what, code = "File exists", errno.EEXIST
        message = f"{what}: {detail}" if detail and detail.lower() not in what.lower() else what
        raise type(err)(code, message, str(url)) from None
    except OSError as err:
        if not is_url(url):
            raise
        detail = (
            _clean(err.strerror or (str(err.args[0]) if err.args else "")) or type(err).__name__
        )
        raise OSError(err.errno or errno.EIO, f"cannot {action} it: {detail}", str(url)) from None
    except Exception as err:
        if not is_url(url) or isinstance(err, (ImportError, ValueError, TypeError)):
            raise
        # botocore / google-auth / aiohttp errors that fsspec did not translate
        detail = _clean(str(err)) or type(err).__name__
        raise OSError(errno.EIO, f"cannot {action} it: {detail}", str(url)) from None


def _strip_scheme(url: str) -> str:
    return str(url).split("://", 1)[-1]


def _full(url: str, fs_path: str) -> str:
    """A path the filesystem returned, as a URL written like ``url`` (same scheme,
    same leading slash, same options)."""
    scheme, rest = str(url).split("://", 1)
    name = fs_path.lstrip("/")
    if rest.startswith("/"):
        name = "/" + name
    full = f"{scheme}://{name}"
    return url.with_path(full) if isinstance(url, URL) else URL(full)


# --------------------------------------------------------------------------- queries


def _info(url: str) -> Optional[dict[str, Any]]:
    fs, p = filesystem(url)
    with errors(url, "read"):
        try:
            return dict(fs.info(p))
        except FileNotFoundError:
            return None


def exists(path: str) -> bool:
    """True if ``path`` is an existing file or directory."""
    if not is_url(path):
        return os.path.exists(path)
    return _info(path) is not None


def isfile(path: str) -> bool:
    """True if ``path`` is an existing file (object)."""
    if not is_url(path):
        return os.path.isfile(path)
    info = _info(path)
    return info is not None and info.get("type") == "file"


def isdir(path: str) -> bool:
    """True if ``path`` is a directory (a prefix with objects under it)."""
    if not is_url(path):
        return os.path.isdir(path)
    if str(path).endswith("/"):
        return True
    info = _info(path)
    return info is not None and info.get("type") == "directory"


def size(path: str) -> int:
    """The size of a file in bytes."""
    if not is_url(path):
        return os.stat(path).st_size
    fs, p = filesystem(path)
    with errors(path, "read"):
        info = fs.info(p)
    if info.get("type") == "directory":
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
    return int(info["size"])


def listdir(path: str) -> list[tuple[str, bool]]:
    """``(full path, is_file)`` of every entry of a directory, sorted by name."""
    if not is_url(path):
        out = []
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            out.append((full, os.path.isfile(full)))
        return out
    fs, p = filesystem(path)
    with errors(path, "list"):
        entries = fs.ls(p.rstrip("/"), detail=True)
    result = [(_full(path, e["name"]), e.get("type") == "file") for e in entries]
    return sorted(result)


def glob(pattern: str) -> list[str]:
    """The files matching a glob pattern (``*``, ``?``, ``[...]``; ``**`` recursive), sorted."""
    if not is_url(pattern):
        import glob as _glob

        return sorted(p for p in _glob.glob(pattern) if not os.path.isdir(p))
    fs, p = filesystem(pattern)
    with errors(pattern, "list"):
        found = fs.glob(p, detail=True)
    return sorted(
        _full(pattern, name) for name, info in found.items() if info.get("type") == "file"
    )


def remove(path: str) -> None:
    """Delete a file (no error if it is already gone)."""
    if not is_url(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    fs, p = filesystem(path)
    with errors(path, "delete"), contextlib.suppress(FileNotFoundError):
        fs.rm_file(p)


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


def rename(src: str, dst: str) -> None:
    """Move ``src`` onto ``dst`` (replacing it). On object stores: a server-side copy,
    then the source is deleted; ``dst`` appears complete when the copy completes."""
    if not is_url(src):
        os.replace(src, dst)
        return
    fs, p = filesystem(src)
    _, q = filesystem(dst)
    with errors(dst, "write"):
        fs.mv(p, q)


# --------------------------------------------------------------------------- reading


def _pool() -> ThreadPoolExecutor:
    global _POOL, _POOL_PID
    pid = os.getpid()
    if _POOL is None or pid != _POOL_PID:  # a forked child makes its own threads
        with _POOL_LOCK:
            if _POOL is None or pid != _POOL_PID:
                _POOL = ThreadPoolExecutor(MAX_FETCH_THREADS, thread_name_prefix="tfrecord-fetch")
                _POOL_PID = pid
                _WARM.clear()
    return _POOL


_POOL: Optional[ThreadPoolExecutor] = None
_POOL_PID = -1
_POOL_LOCK = threading.Lock()
#: URL -> future of (size, first block), fetched ahead of opening (see prefetch()).
_WARM: OrderedDict[tuple[str, int], Future[tuple[int, bytes]]] = OrderedDict()


def _fetch(url: str, start: int, end: int) -> bytes:
    """Bytes ``start`` to ``end`` of a URL: one ranged request, its answer checked.

    An answer longer than the range asked for means the server ignored ``Range``
    (HTTP 200 with the whole object): its bytes are not those asked for, so it is an
    ``OSError`` naming the URL and what the server did, never data. (Shorter answers
    are the end of the object: callers that know its size check them.)
    """
    fs, p = filesystem(url)
    with errors(url, "read"):
        data = bytes(fs.cat_file(p, start=start, end=end))
    if len(data) > end - start:
        raise OSError(
            errno.EIO,
            f"the server ignored the byte range of a ranged read: asked for bytes "
            f"{start}-{end - 1} ({end - start} bytes), it sent {len(data)} bytes (a server "
            "that does not honour Range answers HTTP 200 with the whole object). Reads "
            "at an offset cannot be trusted here: copy the file locally first, or serve "
            "it from a server that honours Range",
            str(url),
        )
    return data


def _first_block(url: str, block: int) -> tuple[int, bytes]:
    total = size(url)
    return total, _fetch(url, 0, min(block, total)) if total else b""


def read_range(path: str, start: int, length: int) -> bytes:
    """``length`` bytes at ``start`` (fewer at the end of the file): one ranged request."""
    if length <= 0:
        return b""
    if not is_url(path):
        with _builtin_open(path, "rb", buffering=0) as f:
            f.seek(start)
            parts = []
            got = 0
            while got < length:
                chunk = f.read(length - got)
                if not chunk:
                    break
                parts.append(chunk)
                got += len(chunk)
            return b"".join(parts)
    return _fetch(path, start, start + length)


def head(path: str, n: int = 16) -> bytes:
    """The first ``n`` bytes of a file (one small ranged request for a URL)."""
    if not is_url(path):
        return read_range(path, 0, n)
    total = size(path)
    return _fetch(path, 0, min(n, total)) if total else b""


def prefetch(paths: list[str], block_size: int = REMOTE_BLOCK_SIZE) -> None:
    """Start fetching the first block of each URL in ``paths`` in the background.

    :func:`open_read` of one of them then starts from that block. Local paths are
    ignored; at most 32 first blocks are held ahead (the oldest are dropped).
    """
    for path in paths:
        if not is_url(path):
            continue
        key = (str(path), block_size)
        if key in _WARM:
            continue
        pool = _pool()
        _WARM[key] = pool.submit(_first_block, path, block_size)
        while len(_WARM) > _MAX_WARM:
            _WARM.popitem(last=False)


class RemoteReader(io.RawIOBase):
    """A read-only, seekable file over a URL, fetched in ranged requests of
    ``block_size`` bytes; the next block is requested while the current one is read."""

    def __init__(self, url: str, block_size: int = REMOTE_BLOCK_SIZE, read_ahead: int = 1) -> None:
        super().__init__()
        self.name = str(url)
        self._url = url
        self._block = max(64 * 1024, int(block_size))
        self._ahead = max(0, int(read_ahead))
        self._blocks: dict[int, Future[bytes]] = {}
        self._pos = 0
        warm = _WARM.pop((str(url), self._block), None)
        if warm is not None:
            self.size, first = warm.result()
            done: Future[bytes] = Future()
            done.set_result(first)
            self._blocks[0] = done
        else:
            self.size = size(url)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_SET:
            pos = offset
        elif whence == os.SEEK_CUR:
            pos = self._pos + offset
        elif whence == os.SEEK_END:
            pos = self.size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def _get(self, b: int) -> Future[bytes]:
        fut = self._blocks.get(b)
        if fut is None:
            start = b * self._block
            fut = _pool().submit(_fetch, self._url, start, min(start + self._block, self.size))
            self._blocks[b] = fut
        return fut

    def read(self, n: Optional[int] = -1) -> bytes:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        end = self.size if n is None or n < 0 else min(self.size, self._pos + n)
        if self._pos >= end:
            return b""
        first = self._pos // self._block
        last = (end - 1) // self._block
        nblocks = (self.size + self._block - 1) // self._block
        for b in list(self._blocks):
            if b < first or b > last + self._ahead:
                self._blocks.pop(b)  # behind us, or a window we sought away from
        for b in range(first, min(nblocks, last + 1 + self._ahead)):
            self._get(b)
        parts = []
        for b in range(first, last + 1):
            data = self._blocks[b].result()
            lo = max(self._pos, b * self._block) - b * self._block
            hi = min(end, (b + 1) * self._block) - b * self._block
            parts.append(data[lo:hi] if (lo, hi) != (0, len(data)) else data)
        out = parts[0] if len(parts) == 1 else b"".join(parts)
        if len(out) != end - self._pos:
            raise OSError(
                errno.EIO,
                f"the object changed while it was read (got {len(out)} of "
                f"{end - self._pos} bytes at byte {self._pos})",
                self.name,
            )
        self._pos = end
        return out

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._blocks.clear()
        super().close()


def open_read(path: str, block_size: Optional[int] = None) -> IO[bytes]:
    """Open a file for reading: a local file (unbuffered) or a URL with read-ahead."""
    if not is_url(path):
        return _builtin_open(path, "rb", buffering=0)
    return RemoteReader(path, max(block_size or 0, REMOTE_BLOCK_SIZE))  # type: ignore[return-value]


# --------------------------------------------------------------------------- writing


class Output:
    """A file being written: :attr:`file`, then :meth:`commit` (done) or :meth:`discard`.

    ``commit`` makes the data visible under its name; ``discard`` of an atomic
    output leaves nothing under the name (and an older file there as it was);
    ``discard`` of a non-atomic one keeps what was written, as closing a file does.
    """

    def __init__(
        self,
        path: str,
        file: IO[bytes],
        atomic: bool,
        commit: Callable[[], None],
        discard: Callable[[], None],
    ) -> None:
        self.path = path
        self.file = file
        self.atomic = atomic
        self._commit = commit
        self._discard = discard
        self.done = False

    def commit(self) -> None:
        """Finish: the file is complete under :attr:`path`."""
        if not self.done:
            self.done = True
            self._commit()

    def discard(self) -> None:
        """Give up: an atomic output leaves nothing; a plain one keeps what was written."""
        if not self.done:
            self.done = True
            self._discard()

    def sync(self) -> None:
        """Ask the operating system to put the data on disk (local files only)."""
        fileno = getattr(self.file, "fileno", None)
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            if fileno is not None:
                os.fsync(fileno())


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


def temp_name(path: str) -> str:
    """A hidden name beside ``path``: ``dir/.name.tmp-<random>`` (skipped by listings)."""
    directory, name = split(path)
    tmp = f".{name}.tmp-{secrets.token_hex(6)}"
    if is_url(path):
        return join(directory, tmp)
    return os.path.join(os.path.dirname(os.path.abspath(path)), tmp)


def fsync_directory(path: str) -> None:
    """Make a rename in local directory ``path`` durable (best effort: not every OS can open a
    directory)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def open_write(path: str, *, atomic: bool = False, append: bool = False) -> Output:
    """Open ``path`` for writing (created or truncated; appended to with ``append``).

    ``atomic``: the data appears under ``path`` only at :meth:`Output.commit`, whole;
    :meth:`Output.discard` leaves nothing (locally: a temporary file renamed at
    commit; object stores: an upload completed at commit, aborted at discard;
    other URLs: a temporary object moved at commit). Appending to a URL rewrites the
    object (:mod:`tfrecord_lite._files._append`).
    """
    if not is_url(path):
        if atomic:
            tmp = temp_name(path)
            f = _builtin_open(tmp, "xb", buffering=0)

            def commit() -> None:
                try:
                    f.flush()
                    os.fsync(f.fileno())
                    f.close()
                    os.replace(tmp, path)
                except BaseException:
                    f.close()
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
                    raise
                fsync_directory(os.path.dirname(os.path.abspath(path)))

            def discard() -> None:
                f.close()
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

            return Output(path, f, True, commit, discard)
        f = _builtin_open(path, "ab" if append else "wb", buffering=0)
        return Output(path, f, False, f.close, f.close)
    if append:
        raise ValueError("open_write(append=True) is for local files (a URL is rewritten)")
    fs, p = filesystem(path)
    store = protocol(path) in OBJECT_STORES
    target = path if (store or not atomic) else temp_name(path)
    tp = p if target is path else filesystem(target)[1]
    with errors(path, "write"):
        raw = fs.open(tp, "wb")
    if not atomic:
        upload = _Upload(raw, path, publish=True)
        return Output(path, upload, False, upload.close, upload.close)  # type: ignore[arg-type]

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
    return Output(path, pending, True, commit_remote, discard_remote)  # type: ignore[arg-type]
