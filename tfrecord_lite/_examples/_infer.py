"""Inferring a feature dict from records: what is in a file nobody documented.

:func:`infer_schema` reads a sample of records and returns a :class:`Schema`: a
dict of feature specs whose ``repr`` is Python a user can paste into a script::

    >>> tfr.infer_schema("train.tfrecord")                     # doctest: +SKIP
    {
        "image_raw": tfr.FixedLenFeature([], tfr.string),
        "label": tfr.FixedLenFeature([], tfr.int64),
        "tags": tfr.VarLenFeature(tfr.string),
    }

A key present in every record with the same number of values becomes a
``FixedLenFeature`` (shape ``[]`` for one value, ``[n]`` for n); anything else a
``VarLenFeature``. For ``SequenceExample`` records the feature lists go to
:attr:`Schema.sequence_features` (``FixedLenSequenceFeature`` when every step
has the same count). :attr:`Schema.stats` keeps what was seen, per key.

**The schema parses the whole file.** The first ``sample`` records (1,000 by
default) are read in full (kinds, counts, value ranges). Then every remaining
record is *checked* against those specs by the vectorized parser, in chunks of
thousands of records (``VarLenFeature`` of each key's dtype, which counts the
values of every key in every record): a key that a later record lacks, leaves
empty or holds with another number of values is widened from ``FixedLenFeature``
to ``VarLenFeature``, so ``parse_example(records, schema)`` and
:func:`read_examples` never fail on a valid file. A key that holds another kind
in a later record (floats after ints) raises :class:`ParseError` naming the key,
both kinds and the record: no spec parses both.

**Which keys are in the schema** (one rule, whatever ``sample`` is, and the
command line's ``schema`` the same): a key the records read in full hold is in
the schema when some record of the file gives it a kind (``bytes_list``,
``float_list`` or ``int64_list``, even with no values). A key the sample holds
only as an empty ``Feature()`` (CSV ExampleGen's missing values) takes its kind
from the first later record that gives it one (the check finds it by a byte
search, confirmed by a parse) and becomes a ``VarLenFeature`` of that dtype,
as a full read makes it; a key only ever empty is left out, its dtype unknown.
Keys that first appear after the sample are not in the schema (parsing ignores
them, as any key missing from a spec); ``sample=None`` reads every record in
full and finds them too, and
``check=False`` reads the first ``sample`` records only (a quick look, whose
fixed-length specs may not fit later records). The command line's ``schema``
command runs the same function with the same defaults.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np
from google.protobuf.message import DecodeError

from .. import example_pb2
from .._errors import ParseError
from .._files import PathOrFile, is_file_object, tf_record_iterator
from ._infer_columns import summarize
from ._kind import KindProbe
from ._parse import parse_example
from ._schema import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    VarLenFeature,
    dtype_of_kind,
)
from ._wire import encode_varint

__all__ = [
    "FeatureStats",
    "Schema",
    "add_records",
    "collect_stats",
    "infer_schema",
    "schema_from_stats",
]

#: Records read in full by default (the rest are checked, see the module documentation).
DEFAULT_SAMPLE = 1000
#: Records checked per vectorized parse call after the sample.
CHECK_CHUNK = 8192


@dataclass
class FeatureStats:
    """What the sample showed about one feature key."""

    key: str
    #: How many sampled records had the key with each kind (None: an empty ``Feature()``).
    kinds: Counter[Optional[str]] = field(default_factory=Counter)
    #: Records that had the key at all.
    present: int = 0
    #: Fewest / most values in one record (per step, for feature lists).
    min_count: Optional[int] = None
    max_count: Optional[int] = None
    #: Smallest / largest numeric value seen (int64 and float features).
    min_value: Optional[float] = None
    max_value: Optional[float] = None
    #: Feature lists only: fewest / most steps in one record.
    min_steps: Optional[int] = None
    max_steps: Optional[int] = None
    #: Records checked after the sample (see :func:`infer_schema`): fewest / most
    #: values of this key in one of them (0 where it is absent or empty).
    checked_min_count: Optional[int] = None
    checked_max_count: Optional[int] = None

    @property
    def kind(self) -> Optional[str]:
        """The kind the key holds (``"int64_list"``...), or None if never set."""
        kinds = [k for k in self.kinds if k is not None]
        return kinds[0] if len(kinds) == 1 else None

    @property
    def fixed(self) -> bool:
        """True when every record that has the key has the same number of values."""
        return self.min_count is not None and self.min_count == self.max_count

    def _count(self, n: int) -> None:
        self.min_count = n if self.min_count is None else min(self.min_count, n)
        self.max_count = n if self.max_count is None else max(self.max_count, n)

    def _values(self, values: Sequence[Any]) -> None:
        if not values or isinstance(values[0], bytes):
            return
        lo, hi = min(values), max(values)
        self.min_value = lo if self.min_value is None else min(self.min_value, lo)
        self.max_value = hi if self.max_value is None else max(self.max_value, hi)

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly view."""
        return {
            "key": self.key,
            "kind": self.kind,
            "kinds": {str(k): v for k, v in self.kinds.items()},
            "present": self.present,
            "min_count": self.min_count,
            "max_count": self.max_count,
            "min_value": self.min_value,
            "max_value": self.max_value,
            "min_steps": self.min_steps,
            "max_steps": self.max_steps,
            "checked_min_count": self.checked_min_count,
            "checked_max_count": self.checked_max_count,
        }


