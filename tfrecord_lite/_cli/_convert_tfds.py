"""``convert`` from prepared TFDS dataset directories (RLDS / Open X-Embodiment too).

``convert DATASET_DIR out.parquet --split train`` reads the split through
:mod:`tfrecord_lite.tfds` and writes one row per example, columns nested as
``features.json`` says (a ``FeaturesDict`` is a struct column, a tensor a list column
with one level per dimension, a ragged ``Sequence`` nested lists). Images and videos
stay encoded (their PNG / JPEG bytes, as TFDS stores them), so nothing is decoded and
re-encoded. Episodic datasets (a ``tfds.features.Dataset`` of ``steps``): one row per
episode, the steps a struct of list columns with the step first; ``--steps rows``
writes one row per step instead, with ``episode_index`` and ``step_index`` first.

To TFRecord, ArrayRecord or WebDataset the split's records are copied as they are
stored. Shards are read in order (not interleaved as ``as_dataset`` does), so every
format gets the same order. Every directory, its split and its shard files are
checked before anything is written: a missing shard is an error and no output.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Sequence as Seq
from typing import Any, Optional

import numpy as np

from .._errors import DataLossError
from .._examples import RaggedValue
from .._files import TFRecordFile
from ..tfds import (
    Builder,
    Dataset,
    FeaturesDict,
    Image,
    ReadConfig,
    Sequence,
    SkipDecoding,
    Video,
    builder_from_directory,
    file_instructions,
)
from ._common import UsageError

__all__ = ["EPISODE_ROWS", "STEP_ROWS", "TABLE_BYTES", "TfdsInput"]

#: Rows per table for episodes, and for steps or plain examples; a table is cut
#: sooner once its rows hold TABLE_BYTES (episodes of many frames).
EPISODE_ROWS = 16
STEP_ROWS = 1024
TABLE_BYTES = 32 * 2**20


def _pick_split(builder: Builder, split: Optional[str]) -> str:
    names = list(builder.info.splits)
    if split is None:
        if len(names) == 1:
            return names[0]
        raise UsageError(
            f"{builder.data_dir} has the splits {', '.join(names)}: say which with --split "
            "(e.g. --split train, --split 'train[:10%]')"
        )
    return split


def _encoded_images(builder: Builder) -> dict[str, Any]:
    """``decoders`` leaving every image and video encoded (a nested dict)."""
    decoders: dict[str, Any] = {}
    for key, connector, _ in builder.info.features.leaves(""):
        if isinstance(connector, (Image, Video)):
            *parents, last = key.split("/")
            node = decoders
            for p in parents:
                node = node.setdefault(p, {})
            node[last] = SkipDecoding()
    return decoders


class TfdsInput:
    """The split of each TFDS directory, checked at once (before anything is written)."""

    def __init__(self, dirs: Seq[str], split: Optional[str], steps: str) -> None:
        self.parts: list[tuple[Builder, str, list[Any]]] = []
        self.steps = steps
        for d in dirs:
            builder = builder_from_directory(d)
            name = _pick_split(builder, split)
            try:
                instructions = file_instructions(name, builder.info.splits)
                # as_dataset checks every shard file is there (and inside the directory)
                builder.as_dataset(name)
            except ValueError as e:
                if isinstance(e, OSError):
                    raise
                raise UsageError(f"{builder.data_dir}: {e}") from None
            self.parts.append((builder, name, instructions))
        if steps == "rows":
            for builder, _, _ in self.parts:
                self._steps_of(builder)

    @staticmethod
    def _steps_of(builder: Builder) -> None:
        if not _episodic(builder):
            raise UsageError(
                f"--steps rows is for episodic (RLDS) datasets, whose steps are a "
                f"tfds.features.Dataset; {builder.info.name} has none"
            )

    def sequence_keys(self) -> frozenset[str]:
        """The stored features that hold one value a step (inside a ``Sequence`` or a
        ``Dataset``, and videos): written as ``KEY.FEATURE.I.ext`` in WebDataset."""
        keys: set[str] = set()

        def walk(c: Any, key: str, inside: bool) -> None:
            if isinstance(c, FeaturesDict):
                for k, child in c.items():
                    walk(child, f"{key}/{k}" if key else k, inside)
            elif isinstance(c, Video):
                keys.add(key)
            elif isinstance(c, Sequence):
                walk(c.feature, key, True)
            elif inside:
                keys.add(key)

        for builder, _, _ in self.parts:
            walk(builder.info.features, "", False)
        return frozenset(keys)

    @property
    def num_examples(self) -> int:
        """How many examples (episodes) the splits read hold."""
        return sum(fi.take for _, _, fis in self.parts for fi in fis)

    def records(self, on_record: Any = None) -> Iterator[tuple[str, int, bytes]]:
        """``(shard, index, bytes)`` of every record of the splits, shards in order."""
        for _, _, instructions in self.parts:
            for fi in instructions:
                with TFRecordFile(fi.filename) as f:
                    if len(f) != fi.num_examples:
                        raise DataLossError(
                            f"the shard holds {len(f)} records where dataset_info.json says "
                            f"{fi.num_examples}: the dataset directory is damaged or stale",
                            path=fi.filename,
                        )
                    for i in range(fi.skip, fi.skip + fi.take):
                        yield fi.filename, i, f[i]
                        if on_record is not None:
                            on_record(1)

    def rows(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(rows per table, example)`` for every example (or step) of the splits."""
        one_file = ReadConfig(interleave_cycle_length=1)
        for builder, name, _ in self.parts:
            decoders = _encoded_images(builder) or None
            if self.steps == "rows":
                for step in builder.as_steps(name, decoders=decoders, read_config=one_file):
                    yield STEP_ROWS, step
            else:
                n = EPISODE_ROWS if _episodic(builder) else STEP_ROWS
                for example in builder.as_dataset(name, decoders=decoders, read_config=one_file):
                    yield n, example

    def tables(self, on_row: Any = None) -> Iterator[Any]:
        """The rows as Arrow tables of at most EPISODE_ROWS / STEP_ROWS rows each."""
        from .._tables import require_pyarrow

        pa = require_pyarrow("convert to Parquet/Arrow")
        batch: list[dict[str, Any]] = []
        held = 0
        schema = None
        for size, row in self.rows():
            batch.append(row)
            held += _nbytes(row)
            if on_row is not None:
                on_row(1)
            if len(batch) >= size or held >= TABLE_BYTES:
                table = _table(pa, batch, schema)
                schema = table.schema
                batch, held = [], 0
                yield table
        if batch or schema is None:
            yield _table(pa, batch, schema)


