"""Deflate and inflate for GZIP/ZLIB TFRecord files, with a fast backend when installed.

TensorFlow compresses with zlib. The bytes a deflate stream holds are not
unique: any encoder's output is a valid stream that every inflater (TensorFlow's
included) reads. So the encoder is ours to choose:

``isal``     Intel ISA-L (the ``fast`` extra, ``pip install "tfrecord-lite[fast]"``):
             deflate 10-15x and inflate 1.2-2.3x faster than zlib here, but its
             output is 0-35% bigger than zlib's level 6 (about equal on
             incompressible data such as JPEGs, far bigger on repetitive tabular
             records)
``zlib-ng``  ``pip install zlib-ng``: zlib's options, output no bigger than zlib's at
             the same level, deflate 1.6-2.7x and inflate 1.2-2x faster
``zlib``     the standard library: the exact bytes TensorFlow writes

``TFRECORD_LITE_DEFLATE_BACKEND`` (read each time a writer or reader is created)
chooses: ``auto`` (default), ``isal``, ``zlib-ng`` or ``zlib``. Naming a backend
that is not installed is an ``ImportError`` with the line that installs it.
``zlib`` gives the bytes ``tf.io.TFRecordWriter`` writes, byte for byte.

``auto`` keeps files as small as TensorFlow's: each writer compresses its first
:data:`TRIAL_BYTES` with ISA-L and with zlib (zlib-ng when installed) and keeps
ISA-L only when its output is at most 3% bigger (:data:`SIZE_TOLERANCE`);
otherwise it goes on with zlib (zlib-ng). Without ISA-L, ``auto`` is zlib-ng when
installed, else zlib, silently.

``compression_level`` on ISA-L (which has levels 0-3, not zlib's 0-9):

=========================  ======================================================
zlib level (TF option)     used with ISA-L
=========================  ======================================================
-1 (TF's default = zlib 6)  ISA-L level 1
1 - 6                      ISA-L level 1
0 (store only)             zlib 0: ISA-L has no stored-only level
7 - 9                      zlib (zlib-ng) at that level: asked for the smallest output
=========================  ======================================================

ISA-L level 1 is its fastest level, and on the benchmark data its output is
within 2% of its levels 2 and 3. A writer whose options ISA-L cannot honour uses
zlib: ``mem_level`` other than TensorFlow's 9, a ``compression_strategy`` other
than 0, or ``flush_mode=Z_PARTIAL_FLUSH``. Window bits 9-15 (and the gzip forms)
are honoured by every backend. Whatever encodes the data, the file starts with
the header zlib writes for the same options.

Reading: ISA-L's inflater cannot be copied, and a damaged stream must still
give back every record before the damage. So ISA-L inflates only streams that
can be read again from a known offset (seekable files); when it meets damage or
a premature end, the current gzip member is decoded again with zlib from its
start, the bytes already handed out are dropped, and zlib's own checks and error
messages decide. Other streams use zlib-ng (when installed) or zlib.
Decompression is always bounded: at most :data:`INFLATE_CHUNK` output bytes per
call, whatever the input claims.

Inflating ahead: every backend's inflater lets other threads run while it works,
so a compressed stream of at least :data:`AHEAD_MIN_BYTES` (or of unknown size)
is read and inflated in a background thread (:func:`inflate_ahead`) while the
caller frames and checks the records already inflated, on machines with more
than one core. The thread holds at most :data:`AHEAD_DEPTH` inflated chunks
(each at most :data:`INFLATE_CHUNK` bytes) that the reader has not taken yet,
so memory stays flat and decompression stays bounded. Records, errors and their
positions are the same as inflating inline: the thread's exception is raised in
the reader. Closing the reader (or dropping it) stops and joins the thread.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import zlib
from collections.abc import Generator, Iterator
from typing import Any, Callable, Optional, Union

from ._errors import CompressionError

__all__ = [
    "AHEAD_DEPTH",
    "AHEAD_MIN_BYTES",
    "BACKEND_ORDER",
    "ENV_VAR",
    "INFLATE_CHUNK",
    "SIZE_TOLERANCE",
    "TRIAL_BYTES",
    "StreamEnd",
    "available_deflate_backends",
    "compressobj",
    "configured_backend",
    "deflate_backend",
    "inflate",
    "inflate_ahead",
    "inflate_backend",
    "isal_level",
]

#: Inflaters ``auto`` picks from, fastest first (zlib-ng, when installed, before zlib).
BACKEND_ORDER = ("isal", "zlib-ng", "zlib")
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


def configured_backend() -> str:
    """``TFRECORD_LITE_DEFLATE_BACKEND`` checked: ``auto`` (unset) or an installed backend.

    A backend named there but not installed raises ``ImportError``; an unknown
    name ``ValueError``.
    """
    forced = os.environ.get(ENV_VAR, "").strip().lower()
    if not forced or forced == "auto":
        return "auto"
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


def _exact() -> str:
    """The encoder ``auto`` uses where ISA-L is not good enough: zlib-ng, else zlib."""
    return "zlib-ng" if _loads("zlib-ng") else "zlib"


def deflate_backend() -> str:
    """The deflate backend a writer uses now, before it sees data.

    ``auto`` (the default) reports ``isal`` when installed: a writer then judges
    ISA-L on its first :data:`TRIAL_BYTES` (see :func:`compressobj`).
    """
    name = configured_backend()
    if name != "auto":
        return name
    return "isal" if _loads("isal") else _exact()


def inflate_backend(restartable: bool) -> str:
    """The inflater for a stream (``restartable``: it can be read again from an offset)."""
    name = configured_backend()
    if name == "auto":
        name = "isal" if _loads("isal") else _exact()
    if name == "isal" and not restartable:
        name = _exact()
    return name


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

    With ``auto`` the name is ``"auto"``: the object compresses its first
    :data:`TRIAL_BYTES` with ISA-L and with zlib (zlib-ng when installed) and keeps
    ISA-L only if its output is at most :data:`SIZE_TOLERANCE` times zlib's; its
    ``backend`` attribute says which one it kept.
    """
    name = configured_backend()
    isal_ok = (
        isal_level(level) is not None
        and mem_level == 9
        and strategy == 0
        and flush_mode != zlib.Z_PARTIAL_FLUSH
    )
    if name == "auto":
        if isal_ok and _loads("isal"):
            return _Trial(level, wbits, mem_level, strategy), "auto"
        name = _exact()
    if name == "isal":
        if isal_ok:
            return _isal_compressobj(level, wbits, mem_level, strategy), "isal"
        name = "zlib"
    mod = _module(name)
    return mod.compressobj(level, zlib.DEFLATED, wbits, mem_level, strategy), name


