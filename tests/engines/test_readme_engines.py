"""The README's Spark, Daft and Hugging Face block runs as written, on a real Spark session.

tests/docs/test_code_blocks.py reports that block as skipped in ``make test`` (no PySpark,
Daft or datasets there); its ``notest`` reason names ``make test-engines``, and this test
runs it: in a directory holding ``data/train-*.tfrecord``, with the suite's Spark session
as ``spark``. Each engine must write shards that hold every record of the input once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _docblocks import ROOT, python_blocks

import tfrecord_lite as tfr


def _engine_blocks() -> list[Any]:
    blocks = python_blocks(ROOT / "README.md")
    return [b for b in blocks if b.notest and "make test-engines" in b.notest]


def test_the_readme_has_one_engine_block() -> None:
    blocks = _engine_blocks()
    assert len(blocks) == 1, [b.name for b in blocks]
    for name in ("tfspark", "tfdaft", "tfhf"):
        assert name in blocks[0].code


def test_the_readme_engine_block_runs(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (block,) = _engine_blocks()
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    (tmp_path / "data").mkdir()
    rng = np.random.default_rng(0)
    ids = np.arange(120)
    for i in range(3):
        part = slice(i * 40, (i + 1) * 40)
        tfr.write_examples(
            f"{tmp_path}/data/train-{i:05d}-of-00003.tfrecord",
            {"id": ids[part], "x": rng.random((40, 2)).astype(np.float32)},
        )
    # Spark's Python workers resolve a relative path against the directory Spark started in
    # (this suite's session started before the test changed directory): the block's
    # relative paths are made absolute for Spark, as docs/frameworks.md tells users to do.
    code = block.code.replace('"data/', f'"{tmp_path}/data/').replace('"out/', f'"{tmp_path}/out/')
    assert code != block.code
    exec(compile(code, block.name, "exec"), {"spark": spark, "tfr": tfr})
    for engine in ("spark", "daft", "hf"):
        shards = sorted(os.listdir(tmp_path / "out" / engine))
        assert shards and all(s.startswith("part-") for s in shards), (engine, shards)
        seen = []
        for s in shards:
            for rec in tfr.tf_record_iterator(str(tmp_path / "out" / engine / s)):
                seen.append(
                    int(
                        tfr.parse_single_example(rec, {"id": tfr.VarLenFeature(tfr.int64)})[
                            "id"
                        ].values[0]
                    )
                )
        assert sorted(seen) == ids.tolist(), engine  # every record exactly once