class Schema(dict[str, FeatureSpec]):
    """A feature dict (usable wherever one is expected) with what it was inferred from."""

    def __init__(
        self,
        features: dict[str, FeatureSpec],
        *,
        sequence_features: Optional[dict[str, FeatureSpec]] = None,
        stats: Optional[dict[str, FeatureStats]] = None,
        sequence_stats: Optional[dict[str, FeatureStats]] = None,
        records: int = 0,
        checked: int = 0,
    ) -> None:
        super().__init__(features)
        #: Feature-list specs, for ``SequenceExample`` records (empty for Examples).
        self.sequence_features: dict[str, FeatureSpec] = sequence_features or {}
        self.stats: dict[str, FeatureStats] = stats or {}
        self.sequence_stats: dict[str, FeatureStats] = sequence_stats or {}
        #: How many records were read in full (the sample; :attr:`stats` describe them).
        self.records = records
        #: How many more records were checked against the specs after the sample.
        self.checked = checked

    @property
    def is_sequence(self) -> bool:
        """True for ``SequenceExample`` records."""
        return bool(self.sequence_features or self.sequence_stats)

    def _block(self, specs: dict[str, FeatureSpec], indent: str) -> str:
        if not specs:
            return "{}"
        lines = [f"{indent}    {json.dumps(k)}: {spec!r}," for k, spec in specs.items()]
        return "{\n" + "\n".join(lines) + f"\n{indent}}}"

    def __repr__(self) -> str:
        if not self.is_sequence:
            return self._block(dict(self), "")
        return (
            f"context_features = {self._block(dict(self), '')}\n"
            f"sequence_features = {self._block(self.sequence_features, '')}"
        )

    def to_python(self) -> str:
        """Source code defining the feature dict(s), ready to paste."""
        if self.is_sequence:
            return "import tfrecord_lite as tfr\n\n" + repr(self) + "\n"
        return "import tfrecord_lite as tfr\n\nfeatures = " + repr(self) + "\n"

    def to_json(self) -> dict[str, Any]:
        """The schema and its stats as JSON-friendly data."""

        def spec_json(spec: FeatureSpec) -> dict[str, Any]:
            out: dict[str, Any] = {"type": type(spec).__name__, "dtype": spec.dtype.name}
            if isinstance(spec, (FixedLenFeature, FixedLenSequenceFeature)):
                out["shape"] = list(spec.shape)
            if isinstance(spec, FixedLenSequenceFeature):
                out["allow_missing"] = spec.allow_missing
            return out

        return {
            "records_sampled": self.records,
            "records_checked": self.checked,
            "kind": "SequenceExample" if self.is_sequence else "Example",
            "features": {k: spec_json(v) for k, v in self.items()},
            "sequence_features": {k: spec_json(v) for k, v in self.sequence_features.items()},
            "stats": {k: s.as_dict() for k, s in self.stats.items()},
            "sequence_stats": {k: s.as_dict() for k, s in self.sequence_stats.items()},
        }


