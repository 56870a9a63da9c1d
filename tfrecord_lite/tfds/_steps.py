"""The flat view of an episodic (RLDS) dataset: one element per step, for frame-level training.

An RLDS episode is one record whose ``steps`` feature is a ``tfds.features.Dataset``;
``as_dataset`` decodes it to a dict of arrays with the step as first axis.
:class:`EpisodeSteps` cuts such an episode into its steps, each tagged with the
episode's position and its own, and optionally with features of the episode
(``episode_metadata``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from .._examples import RaggedValue
from ._features import FeatureConnector
from ._sequence_features import Dataset, FeaturesDict

#: The keys :meth:`Builder.as_steps` adds to every step.
EPISODE_INDEX = "episode_index"
STEP_INDEX = "step_index"


def dataset_features(features: FeatureConnector) -> list[str]:
    """The names of the top-level features that are a ``tfds.features.Dataset``."""
    if not isinstance(features, FeaturesDict):
        return []
    return [name for name, f in features.items() if isinstance(f, Dataset)]


def holds_dataset(feature: FeatureConnector) -> bool:
    """Whether a ``Dataset`` feature is anywhere in the tree (its records are episodes)."""
    if isinstance(feature, Dataset):
        return True
    if isinstance(feature, FeaturesDict):
        return any(holds_dataset(f) for f in feature.values())
    return False


def steps_feature(features: FeatureConnector, steps: Optional[str], dataset: str) -> str:
    """The name of the Dataset feature to flatten: ``steps`` if given, else the only one."""
    found = dataset_features(features)
    if steps is not None:
        if steps not in found:
            raise ValueError(
                f"{dataset}: no Dataset feature {steps!r} (its Dataset features: "
                f"{', '.join(map(repr, found)) or 'none'})"
            )
        return steps
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError(
            f"{dataset} has no tfds.features.Dataset feature (RLDS 'steps'), so it has no "
            "steps to flatten; read its examples with as_dataset()"
        )
    raise ValueError(
        f"{dataset} has several Dataset features ({', '.join(map(repr, found))}): "
        "name the one to flatten with steps="
    )


def _check_keys(features: FeatureConnector, steps: str, episode_keys: Sequence[str]) -> None:
    assert isinstance(features, FeaturesDict)
    inner = features[steps]
    assert isinstance(inner, Dataset)
    step_names = list(inner.feature.keys()) if isinstance(inner.feature, FeaturesDict) else [steps]
    for name in (EPISODE_INDEX, STEP_INDEX):
        if name in step_names:
            raise ValueError(
                f"the steps of {steps!r} have a feature named {name!r}, the name as_steps "
                "gives the step's position; read the episodes with as_dataset() instead"
            )
    for key in episode_keys:
        if key not in features or key == steps:
            raise ValueError(
                f"episode_keys: {key!r} is not an episode feature (the episode's features: "
                f"{', '.join(repr(k) for k in features if k != steps)})"
            )
        if key in step_names or key in (EPISODE_INDEX, STEP_INDEX):
            raise ValueError(f"episode_keys: {key!r} is also the name of a step feature")


class EpisodeSteps:
    """``(episode_index, episode) -> [step, ...]``: picklable, for ``Dataset.map``."""

    def __init__(
        self, features: FeatureConnector, steps: str, episode_keys: Sequence[str] = ()
    ) -> None:
        _check_keys(features, steps, episode_keys)
        self.steps = steps
        self.episode_keys = tuple(episode_keys)

    def __call__(self, index: Any, episode: Mapping[str, Any]) -> list[dict[str, Any]]:
        value = episode[self.steps]
        if isinstance(value, Mapping):
            rows = _rows(value)
        else:  # a Dataset of one feature (not a dict): the step is under the Dataset's name
            rows = [{self.steps: v} for v in _rows(value)]
        extra = {k: episode[k] for k in self.episode_keys}
        i = np.int64(index)
        return [
            {EPISODE_INDEX: i, STEP_INDEX: np.int64(t), **row, **extra}
            for t, row in enumerate(rows)
        ]


def _rows(value: Any) -> list[Any]:
    """The steps of a stacked value: its slices along the first axis (nested dicts kept)."""
    if isinstance(value, Mapping):
        cols = {k: _rows(v) for k, v in value.items()}
        lengths = {len(c) for c in cols.values()}
        if len(lengths) > 1:
            raise ValueError(f"the step features have different lengths {sorted(lengths)}")
        n = lengths.pop() if lengths else 0
        return [{k: c[t] for k, c in cols.items()} for t in range(n)]
    if isinstance(value, RaggedValue):
        return [value[t] for t in range(len(value))]
    arr = np.asarray(value)
    if arr.dtype == object and arr.ndim == 1:
        return [bytes(x) if isinstance(x, (bytearray, memoryview)) else x for x in arr]
    return list(arr)
