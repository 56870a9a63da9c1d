"""tfrecord_lite.tfds on the committed TFDS directories of tests/data/tfds (no TensorFlow).

The directories and ``reference/*.json`` (what ``tfds.as_numpy(builder.as_dataset(split))``
yielded) were written by the real tensorflow-datasets with
``tests/data/tfds/make_tfds_fixtures.py``; ``tests/interop/test_tfds_interop.py``
regenerates them and checks again.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr
import tfrecord_lite.tfds as tfds

sys.path.insert(0, str(Path(__file__).parent))
from tfds_reference import JPEG_TOLERANCE, assert_same, load_reference

ROOT = Path(__file__).resolve().parents[1] / "data" / "tfds"
DIRS = {
    "tfl_features": ROOT / "tfl_features" / "1.0.0",
    "tfl_tabular": ROOT / "tfl_tabular" / "1.2.0",
    "tfl_digits": ROOT / "tfl_digits" / "small" / "3.0.1",
    "tfl_tensors": ROOT / "tfl_tensors" / "1.0.0",
}
SPLITS = [
    ("tfl_features", "train"),
    ("tfl_features", "test"),
    ("tfl_tabular", "train"),
    ("tfl_tabular", "test"),
    ("tfl_tabular", "validation"),
    ("tfl_digits", "train"),
    ("tfl_digits", "test"),
    ("tfl_tensors", "train"),
]
#: Largest JPEG pixel difference measured against TensorFlow's decode on the fixtures.
JPEG_MAX_DIFF_MEASURED = 10
IN_ORDER = tfds.ReadConfig(interleave_cycle_length=1)

pytest.importorskip("PIL")


@pytest.fixture(scope="module")
def features() -> tfds.Builder:
    return tfds.builder_from_directory(DIRS["tfl_features"])


@pytest.fixture(scope="module")
def tabular() -> tfds.Builder:
    return tfds.builder_from_directory(DIRS["tfl_tabular"])


def ids(ds: Any) -> list[int]:
    return [int(ex["id"]) for ex in ds]


# --------------------------------------------------------------------------- decoding


@pytest.mark.parametrize(("name", "split"), SPLITS)
def test_as_dataset_equals_tfds_as_numpy(name: str, split: str) -> None:
    builder = tfds.builder_from_directory(DIRS[name])
    ref = load_reference(ROOT, name, split)
    ours = list(builder.as_dataset(split))
    assert len(ours) == len(ref) == builder.info.splits[split].num_examples
    diffs: list[int] = []
    for a, b in zip(ours, ref):
        assert_same(a, b, "", diffs)
    if name == "tfl_features":
        assert diffs and max(diffs) <= JPEG_TOLERANCE
        assert max(diffs) <= JPEG_MAX_DIFF_MEASURED


@pytest.mark.parametrize(("name", "split"), SPLITS)
def test_data_source_equals_tfds_as_numpy(name: str, split: str) -> None:
    """Single-shard splits and the in-order read give TFDS's order: [i] matches it."""
    builder = tfds.builder_from_directory(DIRS[name])
    src = builder.as_data_source(split)
    in_order = list(builder.as_dataset(split, read_config=IN_ORDER))
    assert len(src) == len(in_order)
    for i in [0, len(src) - 1, len(src) // 2]:
        assert_same(src[i], in_order[i])
    if builder.info.splits[split].num_shards == 1:
        ref = load_reference(ROOT, name, split)
        for i in range(len(src)):
            assert_same(src[i], ref[i], "", [])


def test_every_connector_is_in_the_fixture(features: tfds.Builder) -> None:
    f = features.info.features
    assert isinstance(f, tfds.FeaturesDict)
    kinds = {type(v).__name__ for v in f.values()}
    assert kinds >= {
        "Image",
        "ClassLabel",
        "Text",
        "Scalar",
        "Tensor",
        "BBoxFeature",
        "Sequence",
        "FeaturesDict",
        "Video",
        "Audio",
    }
    assert f["image_jpeg"].encoding_format == "jpeg"
    assert f["image_u16"].dtype == np.uint16 and f["image_f32"].shape == (4, 3, 1)
    assert f["t_zlib"].encoding == "zlib" and f["t_zlib"].shape == (None, None)
    assert f["objects"].shape == {"bbox": (None, 4), "kind": (None,), "area": (None,)}
    assert f["video"].shape == (None, 8, 10, 3)
    assert "Image(shape=(None, None, 3), dtype=uint8)" in repr(f)


def test_decoded_types(features: tfds.Builder) -> None:
    ex = next(iter(features.as_dataset("train")))
    assert ex["image"].dtype == np.uint8 and ex["image"].shape[2] == 3
    assert type(ex["text"]) is bytes
    assert isinstance(ex["label"], np.int64)
    assert isinstance(ex["scalar_b"], np.bool_)
    assert ex["image_f32"].dtype == np.float32
    assert ex["t_uint64"].dtype == np.uint64
    assert isinstance(ex["ragged"], tfr.RaggedValue)
    assert ex["video_jpeg"].shape == (3, 16, 16, 3)
    assert set(ex["nested"]) == {"inner", "tag"}


def test_class_labels(features: tfds.Builder, tabular: tfds.Builder) -> None:
    f = features.info.features
    label = f["label"]
    assert label.names == ["cat", "dog", "bird"] and label.num_classes == 3
    assert label.int2str(2) == "bird" and label.str2int("dog") == 1
    with pytest.raises(ValueError, match="Invalid"):
        label.int2str(3)
    with pytest.raises(ValueError, match="Invalid"):
        label.str2int("cow")
    assert f["objects"]["kind"].names == ["small", "large"]  # from objects-kind.labels.txt
    assert f["nested"]["tag"].names == ["a", "b"]  # from nested-tag.labels.txt
    n = f["label_n"]
    assert n.names == ["0", "1", "2", "3", "4"] and n.int2str(4) == "4" and n.str2int("3") == 3
    assert tabular.info.features["label"].names == ["no", "yes"]


def test_info(tabular: tfds.Builder) -> None:
    info = tabular.info
    assert info.name == "tfl_tabular" and info.version == "1.2.0"
    assert info.description == "Tabular rows in several shards."
    assert info.supervised_keys == ("x", "label")
    train = info.splits["train"]
    assert train.num_examples == 103 and train.shard_lengths == [34, 35, 34]
    assert train.num_shards == 3
    assert train.filenames[0] == "tfl_tabular-train.tfrecord-00000-of-00003"
    assert all(os.path.isfile(p) for p in train.filepaths)
    assert set(info.splits) == {"train", "test", "validation"}
    assert "num_examples=103" in repr(train) and "tfl_tabular" in repr(info)
    digits = tfds.builder_from_directory(DIRS["tfl_digits"]).info
    assert digits.config_name == "small" and digits.version == "3.0.1"


def test_as_supervised(tabular: tfds.Builder) -> None:
    pairs = list(tabular.as_dataset("test", as_supervised=True))
    full = list(tabular.as_dataset("test"))
    assert len(pairs) == 37
    for (x, y), ex in zip(pairs, full):
        assert np.array_equal(x, ex["x"]) and y == ex["label"]


def test_skip_decoding(features: tfds.Builder) -> None:
    raw = next(iter(features.as_dataset("train", decoders={"image": tfds.SkipDecoding()})))
    decoded = next(iter(features.as_dataset("train")))
    assert type(raw["image"]) is bytes and raw["image"].startswith(b"\x89PNG")
    assert np.array_equal(tfr.decode_image(raw["image"]), decoded["image"])
    # TFDS decodes with tf.image.decode_image, as tfr.decode_image: grayscale (H, W, 1)
    digits = tfds.builder_from_directory(DIRS["tfl_digits"])
    gray = next(iter(digits.as_dataset("train", decoders={"image": tfds.SkipDecoding()})))
    want = next(iter(digits.as_dataset("train")))["image"]
    assert want.shape == (28, 28, 1)
    assert np.array_equal(tfr.decode_image(gray["image"]), want)
    with pytest.raises(ValueError, match="no feature"):
        features.as_dataset("train", decoders={"nope": tfds.SkipDecoding()})


def test_batch_size_and_pipeline_methods(tabular: tfds.Builder) -> None:
    batches = list(tabular.as_dataset("train", batch_size=50))
    assert [len(b["id"]) for b in batches] == [50, 50, 3]
    assert isinstance(tabular.as_dataset("train"), tfr.TFRecordDataset)
    shuffled = ids(tabular.as_dataset("train").shuffle(200, seed=1))
    assert sorted(shuffled) == sorted(ids(tabular.as_dataset("train")))


def test_shuffle_files(tabular: tfds.Builder) -> None:
    plain = ids(tabular.as_dataset("train"))
    rc = tfds.ReadConfig(shuffle_seed=3)
    a = ids(tabular.as_dataset("train", shuffle_files=True, read_config=rc))
    assert sorted(a) == sorted(plain)


# --------------------------------------------------------------------------- splits


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("train", (0, 103)),
        ("train[:10%]", (0, 10)),  # round(10.3)
        ("train[10%:20%]", (10, 21)),  # round(20.6)
        ("train[:33%]", (0, 34)),
        ("train[10:20]", (10, 20)),
        ("train[-10:]", (93, 103)),
        ("train[:-100]", (0, 3)),
        ("train[50:]", (50, 103)),
        ("train[1shard:]", (34, 103)),
        ("train[:-1shard]", (0, 69)),
        ("train[2shard]", (69, 103)),
        ("train[20:10]", (20, 20)),
    ],
)
def test_split_slices(tabular: tfds.Builder, spec: str, expected: tuple[int, int]) -> None:
    in_order = ids(tabular.as_dataset("train", read_config=IN_ORDER))
    start, stop = expected
    if stop == start:
        with pytest.raises(ValueError, match="no examples"):
            tabular.as_dataset(spec)
        return
    assert ids(tabular.as_dataset(spec, read_config=IN_ORDER)) == in_order[start:stop]
    src = tabular.as_data_source(spec)
    assert ids(src) == in_order[start:stop]
    # the interleaved order holds the same examples
    assert sorted(ids(tabular.as_dataset(spec))) == sorted(in_order[start:stop])


