"""Write the seed corpus of every fuzz target from tests/data's fixtures and small records.

    python tests/fuzz/make_corpus.py OUT_DIR    # OUT_DIR/<target>/seed-NNN

The fixtures are files real TensorFlow wrote (plain, GZIP, ZLIB, damaged ones too);
their Examples and SequenceExamples seed the parser targets.
"""

from __future__ import annotations

import gzip
import json
import sys
import zlib
from pathlib import Path

import _common

import tfrecord_lite as tfr

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
MAX_SEED = 64 * 1024


def _records(path: Path) -> list[bytes]:
    try:
        return list(tfr.read_records(path, on_error="skip", on_skip=lambda r: None))
    except tfr.TFRecordError:
        return []


def seeds() -> dict[str, list[bytes]]:
    files = sorted(p for p in DATA.glob("*.tfrecord") if p.stat().st_size <= MAX_SEED)
    small = [b"", b"foo", bytes(range(40)), b"\x00" * 17]
    examples = [
        *_records(DATA / "examples.plain.tfrecord"),
        tfr.encode_example({"int": [1, -2, 2**40], "float": [0.5, 1.5], "bytes": [b"ab", b""]}),
        tfr.encode_example({"label": [3], "float": [1.0, 2.0]}),
        tfr.encode_example({"int": [0, 5], "float": [0.1, 0.2], "label": []}),
        b"",
    ]
    sequences = [
        *_records(DATA / "sequence-examples.plain.tfrecord"),
        tfr.encode_sequence_example(
            {"id": [b"x"], "length": [2]}, {"tokens": [[1, 2], [3]], "scores": [[0.5], []]}
        ),
        b"",
    ]
    stream = tfr.encode_records(small)
    framing = [p.read_bytes() for p in files] + [stream, tfr.encode_records(examples)]
    out: dict[str, list[bytes]] = {
        # byte 0: the chunk size and whether the stream size is known
        "fuzz_framing": [bytes([i % 256]) + blob for i, blob in enumerate(framing)],
        "fuzz_compressed": [
            bytes([i % 256]) + blob
            for i, blob in enumerate(
                [p.read_bytes() for p in files]
                + [gzip.compress(stream, mtime=0), zlib.compress(stream)]
            )
        ],
    }
    parse_seeds = []
    for sel in range(len(_common.EXAMPLE_SPECS)):
        parse_seeds.append(_common.join(sel, 1, examples[:3]))
        parse_seeds.append(_common.join(sel, 0, examples[3:6]))
    # overlong length prefixes (5 bytes: read; 6 and 10: refused) and keys alike in
    # length and first and last 8 bytes, through every spec
    wide = [_common.overlong(examples[1], w) for w in (5, 6, 10)]
    alike = [
        tfr.encode_example({k: [i, len(k)] for k in _common.ALIKE_KEYS[i % 7 :: 3]})
        for i in range(3)
    ]
    for sel in range(len(_common.EXAMPLE_SPECS)):
        parse_seeds.append(_common.join(sel, 1, wide))
        parse_seeds.append(_common.join(sel, 1, alike))
    out["fuzz_parse_example"] = parse_seeds
    out["fuzz_infer_schema"] = [*parse_seeds[:2], _common.join(0, 1, sequences)]
    out["fuzz_parse_sequence_example"] = [
        _common.join(sel, flags, sequences)
        for sel in range(len(_common.SEQUENCE_SPECS))
        for flags in (0, 1)
    ]
    out["fuzz_manifest"] = _manifest_seeds()
    out["fuzz_index"] = _index_seeds()
    return out


def _index_seeds() -> list[bytes]:
    """The target's data file's own binary index (CRCs made right or not, verify on
    and off), its text index, and cut, foreign and hostile ones."""
    import fuzz_index  # (its data file, written on import)

    binary = fuzz_index.seed_index()
    text = tfr.create_index(fuzz_index.DATA, fuzz_index.INDEX + ".text", format="text")
    with open(text, "rb") as f:
        lines = f.read()
    other = tfr.create_index(DATA / "examples.gzip.tfrecord", fuzz_index.INDEX + ".other")
    with open(other, "rb") as f:
        foreign = f.read()
    return [
        b"\x01" + binary,
        b"\x03" + binary,
        b"\x00" + binary[: len(binary) // 2],
        b"\x01" + binary[:40],
        b"\x00" + lines,
        b"\x02" + lines.replace(b" ", b"\n", 3),
        b"\x01" + foreign,
        b"\x00" + b"0 99999999999999999999\n",
        b"\x00",
    ]


def _manifest_seeds() -> list[bytes]:
    """A complete manifest of the target's set, an incomplete one, and hostile ones."""
    shards = [
        {"name": f"train-{i:05d}-of-00003", "records": 2, "bytes": 2 * (16 + 5)} for i in range(3)
    ]
    head = {"format": "tfrecord-lite shard set", "version": 1}
    bodies: list[object] = [
        {**head, "complete": True, "shards": shards},
        {**head, "complete": False},
        {**head, "complete": "false"},
        {**head, "complete": True, "shards": None},
        {**head, "complete": True, "shards": [{**shards[0], "records": 1}, *shards[1:]]},
        {**head, "complete": True, "shards": [{**shards[0], "name": "../x-00000-of-00003"}]},
    ]
    out = [json.dumps(b).encode() for b in bodies]
    out += [b"[" * 5000 + b"]" * 5000, b"", b"\xff\xfe", b'{"format": 1e999}']
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[1])
    for target, blobs in seeds().items():
        folder = root / target
        folder.mkdir(parents=True, exist_ok=True)
        for i, blob in enumerate(blobs):
            (folder / f"seed-{i:03d}").write_bytes(blob)
        print(f"{target}: {len(blobs)} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
