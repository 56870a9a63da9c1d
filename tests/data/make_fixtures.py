"""Write the TFRecord fixtures in tests/data/ with real TensorFlow, and their sidecars.

Run with the interop venv (it has TensorFlow; see tests/interop/requirements.txt)::

    .venv-interop/bin/python tests/data/make_fixtures.py            # into tests/data/
    .venv-interop/bin/python tests/data/make_fixtures.py --out DIR  # somewhere else

Every fixture ``NAME.tfrecord`` gets a sidecar ``NAME.json``:

* ``records``: the records the file holds / was meant to hold, in order, each as
  ``{"length", "hex"}`` or, for long ones, ``{"length", "sha256"}``.
* ``tf``: what TensorFlow did when it read the file, with both
  ``tf.compat.v1.io.tf_record_iterator`` and ``tf.data.TFRecordDataset``: how many
  records it yielded, and the error (class and exact message) it raised, if any.
  For the dataset, ``message`` is the op message without TensorFlow's
  ``{{function_node ...}}`` prefix and `` [Op:IteratorGetNext]`` suffix; ``raw`` is
  the whole text.
* ``expect``: what tfrecord_lite must do (read by tests/test_fixtures.py, which needs
  no TensorFlow): the number of records yielded before an error (``records``, or a
  range ``records_min``/``records_max`` where TensorFlow's zlib reader gives up
  earlier than necessary), and the error: ``class`` (a tfrecord_lite exception name;
  the raised error must be an instance of it), and where known ``part``, ``offset``
  (byte offset in the decompressed stream) and ``index``. ``differs_from_tf`` says
  why, where tfrecord_lite deliberately does not do what TensorFlow does.

Files whose bytes were not all written by TensorFlow's writer say so in
``how``: corrupted or truncated copies of a file TensorFlow wrote, and compressed
streams assembled with Python's zlib (same zlib format; TensorFlow read them all).
tests/interop/test_records_interop.py re-runs this script into a temporary
folder and checks that every sidecar comes out the same.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import warnings
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore")

HERE = Path(__file__).resolve().parent
HEX_LIMIT = 4096  # records longer than this are stored as sha256 in the sidecar
LARGE = 17 * 2**20 + 3  # > 16 MiB, TensorFlow's tf_record_iterator read buffer

_tf: Any = None


def tf_module() -> Any:
    global _tf
    if _tf is None:
        import tensorflow as tf

        tf.get_logger().setLevel("ERROR")
        _tf = tf
    return _tf


# --------------------------------------------------------------------------- helpers


def crc32c(data: bytes) -> int:
    """Reference CRC-32C (bitwise; only used on short inputs here)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame_header(length: int) -> bytes:
    raw = struct.pack("<Q", length)
    return raw + struct.pack("<I", mask(crc32c(raw)))


