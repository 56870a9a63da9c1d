"""Deflate and inflate for GZIP/ZLIB TFRecord files, with a fast backend when installed.

TensorFlow compresses with zlib. The bytes a deflate stream holds are not
unique: any encoder's output is a valid stream that every inflater (TensorFlow's
included) reads. So the encoder is ours to choose, and it is picked once per
writer or reader from the backends that are installed:

``isal``     Intel ISA-L (the ``fast`` extra, ``pip install "tfrecord-lite[fast]"``):
             deflate 10-40x and inflate 1.2-2.3x faster than zlib on this
             project's benchmark data; output within 0-8% of zlib's level 6 size
``zlib-ng``  ``pip install zlib-ng``: zlib's options exactly, deflate 2-3x faster
             at the same level; used only when asked for by name
``zlib``     the standard library: the exact bytes TensorFlow writes

Override with the environment variable ``TFRECORD_LITE_DEFLATE_BACKEND``
(``auto``, ``isal``, ``zlib-ng`` or ``zlib``), read each time a writer or
reader is created; naming a backend that is not installed is an ``ImportError``
with the line that installs it. ``zlib`` gives the bytes ``tf.io.TFRecordWriter``
writes, byte for byte.

``compression_level`` on ISA-L (which has levels 0-3, not zlib's 0-9):

=========================  ======================================================
zlib level (TF option)     what is used with the ``isal`` backend
=========================  ======================================================
-1 / None (TF's default)   ISA-L level 1 (zlib 6 is TensorFlow's default)
1 - 6                      ISA-L level 1
0 (store only)             zlib 0: ISA-L has no stored-only level
7 - 9                      zlib at that level: asked for the smallest output
=========================  ======================================================

ISA-L level 1 is the fastest of its levels and on this project's data its output
is as small as its level 2 and smaller than its level 3 (measured: see
``benchmarks/RESULTS.md``). A writer whose options ISA-L cannot honour uses
zlib: ``mem_level`` other than TensorFlow's 9, a ``compression_strategy`` other
than 0, or ``flush_mode=Z_PARTIAL_FLUSH``. Window bits 9-15 (and the gzip
forms) are honoured by every backend.

Reading: ISA-L's inflater cannot be copied, and a damaged stream must still
give back every record before the damage. So ISA-L inflates only streams that
can be read again from a known offset (local files); when it meets damage or a
premature end, the current gzip member is decoded again with zlib from its
start, the bytes already handed out are dropped, and zlib's own checks and error
messages decide. Other streams use zlib (or zlib-ng when asked for).
Decompression is always bounded: at most :data:`INFLATE_CHUNK` output bytes per
call, whatever the input claims.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Generator, Iterator
from typing import Any, Callable, Optional

from ._errors import CompressionError

__all__ = [
    "BACKEND_ORDER",
    "ENV_VAR",
    "INFLATE_CHUNK",
    "StreamEnd",
    "available_deflate_backends",
    "compressobj",
    "deflate_backend",
    "inflate",
    "isal_level",
]

#: Backends ``auto`` picks from, fastest first (zlib-ng only when asked for by name).
BACKEND_ORDER = ("isal", "zlib")
KNOWN = ("isal", "zlib-ng", "zlib")
ENV_VAR = "TFRECORD_LITE_DEFLATE_BACKEND"
#: At most this many decompressed bytes per inflate call (bounds memory on deflate bombs).
INFLATE_CHUNK = 1024 * 1024

_GZIP_MAGIC = b"\x1f\x8b"
_INSTALL = {
    "isal": 'pip install "tfrecord-lite[fast]"  (or: pip install isal)',
    "zlib-ng": "pip install zlib-ng",
}
_modules: dict[str, Any] = {}


def _module(name: str) -> Any:
    """The zlib-like module of backend ``name`` (imported lazily, cached); ImportError if absent."""
    mod = _modules.get(name)
    if mod is not None:
        return mod
    if name == "zlib":
        mod = zlib
    elif name == "isal":
        from isal import isal_zlib as mod  # type: ignore[import-not-found,no-redef,unused-ignore]
    elif name == "zlib-ng":
        from zlib_ng import zlib_ng as mod  # type: ignore[import-not-found,no-redef,unused-ignore]
    else:
        raise ValueError(
            f"unknown deflate backend {name!r}; expected auto or one of {', '.join(KNOWN)}"
        )
    _modules[name] = mod
    return mod


def _loads(name: str) -> bool:
    try:
        _module(name)
    except ImportError:
        return False
    return True


def available_deflate_backends() -> list[str]:
    """Names of the deflate backends installed here (``zlib`` is always there)."""
    return [name for name in KNOWN if _loads(name)]


def deflate_backend() -> str:
    """The backend in use now: ``TFRECORD_LITE_DEFLATE_BACKEND``, else the fastest installed.

    A backend named in the environment but not installed raises ``ImportError``.
    """
    forced = os.environ.get(ENV_VAR, "").strip().lower()
    if forced and forced != "auto":
        if forced not in KNOWN:
            raise ValueError(
                f"{ENV_VAR}={forced!r} is not a deflate backend; expected auto or one of "
                f"{', '.join(KNOWN)}"
            )
        try:
            _module(forced)
        except ImportError:
            raise ImportError(
                f"{ENV_VAR}={forced} but {forced} is not installed: {_INSTALL[forced]}"
            ) from None
        return forced
    for name in BACKEND_ORDER:
        if _loads(name):
            return name
    return "zlib"  # pragma: no cover - zlib always loads


def isal_level(level: int) -> Optional[int]:
    """The ISA-L level used for zlib ``level`` (-1 = default), or None when zlib is used."""
    if level == -1 or 1 <= level <= 6:
        return 1
    return None


def compressobj(
    level: int, wbits: int, mem_level: int, strategy: int, flush_mode: int = zlib.Z_NO_FLUSH
) -> tuple[Any, str]:
    """A compressor for one stream and the backend that makes it: ``(object, name)``.

    ``level``, ``wbits``, ``mem_level`` and ``strategy`` are zlib's
    (``zlib.compressobj``); ``flush_mode`` is the writer's per-record flush. The
    object has zlib's ``compress(data)`` / ``flush(mode)``.
    """
    backend = deflate_backend()
    if backend == "isal":
        mapped = isal_level(level)
        if (
            mapped is not None
            and mem_level == 9
            and strategy == 0
            and flush_mode != zlib.Z_PARTIAL_FLUSH
        ):
            mod = _module("isal")
            fast = mod.compressobj(mapped, zlib.DEFLATED, wbits, mem_level, 0)
            return _ZlibHeader(fast, _zlib_header(level, wbits, mem_level, strategy)), "isal"
        backend = "zlib"
    mod = _module(backend)
    return mod.compressobj(level, zlib.DEFLATED, wbits, mem_level, strategy), backend


def _zlib_header(level: int, wbits: int, mem_level: int, strategy: int) -> bytes:
    """The header zlib writes for these options: 10 bytes (gzip), 2 (zlib) or none (raw)."""
    size = 10 if wbits > 15 else 2 if wbits > 0 else 0
    if not size:
        return b""
    z = zlib.compressobj(level, zlib.DEFLATED, wbits, mem_level, strategy)
    return (z.compress(b"") + z.flush(zlib.Z_FULL_FLUSH))[:size]


class _ZlibHeader:
    """A compressor whose stream starts with zlib's header for the same options.

    ISA-L's own gzip header says OS "unknown" (255) and its zlib header another
    level; the deflate data after it is independent of the header, so writing
    zlib's header keeps the file's first bytes exactly TensorFlow's.
    """

    __slots__ = ("_head", "_z")

    def __init__(self, z: Any, head: bytes) -> None:
        self._z = z
        self._head = head

    def _fix(self, out: bytes) -> bytes:
        head = self._head
        n = min(len(head), len(out))
        self._head = head[n:]
        return head[:n] + out[n:]

    def compress(self, data: Any) -> bytes:
        out: bytes = self._z.compress(data)
        return self._fix(out) if self._head and out else out

    def flush(self, mode: int = zlib.Z_FINISH) -> bytes:
        out: bytes = self._z.flush(mode)
        return self._fix(out) if self._head and out else out


def _decompressobj(backend: str, wbits: int) -> Any:
    return _module(backend).decompressobj(wbits)


class StreamEnd(Exception):
    """Internal: the compressed input ended before the deflate stream did."""


#: ``restart(offset)``: the compressed stream again, from byte ``offset`` on.
Restart = Callable[[int], Iterator[bytes]]


def inflate(
    raw: Iterator[bytes],
    compression: str,
    path: Optional[str],
    restart: Optional[Restart] = None,
) -> Iterator[bytes]:
    """Decompress a GZIP (possibly several members) or ZLIB stream, in bounded chunks.

    Raises :class:`StreamEnd` (after yielding everything decodable) when the input
    ends before the stream's end marker, so the caller can say which record was
    cut; a damaged stream is a :class:`CompressionError` after everything before
    the damage was yielded. ``restart`` (a re-readable stream) lets the ISA-L
    backend be used: see the module docstring.
    """
    backend = deflate_backend()
    if backend == "isal" and restart is None:
        backend = "zlib"
    wbits = 31 if compression == "GZIP" else 15
    error = getattr(_module(backend), "error", zlib.error)
    z = _decompressobj(backend, wbits)
    consumed = 0  # compressed bytes handed to z so far
    member_start = 0  # compressed offset where z's member starts
    member_out = 0  # bytes z has produced (and we yielded) in this member
    skip = 0  # after a replay: output bytes to drop (already yielded)
    started = False
    padding = False  # zero bytes seen after a complete gzip member
    carry = b""  # bytes after a complete gzip member, too few to tell what follows
    it = raw
    while True:
        replay = False
        for block in it:
            data = carry + block if carry else block
            carry = b""
            while data:
                if z.eof:
                    # ``data`` follows a complete stream (the member may have ended
                    # exactly at a block boundary, so this is checked here, per block).
                    if compression != "GZIP":
                        return  # anything after a ZLIB stream is ignored, as TensorFlow does
                    if padding or data[0] == 0:
                        if data.strip(b"\x00"):
                            raise CompressionError(
                                "unexpected bytes after the zero padding that follows the "
                                f"GZIP stream (compressed byte {consumed}); the file is damaged",
                                path=path,
                            )
                        padding = True
                        consumed += len(data)
                        break
                    if len(data) < 2:
                        carry = data
                        break
                    if data[:2] != _GZIP_MAGIC:
                        raise CompressionError(
                            "unexpected bytes after the end of the GZIP stream (compressed "
                            f"byte {consumed}): not a gzip member; the file is damaged",
                            path=path,
                        )
                    z = _decompressobj(backend, wbits)  # the next concatenated member
                    member_start, member_out = consumed, 0
                started = True
                saved = z.copy() if backend != "isal" else None
                try:
                    out = z.decompress(data, INFLATE_CHUNK)
                except error as err:
                    if saved is None:
                        replay = True
                        break
                    # zlib drops the output of a call that fails: decode again up to the
                    # damage, so the intact records before it are still returned.
                    bad = yield from _salvage(saved, data, error, skip)
                    raise CompressionError(
                        f"the {compression} stream is damaged: {err} (noticed at compressed "
                        f"byte {consumed + bad}); the file is corrupt, or is not {compression}",
                        path=path,
                    ) from None
                if out:
                    member_out += len(out)
                    if skip:
                        cut = min(skip, len(out))
                        skip -= cut
                        out = out[cut:]
                    if out:
                        yield out
                rest = z.unused_data if z.eof else z.unconsumed_tail
                consumed += len(data) - len(rest)
                data = rest
            if replay:
                break
        if not replay and backend == "isal" and started and not z.eof and not carry:
            replay = True  # a premature end: let zlib judge it, from the member's start
        if not replay:
            break
        # ISA-L met damage (or an early end): decode this member again with zlib.
        assert restart is not None
        backend, error = "zlib", zlib.error
        z = _decompressobj(backend, wbits)
        skip, member_out = member_out, 0
        consumed, carry, padding = member_start, b"", False
        it = restart(member_start)
    if carry:  # one byte after the last member: the start of a member, cut short?
        if carry != _GZIP_MAGIC[:1]:
            raise CompressionError(
                f"unexpected byte after the end of the GZIP stream (compressed byte "
                f"{consumed}): not a gzip member; the file is damaged",
                path=path,
            )
        raise StreamEnd()
    if started and not z.eof:
        try:
            tail = z.flush()
        except error as err:  # pragma: no cover - flush() of an inflater rarely fails
            raise CompressionError(
                f"the {compression} stream is damaged: {err}", path=path
            ) from None
        if tail and skip:
            cut = min(skip, len(tail))
            skip -= cut
            tail = tail[cut:]
        if tail:
            yield tail
        if not z.eof:
            raise StreamEnd()


def _salvage(z: Any, data: bytes, error: Any, skip: int) -> Generator[bytes, None, int]:
    """Yield what ``z`` decompresses from ``data`` before the first byte it rejects
    (less the first ``skip`` bytes, already handed out).

    Returns the offset in ``data`` of that byte (where the inflater noticed the damage).
    """
    pos = 0
    step = 4096
    while pos < len(data) and not z.eof:
        piece = data[pos : pos + step]
        saved = z.copy()
        try:
            out = z.decompress(piece, INFLATE_CHUNK)
        except error:
            if step == 1:
                return pos
            z, step = saved, 1  # find the exact byte
            continue
        if out and skip:
            cut = min(skip, len(out))
            skip -= cut
            out = out[cut:]
        if out:
            yield out
        pos += len(piece) - len(z.unconsumed_tail)
    return pos
