"""``shuffle``: tf.data's shuffle buffer, and the seeded generators of every shuffle
(elements here, the files' order in :mod:`._source`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, Optional

import numpy as np

from ._op import EpochKey, Upstream, _close, _Op


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

    def run(self, upstream: Upstream, key: EpochKey) -> Iterator[Any]:
        rng = _rng(self.entropy, 0, key, self.reshuffle)
        return _shuffle(upstream(key), self.buffer_size, rng)

    def describe(self) -> str:
        return f"shuffle({self.buffer_size})"


def _shuffle(items: Iterator[Any], buffer_size: int, rng: np.random.Generator) -> Iterator[Any]:
    """tf.data's shuffle buffer: memory is ``buffer_size`` elements, whatever the input's size.

    Fill the buffer; then for each new element, emit a uniformly chosen buffered one
    and put the new one in its place; at the end emit the rest in random order.
    """
    try:
        buf = list(itertools.islice(items, buffer_size))
        if len(buf) == buffer_size:
            picks: Iterator[int] = iter(())
            for x in items:
                j = next(picks, -1)
                if j < 0:
                    picks = iter(rng.integers(0, buffer_size, size=4096).tolist())
                    j = next(picks)
                out = buf[j]
                buf[j] = x
                yield out
        for j in rng.permutation(len(buf)).tolist():
            out = buf[j]
            buf[j] = None
            yield out
    finally:
        _close(items)
