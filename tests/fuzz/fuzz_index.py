"""atheris target: arbitrary bytes as the index file of a GZIP TFRecord file.

Byte 0: bit 0 set and the rest starting like a binary index (``TFRLZIX1``): its header
and body CRCs are made right before it is written, so mutations reach the fields,
the record lengths and the seek points (their positions and windows) behind the CRCs;
bit 1 picks ``verify``. The rest is the index file, beside a fixed GZIP file of
several members and many deflate blocks (seek points every 2 KiB of output).

Checked: ``read_index`` raises only StaleIndexError; ``TFRecordFile`` with that
index raises only StaleIndexError (naming the index file) or gives exactly the
file's records, whole and by index (an index can refuse a file, never make it read
different records). Memory and time stay bounded by libFuzzer's limits.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
import tempfile
import zlib

import _leakfix
import atheris

with atheris.instrument_imports(include=["tfrecord_lite"]):
    import tfrecord_lite as tfr
    from tfrecord_lite._files import StaleIndexError
    from tfrecord_lite._files._gzindex import _HEAD, MAGIC

RECORDS = [bytes([i % 251]) * (i * 37 % 700) + b"rec%03d" % i for i in range(120)]
DIR = tempfile.mkdtemp(prefix="fuzz-index-")
DATA = os.path.join(DIR, "data.gz")
with open(DATA, "wb") as _f:
    for _k in range(0, len(RECORDS), 40):
        _z = zlib.compressobj(6, zlib.DEFLATED, 31, memLevel=1)
        _f.write(_z.compress(tfr.encode_records(RECORDS[_k : _k + 40])) + _z.flush())
INDEX = os.path.join(DIR, "data.gz.idx")


def seed_index() -> bytes:
    """The data file's own binary index (the seeds start from it)."""
    return open(tfr.create_index(DATA, INDEX, spacing=2048), "rb").read()


def fix_crcs(blob: bytes) -> bytes:
    """``blob`` with its header's body CRC and header CRC made right."""
    end = len(MAGIC) + _HEAD.size
    if len(blob) < end:
        return blob
    head = bytearray(blob[len(MAGIC) : end])
    body = blob[end:]
    struct.pack_into("<I", head, _HEAD.size - 8, zlib.crc32(body))
    struct.pack_into("<I", head, _HEAD.size - 4, zlib.crc32(MAGIC + bytes(head[:-4])))
    return MAGIC + bytes(head) + body


def TestOneInput(data: bytes) -> None:
    if not data:
        return
    blob = data[1:]
    if data[0] & 1 and blob.startswith(MAGIC):
        blob = fix_crcs(blob)
    verify = bool(data[0] & 2)
    with open(INDEX, "wb") as f:
        f.write(blob)
    with contextlib.suppress(StaleIndexError):
        tfr.read_index(INDEX)
    try:
        with tfr.TFRecordFile(DATA, index_path=INDEX, verify=verify) as f:
            got = list(f)
            picks = [len(RECORDS) - 1, 0, 77, 41, 40, 39]
            some = [f[i] for i in picks]
            part = f[50:60]
    except StaleIndexError as err:
        if err.path != INDEX:
            raise AssertionError(f"StaleIndexError naming {err.path!r}, not the index") from None
        return
    if got != RECORDS or some != [RECORDS[i] for i in picks] or part != RECORDS[50:60]:
        raise AssertionError("the index made the file read other records")


if __name__ == "__main__":
    atheris.Setup(sys.argv, _leakfix.guarded(TestOneInput))
    atheris.Fuzz()
