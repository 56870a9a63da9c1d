"""Saving where an epoch's iterator is, and resuming there: the shared machinery.

Every stage of an epoch's iterator (the source, then each op) has a :class:`_Level`.
A running stage publishes in it a function that returns its state (a JSON-able
dict: its own fields and, under ``"up"``, the state of the stage below it), and a
stage being resumed takes its saved state from it when it starts.

A stage that takes elements from below before handing out what it makes of them
(a parser reading ahead, ``map`` on threads, ``prefetch``) holds elements the
caller has not seen. Its state is the state of the stage below *rolled back* by
those elements when that stage can tell where it was (files, and the ops that
count: ``batch``, ``map``, ``take`` ...): :meth:`_Level.state` with ``behind``.
Otherwise the held elements themselves are saved (:func:`encode_held`), and the
resumed stage takes them first.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator, Sequence
from typing import Any, Callable, Optional

from .._errors import TFRecordError

__all__ = ["IteratorStateError"]

#: A state's format name and version (a state of another version is refused).
STATE_FORMAT = "tfrecord_lite.iterator_state"
STATE_VERSION = 1

#: The state of a stage that has not handed out anything yet.
FRESH: dict[str, Any] = {"fresh": True}


class IteratorStateError(TFRecordError, ValueError):
    """A saved iterator state that cannot resume this iterator: it was saved from
    another pipeline, over other files (or files changed since), by another
    version, or it was changed after it was saved. The message says what differs."""


class _Level:
    """One stage of an epoch's iterator: where its state is read and restored."""

    __slots__ = ("down", "get", "lock", "saved", "start")

    def __init__(self, saved: Optional[dict[str, Any]] = None) -> None:
        #: The state to resume from, taken by the stage when it starts.
        self.saved = saved
        #: Set by the running stage: its state, ``behind`` of its outputs ago, or
        #: None when it cannot tell that (see the module).
        self.get: Optional[Callable[[int], Optional[dict[str, Any]]]] = None
        #: Held while the state is read when a thread runs the stages below.
        self.lock: Any = None
        #: The level below, once a state was handed to it.
        self.down: Optional[_Level] = None
        #: The state taken, its own until the stage publishes one.
        self.start: Optional[dict[str, Any]] = None

    def forget(self) -> None:
        """Drop the saved states not taken here and below (a stage that was never
        started: the next run of the stages starts afresh)."""
        lv: Optional[_Level] = self
        while lv is not None:
            lv.saved = lv.start = None
            lv = lv.down

    def take(self) -> Optional[dict[str, Any]]:
        """The saved state (once: a later run of the stage starts afresh)."""
        saved, self.saved = self.saved, None
        if saved is not None and not isinstance(saved, dict):
            raise bad("a stage", f"its state is a {type(saved).__name__}, not a dict")
        self.start = saved
        if saved is not None and saved.get("fresh") is True:
            return None
        return saved

    def state(self, behind: int = 0) -> Optional[dict[str, Any]]:
        """The stage's state as of ``behind`` outputs ago (None: it cannot tell)."""
        get = self.get
        if get is None:  # not started: where it will start
            if behind:
                return None
            for saved in (self.saved, self.start):
                if saved is not None:
                    return saved
            return dict(FRESH)
        if self.lock is not None:
            with self.lock:
                return get(behind)
        return get(behind)


def resumed(lv: _Level, below: _Level, kind: str) -> Optional[dict[str, Any]]:
    """The state a stage of kind ``kind`` resumes from (None: from the start), its
    ``"up"`` part handed to the stage below."""
    saved = lv.take()
    if saved is None:
        return None
    check_kind(saved, kind, kind)
    if "up" not in saved:
        raise bad(kind, "the state of the stage below it is missing")
    below.saved = saved["up"]
    lv.down = below
    return saved


def up_state(below: _Level, held: Sequence[Any]) -> dict[str, Any]:
    """``{"up": ...}`` for a stage holding ``held`` (inputs taken from ``below`` and
    not yet answered): ``below`` rolled back by them, or its state and the
    elements themselves (``"held"``) when it cannot roll back."""
    if held:
        up = below.state(len(held))
        if up is not None:
            return {"up": up}
        return {"up": below.state(0), "held": encode_held(held)}
    return {"up": below.state(0)}