def _isal_compressobj(level: int, wbits: int, mem_level: int, strategy: int) -> Any:
    mapped = isal_level(level)
    assert mapped is not None
    fast = _module("isal").compressobj(mapped, zlib.DEFLATED, wbits, mem_level, 0)
    return _ZlibHeader(fast, _zlib_header(level, wbits, mem_level, strategy))


#: Bytes an ``auto`` writer judges ISA-L on (its first input, or all of it if less).
TRIAL_BYTES = 128 * 1024
#: ``auto`` keeps ISA-L when its output is at most this many times zlib's.
SIZE_TOLERANCE = 1.03


class _Trial:
    """A compressor that picks ISA-L or the exact encoder on its first input.

    Its first :data:`TRIAL_BYTES` are compressed by the exact encoder (the stream
    it would write) and, on the side, by ISA-L in one shot; ISA-L is kept when its
    output is not more than :data:`SIZE_TOLERANCE` times bigger. The exact
    encoder's work on the sample is kept when it wins, so choosing it costs one
    ISA-L pass over the sample; choosing ISA-L costs one exact pass.
    """

    __slots__ = ("_args", "_n", "_pending", "_z", "backend")

    def __init__(self, level: int, wbits: int, mem_level: int, strategy: int) -> None:
        self._args = (level, wbits, mem_level, strategy)
        self._pending: list[bytes] = []
        self._n = 0
        self._z: Any = None
        #: ``"isal"`` or the exact encoder's name once decided; ``""`` before.
        self.backend = ""

    def _decide(self) -> bytes:
        level, wbits, mem_level, strategy = self._args
        sample = b"".join(self._pending)
        self._pending = []
        exact = _exact()
        z = _module(exact).compressobj(level, zlib.DEFLATED, wbits, mem_level, strategy)
        head = z.compress(sample)
        exact_size = len(head) + len(z.copy().flush(zlib.Z_FINISH))
        mapped = isal_level(level)
        fast_size = len(_module("isal").compress(sample, mapped, -15)) if sample else 0
        if fast_size <= exact_size * SIZE_TOLERANCE:
            self._z = _isal_compressobj(level, wbits, mem_level, strategy)
            self.backend = "isal"
            return bytes(self._z.compress(sample))
        self._z = z
        self.backend = exact
        return bytes(head)

    def compress(self, data: Any) -> bytes:
        if self._z is not None:
            out: bytes = self._z.compress(data)
            return out
        self._pending.append(bytes(data))
        self._n += len(data)
        if self._n < TRIAL_BYTES:
            return b""
        return self._decide()

    def flush(self, mode: int = zlib.Z_FINISH) -> bytes:
        head = self._decide() if self._z is None else b""
        out: bytes = self._z.flush(mode)
        return head + out if head else out


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
    backend = inflate_backend(restart is not None)
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


