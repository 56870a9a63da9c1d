"""Records to examples, decoded as ``builder.as_dataset`` decodes them.

Each leaf of the connector tree is parsed as TFDS's ``example_parser`` parses it:

* every dimension known: ``FixedLenFeature(shape)``;
* exactly one unknown dimension: ``FixedLenSequenceFeature(known dims)``, reshaped
  with ``-1`` in its place;
* sequence rank > 1 (a ``Sequence`` of ``Sequence``): ``<key>/ragged_flat_values``
  and ``<key>/ragged_row_lengths_<k>`` -> a :class:`~tfrecord_lite.RaggedValue`;

then cast from the wire type (int64 / float32 / bytes) to the feature's dtype, and
decoded by the leaf connector (images, encoded tensors). :class:`ExampleDecoder`
does it for a batch of records (one vectorized ``parse_example``) or for one record
(through the protobuf message, the random-access path); ``_Decode`` adds
``decoders=`` (``SkipDecoding``) and ``as_supervised``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional

import numpy as np

from .._errors import ParseError
from .._examples import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RaggedValue,
    compile_features,
    parse_example,
    parse_single_example,
)
from .._files import TFRecordFile
from ._dataset_info import DatasetInfo
from ._features import FeatureConnector, TensorInfo, UnsupportedFeatureError, _shape_str, _wire
from ._frames import decode_all
from ._sequence_features import Dataset, FeaturesDict


def _parse_specs(key: str, info: TensorInfo) -> dict[str, Any]:
    """The tfrecord_lite feature specs TFDS's example parser uses for one leaf."""
    wire = _wire(info.dtype, key)
    shape = info.shape
    if all(d is not None for d in shape):
        return {key: FixedLenFeature(list(shape), wire)}
    if shape.count(None) == 1:
        known = [d for d in shape if d is not None]
        return {key: FixedLenSequenceFeature(known, wire, allow_missing=True)}
    if info.sequence_rank > 1:
        specs: dict[str, Any] = {
            f"{key}/ragged_row_lengths_{k}": FixedLenSequenceFeature(
                [], "int64", allow_missing=True
            )
            for k in range(info.sequence_rank - 1)
        }
        rest = shape[info.sequence_rank :]
        if any(d is None for d in rest):
            raise UnsupportedFeatureError(
                f"feature {key!r}: ragged values with unknown inner dimensions {_shape_str(shape)}"
            )
        specs[f"{key}/ragged_flat_values"] = FixedLenSequenceFeature(
            list(rest),
            wire,
            allow_missing=True,
        )
        return specs
    raise UnsupportedFeatureError(
        f"feature {key!r}: shape {_shape_str(shape)} has several unknown dimensions, which "
        "TFDS cannot store without encoding='zlib' or 'bytes'"
    )