def test_percent_rounding_is_halves_to_even(tabular: tfds.Builder) -> None:
    # validation has 10 examples: 25% -> 2.5 -> 2, 35% -> 3.5 -> 4, 45% -> 4.5 -> 4
    assert len(tabular.as_data_source("validation[:25%]")) == 2
    assert len(tabular.as_data_source("validation[:35%]")) == 4
    assert len(tabular.as_data_source("validation[:45%]")) == 4
    assert len(tabular.as_data_source("validation[:12.5%]")) == 1


def test_split_addition_and_all(tabular: tfds.Builder) -> None:
    both = ids(tabular.as_dataset("train+test", read_config=IN_ORDER))
    assert both == ids(tabular.as_dataset("train", read_config=IN_ORDER)) + ids(
        tabular.as_dataset("test", read_config=IN_ORDER)
    )
    assert len(tabular.as_data_source("train[:5] + test[-5:]")) == 10
    assert len(tabular.as_data_source("all")) == 150


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("nope", "Unknown split"),
        ("train[", "Unrecognized"),
        ("train[::]", "Unrecognized"),
        ("train[5]", "slice syntax"),
        ("train[:200]", "incompatible"),
        ("train[x:y]", "Unrecognized"),
        ("train+", "Unrecognized"),
    ],
)
def test_bad_split_strings(tabular: tfds.Builder, spec: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        tabular.as_dataset(spec)


# --------------------------------------------------------------------------- random access


def test_data_source_access(tabular: tfds.Builder, tmp_path: Path) -> None:
    src = tabular.as_data_source("train", index_dir=str(tmp_path))
    in_order = list(tabular.as_dataset("train", read_config=IN_ORDER))
    assert len(src) == 103
    assert int(src[-1]["id"]) == int(in_order[-1]["id"])
    assert [int(e["id"]) for e in src[30:40]] == [int(e["id"]) for e in in_order[30:40]]
    picks = [102, 0, 34, 33, 69, 5, 5]
    assert [int(e["id"]) for e in src[picks]] == [int(in_order[i]["id"]) for i in picks]
    assert [int(e["id"]) for e in src.__getitems__(picks)] == [
        int(in_order[i]["id"]) for i in picks
    ]
    with pytest.raises(IndexError):
        src[103]
    with pytest.raises(TypeError):
        src["0"]
    assert len(list(tmp_path.rglob("*.index"))) == 3  # one per shard, in index_dir
    clone = pickle.loads(pickle.dumps(src))
    assert int(clone[50]["id"]) == int(src[50]["id"])
    assert "num_records=103" in repr(src)
    src.close()


def test_data_source_on_a_read_only_directory(tmp_path: Path, monkeypatch: Any) -> None:
    data = tmp_path / "ds"
    shutil.copytree(DIRS["tfl_tabular"], data)
    cache = tmp_path / "cache"
    monkeypatch.setenv("TFRECORD_LITE_CACHE_DIR", str(cache))
    for p in [data, *data.iterdir()]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        src = tfds.builder_from_directory(data).as_data_source("test")
        assert len(src) == 37 and int(src[36]["id"]) >= 1000
        assert len(list(cache.rglob("*.index"))) == 1  # shards are indexed when first read
        assert len(list(src)) == 37
        assert not list(data.glob("*.index"))
        assert len(list(cache.rglob("*.index"))) == 3
    finally:
        for p in [data, *data.iterdir()]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_data_source_with_unwritable_cache_keeps_the_index_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    src = tfds.builder_from_directory(DIRS["tfl_tabular"]).as_data_source(
        "validation", index_dir=str(blocker / "sub")
    )
    assert len(src) == 10 and len(list(src)) == 10


def test_data_source_never_reads_an_index_others_may_have_written(
    tabular: tfds.Builder, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    first = tabular.as_data_source("train", index_dir=str(shared))
    in_order = [int(e["id"]) for e in first]  # the shards are indexed when first read
    first.close()
    assert len(list(shared.rglob("*.index"))) == 3
    # Another user's planted indexes: every record there, in reverse order, in a folder
    # anyone may write to.
    for index in shared.rglob("*.index"):
        index.write_text("".join(reversed(index.read_text().splitlines(keepends=True))))
    for folder in [shared, *[p for p in shared.rglob("*") if p.is_dir()]]:
        folder.chmod(0o777)
    with pytest.warns(RuntimeWarning, match="writable by other users"):
        src = tabular.as_data_source("train", index_dir=str(shared))
        got = [int(e["id"]) for e in src]
    assert got == in_order
    src.close()


def test_data_source_checks_shard_lengths(tmp_path: Path) -> None:
    data = tmp_path / "ds"
    shutil.copytree(DIRS["tfl_tabular"], data)
    info = json.loads((data / "dataset_info.json").read_text())
    info["splits"][0]["shardLengths"] = ["30", "35", "34"]
    (data / "dataset_info.json").write_text(json.dumps(info))
    src = tfds.builder_from_directory(data).as_data_source("train", index_dir=str(tmp_path / "i"))
    with pytest.raises(tfr.StaleIndexError, match=r"dataset_info\.json says 30"):
        src[0]


# --------------------------------------------------------------------------- load / builder


def test_load_by_name() -> None:
    ds = tfds.load("tfl_tabular", split="test", data_dir=str(ROOT))
    assert len(list(ds)) == 37
    digits, info = tfds.load(
        "tfl_digits", split="train[:4]", data_dir=str(ROOT), as_supervised=True, with_info=True
    )
    pairs = list(digits)
    assert len(pairs) == 4 and pairs[0][0].shape == (28, 28, 1)
    assert info.config_name == "small"
    assert tfds.builder("tfl_digits/small:3.0.1", data_dir=str(ROOT)).version == "3.0.1"
    assert tfds.builder("tfl_tabular:1.*.*", data_dir=str(ROOT)).version == "1.2.0"
    everything = tfds.load("tfl_tabular", data_dir=str(ROOT))
    assert set(everything) == {"train", "test", "validation"}
    assert len(tfds.data_source("tfl_tabular", split="validation", data_dir=str(ROOT))) == 10


def test_load_uses_tfds_data_dir(monkeypatch: Any) -> None:
    monkeypatch.setenv("TFDS_DATA_DIR", str(ROOT))
    assert tfds.builder("tfl_tabular").info.name == "tfl_tabular"


def test_missing_dataset_says_where_and_how(tmp_path: Path) -> None:
    with pytest.raises(tfds.DatasetNotFoundError) as err:
        tfds.load("mnist", split="train", data_dir=str(tmp_path))
    msg = str(err.value)
    assert str(tmp_path / "mnist") in msg and "tfds build mnist" in msg and "never downloads" in msg
    assert isinstance(err.value, FileNotFoundError)
    with pytest.raises(tfds.DatasetNotFoundError, match=r"--version 9\.9\.9"):
        tfds.builder("tfl_tabular:9.9.9", data_dir=str(ROOT))
    with pytest.raises(tfds.DatasetNotFoundError, match=r"dataset_info\.json"):
        tfds.builder_from_directory(tmp_path)
    with pytest.raises(ValueError, match="bad dataset name"):
        tfds.builder("../etc", data_dir=str(tmp_path))
    with pytest.raises(ValueError, match="bad config name"):
        tfds.builder("tfl_digits/..", data_dir=str(ROOT))


def test_missing_shard(tmp_path: Path) -> None:
    data = tmp_path / "ds"
    shutil.copytree(DIRS["tfl_tabular"], data)
    (data / "tfl_tabular-test.tfrecord-00001-of-00003").unlink()
    b = tfds.builder_from_directory(data)
    with pytest.raises(tfds.DatasetNotFoundError, match="00001-of-00003"):
        b.as_dataset("test")
    assert len(list(b.as_dataset("train"))) == 103


# --------------------------------------------------------------------------- hostile metadata


def _copy_with(tmp_path: Path, edit_info: Any = None, edit_features: Any = None) -> Path:
    data = tmp_path / "ds"
    shutil.copytree(DIRS["tfl_tabular"], data)
    if edit_info is not None:
        info = json.loads((data / "dataset_info.json").read_text())
        edit_info(info)
        (data / "dataset_info.json").write_text(json.dumps(info))
    if edit_features is not None:
        feats = json.loads((data / "features.json").read_text())
        edit_features(feats)
        (data / "features.json").write_text(json.dumps(feats))
    return data


@pytest.mark.parametrize(
    "template",
    [
        "../{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}",
        "/etc/{SHARD_X_OF_Y}",
        "{DATASET.__class__}",
        "{SPLIT}/../../x{SHARD_INDEX}",
        "{OTHER}",
        "..",
    ],
)
def test_file_templates_cannot_leave_the_directory(tmp_path: Path, template: str) -> None:
    def edit(info: dict[str, Any]) -> None:
        info["splits"][0]["filepathTemplate"] = template

    with pytest.raises(ValueError, match="template"):
        tfds.builder_from_directory(_copy_with(tmp_path, edit))


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda i: i.update(name="../x"), "dataset name"),
        (lambda i: i["splits"][0].update(name="a/b"), "split name"),
        (lambda i: i["splits"][0].update(shardLengths=["-1"]), "out of range"),
        (lambda i: i["splits"][0].update(shardLengths="34"), "shardLengths"),
        (lambda i: i.update(splits={}), "not a list"),
        (lambda i: i.update(fileFormat="array_record"), "array_record"),
    ],
)
def test_bad_dataset_info(tmp_path: Path, edit: Any, match: str) -> None:
    with pytest.raises((ValueError, NotImplementedError), match=match):
        tfds.builder_from_directory(_copy_with(tmp_path, edit))


