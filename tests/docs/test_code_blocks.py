"""Every ```python block of README.md and docs/ runs, so the documentation cannot rot.

Each Markdown file's blocks run in order in one namespace (a later block may use what an
earlier one defined, as a reader would), in a fresh temporary directory that holds the
small files the examples read (:func:`make_example_files`: ``train.tfrecord``,
``data/train-*.tfrecord``...). A block in ``>>>`` form runs as a doctest: its printed
results are compared.

A block that cannot run here (it needs a cluster, a network service or TensorFlow) says
so in its info string, ```python notest="needs a Ray cluster"```; it is reported as a
skipped test with that reason, and the blocks after it do not rely on it. A block that
needs PyTorch is skipped, with that reason, where torch is not installed (``make
test-pythons``' venvs). Names a page leaves to its reader (``world_size``, ``rank``, a
``transform``...) come from :func:`provided_names`.
"""

from __future__ import annotations

import doctest
import importlib.util
import io
import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest
from _docblocks import ROOT, Block, python_blocks

import tfrecord_lite as tfr

FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
TFDS_FIXTURE = ROOT / "tests" / "data" / "tfds" / "tfl_digits" / "small" / "3.0.1"
SKIP_FILES: set[Path] = set()


def _png(pixels: np.ndarray) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def make_example_files(directory: Path) -> None:
    """The files the examples read, under the names the pages use:

    * ``train.tfrecord``, ``train-0.tfrecord``, ``train-1.tfrecord`` and
      ``data/train-0000N-of-00004.tfrecord``: MNIST-like Examples (``image`` and
      ``image_raw``: the 28x28 uint8 pixels as bytes, ``label`` int64);
    * ``data/train-000NN-of-00016`` (16 shards, also ``data/train@16``): ``image`` a PNG,
      ``label`` int64, ``tags`` a variable-length list of bytes;
    * ``fruit/``: a few small photos named ``<class>_<n>.png`` (docs/tf1-queues.md);
    * ``home/tensorflow_datasets/mnist/3.0.1``: a TFDS directory prepared by
      tensorflow-datasets (the MNIST-like fixture tests/data/tfds/tfl_digits, renamed), for
      the pages that read ``~/tensorflow_datasets/mnist/3.0.1`` (the test sets ``HOME``).
    """
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (64, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 64)
    columns = {"image": images, "image_raw": images, "label": labels}
    for name in ("train.tfrecord", "train-0.tfrecord", "train-1.tfrecord"):
        tfr.write_examples(str(directory / name), columns)
    (directory / "data").mkdir()
    for i in range(4):
        part = {k: v[i * 16 : (i + 1) * 16] for k, v in columns.items()}
        tfr.write_examples(str(directory / "data" / f"train-{i:05d}-of-00004.tfrecord"), part)
    tags = [b"cat", b"dog", b"bird"]
    for shard in range(16):
        with tfr.TFRecordWriter(str(directory / "data" / f"train-{shard:05d}-of-00016")) as w:
            for i in range(shard * 4, shard * 4 + 4):
                example = {"image": _png(images[i]), "label": int(labels[i])}
                example["tags"] = tags[: i % 4]
                w.write(tfr.encode_example(example))
    (directory / "fruit").mkdir()
    for name, tint in (("apple_0", 0), ("apple_1", 1), ("orange_0", 2)):
        photo = np.zeros((40, 30, 3), np.uint8)
        photo[..., tint] = rng.integers(0, 256, (40, 30), dtype=np.uint8)
        (directory / "fruit" / f"{name}.png").write_bytes(_png(photo))
    _tfds_mnist(directory / "home" / "tensorflow_datasets" / "mnist" / "3.0.1")


def _tfds_mnist(target: Path) -> None:
    """The TFDS fixture ``tfl_digits/small/3.0.1`` (MNIST-like: image (28, 28, 1), label of
    10 classes; train 40, test 10) as the dataset ``mnist`` 3.0.1, without a config."""
    source = TFDS_FIXTURE
    target.mkdir(parents=True)
    for file in source.iterdir():
        name = file.name.replace("tfl_digits", "mnist")
        if file.name == "dataset_info.json":
            info = json.loads(file.read_text(encoding="utf-8"))
            info["name"] = "mnist"
            info.pop("configName", None)
            info.pop("configDescription", None)
            (target / name).write_text(json.dumps(info, indent=1), encoding="utf-8")
        else:
            shutil.copyfile(file, target / name)


def provided_names() -> dict[str, Any]:
    """Names a page may use without defining them, as its text tells the reader to bring
    them (``world_size`` and ``rank`` of a job, a per-record ``transform``, the serialized
    ``records`` or ``examples`` to write, a ``log``...). A page's own definitions replace
    them. Called in the directory of :func:`make_example_files`."""
    records = list(tfr.tf_record_iterator("data/train-00000-of-00016"))

    def transform(example: dict[str, Any]) -> dict[str, Any]:
        """MapDataset's per-record function: the raw pixels as an image, the label."""
        image = tfr.decode_raw(example["image"], tfr.uint8).reshape(28, 28)
        return {"image": image, "label": example["label"]}

    return {
        "__name__": "__docs__",
        "tfr": tfr,
        "np": np,
        "world_size": 2,
        "rank": 0,
        "transform": transform,
        "records": records,
        "examples": records,
        "steps": 3,
        "files": ["fruit.tfrecords"],
        "log": logging.getLogger("docs"),
    }


