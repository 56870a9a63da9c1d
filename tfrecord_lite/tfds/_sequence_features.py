"""The container connectors: ``FeaturesDict`` (a dict of connectors), ``Sequence``
(a list of a connector, stacked), ``Dataset`` (a nested dataset, the ``steps`` of
RLDS episodes, stored as a sequence) and ``Video`` (a sequence of encoded frames).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Optional

import numpy as np

from ._features import FeatureConnector, Shape, _dtype_name, _shape_str
from ._image_features import Image


class FeaturesDict(FeatureConnector):
    """``tfds.features.FeaturesDict``: a dict of connectors (nested)."""

    tfds_class = "tensorflow_datasets.core.features.features_dict.FeaturesDict"

    def __init__(self, features: Mapping[str, FeatureConnector]) -> None:
        self._features = dict(features)

    def __getitem__(self, key: str) -> FeatureConnector:
        return self._features[key]

    def __contains__(self, key: object) -> bool:
        return key in self._features

    def __iter__(self) -> Iterator[str]:
        return iter(self._features)

    def __len__(self) -> int:
        return len(self._features)

    def keys(self) -> Any:
        """The feature names."""
        return self._features.keys()

    def items(self) -> Any:
        """``(name, connector)`` pairs."""
        return self._features.items()

    def values(self) -> Any:
        """The connectors."""
        return self._features.values()

    @property
    def shape(self) -> dict[str, Any]:
        """The decoded shapes, a dict by feature name."""
        return {k: f.shape for k, f in self._features.items()}

    @property
    def dtype(self) -> dict[str, Any]:
        """The decoded dtypes, a dict by feature name."""
        return {k: f.dtype for k, f in self._features.items()}

    def leaves(self, prefix: str) -> Iterator[tuple[str, FeatureConnector, Any]]:
        """``(key, leaf connector, serialized info)`` for every leaf, with ``/``-joined keys."""
        for name, feature in self._features.items():
            yield from feature.leaves(f"{prefix}/{name}" if prefix else name)

    def load_metadata(self, data_dir: str, name: str) -> None:
        """Read what TFDS saved beside ``features.json`` (class names)."""
        for key, feature in self._features.items():
            feature.load_metadata(data_dir, f"{name}-{key}" if name else key)

    def __repr__(self) -> str:
        return _dict_repr(type(self).__name__, self._features, 0)


def _dict_repr(title: str, features: Mapping[str, FeatureConnector], indent: int) -> str:
    pad = "    " * (indent + 1)
    lines = [f"{title}({{"]
    for k, f in features.items():
        if isinstance(f, FeaturesDict):
            inner = _dict_repr(type(f).__name__, f._features, indent + 1)
        elif isinstance(f, Dataset) and isinstance(f.feature, FeaturesDict):
            inner = _dict_repr(type(f).__name__, f.feature._features, indent + 1)
        else:
            inner = repr(f)
        lines.append(f"{pad}{k!r}: {inner},")
    lines.append("    " * indent + "})")
    return "\n".join(lines)


class Sequence(FeatureConnector):
    """``tfds.features.Sequence``: a variable (or fixed ``length``) list of a connector, stacked."""

    tfds_class = "tensorflow_datasets.core.features.sequence_feature.Sequence"

    def __init__(self, feature: FeatureConnector, length: Optional[int] = None) -> None:
        self.feature = feature
        self.length = length

    @property
    def shape(self) -> Any:
        """The item's shape with the sequence length in front."""
        return _map_shape(self.feature.shape, self.length)

    @property
    def dtype(self) -> Any:
        """The item's dtype."""
        return self.feature.dtype

    def __getitem__(self, key: str) -> FeatureConnector:
        if isinstance(self.feature, FeaturesDict):
            return self.feature[key]
        raise TypeError(f"{type(self).__name__} of {type(self.feature).__name__} has no keys")

    def leaves(self, prefix: str) -> Iterator[tuple[str, FeatureConnector, Any]]:
        """``(key, leaf connector, serialized info)`` for every leaf, with ``/``-joined keys."""
        for key, leaf, info in self.feature.leaves(prefix):
            yield key, leaf, _map_info(info, self.length)

    def load_metadata(self, data_dir: str, name: str) -> None:
        """Read what TFDS saved beside ``features.json`` (class names)."""
        self.feature.load_metadata(data_dir, name)

    def _repr_args(self) -> str:
        length = f", length={self.length}" if self.length is not None else ""
        return f"{self.feature!r}{length}"


def _map_shape(shape: Any, length: Optional[int]) -> Any:
    if isinstance(shape, dict):
        return {k: _map_shape(v, length) for k, v in shape.items()}
    return (length, *shape)


def _map_info(info: Any, length: Optional[int]) -> Any:
    if isinstance(info, dict):
        return {k: _map_info(v, length) for k, v in info.items()}
    return info.with_length(length)


class Dataset(Sequence):
    """``tfds.features.Dataset``: a nested dataset, such as the ``steps`` of an RLDS episode.

    TFDS stores it exactly as a ``Sequence`` of its feature (``steps/observation/image``
    holds one encoded image per step), and hands it out as a nested ``tf.data.Dataset``
    of steps. Here it decodes to what stacking those steps gives: the feature's nested
    dict with every leaf an array whose first axis is the step (images ``(T, H, W, C)``,
    text an object array of ``bytes``); an episode without steps has arrays of length 0.
    ``Builder.as_steps`` flattens the episodes into single steps.
    """

    tfds_class = "tensorflow_datasets.core.features.dataset_feature.Dataset"

    def __init__(self, feature: FeatureConnector) -> None:
        super().__init__(feature, length=None)

    def _repr_args(self) -> str:
        return repr(self.feature)


class Video(Sequence):
    """``tfds.features.Video``: a sequence of encoded frames (PNG or JPEG), ``(T, H, W, C)``."""

    tfds_class = "tensorflow_datasets.core.features.video_feature.Video"

    def __init__(
        self, *, shape: Shape, dtype: Any = np.uint8, encoding_format: str = "png"
    ) -> None:
        if len(shape) != 4:
            raise ValueError(f"Video: shape {_shape_str(tuple(shape))} is not (frames, h, w, c)")
        super().__init__(
            Image(shape=tuple(shape[1:]), dtype=dtype, encoding_format=encoding_format),
            length=shape[0],
        )
        self.encoding_format = encoding_format

    def _repr_args(self) -> str:
        return f"shape={_shape_str(self.shape)}, dtype={_dtype_name(self.dtype)}"