def test_bad_json_and_oversized_metadata(tmp_path: Path, monkeypatch: Any) -> None:
    data = _copy_with(tmp_path)
    (data / "features.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        tfds.builder_from_directory(data)
    from tfrecord_lite.tfds import _dataset_info

    monkeypatch.setattr(_dataset_info, "MAX_METADATA_BYTES", 100)
    with pytest.raises(ValueError, match="more than the 100"):
        tfds.builder_from_directory(data)


def _feature(feats: dict[str, Any], name: str, value: Any) -> None:
    feats["featuresDict"]["features"][name] = value


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (
            {
                "pythonClassName": "tensorflow_datasets.core.features.translation_feature.Translation"
            },
            "Translation",
        ),
        ({"pythonClassName": "my.module.Custom", "custom": {}}, "my.module.Custom"),
        (
            {
                "pythonClassName": "tensorflow_datasets.core.features.audio_feature.Audio",
                "audio": {"dtype": "int64", "shape": {"dimensions": ["-1"]}, "lazyDecode": True},
            },
            "lazy_decode",
        ),
        (
            {
                "pythonClassName": "tensorflow_datasets.core.features.tensor_feature.Tensor",
                "tensor": {"dtype": "complex64", "shape": {}},
            },
            "complex64",
        ),
    ],
)
def test_unsupported_connectors_are_named(tmp_path: Path, value: Any, match: str) -> None:
    data = _copy_with(tmp_path, edit_features=lambda f: _feature(f, "extra", value))
    with pytest.raises(tfds.UnsupportedFeatureError, match=match):
        tfds.builder_from_directory(data)


