"""benchmarks/run.py rewrites RESULTS.md: the sections it writes are replaced, the
hand-written ones (the Threads section, measured by bench_threads.py) are kept verbatim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
run = pytest.importorskip("benchmarks.run", reason="the source tree's benchmarks/ is not here")


def _titles(text: str) -> list[str]:
    return [title for title, _ in run._sections(text)]


def test_every_section_the_report_writes_is_its_own() -> None:
    report = run.render(json.loads((ROOT / "benchmarks" / "results.json").read_text()))
    titles = _titles(report)
    assert "Method" in titles and len(titles) >= 8
    assert [t for t in titles if not run._owned(t)] == []


def test_rewriting_the_results_keeps_the_hand_written_sections(tmp_path: Path) -> None:
    results = ROOT / "benchmarks" / "RESULTS.md"
    before = results.read_text()
    threads = dict(run._sections(before)).get("Threads")
    assert threads is not None, "RESULTS.md has its Threads section"
    report = run.render(json.loads((ROOT / "benchmarks" / "results.json").read_text()))
    out = tmp_path / "RESULTS.md"
    out.write_text(before)
    run._write_report(out, report)
    after = out.read_text()
    assert after.startswith(report.rstrip("\n"))
    assert threads in after
    assert sorted(_titles(after)) == sorted(set(_titles(after)))  # no section twice
    run._write_report(out, report)  # again: the same file
    assert out.read_text() == after


def test_a_hand_written_section_is_kept_whole_with_its_code_blocks(tmp_path: Path) -> None:
    previous = (
        "# old report\n\n## Method\n\nold method\n\n## Notes\n\ntext\n\n```\n## not a heading\n"
        "```\n\n## Every variant\n\nold table\n\n## More notes\n\nend\n"
    )
    new = "# report\n\n## Every variant\n\nnew table\n\n## Method\n\nnew method\n"
    got = run.keep_hand_written(new, previous)
    assert got == (
        new + "\n## Notes\n\ntext\n\n```\n## not a heading\n```\n\n## More notes\n\nend\n"
    )
    assert run.keep_hand_written(new, None) == new
    assert "old" not in got