def _records(source: Any, compression: Any, storage_options: Any = None) -> Iterable[bytes]:
    """Records from paths/files, or from an iterable of serialized records (read lazily)."""
    buffers = (bytes, bytearray, memoryview)
    if isinstance(source, (str, os.PathLike)) or is_file_object(source):
        return tf_record_iterator(source, compression, storage_options=storage_options)
    if isinstance(source, (list, tuple)):
        if source and all(isinstance(x, buffers) for x in source):
            return (bytes(x) for x in source)
        return tf_record_iterator(source, compression, storage_options=storage_options)
    it = iter(source)
    first = next(it, None)
    if first is None:
        return iter(())
    if isinstance(first, buffers):
        return (bytes(x) for x in itertools.chain([first], it))
    return tf_record_iterator([first, *it], compression, storage_options=storage_options)


def _source_name(source: Any) -> Optional[str]:
    """The file ``source`` names, for an error (None for records or several files)."""
    if isinstance(source, (list, tuple)) and len(source) == 1:
        source = source[0]
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return None


def _observe(stats: dict[str, FeatureStats], fmap: Any) -> None:
    for key, feature in fmap.items():
        st = stats.get(key)
        if st is None:
            st = stats[key] = FeatureStats(key)
        kind = feature.WhichOneof("kind")
        st.kinds[kind] += 1
        st.present += 1
        values = list(getattr(feature, kind).value) if kind else []
        st._count(len(values))
        st._values(values)


def collect_stats(
    source: Union[PathOrFile, Sequence[PathOrFile], Iterable[bytes]],
    sample: Optional[int] = DEFAULT_SAMPLE,
    compression: Any = "auto",
) -> tuple[dict[str, FeatureStats], dict[str, FeatureStats], int]:
    """Per-key statistics of (a sample of) the records: (context, feature lists, records)."""
    stats: dict[str, FeatureStats] = {}
    seq_stats: dict[str, FeatureStats] = {}
    records = _records(source, compression)
    try:
        n = add_records(itertools.islice(records, sample), stats, seq_stats)
    finally:
        close = getattr(records, "close", None)
        if close is not None:
            close()  # stop reading (and close the file) when the sample ends early
    return stats, seq_stats, n


def add_records(
    records: Iterable[bytes], stats: dict[str, FeatureStats], seq_stats: dict[str, FeatureStats]
) -> int:
    """Add every record's features to the stats; return how many records there were."""
    n = 0
    for record in records:
        try:
            # A SequenceExample's context has an Example's field number and type, so
            # one parse serves both kinds of record.
            msg = example_pb2.SequenceExample.FromString(record)
        except (DecodeError, RuntimeError, ValueError) as err:
            raise ParseError(
                f"record is neither an Example nor a SequenceExample ({err})", index=n
            ) from None
        n += 1
        _observe(stats, msg.context.feature)
        for key, flist in msg.feature_lists.feature_list.items():
            st = seq_stats.get(key)
            if st is None:
                st = seq_stats[key] = FeatureStats(key)
            steps = len(flist.feature)
            st.min_steps = steps if st.min_steps is None else min(st.min_steps, steps)
            st.max_steps = steps if st.max_steps is None else max(st.max_steps, steps)
            st.present += 1
            for feature in flist.feature:
                kind = feature.WhichOneof("kind")
                st.kinds[kind] += 1
                values = list(getattr(feature, kind).value) if kind else []
                st._count(len(values))
                st._values(values)
    return n