def test_feature_names_and_depth_are_checked(tmp_path: Path) -> None:
    text = {"pythonClassName": "tensorflow_datasets.core.features.text_feature.Text", "text": {}}
    data = _copy_with(tmp_path, edit_features=lambda f: _feature(f, "../evil", text))
    with pytest.raises(ValueError, match="feature name"):
        tfds.builder_from_directory(data)
    deep: Any = text
    for _ in range(40):
        deep = {"featuresDict": {"features": {"a": deep}}}
    shutil.rmtree(data)
    data = _copy_with(tmp_path, edit_features=lambda f: _feature(f, "deep", deep))
    with pytest.raises(ValueError, match="nested deeper"):
        tfds.builder_from_directory(data)


def test_zlib_tensor_is_bounded() -> None:
    import zlib

    from tfrecord_lite.tfds import Tensor

    t = Tensor(shape=(4,), dtype=np.int16, encoding="zlib")
    assert t.decode(zlib.compress(np.arange(4, dtype="<i2").tobytes())).tolist() == [0, 1, 2, 3]
    with pytest.raises(tfr.ParseError, match="zlib"):
        t.decode(zlib.compress(b"\0" * 10_000_000))  # a bomb: stops after 9 bytes
    with pytest.raises(tfr.ParseError, match="zlib"):
        t.decode(b"garbage")
    dyn = Tensor(shape=(None, None), dtype=np.int16, encoding="bytes")
    with pytest.raises(tfr.ParseError, match="claims"):
        dyn.decode({"shape": np.array([1 << 30, 1 << 30]), "value": b""})


