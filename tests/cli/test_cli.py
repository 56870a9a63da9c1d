"""The ``tfrecord-lite`` command line tool.

Every command on files TensorFlow wrote (tests/data/) and on files we write; the
error paths (exit 1 with file / record / offset in one line, no traceback; exit 2
for usage errors); ``from-images`` (skipped files, identical output whatever
``--workers``) and ``preview`` (the PNG's size, and that its cells differ).

Commands run through ``main()`` in the test's process (``_cli_run.run_cli``); the
console script and ``python -m tfrecord_lite`` run for real in a subprocess.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _cli_run import run_cli as run

import tfrecord_lite as tfr

DATA = Path(__file__).resolve().parents[1] / "data"
COMMANDS = (
    "info",
    "head",
    "count",
    "verify",
    "schema",
    "index",
    "convert",
    "from-images",
    "preview",
)


def one_error_line(stderr: str) -> str:
    """The stderr of a failed command: exactly one line, no traceback."""
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def read(path: Any) -> list[bytes]:
    return list(tfr.tf_record_iterator(os.fspath(path)))


def sidecar_records(name: str) -> list[bytes]:
    meta = json.loads((DATA / f"{name}.json").read_text())
    return [bytes.fromhex(r["hex"]) for r in meta["records"] if "hex" in r]


# --------------------------------------------------------------------------- basics


def test_console_script_installed_and_runs():
    script = Path(sys.executable).parent / "tfrecord-lite"
    assert script.exists(), "the tfrecord-lite console script is not installed (make install)"
    out = subprocess.run(
        [str(script), "count", str(DATA / "few.plain.tfrecord")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "9"
    version = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and tfr.__version__ in version.stdout
    # python -m tfrecord_lite, and the same answer in this process (how the others run)
    for own_process in (True, False):
        out = run("count", DATA / "few.plain.tfrecord", own_process=own_process)
        assert (out.returncode, out.stdout.split()[0], out.stderr) == (0, "9", "")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_of_every_command_has_examples(command):
    out = run(command, "--help")
    assert out.returncode == 0
    assert "usage: tfrecord-lite " + command in out.stdout
    assert "examples:" in out.stdout


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("bogus",),
        ("head",),
        ("head", DATA / "few.plain.tfrecord", "-n", "x"),
        ("preview", DATA / "few.plain.tfrecord", "--image-key", "k"),  # no -o
        ("convert", DATA / "few.plain.tfrecord", "out.tfrecord", "--compression", "bz2"),
        ("from-images", ".", "out", "--size", "big"),
    ],
)
def test_bad_arguments_exit_2(args, tmp_path):
    out = run(*args, cwd=tmp_path)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "usage:" in out.stderr


def test_missing_file_is_a_usage_error(tmp_path):
    out = run("count", tmp_path / "nope.tfrecord")
    assert out.returncode == 2
    assert "nope.tfrecord" in one_error_line(out.stderr)
    out = run("verify", tmp_path / "nothing-*.tfrecord")
    assert out.returncode == 2
    one_error_line(out.stderr)


# --------------------------------------------------------------------------- info / schema


def test_info_on_tensorflow_files():
    out = run("info", DATA / "examples.plain.tfrecord", DATA / "examples.gzip.tfrecord")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "CRC32C backend: " + tfr.crc_backend() in text
    assert "compression:  GZIP" in text and "compression:  none" in text
    assert text.count("records:      5") == 2
    assert "record type:  Example" in text
    assert "label" in text and "int64_list" in text and "variable" in text
    assert "total: 10 records in 2 files" in text


def test_info_json_and_sequence_examples():
    out = run("info", DATA / "sequence-examples.plain.tfrecord", "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["crc_backend"] == tfr.crc_backend()
    (f,) = info["files"]
    assert f["records"] == 3 and f["compression"] == "none"
    assert f["record_type"] == "SequenceExample"
    assert set(f["schema"]["sequence_features"]) == {"scores", "tokens", "words"}
    assert f["problems"] == []


def test_info_on_raw_records_and_damage():
    out = run("info", DATA / "few.zlib.tfrecord")
    assert out.returncode == 0, out.stderr
    assert "compression:  ZLIB" in out.stdout and "not tf.train.Example" in out.stdout
    out = run("info", DATA / "corrupt-data-crc.plain.tfrecord")
    assert out.returncode == 1
    line = one_error_line(out.stderr)
    assert "record 3" in line and "byte offset 113" in line
    assert "records:      8" in out.stdout  # read on past the bad record


def test_schema_python_is_ready_to_paste():
    path = DATA / "examples.plain.tfrecord"
    out = run("schema", path)
    assert out.returncode == 0, out.stderr
    scope: dict[str, Any] = {}
    exec(out.stdout, scope)
    assert repr(scope["features"]) == repr(dict(tfr.infer_schema(str(path), None)))
    parsed = tfr.parse_example(read(path), scope["features"])
    assert set(parsed) == set(scope["features"])


def test_schema_json_sequence():
    out = run("schema", DATA / "sequence-examples.plain.tfrecord", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["kind"] == "SequenceExample"
    assert data["sequence_features"]["scores"]["type"] == "FixedLenSequenceFeature"


def test_schema_of_non_examples_is_one_line_error():
    out = run("schema", DATA / "few.plain.tfrecord")
    assert out.returncode == 1
    line = one_error_line(out.stderr)
    assert "few.plain.tfrecord" in line and "record 0" in line
    debug = run("schema", DATA / "few.plain.tfrecord", "--debug")
    assert debug.returncode == 1 and "Traceback" in debug.stderr


# --------------------------------------------------------------------------- head


def test_head_pretty_prints_binary_without_decode_errors():
    out = run("head", DATA / "examples.plain.tfrecord", "-n", "2")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "record 0" in text and "record 1" in text and "record 2" not in text
    assert "<3 bytes: ff 00 80>" in text  # binary: length + hex prefix
    assert '"hi"' in text and '"été"' in text  # UTF-8 text shown as text
    assert "float_list[6]" in text and "inf" in text
    assert "9223372036854775807" in text


def test_head_long_lists_are_truncated_and_sequence_examples_shown():
    out = run("head", DATA / "examples.plain.tfrecord", "--skip", "4", "-n", "1")
    assert out.returncode == 0, out.stderr
    assert "record 4" in out.stdout and "... (40 values)" in out.stdout
    out = run("head", DATA / "sequence-examples.plain.tfrecord", "-n", "1")
    assert "SequenceExample" in out.stdout and "feature_lists:" in out.stdout
    assert "step 2" in out.stdout


def test_head_raw_records_and_gzip():
    out = run("head", DATA / "few.gzip.tfrecord", "-n", "4")
    assert out.returncode == 0, out.stderr
    assert '"foo"' in out.stdout and "not an Example" in out.stdout
    assert "<256 bytes: 00 01 02 03" in out.stdout


def test_head_json_is_parseable_with_base64_bytes():
    out = run("head", DATA / "examples.gzip.tfrecord", "--json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["index"] for r in rows] == [0, 1, 2, 3, 4]
    first = rows[0]
    assert first["type"] == "Example" and first["offset"] == 0
    values = [base64.b64decode(v) for v in first["features"]["bytes"]["value"]]
    assert values == [b"", b"hi", b"\xff\x00\x80"]
    assert "Infinity" in first["features"]["float"]["value"]
    assert first["features"]["empty"] == {"kind": None, "value": []}
    raw = run("head", DATA / "few.plain.tfrecord", "--json", "-n", "1")
    row = json.loads(raw.stdout)
    assert row["type"] is None and base64.b64decode(row["data"]) == b"foo"


def test_head_recognises_images(tmp_path):
    pytest.importorskip("PIL")
    from tfrecord_lite._decoding import encode_image

    img = np.zeros((5, 7, 3), dtype=np.uint8)
    path = tmp_path / "img.tfrecord"
    with tfr.TFRecordWriter(str(path)) as w:
        w.write(
            tfr.encode_example({"png": encode_image(img, "png"), "jpeg": encode_image(img, "jpeg")})
        )
    out = run("head", path)
    assert out.returncode == 0, out.stderr
    assert "<PNG 7x5, " in out.stdout and "<JPEG 7x5, " in out.stdout


# --------------------------------------------------------------------------- count / verify


@pytest.mark.parametrize("name", ["few.plain", "few.gzip", "few.zlib", "large.gzip", "empty.zlib"])
def test_count_tensorflow_files(name):
    meta = json.loads((DATA / f"{name}.json").read_text())
    out = run("count", DATA / f"{name}.tfrecord")
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[0]) == meta["expect"]["records"]


def test_count_several_files_and_total():
    out = run("count", DATA / "few.plain.tfrecord", DATA / "examples.plain.tfrecord")
    assert out.returncode == 0
    assert out.stdout.splitlines()[-1] == "14 total"


def test_verify_good_files():
    files = [DATA / f"examples.{c}.tfrecord" for c in ("plain", "gzip")]
    out = run("verify", *files, DATA / "sequence-examples.plain.tfrecord")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "all 3 files ok: 13 records" in out.stdout
    assert run("verify", DATA / "few.zlib.tfrecord", "--no-parse").returncode == 0


def test_verify_reports_records_that_are_not_examples():
    out = run("verify", DATA / "few.plain.tfrecord")
    assert out.returncode == 1
    assert "record 0, byte offset 0: not a tf.train.Example" in out.stdout
    assert "--no-parse" in out.stdout


def test_verify_data_crc_error_reports_location_and_reads_on():
    path = DATA / "corrupt-data-crc.plain.tfrecord"
    out = run("verify", path, "--no-parse")
    assert out.returncode == 1
    assert "Traceback" not in out.stdout + out.stderr
    bad = [line for line in out.stdout.splitlines() if "corrupted record" in line]
    assert len(bad) == 1
    assert bad[0].startswith(f"{path}: record 3, byte offset 113: ")
    assert "8 intact records" in out.stdout  # every record after the bad one was read


def test_verify_header_corruption_resynchronises():
    out = run("verify", DATA / "corrupt-header.plain.tfrecord", "--no-parse")
    assert out.returncode == 1
    (line,) = [x for x in out.stdout.splitlines() if "length field" in x]
    assert "record 2, byte offset 35" in line and "byte offset 101" in line
    assert "8 intact records" in out.stdout


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("truncated-data.plain", "record 3, byte offset 101"),
        ("truncated-data.gzip", "record 3, decompressed byte offset 101"),
        ("corrupt-header-first.plain", "record 0, byte offset 0"),
        ("not-a-tfrecord.plain", "not a TFRecord file"),  # the whole file, no record
        ("huge-length-2e63.plain", "record 2, byte offset 35"),
        ("cut-stream-middle.zlib", "record 6, decompressed byte offset 1405"),
    ],
)
def test_damaged_files_exit_1_with_location(name, where):
    path = DATA / f"{name}.tfrecord"
    out = run("verify", path, "--no-parse")
    assert out.returncode == 1
    assert any(line.startswith(f"{path}: {where}: ") for line in out.stdout.splitlines()), (
        out.stdout
    )
    counted = run("count", path)
    assert counted.returncode == 1
    assert where in one_error_line(counted.stderr)


@pytest.mark.slow
def test_every_tensorflow_fixture_in_one_run():
    """verify / info / head over every fixture at once: right verdict per file, never a traceback."""
    files = sorted(DATA.glob("*.tfrecord"))
    verdict = {}
    for f in files:
        meta = json.loads(f.with_suffix(".json").read_text())
        verdict[str(f)] = meta["expect"].get("error") is None
    out = run("verify", "--no-parse", *files)
    assert out.returncode == 1 and "Traceback" not in out.stdout + out.stderr
    for path, ok in verdict.items():
        prefix = "ok     " if ok else "FAILED "
        assert any(line.startswith(prefix + path + ": ") for line in out.stdout.splitlines()), path
    info = run("info", "--json", *files)
    assert info.returncode == 1 and "Traceback" not in info.stderr
    reports = json.loads(info.stdout)["files"]
    assert [r["path"] for r in reports] == [str(f) for f in files]
    for r in reports:
        assert (r["problems"] == []) == verdict[r["path"]], r["path"]
    head = run("head", "-n", "2", *files)
    assert head.returncode == 1 and "Traceback" not in head.stderr
    assert head.stdout.count("==> ") == len(files)


# --------------------------------------------------------------------------- index / convert


@pytest.mark.slow
def test_index_files(tmp_path):
    for name in ("few.plain", "few.gzip"):
        shutil.copy(DATA / f"{name}.tfrecord", tmp_path)
    out = run("index", tmp_path / "few.plain.tfrecord", tmp_path / "few.gzip.tfrecord")
    assert out.returncode == 0, out.stderr
    assert "few.plain.tfrecord.index: 9 records" in out.stdout
    lines = (tmp_path / "few.plain.tfrecord.index").read_text().splitlines()
    sizes = [len(r) + 16 for r in sidecar_records("few.plain")]
    assert [tuple(map(int, line.split())) for line in lines][:3] == [
        (0, sizes[0]),
        (sizes[0], sizes[1]),
        (sizes[0] + sizes[1], sizes[2]),
    ]
    custom = run("index", tmp_path / "few.plain.tfrecord", "-o", tmp_path / "x.idx")
    assert custom.returncode == 0 and (tmp_path / "x.idx").read_text() == "\n".join(lines) + "\n"
    shutil.copy(DATA / "corrupt-header.plain.tfrecord", tmp_path)
    bad = run("index", tmp_path / "corrupt-header.plain.tfrecord")
    assert bad.returncode == 1 and "byte offset 35" in one_error_line(bad.stderr)


def test_convert_recompress_merge_and_split(tmp_path):
    a, b = DATA / "few.zlib.tfrecord", DATA / "examples.gzip.tfrecord"
    expected = read(a) + read(b)
    merged = tmp_path / "merged.tfrecord.gz"
    out = run("convert", a, b, merged, "--compression", "GZIP")
    assert out.returncode == 0, out.stderr
    assert merged.read_bytes()[:2] == b"\x1f\x8b"
    assert read(merged) == expected
    out = run("convert", merged, tmp_path / "part", "--shards", "3", "--index")
    assert out.returncode == 0, out.stderr
    shards = [tmp_path / tfr.shard_name("part", i, 3) for i in range(3)]
    assert all(s.exists() and Path(f"{s}.index").exists() for s in shards)
    assert [r for s in shards for r in read(s)] == expected  # contiguous: order kept
    assert all(read(s) for s in shards)
    plain = tmp_path / "plain.tfrecord"
    assert run("convert", tmp_path / "part@3", plain).returncode == 0
    assert read(plain) == expected and tfr.detect_compression(plain.read_bytes()[:16]) == ""


def test_convert_damaged_input_stops_or_skips(tmp_path):
    src = DATA / "corrupt-data-crc.plain.tfrecord"
    dest = tmp_path / "out.tfrecord"
    out = run("convert", src, dest)
    assert out.returncode == 1
    assert "record 3" in one_error_line(out.stderr)
    assert os.listdir(tmp_path) == []  # nothing half-written left behind
    out = run("convert", src, dest, "--skip-bad")
    assert out.returncode == 1  # data was dropped: not "all is well"
    assert "record 3" in out.stderr
    kept = read(DATA / "few.plain.tfrecord")  # the file it is a damaged copy of
    assert read(dest) == kept[:3] + kept[4:]


def test_convert_refuses_to_overwrite_its_input(tmp_path):
    path = tmp_path / "x.tfrecord"
    shutil.copy(DATA / "few.plain.tfrecord", path)
    out = run("convert", path, path)
    assert out.returncode == 2
    assert "also an input" in one_error_line(out.stderr)
    assert read(path) == read(DATA / "few.plain.tfrecord")


# --------------------------------------------------------------------------- from-images / preview


COLORS = {"apple": (200, 30, 30), "kiwi": (40, 180, 40), "plum": (90, 40, 160)}


@pytest.fixture
def image_dir(tmp_path: Path) -> Path:
    pytest.importorskip("PIL")
    from PIL import Image

    root = tmp_path / "fruit"
    for c, (name, color) in enumerate(COLORS.items()):
        (root / name).mkdir(parents=True)
        for i in range(4):
            arr = np.zeros((6 + i, 8, 3), dtype=np.uint8)
            arr[:, :] = color
            arr[i, :] = 255 - 60 * c  # every image differs
            fmt = "png" if i % 2 else "jpeg"
            Image.fromarray(arr).save(root / name / f"{i}.{fmt[:3] if fmt == 'png' else 'jpg'}")
    (root / "kiwi" / "broken.jpg").write_bytes(b"not an image at all")
    (root / "plum" / "notes.txt").write_text("ignore me")
    return root


def test_from_images_writes_shards_labels_and_skips_bad_files(image_dir, tmp_path):
    out_prefix = tmp_path / "out" / "fruit"
    res = run("from-images", image_dir, out_prefix, "--shards", "2", "--workers", "1")
    assert res.returncode == 1  # a file was skipped
    skipped = [line for line in res.stderr.splitlines() if "skipped" in line]
    assert len(skipped) == 1 and "broken.jpg" in skipped[0] and "Traceback" not in res.stderr
    assert "12 images of 3 classes" in res.stdout
    assert (tmp_path / "out" / "labels.txt").read_text() == "apple\nkiwi\nplum\n"
    shards = [f"{out_prefix}-{i:05d}-of-00002" for i in range(2)]
    feats = {
        "image/encoded": tfr.FixedLenFeature([], tfr.string),
        "image/format": tfr.FixedLenFeature([], tfr.string),
        "image/class/label": tfr.FixedLenFeature([], tfr.int64),
        "image/class/text": tfr.FixedLenFeature([], tfr.string),
        "image/height": tfr.FixedLenFeature([], tfr.int64),
        "image/width": tfr.FixedLenFeature([], tfr.int64),
        "image/filename": tfr.FixedLenFeature([], tfr.string),
    }
    batch = tfr.parse_example(read(shards[0]) + read(shards[1]), feats)
    assert len(batch["image/class/label"]) == 12
    names = list(COLORS)
    for label, text, name in zip(
        batch["image/class/label"], batch["image/class/text"], batch["image/filename"]
    ):
        assert text.decode() == names[label] and name.decode().startswith(names[label] + "/")
    for fmt, name in zip(batch["image/format"], batch["image/filename"]):  # kept as they are
        assert fmt == (b"png" if name.endswith(b".png") else b"jpeg")
    assert "images: every image stored as its file is" in res.stdout
    from tfrecord_lite._decoding import decode_image

    img = decode_image(batch["image/encoded"][0])
    assert img.shape == (int(batch["image/height"][0]), int(batch["image/width"][0]), 3)
    allowed = run("from-images", image_dir, tmp_path / "again", "--allow-skips", "-q")
    assert allowed.returncode == 0


def test_from_images_keeps_files_that_need_no_change(image_dir, tmp_path):
    res = run("-q", "from-images", image_dir, tmp_path / "keep", "--allow-skips")
    assert res.returncode == 0 and res.stdout == "", res.stdout + res.stderr
    (rec, *_) = read(tmp_path / "keep-00000-of-00001")
    ex = tfr.train.Example.FromString(rec)
    name = ex.features.feature["image/filename"].bytes_list.value[0].decode()
    assert name == "apple/0.jpg"
    stored = ex.features.feature["image/encoded"].bytes_list.value[0]
    assert stored == (image_dir / name).read_bytes()  # the JPEG file, byte for byte


@pytest.fixture
def mixed_image_dir(tmp_path: Path) -> Path:
    """Noise PNGs (RGB, grayscale, RGBA) and a JPEG: what JPEG re-encoding would change."""
    pytest.importorskip("PIL")
    from PIL import Image

    rng = np.random.default_rng(0)
    root = tmp_path / "mixed"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    Image.fromarray(rng.integers(0, 256, (8, 9, 3), dtype=np.uint8)).save(root / "a" / "rgb.png")
    Image.fromarray(rng.integers(0, 256, (8, 9), dtype=np.uint8)).save(root / "a" / "gray.png")
    rgba = rng.integers(0, 256, (8, 9, 4), dtype=np.uint8)
    Image.fromarray(rgba, "RGBA").save(root / "b" / "alpha.png")
    Image.fromarray(rng.integers(0, 256, (8, 9, 3), dtype=np.uint8)).save(root / "b" / "photo.jpg")
    return root


def stored(prefix: Path) -> dict[str, tuple[bytes, bytes, int]]:
    out = {}
    for rec in read(f"{prefix}-00000-of-00001"):
        f = tfr.train.Example.FromString(rec).features.feature
        name = f["image/filename"].bytes_list.value[0].decode()
        out[name] = (
            f["image/encoded"].bytes_list.value[0],
            f["image/format"].bytes_list.value[0],
            f["image/channels"].int64_list.value[0],
        )
    return out


def test_from_images_keeps_every_file_as_it_is_by_default(mixed_image_dir, tmp_path):
    res = run("from-images", mixed_image_dir, tmp_path / "keep")
    assert res.returncode == 0, res.stderr
    got = stored(tmp_path / "keep")
    for name, (data, fmt, _) in got.items():
        assert data == (mixed_image_dir / name).read_bytes()  # no lossy JPEG, no alpha lost
        assert fmt == (b"jpeg" if name.endswith(".jpg") else b"png")
    assert got["b/alpha.png"][2] == 4 and got["a/gray.png"][2] == 1
    assert "images: every image stored as its file is" in res.stdout


@pytest.mark.slow
def test_from_images_converts_only_when_asked_and_says_so(mixed_image_dir, tmp_path):
    from tfrecord_lite._decoding import decode_image

    res = run("from-images", mixed_image_dir, tmp_path / "rgb", "--channels", "3")
    assert res.returncode == 0, res.stderr
    got = stored(tmp_path / "rgb")
    pixels = [decode_image(data) for data, _, _ in got.values()]
    assert {p.shape for p in pixels} == {(8, 9, 3)}  # a batch can be stacked
    assert got["b/photo.jpg"][0] == (mixed_image_dir / "b" / "photo.jpg").read_bytes()
    assert got["a/rgb.png"][0] == (mixed_image_dir / "a" / "rgb.png").read_bytes()
    assert "1 to 3 channels x1" in res.stdout and "4 to 3 channels x1" in res.stdout
    jpeg = run("from-images", mixed_image_dir, tmp_path / "jpeg", "--format", "jpeg")
    assert "PNG to JPEG x3" in jpeg.stdout and "4 to 3 channels x1" in jpeg.stdout
    assert {fmt for _, fmt, _ in stored(tmp_path / "jpeg").values()} == {b"jpeg"}
    old = run("from-images", mixed_image_dir, tmp_path / "old", "--encode", "png")
    assert old.returncode == 0 and "deprecated" in old.stderr and "--format png" in old.stderr
    assert stored(tmp_path / "old")["b/alpha.png"][2] == 4


def test_from_images_runner_and_its_deprecated_name(mixed_image_dir, tmp_path):
    # "engine" is the parse engine's word: the Ray / local choice is --runner; the old
    # --engine still works, with a warning, and must not disagree with --runner
    new = run("from-images", mixed_image_dir, tmp_path / "new", "--runner", "local")
    assert new.returncode == 0 and "deprecated" not in new.stderr, new.stderr
    old = run("from-images", mixed_image_dir, tmp_path / "old", "--engine", "local")
    assert old.returncode == 0 and "deprecated" in old.stderr and "--runner local" in old.stderr
    assert stored(tmp_path / "old") == stored(tmp_path / "new")
    both = run(
        "from-images", mixed_image_dir, tmp_path / "x", "--engine", "ray", "--runner", "local"
    )
    assert both.returncode == 2 and "--runner" in both.stderr
    assert not (tmp_path / "x").exists()


def test_write_image_folder_in_python(mixed_image_dir, tmp_path):
    summary = tfr.write_image_folder(mixed_image_dir, str(tmp_path / "py" / "ds"), channels=3)
    assert summary.written == 4 and summary.classes == ["a", "b"]
    assert dict(summary.conversions) == {"1 to 3 channels": 1, "4 to 3 channels": 1}
    assert summary.paths == [str(tmp_path / "py" / "ds-00000-of-00001")]
    assert (tmp_path / "py" / "labels.txt").read_text() == "a\nb\n"
    kept = tfr.write_image_folder(mixed_image_dir, str(tmp_path / "k" / "ds"), shards=2)
    assert kept.written == 4 and not kept.conversions and len(kept.paths) == 2


def test_from_images_output_identical_whatever_workers(image_dir, tmp_path):
    outputs = []
    for workers in ("1", "2"):
        prefix = tmp_path / f"w{workers}" / "ds"
        args = ["--shards", "2", "--workers", workers, "--format", "png", "--size", "5x4"]
        res = run("from-images", image_dir, prefix, *args, "--shuffle", "--allow-skips")
        assert res.returncode == 0, res.stderr
        outputs.append([Path(f"{prefix}-{i:05d}-of-00002").read_bytes() for i in range(2)])
    assert outputs[0] == outputs[1]


def test_from_images_raw_reads_back_as_arrays(image_dir, tmp_path):
    prefix = tmp_path / "raw"
    res = run("from-images", image_dir, prefix, "--format", "raw", "--size", "4x3", "--allow-skips")
    assert res.returncode == 0, res.stderr
    data = tfr.read_examples(f"{prefix}-00000-of-00001")
    assert data["image_raw"].shape == (12, 3, 4, 3) and data["image_raw"].dtype == np.uint8
    assert (data["image/class/label"] == np.repeat([0, 1, 2], 4)).all()


def test_from_images_without_class_folders(tmp_path):
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "a.png").write_bytes(b"x")
    res = run("from-images", tmp_path / "flat", tmp_path / "out")
    assert res.returncode == 1
    assert "sub-folder" in one_error_line(res.stderr)
    missing = run("from-images", tmp_path / "nope", tmp_path / "out")
    assert missing.returncode == 2


def cells_of(png: Path, n: int, cell: int, cols: int) -> list[np.ndarray]:
    from PIL import Image

    from tfrecord_lite._decoding._display import GRID_PAD, LABEL_HEIGHT

    grid = np.asarray(Image.open(png).convert("RGB"))
    out = []
    for i in range(n):
        r, c = divmod(i, cols)
        x = GRID_PAD + c * (cell + GRID_PAD)
        y = GRID_PAD + r * (cell + LABEL_HEIGHT + GRID_PAD)
        out.append(grid[y : y + cell, x : x + cell])
    return out


def test_preview_grid_of_encoded_images(image_dir, tmp_path):
    from PIL import Image

    prefix = tmp_path / "ds"
    res = run(
        "from-images", image_dir, prefix, "--format", "png", "--shuffle", "--allow-skips", "-q"
    )
    assert res.returncode == 0, res.stderr
    png = tmp_path / "grid.png"
    res = run(
        "preview",
        f"{prefix}-00000-of-00001",
        "--image-key",
        "image/encoded",
        "--label-key",
        "image/class/label",
        "-n",
        "6",
        "--cell",
        "24",
        "-o",
        png,
    )
    assert res.returncode == 0, res.stderr
    # 6 cells -> 3 columns x 2 rows of 24 px, 2 px gaps, a 14 px label strip under each row.
    assert Image.open(png).size == (3 * 24 + 4 * 2, 2 * (24 + 14) + 3 * 2)
    cells = cells_of(png, 6, 24, 3)
    for i in range(6):
        assert cells[i].std() > 0 or cells[i].mean() > 0  # something was drawn
        for j in range(i + 1, 6):
            assert not np.array_equal(cells[i], cells[j])


def test_preview_raw_bytes_with_shape_and_stored_shapes(tmp_path):
    pytest.importorskip("PIL")
    from PIL import Image

    rng = np.random.default_rng(0)
    images = rng.integers(0, 255, size=(9, 28, 28), dtype=np.uint8)
    labels = np.arange(9)
    # 1. write_examples' raw arrays: image + image/shape + image/dtype (found by itself).
    path = tmp_path / "mnist.tfrecord"
    tfr.write_examples(str(path), {"image": images, "label": labels})
    png = tmp_path / "a.png"
    res = run(
        "preview",
        path,
        "--image-key",
        "image",
        "--label-key",
        "label",
        "-n",
        "9",
        "--cell",
        "28",
        "-o",
        png,
    )
    assert res.returncode == 0, res.stderr
    assert Image.open(png).size == (3 * 28 + 4 * 2, 3 * (28 + 14) + 4 * 2)
    cells = cells_of(png, 9, 28, 3)
    assert np.array_equal(cells[4][:, :, 0], images[4])  # 1:1 pixels, exact
    # 2. plain raw bytes (the TensorFlow MNIST tutorial): need --shape, or height/width.
    plain = tmp_path / "plain.tfrecord"
    with tfr.TFRecordWriter(str(plain)) as w:
        for img, lab in zip(images, labels):
            w.write(
                tfr.encode_example(
                    {"image_raw": img.tobytes(), "label": int(lab), "height": 28, "width": 28}
                )
            )
    res = run(
        "preview",
        plain,
        "--image-key",
        "image_raw",
        "-n",
        "4",
        "--cell",
        "28",
        "-o",
        tmp_path / "b.png",
    )
    assert res.returncode == 0, res.stderr
    # 3. int64 lists of pixels with --shape.
    ints = tmp_path / "ints.tfrecord"
    with tfr.TFRecordWriter(str(ints)) as w:
        for img in images[:4]:
            w.write(tfr.encode_example({"pixels": img[:, :14].astype(np.int64)}))
    res = run(
        "preview",
        ints,
        "--image-key",
        "pixels",
        "--shape",
        "28x14",
        "-o",
        tmp_path / "c.png",
        "--cell",
        "28",
    )
    assert res.returncode == 0, res.stderr
    assert Image.open(tmp_path / "c.png").size == (2 * 28 + 3 * 2, 2 * 28 + 3 * 2)  # no labels


def test_preview_errors(tmp_path):
    pytest.importorskip("PIL")
    res = run(
        "preview", DATA / "examples.plain.tfrecord", "--image-key", "nope", "-o", tmp_path / "x.png"
    )
    assert res.returncode == 1
    assert "no feature 'nope'" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "x.png").exists()


def test_preview_finds_the_encoded_image_feature(tmp_path):
    """Object-detection records: the JPEG in image/encoded is found as head finds it."""
    pytest.importorskip("PIL")
    from tfrecord_lite._decoding import encode_image

    rng = np.random.default_rng(3)
    path = tmp_path / "od.tfrecord"
    with tfr.TFRecordWriter(str(path)) as w:
        for i in range(4):
            pixels = rng.integers(0, 256, size=(12, 10, 3)).astype(np.uint8)
            w.write(
                tfr.make_example(
                    {
                        "image/source_id": str(i).encode(),
                        "image/encoded": encode_image(pixels, "jpeg"),
                        "image/format": b"jpeg",
                        "image/object/bbox/xmin": [0.1, 0.5],
                        "image/object/class/label": [1, 2],
                    }
                ).SerializeToString()
            )
    res = run("preview", path, "-o", tmp_path / "grid.png")
    assert res.returncode == 0, res.stderr
    assert "images from feature 'image/encoded'" in res.stderr
    assert (tmp_path / "grid.png").exists()
    res = run("preview", DATA / "examples.plain.tfrecord", "-o", tmp_path / "x.png")
    assert res.returncode == 2
    assert "no feature holding an encoded image" in res.stderr and "--image-key" in res.stderr


# --------------------------------------------------------------------------- progress bar


def test_builtin_progress_bar_draws_and_clears():
    from tfrecord_lite._cli._progress import Progress

    buf = io.StringIO()
    bar = Progress(1000, desc="verify", unit="B", delay=0.0, file=buf)
    bar.update(500)
    assert "verify:  50%" in buf.getvalue() and "500B/1.0kB" in buf.getvalue()
    bar.write("a line", file=io.StringIO())
    bar.close()
    assert buf.getvalue().endswith("\r\x1b[K")
    silent = Progress(10, enabled=False, file=buf)
    before = buf.getvalue()
    silent.update(5)
    silent.close()
    assert buf.getvalue() == before


def test_progress_uses_tqdm_when_installed(monkeypatch):
    import types

    from tfrecord_lite._cli import _progress

    made: list[dict[str, Any]] = []

    class FakeTqdm:
        def __init__(self, **kwargs: Any) -> None:
            made.append(kwargs)
            self.n = 0

        def update(self, n: float) -> None:
            self.n += n

        def close(self) -> None:
            made.append({"closed": self.n})

        @staticmethod
        def write(text: str, file: Any = None) -> None:
            made.append({"write": text})

    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=FakeTqdm))
    monkeypatch.setenv("TFRECORD_LITE_PROGRESS", "1")
    with _progress.progress(100, desc="x", unit="B") as bar:
        bar.update(40)
        bar.write("hello")
    assert made[0]["total"] == 100 and made[0]["delay"] == _progress.DEFAULT_DELAY
    assert made[0]["file"] is sys.stderr
    assert {"write": "hello"} in made and {"closed": 40} in made
    monkeypatch.setenv("TFRECORD_LITE_PROGRESS", "0")
    assert not _progress.progress(5).enabled
