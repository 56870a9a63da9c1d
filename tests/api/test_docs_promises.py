"""The documentation promises of this round, checked against the files and the package."""

from __future__ import annotations

import re
from pathlib import Path

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
