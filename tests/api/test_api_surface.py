"""The public API survives every move inside the package.

``public_api.json`` lists every public name of every public module as it was before the
package was laid out in subpackages (``tfrecord_lite.__all__``, each namespace's and
integration's ``__all__`` or public attributes, the generated ``*_pb2`` modules). A name
may be added; none may disappear. The ``tfrecord-lite`` command's entry point is checked
the same way.
"""

from __future__ import annotations

import importlib
import json
from importlib import metadata
from pathlib import Path

import pytest

import tfrecord_lite

SNAPSHOT: dict[str, list[str]] = json.loads(
    (Path(__file__).with_name("public_api.json")).read_text(encoding="utf-8")
)


def _module(name: str) -> object:
    if name in ("tfrecord_lite.compat.v1", "tfrecord_lite.data.experimental"):
        parent, _, attr = name.rpartition(".")
        return getattr(importlib.import_module(parent), attr)
    return importlib.import_module(name)


@pytest.mark.parametrize("module", sorted(SNAPSHOT))
def test_every_public_name_is_still_there(module: str) -> None:
    if module == "tfrecord_lite.torch":
        pytest.importorskip("torch")  # not in make test-pythons' venvs
    mod = _module(module)
    missing = [name for name in SNAPSHOT[module] if not hasattr(mod, name)]
    assert not missing, f"{module} lost public names: {missing}"
    listed = getattr(mod, "__all__", None)
    if listed is not None:
        unlisted = sorted(set(SNAPSHOT[module]) - set(listed))
        assert not unlisted, f"{module}.__all__ no longer lists {unlisted}"


def test_the_snapshot_is_not_empty() -> None:
    assert len(SNAPSHOT["tfrecord_lite"]) > 80
    assert "TFRecordDataset" in SNAPSHOT["tfrecord_lite"]
    assert set(tfrecord_lite.__all__) >= set(SNAPSHOT["tfrecord_lite"])


def test_the_command_line_entry_point_resolves() -> None:
    points = [
        ep
        for dist in metadata.distributions()
        for ep in dist.entry_points
        if ep.group == "console_scripts" and ep.name == "tfrecord-lite"
    ]
    assert points, "no tfrecord-lite console script is installed"
    assert {ep.value for ep in points} == {"tfrecord_lite._cli:main"}
    assert callable(points[0].load())