# --------------------------------------------------------------------------- command line


def test_cli_info_on_a_tfds_directory(capsys: Any) -> None:
    from tfrecord_lite._cli import main

    assert main(["info", str(DIRS["tfl_tabular"])]) == 0
    out = capsys.readouterr().out
    assert "TFDS dataset: tfl_tabular 1.2.0" in out
    assert "train       103       3" in out and "validation  10" in out
    assert "label    ClassLabel(num_classes=2)  ()     int64    no, yes" in out
    assert main(["info", "--json", str(DIRS["tfl_features"])]) == 0
    report = json.loads(capsys.readouterr().out)["datasets"][0]
    assert [s["examples"] for s in report["splits"]] == [12, 4]
    feats = {f["feature"]: f for f in report["features"]}
    assert feats["objects/kind"]["connector"] == "Sequence(ClassLabel(num_classes=2))"
    assert feats["objects/kind"]["classes"] == ["small", "large"]
    assert feats["video"]["shape"] == "(None, 8, 10, 3)" and feats["t_str"]["shape"] == "(None,)"


def test_cli_info_reports_missing_shards(tmp_path: Path, capsys: Any) -> None:
    from tfrecord_lite._cli import main

    data = tmp_path / "ds"
    shutil.copytree(DIRS["tfl_tabular"], data)
    (data / "tfl_tabular-test.tfrecord-00002-of-00003").unlink()
    assert main(["info", str(data)]) == 1
    assert "00002-of-00003: missing shard file" in capsys.readouterr().out
    assert main(["info", str(data), str(DIRS["tfl_tabular"] / "features.json")]) == 2


