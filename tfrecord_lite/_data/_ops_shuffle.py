"""``shuffle``: tf.data's shuffle buffer, and the seeded generators of every shuffle
(elements here, the files' order in :mod:`._source`)."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator
from typing import Any, Optional

import numpy as np

from ._op import EpochKey, Upstream, _close, _Op
from ._state import (
    _Level,
    bad,
    decode_held,
    encode_held,
    encode_one,
    field_int,
    field_same,
    resumed,
    rng_state,
    set_rng_state,
)


def _seed_entropy(seed: Optional[int]) -> int:
    """A shuffle's base entropy: the seed, or fresh randomness fixed when the op is made."""
    if seed is None:
        return int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    return int(seed)


def _rng(entropy: int, salt: int, key: EpochKey, reshuffle: bool) -> np.random.Generator:
    spawn_key = (salt, *key) if reshuffle else (salt,)
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=spawn_key))
    )


class _Shuffle(_Op):
    transparent = True

    def __init__(self, buffer_size: int, entropy: int, reshuffle: bool) -> None:
        self.buffer_size = buffer_size
        self.entropy = entropy
        self.reshuffle = reshuffle

    def run(self, upstream: Upstream, key: EpochKey, lv: _Level, below: _Level) -> Iterator[Any]:
        kind = self.describe()
        saved = resumed(lv, below, kind)
        if saved is not None:
            field_same(saved, "seed", str(self.entropy), kind)
        rng = _rng(self.entropy, 0, key, self.reshuffle)
        return _shuffle(upstream(key), self.buffer_size, rng, lv, below, saved, kind, self.entropy)

    def describe(self) -> str:
        return f"shuffle({self.buffer_size})"


#: Random picks drawn at once (the state keeps the generator's state before a
#: draw and how many of its picks were used).
_PICKS = 4096


def _shuffle(
    items: Iterator[Any],
    buffer_size: int,
    rng: np.random.Generator,
    lv: _Level,
    below: _Level,
    saved: Optional[dict[str, Any]],
    kind: str,
    entropy: int,
) -> Iterator[Any]:
    """tf.data's shuffle buffer: memory is ``buffer_size`` elements, whatever the input's size.

    Fill the buffer; then for each new element, emit a uniformly chosen buffered one
    and put the new one in its place; at the end emit the rest in random order.

    Its state: the buffer's elements, the generator's state before the last draw
    of picks and how many were used; once the input ended, the elements left in
    the order they come out.
    """
    buf: list[Any] = []
    # The buffer's elements encoded for a state (None: not yet, or replaced since),
    # so that frequent states encode only the elements that came in since the last.
    saved_as: list[Optional[str]] = [None] * buffer_size
    picks: list[int] = []
    used = 0
    drawn_from: Optional[dict[str, Any]] = None
    rest: Optional[deque[Any]] = None  # the input ended: the elements left, in order

    def state(behind: int) -> Optional[dict[str, Any]]:
        if behind:
            return None
        out: dict[str, Any] = {"kind": kind, "seed": str(entropy), "up": below.state(0)}
        if rest is not None:
            out["held"] = encode_held(list(rest))
            out["draining"] = True
        else:
            for j, x in enumerate(buf):
                if saved_as[j] is None:
                    saved_as[j] = encode_one(x)
            out["held"] = saved_as[: len(buf)]
            out["rng"] = drawn_from
            out["used"] = used
        return out

    def draw() -> None:
        nonlocal picks, used, drawn_from
        drawn_from = rng_state(rng)
        picks = rng.integers(0, buffer_size, size=_PICKS).tolist()
        used = 0

    try:
        if saved is not None:
            held = decode_held(saved, kind)
            if saved.get("draining") is True:
                rest = deque(held)
            else:
                if len(held) != buffer_size:
                    raise bad(kind, f"the buffer holds {len(held)} elements, not {buffer_size}")
                buf = held
                if saved.get("rng") is not None:
                    set_rng_state(rng, saved["rng"], kind)
                    draw()
                    used = field_int(saved, "used", kind)
                    if used > _PICKS:
                        raise bad(kind, f"field 'used' is {used}, at most {_PICKS}")
                    drawn_from = saved["rng"]
        lv.get = state
        if rest is None:
            if saved is None:
                buf = list(itertools.islice(items, buffer_size))
            if len(buf) == buffer_size:
                for x in items:
                    if used == len(picks):
                        draw()
                    j = picks[used]
                    used += 1
                    out = buf[j]
                    buf[j] = x
                    saved_as[j] = None
                    yield out
            rest = deque(buf[j] for j in rng.permutation(len(buf)).tolist())
            buf = []
        while rest:
            yield rest.popleft()
    finally:
        _close(items)
