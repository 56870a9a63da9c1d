"""The protobuf layer: tfrecord_lite/feature_pb2.py and example_pb2.py.

Checks that the committed generated modules are fresh, that they describe
TensorFlow's messages with TensorFlow's field numbers under the private proto
package ``tfrecord_lite``, and that the wire format matches TensorFlow's
(golden bytes from the reference notes, §D13-15).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import struct
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import google.protobuf as protobuf
import pytest
from _helpers import ld as _ld
from _helpers import varint as _varint
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import FieldDescriptor

from tfrecord_lite import example_pb2, feature_pb2

REPO_ROOT = Path(__file__).resolve().parents[2]
GENERATED = (
    "feature_pb2.py",
    "feature_pb2.pyi",
    "example_pb2.py",
    "example_pb2.pyi",
    "tensor_pb2.py",
    "tensor_pb2.pyi",
)


def _load_generator() -> ModuleType:
    path = REPO_ROOT / "protos" / "generate.py"
    spec = importlib.util.spec_from_file_location("_tfrecord_lite_protos_generate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _int64(values: Iterable[int]) -> feature_pb2.Feature:
    return feature_pb2.Feature(int64_list=feature_pb2.Int64List(value=values))


def _float(values: Iterable[float]) -> feature_pb2.Feature:
    return feature_pb2.Feature(float_list=feature_pb2.FloatList(value=values))


def _bytes(values: Iterable[bytes]) -> feature_pb2.Feature:
    return feature_pb2.Feature(bytes_list=feature_pb2.BytesList(value=values))


def _example(features: Mapping[str, feature_pb2.Feature]) -> example_pb2.Example:
    ex = example_pb2.Example()
    for name, feature in features.items():
        ex.features.feature[name].CopyFrom(feature)
    return ex


def _values(feature: feature_pb2.Feature) -> tuple[str | None, list[object]]:
    kind = feature.WhichOneof("kind")
    if kind is None:
        return None, []
    return kind, list(getattr(feature, kind).value)


def _as_dict(ex: example_pb2.Example) -> dict[str, tuple[str | None, list[object]]]:
    return {k: _values(v) for k, v in ex.features.feature.items()}


# -- hand-built wire format -------------------------------------------------


def _tag(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)


def _example_bytes(entries: Iterable[tuple[bytes, bytes]]) -> bytes:
    """Example bytes from (key, serialized Feature) pairs, one map entry each."""
    features = b"".join(_ld(1, _ld(1, key) + _ld(2, feature)) for key, feature in entries)
    return _ld(1, features)


# -- the generated code itself ------------------------------------------------


def test_committed_modules_are_fresh() -> None:
    generator = _load_generator()
    try:
        generator.find_protoc()
    except generator.GeneratorUnavailable as exc:
        pytest.skip(f"cannot check tfrecord_lite/*_pb2.py for staleness: {exc}")
    problems: dict[str, str] = generator.stale_files()
    assert not problems, "stale generated protobuf modules; run `make protos`:\n" + "".join(
        problems.values()
    )
    assert sorted(generator.output_names()) == sorted(GENERATED)


def test_staleness_check_detects_changes(tmp_path: Path) -> None:
    generator = _load_generator()
    try:
        generator.find_protoc()
    except generator.GeneratorUnavailable as exc:
        pytest.skip(f"cannot run the generator: {exc}")
    for name in GENERATED:
        (tmp_path / name).write_bytes((REPO_ROOT / "tfrecord_lite" / name).read_bytes())
    assert generator.stale_files(tmp_path) == {}
    edited = tmp_path / "feature_pb2.py"
    edited.write_bytes(edited.read_bytes().replace(b"tfrecord_lite", b"tensorflow", 1))
    (tmp_path / "example_pb2.pyi").unlink()
    assert sorted(generator.stale_files(tmp_path)) == ["example_pb2.pyi", "feature_pb2.py"]
    assert generator.write(tmp_path) == ["feature_pb2.py", "example_pb2.pyi"]
    assert generator.stale_files(tmp_path) == {}


def test_generator_pin_is_consistent() -> None:
    """protos/requirements.txt, the `test` extra and generate.py name the same protoc."""
    requirement: str = _load_generator().PROTOC_REQUIREMENT
    lines = (REPO_ROOT / "protos" / "requirements.txt").read_text("utf-8").splitlines()
    assert requirement in [line.split("#")[0].strip() for line in lines]
    assert f'"{requirement}"' in (REPO_ROOT / "pyproject.toml").read_text("utf-8")


@pytest.mark.parametrize("name", [n for n in GENERATED if n.endswith(".py")])
def test_generated_code_needs_only_google_protobuf(name: str) -> None:
    tree = ast.parse((REPO_ROOT / "tfrecord_lite" / name).read_text("utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module is not None
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    allowed = ("google.protobuf.", "tfrecord_lite.feature_pb2")
    assert imported, "no imports found: did the file format change?"
    assert all(m.startswith(allowed) for m in imported), sorted(imported)
    # protoc >= 27 adds a runtime-version gate that older runtimes reject.
    assert "runtime_version" not in (REPO_ROOT / "tfrecord_lite" / name).read_text("utf-8")


# -- descriptors --------------------------------------------------------------

# Typed Any: the descriptor classes differ between protobuf backends and versions.
_ALL_MESSAGES: dict[str, Any] = {
    "tfrecord_lite.BytesList": feature_pb2.BytesList.DESCRIPTOR,
    "tfrecord_lite.FloatList": feature_pb2.FloatList.DESCRIPTOR,
    "tfrecord_lite.Int64List": feature_pb2.Int64List.DESCRIPTOR,
    "tfrecord_lite.Feature": feature_pb2.Feature.DESCRIPTOR,
    "tfrecord_lite.Features": feature_pb2.Features.DESCRIPTOR,
    "tfrecord_lite.FeatureList": feature_pb2.FeatureList.DESCRIPTOR,
    "tfrecord_lite.FeatureLists": feature_pb2.FeatureLists.DESCRIPTOR,
    "tfrecord_lite.Example": example_pb2.Example.DESCRIPTOR,
    "tfrecord_lite.SequenceExample": example_pb2.SequenceExample.DESCRIPTOR,
}


@pytest.mark.parametrize("full_name", sorted(_ALL_MESSAGES))
def test_message_full_names(full_name: str) -> None:
    desc = _ALL_MESSAGES[full_name]
    assert desc.full_name == full_name
    assert descriptor_pool.Default().FindMessageTypeByName(full_name) is desc


def test_file_names_are_private() -> None:
    assert feature_pb2.DESCRIPTOR.name == "tfrecord_lite/feature.proto"
    assert example_pb2.DESCRIPTOR.name == "tfrecord_lite/example.proto"
    assert feature_pb2.DESCRIPTOR.package == "tfrecord_lite"
    assert example_pb2.DESCRIPTOR.package == "tfrecord_lite"
    assert [d.name for d in example_pb2.DESCRIPTOR.dependencies] == ["tfrecord_lite/feature.proto"]
    for desc in _ALL_MESSAGES.values():
        assert not desc.file.name.startswith("tensorflow/")
        assert not desc.full_name.startswith("tensorflow.")
    pool = descriptor_pool.Default()
    assert pool.FindFileByName("tfrecord_lite/example.proto") is example_pb2.DESCRIPTOR
    assert pool.FindFileByName("tfrecord_lite/feature.proto") is feature_pb2.DESCRIPTOR


def _is_repeated(field: FieldDescriptor) -> bool:
    is_repeated = getattr(field, "is_repeated", None)  # protobuf >= 5.x; `label` is deprecated
    if is_repeated is not None:
        return bool(is_repeated)
    return bool(getattr(field, "label") == FieldDescriptor.LABEL_REPEATED)  # noqa: B009


# (message, field, number, type, repeated, message type of the field)
_FIELDS = [
    ("BytesList", "value", 1, FieldDescriptor.TYPE_BYTES, True, None),
    ("FloatList", "value", 1, FieldDescriptor.TYPE_FLOAT, True, None),
    ("Int64List", "value", 1, FieldDescriptor.TYPE_INT64, True, None),
    ("Feature", "bytes_list", 1, FieldDescriptor.TYPE_MESSAGE, False, "BytesList"),
    ("Feature", "float_list", 2, FieldDescriptor.TYPE_MESSAGE, False, "FloatList"),
    ("Feature", "int64_list", 3, FieldDescriptor.TYPE_MESSAGE, False, "Int64List"),
    ("Features", "feature", 1, FieldDescriptor.TYPE_MESSAGE, True, "Features.FeatureEntry"),
    ("FeatureList", "feature", 1, FieldDescriptor.TYPE_MESSAGE, True, "Feature"),
    (
        "FeatureLists",
        "feature_list",
        1,
        FieldDescriptor.TYPE_MESSAGE,
        True,
        "FeatureLists.FeatureListEntry",
    ),
    ("Example", "features", 1, FieldDescriptor.TYPE_MESSAGE, False, "Features"),
    ("SequenceExample", "context", 1, FieldDescriptor.TYPE_MESSAGE, False, "Features"),
    ("SequenceExample", "feature_lists", 2, FieldDescriptor.TYPE_MESSAGE, False, "FeatureLists"),
]


@pytest.mark.parametrize(
    ("message", "field", "number", "type_", "repeated", "message_type"),
    _FIELDS,
    ids=[f"{m}.{f}" for m, f, *_ in _FIELDS],
)
def test_fields_match_tensorflow(
    message: str, field: str, number: int, type_: int, repeated: bool, message_type: str | None
) -> None:
    desc = _ALL_MESSAGES[f"tfrecord_lite.{message}"]
    assert [f.name for f in desc.fields] == [r[1] for r in _FIELDS if r[0] == message]
    fd = desc.fields_by_name[field]
    assert fd.number == number
    assert fd.type == type_
    assert _is_repeated(fd) is repeated
    if message_type is None:
        assert fd.message_type is None
    else:
        assert fd.message_type is not None
        assert fd.message_type.full_name == f"tfrecord_lite.{message_type}"


def test_feature_oneof_and_maps() -> None:
    feature = feature_pb2.Feature.DESCRIPTOR
    assert [o.name for o in feature.oneofs] == ["kind"]
    assert [f.name for f in feature.oneofs_by_name["kind"].fields] == [
        "bytes_list",
        "float_list",
        "int64_list",
    ]
    for entry, value_type in [
        (feature_pb2.Features.DESCRIPTOR.nested_types_by_name["FeatureEntry"], "Feature"),
        (
            feature_pb2.FeatureLists.DESCRIPTOR.nested_types_by_name["FeatureListEntry"],
            "FeatureList",
        ),
    ]:
        assert entry.GetOptions().map_entry
        key, value = entry.fields_by_name["key"], entry.fields_by_name["value"]
        assert (key.number, key.type) == (1, FieldDescriptor.TYPE_STRING)
        assert value.message_type is not None
        assert (value.number, value.message_type.full_name) == (2, f"tfrecord_lite.{value_type}")


# -- wire format --------------------------------------------------------------

_GOLDEN: list[tuple[str, feature_pb2.Feature, str]] = [
    ("a", _int64([1]), "0a0c0a0a0a016112051a030a0101"),
    ("a", _int64([-1]), "0a150a130a0161120e1a0c0a0affffffffffffffffff01"),
    ("x", _float([0.1]), "0a0f0a0d0a0178120812060a04cdcccc3d"),
    ("b", _bytes([b"hi"]), "0a0d0a0b0a016212060a040a026869"),
    ("e", feature_pb2.Feature(), "0a070a050a01651200"),
]


@pytest.mark.parametrize(("name", "feature", "golden"), _GOLDEN, ids=[g for *_, g in _GOLDEN])
def test_golden_bytes(name: str, feature: feature_pb2.Feature, golden: str) -> None:
    # One key only, so the (unspecified) map order cannot matter.
    ex = _example({name: feature})
    assert ex.SerializeToString().hex() == golden
    assert ex.SerializeToString(deterministic=True).hex() == golden
    parsed = example_pb2.Example.FromString(bytes.fromhex(golden))
    assert parsed == ex
    assert list(parsed.features.feature) == [name]
    assert parsed.features.feature[name].WhichOneof("kind") == feature.WhichOneof("kind")


def test_float_is_float32() -> None:
    parsed = example_pb2.Example.FromString(bytes.fromhex("0a0f0a0d0a0178120812060a04cdcccc3d"))
    assert list(parsed.features.feature["x"].float_list.value) == [0.10000000149011612]


def test_int64_extremes_round_trip() -> None:
    values = [-(2**63), -1, 0, 1, 2**63 - 1]
    ex = _example({"i": _int64(values)})
    parsed = example_pb2.Example.FromString(ex.SerializeToString())
    assert list(parsed.features.feature["i"].int64_list.value) == values


def test_lists_are_written_packed() -> None:
    assert feature_pb2.Int64List(value=[1, 2]).SerializeToString() == b"\x0a\x02\x01\x02"
    assert feature_pb2.FloatList(value=[1.0]).SerializeToString() == b"\x0a\x04" + struct.pack(
        "<f", 1.0
    )
    assert feature_pb2.BytesList(value=[b"a", b""]).SerializeToString() == b"\x0a\x01a\x0a\x00"


def test_unpacked_int64_accepted() -> None:
    payload = b"".join(_tag(1, 0) + _varint(v) for v in [3, -7, 2**40])
    raw = _example_bytes([(b"i", _ld(3, payload))])
    ex = example_pb2.Example.FromString(raw)
    assert _as_dict(ex) == {"i": ("int64_list", [3, -7, 2**40])}


def test_unpacked_float_accepted() -> None:
    payload = b"".join(_tag(1, 5) + struct.pack("<f", v) for v in [1.5, -2.0, 0.25])
    raw = _example_bytes([(b"f", _ld(2, payload))])
    ex = example_pb2.Example.FromString(raw)
    assert _as_dict(ex) == {"f": ("float_list", [1.5, -2.0, 0.25])}


def test_mixed_and_repeated_packed_chunks_all_kept() -> None:
    # Standard protobuf semantics: every chunk, packed or not, is appended.
    # (TensorFlow's fast parser is stricter here; see the reference notes §D14b.)
    payload = (
        _ld(1, _varint(1) + _varint(2))  # packed chunk
        + _tag(1, 0)
        + _varint(3)  # unpacked element
        + _ld(1, _varint(4))  # second packed chunk
    )
    raw = _example_bytes([(b"i", _ld(3, payload))])
    assert _as_dict(example_pb2.Example.FromString(raw)) == {"i": ("int64_list", [1, 2, 3, 4])}


def test_empty_bytes_is_empty_example() -> None:
    ex = example_pb2.Example.FromString(b"")
    assert ex == example_pb2.Example()
    assert not ex.HasField("features")
    assert len(ex.features.feature) == 0
    seq = example_pb2.SequenceExample.FromString(b"")
    assert seq == example_pb2.SequenceExample()


def test_concatenated_examples_merge_last_value_wins() -> None:
    first = _example({"a": _int64([1, 2]), "b": _bytes([b"x"])})
    second = _example({"a": _float([9.0]), "c": _int64([5])})
    merged = example_pb2.Example.FromString(first.SerializeToString() + second.SerializeToString())
    assert _as_dict(merged) == {
        "a": ("float_list", [9.0]),  # replaced whole, not appended to
        "b": ("bytes_list", [b"x"]),
        "c": ("int64_list", [5]),
    }
    same_kind = example_pb2.Example.FromString(
        _example({"a": _int64([1, 2])}).SerializeToString()
        + _example({"a": _int64([7])}).SerializeToString()
    )
    assert _as_dict(same_kind) == {"a": ("int64_list", [7])}


def test_unknown_fields_skipped() -> None:
    int64_list = _ld(1, _varint(42)) + _tag(2, 1) + b"\x00" * 8  # + unknown fixed64
    feature = _ld(3, int64_list) + _tag(9, 0) + _varint(1)  # + unknown varint
    entry = _ld(1, b"k") + _ld(2, feature)
    features = _ld(1, entry) + _ld(15, b"junk")  # + unknown bytes
    raw = (
        _tag(99, 0)
        + _varint(5)
        + _ld(1, features)
        + _ld(2, b"\x08\x01")  # unknown sub-message
        + _tag(3, 5)
        + b"abcd"  # unknown fixed32
    )
    ex = example_pb2.Example.FromString(raw)
    assert _as_dict(ex) == {"k": ("int64_list", [42])}
    ex.DiscardUnknownFields()
    assert ex == _example({"k": _int64([42])})


def test_sequence_example_round_trip() -> None:
    seq = example_pb2.SequenceExample()
    seq.context.feature["id"].bytes_list.value.append(b"s1")
    frames = seq.feature_lists.feature_list["tokens"].feature
    for i in range(3):
        frames.add().int64_list.value.extend(range(i))
    raw = seq.SerializeToString()
    # context = field 1, feature_lists = field 2
    assert raw[:1] == b"\x0a"
    parsed = example_pb2.SequenceExample.FromString(raw)
    assert parsed == seq
    tokens = parsed.feature_lists.feature_list["tokens"].feature
    assert [list(f.int64_list.value) for f in tokens] == [[], [0], [0, 1]]


def test_example_and_sequence_example_share_features() -> None:
    # Field 1 is a Features in both, so an Example parses as a SequenceExample context.
    ex = _example({"a": _int64([1])})
    seq = example_pb2.SequenceExample.FromString(ex.SerializeToString())
    assert seq.context == ex.features


_MAP_ENTRY_PROBE = """
import sys
from tfrecord_lite import example_pb2
raw = bytes.fromhex(sys.argv[1])
ex = example_pb2.Example.FromString(raw)
print(sorted(ex.features.feature))
"""


def test_unknown_field_inside_map_entry_does_not_crash() -> None:
    """A map entry carrying an unknown field: runtime-dependent, but must not crash.

    The pure-Python backend keeps the entry; upb moves the whole entry to the
    unknown fields (the key disappears); TensorFlow's fast parser rejects the
    record. protobuf 4.21.x's upb segfaults on this input (fixed in 4.22.0),
    so the probe runs in a subprocess.
    """
    entry = _ld(1, b"k") + _ld(2, _ld(3, _ld(1, _varint(42))))
    raw = _ld(1, _ld(1, entry + _tag(7, 5) + b"\x00" * 4))
    result = subprocess.run(
        [sys.executable, "-c", _MAP_ENTRY_PROBE, raw.hex()],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    if result.returncode < 0 and _protobuf_version() < (4, 22):
        pytest.xfail(f"protobuf {protobuf.__version__} upb crashes on this input (fixed in 4.22)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in ("['k']", "[]")


def _protobuf_version() -> tuple[int, ...]:
    return tuple(int(p) for p in protobuf.__version__.split(".")[:2])


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION") == "python",
    reason="already running on the pure-Python protobuf backend",
)
def test_pure_python_backend() -> None:
    """Re-run this file on protobuf's pure-Python backend in a subprocess."""
    # cwd=REPO_ROOT with `python -m`: the subprocess imports the same tfrecord_lite.
    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python")
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "from google.protobuf.internal import api_implementation as a; print(a.Type())",
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert check.stdout.strip() == "python"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "not test_committed_modules_are_fresh",
            str(Path(__file__).resolve()),
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
