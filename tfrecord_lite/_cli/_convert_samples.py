"""A record as a WebDataset sample: the files ``KEY.EXT`` that hold its features.

* An encoded image (a bytes feature of one value that starts like a JPEG, PNG, GIF,
  WebP, BMP or TIFF file) is kept byte for byte: ``KEY.jpg`` when the records hold one
  image feature (the convention ``.to_tuple("jpg", "json")`` expects), else
  ``KEY.FEATURE.jpg`` for each; a feature of several images (a TFDS episode's frames)
  is ``KEY.FEATURE.I.jpg``, the I-th of them.
* Every other feature goes into ``KEY.json`` under its name: one value as a scalar,
  several as a list; bytes as text (UTF-8).
* Numbers with more than :data:`JSON_MAX_VALUES` values, or floats JSON cannot hold
  (NaN, infinities), are ``KEY.FEATURE.npy`` (int64 or float32, as stored); bytes that
  are not UTF-8 text are ``KEY.FEATURE.bin`` (``KEY.FEATURE.I.bin`` for the I-th of
  several).
* A SequenceExample's feature lists go the same way, one step a row: numbers as a
  ``(steps, values)`` array when every step has as many values, else JSON lists of
  lists; an image per step as ``KEY.FEATURE.STEP.jpg``.

The key is the record's index, zero-padded (:data:`KEY_DIGITS`), or the value of a
feature (``--key``): one UTF-8 string or integer, a valid WebDataset key (no ``.``,
which separates the key from the extension).
"""

from __future__ import annotations

import io
import json
import math
import re
from typing import Any, Optional

import numpy as np

from .. import example_pb2
from .._decoding import sniff_image
from .._errors import ParseError

__all__ = ["JSON_MAX_VALUES", "KEY_DIGITS", "SampleMaker"]

#: Numeric features with more values than this are written as ``.npy`` arrays.
JSON_MAX_VALUES = 16
#: Digits of the default key (the record index).
KEY_DIGITS = 9

_IMAGE_EXT = {"JPEG": "jpg", "PNG": "png", "GIF": "gif", "WebP": "webp", "BMP": "bmp"}
_IMAGE_EXT["TIFF"] = "tiff"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_BAD_KEY = re.compile(r"(\A/)|(\.)|(\\)|(\A\Z)|(//)|(/\Z)|([\x00-\x1f])")

Files = list[tuple[str, bytes]]


def _part(name: str) -> str:
    """A feature name as a part of a file extension (``image/encoded`` -> ``image_encoded``)."""
    return _UNSAFE.sub("_", name) or "_"


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _image_ext(values: Any) -> Optional[str]:
    if len(values) != 1:
        return None
    found = sniff_image(values[0])
    return _IMAGE_EXT.get(found[0]) if found else None


def _texts(values: Any) -> Optional[list[str]]:
    try:
        return [bytes(v).decode("utf-8") for v in values]
    except UnicodeDecodeError:
        return None


def _one_or_list(values: list[Any]) -> Any:
    return values[0] if len(values) == 1 else values


def _floats(values: Any) -> Optional[list[float]]:
    """float32 values as the shortest decimals that read back as the same float32."""
    out = [float(str(np.float32(v))) for v in values]
    return None if any(math.isinf(v) or math.isnan(v) for v in out) else out


