"""What a file's records are: ``tf.train.Example``, ``SequenceExample``, or another message
that parses as one only by accident.

Protocol buffers skip the fields they do not know, so almost any small message parses
as an ``Example``: a TensorBoard event file reads as Examples with no features, a
TF-Ranking ``ExampleListWithContext`` as SequenceExamples with binary keys. This
module reads the records' wire format strictly (see :mod:`._wire` for the messages)
and says what they are.

The rule, over the first :data:`KIND_SAMPLE` records of a file:

- a record *parses only by accident* when the strict reading finds a field an
  ``Example`` / ``SequenceExample`` does not have (a field number other than 1 and 2 at
  the top level, or another number in ``Features``, a map entry, a ``Feature`` or a
  value list) or one with the wrong wire type, a feature key that is not UTF-8, or
  keys that are themselves encoded features (Examples nested in the record); a record whose bytes do not parse at all is *broken*;
- the records are **not** ``tf.train.Example`` when at least one sampled record parses
  only by accident or is broken, and no sampled record is a proper Example with at
  least one feature. So a file of Examples with no features in some (or all) records
  stays a file of Examples, and an empty file is nobody's business;
- otherwise they are ``SequenceExample`` when a sampled record has feature lists,
  else ``Example``.

For records that are not Examples :attr:`RecordKind.looks_like` holds a best guess:
a TensorBoard ``Event`` (``"TensorBoard Event"``: top-level field 1 a fixed64 ``wall_time``, field 2 a varint
``step``, field 3 a ``file_version`` starting ``brain.Event:``), a TF-Ranking
``ExampleListWithContext`` (``"TF-Ranking ExampleListWithContext"``: fields 1 and 2 each a whole, proper ``Example``), or None.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Optional

from .._errors import ParseError
from ._wire import (
    WIRETYPE_FIXED32,
    WIRETYPE_FIXED64,
    WIRETYPE_LENGTH_DELIMITED,
    WIRETYPE_VARINT,
    Buffer,
    decode_tag,
    decode_varint,
    skip_field,
)

__all__ = ["KIND_SAMPLE", "KindProbe", "NotExampleError", "RecordKind", "detect_kind"]

#: Records of a file looked at to say what they are.
KIND_SAMPLE = 100

EVENT = "TensorBoard Event"
ELWC = "TF-Ranking ExampleListWithContext"

_WIRE_NAMES = {
    WIRETYPE_VARINT: "varint",
    WIRETYPE_FIXED64: "fixed64",
    WIRETYPE_LENGTH_DELIMITED: "length-delimited",
    WIRETYPE_FIXED32: "fixed32",
}
# TensorBoard's Event: wall_time = 1 (double), step = 2 (int64), file_version = 3,
# graph_def = 4, summary = 5, log_message = 6, session_log = 7, tagged_run_metadata = 8,
# meta_graph_def = 9, source_metadata = 10.
_EVENT_WIRE = {1: WIRETYPE_FIXED64, 2: WIRETYPE_VARINT} | {
    n: WIRETYPE_LENGTH_DELIMITED for n in range(3, 11)
}


class NotExampleError(ParseError):
    """The records of a file are not ``tf.train.Example`` (or ``SequenceExample``) but
    another message that parses as one only by accident (a ``ValueError``).

    ``kind`` is the :class:`RecordKind` found; its ``looks_like`` the best guess.
    """

    def __init__(
        self, message: str, *, kind: Optional[RecordKind] = None, path: Optional[str] = None
    ) -> None:
        self.kind = kind
        super().__init__(message, path=path)


class _Accident(Exception):
    """A field an Example does not have: the record parses only by accident."""


def _fields(buf: Buffer) -> Iterator[tuple[int, int, int, int]]:
    """``(field number, wire type, payload start, payload end)`` of each field; the
    payload of a varint is its bytes. Raises ParseError on bytes that do not parse."""
    pos, end = 0, len(buf)
    while pos < end:
        number, wire, start = decode_tag(buf, pos)
        pos = skip_field(buf, start, wire)
        if wire == WIRETYPE_LENGTH_DELIMITED:
            start = decode_varint(buf, start)[1]
        yield number, wire, start, pos


def _where(number: int, wire: int, place: str) -> str:
    return f"field {number} ({_WIRE_NAMES.get(wire, f'wire type {wire}')}) {place}"


def _key(buf: Buffer) -> None:
    try:
        bytes(buf).decode("utf-8")
    except UnicodeDecodeError:
        raise _Accident("a feature key that is not UTF-8") from None
    if buf[:1] == b"\n":  # a key that is itself an encoded feature: a nested Example
        try:
            _entry(buf, "Features", _feature)
            if sorted(n for n, _, _, _ in _fields(buf)) != [1, 2]:
                return
        except (_Accident, ParseError):
            return
        raise _Accident("feature keys that are encoded features (Examples inside the record)")


def _list(buf: Buffer, kind: int) -> None:
    # BytesList: value = 1 (bytes); FloatList: 1 packed or fixed32; Int64List: 1 packed or varint.
    allowed = {1: (2,), 2: (2, WIRETYPE_FIXED32), 3: (2, WIRETYPE_VARINT)}[kind]
    for number, wire, start, end in _fields(buf):
        if number != 1 or wire not in allowed:
            raise _Accident(_where(number, wire, "in a value list"))
        if kind == 2 and wire == 2 and (end - start) % 4:
            raise _Accident("a packed float list whose length is not a multiple of 4")


def _feature(buf: Buffer) -> None:
    for number, wire, start, end in _fields(buf):
        if number not in (1, 2, 3) or wire != WIRETYPE_LENGTH_DELIMITED:
            raise _Accident(_where(number, wire, "in a Feature"))
        _list(buf[start:end], number)


def _feature_list(buf: Buffer) -> None:
    for number, wire, start, end in _fields(buf):
        if number != 1 or wire != WIRETYPE_LENGTH_DELIMITED:
            raise _Accident(_where(number, wire, "in a FeatureList"))
        _feature(buf[start:end])


def _map(buf: Buffer, place: str, value: Callable[[Buffer], None]) -> int:
    """Check a ``Features`` / ``FeatureLists`` map; return its number of entries."""
    entries = 0
    for number, wire, start, end in _fields(buf):
        if number != 1 or wire != WIRETYPE_LENGTH_DELIMITED:
            raise _Accident(_where(number, wire, f"in {place}"))
        entries += 1
        _entry(buf[start:end], place, value)
    return entries


def _entry(entry: Buffer, place: str, value: Callable[[Buffer], None]) -> None:
    """Check one map entry: key = 1 (a string), value = 2 (checked by ``value``)."""
    for n, w, s, e in _fields(entry):
        if n == 1 and w == WIRETYPE_LENGTH_DELIMITED:
            _key(entry[s:e])
        elif n == 2 and w == WIRETYPE_LENGTH_DELIMITED:
            value(entry[s:e])
        else:
            raise _Accident(_where(n, w, f"in an entry of {place}"))


def _count_fields(buf: Buffer) -> tuple[int, bool]:
    """``(features and feature lists, whether it has feature lists)`` of a proper record;
    raises _Accident (not an Example) or ParseError (broken)."""
    count, lists = 0, False
    for number, wire, start, end in _fields(buf):
        if number == 1 and wire == WIRETYPE_LENGTH_DELIMITED:
            count += _map(buf[start:end], "Features", _feature)
        elif number == 2 and wire == WIRETYPE_LENGTH_DELIMITED:
            lists = True
            count += _map(buf[start:end], "FeatureLists", _feature_list)
        else:
            raise _Accident(_where(number, wire, "at the top level"))
    return count, lists


def _guess(buf: Buffer) -> Optional[str]:
    """What a record that is not an Example looks like, or None."""
    try:
        fields = list(_fields(buf))
    except ParseError:
        return None
    if not fields:
        return None
    for number, wire, start, _ in fields:
        if (number, wire) == (3, WIRETYPE_LENGTH_DELIMITED) and (
            bytes(buf[start : start + 12]) == b"brain.Event:"
        ):
            return EVENT
    if fields[0][:2] == (1, WIRETYPE_FIXED64) and all(
        _EVENT_WIRE.get(n) == w for n, w, _, _ in fields
    ):
        return EVENT
    numbers = [n for n, w, _, _ in fields if w == WIRETYPE_LENGTH_DELIMITED]
    if len(numbers) == len(fields) and set(numbers) <= {1, 2} and numbers.count(2) <= 1:
        try:
            counted = [_count_fields(buf[s:e]) for _, _, s, e in fields]
        except (_Accident, ParseError):
            return None
        if all(not lists for _, lists in counted) and any(count for count, _ in counted):
            return ELWC
    return None


@dataclass(frozen=True)
class RecordKind:
    """What the sampled records of a file are (see the module documentation).

    ``name``: ``"Example"``, ``"SequenceExample"``, ``"not Example"``, or ``"none"``
    (no records). ``looks_like``: for ``"not Example"``, the best guess (``"TensorBoard
    Event"``, ``"TF-Ranking ExampleListWithContext"``) or None. ``reason``: why they
    are not Examples (the first odd field found). ``records``: how many were looked at;
    ``accidental`` / ``broken``: how many of them parse only by accident / not at all.
    """

    name: str
    looks_like: Optional[str] = None
    reason: str = ""
    records: int = 0
    accidental: int = 0
    broken: int = 0

    @property
    def is_example(self) -> bool:
        """True unless the records are known not to be Examples or SequenceExamples."""
        return self.name != "not Example"

    def describe(self) -> str:
        """``not tf.train.Example (looks like a TensorBoard Event)``, or the kind's name."""
        if self.is_example:
            return self.name
        guess = f"looks like a {self.looks_like}" if self.looks_like else "another kind of record"
        return f"not tf.train.Example ({guess})"

    def evidence(self) -> str:
        """Why the records are not Examples: how many of those looked at are odd, and how."""
        return (
            f"{self.accidental + self.broken} of the first {self.records} records hold what "
            f"no Example holds, the first {self.reason}, and none is an Example with features"
        )

    def explain(self) -> str:
        """A sentence for an error: what the records are and why, what to do."""
        what = (
            f"they look like {self.looks_like} records"
            if self.looks_like
            else "they are another kind of record"
        )
        return (
            f"the records are not tf.train.Example or SequenceExample: {what} "
            f"({self.evidence()}); read them as raw records (tf_record_iterator, "
            "TFRecordDataset without parse)"
        )

    def error(self, path: Optional[str] = None) -> NotExampleError:
        """The :class:`NotExampleError` to raise for these records."""
        return NotExampleError(self.explain(), kind=self, path=path)


class KindProbe:
    """Looks at the first ``limit`` records given to :meth:`add` and says what they are."""

    def __init__(self, limit: int = KIND_SAMPLE) -> None:
        self.limit = limit
        self.records = 0
        self.accidental = 0
        self.broken = 0
        self.with_features = 0
        self.sequences = 0
        self.reasons: list[str] = []
        self.guesses: Counter[Optional[str]] = Counter()

    @property
    def full(self) -> bool:
        """True once ``limit`` records have been seen (later ones are not looked at)."""
        return self.records >= self.limit

    def add(self, record: Buffer) -> None:
        """Look at one record (ignored once the probe is full)."""
        if self.full:
            return
        self.records += 1
        try:
            count, lists = _count_fields(record)
        except _Accident as odd:
            self.accidental += 1
            self.reasons.append(str(odd))
            self.guesses[_guess(record)] += 1
            return
        except ParseError:
            self.broken += 1
            self.reasons.append("bytes that do not parse as a protocol buffer")
            self.guesses[None] += 1
            return
        self.with_features += count > 0
        self.sequences += lists

    def watch(self, records: Iterable[bytes]) -> Iterator[bytes]:
        """Yield ``records``, looking at the first ones on the way."""
        for record in records:
            self.add(record)
            yield record

    def result(self) -> RecordKind:
        """What the records seen so far are."""
        odd = self.accidental + self.broken
        if not self.records:
            return RecordKind("none")
        if odd and not self.with_features:
            named = [g for g in self.guesses if g is not None]
            looks_like = None
            if named:
                looks_like = max(named, key=lambda g: self.guesses[g])
            reason = self.reasons[0]
            return RecordKind(
                "not Example", looks_like, reason, self.records, self.accidental, self.broken
            )
        name = "SequenceExample" if self.sequences else "Example"
        return RecordKind(name, None, "", self.records, self.accidental, self.broken)


def detect_kind(records: Iterable[bytes], limit: int = KIND_SAMPLE) -> RecordKind:
    """What the first ``limit`` of ``records`` (serialized records) are: see :class:`RecordKind`."""
    probe = KindProbe(limit)
    for record in records:
        probe.add(record)
        if probe.full:
            break
    return probe.result()
