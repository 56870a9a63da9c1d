"""atheris target: arbitrary bytes as a shard set's manifest, beside three intact shards.

Checked: reading the manifest raises only InvalidManifestError (never a RecursionError,
TypeError, KeyError...); reading the set by directory, glob and ``name@N`` raises only
an IncompleteShardSetError-family error or returns exactly the set's records, in order
(a manifest can refuse a set, never make it read short or different). Memory and time
stay bounded by libFuzzer's limits (an unbounded read or a hang is a crash).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile

import _leakfix
import atheris

with atheris.instrument_imports(include=["tfrecord_lite"]):
    import tfrecord_lite as tfr
    from tfrecord_lite._files import IncompleteShardSetError, InvalidManifestError
    from tfrecord_lite._files._manifest import read_manifest

RECORDS = [b"rec%02d" % i for i in range(6)]
DIR = tempfile.mkdtemp(prefix="fuzz-manifest-")
with tfr.ShardedWriter(os.path.join(DIR, "train"), records_per_shard=2) as _w:
    _w.write_all(RECORDS)
MANIFEST = os.path.join(DIR, "_train.shards.json")
SOURCES = [DIR, os.path.join(DIR, "train-*"), os.path.join(DIR, "train@3")]


def TestOneInput(data: bytes) -> None:
    with open(MANIFEST, "wb") as f:
        f.write(data)
    with contextlib.suppress(InvalidManifestError):
        read_manifest(MANIFEST)
    for source in SOURCES:
        try:
            got = list(tfr.tf_record_iterator(source))
        except IncompleteShardSetError:
            continue
        if got != RECORDS:
            raise AssertionError(f"{source}: read {got!r}, not the set's records")


if __name__ == "__main__":
    atheris.Setup(sys.argv, _leakfix.guarded(TestOneInput))
    atheris.Fuzz()