def encode_held(items: Sequence[Any]) -> list[str]:
    """Elements as JSON text (the encoding of ``cache(filename)`` files, in base64)."""
    return [encode_one(x) for x in items]


def encode_one(x: Any) -> str:
    """One element as :func:`encode_held` saves it."""
    from ._encoding import _encode_element

    try:
        return base64.b64encode(_encode_element(_plain(x))).decode("ascii")
    except TypeError as err:
        raise TypeError(
            f"state_dict(): an element the iterator holds cannot be saved: {err}"
        ) from None


def _plain(x: Any) -> Any:
    """Records read as spans become a list of ``bytes`` (what they hand out)."""
    from .._record import RecordSpans

    if isinstance(x, RecordSpans):
        return [x[j] for j in range(len(x))]
    return x


def decode_held(state: dict[str, Any], where: str) -> list[Any]:
    """The elements :func:`encode_held` saved in ``state["held"]`` (none: ``[]``)."""
    from ._encoding import _decode_element

    held = state.get("held", [])
    if not isinstance(held, list) or not all(isinstance(h, str) for h in held):
        raise bad(where, "'held' is not a list of strings")
    out = []
    for h in held:
        try:
            out.append(_decode_element(base64.b64decode(h, validate=True), "state"))
        except ValueError as err:
            raise bad(where, f"a held element does not decode ({err})") from None
    return out


def replaying(held: list[Any], items: Iterator[Any]) -> Iterator[Any]:
    """``held`` first, then ``items`` (closing it closes ``items``)."""
    try:
        yield from held
        held.clear()
        yield from items
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()


def bad(where: str, what: str) -> IteratorStateError:
    """The error for a state that does not fit: ``where`` names the stage."""
    return IteratorStateError(
        f"the iterator state does not fit this pipeline at {where}: {what}; load a state "
        "saved by state_dict() of an iterator over the same pipeline and files"
    )


def check_kind(state: Any, kind: str, where: str) -> dict[str, Any]:
    """``state`` as a dict saved by a stage of kind ``kind``."""
    if not isinstance(state, dict):
        raise bad(where, f"expected a dict, got {type(state).__name__}")
    found = state.get("kind")
    if found != kind:
        raise bad(where, f"the state was saved by {found!r}, this stage is {kind!r}")
    return state


def field_int(state: dict[str, Any], name: str, where: str, low: int = 0) -> int:
    """The integer field ``name`` (at least ``low``)."""
    v = state.get(name)
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise bad(where, f"field {name!r} is {v!r}, expected an integer >= {low}")
    return v


def field_same(state: dict[str, Any], name: str, expected: Any, where: str) -> None:
    """Refuse a state whose field ``name`` is not ``expected`` (a setting of the op)."""
    found = state.get(name)
    if found != expected:
        raise bad(where, f"{name} was {found!r} when the state was saved, it is {expected!r} now")


def digest(body: dict[str, Any]) -> str:
    """The SHA-256 of a state's canonical JSON (detects a state changed by hand)."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def rng_state(rng: Any) -> dict[str, Any]:
    """A NumPy generator's state, JSON-able (PCG64: integers)."""
    st = rng.bit_generator.state
    return {
        "state": str(st["state"]["state"]),
        "inc": str(st["state"]["inc"]),
        "has_uint32": int(st["has_uint32"]),
        "uinteger": int(st["uinteger"]),
    }


def set_rng_state(rng: Any, saved: Any, where: str) -> None:
    """Put ``rng`` in the state :func:`rng_state` saved."""
    try:
        rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": int(saved["state"]), "inc": int(saved["inc"])},
            "has_uint32": int(saved["has_uint32"]),
            "uinteger": int(saved["uinteger"]),
        }
    except (TypeError, ValueError, KeyError, OverflowError) as err:
        raise bad(where, f"the random generator's state is not valid ({err})") from None