def _cast(value: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """tf.cast from the wire dtype (int64/float32/object) to the feature's dtype."""
    if value.dtype == dtype:
        return value
    if dtype == np.bool_:
        return np.asarray(value != 0)
    return value.astype(dtype)


def _deserialize(key: str, parsed: Mapping[str, Any], info: TensorInfo) -> Any:
    """The parsed wire value(s) of one leaf -> TFDS's tensor (before the connector decodes it)."""
    if info.sequence_rank > 1:
        flat = np.asarray(parsed[f"{key}/ragged_flat_values"])
        rest = [int(d) for d in info.shape[info.sequence_rank :] if d is not None]
        try:
            flat = _cast(flat.reshape([-1, *rest]), info.dtype)
        except ValueError:
            raise ParseError(
                f"feature {key!r}: {flat.size} ragged values do not fit rows of {rest}", key=key
            ) from None
        lengths = [
            np.asarray(parsed[f"{key}/ragged_row_lengths_{k}"], dtype=np.int64)
            for k in range(info.sequence_rank - 1)
        ]
        return _ragged(key, flat, lengths)
    raw = parsed[key]
    if isinstance(raw, bytes):  # a scalar string (np.asarray would make it an "S" array)
        value = np.empty((), dtype=object)
        value[()] = raw
    else:
        value = np.asarray(raw)
    shape = [-1 if d is None else d for d in info.shape]
    if shape != list(value.shape):
        try:
            value = value.reshape(shape)
        except ValueError:
            raise ParseError(
                f"feature {key!r}: {value.size} values do not fit shape {_shape_str(info.shape)}",
                key=key,
            ) from None
    return _cast(value, info.dtype)


def _ragged(key: str, flat: np.ndarray, lengths: list[np.ndarray]) -> RaggedValue:
    """``tf.RaggedTensor.from_nested_row_lengths`` with the checks TensorFlow makes."""
    splits_list = []
    expected = None
    for k, row_lengths in enumerate(lengths):
        if (row_lengths < 0).any():
            raise ParseError(f"feature {key!r}: negative ragged row length", key=key)
        if expected is not None and len(row_lengths) != expected:
            raise ParseError(
                f"feature {key!r}: ragged_row_lengths_{k} has {len(row_lengths)} rows, "
                f"the level above holds {expected}",
                key=key,
            )
        splits = np.zeros(len(row_lengths) + 1, np.int64)
        np.cumsum(row_lengths, out=splits[1:])
        expected = int(splits[-1])
        splits_list.append(splits)
    if expected is not None and expected != len(flat):
        raise ParseError(
            f"feature {key!r}: the ragged row lengths add up to {expected} values, "
            f"the record holds {len(flat)}",
            key=key,
        )
    value: Any = flat
    for splits in reversed(splits_list):
        value = RaggedValue(value, splits)
    return value  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- the decoder


class Leaf:
    """One flat leaf of a connector tree: where its value lives and how to decode it."""

    __slots__ = ("connector", "fixed", "info", "key", "path", "rank", "scalar")

    def __init__(self, key: str, connector: FeatureConnector, info: Any) -> None:
        self.key = key
        self.path = tuple(key.split("/"))
        self.connector = connector
        self.info = info
        ranks = {i.sequence_rank for i in _infos(info)}
        if len(ranks) != 1:
            raise UnsupportedFeatureError(f"feature {key!r}: mixed sequence ranks")
        self.rank = ranks.pop()
        #: One serialized tensor of a fully known shape, decoded one value at a time: whole
        #: batch columns can be reshaped and cast at once (the fast path).
        self.fixed = (
            isinstance(info, TensorInfo)
            and all(d is not None for d in info.shape)
            and (self.rank == 0 or not connector.needs_decoding)
        )
        #: A scalar stored as it is returned (int64, float32, string): read straight from
        #: the protobuf message on the random-access path.
        self.scalar: Optional[str] = None
        if (
            self.fixed
            and info.shape == ()
            and not connector.needs_decoding
            and info.dtype.name in ("int64", "float32", "object")
        ):
            self.scalar = "string" if info.dtype == np.object_ else info.dtype.name


def _infos(info: Any) -> list[TensorInfo]:
    if isinstance(info, dict):
        return [i for v in info.values() for i in _infos(v)]
    return [info]


class ExampleDecoder:
    """Parse a TFDS record and decode every feature, as ``builder.as_dataset`` does."""

    def __init__(self, features: FeatureConnector, skip_decoding: frozenset[str] = frozenset()):
        self.features = features
        self.leaves = [Leaf(k, c, i) for k, c, i in features.leaves("")]
        self.skip = skip_decoding
        specs: dict[str, Any] = {}
        for leaf in self.leaves:
            if isinstance(leaf.info, dict):
                for sub, info in leaf.info.items():
                    specs.update(_parse_specs(f"{leaf.key}/{sub}", info))
            else:
                specs.update(_parse_specs(leaf.key, leaf.info))
        #: TFDS's own specs (``parse_single_example`` with them is the reference path).
        self.specs = specs
        # Each serialized key as (key, wire kind, shape if fixed else None). Batches are
        # parsed with FixedLenFeature / RaggedFeature (per-record lengths kept), then
        # reshaped per record as TFDS's FixedLenSequenceFeature + reshape would.
        self._keys: list[tuple[str, str, Optional[tuple[int, ...]]]] = []
        batch: dict[str, Any] = {}
        for key, spec in specs.items():
            wire = _WIRE_OF[getattr(spec.dtype, "name", spec.dtype)]
            if isinstance(spec, FixedLenFeature):
                shape = tuple(int(d) for d in spec.shape)
                self._keys.append((key, wire, shape))
                batch[key] = FixedLenFeature(list(shape), wire)
            else:
                self._keys.append((key, wire, None))
                batch[key] = RaggedFeature(wire)
        #: The batch specs compiled once: every batch parses with this plan, unchecked.
        self.plan = compile_features(batch)
        #: The keys of the nested datasets (RLDS ``steps``): all their leaves hold one
        #: value per step, which is checked (TFDS cannot slice them into steps either).
        self.datasets = _dataset_keys(features, "")
        self._key_info = {key: (wire, shape is not None) for key, wire, shape in self._keys}

    def decode_batch(self, records: list[bytes]) -> list[dict[str, Any]]:
        """Decode many records with one vectorized ``parse_example`` (the streaming path)."""
        n = len(records)
        if not n:
            return []
        cols: dict[str, Any] = parse_example(records, self.plan)
        slow = [leaf for leaf in self.leaves if not leaf.fixed]
        rows: dict[str, list[Any]] = {}
        for key, _, shape in self._keys if slow else ():
            col = cols[key]
            if shape is not None:
                rows[key] = list(col)
            else:
                flat_values = np.asarray(col.values)
                splits = np.asarray(col.row_splits).tolist()
                rows[key] = [flat_values[splits[j] : splits[j + 1]] for j in range(n)]
        slow_values: dict[str, list[Any]] = {leaf.key: [] for leaf in slow}
        for j in range(n if slow else 0):
            parsed = {k: v[j] for k, v in rows.items()}
            for leaf in slow:
                slow_values[leaf.key].append(self._finish(leaf, parsed))
        # Final values per leaf: whole columns at once where the shape is fixed.
        finals: list[tuple[tuple[str, ...], list[Any]]] = []
        values: list[Any]
        for leaf in self.leaves:
            if leaf.fixed:
                info = leaf.info
                column = _cast(np.asarray(cols[leaf.key]).reshape((n, *info.shape)), info.dtype)
                values = list(column)
                if leaf.key not in self.skip and leaf.connector.needs_decoding:
                    with _naming(leaf.key):
                        values = [_to_numpy(leaf.connector.decode(v)) for v in values]
            else:
                values = slow_values[leaf.key]
            finals.append((leaf.path, values))
        out = []
        flat = all(len(path) == 1 for path, _ in finals)
        for j in range(n):
            if flat:
                out.append({path[0]: values[j] for path, values in finals})
            else:
                ex: dict[str, Any] = {}
                for path, values in finals:
                    _put(ex, path, values[j])
                out.append(ex)
        for ex in out if self.datasets else ():
            _check_steps(ex, self.datasets)
        return out

    def _finish(self, leaf: Leaf, parsed: Mapping[str, Any]) -> Any:
        if isinstance(leaf.info, dict):
            value: Any = {
                sub: _deserialize(f"{leaf.key}/{sub}", parsed, info)
                for sub, info in leaf.info.items()
            }
        else:
            value = _deserialize(leaf.key, parsed, leaf.info)
        if leaf.key not in self.skip and leaf.connector.needs_decoding:
            with _naming(leaf.key):
                value = _decode_ranked(leaf.connector, value, leaf.rank)
        return _to_numpy(value)

    def decode_one(self, record: bytes) -> dict[str, Any]:
        """Decode one record through the protobuf runtime (the random-access path)."""
        from google.protobuf.message import DecodeError

        from ..example_pb2 import Example

        try:
            fmap = Example.FromString(record).features.feature
        except DecodeError as err:
            raise ParseError(f"not a tf.train.Example: {err}") from None
        out: dict[str, Any] = {}
        parsed: Optional[_LazyValues] = None
        for leaf in self.leaves:
            if leaf.scalar is not None:
                value = _proto_scalar(fmap, leaf.key, leaf.scalar)
            else:
                if parsed is None:
                    parsed = _LazyValues(fmap, self._key_info)
                value = self._finish(leaf, parsed)
            if len(leaf.path) == 1:
                out[leaf.key] = value
            else:
                _put(out, leaf.path, value)
        if self.datasets:
            _check_steps(out, self.datasets)
        return out

    def decode_parsed(self, parsed: Mapping[str, Any]) -> dict[str, Any]:
        """From ``parse_single_example(record, self.specs)`` to the nested example."""
        out: dict[str, Any] = {}
        for leaf in self.leaves:
            _put(out, leaf.path, self._finish(leaf, parsed))
        if self.datasets:
            _check_steps(out, self.datasets)
        return out


def _dataset_keys(feature: FeatureConnector, prefix: str) -> list[str]:
    """The ``/``-joined keys of the ``Dataset`` connectors in a tree."""
    if isinstance(feature, Dataset):
        return [prefix]
    if isinstance(feature, FeaturesDict):
        return [
            key
            for name, f in feature.items()
            for key in _dataset_keys(f, f"{prefix}/{name}" if prefix else name)
        ]
    return []


def _check_steps(example: Mapping[str, Any], keys: list[str]) -> None:
    """:class:`ParseError` unless every leaf of each nested dataset has one value per step."""
    for key in keys:
        value: Any = example
        for part in key.split("/"):
            value = value[part]
        lengths: dict[int, str] = {}
        for name, leaf in _named_leaves(value, key):
            lengths.setdefault(len(leaf), name)
        if len(lengths) > 1:
            shown = ", ".join(f"{name} has {n}" for n, name in sorted(lengths.items()))
            raise ParseError(
                f"feature {key!r}: its features hold different numbers of steps ({shown}); "
                "every step feature of a Dataset has one value per step",
                key=key,
            )


def _named_leaves(value: Any, key: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _named_leaves(v, f"{key}/{k}")
    else:
        yield key, value


_WIRE_OF = {"int64": "int64", "float32": "float32", "string": "string"}
_LIST_OF = {"int64": "int64_list", "float32": "float_list", "string": "bytes_list"}
_NP_OF = {"int64": np.int64, "float32": np.float32}


def _proto_values(fmap: Any, key: str, wire: str, required: bool) -> np.ndarray:
    """One feature of a parsed ``Example`` as a flat array, as TensorFlow's parser reads it."""
    if key not in fmap:
        if required:
            raise ParseError(f"feature {key!r} is required but missing from the record", key=key)
        return np.zeros(0, dtype=object if wire == "string" else _NP_OF[wire])
    feature = fmap[key]
    kind = feature.WhichOneof("kind")
    if kind is None:
        return np.zeros(0, dtype=object if wire == "string" else _NP_OF[wire])
    if kind != _LIST_OF[wire]:
        raise ParseError(
            f"feature {key!r}: the record holds a {kind}, the dataset declares {wire} "
            f"({_LIST_OF[wire]})",
            key=key,
        )
    values = getattr(feature, kind).value
    if wire == "string":
        out = np.empty(len(values), dtype=object)
        out[:] = list(values)
        return out
    return np.array(values, dtype=_NP_OF[wire])


class _LazyValues(dict):  # type: ignore[type-arg]
    """Feature values of one parsed ``Example``, converted to arrays when first asked for."""

    def __init__(self, fmap: Any, key_info: Mapping[str, tuple[str, bool]]) -> None:
        super().__init__()
        self.fmap = fmap
        self.key_info = key_info

    def __missing__(self, key: str) -> np.ndarray:
        wire, required = self.key_info[key]
        value = self[key] = _proto_values(self.fmap, key, wire, required)
        return value


def _proto_scalar(fmap: Any, key: str, wire: str) -> Any:
    """A one-value feature as ``tfds.as_numpy`` returns it: ``np.int64``, ``np.float32`` or ``bytes``."""
    if key in fmap:
        feature = fmap[key]
        kind = feature.WhichOneof("kind")
        if kind == _LIST_OF[wire]:
            values = getattr(feature, kind).value
            if len(values) == 1:
                v = values[0]
                return v if wire == "string" else _NP_OF[wire](v)
    # missing, wrong kind or count: the general path raises the error
    arr = _proto_values(fmap, key, wire, True)
    raise ParseError(f"feature {key!r}: {arr.size} values do not fit shape ()", key=key)


def _decode_ranked(connector: FeatureConnector, value: Any, rank: int) -> Any:
    if rank == 0:
        return connector.decode(value)
    if rank == 1:
        items = _unstack(value)
        decoded = decode_all(connector, items)
        if not decoded:
            shape = tuple(0 if d is None else d for d in connector.shape)
            return np.zeros((0, *shape), dtype=connector.dtype)
        try:
            return np.stack(decoded)
        except ValueError:
            raise ParseError(
                "the items of a Sequence decode to different shapes "
                f"({sorted({d.shape for d in decoded})}); TFDS cannot batch them either"
            ) from None
    # ragged: decode the flat values
    if not isinstance(value, RaggedValue):
        raise ParseError("expected a ragged value")
    return _map_flat(value, connector)


def _map_flat(value: Any, connector: FeatureConnector) -> Any:
    if isinstance(value, RaggedValue):
        return RaggedValue(_map_flat(value.values, connector), value.row_splits)
    decoded = decode_all(connector, list(value))
    if not decoded:
        shape = tuple(0 if d is None else d for d in connector.shape)
        return np.zeros((0, *shape), dtype=connector.dtype)
    return np.stack(decoded)


def _unstack(value: Any) -> list[Any]:
    if isinstance(value, dict):
        keys = list(value)
        parts = [_unstack(value[k]) for k in keys]
        return [dict(zip(keys, row)) for row in zip(*parts)]
    return list(value)


def _to_numpy(value: Any) -> Any:
    """0-d arrays become what ``tfds.as_numpy`` yields: NumPy scalars, or ``bytes``."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        item = value[()]
        if isinstance(item, (bytes, bytearray, memoryview)):
            return bytes(item)
        if isinstance(item, np.generic):
            return item
        return value.dtype.type(item) if value.dtype != object else item
    return value


def _put(out: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    d = out
    for p in path[:-1]:
        d = d.setdefault(p, {})
    d[path[-1]] = value


class SkipDecoding:
    """``tfds.decode.SkipDecoding()``: return a feature's stored value (e.g. the encoded image bytes)."""

    def __repr__(self) -> str:
        return "SkipDecoding()"


def _decoder_skips(decoders: Any, features: FeatureConnector) -> frozenset[str]:
    """``decoders={"image": SkipDecoding()}`` (nested dicts allowed) -> flat keys to leave encoded."""
    if decoders is None:
        return frozenset()
    if not isinstance(decoders, Mapping):
        raise TypeError("decoders must be a (nested) dict of feature name -> SkipDecoding()")
    keys = {k for k, _, _ in features.leaves("")}
    out = set()

    def walk(d: Mapping[str, Any], prefix: str) -> None:
        for k, v in d.items():
            key = f"{prefix}/{k}" if prefix else str(k)
            if isinstance(v, Mapping):
                walk(v, key)
            elif isinstance(v, SkipDecoding) or type(v).__name__ == "SkipDecoding":
                matched = {x for x in keys if x == key or x.startswith(key + "/")}
                if not matched:
                    raise ValueError(f"decoders: no feature {key!r}")
                out.update(matched)
            else:
                raise UnsupportedFeatureError(
                    f"decoders: only SkipDecoding() is supported, got {v!r} for {key!r} "
                    "(apply your own function with .map() after as_dataset())"
                )

    walk(decoders, "")
    return frozenset(out)


@contextlib.contextmanager
def _naming(key: str) -> Iterator[None]:
    """A connector's decoding error, with the feature it belongs to."""
    try:
        yield
    except ParseError as err:
        if err.key is not None:
            raise
        raise ParseError(f"feature {key!r}: {err.message}", key=key) from None


class _Decode:
    """Picklable record(s) -> example(s) functions (with the optional supervised tuple).

    ``files`` are the shards the records come from: a record that cannot be decoded
    is looked up in them (on that error only), so the error names its file, index
    and byte offset.
    """

    def __init__(
        self,
        decoder: ExampleDecoder,
        supervised: Optional[tuple[Any, ...]],
        files: Sequence[str] = (),
    ) -> None:
        self.decoder = decoder
        self.supervised = supervised
        self.files = list(files)

    def __call__(self, record: bytes) -> Any:
        try:
            example = self.decoder.decode_one(record)
        except ParseError as err:
            raise self.located(err, record) from None
        if self.supervised is not None:
            return _select(example, self.supervised)
        return example

    def many(self, records: list[bytes]) -> list[Any]:
        try:
            examples = self.decoder.decode_batch(records)
        except ParseError as err:
            for record in records:  # which one: decode them one at a time
                try:
                    self.decoder.decode_one(record)
                except ParseError as one:
                    raise self.located(one, record) from None
            raise self.located(err, b"") from None
        if self.supervised is not None:
            return [_select(e, self.supervised) for e in examples]
        return examples

    def located(self, err: ParseError, record: bytes) -> ParseError:
        """``err`` naming the file, index and offset of ``record`` among ``files``."""
        if err.path is not None or not record:
            return err
        for path in self.files:
            f = TFRecordFile(path, compression="auto")
            try:
                for i, data in enumerate(f):
                    if data == record:
                        return ParseError(
                            err.message, key=err.key, path=path, index=i, offset=int(f.offsets[i])
                        )
            finally:
                f.close()
        return err

    def reference(self, record: bytes) -> Any:
        """The slow path through ``parse_single_example`` with TFDS's own specs (for tests)."""
        example = self.decoder.decode_parsed(parse_single_example(record, self.decoder.specs))
        if self.supervised is not None:
            return _select(example, self.supervised)
        return example


def _select(example: dict[str, Any], keys: Any) -> Any:
    if isinstance(keys, tuple):
        return tuple(_select(example, k) for k in keys)
    if isinstance(keys, dict):
        return {k: _select(example, v) for k, v in keys.items()}
    return example[keys]


def make_decode(
    info: DatasetInfo, decoders: Any, as_supervised: bool, files: Sequence[str] = ()
) -> _Decode:
    """The record(s) -> example(s) function of a dataset, with ``decoders`` and ``as_supervised``."""
    supervised = None
    if as_supervised:
        if info.supervised_keys is None:
            raise ValueError(
                f"as_supervised=True, but {info.name} has no supervised_keys "
                "(dataset_info.json defines none)"
            )
        supervised = info.supervised_keys
    skips = _decoder_skips(decoders, info.features)
    return _Decode(ExampleDecoder(info.features, skips), supervised, files)
