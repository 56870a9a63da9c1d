"""CRC-32C (Castagnoli) and TensorFlow's masked checksum.

TFRecord framing protects every record with two CRC-32C checksums, stored
*masked* so that a CRC computed over data that itself contains CRCs stays
well distributed::

    mask(crc)   = ((crc >> 15 | crc << 17) + 0xA282EAD8) mod 2**32
    unmask(m)   = rot_left((m - 0xA282EAD8) mod 2**32, 15)

Known answers: ``crc32c(b"123456789") == 0xE3069283``; ``mask(0) == 0xA282EAD8``.

The CRC itself comes from the fastest backend that is installed, chosen once at
import time (override with the environment variable ``TFRECORD_LITE_CRC_BACKEND``):

``crc32c``         the ``crc32c`` package, hardware (SSE4.2 / ARMv8) accelerated
``google-crc32c``  Google's C library wrapper, hardware accelerated
``crcmod``         crcmod's C extension (a required dependency; ~0.4 GB/s)
``crcmod-python``  crcmod without its C extension: ~300x slower, warns once

:func:`crc32c_combine` joins the CRCs of two pieces (zlib's ``crc32_combine``), so a
record of any size can be checked piece by piece without holding it whole.

Install the ``fast`` extra (``pip install tfrecord-lite-np[fast]``) to get the
first two. All arithmetic here is on Python ints: NumPy uint32 scalars warn or
wrap differently across platforms.
"""

from __future__ import annotations

import functools
import sys
import warnings
from typing import Callable, Optional, Union

import numpy as np

from .. import _settings

__all__ = [
    "MASK_DELTA",
    "available_crc_backends",
    "crc32c",
    "crc32c_checksum",
    "crc32c_combine",
    "crc32c_of_zeros",
    "crc_backend",
    "get_crc_function",
    "mask",
    "mask_array",
    "masked_crc32c",
    "unmask",
    "unmask_array",
]

Buffer = Union[bytes, bytearray, memoryview]
CrcFunction = Callable[[Buffer], int]

#: Added to the rotated CRC by :func:`mask` (from TensorFlow's crc32c.h).
MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF

#: Backends from fastest to slowest; the first one that loads is used.
BACKEND_ORDER = ("crc32c", "google-crc32c", "crcmod", "crcmod-python")
ENV_VAR = "TFRECORD_LITE_CRC_BACKEND"

_SLOW_WARNING = (
    "tfrecord_lite is computing CRC32C with crcmod's pure-Python code, about 300x "
    "slower than its C extension (crcmod was installed without a C compiler). "
    "Fix: `pip install tfrecord-lite-np[fast]` (hardware CRC32C), or reinstall crcmod "
    "with a compiler: `pip install --force-reinstall --no-binary crcmod crcmod`."
)


def mask(crc: int) -> int:
    """Return TensorFlow's masked form of a 32-bit CRC."""
    crc &= _U32
    return (((crc >> 15) | (crc << 17)) + MASK_DELTA) & _U32


def mask_array(crcs: np.ndarray) -> np.ndarray:
    """:func:`mask` of every CRC in an array, as uint64 (no overflow warnings)."""
    c = crcs.astype(np.uint64)
    rotated = (c >> np.uint64(15)) | (c << np.uint64(17))
    return (rotated + np.uint64(MASK_DELTA)) & np.uint64(_U32)


def unmask_array(masked: np.ndarray) -> np.ndarray:
    """:func:`unmask` of every masked CRC in an array, as uint64."""
    rot = (masked.astype(np.uint64) - np.uint64(MASK_DELTA)) & np.uint64(_U32)
    return ((rot >> np.uint64(17)) | (rot << np.uint64(15))) & np.uint64(_U32)


def unmask(masked: int) -> int:
    """Invert :func:`mask`."""
    rot = (masked - MASK_DELTA) & _U32
    return ((rot >> 17) | (rot << 15)) & _U32


def _load_crc32c() -> CrcFunction:
    import crc32c as mod

    if not getattr(mod, "hardware_based", True):
        raise ImportError("the crc32c package has no hardware support on this CPU")
    fn: CrcFunction = mod.crc32c
    return fn


def _load_google_crc32c() -> CrcFunction:
    import google_crc32c as mod

    if getattr(mod, "implementation", "c") != "c":
        raise ImportError("google-crc32c has no C extension here")
    value = mod.value

    def fn(data: Buffer) -> int:
        # google_crc32c accepts only bytes.
        return int(value(data if isinstance(data, bytes) else bytes(data)))

    return fn


def _crcmod_uses_extension() -> bool:
    import crcmod  # noqa: F401  (loads crcmod.crcmod)

    return bool(getattr(sys.modules["crcmod.crcmod"], "_usingExtension", False))


def _load_crcmod() -> CrcFunction:
    import crcmod.predefined

    if not _crcmod_uses_extension():
        raise ImportError("crcmod's C extension is not built")
    fn: CrcFunction = crcmod.predefined.mkCrcFun("crc-32c")
    return fn


