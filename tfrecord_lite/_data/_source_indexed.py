"""The records of indexed TFRecord files read by their number: :class:`_IndexedSource`.

:meth:`TFRecordDataset.global_shuffle` and ``shard(n, i, by="range")`` need to know
how many records each file holds and to read any record on its own; both come from
the files' indexes (:func:`~tfrecord_lite.create_index`, ``tfrecord-lite index``: a
plain file's offsets, a GZIP/ZLIB file's binary index with its seek points).

The records of the epoch are numbered ``0 .. R-1`` through the files in canonical
order (sorted by path, as :mod:`._source`), each file's records in order (only its
window of records, for TFDS split slices). The shard stages then select records:

* ``by="range"``: shard ``i`` of ``n`` takes the ``i``-th of ``n`` contiguous runs,
  the first ``R % n`` runs one record longer than the others;
* any other ``by``: shard ``i`` takes records ``i, i + n, ...`` of those selected so
  far (DataLoader workers and ranks add such stages).

Every stage keeps an arithmetic progression of record numbers, so a shard is
described by three integers whatever the number of records. ``global_shuffle`` then
hands out the shard's records in a random permutation (a new one each epoch unless
told otherwise); without it they come in file order (the files' order shuffled by
``shuffle_files``). ``interleave`` does not apply: records are read by number.

The state of an epoch is how many records were handed out: the order is a function
of the files' record counts, the shard stages, the seed and the epoch, so a resumed
iterator rebuilds it and goes on from there (the state checks that the files and
their counts are the same).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any, Optional

import numpy as np

from .._files import RandomAccessError, TFRecordFile, find_index, indexed_count
from ._op import EpochKey
from ._ops_shuffle import _rng
from ._source import _Source
from ._state import _Level, bad, check_kind, field_int

#: The state kind of this source.
KIND = "indexed_records"

#: Records read at a time (one ``get_many`` per file among them).
_CHUNK = 512

#: Files kept open at once while reading (the least recently used is closed).
_OPEN_FILES = 32


def indexed(src: _Source, **changes: Any) -> _IndexedSource:
    """``src`` read by record number (with ``changes`` to its settings)."""
    new = _IndexedSource.__new__(_IndexedSource)
    new.__dict__.update(src.__dict__)
    new.__dict__.setdefault("global_shuffle", None)
    new.__dict__.update(changes)
    return new


def missing_index(path: str, why: str) -> RandomAccessError:
    """The error for a file that cannot be read by record number."""
    return RandomAccessError(
        f"{why} reads records by their number, and {path!r} has no index that allows it; "
        f"build one with tfrecord_lite.create_index({path!r}) or `tfrecord-lite index "
        "FILES...` (a GZIP/ZLIB file gets the binary index with its seek points)",
        path=path,
    )


def _split(start: int, step: int, count: int, n: int, i: int, by: str) -> tuple[int, int, int]:
    """Shard ``i`` of ``n`` of the progression ``start, start + step, ...`` (``count``)."""
    if by != "range":
        return start + i * step, step * n, max(0, (count - i + n - 1) // n)
    size, extra = divmod(count, n)
    first = i * size + min(i, extra)
    return start + first * step, step, size + (1 if i < extra else 0)


class _IndexedSource(_Source):
    """A :class:`._source._Source` whose records are read by number (see the module)."""

    #: (entropy, reshuffle) of ``global_shuffle``, or None.
    global_shuffle: Optional[tuple[int, bool]]

    def copy(self, **changes: Any) -> _IndexedSource:
        return indexed(self, **changes)

    def _why(self) -> str:
        return "global_shuffle()" if self.global_shuffle is not None else "shard(by='range')"

    def _check(self) -> None:
        for _, _, by in self.shards:
            if by == "file":
                raise ValueError(
                    f"shard(by='file') does not combine with {self._why()}: shards split "
                    "records there; use by='range' (contiguous runs) or by='record'"
                )

    def plan(self) -> tuple[list[tuple[str, int]], int, int, int]:
        self._check()
        return super().plan()

    def counts(self) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
        """The files in canonical order, their indexes, first records and record counts
        (each file's window of records for TFDS split slices)."""
        paths = sorted(self.files)
        index_paths: list[str] = []
        firsts = np.zeros(len(paths), dtype=np.int64)
        counts = np.zeros(len(paths), dtype=np.int64)
        for k, path in enumerate(paths):
            index_path = find_index(path)
            n = indexed_count(path, index_path) if index_path is not None else None
            if index_path is None or n is None:
                raise missing_index(path, self._why())
            index_paths.append(index_path)
            window = self.windows.get(path) if self.windows else None
            low, high = (window[0], window[0] + window[1]) if window is not None else (0, n)
            firsts[k] = min(low, n)
            counts[k] = max(0, min(high, n) - firsts[k])
        return paths, index_paths, firsts, counts

    def iterate(
        self,
        key: EpochKey,
        extra_shards: tuple[tuple[int, int, str], ...] = (),
        lists: bool = False,
        spans: bool = False,
        lv: Optional[_Level] = None,
    ) -> Iterator[Any]:
        src = self.copy(shards=self.shards + extra_shards) if extra_shards else self
        src._check()
        if src.on_error != "raise":
            raise ValueError(
                f"{src._why()} reads records by number and cannot skip damaged ones: "
                "use on_error='raise' (and no ignore_errors()) with it"
            )
        paths, index_paths, firsts, counts = src.counts()
        start, step, count = 0, 1, int(counts.sum())
        for n, i, by in src.shards:
            start, step, count = _split(start, step, count, n, i, by)
        order = src._order(key, start, step, count, counts)
        digest = _digest(paths, firsts, counts, (start, step, count))
        lv = lv if lv is not None else _Level()
        saved = lv.take()
        position = 0 if saved is None else _load(saved, digest, count)
        handed = [position]

        def state(behind: int) -> Optional[dict[str, Any]]:
            at = handed[0] - behind
            if at < 0:
                return None
            return {"kind": KIND, "files": len(paths), "order": digest, "position": at}

        lv.get = state
        reader = _Reader(src, paths, index_paths, firsts, counts)
        return _handed_out(reader, order, position, lists, handed)

    def _order(
        self, key: EpochKey, start: int, step: int, count: int, counts: np.ndarray
    ) -> np.ndarray:
        """The record numbers of the epoch, in the order they are handed out."""
        if self.global_shuffle is not None:
            entropy, reshuffle = self.global_shuffle
            perm = _rng(entropy, 2, key, reshuffle).permutation(count)
            return np.asarray(start + perm * step, dtype=np.int64)
        numbers = start + np.arange(count, dtype=np.int64) * step
        if self.file_shuffle is None or not len(numbers):
            return numbers
        entropy, reshuffle = self.file_shuffle
        ends = np.cumsum(counts)
        of_file = np.searchsorted(ends, numbers, side="right")
        perm = _rng(entropy, 1, key, reshuffle).permutation(len(counts))
        rank = np.empty_like(perm)
        rank[perm] = np.arange(len(perm))
        return numbers[np.argsort(rank[of_file], kind="stable")]

    def describe(self) -> str:
        return f"TFRecordDataset(files={len(self.files)}, by record number)"


def _digest(paths: Sequence[str], firsts: np.ndarray, counts: np.ndarray, sel: Any) -> str:
    """What the state checks: the files, their records, and the shard's selection."""
    text = "\n".join(f"{p}\t{int(a)}\t{int(c)}" for p, a, c in zip(paths, firsts, counts))
    text += "\n" + ",".join(map(str, sel))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _load(saved: dict[str, Any], digest: str, count: int) -> int:
    """The position a saved state resumes at, checked against this epoch."""
    check_kind(saved, KIND, KIND)
    if saved.get("order") != digest:
        raise bad(
            KIND,
            "the files, their record counts or the shards are not those of the saved state",
        )
    position = field_int(saved, "position", KIND)
    if position > count:
        raise bad(KIND, f"position {position} is past the {count} records of the shard")
    return position


class _Reader:
    """Reads records by their number among the files, a few files open at once."""

    def __init__(
        self,
        src: _Source,
        paths: list[str],
        index_paths: list[str],
        firsts: np.ndarray,
        counts: np.ndarray,
    ) -> None:
        self.src = src
        self.paths = paths
        self.index_paths = index_paths
        self.firsts = firsts
        self.ends = np.cumsum(counts)
        self.open: OrderedDict[int, TFRecordFile] = OrderedDict()

    def file(self, k: int) -> TFRecordFile:
        f = self.open.get(k)
        if f is not None:
            self.open.move_to_end(k)
            return f
        f = TFRecordFile(
            self.paths[k],
            self.index_paths[k],
            compression=self.src.compression,
            verify=self.src.verify,
        )
        self.open[k] = f
        if len(self.open) > _OPEN_FILES:
            self.open.popitem(last=False)[1].close()
        return f

    def read(self, numbers: np.ndarray) -> list[bytes]:
        """The records numbered ``numbers``, in that order."""
        of_file = np.searchsorted(self.ends, numbers, side="right")
        before = np.concatenate([[0], self.ends])[of_file]
        local = numbers - before + self.firsts[of_file]
        out: list[bytes] = [b""] * len(numbers)
        for k in np.unique(of_file).tolist():
            where = np.flatnonzero(of_file == k)
            records = self.file(k).get_many(local[where].tolist())
            for j, rec in zip(where.tolist(), records):
                out[j] = rec
        return out

    def close(self) -> None:
        while self.open:
            self.open.popitem()[1].close()


def _handed_out(
    reader: _Reader, order: np.ndarray, position: int, lists: bool, handed: list[int]
) -> Iterator[Any]:
    """The records of ``order`` from ``position`` on (lists of them with ``lists``),
    ``handed[0]`` counting those handed out."""
    try:
        for a in range(position, len(order), _CHUNK):
            records = reader.read(order[a : a + _CHUNK])
            if lists:
                handed[0] += len(records)
                yield records
            else:
                for rec in records:
                    handed[0] += 1
                    yield rec
    finally:
        reader.close()
