"""What a table integration parses and how: the specs (given or inferred), compiled
once, and the Arrow schema every batch of records is converted to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from .._examples import (
    DEFAULT_SAMPLE,
    FeatureSpec,
    FixedLenSequenceFeature,
    RaggedFeature,
    SparseFeature,
    VarLenFeature,
    compile_features,
    compile_sequence_features,
    infer_schema,
    parse_example_columns,
    parse_sequence_stream,
    validate_features,
)
from .._files import is_file_object
from ._from_columns import columns_table
from ._to_arrow import table_of

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

#: Records parsed (and converted) per batch by the table readers.
DEFAULT_BATCH_SIZE = 8192


def _inferred(source: Any, sample: Optional[int], compression: Any) -> Any:
    """``infer_schema`` of ``source``, leaving its file objects where they were (the
    records sampled are read again by the read that follows)."""
    items = source if isinstance(source, (list, tuple)) else [source]
    files = [f for f in items if is_file_object(f)]
    at = []
    for f in files:
        try:
            seekable = f.seekable()
        except (AttributeError, ValueError, OSError):
            seekable = False
        if not seekable:
            name = getattr(f, "name", None)
            what = f"the file object {name!r}" if isinstance(name, str) else "a file object"
            raise ValueError(
                f"cannot infer the schema of {what}: it cannot seek, so the records "
                "sampled would be gone from the read that follows; pass features= (and "
                "sequence_features= for SequenceExamples)"
            )
        at.append(f.tell())
    try:
        return infer_schema(source, sample, compression=compression)
    finally:
        for f, pos in zip(files, at):
            f.seek(pos)


class ReadPlan:
    """What to parse and how: the specs, inferred when not given, and the Arrow schema."""

    def __init__(
        self,
        features: Optional[Mapping[str, FeatureSpec]],
        sequence_features: Optional[Mapping[str, FeatureSpec]],
        sample_source: Any = None,
        *,
        compression: Any = "auto",
        sample: Optional[int] = DEFAULT_SAMPLE,
    ) -> None:
        if features is None and sequence_features is None:
            if sample_source is None:
                raise ValueError("features=None needs files to infer the schema from")
            schema = _inferred(sample_source, sample, compression)
            if not dict(schema) and not schema.is_sequence:
                raise ValueError(
                    "could not infer a schema: the sampled records hold no features; "
                    "pass features= yourself"
                )
            features = dict(schema)
            sequence_features = dict(schema.sequence_features) if schema.is_sequence else None
        self.features = validate_features(features or {})
        self.sequence = sequence_features is not None
        seq = validate_features(sequence_features or {}, "sequence_features")
        # Feature lists parse as RaggedFeature: unlike VarLenFeature's sparse value it keeps
        # steps without values, and its splits are the Arrow offsets as they are.
        self.sequence_features = {
            k: RaggedFeature(s.dtype) if isinstance(s, VarLenFeature) else s for k, s in seq.items()
        }
        for key, spec in self.features.items():
            if isinstance(spec, SparseFeature):
                raise ValueError(
                    f"feature {key!r} is a SparseFeature, which has no Arrow column type: "
                    "read its index and value keys as VarLenFeatures instead"
                )
        # An Example's FixedLenSequenceFeature parses padded to the batch's longest record;
        # read as ragged values, each record keeps its own number of rows.
        self._rows_of = {
            k: s for k, s in self.features.items() if isinstance(s, FixedLenSequenceFeature)
        }
        self._parse_specs = {
            k: RaggedFeature(s.dtype) if k in self._rows_of else s for k, s in self.features.items()
        }
        self._compiled: Optional[Any] = None
        self.schema = self.convert([]).schema

    def __getstate__(self) -> dict[str, Any]:
        # Read tasks get the plan pickled: the compiled parse plan is rebuilt where it runs.
        return {**self.__dict__, "_compiled": None}

    def _parse_plan(self) -> Any:
        """The specs compiled once (validated, key tables built) for every batch's parse."""
        if self._compiled is None:
            if self.sequence:
                self._compiled = compile_sequence_features(self.features, self.sequence_features)
            else:
                self._compiled = compile_features(self._parse_specs)
        return self._compiled

    def convert(self, records: Sequence[bytes]) -> pa.Table:
        """Parse a batch of records into a table of this plan's schema."""
        plan = self._parse_plan()
        if self.sequence:
            ctx, seq, lengths = next(parse_sequence_stream([records], plan))
            return table_of(ctx, seq, self.features, self.sequence_features, lengths)
        # Straight from the parsed columns: no TensorFlow-shaped value on the way.
        return columns_table(parse_example_columns(records, plan), self.features, self._rows_of)
