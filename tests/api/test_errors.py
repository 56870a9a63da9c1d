"""The exception hierarchy: builtin bases, locations, messages, pickling (peers.md #6)."""

from __future__ import annotations

import copy
import io
import pickle
from typing import Any

import pytest

import tfrecord_lite as tfr


def test_hierarchy() -> None:
    assert issubclass(tfr.DataLossError, tfr.TFRecordError)
    assert issubclass(tfr.DataLossError, ValueError)
    for cls in (tfr.CorruptRecordError, tfr.TruncatedRecordError, tfr.CompressionError):
        assert issubclass(cls, tfr.DataLossError)
        assert issubclass(cls, ValueError)
    assert issubclass(tfr.TruncatedRecordError, EOFError)
    assert not issubclass(tfr.CorruptRecordError, EOFError)
    assert issubclass(tfr.ClosedError, tfr.TFRecordError)
    assert issubclass(tfr.ClosedError, ValueError)
    assert not issubclass(tfr.ClosedError, tfr.DataLossError)
    assert issubclass(tfr.ParseError, tfr.TFRecordError)
    assert issubclass(tfr.ParseError, ValueError)
    assert not issubclass(tfr.ParseError, tfr.DataLossError)


def test_message_and_location() -> None:
    err = tfr.CorruptRecordError("bad crc", part="header", path="a.tfrecord", offset=12, index=3)
    assert err.message == "bad crc"
    assert str(err) == "bad crc (file 'a.tfrecord', record 3, byte offset 12)"
    assert (err.path, err.offset, err.index, err.part) == ("a.tfrecord", 12, 3, "header")
    assert str(tfr.TFRecordError("plain")) == "plain"
    assert str(tfr.ClosedError("Writer is closed.")) == "Writer is closed."
    assert tfr.TFRecordError("x", offset=0).offset == 0
    assert "byte offset 0" in str(tfr.TFRecordError("x", offset=0))


def test_path_like_is_stored_as_str(tmp_path: Any) -> None:
    err = tfr.DataLossError("x", path=tmp_path / "f")
    assert err.path == str(tmp_path / "f")
    assert isinstance(err.path, str)


def test_with_location() -> None:
    err = tfr.TruncatedRecordError("cut", expected=30, available=5, offset=10, index=2)
    moved = err.with_location(path="f.tfrecord", offset_base=100, index_base=7)
    assert type(moved) is tfr.TruncatedRecordError
    assert (moved.path, moved.offset, moved.index) == ("f.tfrecord", 110, 9)
    assert (moved.expected, moved.available) == (30, 5)
    assert str(moved) == "cut (file 'f.tfrecord', record 9, byte offset 110)"
    assert (err.path, err.offset, err.index) == (None, 10, 2)  # the original is unchanged
    kept = tfr.CompressionError("z", path="keep").with_location()
    assert kept.path == "keep" and kept.offset is None and kept.index is None


_ERRORS = [
    tfr.TFRecordError("base", path="p", offset=1, index=2),
    tfr.DataLossError("loss", path="p", offset=1, index=2),
    tfr.CorruptRecordError("crc", part="header", path="p", offset=1, index=2),
    tfr.TruncatedRecordError("cut", expected=9, available=3, path="p", offset=1, index=2),
    tfr.CompressionError("zlib", path="p"),
    tfr.ClosedError("Writer is closed.", path="p"),
    tfr.ParseError("bad example", key="label", path="p", offset=1, index=2),
]


@pytest.mark.parametrize("err", _ERRORS, ids=lambda e: type(e).__name__)
def test_pickle_roundtrip(err: tfr.TFRecordError) -> None:
    for clone in (pickle.loads(pickle.dumps(err)), copy.copy(err), copy.deepcopy(err)):
        assert type(clone) is type(err)
        assert str(clone) == str(err)
        assert clone.args == err.args
        assert vars(clone) == vars(err)
    located = err.with_location(path="q", offset_base=5, index_base=5)
    clone = pickle.loads(pickle.dumps(located, protocol=pickle.HIGHEST_PROTOCOL))
    assert (clone.path, clone.offset, clone.index) == (located.path, located.offset, located.index)
    assert vars(clone) == vars(located)


def test_real_errors_pickle(tmp_path: Any) -> None:
    # An error raised by the reader keeps its location across a process boundary.
    path = tmp_path / "bad.tfrecord"
    stream = bytearray(tfr.encode_records([b"a", b"bb"]))
    stream[17 + 12] ^= 1
    path.write_bytes(bytes(stream))
    with pytest.raises(tfr.CorruptRecordError) as info:
        list(tfr.tf_record_iterator(path))
    clone = pickle.loads(pickle.dumps(info.value))
    assert (clone.path, clone.offset, clone.index, clone.part) == (str(path), 29, 1, "data")
    with pytest.raises(tfr.TruncatedRecordError) as cut:
        list(tfr.read_records(io.BytesIO(bytes(stream[:20]))))
    clone2 = pickle.loads(pickle.dumps(cut.value))
    assert (clone2.expected, clone2.available, clone2.offset, clone2.index) == (12, 3, 17, 1)


def test_catchable_as_builtins(tmp_path: Any) -> None:
    with pytest.raises(EOFError):
        list(tfr.iter_records(tfr.encode_record(b"abc")[:-1]))
    with pytest.raises(ValueError):
        list(tfr.iter_records(b"\x00" * 16))
    writer = tfr.TFRecordWriter(tmp_path / "w")
    writer.close()
    with pytest.raises(ValueError, match="Writer is closed"):
        writer.write(b"x")


#: Error names the docs use that are TensorFlow's (``tf.errors.*``), said to compare with ours.
TENSORFLOW_ERRORS = {
    "FailedPreconditionError",
    "InvalidArgumentError",
    "NotFoundError",
    "OpError",
}
#: Error classes of an integration, importable from its module (whose page names them).
INTEGRATION_ERRORS = {
    "DatasetNotFoundError": "tfrecord_lite.tfds",
    "UnsupportedFeatureError": "tfrecord_lite.tfds",
}


def test_every_error_class_the_docs_name_is_exported() -> None:
    import builtins
    import importlib
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    named: dict[str, str] = {}
    for page in pages:
        for name in re.findall(r"\b([A-Z]\w*(?:Error|Warning))\b", page.read_text("utf-8")):
            named.setdefault(name, str(page.relative_to(root)))
    assert {"NotATFRecordError", "IncompleteShardSetError", "FileInUseError"} <= set(named)
    missing = []
    for name, page in sorted(named.items()):
        if hasattr(builtins, name) or name in TENSORFLOW_ERRORS:
            continue
        module = importlib.import_module(INTEGRATION_ERRORS.get(name, "tfrecord_lite"))
        cls = getattr(module, name, None)
        if not (isinstance(cls, type) and name in getattr(module, "__all__", ())):
            missing.append(f"{name} ({page})")
        elif module is tfr:
            assert issubclass(cls, (tfr.TFRecordError, Warning)), name
    assert not missing, f"documented but not exported: {missing}"