def _run_doctest(block: Block, namespace: dict[str, Any]) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.code, namespace, block.name, str(block.path), block.line)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    out: list[str] = []
    runner.run(test, out=out.append, clear_globs=False)
    assert runner.failures == 0, "".join(out)


def run_blocks(blocks: list[Block], namespace: dict[str, Any]) -> None:
    for block in blocks:
        if block.notest is not None:
            continue
        try:
            if re.search(r"^>>> ", block.code, re.M):
                _run_doctest(block, namespace)
            else:
                exec(compile(block.code, block.name, "exec"), namespace)
        except BaseException as e:
            raise AssertionError(f"the block at {block.name} failed: {e!r}") from e


#: Blocks of pages whose authors have not marked them yet, by (file, first two lines of
#: code), with the reason they cannot run here: each is reported as a skipped test with that
#: reason. A block that needs a cluster, a network service or TensorFlow gets an explicit
#: notest marker in its page instead; one that waits for a fix in the package runs once the
#: fix lands (then its entry goes). An entry whose block is gone fails the run.
NOT_YET_RUNNABLE: dict[tuple[str, str], str] = {}


def _first_line(block: Block) -> str:
    """The block's first two lines of code, stripped, joined by " / " (its key)."""
    return " / ".join([line.strip() for line in block.code.splitlines() if line.strip()][:2])


def _pending(block: Block) -> Optional[str]:
    return NOT_YET_RUNNABLE.get((str(block.path.relative_to(ROOT)), _first_line(block)))


#: Optional packages a block needs, by what its code shows (torch is in `make test`'s venv,
#: not in `make test-pythons`' ones): where the package is missing the block is skipped,
#: with that reason.
NEEDS = {"torch": re.compile(r"^\s*(import torch|from torch)|tfrecord_lite\.torch|\btfrt\.", re.M)}


def _missing(block: Block) -> Optional[str]:
    for module, shows in NEEDS.items():
        if shows.search(block.code) and importlib.util.find_spec(module) is None:
            return f"needs {module}, which is not installed here"
    return None


ALL = {path: python_blocks(path) for path in FILES if path not in SKIP_FILES}
for _blocks in ALL.values():
    for _b in _blocks:
        _reason = _pending(_b)
        if _reason is not None and _b.notest is None:
            _b.notest = f"not yet runnable here ({_reason})"
        if _b.notest is None:
            _b.notest = _missing(_b)
RUNNABLE = [p for p, blocks in ALL.items() if any(b.notest is None for b in blocks)]
MARKED = [b for blocks in ALL.values() for b in blocks if b.notest is not None]


def test_every_not_yet_runnable_entry_names_a_block() -> None:
    present = {(str(b.path.relative_to(ROOT)), _first_line(b)) for bs in ALL.values() for b in bs}
    stale = [key for key in NOT_YET_RUNNABLE if key not in present]
    assert not stale, f"NOT_YET_RUNNABLE lists blocks that are gone: {stale}"


@pytest.mark.parametrize("path", RUNNABLE, ids=[str(p.relative_to(ROOT)) for p in RUNNABLE])
def test_the_python_blocks_of_a_page_run(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_example_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # ~/tensorflow_datasets/mnist
    monkeypatch.delenv("TFDS_DATA_DIR", raising=False)
    run_blocks(ALL[path], provided_names())


@pytest.mark.parametrize("block", MARKED, ids=[b.name for b in MARKED])
def test_a_block_marked_notest_is_reported_skipped(block: Block) -> None:
    assert block.notest, f"{block.name}: notest needs a reason"
    pytest.skip(f"{block.name}: {block.notest}")


def test_the_collector_finds_blocks_and_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```python\nx = 1\n```\n\n```\nnot python\n```\n\n"
        '- item\n\n  ```python notest="needs a cluster"\n  y = 2\n  ```\n\n'
        "````python\nz = '```'\n````\n",
        encoding="utf-8",
    )
    blocks = python_blocks(page)
    assert [(b.line, b.code.strip(), b.notest) for b in blocks] == [
        (3, "x = 1", None),
        (13, "y = 2", "needs a cluster"),
        (17, "z = '```'", None),
    ]
    namespace: dict[str, Any] = {}
    run_blocks(blocks, namespace)
    assert namespace["x"] == 1 and "y" not in namespace
    bad = tmp_path / "bad.md"
    bad.write_text("```python\n>>> 1 + 1\n3\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match=r"bad\.md:1"):
        run_blocks(python_blocks(bad), {})
