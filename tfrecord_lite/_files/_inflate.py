"""Inflating GZIP/ZLIB TFRecord files, bounded, inline or ahead in a thread.

ISA-L's inflater cannot be copied, and a damaged stream must still
give back every record before the damage. So ISA-L inflates only streams that
can be read again from a known offset (seekable files); when it meets damage or
a premature end, the current gzip member is decoded again with zlib from its
start, the bytes already handed out are dropped, and zlib's own checks and error
messages decide. Other streams use zlib-ng (when installed) or zlib.
Decompression is always bounded: at most :data:`INFLATE_CHUNK` output bytes per
call, whatever the input claims. Each call is given about the compressed input
that fills that bound at the stream's ratio so far (:data:`INFLATE_FEED_MIN`),
not a whole block read: what the bound leaves unread, inflaters hand back as a
copy. A file reader gets :data:`READ_CHUNK` (512 KiB) of inflated data at a time.

Inflating ahead: every backend's inflater lets other threads run while it works,
so a compressed stream that is not a local file (an object store's, a file
object's), of at least :data:`AHEAD_MIN_BYTES` or of unknown size, is read and
inflated in a background thread (:func:`inflate_ahead`) while the caller frames
and checks the records already inflated, on machines with more than one core:
there the thread also hides the waits for the network. A local file is inflated
inline (:data:`AHEAD_LOCAL`), as measured below. The thread keeps at most
:data:`AHEAD_DEPTH` (3) inflated chunks of at most :data:`AHEAD_CHUNK` (512 KiB)
waiting for the reader, besides the one it is inflating: with the reader's own, at most 2.5 MiB of inflated data
exist at a time (inline: one :data:`READ_CHUNK`, 512 KiB, plus the reader's
buffer), so memory stays flat and a deflate bomb is refused in bounded memory.
Several smaller chunks in the queue absorb scheduling delays on a busy machine
better than one big one. The overlap is not free: each inflate call returns into
Python, so every chunk passes the GIL between the two threads, and where that
hand-off is slow (a small virtual machine) it costs what the overlap gains. On
the 2-vCPU machine of the benchmarks, reading the 51 MB MNIST-like GZIP file
took 85-100 ms inline and 97-113 ms with the thread (bigger chunks, 1-2 MiB,
were slower still: their fresh buffers cost page faults), hence local files are
inflated inline, unless a parser reads their records (a dataset's ``parse``,
:data:`AHEAD_PARSED`): parsing a chunk takes long enough for the thread to
inflate the next between two hand-offs. ``parse(spec).batch(1024)`` over the
same file (the benchmarks' ``mnist_gzip_parse``): 588 krec/s inline, 668 with the
thread; over the taxi-like GZIP shards, medians within 8% either way.
``TFRECORD_LITE_THREADS=1`` reads every stream inline.
Records, errors and their positions are the same as inflating inline: the thread's exception is raised in
the reader. Closing the reader (or dropping it) stops and joins the thread.

The backends (ISA-L, zlib-ng, zlib) and the choice between them are
:mod:`tfrecord_lite._files._compress`'s.
"""

from __future__ import annotations

import zlib
from collections.abc import Generator, Iterator
from typing import Any, Callable, Optional, Union

from .._errors import CompressionError
from . import _compress
from ._ahead import ReadAhead
from ._compress import _module, inflate_backend
from ._sniff import GZIP_MAGIC

__all__ = [
    "AHEAD_CHUNK",
    "AHEAD_DEPTH",
    "AHEAD_MIN_BYTES",
    "AHEAD_THREAD",
    "INFLATE_CHUNK",
    "INFLATE_FEED_MIN",
    "READ_CHUNK",
    "SMALL_MEMBER",
    "StreamEnd",
    "ahead_pays",
    "inflate",
    "inflate_ahead",
]

