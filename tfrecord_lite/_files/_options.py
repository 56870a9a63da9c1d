"""Compression options, as TensorFlow names them: ``TFRecordOptions`` and
``TFRecordCompressionType``, and the readers' and writers' ``compression`` argument.

Compression (TensorFlow's ``ZlibCompressionOptions``): the whole file is one
deflate stream over the framed records. ``"ZLIB"`` is RFC 1950 (zlib header,
e.g. ``78 9c``); ``"GZIP"`` is one RFC 1952 member with mtime 0 and OS byte 3,
exactly as TensorFlow writes it. Readers also accept concatenated gzip members.

Readers take ``"auto"`` (their default, also meant by ``None``): the compression is
detected per file from its first bytes (:mod:`tfrecord_lite._files._sniff`).
"""

from __future__ import annotations

import zlib
from typing import Any, Optional, Union

from .._errors import TFRecordError
from ._compress import compressobj

__all__ = [
    "TFRecordCompressionType",
    "TFRecordOptions",
    "as_options",
    "check_range",
    "compression_name",
    "reader_compression",
    "wrong_compression",
]


class TFRecordCompressionType:
    """Compression types, as ``tf.io.TFRecordCompressionType``."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


TYPE_NAMES = {
    TFRecordCompressionType.NONE: "",
    TFRecordCompressionType.ZLIB: "ZLIB",
    TFRecordCompressionType.GZIP: "GZIP",
}


def compression_name(value: object, *, allow_auto: bool) -> str:
    """Normalise a compression argument to "", "ZLIB", "GZIP" (or "auto")."""
    if value is None:
        return ""
    if isinstance(value, TFRecordOptions):
        return value.compression_type
    if isinstance(value, bool):
        raise TypeError("compression must be None, a string or TFRecordOptions, got bool")
    if isinstance(value, int):
        if value in TYPE_NAMES:
            return TYPE_NAMES[value]
    elif isinstance(value, str):
        upper = value.strip().upper()
        if upper in ("", "NONE"):
            return ""
        if upper in ("ZLIB", "GZIP"):
            return upper
        if upper == "AUTO":
            if allow_auto:
                return "auto"
            raise ValueError(
                'compression="auto" is for readers; a writer needs "", "GZIP" or "ZLIB"'
            )
    else:
        raise TypeError(
            f"compression must be None, a string or TFRecordOptions, got {type(value).__name__}"
        )
    allowed = '"", "GZIP", "ZLIB"' + (', "auto"' if allow_auto else "")
    raise ValueError(f"Not a valid compression_type: {value!r}; expected one of {allowed}")


def reader_compression(value: object) -> str:
    """A reader's compression argument: ``None`` means "not given", i.e. ``"auto"``.

    One meaning in every reader (``TFRecordReader``, ``tf_record_iterator``,
    ``read_records``, ``open``, ``TFRecordDataset``): ``None`` and ``"auto"`` detect
    the compression per file; ``""``/``"NONE"`` (or ``TFRecordOptions()``) insist
    on an uncompressed file. See docs/tensorflow-behaviour.md for why.
    """
    return "auto" if value is None else compression_name(value, allow_auto=True)


def wrong_compression(err: TFRecordError, used: str, found: str) -> TFRecordError:
    """``err`` (raised at the start of a file) with a hint: the file looks ``found``."""
    what = f"{found}-compressed" if found else "uncompressed"
    fix = f'compression_type="{found}"' if found else 'compression_type=""'
    hint = (
        f"; the file looks {what}, but it was read as {used or 'uncompressed'}: "
        f'read it with {fix} (or "auto", which detects it)'
    )
    new = type(err).__new__(type(err))
    new.__dict__.update(err.__dict__)
    TFRecordError.__init__(
        new, err.message + hint, path=err.path, offset=err.offset, index=err.index
    )
    return new


def check_range(name: str, value: Optional[int], low: int, high: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")


class TFRecordOptions:
    """Options for TFRecord files, as ``tf.io.TFRecordOptions``.

    ``compression_type`` is ``None``/``""``, ``"ZLIB"`` or ``"GZIP"`` (or a
    :class:`TFRecordCompressionType` value). The zlib settings default to
    TensorFlow's: level -1 (zlib's 6), window bits 15, memory level 9, strategy 0,
    256 KiB buffers.
    """

    compression_type_map = TYPE_NAMES

    def __init__(
        self,
        compression_type: Union[str, int, None] = None,
        flush_mode: Optional[int] = None,
        input_buffer_size: Optional[int] = None,
        output_buffer_size: Optional[int] = None,
        window_bits: Optional[int] = None,
        compression_level: Optional[int] = None,
        compression_method: Optional[int] = None,
        mem_level: Optional[int] = None,
        compression_strategy: Optional[int] = None,
    ) -> None:
        self.compression_type = compression_name(compression_type, allow_auto=False)
        check_range("compression_level", compression_level, -1, 9)
        check_range("mem_level", mem_level, 1, 9)
        check_range("compression_strategy", compression_strategy, 0, 4)
        check_range("input_buffer_size", input_buffer_size, 1, 2**31)
        check_range("output_buffer_size", output_buffer_size, 1, 2**31)
        if window_bits is not None:
            check_range("window_bits", window_bits, 8, 31)
            if 15 < window_bits < 24:
                raise ValueError(
                    f"window_bits must be 8..15 (or 24..31 meaning gzip), got {window_bits}"
                )
        if compression_method is not None and compression_method != zlib.DEFLATED:
            raise ValueError(
                f"compression_method must be {zlib.DEFLATED} (deflate), got {compression_method}"
            )
        allowed_flush = (
            zlib.Z_NO_FLUSH,
            zlib.Z_PARTIAL_FLUSH,
            zlib.Z_SYNC_FLUSH,
            zlib.Z_FULL_FLUSH,
        )
        if flush_mode is not None and flush_mode not in allowed_flush:
            raise ValueError(f"flush_mode must be one of {allowed_flush}, got {flush_mode}")
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options: Union[TFRecordOptions, str, int, None]) -> str:
        """Return ``""``, ``"ZLIB"`` or ``"GZIP"`` for options or a compression type."""
        return compression_name(options, allow_auto=False)

    def _wbits(self) -> int:
        bits = 15 if self.window_bits is None else self.window_bits
        bits = bits - 16 if bits > 15 else bits
        bits = max(bits, 9)  # zlib rejects 8 for deflate; TensorFlow's zlib raises it to 9 too
        return bits + 16 if self.compression_type == "GZIP" else bits

    def _compressobj(self) -> Any:
        # The backend (ISA-L when installed, else zlib) is chosen in _compress.
        zobj, _ = compressobj(
            -1 if self.compression_level is None else self.compression_level,
            self._wbits(),
            9 if self.mem_level is None else self.mem_level,
            0 if self.compression_strategy is None else self.compression_strategy,
            self.flush_mode or zlib.Z_NO_FLUSH,
        )
        return zobj

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if v is not None and v != "")
        return f"TFRecordOptions({fields})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TFRecordOptions) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]


def as_options(compression: object, options: object) -> TFRecordOptions:
    if compression is not None and options is not None:
        raise TypeError("pass either compression= or options=, not both")
    value = options if options is not None else compression
    if isinstance(value, TFRecordOptions):
        return value
    return TFRecordOptions(compression_type=compression_name(value, allow_auto=False))
