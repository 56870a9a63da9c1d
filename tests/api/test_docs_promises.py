"""The documentation promises of this round, checked against the files and the package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tfrecord_lite as tfr

ROOT = Path(__file__).resolve().parents[2]


def test_write_examples_documents_its_extra_features() -> None:
    doc = tfr.write_examples.__doc__ or ""
    assert '"<key>/shape"' in doc and '"<key>/dtype"' in doc
    assert "see the module documentation" not in doc.lower()


def test_changelog_has_an_unreleased_section() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog")
    assert "## [Unreleased]" in text
    unreleased = text.split("## [Unreleased]", 1)[1].split("\n## ", 1)[0]
    for heading in ("### Added", "### Fixed"):
        assert heading in unreleased
    assert "python_io" in unreleased and "serialize_tensor" in unreleased


def test_readme_states_the_demo_venv_size() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    two = readme[readme.index("## Two commands") :]
    two = two[: two.index("\n## ", 5)]
    size = re.search(r"\*\*(\d+) MB\*\*", two)
    assert size is not None and int(size.group(1)) < 350
    assert ".[fast,image,jit]" in two


def test_empty_sequence_batch_is_a_documented_difference() -> None:
    context, lists, lengths = tfr.parse_sequence_example(
        [],
        {"c": tfr.FixedLenFeature([], tfr.int64)},
        {"s": tfr.FixedLenSequenceFeature([], tfr.int64)},
    )
    assert context["c"].shape == (0,) and lists["s"].shape == (0, 0) and lengths["s"].shape == (0,)
    for doc in ("docs/coming-from-tensorflow.md", "docs/tensorflow-behaviour.md"):
        text = " ".join((ROOT / doc).read_text(encoding="utf-8").split())
        assert "parse_sequence_example" in text and "Inconsistent max number of elements" in text


def _ratios(title_words: str, table: str) -> list[str]:
    """The "ours / TF" ratios of the committed table's rows whose title holds these words."""
    out = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 7 and title_words in cells[0] and cells[5].endswith("x"):
            out.append(cells[5])
    return out


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_speed_bullet_is_the_committed_table(page: str) -> None:
    """The README and the docs' home page quote one source: benchmarks/RESULTS.md."""
    readme = (ROOT / page).read_text(encoding="utf-8")
    bullet = readme[readme.index("- **Fast**") :]
    bullet = " ".join(bullet[: bullet.index("\n- **", 3)].split())
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    table = results[: results.index("\n## ", results.index("| Task |"))]
    quoted = re.findall(r"\d+\.\d+x", bullet)
    every = [c for line in table.splitlines() for c in re.findall(r"\| (\d+\.\d+x) \|", line)]
    assert quoted and set(quoted) <= set(every), set(quoted) - set(every)
    # each pair the bullet names, in the table's order (batch 1024, then 256)
    for words, name in [
        ("MNIST-like read + parse", "MNIST-like"),
        ("ImageNet-like (~110 KB) read + parse", "ImageNet-like"),
        ("Tabular", "fixed-layout tabular"),
        ("Taxi-like", "taxi-like GZIP shards"),
        ("Transformed", "per-record key order"),
        ("Real TFX taxi", "the real TFX taxi shards"),
        ("SequenceExample", "SequenceExamples"),
    ]:
        pair = " / ".join(_ratios(words, table))
        assert f"{name} {pair}" in bullet, (name, pair)
    assert f"raw reads {_ratios('MNIST raw records', table)[0]}" in bullet
    assert f"from NumPy {_ratios('MNIST write', table)[0]}" in bullet
    assert f"parse_single_example)` {_ratios('TF tutorial', table)[0]}" in bullet