# --------------------------------------------------------------------------- inflating ahead

#: Compressed streams at least this big (or of unknown size) are inflated in a thread.
AHEAD_MIN_BYTES = 512 * 1024
#: Inflated chunks the background thread may hold that the reader has not taken yet.
AHEAD_DEPTH = 4


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def ahead_pays(compressed_size: Optional[int]) -> bool:
    """Whether a stream of ``compressed_size`` bytes (None: unknown) is inflated in a thread."""
    if AHEAD_DEPTH < 1 or _cores() < 2:
        return False
    return compressed_size is None or compressed_size >= AHEAD_MIN_BYTES


class _Failed:
    """The background thread's exception, queued after the chunks before it."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_END = _Failed(StopIteration())  # queued when the stream ended normally


def _produce(
    source: Iterator[bytes], q: queue.Queue[Union[bytes, _Failed]], stop: threading.Event
) -> None:
    """The background thread of :class:`ReadAhead`: ``source``'s chunks, then its end."""
    end: _Failed = _END
    try:
        for chunk in source:
            q.put(chunk)
            if stop.is_set():
                return
    except BaseException as err:  # handed to the reader, raised there
        end = _Failed(err)
    finally:
        close = getattr(source, "close", None)
        try:
            if close is not None:
                close()
        except BaseException as err:  # pragma: no cover - a generator's own cleanup
            if end is _END:
                end = _Failed(err)
    if not stop.is_set():
        q.put(end)


class ReadAhead:
    """The chunks of an iterator, produced by a background thread ahead of the reader.

    At most :data:`AHEAD_DEPTH` chunks wait in the queue; an exception the
    iterator raises is raised by :meth:`__next__` after the chunks before it.
    :meth:`close` (also on garbage collection) stops and joins the thread, which
    closes the iterator in that thread. Iterating goes on in the thread that
    created the object; the source must not be touched by anyone else meanwhile.
    """

    def __init__(self, source: Iterator[bytes], depth: int = AHEAD_DEPTH) -> None:
        self._queue: queue.Queue[Union[bytes, _Failed]] = queue.Queue(max(1, depth))
        self._stop = threading.Event()
        self._done = False
        # The thread gets the queue and the event, not ``self``: a reader that is
        # dropped unclosed is collected, and its __del__ stops the thread.
        self._thread = threading.Thread(
            target=_produce,
            args=(source, self._queue, self._stop),
            name="tfrecord_lite-inflate",
            daemon=True,
        )
        self._thread.start()

    def __iter__(self) -> ReadAhead:
        return self

    def __next__(self) -> bytes:
        if self._done:
            raise StopIteration
        get = self._queue.get
        while True:
            try:
                item = get(timeout=1.0)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    # Only after a fork: the child has no copy of the thread.
                    self._done = True
                    raise RuntimeError(
                        "this GZIP/ZLIB reader was started in another process (before a "
                        "fork): its inflating thread is not in this one; open the file "
                        "again in this process"
                    ) from None
        if type(item) is _Failed:
            self._done = True
            self._thread.join()
            if item is _END:
                raise StopIteration
            raise item.error
        return item  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the thread (it closes the source) and wait for it. Idempotent."""
        self._done = True
        self._stop.set()
        thread = self._thread
        if thread.ident is None or thread is threading.current_thread():
            return
        q = self._queue
        while thread.is_alive():
            try:  # make room: a put the thread is blocked in returns, it sees the stop
                while True:
                    q.get_nowait()
            except queue.Empty:
                pass
            thread.join(0.05)
        try:
            while True:
                q.get_nowait()  # drop the chunks nobody will read
        except queue.Empty:
            pass

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def inflate_ahead(
    raw: Iterator[bytes],
    compression: str,
    path: Optional[str],
    restart: Optional[Restart] = None,
    compressed_size: Optional[int] = None,
) -> Iterator[bytes]:
    """:func:`inflate`, in a background thread when that pays (see :func:`ahead_pays`).

    The result has ``close()``: call it before closing the file ``raw`` reads,
    so the thread has stopped reading it.
    """
    chunks = inflate(raw, compression, path, restart)
    if not ahead_pays(compressed_size):
        return chunks
    return ReadAhead(chunks)
