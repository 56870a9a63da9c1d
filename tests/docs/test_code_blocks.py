"""Every ```python block of README.md and docs/ runs, so the documentation cannot rot.

Each Markdown file's blocks run in order in one namespace (a later block may use what an
earlier one defined, as a reader would), in a fresh temporary directory that holds the
small files the examples read (:func:`make_example_files`: ``train.tfrecord``,
``data/train-*.tfrecord``...). A block in ``>>>`` form runs as a doctest: its printed
results are compared.

A block that cannot run here (it needs a cluster, a network service, TensorFlow or a
prepared TFDS directory) says so in its info string, ```python notest="needs a Ray
cluster"```; it is reported as a skipped test with that reason, and the blocks after it
do not rely on it.
"""

from __future__ import annotations

import doctest
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest

import tfrecord_lite as tfr

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SKIP_FILES: set[Path] = set()

_FENCE = re.compile(r"^(?P<fence>`{3,})(?P<info>[^`]*)$")
_NOTEST = re.compile(r'\bnotest="(?P<reason>[^"]*)"')


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    code: str
    notest: Optional[str]  # the reason, for a block marked notest="..."

    @property
    def name(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of a Markdown file, in order (indented ones too)."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        stripped = lines[i].lstrip()
        indent = len(lines[i]) - len(stripped)
        m = _FENCE.match(stripped)
        if not m:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").strip()
        j = i + 1
        while j < len(lines) and not lines[j].lstrip().startswith(fence):
            j += 1
        if info.split(" ", 1)[0] in ("python", "py", "pycon"):
            body = "\n".join(line[indent:] for line in lines[i + 1 : j])
            notest = _NOTEST.search(info)
            blocks.append(
                Block(
                    path, i + 1, textwrap.dedent(body), notest.group("reason") if notest else None
                )
            )
        i = j + 1
    return blocks


def make_example_files(directory: Path) -> None:
    """The files the examples read: MNIST-like Examples (``image_raw``/``image`` bytes
    of 28x28 uint8, ``label`` int64) under the names the pages use."""
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


#: Blocks that do not run here yet, by (file, first two lines of code), with the error they
#: give: each is reported as a skipped test with that error, and must either be made to
#: run (example files, or an explicit notest marker for what needs a cluster, a network
#: service, TensorFlow or a TFDS directory) or stay listed. An entry whose block is gone
#: fails the run.
NOT_YET_RUNNABLE: dict[tuple[str, str], str] = {
    (
        "docs/tf1-queues.md",
        'features_spec = { / "label": tfr.FixedLenFeature([], tfr.int64),',
    ): "reads fruit.tfrecords, which the block before it writes",
    (
        "README.md",
        'features = { / "image": tfr.FixedLenFeature([], tfr.string),',
    ): "[Errno 2] no files match the pattern: 'data/train-?????-of-00016'",
    (
        "README.md",
        'so = {"client_kwargs": {"endpoint_url": "https://s3.example.com"}}   # optional / ds = tfr.TFRecordDataset("s3://bucket/taxi/data_tfrecord@12.gz",   # -00000-of-00012.gz ...',
    ): "needs an S3 bucket",
    (
        "README.md",
        "import tfrecord_lite as tfr / import tfrecord_lite.torch as tfrt",
    ): "[Errno 2] shard spec: no shard of data/train-NNNNN-of-00016 found (first missing",
    (
        "README.md",
        'ds = tfrt.MapDataset(["train-0.tfrecord", "train-1.tfrecord"], features, transform) / loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=4, collate_fn=tfrt.collate)',
    ): "name 'transform' is not defined",
    (
        "README.md",
        'from tfrecord_lite import arrow as tfa / table = tfa.read_table("train-*.tfrecord")          # schema inferred; or features=...',
    ): "needs pandas, not in the test venv",
    (
        "README.md",
        "import ray / from tfrecord_lite import ray as tfray",
    ): "needs ray, not in the test venv",
    (
        "README.md",
        'from tfrecord_lite import dask as tfdask / df = tfdask.read_tfrecords("data/train-*.tfrecord")',
    ): "needs the dask extra",
    (
        "README.md",
        'import tfrecord_lite.tfds as tfds / builder = tfds.builder_from_directory("~/tensorflow_datasets/mnist/3.0.1")',
    ): "needs a prepared TFDS directory",
    ("README.md", "import grain / import numpy as np"): "needs grain, not in the test venv",
    (
        "docs/cloud.md",
        'so = {"client_kwargs": {"endpoint_url": "https://s3.example.com"}}   # optional / ds = tfr.TFRecordDataset("s3://bucket/taxi/data_tfrecord@12.gz",   # -00000-of-00012.gz ...',
    ): "name 'tfr' is not defined",
    (
        "docs/datasets.md",
        "import tfrecord_lite as tfr / features = {",
    ): "[Errno 2] no files match the pattern: 'data/train-?????-of-00016'",
    (
        "docs/datasets.md",
        'with tfr.ShardedWriter("out/train", num_shards=16, compression="GZIP", write_index=True) as w: / for example in examples:',
    ): "[Errno 2] No such file or directory: 'out/.train-00000.inprogress'",
    (
        "docs/datasets.md",
        "import tfrecord_lite as tfr / import tfrecord_lite.torch as tfrt",
    ): "[Errno 2] shard spec: no shard of data/train-NNNNN-of-00016 found (first missing",
    (
        "docs/datasets.md",
        'ds = tfrt.MapDataset(["train-0.tfrecord", "train-1.tfrecord"], features, transform) / loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=4, collate_fn=tfrt.collate)',
    ): "name 'transform' is not defined",
    (
        "docs/pipelines.md",
        'features = { / "image": tfr.FixedLenFeature([], tfr.string),',
    ): "name 'tfr' is not defined",
    (
        "docs/pytorch-jax.md",
        "import tfrecord_lite as tfr / import tfrecord_lite.torch as tfrt",
    ): "[Errno 2] shard spec: no shard of data/train-NNNNN-of-00016 found (first missing",
    (
        "docs/pytorch-jax.md",
        'ds = tfrt.MapDataset(["train-0.tfrecord", "train-1.tfrecord"], features, transform) / loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=4, collate_fn=tfrt.collate)',
    ): "name 'features' is not defined",
    (
        "docs/pytorch-jax.md",
        "import grain / import numpy as np",
    ): "needs grain, not in the test venv",
    (
        "docs/scale-out.md",
        'from tfrecord_lite import arrow as tfa / table = tfa.read_table("train-*.tfrecord")          # schema inferred; or features=...',
    ): "needs pandas, not in the test venv",
    (
        "docs/scale-out.md",
        "import ray / from tfrecord_lite import ray as tfray",
    ): "needs ray, not in the test venv",
    (
        "docs/scale-out.md",
        'from tfrecord_lite import dask as tfdask / df = tfdask.read_tfrecords("data/train-*.tfrecord")',
    ): "needs the dask extra",
    (
        "docs/tensorflow-behaviour.md",
        'import os; os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3" / import tensorflow as tf',
    ): "needs tensorflow, not in the test venv",
    (
        "docs/tf1-queues.md",
        "import os / import numpy as np",
    ): "[Errno 2] No such file or directory: 'fruit'",
    (
        "docs/tf1-queues.md",
        'filename_queue = tf.train.string_input_producer(["fruit.tfrecords"]) / reader = tf.TFRecordReader()',
    ): "name 'tf' is not defined",
    (
        "docs/tf1-queues.md",
        "img_batch, label_batch = tf.train.shuffle_batch( / [img, label], batch_size=30, capacity=2000, min_after_dequeue=1000)",
    ): "name 'tf' is not defined",
    (
        "docs/tf1-queues.md",
        "def parse(serialized_example): / features = tfr.parse_single_example(serialized_example, features_spec)",
    ): "name 'steps' is not defined",
    (
        "docs/tf1-queues.md",
        "for batch in tfr.data.TFRecordDataset(files).shuffle(1000).batch(30): / parsed = tfr.parse_example(batch, features_spec)",
    ): "name 'files' is not defined",
    (
        "docs/tfds.md",
        'import tfrecord_lite.tfds as tfds / builder = tfds.builder_from_directory("~/tensorflow_datasets/mnist/3.0.1")',
    ): "needs a prepared TFDS directory",
    ("docs/tfds.md", "import grain / import numpy as np"): "needs grain, not in the test venv",
}


def _first_line(block: Block) -> str:
    """The block's first two lines of code, stripped, joined by " / " (its key)."""
    return " / ".join([line.strip() for line in block.code.splitlines() if line.strip()][:2])


def _pending(block: Block) -> Optional[str]:
    return NOT_YET_RUNNABLE.get((str(block.path.relative_to(ROOT)), _first_line(block)))


ALL = {path: python_blocks(path) for path in FILES if path not in SKIP_FILES}
RUNNABLE = [p for p, blocks in ALL.items() if any(b.notest is None for b in blocks)]
for _blocks in ALL.values():
    for _b in _blocks:
        _reason = _pending(_b)
        if _reason is not None and _b.notest is None:
            _b.notest = f"not yet runnable here ({_reason})"
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
    # every page may use `tfr` and `np`, as the README's first block imports them
    namespace: dict[str, Any] = {"__name__": "__docs__", "tfr": tfr, "np": np}
    run_blocks(ALL[path], namespace)


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
