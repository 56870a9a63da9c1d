"""Deflate and inflate for GZIP/ZLIB TFRecord files, with a fast backend when installed.

TensorFlow compresses with zlib. The bytes a deflate stream holds are not
unique: any encoder's output is a valid stream that every inflater (TensorFlow's
included) reads. So the encoder is ours to choose:

``isal``     Intel ISA-L (the ``fast`` extra, ``pip install "tfrecord-lite-np[fast]"``):
             deflate 10-15x and inflate 1.2-2.3x faster than zlib here, but its
             output is 0-35% bigger than zlib's level 6 (about equal on
             incompressible data such as JPEGs, far bigger on repetitive tabular
             records)
``zlib-ng``  ``pip install zlib-ng``: zlib's options, output no bigger than zlib's at
             the same level, deflate 1.6-2.7x and inflate 1.2-2x faster
``zlib``     the standard library: the exact bytes TensorFlow writes

``TFRECORD_LITE_DEFLATE_BACKEND`` or ``tfr.options(deflate_backend=...)`` (read each
time a writer or reader is created) chooses: ``auto`` (default), ``isal``, ``zlib-ng``
or ``zlib``. Naming a backend that is not installed is an ``ImportError`` with the
line that installs it.
``zlib`` gives the bytes ``tf.io.TFRecordWriter`` writes, byte for byte.

``auto`` keeps files as small as TensorFlow's (within 3%) and writes them as
fast as that allows. Each writer compresses its first :data:`TRIAL_BYTES` with
the standard library's zlib at the level asked for (the size TensorFlow gets)
and with a ladder of faster encoders, fastest first: ISA-L level 1, then zlib-ng
at up to :data:`LADDER_STEPS` levels below the one asked for (for the default,
zlib level 6: zlib-ng 4, then 5). It keeps the first whose output is at most
:data:`SIZE_TOLERANCE` (1.03) times zlib's, else zlib-ng (zlib when zlib-ng is
not installed) at the level asked for. Without the fast extra, ``auto`` is
zlib, silently.

How ``compression_level`` maps onto the backends:

==========================  ================================  ========================
zlib level (TF option)      ``auto``: first within 3% of       ``isal`` / ``zlib-ng``
                            zlib's size on the sample          by name
==========================  ================================  ========================
-1 (TF's default = zlib 6)  ISA-L 1, zlib-ng 4, 5, zlib-ng 6   ISA-L 1 / zlib-ng 6
1 - 6 (``L``)               ISA-L 1, zlib-ng L-2, L-1, L       ISA-L 1 / zlib-ng L
0 (store only)              zlib-ng 0                          zlib 0 / zlib-ng 0
7 - 9                       zlib-ng at that level              zlib / zlib-ng: that level
==========================  ================================  ========================

Levels 7-9 ask for the smallest output, and get it at that level. ISA-L has
levels 0-3, not zlib's 0-9; its level 1 is its fastest, and within 2% of its
levels 2 and 3 on the benchmark data. A writer whose options ISA-L cannot honour
uses zlib (or, with ``auto``, zlib-ng at the level asked for): ``mem_level``
other than TensorFlow's 9, a ``compression_strategy`` other than 0, or
``flush_mode=Z_PARTIAL_FLUSH``. Window bits 9-15 (and the gzip forms) are
honoured by every backend. Whatever encodes the data, the file starts with the
header zlib writes for the same options (level included).

Deflating over threads: on a machine with more than one core, ISA-L and zlib-ng
(never ``zlib`` by name, whose bytes are TensorFlow's) deflate
``DEFLATE_CHUNK`` (1 MiB) at a time on a thread per core (at most 8), the way pigz
does: each chunk is primed with the 32 KiB of input before it (the deflate
window; so sizes stay within about 0.1% of one stream's), ends with a sync flush,
and the chunks joined behind zlib's header and followed by the CRC-32 and size
(GZIP) or Adler-32 (ZLIB) of the whole input are one ordinary deflate stream.
At most two chunks per thread are in flight. A writer with a per-record
``flush_mode`` deflates in its own thread; so does a file of one chunk. The chunked
stream is :mod:`tfrecord_lite._files._deflate_parallel`'s.

Inflating (reading) is :mod:`tfrecord_lite._files._inflate`'s; it uses the
backends chosen here (:func:`inflate_backend`).
"""

from __future__ import annotations

import zlib
from typing import Any, Optional

from .. import _settings
from ._deflate_parallel import ChunkedDeflate, raw_bits
from ._map_ahead import cores