def _load_crcmod_python() -> CrcFunction:
    # crcmod's own pure-Python loop, used explicitly (not via mkCrcFun, which would pick
    # the C extension whenever it is built) so that this backend can be tested anywhere.
    import crcmod.predefined
    from crcmod import _crcfunpy

    table = crcmod.predefined.PredefinedCrc("crc-32c").table
    crc32r = _crcfunpy._crc32r

    def fn(data: Buffer) -> int:
        return int(crc32r(data, _U32, table)) ^ _U32

    return fn


_LOADERS: dict[str, Callable[[], CrcFunction]] = {
    "crc32c": _load_crc32c,
    "google-crc32c": _load_google_crc32c,
    "crcmod": _load_crcmod,
    "crcmod-python": _load_crcmod_python,
}


def get_crc_function(name: str) -> CrcFunction:
    """Return the unmasked CRC-32C function of backend ``name``.

    Raises ``ImportError`` when that backend is not installed here and
    ``ValueError`` for an unknown name. Meant for tests and benchmarks; normal
    code calls :func:`crc32c`.
    """
    try:
        loader = _LOADERS[name]
    except KeyError:
        raise ValueError(
            f"unknown CRC backend {name!r}; expected one of {', '.join(BACKEND_ORDER)}"
        ) from None
    return loader()


def available_crc_backends() -> list[str]:
    """Names of the CRC backends that load on this machine, fastest first."""
    names = []
    for name in BACKEND_ORDER:
        if name == "crcmod-python":
            # Always there (it is crcmod's fallback); only *chosen* when nothing else loads.
            names.append(name)
            continue
        try:
            _LOADERS[name]()
        except ImportError:
            continue
        names.append(name)
    return names


def _select() -> tuple[str, CrcFunction]:
    forced = _settings.crc_backend()
    if forced:
        return forced, get_crc_function(forced)
    for name in BACKEND_ORDER:
        try:
            fn = _LOADERS[name]()
        except ImportError:
            continue
        if name == "crcmod-python":
            warnings.warn(_SLOW_WARNING, RuntimeWarning, stacklevel=3)
        return name, fn
    raise ImportError(
        "no CRC32C implementation could be loaded; install crcmod"
    )  # pragma: no cover


_BACKEND_NAME, crc32c = _select()


def crc32c_checksum(data: Buffer) -> int:
    """Return the CRC-32C (Castagnoli) of ``data``, unmasked, from the active backend.

    ``crc32c_checksum(b"123456789") == 0xE3069283``. Exported as ``tfrecord_lite.crc32c``.
    """
    return crc32c(data)


def crc_backend() -> str:
    """Name of the CRC-32C backend in use: one of :data:`BACKEND_ORDER`."""
    return _BACKEND_NAME


def masked_crc32c(data: Buffer) -> int:
    """Return TensorFlow's masked CRC-32C of ``data``."""
    return mask(crc32c(data))


# --------------------------------------------------------------------------- CRC pieces


def _gf2_times(mat: tuple[int, ...], vec: int) -> int:
    out = 0
    i = 0
    while vec:
        if vec & 1:
            out ^= mat[i]
        vec >>= 1
        i += 1
    return out


def _gf2_square(mat: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(_gf2_times(mat, mat[n]) for n in range(32))


def _one_zero_byte() -> tuple[int, ...]:
    # Operator for one zero *bit* on a reflected CRC-32C register, squared to one byte.
    op: tuple[int, ...] = (0x82F63B78, *(1 << n for n in range(31)))
    for _ in range(3):
        op = _gf2_square(op)
    return op


@functools.lru_cache(maxsize=128)
def _zeros_operator(nbytes: int) -> tuple[int, ...]:
    """The GF(2) operator that feeds ``nbytes`` zero bytes through a CRC-32C register."""
    result: Optional[tuple[int, ...]] = None
    power = _one_zero_byte()
    while True:
        if nbytes & 1:
            result = power if result is None else tuple(_gf2_times(power, c) for c in result)
        nbytes >>= 1
        if not nbytes:
            break
        power = _gf2_square(power)
    assert result is not None
    return result


def crc32c_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32C of ``a + b`` from ``crc1 = crc32c(a)``, ``crc2 = crc32c(b)`` and ``len(b)``.

    Lets a record of any size be checked piece by piece (zlib's ``crc32_combine``).
    """
    if len2 <= 0:
        return crc1
    return _gf2_times(_zeros_operator(len2), crc1) ^ crc2


def crc32c_of_zeros(n: int) -> int:
    """CRC-32C of ``n`` zero bytes, in O(log n) (for sparse files in tests and tools)."""
    crc = 0
    done = 0
    piece, piece_len = crc32c(b"\0"), 1
    while n:
        if n & 1:
            crc = crc32c_combine(crc, piece, piece_len) if done else piece
            done += piece_len
        n >>= 1
        if n:
            piece = crc32c_combine(piece, piece, piece_len)
            piece_len *= 2
    return crc