#: At most this many decompressed bytes per inflate call (bounds memory on deflate bombs).
INFLATE_CHUNK = 1024 * 1024
#: A GZIP member that inflates to less than this switches the members after it from
#: ISA-L to zlib-ng (or zlib): 100,000 one-record members read in 0.51 s with zlib-ng,
#: 0.92 s with ISA-L.
SMALL_MEMBER = 64 * 1024
#: The least compressed input one inflate call is given. Each call gets about the
#: input that fills its output bound at the ratio the stream has had so far (the
#: first a quarter of the bound): input the bound leaves unread comes back as a
#: copy (``unconsumed_tail``), so feeding much more than that costs a copy per call.
INFLATE_FEED_MIN = 16 * 1024


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
    chunk: int = INFLATE_CHUNK,
) -> Iterator[bytes]:
    """Decompress a GZIP (possibly several members) or ZLIB stream, in bounded chunks
    (at most ``chunk`` <= :data:`INFLATE_CHUNK` bytes each).

    Raises :class:`StreamEnd` (after yielding everything decodable) when the input
    ends before the stream's end marker, so the caller can say which record was
    cut; a damaged stream is a :class:`CompressionError` after everything before
    the damage was yielded. ``restart`` (a re-readable stream) lets the ISA-L
    backend be used: see the module docstring.

    The output of small GZIP members is joined up to ``chunk`` bytes (within one
    block of input: nothing is held back while the next block is read), so a file
    of a million one-record members costs the reader a few hundred chunks, not a
    million.
    """
    chunk = max(1, min(chunk, INFLATE_CHUNK))
    held: list[bytes] = []
    size = 0
    try:
        for out in _inflate(raw, compression, path, restart, chunk):
            if out and size + len(out) <= chunk:
                held.append(out)
                size += len(out)
                continue
            if held:  # at ``chunk``, or the input block is used up (b"")
                yield held[0] if len(held) == 1 else b"".join(held)
                held.clear()
                size = 0
            if out:
                held.append(out)
                size = len(out)
    except GeneratorExit:
        raise
    except BaseException:
        if held:  # what came before an error or an early end is handed out first
            yield held[0] if len(held) == 1 else b"".join(held)
        raise
    if held:
        yield held[0] if len(held) == 1 else b"".join(held)