def test_cli_preview_on_a_tfds_directory(tmp_path: Path, capsys: Any) -> None:
    from PIL import Image

    from tfrecord_lite._cli import main

    out = tmp_path / "grid.png"
    assert (
        main(["preview", str(DIRS["tfl_digits"]), "-n", "4", "--cell", "32", "-o", str(out)]) == 0
    )
    assert "4 images of split 'train'" in capsys.readouterr().out
    with Image.open(out) as img:
        assert img.size == (2 * 32 + 3 * 2, 2 * (32 + 14) + 3 * 2)
    video = tmp_path / "video.png"
    args = ["preview", str(DIRS["tfl_features"]), "--image-key", "video", "--split", "test"]
    assert main([*args, "--label-key", "label", "-o", str(video)]) == 0
    assert "4 images of split 'test'" in capsys.readouterr().out
    assert main(["preview", str(DIRS["tfl_tabular"]), "-o", str(tmp_path / "x.png")]) == 2
    assert "no Image feature" in capsys.readouterr().err


# --------------------------------------------------------------------------- decoding paths


def test_three_decoding_paths_agree(features: tfds.Builder) -> None:
    """Streaming (batched parse_example), random access (protobuf) and TFDS's own specs."""
    decode = features._decode_fn(None, False)
    records = list(tfr.tf_record_iterator(features.info.splits["train"].filepaths[0]))
    batched = decode.many(records)
    for record, ex in zip(records, batched):
        assert_same(decode(record), ex)
        assert_same(decode.reference(record), ex)


