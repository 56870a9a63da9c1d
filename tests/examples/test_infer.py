"""infer_schema: feature dicts from a sample of records, their repr / JSON, and the stats."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._examples import _infer


def write(path: Path, records: list[bytes], compression: Any = None) -> Path:
    with tfr.TFRecordWriter(path, compression) as w:
        for r in records:
            w.write(r)
    return path


def examples(*rows: dict[str, Any]) -> list[bytes]:
    return [tfr.encode_example(r) for r in rows]


def evaluated(schema: tfr.Schema) -> Any:
    return eval(repr(schema), {"tfr": tfr})


# --------------------------------------------------------------------------- decisions


def test_fixed_len_when_present_everywhere_with_one_count() -> None:
    records = examples(
        *(
            {"label": i, "xy": [i, -i], "f": [0.5] * 3, "name": f"r{i}", "blob": b"\x00" * i}
            for i in range(4)
        )
    )
    schema = tfr.infer_schema(records)
    assert schema == {
        "blob": tfr.FixedLenFeature([], tfr.string),
        "f": tfr.FixedLenFeature([3], tfr.float32),
        "label": tfr.FixedLenFeature([], tfr.int64),
        "name": tfr.FixedLenFeature([], tfr.string),
        "xy": tfr.FixedLenFeature([2], tfr.int64),
    }
    assert list(schema) == sorted(schema)  # keys in a stable order
    assert schema.records == 4 and not schema.is_sequence
    assert schema.sequence_features == {}
    # the schema parses the records it came from
    parsed = tfr.parse_example(records, schema)
    assert parsed["xy"].shape == (4, 2) and parsed["f"].dtype == np.float32


def test_var_len_when_missing_in_some_records() -> None:
    records = examples({"a": 1, "b": 2}, {"a": 3}, {"a": 5, "b": 6})
    schema = tfr.infer_schema(records)
    assert schema == {
        "a": tfr.FixedLenFeature([], tfr.int64),
        "b": tfr.VarLenFeature(tfr.int64),
    }
    assert schema.stats["b"].present == 2 and schema.stats["a"].present == 3


def test_var_len_when_counts_vary() -> None:
    records = examples({"t": ["x"]}, {"t": ["y", "z"]}, {"t": []}, {"t": ["w"]})
    schema = tfr.infer_schema(records)
    assert schema == {"t": tfr.VarLenFeature(tfr.string)}
    st = schema.stats["t"]
    assert (st.min_count, st.max_count) == (0, 2)
    assert st.kinds[None] == 1 and st.kinds["bytes_list"] == 3  # [] is an empty Feature()
    assert tfr.parse_example(records, schema)["t"].to_list() == [[b"x"], [b"y", b"z"], [], [b"w"]]


def test_var_len_when_the_count_is_always_zero() -> None:
    # present in every record, the kind known, but no values: not a FixedLenFeature
    records = examples(*({"e": np.array([], np.float32), "n": i} for i in range(3)))
    schema = tfr.infer_schema(records)
    assert schema == {
        "e": tfr.VarLenFeature(tfr.float32),
        "n": tfr.FixedLenFeature([], tfr.int64),
    }
    st = schema.stats["e"]
    assert (st.min_count, st.max_count, st.present) == (0, 0, 3)
    assert st.kind == "float_list" and not st.kinds.get(None)


def test_empty_feature_in_some_records_is_var_len() -> None:
    # Feature() (no kind) in one record, values in the others
    records = examples({"v": [1]}, {"v": []}, {"v": [2]})
    assert tfr.infer_schema(records) == {"v": tfr.VarLenFeature(tfr.int64)}


def test_keys_with_only_empty_features_are_left_out() -> None:
    records = examples({"never": [], "x": 1}, {"never": [], "x": 2})
    schema = tfr.infer_schema(records)
    assert schema == {"x": tfr.FixedLenFeature([], tfr.int64)}
    assert "never" in schema.stats  # but the stats still saw it
    assert schema.stats["never"].kind is None and schema.stats["never"].kinds == {None: 2}


def test_mixed_kinds_raise_parse_error_naming_the_key() -> None:
    records = examples({"ok": 1, "mixed": 1}, {"ok": 2, "mixed": 1.5}, {"ok": 3, "mixed": 2})
    with pytest.raises(tfr.ParseError, match="'mixed'") as err:
        tfr.infer_schema(records)
    assert err.value.key == "mixed"
    text = str(err.value)
    assert "int64_list in 2 records" in text and "float_list in 1 records" in text


def test_mixed_kinds_in_feature_lists() -> None:
    records = [
        tfr.encode_sequence_example({}, {"steps": [[1], [2]]}),
        tfr.encode_sequence_example({}, {"steps": [[b"a"]]}),
    ]
    with pytest.raises(tfr.ParseError, match="'steps'") as err:
        tfr.infer_schema(records)
    assert err.value.key == "steps"


def test_not_an_example_raises_parse_error_with_the_index() -> None:
    records = [*examples({"x": 1}), b"\xff\xff\xff"]
    with pytest.raises(tfr.ParseError, match="neither an Example nor a SequenceExample") as err:
        tfr.infer_schema(records)
    assert err.value.index == 1


# --------------------------------------------------------------------------- SequenceExample


def test_sequence_example() -> None:
    records = [
        tfr.encode_sequence_example(
            {"id": i, "lang": "en"},
            {
                "tokens": [[j] for j in range(i + 1)],  # one value per step
                "pairs": [[j, j + 1] for j in range(i)],  # two per step, 0 steps for i=0
                "words": [["a"] * (j + 1) for j in range(2)],  # count varies per step
                **({"opt": [[0.5]] * i} if i % 2 else {}),  # missing in some records
            },
        )
        for i in range(4)
    ]
    schema = tfr.infer_schema(records)
    assert schema.is_sequence
    assert schema == {
        "id": tfr.FixedLenFeature([], tfr.int64),
        "lang": tfr.FixedLenFeature([], tfr.string),
    }
    assert schema.sequence_features == {
        "opt": tfr.FixedLenSequenceFeature([], tfr.float32, allow_missing=True),
        "pairs": tfr.FixedLenSequenceFeature([2], tfr.int64),
        "tokens": tfr.FixedLenSequenceFeature([], tfr.int64),
        "words": tfr.VarLenFeature(tfr.string),
    }
    st = schema.sequence_stats["tokens"]
    assert (st.min_steps, st.max_steps, st.present) == (1, 4, 4)
    assert (st.min_value, st.max_value) == (0, 3)
    assert schema.sequence_stats["opt"].present == 2
    # the inferred specs parse the records
    context, lists, lengths = tfr.parse_sequence_example(records, schema, schema.sequence_features)
    assert context["id"].tolist() == [0, 1, 2, 3]
    assert lists["tokens"].shape == (4, 4) and lengths["tokens"].tolist() == [1, 2, 3, 4]
    assert lists["pairs"].shape == (4, 3, 2)
    assert lengths["opt"].tolist() == [0, 1, 0, 3]
    assert lists["words"].to_list()[0] == [[b"a"], [b"a", b"a"]]  # VarLen: (B, steps, n)


def test_sequence_feature_list_with_empty_steps_is_var_len() -> None:
    records = [tfr.encode_sequence_example({}, {"s": [[1], []]})]
    assert tfr.infer_schema(records).sequence_features == {"s": tfr.VarLenFeature(tfr.int64)}


def test_sequence_repr_and_to_python_define_both_dicts() -> None:
    records = [
        tfr.encode_sequence_example({"y": 1}, {"x": [[1.0, 2.0]]}),
        tfr.encode_sequence_example({"y": 2}, {}),
    ]
    schema = tfr.infer_schema(records)
    for source in (repr(schema), schema.to_python()):
        ns: dict[str, Any] = {"tfr": tfr}
        exec(source, ns)
        assert ns["context_features"] == {"y": tfr.FixedLenFeature([], tfr.int64)}
        assert ns["sequence_features"] == {
            "x": tfr.FixedLenSequenceFeature([2], tfr.float32, allow_missing=True)
        }
    assert schema.to_python().startswith("import tfrecord_lite as tfr\n")
    assert schema.to_json()["kind"] == "SequenceExample"


# --------------------------------------------------------------------------- repr, to_python, to_json


def test_repr_evaluates_to_an_equal_dict() -> None:
    records = examples(
        *(
            {
                "image/encoded": b"png",
                'odd "key" \\ \u00e9\n': [1, 2],
                "tags": ["a"] * (i + 1),
                "score": 0.5,
            }
            for i in range(3)
        )
    )
    schema = tfr.infer_schema(records)
    text = repr(schema)
    assert text.startswith("{\n") and text.endswith("\n}")
    assert '    "image/encoded": tfr.FixedLenFeature([], tfr.string),' in text.splitlines()
    value = evaluated(schema)
    assert type(value) is dict
    assert value == dict(schema) and value == schema
    assert value['odd "key" \\ \u00e9\n'] == tfr.FixedLenFeature([2], tfr.int64)
    assert value["tags"] == tfr.VarLenFeature(tfr.string)


def test_repr_of_an_empty_schema(tfr_path: Path) -> None:
    for source in (iter([]), write(tfr_path, [])):
        schema = tfr.infer_schema(source)
        assert repr(schema) == "{}" and evaluated(schema) == {}
        assert schema.records == 0 and schema.to_python().endswith("features = {}\n")
    with pytest.raises(ValueError, match="no files"):
        tfr.infer_schema([])  # an empty list is an empty list of paths


def test_to_python_defines_features() -> None:
    schema = tfr.infer_schema(examples({"a": 1, "b": [1.5, 2.5]}, {"a": 2, "b": [0.0, 1.0]}))
    source = schema.to_python()
    assert source.startswith("import tfrecord_lite as tfr\n")
    ns: dict[str, Any] = {}
    exec(source, ns)  # imports tfr itself
    assert ns["features"] == schema
    assert ns["features"]["b"] == tfr.FixedLenFeature([2], tfr.float32)


def test_to_json() -> None:
    records = examples({"n": 3, "w": ["a", "bb"]}, {"n": -4, "w": []})
    schema = tfr.infer_schema(records)
    data = json.loads(json.dumps(schema.to_json()))  # JSON-serializable
    assert data["records_sampled"] == 2 and data["kind"] == "Example"
    assert data["features"] == {
        "n": {"type": "FixedLenFeature", "dtype": "int64", "shape": []},
        "w": {"type": "VarLenFeature", "dtype": "string"},
    }
    assert data["sequence_features"] == {} and data["sequence_stats"] == {}
    assert data["stats"]["n"] == {
        "key": "n",
        "kind": "int64_list",
        "kinds": {"int64_list": 2},
        "present": 2,
        "min_count": 1,
        "max_count": 1,
        "min_value": -4,
        "max_value": 3,
        "min_steps": None,
        "max_steps": None,
        "checked_min_count": None,
        "checked_max_count": None,
    }
    assert data["records_checked"] == 0
    assert data["stats"]["w"]["kinds"] == {"bytes_list": 1, "None": 1}
    assert data["stats"]["w"]["kind"] == "bytes_list"


# --------------------------------------------------------------------------- stats


def test_stats_values_and_counts() -> None:
    records = examples(
        {"i": [5, -2], "f": [0.25], "b": [b"x"]},
        {"i": [7], "f": [-1.5, 3.0, 2.0], "b": [b"y", b"z"]},
        {"i": [2**62], "f": [np.inf]},
    )
    schema = tfr.infer_schema(records)
    i, f, b = schema.stats["i"], schema.stats["f"], schema.stats["b"]
    assert (i.min_value, i.max_value) == (-2, 2**62)
    assert isinstance(i.max_value, int)  # exact, not a float
    assert (i.min_count, i.max_count, i.present, i.kind) == (1, 2, 3, "int64_list")
    assert (f.min_value, f.max_value) == (-1.5, float("inf"))
    assert (f.min_count, f.max_count) == (1, 3)
    assert (b.min_value, b.max_value) == (None, None)  # no numeric range for bytes
    assert (b.present, b.min_count, b.max_count) == (2, 1, 2)
    assert not i.fixed and not b.fixed
    assert i.min_steps is None and i.max_steps is None


def test_fixed_property() -> None:
    st = tfr.FeatureStats("k")
    assert not st.fixed and st.kind is None
    st._count(2)
    st._count(2)
    assert st.fixed
    st._count(3)
    assert not st.fixed


# --------------------------------------------------------------------------- sources and sampling


def test_sample_limits_the_records_read(tfr_path: Path) -> None:
    records = examples(*({"x": i} for i in range(10)), {"x": 10, "late": 1})
    write(tfr_path, records)
    first = tfr.infer_schema(tfr_path, sample=10)
    assert first.records == 10 and "late" not in first
    assert first.stats["x"].max_value == 9
    every = tfr.infer_schema(tfr_path, sample=None)
    assert every.records == 11
    assert every["late"] == tfr.VarLenFeature(tfr.int64)  # present in 1 of 11
    assert tfr.infer_schema(tfr_path, sample=1000).records == 11
    assert tfr.infer_schema(tfr_path, 3).records == 3


def test_default_sample_is_1000() -> None:
    records = examples(*({"x": 0} for _ in range(1001)))
    assert tfr.infer_schema(records).records == _infer.DEFAULT_SAMPLE == 1000


@pytest.mark.parametrize("sample", [0, -1])
def test_sample_must_be_positive(sample: int) -> None:
    with pytest.raises(ValueError, match="sample"):
        tfr.infer_schema(examples({"x": 1}), sample)


def test_sampling_stops_before_damage_further_on(tfr_path: Path) -> None:
    write(tfr_path, examples(*({"x": i} for i in range(3))))
    with tfr_path.open("ab") as f:
        f.write(b"\x05 not a record header at all")
    assert tfr.infer_schema(tfr_path, sample=3, check=False).records == 3
    for sample in (3, None):  # the check reads on, and meets the damage
        with pytest.raises(tfr.DataLossError):
            tfr.infer_schema(tfr_path, sample=sample)


def test_generator_is_read_lazily() -> None:
    pulled = 0

    def gen() -> Iterator[bytes]:
        nonlocal pulled
        for i in range(10_000):
            pulled += 1
            yield tfr.encode_example({"x": i})

    it = gen()
    schema = tfr.infer_schema(it, sample=5, check=False)
    assert schema.records == 5
    assert pulled == 5  # not one record more
    # the generator is neither exhausted nor closed: the caller can go on reading it
    nxt = next(it)
    assert tfr.parse_single_example(nxt, schema)["x"] == 5
    assert pulled == 6


@pytest.mark.parametrize("kind", ["str", "path", "list", "glob", "dir"])
def test_path_sources(tmp_path: Path, kind: str) -> None:
    write(tmp_path / "a.tfrecord", examples({"x": 1}, {"x": 2}))
    write(tmp_path / "b.tfrecord", examples({"x": 3, "y": 1.0}))
    source: Any = {
        "str": str(tmp_path / "a.tfrecord"),
        "path": tmp_path / "a.tfrecord",
        "list": [tmp_path / "a.tfrecord", str(tmp_path / "b.tfrecord")],
        "glob": str(tmp_path / "*.tfrecord"),
        "dir": tmp_path,
    }[kind]
    schema = tfr.infer_schema(source)
    if kind in ("str", "path"):
        assert schema == {"x": tfr.FixedLenFeature([], tfr.int64)} and schema.records == 2
    else:
        assert schema.records == 3
        assert schema == {
            "x": tfr.FixedLenFeature([], tfr.int64),
            "y": tfr.VarLenFeature(tfr.float32),
        }


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_files_are_detected(tfr_path: Path, compression: str) -> None:
    write(tfr_path, examples({"x": b"a"}), compression)
    assert tfr.infer_schema(tfr_path) == {"x": tfr.FixedLenFeature([], tfr.string)}
    assert tfr.infer_schema(tfr_path, compression=compression).records == 1


def test_in_memory_record_forms() -> None:
    recs = examples({"x": 1}, {"x": 2})
    for source in (recs, tuple(recs), [bytearray(r) for r in recs], (memoryview(r) for r in recs)):
        schema = tfr.infer_schema(source)
        assert schema == {"x": tfr.FixedLenFeature([], tfr.int64)} and schema.records == 2


def test_open_file_object_is_left_open(tfr_path: Path) -> None:
    write(tfr_path, examples({"x": 1}, {"x": 2}, {"x": 3}))
    with tfr_path.open("rb") as f:
        assert tfr.infer_schema(f, sample=1).records == 1
        assert not f.closed


def _fds_on(path: Path) -> list[str]:
    """Descriptors of this process open on ``path`` (Linux /proc)."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                out.append(fd)
        except OSError:
            pass
    return out


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux /proc")
@pytest.mark.parametrize("sample", [1, 2, None])
def test_file_is_closed_when_sampling_stops(
    tfr_path: Path, monkeypatch: pytest.MonkeyPatch, sample: Any
) -> None:
    write(tfr_path, examples(*({"x": i} for i in range(50))))
    tfr_path = tfr_path.resolve()
    # Keep a reference to every record iterator infer_schema makes, so the file can
    # not be closed by the iterator being garbage-collected: only an explicit close()
    # (when the sample ends early) closes it.
    kept: list[Any] = []
    real = _infer.tf_record_iterator

    def keeping(*args: Any, **kwargs: Any) -> Any:
        it = real(*args, **kwargs)
        kept.append(it)
        return it

    monkeypatch.setattr(_infer, "tf_record_iterator", keeping)
    before = _fds_on(tfr_path)
    schema = tfr.infer_schema(tfr_path, sample)
    assert schema.records == (sample or 50)
    assert kept, "infer_schema no longer reads through tf_record_iterator: update this test"
    assert _fds_on(tfr_path) == before == []
    assert all(getattr(it, "gi_frame", None) is None for it in kept)  # generators finished