class SampleMaker:
    """Records to samples: ``(key, [(extension, bytes), ...])``."""

    def __init__(
        self, key_feature: Optional[str] = None, sequences: frozenset[str] = frozenset()
    ) -> None:
        self.key_feature = key_feature
        #: features that hold one value a step (a TFDS Sequence's or episode's): their
        #: images are always ``KEY.FEATURE.I.jpg``, however many steps a record has
        self.sequences = sequences
        #: the image feature written as ``KEY.jpg``: the only one of the first record
        #: that holds images (None: each is ``KEY.FEATURE.jpg``).
        self.primary: Optional[str] = None
        self._decided = False
        self._last_key: Optional[str] = None
        self._path = ""
        self._index = 0

    # ----------------------------------------------------------------- one record

    def make(self, data: bytes, number: int, path: str, index: int) -> tuple[str, Files]:
        """The sample of the ``number``-th record written (record ``index`` of ``path``)."""
        self._path, self._index = path, index
        try:
            message = example_pb2.SequenceExample.FromString(data)
        except Exception:
            raise self._error(
                "not a tf.train.Example or SequenceExample, so it cannot be written as a "
                "WebDataset sample; convert it to TFRecord or ArrayRecord instead, which "
                "keep the records' bytes"
            ) from None
        features = message.context.feature
        if not self._decided:
            self._decided = True
            images = [
                k
                for k in features
                if _image_ext(_bytes_of(features[k])) is not None and k not in self.sequences
            ]
            self.primary = images[0] if len(images) == 1 else None
        key = self._key(features, number)
        doc: dict[str, Any] = {}
        files: Files = []
        for name in sorted(features):
            self._feature(name, features[name], doc, files)
        for name in sorted(message.feature_lists.feature_list):
            self._feature_list(name, message.feature_lists.feature_list[name].feature, doc, files)
        seen: set[str] = set()
        for ext, _ in files:
            if ext in seen or ext == "json":
                raise self._error(
                    f"two features would both be written as {key}.{ext} (their names "
                    "differ only in characters a file extension cannot hold); rename one"
                )
            seen.add(ext)
        text = json.dumps(doc, ensure_ascii=False, sort_keys=True, allow_nan=False)
        files.append(("json", text.encode("utf-8")))
        return key, files

    def _error(self, message: str) -> ParseError:
        return ParseError(message, path=self._path, index=self._index)

    def _key(self, features: Any, number: int) -> str:
        if self.key_feature is None:
            return f"{number:0{KEY_DIGITS}d}"
        name = self.key_feature
        if name not in features:
            raise self._error(
                f"no feature {name!r} for the sample key (--key); the record's features: "
                f"{', '.join(sorted(features)) or 'none'}"
            )
        feature = features[name]
        kind = feature.WhichOneof("kind")
        values = list(getattr(feature, kind).value) if kind else []
        texts = _texts(values) if kind == "bytes_list" else [str(v) for v in values]
        if kind == "float_list" or texts is None or len(texts) != 1:
            raise self._error(
                f"the key feature {name!r} must hold one string or integer "
                f"(it holds {len(values)} {kind or 'values'})"
            )
        key = texts[0]
        if _BAD_KEY.search(key) or any(p == ".." for p in key.split("/")):
            raise self._error(
                f"key {key!r} (feature {name!r}) is not a WebDataset key: keys are names "
                "without '.', which separates the key from the extension"
            )
        if key == self._last_key:
            raise self._error(
                f"key {key!r} (feature {name!r}) is the previous record's too: WebDataset "
                "would merge the two samples; give each record its own key"
            )
        self._last_key = key
        return key

    # ----------------------------------------------------------------- the values

    def _feature(self, name: str, feature: Any, doc: dict[str, Any], files: Files) -> None:
        kind = feature.WhichOneof("kind")
        if kind is None:
            doc[name] = []
            return
        values = getattr(feature, kind).value
        if kind == "bytes_list":
            ext = _image_ext(values)
            if ext is not None and name not in self.sequences:
                files.append((ext if name == self.primary else f"{_part(name)}.{ext}", values[0]))
                return
            exts = [_image_ext(values[i : i + 1]) for i in range(len(values))]
            several = len(values) > 1 or name in self.sequences
            if several and all(exts):  # several images (a TFDS episode's frames)
                files.extend(
                    (f"{_part(name)}.{i}.{e}", v) for i, (e, v) in enumerate(zip(exts, values))
                )
                return
            texts = _texts(values)
            if texts is not None:
                doc[name] = _one_or_list(texts)
            elif len(values) == 1:
                files.append((f"{_part(name)}.bin", bytes(values[0])))
            else:
                files.extend((f"{_part(name)}.{i}.bin", bytes(v)) for i, v in enumerate(values))
            return
        if kind == "int64_list":
            if len(values) <= JSON_MAX_VALUES:
                doc[name] = _one_or_list(list(values))
            else:
                files.append((f"{_part(name)}.npy", _npy(np.array(values, np.int64))))
            return
        floats = _floats(values) if len(values) <= JSON_MAX_VALUES else None
        if floats is not None:
            doc[name] = _one_or_list(floats)
        else:
            files.append((f"{_part(name)}.npy", _npy(np.array(values, np.float32))))

    def _feature_list(self, name: str, steps: Any, doc: dict[str, Any], files: Files) -> None:
        kinds = {f.WhichOneof("kind") for f in steps} - {None}
        if len(kinds) > 1:
            raise self._error(f"feature list {name!r} mixes {' and '.join(sorted(kinds))} steps")
        kind = kinds.pop() if kinds else "int64_list"
        rows = [list(getattr(f, kind).value) for f in steps]
        part = _part(name)
        if kind == "bytes_list":
            exts = [_image_ext(r) for r in rows]
            if rows and all(exts):
                files.extend((f"{part}.{t}.{e}", r[0]) for t, (e, r) in enumerate(zip(exts, rows)))
                return
            texts = [_texts(r) for r in rows]
            if all(t is not None for t in texts):
                doc[name] = texts
                return
            files.extend(
                (f"{part}.{t}.{i}.bin", bytes(v))
                for t, r in enumerate(rows)
                for i, v in enumerate(r)
            )
            return
        dtype = np.int64 if kind == "int64_list" else np.float32
        n = sum(len(r) for r in rows)
        if n <= JSON_MAX_VALUES:
            cells = [r if kind == "int64_list" else _floats(r) for r in rows]
            if all(c is not None for c in cells):
                doc[name] = cells
                return
        if len({len(r) for r in rows}) <= 1:
            array = np.array(rows, dtype).reshape(len(rows), len(rows[0]) if rows else 0)
            files.append((f"{part}.npy", _npy(array)))
        else:  # ragged steps: each step's array
            files.extend((f"{part}.{t}.npy", _npy(np.array(r, dtype))) for t, r in enumerate(rows))


def _bytes_of(feature: Any) -> Any:
    return feature.bytes_list.value if feature.WhichOneof("kind") == "bytes_list" else []
