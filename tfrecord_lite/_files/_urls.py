"""Paths and URLs: a URL that carries its ``storage_options``, names (join, split, temporary
names), the fsspec filesystem of a URL, and its errors translated to builtin ones that name it.

Local paths (``str``, ``os.PathLike``, ``file://...``) are left to the operating system
(:mod:`tfrecord_lite._files._fs` dispatches); anything else with ``://`` goes through
`fsspec <https://filesystem-spec.readthedocs.io>`_, imported only when a URL is used.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator, Mapping
from typing import Any, Optional, Union

__all__ = [
    "OBJECT_STORES",
    "URL",
    "bind",
    "errors",
    "filesystem",
    "full_url",
    "is_url",
    "join",
    "object_size",
    "options_of",
    "protocol",
    "split",
    "stat",
    "temp_name",
]

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


def full_url(url: str, fs_path: str) -> str:
    """A path the filesystem returned, as a URL written like ``url`` (same scheme,
    same leading slash, same options)."""
    scheme, rest = str(url).split("://", 1)
    name = fs_path.lstrip("/")
    if rest.startswith("/"):
        name = "/" + name
    full = f"{scheme}://{name}"
    return url.with_path(full) if isinstance(url, URL) else URL(full)


# --------------------------------------------------------------------------- an object's facts


def stat(url: str) -> Optional[dict[str, Any]]:
    """The filesystem's information on a URL (``type``, ``size`` ...), ``None`` if it is missing."""
    fs, p = filesystem(url)
    with errors(url, "read"):
        try:
            return dict(fs.info(p))
        except FileNotFoundError:
            return None


def object_size(url: str) -> int:
    """The size of the object at a URL in bytes (``IsADirectoryError`` for a directory)."""
    fs, p = filesystem(url)
    with errors(url, "read"):
        info = fs.info(p)
    if info.get("type") == "directory":
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(url))
    return int(info["size"])


def temp_name(path: str) -> str:
    """A hidden name beside ``path``: ``dir/.name.tmp-<random>`` (skipped by listings)."""
    directory, name = split(path)
    tmp = f".{name}.tmp-{secrets.token_hex(6)}"
    if is_url(path):
        return join(directory, tmp)
    return os.path.join(os.path.dirname(os.path.abspath(path)), tmp)