@pytest.mark.parametrize(
    "record",
    [
        tfr.encode_example({"id": 1, "x": [1.0, 2.0, 3.0], "city": b"a"}),  # label missing
        tfr.encode_example({"id": 1, "x": [1.0, 2.0], "city": b"a", "label": 0}),  # x too short
        tfr.encode_example({"id": 1.5, "x": [1.0, 2.0, 3.0], "city": b"a", "label": 0}),
        tfr.encode_example({"id": [1, 2], "x": [1.0, 2.0, 3.0], "city": b"a", "label": 0}),
        b"\xff\xff not a protobuf",
    ],
)
def test_bad_records_raise_parse_error_on_every_path(tabular: tfds.Builder, record: bytes) -> None:
    decode = tabular._decode_fn(None, False)
    for path in (decode, decode.reference, lambda r: decode.many([r])):
        with pytest.raises(tfr.ParseError):
            path(record)


def test_data_source_is_thread_safe(tabular: tfds.Builder, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    src = tabular.as_data_source("train", index_dir=str(tmp_path))
    order = list(np.random.default_rng(0).permutation(len(src)))
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda i: int(src[int(i)]["id"]), order * 3))
    expected = [int(src[int(i)]["id"]) for i in order] * 3
    assert got == expected
    src.close()
    assert int(src[0]["id"]) == expected[order.index(0)]  # reopens after close()


# --------------------------------------------------------------------------- encoded tensors


def test_encoded_tensors_of_every_shape_form() -> None:
    """bytes / zlib with every dimension known, one unknown (no shape stored) and several."""
    b = tfds.builder_from_directory(DIRS["tfl_tensors"])
    f = b.info.features
    assert isinstance(f, tfds.FeaturesDict)
    for enc in ("bytes", "zlib"):
        assert f[f"{enc}_one"].shape == (None,) and f[f"{enc}_one"].encoding == enc
    examples = list(b.as_dataset("train", read_config=IN_ORDER))
    one = [ex["zlib_one"] for ex in examples]
    assert sorted(len(x) for x in one) == [0, 0, 1, 1, 2, 3]  # in the order of key hashes
    assert all(x.dtype == np.float32 for x in one)
    for ex in examples:
        assert ex["bytes_one_inner"].shape[1:] == (3,) and ex["bytes_one_mid"].shape[0] == 2
        assert ex["zlib_several_known"].shape[1] == 2


def _copy_dir(tmp_path: Path, name: str, edit_features: Any = None, edit_info: Any = None) -> Path:
    data = tmp_path / name
    shutil.copytree(DIRS[name], data)
    for file, edit in (("features.json", edit_features), ("dataset_info.json", edit_info)):
        if edit is not None:
            content = json.loads((data / file).read_text())
            edit(content)
            (data / file).write_text(json.dumps(content))
    return data


def _tensor(feats: dict[str, Any], key: str) -> dict[str, Any]:
    tensor: dict[str, Any] = feats["featuresDict"]["features"][key]["tensor"]
    return tensor


def test_a_decoding_error_names_the_feature_file_and_record(tmp_path: Path) -> None:
    def wrong_shape(feats: dict[str, Any]) -> None:
        _tensor(feats, "bytes_static")["shape"]["dimensions"] = ["4", "3"]

    b = tfds.builder_from_directory(_copy_dir(tmp_path, "tfl_tensors", wrong_shape))
    shard = b.info.splits["train"].filepaths[0]
    with pytest.raises(tfr.ParseError) as err:
        list(b.as_dataset("train", read_config=IN_ORDER))
    assert err.value.key == "bytes_static" and err.value.path == shard
    assert err.value.index == 0 and err.value.offset == 0
    assert "feature 'bytes_static'" in str(err.value) and shard in str(err.value)
    src = b.as_data_source("train", index_dir=str(tmp_path / "idx"))
    with pytest.raises(tfr.ParseError) as err:
        src[3]
    assert (err.value.key, err.value.path, err.value.index) == ("bytes_static", shard, 3)
    with pytest.raises(tfr.ParseError) as err:
        src[2:5]
    assert (err.value.key, err.value.path, err.value.index) == ("bytes_static", shard, 2)


