"""The connector tree from ``features.json`` (untrusted: its size, nesting depth,
shapes and names are checked, and a connector we do not know is an error that
names it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from ._features import FeatureConnector, UnsupportedFeatureError, _dtype, _shape
from ._image_features import Image
from ._sequence_features import Dataset, FeaturesDict, Sequence, Video
from ._tensor_features import Audio, BBoxFeature, ClassLabel, Scalar, Tensor, Text

MAX_DEPTH = 32
MAX_FEATURES = 100_000
MAX_CLASSES = 10_000_000


_KNOWN_UNSUPPORTED = {
    "Translation",
    "TranslationVariableLanguages",
    "LabeledImage",
    "Optional",
}


def features_from_json(
    value: Any, _depth: int = 0, _count: Optional[list[int]] = None
) -> FeatureConnector:
    """Build the connector tree from the JSON of ``features.json`` (untrusted: checked)."""
    count = _count if _count is not None else [0]
    count[0] += 1
    if count[0] > MAX_FEATURES:
        raise ValueError(f"features.json: more than {MAX_FEATURES} features")
    if _depth > MAX_DEPTH:
        raise ValueError(f"features.json: features nested deeper than {MAX_DEPTH}")
    if not isinstance(value, Mapping):
        raise ValueError(f"features.json: a feature must be an object, got {type(value).__name__}")
    cls_name = value.get("pythonClassName", "")
    short = cls_name.rsplit(".", 1)[-1] if isinstance(cls_name, str) else ""
    where = f"feature connector {cls_name or '?'}"

    def body(name: str) -> Mapping[str, Any]:
        content = value.get(name, {})
        if not isinstance(content, Mapping):
            raise ValueError(f"features.json: {where}: {name!r} is not an object")
        return content

    if "featuresDict" in value or short == "FeaturesDict":
        feats = body("featuresDict").get("features", {})
        if not isinstance(feats, Mapping):
            raise ValueError("features.json: featuresDict.features is not an object")
        out: dict[str, FeatureConnector] = {}
        for name, sub in feats.items():
            _check_name(name)
            out[name] = features_from_json(sub, _depth + 1, count)
        return FeaturesDict(out)
    if short == "Video":
        v = body("video")
        return Video(
            shape=_shape(v.get("shape"), where),
            dtype=_dtype(v.get("dtype", "uint8"), where),
            encoding_format=_image_format(v.get("encodingFormat", "png"), where),
        )
    if short == "Dataset":
        s = body("sequence")
        if int(s.get("length", -1)) != -1:
            raise ValueError(f"features.json: {where}: a Dataset has no fixed length")
        inner = features_from_json(s.get("feature"), _depth + 1, count)
        if _holds_dataset(inner):
            raise UnsupportedFeatureError(
                f"{where}: a Dataset inside a Dataset (TFDS itself supports one level)"
            )
        return Dataset(inner)
    if short == "Sequence" or ("sequence" in value and not short):
        s = body("sequence")
        length = int(s.get("length", -1))
        return Sequence(
            features_from_json(s.get("feature"), _depth + 1, count),
            None if length == -1 else _dim(length, where),
        )
    if short in ("Image",) or ("image" in value and not short):
        im = body("image")
        dtype = _dtype(im.get("dtype", "uint8"), where)
        fmt = im.get("encodingFormat") or None
        if fmt is not None:
            fmt = _image_format(fmt, where)
        return Image(shape=_shape(im.get("shape"), where), dtype=dtype, encoding_format=fmt)
    if short == "ClassLabel" or ("classLabel" in value and not short):
        c = body("classLabel")
        n = int(c.get("numClasses", 0))
        if not 0 <= n <= MAX_CLASSES:
            raise ValueError(f"features.json: {where}: {n} classes")
        return ClassLabel(num_classes=n)
    if short == "Text" or ("text" in value and not short):
        return Text()
    if short == "BBoxFeature" or ("boundingBox" in value and not short):
        b = body("boundingBox")
        if _dtype(b.get("dtype", "float32"), where) != np.float32:
            raise UnsupportedFeatureError(f"{where}: bounding boxes of dtype {b.get('dtype')}")
        return BBoxFeature(bbox_format=str(b.get("bboxFormat", "REL_YXYX")))
    if short == "Audio":
        a = body("audio")
        if a.get("lazyDecode"):
            raise UnsupportedFeatureError(
                f"{where} with lazy_decode=True (stores the encoded {a.get('fileFormat') or 'audio'} "
                "file; decoding it needs ffmpeg): not supported"
            )
        enc = str(a.get("encoding", "none")).lower()
        return Audio(
            shape=_shape(a.get("shape"), where),
            dtype=_dtype(a.get("dtype", "int64"), where),
            sample_rate=int(a["sampleRate"]) if "sampleRate" in a else None,
            encoding=enc,
        )
    if short in ("Tensor", "Scalar") or ("tensor" in value and not short):
        t = body("tensor")
        if t.get("optional"):
            raise UnsupportedFeatureError(f"{where} with optional=True is not supported")
        cls = Scalar if short == "Scalar" else Tensor
        feature = cls(
            shape=_shape(t.get("shape"), where),
            dtype=_dtype(t.get("dtype"), where),
            encoding=str(t.get("encoding", "none")),
        )
        return feature
    shown = cls_name or ", ".join(sorted(k for k in value if isinstance(k, str))[:5])
    hint = " (known, not supported yet)" if short in _KNOWN_UNSUPPORTED else ""
    raise UnsupportedFeatureError(
        f"TFDS feature connector {shown!r}{hint} is not supported by tfrecord_lite.tfds; "
        "supported: FeaturesDict, Tensor, Scalar, ClassLabel, Text, Image, BBoxFeature, "
        "Sequence, Dataset, Video, Audio"
    )


def _holds_dataset(feature: FeatureConnector) -> bool:
    if isinstance(feature, Dataset):
        return True
    if isinstance(feature, FeaturesDict):
        return any(_holds_dataset(f) for f in feature.values())
    if isinstance(feature, Sequence):
        return _holds_dataset(feature.feature)
    return False


def _dim(n: int, where: str) -> int:
    if not 0 <= n <= 1 << 40:
        raise ValueError(f"features.json: {where}: bad length {n}")
    return n


def _image_format(fmt: Any, where: str) -> str:
    f = str(fmt).lower()
    if f not in ("png", "jpeg"):
        raise UnsupportedFeatureError(f"{where}: encoding_format {fmt!r}")
    return f


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not name or len(name) > 1000:
        raise ValueError(f"features.json: bad feature name {name!r}")
    if "/" in name or "\\" in name or "\x00" in name or name in (".", ".."):
        raise ValueError(f"features.json: feature name {name!r} may not contain '/', '\\' or NUL")
