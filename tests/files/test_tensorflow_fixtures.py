"""tfrecord_lite reads the files real TensorFlow wrote (tests/data/), as their sidecars say.

No TensorFlow needed: tests/data/make_fixtures.py wrote each ``NAME.tfrecord`` with
TensorFlow and recorded in ``NAME.json`` the records and what tfrecord_lite must do
(``expect``), including errors: their class, and where known the byte offset (in
the decompressed stream) and the record index. See tests/data/README.md.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path
from typing import Any, Optional

import pytest

import tfrecord_lite as tfr

DATA = Path(__file__).resolve().parents[1] / "data"
SIDECARS = sorted(DATA.glob("*.json"))
COMPRESSION_ARG = {"": None, "GZIP": "GZIP", "ZLIB": "ZLIB"}


def load(sidecar: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(sidecar.read_text())
    return result


def matches(record: bytes, entry: dict[str, Any]) -> bool:
    if len(record) != entry["length"]:
        return False
    if "hex" in entry:
        return record.hex() == entry["hex"]
    return hashlib.sha256(record).hexdigest() == entry["sha256"]


def read_until_error(path: Path, compression: Any) -> tuple[list[bytes], Optional[Exception]]:
    records: list[bytes] = []
    try:
        for record in tfr.tf_record_iterator(str(path), compression):
            records.append(record)
    except tfr.TFRecordError as err:
        return records, err
    return records, None


def check(side: dict[str, Any], records: list[bytes], err: Optional[Exception], path: Path) -> None:
    expect = side["expect"]
    name = side["fixture"]
    if "records" in expect:
        assert len(records) == expect["records"], name
    else:
        assert expect["records_min"] <= len(records) <= expect["records_max"], name
    for i, record in enumerate(records):
        assert matches(record, side["records"][i]), f"{name}: record {i} differs"
    want = expect.get("error")
    if want is None:
        assert err is None, f"{name}: unexpected {err!r}"
        return
    assert err is not None, f"{name}: expected {want['class']}, got no error"
    cls = getattr(tfr, want["class"])
    assert isinstance(err, cls), f"{name}: expected {want['class']}, got {err!r}"
    assert isinstance(err, tfr.DataLossError)
    for attr in ("part", "offset", "index"):
        if attr in want:
            assert getattr(err, attr) == want[attr], f"{name}: {attr} {getattr(err, attr)!r}"
    assert err.path is not None and Path(err.path).name == path.name


def test_fixtures_exist() -> None:
    assert len(SIDECARS) >= 50
    for sidecar in SIDECARS:
        assert (DATA / load(sidecar)["fixture"]).is_file(), sidecar.name
    assert sum(p.stat().st_size for p in DATA.iterdir()) < 2 * 2**20


@pytest.mark.parametrize("sidecar", SIDECARS, ids=lambda p: p.stem)
def test_fixture_auto(sidecar: Path) -> None:
    """Compression detected from the file."""
    side = load(sidecar)
    path = DATA / side["fixture"]
    records, err = read_until_error(path, "auto")
    check(side, records, err, path)


@pytest.mark.parametrize("sidecar", SIDECARS, ids=lambda p: p.stem)
def test_fixture_explicit(sidecar: Path) -> None:
    """Compression given, as a TensorFlow user passes it."""
    side = load(sidecar)
    path = DATA / side["fixture"]
    records, err = read_until_error(path, COMPRESSION_ARG[side["compression"]])
    check(side, records, err, path)


@pytest.mark.parametrize("sidecar", SIDECARS, ids=lambda p: p.stem)
def test_fixture_matches_tensorflow(sidecar: Path) -> None:
    """Where TensorFlow raised, we raise too; where we differ, the sidecar says why."""
    side = load(sidecar)
    tf = side["tf"]
    expect = side["expect"]
    if "crashed" in tf:
        assert "differs_from_tf" in expect
        return
    tf_errors = [tf[api]["error"] for api in ("tf_record_iterator", "TFRecordDataset")]
    if any(tf_errors):
        assert expect.get("error") is not None, "TensorFlow raised: so must we"
    if expect.get("error") is not None and not any(tf_errors):
        assert "differs_from_tf" in expect
    if tf_errors[0] and tf_errors[0]["class"] == "DataLossError":
        # TensorFlow's record offsets are ours.
        msg = tf_errors[0]["message"]
        want = expect["error"]
        if msg.startswith("corrupted record at "):
            assert msg.split()[3] == str(want["offset"])
        elif msg.startswith("truncated record at "):
            assert msg.split()[3].rstrip("'") == str(want["offset"])
    if "records" in expect and "differs_from_tf" not in expect:
        assert expect["records"] == tf["tf_record_iterator"]["records"]


def test_large_plain_rebuilt(tmp_path: Path) -> None:
    """The > 16 MiB record, plain: TensorFlow's plain file is the decompressed ZLIB stream."""
    side = load(DATA / "large.zlib.json")
    plain = zlib.decompress((DATA / side["fixture"]).read_bytes())
    assert len(plain) == side["plain_file_size"]
    assert hashlib.sha256(plain).hexdigest() == side["plain_file_sha256"]
    path = tmp_path / "large.plain.tfrecord"
    path.write_bytes(plain)
    for compression in ("auto", None):
        records, err = read_until_error(path, compression)
        assert err is None
        assert len(records) == len(side["records"])
        assert all(matches(r, e) for r, e in zip(records, side["records"]))
    # And cut short inside that record's data.
    path.write_bytes(plain[: len(plain) // 2])
    records, err = read_until_error(path, "auto")
    assert len(records) == 1
    assert isinstance(err, tfr.TruncatedRecordError)
    assert (err.offset, err.index) == (17, 1)


@pytest.mark.parametrize("name", ["few.plain", "few.gzip", "few.zlib", "large.gzip"])
def test_our_writer_reproduces_records(name: str, tmp_path: Path) -> None:
    """Our writer, given TensorFlow's records, writes a file with the same decompressed bytes."""
    side = load(DATA / f"{name}.json")
    source = DATA / side["fixture"]
    records = list(tfr.tf_record_iterator(str(source)))
    out = tmp_path / "ours.tfrecord"
    with tfr.TFRecordWriter(str(out), COMPRESSION_ARG[side["compression"]]) as writer:
        for record in records:
            writer.write(record)

    def stream(p: Path) -> bytes:
        data = p.read_bytes()
        if side["compression"] == "GZIP":
            return zlib.decompress(data, 31)
        if side["compression"] == "ZLIB":
            return zlib.decompress(data)
        return data

    assert stream(out) == stream(source)


def _feature_json(feature: Any) -> dict[str, Any]:
    kind = feature.WhichOneof("kind")
    if kind is None:
        return {"kind": None, "value": []}
    values = list(getattr(feature, kind).value)
    if kind == "bytes_list":
        return {"kind": kind, "value": [v.hex() for v in values]}
    if kind == "float_list":
        import struct

        bits = [struct.unpack("<I", struct.pack("<f", v))[0] for v in values]
        return {"kind": kind, "value": [repr(v) for v in values], "float32_bits": bits}
    return {"kind": kind, "value": values}


@pytest.mark.parametrize("name", ["examples.plain", "examples.gzip"])
def test_example_fixtures_decode(name: str) -> None:
    """The Example records decode (with tfrecord_lite's own protos) to what TensorFlow put in."""
    from tfrecord_lite import example_pb2

    side = load(DATA / f"{name}.json")
    records = list(tfr.tf_record_iterator(str(DATA / side["fixture"])))
    assert len(records) == len(side["examples"])
    for record, want in zip(records, side["examples"]):
        ex = example_pb2.Example.FromString(record)
        got = {
            "has_features": ex.HasField("features"),
            "features": {k: _feature_json(v) for k, v in sorted(ex.features.feature.items())},
        }
        assert got == want


def test_sequence_example_fixture_decodes() -> None:
    from tfrecord_lite import example_pb2

    side = load(DATA / "sequence-examples.plain.json")
    records = list(tfr.tf_record_iterator(str(DATA / side["fixture"])))
    assert len(records) == len(side["sequence_examples"])
    for record, want in zip(records, side["sequence_examples"]):
        seq = example_pb2.SequenceExample.FromString(record)
        got = {
            "context": {k: _feature_json(v) for k, v in sorted(seq.context.feature.items())},
            "feature_lists": {
                k: [_feature_json(f) for f in v.feature]
                for k, v in sorted(seq.feature_lists.feature_list.items())
            },
        }
        assert got == want