# --------------------------------------------------------------------------- shard lengths


@pytest.mark.parametrize("split", ["train[:31]", "train[:50%]", "train[30:40]"])
def test_wrong_shard_lengths_with_the_right_total_are_caught(
    tmp_path: Path, monkeypatch: Any, split: str
) -> None:
    monkeypatch.setenv("TFRECORD_LITE_CACHE_DIR", str(tmp_path / "cache"))

    def shift(info: dict[str, Any]) -> None:
        train = next(s for s in info["splits"] if s["name"] == "train")
        assert train["shardLengths"] == ["34", "35", "34"]
        train["shardLengths"] = ["30", "39", "34"]

    b = tfds.builder_from_directory(_copy_dir(tmp_path, "tfl_tabular", edit_info=shift))
    with pytest.raises(tfr.StaleIndexError, match=r"holds 34 records, dataset_info\.json says 30"):
        list(b.as_dataset(split))
    with pytest.raises(tfr.StaleIndexError):
        b.as_data_source("train")[0]
    assert len(list(b.as_dataset("train"))) == 103  # the whole split: every record, as TFDS
    assert len(list(b.as_dataset("test[:5]"))) == 5  # the other splits are intact


# --------------------------------------------------------------------------- symbolic links


def test_a_shard_linked_from_outside_the_directory_is_refused(tmp_path: Path) -> None:
    data = _copy_dir(tmp_path, "tfl_tabular")
    shard = Path(tfds.builder_from_directory(data).info.splits["test"].filepaths[1])
    outside = tmp_path / "elsewhere.tfrecord"
    shutil.move(str(shard), outside)
    shard.symlink_to(outside)
    b = tfds.builder_from_directory(data)
    with pytest.raises(ValueError, match="outside the dataset directory"):
        b.as_dataset("test")
    with pytest.raises(ValueError, match="outside the dataset directory"):
        b.as_data_source("test")
    assert len(list(b.as_dataset("train"))) == 103
    inside = data / "renamed.tfrecord"  # a link inside the directory is fine
    shutil.move(str(outside), inside)
    shard.unlink()
    shard.symlink_to(inside.name)
    assert len(list(b.as_dataset("test"))) == 37


def test_metadata_linked_from_outside_the_directory_is_refused(tmp_path: Path) -> None:
    data = _copy_dir(tmp_path, "tfl_features")
    labels = data / "label.labels.txt"
    outside = tmp_path / "secret.txt"
    shutil.move(str(labels), outside)
    labels.symlink_to(outside)
    with pytest.raises(ValueError, match=r"label\.labels\.txt is a symbolic link"):
        tfds.builder_from_directory(data)
    labels.unlink()
    shutil.move(str(outside), labels)
    info = data / "dataset_info.json"
    shutil.move(str(info), tmp_path / "info.json")
    info.symlink_to(tmp_path / "info.json")
    with pytest.raises(ValueError, match="outside the dataset directory"):
        tfds.builder_from_directory(data)


def test_cli_verify_and_preview_report_tfds_decoding_errors(tmp_path: Path, capsys: Any) -> None:
    from tfrecord_lite._cli import main

    def wrong_dtype(feats: dict[str, Any]) -> None:
        _tensor(feats, "t_zlib")["dtype"] = "int32"  # the stored bytes are int16

    good = DIRS["tfl_features"]
    assert main(["verify", str(good)]) == 0
    assert f"ok     {good}: 16 examples in 2 splits" in capsys.readouterr().out
    data = _copy_dir(tmp_path, "tfl_features", wrong_dtype)
    assert main(["verify", str(data)]) == 1
    out = capsys.readouterr().out
    assert "feature 't_zlib'" in out and "tfl_features-train.tfrecord-00000-of-00001" in out
    assert f"FAILED {data}: 2 splits with problems" in out
    assert main(["verify", "--no-parse", str(data)]) == 0  # the records themselves are intact
    capsys.readouterr()
    assert main(["preview", str(data), "-o", str(tmp_path / "grid.png")]) == 1  # data, not usage
    err = capsys.readouterr().err
    assert "feature 't_zlib'" in err and "record " in err