def _add_sample(
    records: Iterable[bytes], stats: dict[str, FeatureStats], seq_stats: dict[str, FeatureStats]
) -> int:
    """:func:`add_records` of a sample into empty stats, the same statistics with the
    values counted and ranged by the engines (see :mod:`._infer_columns`); record by
    record where they cannot say."""
    sample: list[bytes] = []
    try:
        sample.extend(records)
    except Exception:
        add_records(sample, stats, seq_stats)  # a bad record before the failed read first
        raise
    summary = summarize(sample)
    if summary is None:
        return add_records(sample, stats, seq_stats)
    for got in summary:
        st = stats[got.key] = FeatureStats(got.key)
        for kind, times in got.kinds:
            st.kinds[kind] = times
        st.present = got.present
        st.min_count, st.max_count = got.min_count, got.max_count
        st.min_value, st.max_value = got.min_value, got.max_value
    return len(sample)


def _mixed(key: str, st: FeatureStats) -> ParseError:
    kinds = ", ".join(f"{k} in {v} records" for k, v in st.kinds.items() if k is not None)
    return ParseError(
        f"feature {key!r} holds different kinds in different records ({kinds}); no single "
        "spec parses it: pass a feature dict yourself",
        key=key,
    )


def infer_schema(
    source: Union[PathOrFile, Sequence[PathOrFile], Iterable[bytes]],
    sample: Optional[int] = DEFAULT_SAMPLE,
    *,
    compression: Any = "auto",
    check: bool = True,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> Schema:
    """Infer a feature dict that parses every record of ``source``.

    ``source`` is a path (or pattern, directory, list of paths) or an iterable of
    serialized records. The first ``sample`` records are read in full (``None``:
    all of them); with ``check=True`` (default) every later record is then
    checked by the vectorized parser and specs that a later record does not fit
    are widened to ``VarLenFeature`` (see the module documentation), so the
    schema parses the whole file; an iterator is read to its end. ``check=False``
    reads only the first ``sample`` records (lazily). A key the sample holds
    only as an empty ``Feature()`` gets the kind a later record gives it (a
    ``VarLenFeature``), as with ``sample=None``; keys never given a kind (only
    empty ``Feature()``) are left out, since their dtype is unknown; keys
    first seen after the sample are not in the schema (see the module
    documentation: which keys are in the schema). A key with different kinds in different records raises
    :class:`~tfrecord_lite.ParseError`. Records that are not Examples but parse
    as ones by accident (a TensorBoard event file, TF-Ranking
    ``ExampleListWithContext`` records: see :mod:`tfrecord_lite._examples._kind`)
    raise ``NotExampleError`` (a ``ParseError``, so a ``ValueError``) naming the
    file and what the records look like, instead of an empty schema.
    """
    if sample is not None and sample <= 0:
        raise ValueError(f"sample must be a positive number of records, got {sample}")
    stats: dict[str, FeatureStats] = {}
    seq_stats: dict[str, FeatureStats] = {}
    records = _records(source, compression, storage_options)
    checked = 0
    try:
        it = iter(records)
        probe = KindProbe()
        n = _add_sample(_watch(probe, itertools.islice(it, sample)), stats, seq_stats)
        kind = probe.result()
        if not kind.is_example:  # another message that parses as an Example by accident
            raise kind.error(_source_name(source))
        if check and sample is not None and n == sample:
            checked = _check_rest(it, stats, seq_stats, n)
    finally:
        close = getattr(records, "close", None)
        if close is not None:
            close()  # stop reading (and close the file) when reading ends early
    if seq_stats:  # SequenceExamples: the rest were read in full (see _check_rest)
        return schema_from_stats(stats, seq_stats, n + checked)
    schema = schema_from_stats(stats, seq_stats, n)
    schema.checked = checked
    for key, spec in list(schema.items()):
        st = stats[key]
        if checked and isinstance(spec, FixedLenFeature):
            count = int(np.prod(spec.shape)) if spec.shape else 1
            if (st.checked_min_count, st.checked_max_count) != (count, count):
                schema[key] = VarLenFeature(spec.dtype)
    return schema


def _watch(probe: KindProbe, records: Iterable[bytes]) -> Iterator[bytes]:
    """``records``, shown to ``probe`` until one is a proper Example with a feature:
    from then on the probe says Example (or SequenceExample) whatever it sees, which
    is all ``infer_schema`` asks of it (its strict reading costs more than a parse)."""
    for record in records:
        if not probe.with_features:
            probe.add(record)
        yield record


def _chunks(it: Iterator[bytes], size: int) -> Iterator[list[bytes]]:
    while True:
        chunk = list(itertools.islice(it, size))
        if not chunk:
            return
        yield chunk


def _check_rest(
    it: Iterator[bytes],
    stats: dict[str, FeatureStats],
    seq_stats: dict[str, FeatureStats],
    offset: int,
) -> int:
    """Count the values of every sampled key in every later record; return how many records.

    One ``parse_example`` call per chunk, every key as a ``VarLenFeature`` of the
    dtype the sample showed. SequenceExample files are read in full instead.
    """
    n = 0
    if seq_stats:
        for chunk in _chunks(it, CHECK_CHUNK):
            n += _add_chunk(chunk, stats, seq_stats, offset + n)
        return n
    kinds = {k: st.kind for k, st in stats.items()}
    spec = {k: VarLenFeature(dtype_of_kind(kind)) for k, kind in kinds.items() if kind}
    untyped = {k: _typed_entry(k) for k, st in stats.items() if not any(st.kinds.keys() - {None})}
    # (a sparse schema's thousands of keys: the parse gives each key's values by the
    # records that have it, so memory follows what is present, whatever the chunk)
    for chunk in _chunks(it, CHECK_CHUNK):
        for key, kind in _first_kinds(chunk, untyped).items():
            stats[key].kinds[kind] += 1  # typed here: checked from this chunk on
            spec[key] = VarLenFeature(dtype_of_kind(kind))
            del untyped[key]
        try:
            parsed = parse_example(chunk, spec)
        except ParseError as err:
            _explain(chunk, err, stats, offset + n)
            index = None if err.index is None else err.index + offset + n
            raise ParseError(err.message, key=err.key, index=index) from None
        for key, value in parsed.items():
            lo, hi = _count_range(value.indices[:, 0], len(chunk))  # type: ignore[union-attr]
            st = stats[key]
            st.checked_min_count = (
                lo if st.checked_min_count is None else min(st.checked_min_count, lo)
            )
            st.checked_max_count = (
                hi if st.checked_max_count is None else max(st.checked_max_count, hi)
            )
        n += len(chunk)
    return n


def _count_range(rows: np.ndarray, n: int) -> tuple[int, int]:
    """Fewest and most values one of ``n`` records holds, from the (sorted) record of
    each value: one pass over the values, not one count per record and key."""
    if not rows.size:
        return 0, 0
    starts = np.flatnonzero(np.diff(rows)) + 1
    runs = np.diff(np.concatenate(([0], starts, [rows.size])))
    lo = int(runs.min()) if runs.size == n else 0
    return lo, int(runs.max())


def _typed_entry(key: str) -> re.Pattern[bytes]:
    """The bytes of a ``Features`` map entry of ``key`` whose value has a kind (a
    ``Feature`` that is not empty: its length is not 0 and it starts with the tag of
    ``bytes_list`` / ``float_list`` / ``int64_list``)."""
    name = key.encode("utf-8", "surrogatepass")
    head = re.escape(b"\x0a" + encode_varint(len(name)) + name)
    return re.compile(head + rb"\x12(?:[\x80-\xff]{1,9}[\x00-\x7f]|[\x01-\x7f])[\x0a\x12\x1a]")


def _first_kinds(chunk: list[bytes], untyped: dict[str, re.Pattern[bytes]]) -> dict[str, str]:
    """The kind the first record of ``chunk`` that types it gives each untyped key.

    A byte search finds the records that may hold such an entry (C speed, no parse);
    each candidate is then parsed to be sure.
    """
    if not untyped:
        return {}
    joined = b"".join(chunk)
    ends = np.cumsum([len(r) for r in chunk])
    found: dict[str, str] = {}
    for key, pattern in untyped.items():
        for match in pattern.finditer(joined):
            record = chunk[int(np.searchsorted(ends, match.start(), side="right"))]
            try:
                msg = example_pb2.Example.FromString(record)
            except (DecodeError, RuntimeError, ValueError):
                continue  # the check parse reports it
            feature = msg.features.feature.get(key)
            kind = None if feature is None else feature.WhichOneof("kind")
            if kind is not None:
                found[key] = kind
                break
    return found


def _add_chunk(
    chunk: list[bytes],
    stats: dict[str, FeatureStats],
    seq_stats: dict[str, FeatureStats],
    offset: int,
) -> int:
    try:
        return add_records(chunk, stats, seq_stats)
    except ParseError as err:
        index = None if err.index is None else err.index + offset
        raise ParseError(err.message, key=err.key, index=index) from None


def _explain(
    chunk: list[bytes], err: ParseError, stats: dict[str, FeatureStats], offset: int
) -> None:
    """Turn a failed check into the error a full read gives (kinds, record number)."""
    local: dict[str, FeatureStats] = {}
    local_seq: dict[str, FeatureStats] = {}
    start = err.index or 0
    for i in range(start, len(chunk)):
        _add_chunk([chunk[i]], local, local_seq, offset + i)
        for key, st in local.items():
            seen = stats.get(key)
            if seen is not None and seen.kind and st.kind and st.kind != seen.kind:
                raise ParseError(
                    f"feature {key!r} holds {st.kind} in record {offset + i} but {seen.kind} in "
                    f"the {seen.present} records that had it among the first {offset}; no single "
                    "spec parses it: pass a feature dict yourself",
                    key=key,
                    index=offset + i,
                ) from None
        local.clear()
        local_seq.clear()


def _spec_for(key: str, st: FeatureStats, n: int, sequence: bool) -> Optional[FeatureSpec]:
    """The spec one key's statistics call for; None when its dtype is unknown."""
    kinds = {k for k in st.kinds if k is not None}
    if len(kinds) > 1:
        raise _mixed(key, st)
    if not kinds:
        return None
    dtype = dtype_of_kind(kinds.pop())
    if st.fixed and st.max_count and not st.kinds.get(None, 0):
        shape = [] if st.max_count == 1 else [int(st.max_count)]
        if sequence:
            return FixedLenSequenceFeature(shape, dtype, allow_missing=st.present < n)
        if st.present == n:
            return FixedLenFeature(shape, dtype)
    return VarLenFeature(dtype)


def schema_from_stats(
    stats: dict[str, FeatureStats], seq_stats: dict[str, FeatureStats], records: int
) -> Schema:
    """The :class:`Schema` that statistics from :func:`collect_stats` call for.

    A key present in all ``records`` with one value count becomes a
    ``FixedLenFeature`` (a ``FixedLenSequenceFeature`` for feature lists with one
    count per step); anything else a ``VarLenFeature``. Keys that only ever held an
    empty ``Feature()`` are left out.
    """
    features: dict[str, FeatureSpec] = {}
    for key in sorted(stats):
        spec = _spec_for(key, stats[key], records, sequence=False)
        if spec is not None:
            features[key] = spec
    sequence: dict[str, FeatureSpec] = {}
    for key in sorted(seq_stats):
        spec = _spec_for(key, seq_stats[key], records, sequence=True)
        if spec is not None:
            sequence[key] = spec
    return Schema(
        features,
        sequence_features=sequence,
        stats=stats,
        sequence_stats=seq_stats,
        records=records,
    )