def record_entry(data: bytes) -> dict[str, Any]:
    if len(data) <= HEX_LIMIT:
        return {"length": len(data), "hex": data.hex()}
    return {"length": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def record_offsets(records: list[bytes]) -> list[int]:
    """Offset of each record in the (decompressed) stream, plus the end."""
    out = [0]
    for r in records:
        out.append(out[-1] + len(r) + 16)
    return out


def tf_options(compression: str, **zlib_opts: Any) -> Any:
    tf = tf_module()
    return tf.io.TFRecordOptions(compression_type=compression, **zlib_opts)


def tf_write(path: Path, records: list[bytes], compression: str = "", **zlib_opts: Any) -> bytes:
    tf = tf_module()
    with tf.io.TFRecordWriter(str(path), tf_options(compression, **zlib_opts)) as w:
        for r in records:
            w.write(r)
    return path.read_bytes()


def _strip_op_message(text: str) -> str:
    text = re.sub(r"^\{\{function_node [^}]*\}\} ", "", text)
    return re.sub(r" \[Op:IteratorGetNext\].*$", "", text, flags=re.S)


def tf_read(path: Path, compression: str) -> tuple[dict[str, Any], list[bytes]]:
    """Read with both TensorFlow readers; return the ``tf`` sidecar entry and the records."""
    tf = tf_module()
    result: dict[str, Any] = {}
    got_iter: list[bytes] = []
    try:
        for r in tf.compat.v1.io.tf_record_iterator(str(path), tf_options(compression)):
            got_iter.append(r)
        err = None
    except tf.errors.OpError as e:
        err = {"class": type(e).__name__, "message": str(e)}
    result["tf_record_iterator"] = {"records": len(got_iter), "error": err}
    got_ds: list[bytes] = []
    try:
        for t in tf.data.TFRecordDataset(str(path), compression_type=compression):
            got_ds.append(t.numpy())
        err = None
    except tf.errors.OpError as e:
        err = {"class": type(e).__name__, "message": _strip_op_message(e.message), "raw": e.message}
    result["TFRecordDataset"] = {"records": len(got_ds), "error": err}
    if got_ds != got_iter[: len(got_ds)] and got_iter != got_ds[: len(got_iter)]:
        raise AssertionError(f"{path}: the two TensorFlow readers disagree on the records")
    return result, got_iter if len(got_iter) >= len(got_ds) else got_ds


def tf_read_in_subprocess(path: Path, compression: str) -> dict[str, Any]:
    """Like tf_read, in a child process: for inputs that crash TensorFlow."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[3]); import make_fixtures as m; "
        "r, _ = m.tf_read(m.Path(sys.argv[1]), sys.argv[2]); print('RESULT' + json.dumps(r))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path), compression, str(HERE)],
        capture_output=True,
        text=True,
        check=False,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT"):
            out: dict[str, Any] = json.loads(line[len("RESULT") :])
            return out
    return {"crashed": f"the Python process died with return code {proc.returncode}"}


def compress(data: bytes, compression: str, level: int = 6) -> bytes:
    """A complete GZIP/ZLIB stream as TensorFlow's writer makes it (mem_level 9)."""
    wbits = 31 if compression == "GZIP" else 15
    c = zlib.compressobj(level, zlib.DEFLATED, wbits, 9)
    return c.compress(data) + c.flush(zlib.Z_FINISH)


def decompress(data: bytes, compression: str) -> bytes:
    if compression == "GZIP":
        return gzip.decompress(data)
    if compression == "ZLIB":
        return zlib.decompress(data)
    return data


EXT = {"": "plain", "GZIP": "gzip", "ZLIB": "zlib"}


# --------------------------------------------------------------------------- records


def few_records() -> list[bytes]:
    rng = random.Random(20240611)
    return [
        b"foo",
        b"",
        b"hello" * 10,
        bytes(range(256)),
        rng.randbytes(1000),
        b"",
        bytes(rng.randrange(4) for _ in range(5000)),  # compresses somewhat
        b"\x00" * 17,
        b"last",
    ]


def large_records() -> list[bytes]:
    pattern = bytes(range(251)) + b"TFRecord"
    big = (pattern * (LARGE // len(pattern) + 1))[:LARGE]
    return [b"a", big, b"", b"z"]


# --------------------------------------------------------------------------- the generator


class Generator:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.names: list[str] = []
        tf = tf_module()
        self.tf_version = tf.__version__

    def emit(
        self,
        name: str,
        compression: str,
        data: bytes,
        records: list[bytes],
        how: str,
        description: str,
        expect: dict[str, Any],
        *,
        run_tf_in_subprocess: bool = False,
        check_tf_records: bool = True,
        extra: Optional[dict[str, Any]] = None,
    ) -> None:
        """Write fixture ``name``, read it back with TensorFlow, write its sidecar."""
        fname = f"{name}.tfrecord"
        path = self.out / fname
        path.write_bytes(data)
        if run_tf_in_subprocess:
            tf_result = tf_read_in_subprocess(path, compression)
            tf_records: Optional[list[bytes]] = None
        else:
            tf_result, tf_records = tf_read(path, compression)
        if check_tf_records and tf_records is not None and tf_records != records[: len(tf_records)]:
            raise AssertionError(f"{name}: TensorFlow read records that were not written")
        expect = dict(expect)
        if "records" not in expect and "records_min" not in expect:
            expect["records"] = len(records)
        sidecar: dict[str, Any] = {
            "fixture": fname,
            "description": description,
            "made_with": f"tensorflow {self.tf_version}",
            "how": how,
            "compression": compression,
            "size": len(data),
            "records": [record_entry(r) for r in records],
            "tf": tf_result,
            "expect": expect,
        }
        if extra:
            sidecar.update(extra)
        (self.out / f"{name}.json").write_text(
            json.dumps(sidecar, indent=1, sort_keys=False) + "\n"
        )
        self.names.append(fname)

    # ----------------------------------------------------------------- well-formed files

    def well_formed(self, tmp: Path) -> None:
        for comp in ("", "GZIP", "ZLIB"):
            ext = EXT[comp]
            data = tf_write(tmp / "x", [], comp)
            self.emit(
                f"empty.{ext}",
                comp,
                data,
                [],
                f"tf.io.TFRecordWriter(path, {comp!r}) closed with no records",
                "0 records",
                {},
            )
            recs = few_records()
            data = tf_write(tmp / "x", recs, comp)
            self.emit(
                f"few.{ext}",
                comp,
                data,
                recs,
                f"tf.io.TFRecordWriter(path, {comp!r}); write() each record; close()",
                "9 records of mixed sizes, two of them zero-length",
                {},
            )
        # > 16 MiB record: compressed only (the plain file would be 17 MiB in git). The
        # plain file TensorFlow writes is byte for byte the decompressed ZLIB stream:
        # checked here, and test_fixtures.py rebuilds it that way.
        recs = large_records()
        plain = tf_write(tmp / "x", recs, "")
        for comp in ("GZIP", "ZLIB"):
            data = tf_write(tmp / "x", recs, comp)
            if decompress(data, comp) != plain:
                raise AssertionError("TensorFlow's compressed stream is not its plain file")
            self.emit(
                f"large.{EXT[comp]}",
                comp,
                data,
                recs,
                f"tf.io.TFRecordWriter(path, {comp!r}); 4 records, one of {LARGE} bytes",
                "a record larger than 16 MiB (a repeated 259-byte pattern, so it compresses)",
                {},
                extra={
                    "plain_file_sha256": hashlib.sha256(plain).hexdigest(),
                    "plain_file_size": len(plain),
                },
            )
        # TensorFlow-written compression variants.
        recs = few_records()
        variants: list[tuple[str, str, dict[str, Any]]] = [
            ("gzip-level0", "GZIP", {"compression_level": 0}),
            ("gzip-level1", "GZIP", {"compression_level": 1}),
            ("gzip-level9", "GZIP", {"compression_level": 9}),
            ("zlib-level0", "ZLIB", {"compression_level": 0}),
            ("zlib-level9", "ZLIB", {"compression_level": 9}),
            ("zlib-wbits9", "ZLIB", {"window_bits": 9}),
            ("gzip-wbits25", "GZIP", {"window_bits": 25}),
            ("zlib-memlevel1", "ZLIB", {"mem_level": 1}),
            ("gzip-huffman", "GZIP", {"compression_strategy": 2}),
        ]
        for name, comp, opts in variants:
            data = tf_write(tmp / "x", recs, comp, **opts)
            args = ", ".join(f"{k}={v!r}" for k, v in opts.items())
            self.emit(
                f"few.{name}",
                comp,
                data,
                recs,
                f"tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type={comp!r}, {args}))",
                f"the 'few' records, {args}",
                {},
            )
        # flush() in the middle (TensorFlow: Z_PARTIAL_FLUSH), then more records.
        for comp in ("GZIP", "ZLIB"):
            tf = tf_module()
            path = tmp / "x"
            with tf.io.TFRecordWriter(str(path), tf_options(comp)) as w:
                for r in recs[:4]:
                    w.write(r)
                w.flush()
                w.flush()
                for r in recs[4:]:
                    w.write(r)
                w.flush()
            self.emit(
                f"few.{EXT[comp]}-flushed",
                comp,
                path.read_bytes(),
                recs,
                "TFRecordWriter: 4 records, flush(), flush(), the other 5, flush(), close()",
                "a compressed stream with flush points in it",
                {},
            )
        # Concatenated gzip members: two files TensorFlow wrote, one after the other.
        a = tf_write(tmp / "x", recs[:4], "GZIP")
        b = tf_write(tmp / "x", recs[4:], "GZIP")
        self.emit(
            "few.gzip-two-members",
            "GZIP",
            a + b,
            recs,
            "two GZIP files TensorFlow wrote (4 + 5 records), concatenated",
            "a GZIP file of two members",
            {},
        )
        # ZLIB with bytes after the end of the stream: TensorFlow ignores them.
        z = tf_write(tmp / "x", recs, "ZLIB")
        self.emit(
            "few.zlib-trailing-garbage",
            "ZLIB",
            z + b"trailing bytes after the zlib stream",
            recs,
            "a ZLIB file TensorFlow wrote, with 36 bytes of ASCII appended",
            "ZLIB stream followed by garbage (TensorFlow ignores it)",
            {},
        )

    # ----------------------------------------------------------------- damaged plain files

    def damaged_plain(self, tmp: Path) -> None:
        recs = few_records()
        good = tf_write(tmp / "x", recs, "")
        offs = record_offsets(recs)

        def flipped(pos: int) -> bytes:
            b = bytearray(good)
            b[pos] ^= 0x01
            return bytes(b)

        def corrupt(name: str, pos: int, what: str, idx: int, part: str, err_off: int) -> None:
            self.emit(
                name,
                "",
                flipped(pos),
                recs,
                f"the 'few.plain' file TensorFlow wrote, with byte {pos} XOR 0x01 ({what})",
                what,
                {
                    "records": idx,
                    "error": {
                        "class": "CorruptRecordError",
                        "part": part,
                        "offset": err_off,
                        "index": idx,
                    },
                },
            )

        corrupt("corrupt-header-first.plain", 0, "length byte of record 0 changed", 0, "header", 0)
        corrupt(
            "corrupt-header.plain",
            offs[2] + 9,
            "length CRC of record 2 changed",
            2,
            "header",
            offs[2],
        )
        corrupt(
            "corrupt-length.plain", offs[3] + 1, "length of record 3 changed", 3, "header", offs[3]
        )
        corrupt(
            "corrupt-data.plain",
            offs[3] + 12 + 100,
            "a data byte of record 3 changed",
            3,
            "data",
            offs[3] + 12,
        )
        corrupt(
            "corrupt-data-crc.plain",
            offs[4] - 2,
            "the stored data CRC of record 3 changed",
            3,
            "data",
            offs[3] + 12,
        )
        corrupt(
            "corrupt-empty-record.plain",
            offs[2] - 1,
            "the stored data CRC of record 1 (zero-length) changed",
            1,
            "data",
            offs[1] + 12,
        )

        def cut(name: str, end: int, what: str, idx: int, tf_silent: bool) -> None:
            exp: dict[str, Any] = {
                "records": idx,
                "error": {"class": "TruncatedRecordError", "offset": offs[idx], "index": idx},
            }
            if tf_silent:
                exp["differs_from_tf"] = (
                    "TensorFlow ends silently when the file ends inside a record's 12-byte "
                    "header; tfrecord_lite raises TruncatedRecordError (a cut file is data loss)"
                )
            self.emit(
                name,
                "",
                good[:end],
                recs,
                f"the 'few.plain' file TensorFlow wrote, cut to its first {end} bytes ({what})",
                what,
                exp,
            )

        cut("truncated-header.plain", offs[3] + 5, "ends 5 bytes into record 3's header", 3, True)
        cut(
            "truncated-header-1byte.plain",
            offs[8] + 1,
            "ends 1 byte into the last record's header",
            8,
            True,
        )
        cut(
            "truncated-header-11bytes.plain",
            offs[8] + 11,
            "ends 11 bytes into the last record's header",
            8,
            True,
        )
        cut(
            "truncated-after-header.plain",
            offs[3] + 12,
            "ends right after record 3's header",
            3,
            False,
        )
        cut("truncated-data.plain", offs[3] + 12 + 100, "ends inside record 3's data", 3, False)
        cut("truncated-footer.plain", offs[4] - 2, "ends inside record 3's data CRC", 3, False)
        cut(
            "truncated-empty-footer.plain",
            offs[2] - 1,
            "ends inside zero-length record 1's CRC",
            1,
            False,
        )

        # Length fields that claim far more than the file holds (their CRC is right).
        for name, length, note in [
            (
                "huge-length-2e40.plain",
                2**40,
                "TensorFlow crashes on it (it tries to allocate the buffer)",
            ),
            ("huge-length-2e63.plain", 2**63, ""),
            ("huge-length-max.plain", 2**64 - 1, ""),
        ]:
            data = good[: offs[2]] + frame_header(length) + b"x" * 20
            exp = {
                "records": 2,
                "error": {"class": "TruncatedRecordError", "offset": offs[2], "index": 2},
                "differs_from_tf": (
                    "tfrecord_lite compares the length with the bytes left and reports a "
                    "truncated record; " + (note or "TensorFlow's message is in 'tf'")
                ),
            }
            self.emit(
                name,
                "",
                data,
                recs[:2],
                f"the first 2 records TensorFlow wrote, then a header claiming {length} "
                "data bytes (correct length CRC) and 20 bytes",
                f"a length field of {length} with a valid CRC",
                exp,
                run_tf_in_subprocess=length == 2**40,
            )

        self.emit(
            "not-a-tfrecord.plain",
            "",
            b"This is a text file, not a TFRecord file.\n",
            [],
            "plain ASCII text",
            "not a TFRecord file at all",
            {
                "records": 0,
                "error": {"class": "CorruptRecordError", "part": "header", "offset": 0, "index": 0},
            },
        )

    # ----------------------------------------------------------------- damaged compressed files

    def damaged_compressed(self, tmp: Path) -> None:
        recs = few_records()
        offs = record_offsets(recs)
        n = len(recs)
        for comp in ("GZIP", "ZLIB"):
            ext = EXT[comp]
            good = tf_write(tmp / "x", recs, comp)
            plain = decompress(good, comp)

            # Cut the compressed file: in the middle of the deflate data, inside the
            # trailer, inside the gzip/zlib header.
            mid = len(good) // 2
            prefix = zlib.decompressobj(31 if comp == "GZIP" else 15).decompress(good[:mid])
            whole = sum(1 for o in offs[1:] if o <= len(prefix))
            self.emit(
                f"cut-stream-middle.{ext}",
                comp,
                good[:mid],
                recs,
                f"the 'few.{ext}' file TensorFlow wrote, cut to its first {mid} bytes",
                "a compressed file cut in the middle of its deflate data",
                {
                    "records": whole,
                    "error": {
                        "class": "TruncatedRecordError",
                        "offset": offs[whole],
                        "index": whole,
                    },
                },
            )
            trailer = 8 if comp == "GZIP" else 4
            self.emit(
                f"cut-stream-trailer.{ext}",
                comp,
                good[: len(good) - trailer // 2],
                recs,
                f"the 'few.{ext}' file TensorFlow wrote, less its last {trailer // 2} bytes "
                f"(inside the {trailer}-byte {'CRC32+ISIZE' if comp == 'GZIP' else 'Adler-32'} trailer)",
                "every record intact, the stream's trailer cut",
                {
                    "records": n,
                    "error": {"class": "TruncatedRecordError", "offset": offs[n], "index": n},
                    "differs_from_tf": (
                        "TensorFlow reads every record and ends silently; tfrecord_lite raises "
                        "TruncatedRecordError after the last record (the stream has no end marker)"
                    ),
                },
            )
            hdr_cut = 5 if comp == "GZIP" else 1
            self.emit(
                f"cut-stream-header.{ext}",
                comp,
                good[:hdr_cut],
                recs,
                f"the first {hdr_cut} byte(s) of the 'few.{ext}' file TensorFlow wrote",
                f"a file that ends inside the {comp} header",
                {
                    "records": 0,
                    "error": {"class": "TruncatedRecordError", "offset": 0, "index": 0},
                    "differs_from_tf": "TensorFlow ends silently with 0 records",
                },
            )

            # Well-formed compressed streams whose content is damaged.
            def content(
                name: str,
                payload: bytes,
                how: str,
                expect: dict[str, Any],
                comp: str = comp,
                ext: str = ext,
            ) -> None:
                self.emit(
                    f"{name}.{ext}",
                    comp,
                    compress(payload, comp),
                    recs,
                    f"the decompressed 'few.{ext}' stream TensorFlow wrote, {how}, "
                    f"compressed again with Python's zlib ({comp}, level 6, mem_level 9)",
                    f"a complete {comp} stream: {how}",
                    expect,
                )

            b = bytearray(plain)
            b[offs[2] + 9] ^= 1
            content(
                "corrupt-header",
                bytes(b),
                "length CRC of record 2 changed",
                {
                    "records": 2,
                    "error": {
                        "class": "CorruptRecordError",
                        "part": "header",
                        "offset": offs[2],
                        "index": 2,
                    },
                },
            )
            b = bytearray(plain)
            b[offs[3] + 12 + 7] ^= 1
            content(
                "corrupt-data",
                bytes(b),
                "a data byte of record 3 changed",
                {
                    "records": 3,
                    "error": {
                        "class": "CorruptRecordError",
                        "part": "data",
                        "offset": offs[3] + 12,
                        "index": 3,
                    },
                },
            )
            content(
                "truncated-header",
                plain[: offs[3] + 5],
                "cut 5 bytes into record 3's header",
                {
                    "records": 3,
                    "error": {"class": "TruncatedRecordError", "offset": offs[3], "index": 3},
                    "differs_from_tf": "TensorFlow ends silently after 3 records",
                },
            )
            content(
                "truncated-data",
                plain[: offs[3] + 40],
                "cut inside record 3's data",
                {
                    "records": 3,
                    "error": {"class": "TruncatedRecordError", "offset": offs[3], "index": 3},
                },
            )

            # A damaged deflate stream. TensorFlow's reader inflates its whole 256 KiB
            # input buffer before it frames records, so it yields no record from a
            # buffer whose inflate failed; a reader may give back more before the error.
            b = bytearray(good)
            pos = len(good) * 3 // 4
            b[pos] ^= 0xFF
            data = bytes(b)
            _, tf_records = tf_read(tmp_write(tmp, data), comp)
            self.emit(
                f"corrupt-deflate.{ext}",
                comp,
                data,
                recs,
                f"the 'few.{ext}' file TensorFlow wrote, with compressed byte {pos} XOR 0xFF",
                "a damaged deflate stream",
                {
                    "records_min": len(tf_records),
                    "records_max": n - 1,
                    "error": {"class": "DataLossError"},
                },
            )

            # Bytes after the end of the stream.
            if comp == "GZIP":
                self.emit(
                    "trailing-garbage.gzip",
                    comp,
                    good + b"garbage!",
                    recs,
                    "the 'few.gzip' file TensorFlow wrote, with b'garbage!' appended",
                    "a GZIP member followed by bytes that are not a gzip member",
                    {"records": n, "error": {"class": "CompressionError"}},
                )

    # ----------------------------------------------------------------- tf.train.Example files

    def examples(self, tmp: Path) -> None:
        tf = tf_module()
        train = tf.train

        def i64(*v: int) -> Any:
            return train.Feature(int64_list=train.Int64List(value=list(v)))

        def f32(*v: float) -> Any:
            return train.Feature(float_list=train.FloatList(value=list(v)))

        def byt(*v: bytes) -> Any:
            return train.Feature(bytes_list=train.BytesList(value=list(v)))

        examples = [
            train.Example(
                features=train.Features(
                    feature={
                        "int": i64(1, -1, 2**63 - 1, -(2**63), 0),
                        "float": f32(0.1, -0.0, float("inf"), 1e-45, 3.4028234663852886e38, -2.5),
                        "bytes": byt(b"", b"hi", b"\xff\x00\x80"),
                        "empty": train.Feature(),
                        "empty_int": i64(),
                        "empty_bytes": byt(),
                        "label": i64(3),
                        "caf\u00e9": byt("\u00e9t\u00e9".encode()),
                    }
                )
            ),
            train.Example(features=train.Features(feature={"label": i64(7), "float": f32(1.5)})),
            train.Example(),  # serializes to b""
            train.Example(features=train.Features()),  # b"\n\x00"
            train.Example(
                features=train.Features(
                    feature={
                        "int": i64(*range(-50, 50)),
                        "float": f32(*[i / 8 for i in range(40)]),
                        "bytes": byt(*[bytes([i]) * i for i in range(10)]),
                        "label": i64(0),
                    }
                )
            ),
        ]
        serialized = [e.SerializeToString(deterministic=True) for e in examples]
        decoded = [example_to_json(e) for e in examples]
        # TensorFlow's own parse of the batch: VarLenFeature for each key.
        spec = {
            "int": tf.io.VarLenFeature(tf.int64),
            "float": tf.io.VarLenFeature(tf.float32),
            "bytes": tf.io.VarLenFeature(tf.string),
            "empty": tf.io.VarLenFeature(tf.int64),
            "empty_int": tf.io.VarLenFeature(tf.int64),
            "label": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
        }
        parsed = tf.io.parse_example(tf.constant(serialized), spec)
        tf_parse = {"spec": describe_spec(spec), "output": tensors_to_json(parsed)}
        for comp in ("", "GZIP"):
            data = tf_write(tmp / "x", serialized, comp)
            self.emit(
                f"examples.{EXT[comp]}",
                comp,
                data,
                serialized,
                "tf.train.Example messages, SerializeToString(deterministic=True), tf.io.TFRecordWriter(path, "
                f"{comp!r})",
                "tf.train.Example records: int64/float/bytes lists, an empty Feature(), empty "
                "lists, missing keys, an empty Example (b''), Features with no feature, long lists",
                {},
                extra={"examples": decoded, "tf_parse_example": tf_parse},
            )

        fl = train.FeatureList
        seqs = [
            train.SequenceExample(
                context=train.Features(feature={"id": byt(b"seq-0"), "len": i64(3)}),
                feature_lists=train.FeatureLists(
                    feature_list={
                        "tokens": fl(feature=[i64(1, 2), i64(), i64(3)]),
                        "scores": fl(feature=[f32(0.5), f32(0.25), f32(-1.0)]),
                        "words": fl(feature=[byt(b"a"), train.Feature(), byt(b"b", b"c")]),
                    }
                ),
            ),
            train.SequenceExample(
                context=train.Features(feature={"len": i64(0)}),
                feature_lists=train.FeatureLists(feature_list={"tokens": fl(feature=[])}),
            ),
            train.SequenceExample(),
        ]
        serialized = [s.SerializeToString(deterministic=True) for s in seqs]
        decoded = [sequence_example_to_json(s) for s in seqs]
        ctx_spec = {
            "len": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
            "id": tf.io.VarLenFeature(tf.string),
        }
        seq_spec = {
            "tokens": tf.io.VarLenFeature(tf.int64),
            "scores": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True),
        }
        ctx, seq, lengths = tf.io.parse_sequence_example(
            tf.constant(serialized), context_features=ctx_spec, sequence_features=seq_spec
        )
        tf_parse = {
            "context_spec": describe_spec(ctx_spec),
            "sequence_spec": describe_spec(seq_spec),
            "context": tensors_to_json(ctx),
            "feature_lists": tensors_to_json(seq),
            "lengths": tensors_to_json(lengths),
        }
        data = tf_write(tmp / "x", serialized, "")
        self.emit(
            "sequence-examples.plain",
            "",
            data,
            serialized,
            "tf.train.SequenceExample messages, SerializeToString(deterministic=True), tf.io.TFRecordWriter(path)",
            "tf.train.SequenceExample records: context features, feature lists with empty "
            "Feature() rows, an empty feature list, an empty SequenceExample",
            {},
            extra={"sequence_examples": decoded, "tf_parse_sequence_example": tf_parse},
        )


def tmp_write(tmp: Path, data: bytes) -> Path:
    path = tmp / "probe"
    path.write_bytes(data)
    return path


def feature_to_json(feature: Any) -> dict[str, Any]:
    kind = feature.WhichOneof("kind")
    if kind is None:
        return {"kind": None, "value": []}
    values = list(getattr(feature, kind).value)
    if kind == "bytes_list":
        return {"kind": kind, "value": [v.hex() for v in values]}
    if kind == "float_list":
        bits = [struct.unpack("<I", struct.pack("<f", v))[0] for v in values]
        return {"kind": kind, "value": [repr(v) for v in values], "float32_bits": bits}
    return {"kind": kind, "value": values}


def example_to_json(example: Any) -> dict[str, Any]:
    return {
        "has_features": example.HasField("features"),
        "features": {k: feature_to_json(v) for k, v in sorted(example.features.feature.items())},
    }


def sequence_example_to_json(seq: Any) -> dict[str, Any]:
    return {
        "context": {k: feature_to_json(v) for k, v in sorted(seq.context.feature.items())},
        "feature_lists": {
            k: [feature_to_json(f) for f in v.feature]
            for k, v in sorted(seq.feature_lists.feature_list.items())
        },
    }


def describe_spec(spec: dict[str, Any]) -> dict[str, str]:
    return {k: repr(v) for k, v in sorted(spec.items())}


def tensors_to_json(d: dict[str, Any]) -> dict[str, Any]:
    tf = tf_module()
    out: dict[str, Any] = {}
    for k, v in sorted(d.items()):
        if isinstance(v, tf.SparseTensor):
            out[k] = {
                "sparse": True,
                "indices": v.indices.numpy().tolist(),
                "values": array_to_json(v.values),
                "dense_shape": v.dense_shape.numpy().tolist(),
            }
        else:
            out[k] = {"dense": True, "shape": list(v.shape), "values": array_to_json(v)}
    return out


def array_to_json(t: Any) -> Any:
    tf = tf_module()
    a = t.numpy()
    if t.dtype == tf.string:
        return [x.hex() for x in a.reshape(-1).tolist()]
    if t.dtype == tf.float32:
        return [repr(float(x)) for x in a.reshape(-1).tolist()]
    return a.reshape(-1).tolist()


def write_readme_list(out: Path, names: list[str]) -> None:
    """Print the fixture list (pasted into README.md by hand when it changes)."""
    for n in sorted(names):
        side = json.loads((out / n.replace(".tfrecord", ".json")).read_text())
        print(f"| `{n}` | {side['size']} | {side['description']} |")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=HERE, help="folder to write (default: tests/data)"
    )
    parser.add_argument("--list", action="store_true", help="print the README table of fixtures")
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    gen = Generator(out)
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        steps: list[Callable[[Path], None]] = [
            gen.well_formed,
            gen.damaged_plain,
            gen.damaged_compressed,
            gen.examples,
        ]
        for step in steps:
            step(tmp)
    if args.list:
        write_readme_list(out, gen.names)
    total = sum((out / n).stat().st_size for n in gen.names)
    print(f"wrote {len(gen.names)} fixtures ({total} bytes) to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