__all__ = [
    "BACKEND_ORDER",
    "ENV_VAR",
    "SIZE_TOLERANCE",
    "THREADS_ENV",
    "TRIAL_BYTES",
    "available_deflate_backends",
    "compressobj",
    "configured_backend",
    "deflate_backend",
    "deflate_threads",
    "inflate_backend",
    "isal_level",
]

#: Inflaters ``auto`` picks from, fastest first (zlib-ng, when installed, before zlib).
BACKEND_ORDER = ("isal", "zlib-ng", "zlib")
KNOWN = ("isal", "zlib-ng", "zlib")
ENV_VAR = _settings.SETTINGS["deflate_backend"].variable
_INSTALL = {
    "isal": 'pip install "tfrecord-lite-np[fast]"  (or: pip install isal)',
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
    """The backend asked for (``tfr.options(deflate_backend=...)``, else
    ``TFRECORD_LITE_DEFLATE_BACKEND``) checked: ``auto`` (unset) or an installed backend.

    A backend named there but not installed raises ``ImportError``; an unknown
    name ``ValueError``.
    """
    forced = _settings.deflate_backend()  # checked there: auto or a known name
    if forced == "auto":
        return "auto"
    try:
        _module(forced)
    except ImportError:
        raise ImportError(
            f"the deflate backend {forced} was asked for ({ENV_VAR} or "
            f"tfr.options(deflate_backend=...)) but is not installed: {_INSTALL[forced]}"
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


def _zlib_level(level: int) -> int:
    """zlib's own level for ``level`` (-1, the default, is 6)."""
    return 6 if level == -1 else level


def _isal_honours(mem_level: int, strategy: int, flush_mode: int) -> bool:
    """Whether ISA-L can honour these zlib options (``auto`` tries faster encoders only then)."""
    return mem_level == 9 and strategy == 0 and flush_mode != zlib.Z_PARTIAL_FLUSH


def _ladder(level: int, mem_level: int, strategy: int, flush_mode: int) -> list[tuple[str, int]]:
    """The faster encoders ``auto`` tries on a writer's sample, fastest first:
    ``(backend, its level)``; empty when only the exact encoder is right."""
    if not _isal_honours(mem_level, strategy, flush_mode):
        return []
    out: list[tuple[str, int]] = []
    mapped = isal_level(level)
    if mapped is not None and _loads("isal"):
        out.append(("isal", mapped))
    zl = _zlib_level(level)
    if 1 <= zl <= 6 and _loads("zlib-ng"):
        out.extend(("zlib-ng", lv) for lv in range(max(1, zl - LADDER_STEPS), zl))
    return out


def compressobj(
    level: int, wbits: int, mem_level: int, strategy: int, flush_mode: int = zlib.Z_NO_FLUSH
) -> tuple[Any, str]:
    """A compressor for one stream and the backend that makes it: ``(object, name)``.

    ``level``, ``wbits``, ``mem_level`` and ``strategy`` are zlib's
    (``zlib.compressobj``); ``flush_mode`` is the writer's per-record flush. The
    object has zlib's ``compress(data)`` / ``flush(mode)`` and ``close()`` (stops
    its threads, if any, without finishing the stream).

    With ``auto`` the name is ``"auto"``: the object judges the faster encoders on
    its first :data:`TRIAL_BYTES` (see the module docstring); its ``backend`` and
    ``level`` attributes say which encoder it kept.
    """
    name = configured_backend()
    if name == "auto":
        if _ladder(level, mem_level, strategy, flush_mode):
            return _Trial(level, wbits, mem_level, strategy, flush_mode), "auto"
        name = _exact()
    if name == "isal":
        mapped = isal_level(level)
        if mapped is None or not _isal_honours(mem_level, strategy, flush_mode):
            name, mapped = "zlib", level
        return _encoder(name, mapped, level, wbits, mem_level, strategy, flush_mode), name
    return _encoder(name, level, level, wbits, mem_level, strategy, flush_mode), name


def _encoder(
    name: str,
    backend_level: int,
    level: int,
    wbits: int,
    mem_level: int,
    strategy: int,
    flush_mode: int,
) -> Any:
    """The compressor of backend ``name`` at ``backend_level`` for a stream asked for at
    zlib ``level``: chunked over threads where that pays, else one stream; its
    header is always zlib's for ``level`` and these options."""
    threads = deflate_threads()
    if name != "zlib" and flush_mode == zlib.Z_NO_FLUSH and threads > 1:
        return _chunked(name, backend_level, level, wbits, mem_level, strategy, threads)
    z: Any
    if name == "zlib":
        z = zlib.compressobj(level, zlib.DEFLATED, wbits, mem_level, strategy)
        return _Named(z, name, _zlib_level(level))
    if name == "isal":
        z = _module("isal").compressobj(backend_level, zlib.DEFLATED, wbits, mem_level, 0)
    else:
        z = _module(name).compressobj(backend_level, zlib.DEFLATED, wbits, mem_level, strategy)
    if name == "isal" or backend_level != level:
        # ISA-L's headers, and zlib-ng's at another level, differ from zlib's.
        z = _ZlibHeader(z, _zlib_header(level, wbits, mem_level, strategy))
    return _Named(z, name, _zlib_level(backend_level))


#: Bytes an ``auto`` writer judges the faster encoders on (its first input, or all of it).
TRIAL_BYTES = 128 * 1024
#: ``auto`` keeps a faster encoder when its output is at most this many times zlib's.
SIZE_TOLERANCE = 1.03
#: ``auto`` also tries zlib-ng up to this many levels below the one asked for.
LADDER_STEPS = 2


def _zlib_raw(data: bytes, level: int, bits: int) -> bytes:
    """``data`` as one raw deflate stream by the standard zlib (``zlib.compress`` takes
    ``wbits`` only from Python 3.11, so through a ``compressobj``)."""
    z = zlib.compressobj(level, zlib.DEFLATED, -bits)
    return z.compress(data) + z.flush()


class _Trial:
    """A compressor that picks its encoder on its first input.

    Its first :data:`TRIAL_BYTES` (or all its input, if less) are compressed by
    the standard library's zlib at the level asked for (the size TensorFlow's
    writer gets) and by each encoder of the ladder (:func:`_ladder`), fastest
    first; the first whose output is at most :data:`SIZE_TOLERANCE` times zlib's
    is kept, else zlib-ng (or zlib) at the level asked for. The kept encoder then
    compresses the stream from its start.
    """

    __slots__ = ("_args", "_n", "_pending", "_z", "backend", "level")

    def __init__(
        self, level: int, wbits: int, mem_level: int, strategy: int, flush_mode: int
    ) -> None:
        self._args = (level, wbits, mem_level, strategy, flush_mode)
        self._pending: list[bytes] = []
        self._n = 0
        self._z: Any = None
        #: The backend kept (``"isal"``, ``"zlib-ng"`` or ``"zlib"``); ``""`` before.
        self.backend = ""
        #: The kept backend's level.
        self.level = level

    def _decide(self) -> bytes:
        level, wbits, mem_level, strategy, flush_mode = self._args
        sample = b"".join(self._pending)
        self._pending = []
        name, chosen = _exact(), level
        if sample:
            bits = raw_bits(wbits)
            trial = sample[:TRIAL_BYTES]
            limit = len(_zlib_raw(trial, _zlib_level(level), bits)) * SIZE_TOLERANCE
            for backend, backend_level in _ladder(level, mem_level, strategy, flush_mode):
                if len(_module(backend).compress(trial, backend_level, -bits)) <= limit:
                    name, chosen = backend, backend_level
                    break
        self._z = _encoder(name, chosen, level, wbits, mem_level, strategy, flush_mode)
        self.backend, self.level = name, chosen
        return bytes(self._z.compress(sample))

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

    def close(self) -> None:
        if self._z is not None:
            self._z.close()


class _Named:
    """A one-stream compressor, with the backend and level that make it."""

    __slots__ = ("_z", "backend", "compress", "flush", "level")

    def __init__(self, z: Any, backend: str, level: int) -> None:
        self._z = z
        self.compress = z.compress
        self.flush = z.flush
        self.backend = backend
        self.level = level

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------- threads


def deflate_threads() -> int:
    """Threads a writer's deflate uses (0 or 1: it deflates in the writer's thread)."""
    return min(_cores(), 8)


def _chunked(
    name: str,
    backend_level: int,
    level: int,
    wbits: int,
    mem_level: int,
    strategy: int,
    threads: int,
) -> ChunkedDeflate:
    """Backend ``name`` at ``backend_level`` deflating over ``threads`` threads, behind
    zlib's header for ``level`` and these options."""
    return ChunkedDeflate(
        name,
        _module(name),
        backend_level,
        wbits,
        mem_level,
        strategy,
        threads,
        _zlib_header(level, wbits, mem_level, strategy),
    )


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


#: Caps the threads compression may use (``1``: none besides the caller's own).
THREADS_ENV = _settings.SETTINGS["threads"].variable


def _cores() -> int:
    """:func:`~._map_ahead.cores`, looked up here so that tests can replace it for
    compression alone."""
    return cores()