def _inflate(
    raw: Iterator[bytes],
    compression: str,
    path: Optional[str],
    restart: Optional[Restart],
    chunk: int,
) -> Iterator[bytes]:
    """:func:`inflate`'s output as the inflater makes it, and ``b""`` before each
    block of input is read (where :func:`inflate` hands out what it holds)."""
    backend = inflate_backend(restart is not None)
    wbits = 31 if compression == "GZIP" else 15
    chunk = max(1, min(chunk, INFLATE_CHUNK))
    feed = max(INFLATE_FEED_MIN, chunk // 4)
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
            # A view: moving past the bytes inflated copies nothing.
            data = memoryview(carry + block if carry else block)
            carry = b""
            while data:
                if z.eof:
                    # ``data`` follows a complete stream (the member may have ended
                    # exactly at a block boundary, so this is checked here, per block).
                    if compression != "GZIP":
                        return  # anything after a ZLIB stream is ignored, as TensorFlow does
                    if padding or data[0] == 0:
                        if bytes(data).strip(b"\x00"):
                            raise CompressionError(
                                "unexpected bytes after the zero padding that follows the "
                                f"GZIP stream (compressed byte {consumed}); the file is damaged",
                                path=path,
                            )
                        padding = True
                        consumed += len(data)
                        break
                    if len(data) < 2:
                        carry = bytes(data)
                        break
                    if data[:2] != GZIP_MAGIC:
                        raise CompressionError(
                            "unexpected bytes after the end of the GZIP stream (compressed "
                            f"byte {consumed}): not a gzip member; the file is damaged",
                            path=path,
                        )
                    if backend == "isal" and member_out < SMALL_MEMBER:
                        # Small members: ISA-L's setup per stream costs more than its
                        # speed gains; zlib-ng's (or zlib's) is cheaper.
                        backend = inflate_backend(False)
                        error = getattr(_module(backend), "error", zlib.error)
                    z = _decompressobj(backend, wbits)  # the next concatenated member
                    member_start, member_out = consumed, 0
                started = True
                saved = z.copy() if backend != "isal" else None
                # At most ``feed`` compressed bytes per call (see INFLATE_FEED_MIN).
                piece = data if len(data) <= feed else data[:feed]
                try:
                    out = z.decompress(piece, chunk)
                except error as err:
                    if saved is None:
                        replay = True
                        break
                    # zlib drops the output of a call that fails: decode again up to the
                    # damage, so the intact records before it are still returned.
                    bad = yield from _salvage(saved, data, error, skip, chunk)
                    raise CompressionError(
                        f"the {compression} stream is damaged: {err} (noticed at compressed "
                        f"byte {consumed + bad}); the file is corrupt, or is not {compression}",
                        path=path,
                    ) from None
                made = len(out)
                if made:
                    member_out += made
                    out, skip = _drop(out, skip)
                    if out:
                        yield out
                used = len(piece) - len(z.unused_data if z.eof else z.unconsumed_tail)
                if made and used:
                    feed = max(INFLATE_FEED_MIN, min(chunk, used * chunk // made))
                consumed += used
                data = data[used:]
            if replay:
                break
            yield b""  # the next block may keep the reader waiting
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
        if carry != GZIP_MAGIC[:1]:
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
        tail, skip = _drop(tail, skip)
        if tail:
            yield tail
        if not z.eof:
            raise StreamEnd()


def _drop(out: bytes, skip: int) -> tuple[bytes, int]:
    """``out`` less its first ``skip`` bytes (already handed out), and what is left to skip."""
    if not skip or not out:
        return out, skip
    cut = min(skip, len(out))
    return out[cut:], skip - cut


def _salvage(
    z: Any, data: Union[bytes, memoryview], error: Any, skip: int, chunk: int
) -> Generator[bytes, None, int]:
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
            out = z.decompress(piece, chunk)
        except error:
            if step == 1:
                return pos
            z, step = saved, 1  # find the exact byte
            continue
        out, skip = _drop(out, skip)
        if out:
            yield out
        pos += len(piece) - len(z.unconsumed_tail)
    return pos


# --------------------------------------------------------------------------- inflating ahead

#: Compressed streams at least this big (or of unknown size) are inflated in a thread.
AHEAD_MIN_BYTES = 512 * 1024
#: Inflated chunks the background thread may keep waiting for the reader (0: no thread).
AHEAD_DEPTH = 3
#: Whether local files are inflated ahead too (reading a local file, the GIL hand-off
#: per chunk costs more than the overlap gains; see the module docstring).
AHEAD_LOCAL = False
#: Whether a local file whose records a parser reads is inflated ahead all the same:
#: the parse between two chunks gives the thread time to run (see the module docstring).
AHEAD_PARSED = True
#: The most bytes one inflated chunk a file reader gets holds, inline or ahead. Half
#: of :data:`INFLATE_CHUNK`: fresh output buffers of 1 MiB cost page faults that
#: 512 KiB ones mostly do not (inflating the benchmark's 51 MB GZIP file and framing
#: its records inline: 112 ms in 1 MiB chunks, 91 ms in 512 KiB ones; 256 KiB: 92).
READ_CHUNK = 512 * 1024
#: The most bytes one chunk inflated ahead holds.
AHEAD_CHUNK = READ_CHUNK
#: The name of the thread that inflates a stream ahead.
AHEAD_THREAD = "tfrecord_lite-inflate"


def ahead_pays(compressed_size: Optional[int], local: bool = False, parsed: bool = False) -> bool:
    """Whether a stream of ``compressed_size`` bytes (None: unknown) is inflated in a
    thread; ``local``: it is a local file (inline unless :data:`AHEAD_LOCAL`, or
    ``parsed`` and :data:`AHEAD_PARSED`); ``parsed``: a parser reads its records."""
    if AHEAD_DEPTH < 1 or _compress._cores() < 2:  # (looked up in its module: replaceable)
        return False
    if local and not (AHEAD_LOCAL or (parsed and AHEAD_PARSED)):
        return False
    return compressed_size is None or compressed_size >= AHEAD_MIN_BYTES


def inflate_ahead(
    raw: Iterator[bytes],
    compression: str,
    path: Optional[str],
    restart: Optional[Restart] = None,
    compressed_size: Optional[int] = None,
    local: bool = False,
    parsed: bool = False,
) -> Iterator[bytes]:
    """:func:`inflate`, in a background thread when that pays (see :func:`ahead_pays`).

    The result has ``close()``: call it before closing the file ``raw`` reads,
    so the thread has stopped reading it.
    """
    if not ahead_pays(compressed_size, local, parsed):
        return inflate(raw, compression, path, restart, READ_CHUNK)
    return ReadAhead(
        inflate(raw, compression, path, restart, AHEAD_CHUNK),
        AHEAD_DEPTH,
        name=AHEAD_THREAD,
        what="this GZIP/ZLIB reader",
        again="open the file again in this process",
    )