def _episodic(builder: Builder) -> bool:
    """Whether the examples are episodes (a top-level ``tfds.features.Dataset``)."""
    features = builder.info.features
    if isinstance(features, Dataset):
        return True
    return isinstance(features, FeaturesDict) and any(
        isinstance(c, Dataset) for c in features.values()
    )


# --------------------------------------------------------------------------- to Arrow


def _table(pa: Any, rows: list[dict[str, Any]], schema: Any) -> Any:
    if not rows:
        if schema is None:
            raise UsageError("the split holds no examples: nothing to write")
        return schema.empty_table()
    names = list(rows[0])
    table = pa.table({k: _column(pa, [r[k] for r in rows]) for k in names})
    if schema is not None and table.schema != schema:
        table = table.cast(schema)
    return table


def _nbytes(value: Any) -> int:
    """About how many bytes a decoded example holds."""
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "O":
            return sum(len(v) if isinstance(v, bytes) else 8 for v in value.ravel())
        return int(value.nbytes)
    if isinstance(value, RaggedValue):
        return int(value.flat_values.nbytes)
    return len(value) if isinstance(value, bytes) else 8


def _base_type(pa: Any, dtype: np.dtype[Any]) -> Any:
    if dtype.kind in "OSV":
        return pa.binary()
    if dtype.kind == "U":
        return pa.string()
    return pa.from_numpy_dtype(dtype)


def _column(pa: Any, values: list[Any]) -> Any:
    first = values[0]
    if isinstance(first, dict):
        fields = list(first)
        children = [_column(pa, [v[k] for v in values]) for k in fields]
        return pa.StructArray.from_arrays(children, names=fields)
    if isinstance(first, RaggedValue):
        flat = first.flat_values
        depth = len(first.nested_row_splits) + flat.ndim
        t = _base_type(pa, flat.dtype)
        for _ in range(depth):
            t = pa.list_(t)
        return pa.array([v.to_list() for v in values], type=t)
    if isinstance(first, np.ndarray) and first.ndim > 0:
        return _nested(pa, values)
    array = np.asarray(values)
    if array.dtype.kind in "OSV":
        return pa.array([bytes(v) for v in values], type=pa.binary())
    return pa.array(array, type=_base_type(pa, array.dtype))


def _flat(pa: Any, array: np.ndarray) -> Any:
    if array.dtype.kind in "OSV":
        return pa.array([bytes(v) for v in array], type=pa.binary())
    return pa.array(array, type=_base_type(pa, array.dtype))


def _uniform(pa: Any, array: np.ndarray) -> Any:
    """An array of shape (N, ...) as N nested lists."""
    if array.ndim == 1:
        return _flat(pa, array)
    n, m = array.shape[0], array.shape[1]
    offsets = pa.array(np.arange(n + 1, dtype=np.int32) * m, type=pa.int32())
    inner = _uniform(pa, array.reshape((n * m, *array.shape[2:])))
    return pa.ListArray.from_arrays(offsets, inner)


def _nested(pa: Any, arrays: list[np.ndarray]) -> Any:
    """A list of arrays (same rank, first dimension of any length) as nested lists."""
    lengths = np.array([len(a) for a in arrays], dtype=np.int64)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]), type=pa.int32())
    if len({a.shape[1:] for a in arrays}) == 1:
        inner = _uniform(pa, np.concatenate(arrays) if arrays else np.zeros(0))
    else:  # inner dimensions differ between examples: one level at a time
        inner = _nested(pa, [row for a in arrays for row in a])
    return pa.ListArray.from_arrays(offsets, inner)
