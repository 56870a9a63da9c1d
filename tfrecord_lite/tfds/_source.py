"""Random access to a split: :class:`DataSource` (Grain's ``RandomAccessDataSource``),
reading each shard through :class:`~tfrecord_lite.TFRecordFile` and an index kept
beside it or in a cache folder. Shards may be plain, GZIP or ZLIB (a compressed
shard is read through the seek points of its binary index).
"""

from __future__ import annotations

import bisect
import hashlib
import os
import threading
import warnings
from collections.abc import Iterator
from collections.abc import Sequence as _Seq
from typing import Any, Optional, Protocol

import numpy as np

from .. import _settings
from .._errors import ParseError
from .._files import (
    StaleIndexError,
    TFRecordFile,
    UnsafeDirectoryError,
    create_index,
    find_index,
    private_directory,
)
from ._dataset_info import DatasetInfo
from ._decoder import make_decode
from ._splits import check_files, file_instructions


class Prepared(Protocol):
    """What a :class:`DataSource` reads from a builder: its directory and its info."""

    data_dir: str
    info: DatasetInfo


def open_shard(path: str, num_examples: int, index_dir: Optional[str] = None) -> TFRecordFile:
    """The shard at ``path`` for random access, checked to hold ``num_examples`` records.

    Its index is ``<shard>.index`` if present, else one built once (a streaming pass
    over the record headers; a GZIP/ZLIB shard is inflated once and gets the binary
    index of its seek points) and kept in ``index_dir`` (default: ``_cache_dir()``);
    if that is not writable, it is kept in memory. :class:`StaleIndexError` if the
    shard holds another number of records than ``dataset_info.json`` says.
    """
    index = find_index(path)
    f: Optional[TFRecordFile] = None
    if index is None:
        index = _cached_index(path, index_dir)
    if index is not None:
        try:
            f = TFRecordFile(path, index, compression="auto")
        except StaleIndexError:
            f = None
            cached = _cached_index(path, index_dir, rebuild=True)
            if cached is not None:
                f = TFRecordFile(path, cached, compression="auto")
    if f is None:
        f = TFRecordFile(path, compression="auto")  # index kept in memory
    if len(f) != num_examples:
        n = len(f)
        f.close()
        raise StaleIndexError(
            f"{path} holds {n} records, dataset_info.json says {num_examples} (its "
            "shardLengths do not describe the shards: re-prepare the dataset)",
            path=path,
        )
    return f


def _cached_index(path: str, index_dir: Optional[str], rebuild: bool = False) -> Optional[str]:
    base = index_dir or _cache_dir()
    key = hashlib.sha256(os.path.dirname(os.path.abspath(path)).encode()).hexdigest()[:20]
    folder = os.path.join(base, key)
    try:
        # An index decides which bytes are returned as a record: only from a folder
        # no other user can have written to.
        private_directory(folder)
    except UnsafeDirectoryError as err:
        warnings.warn(
            f"tfrecord_lite.tfds: the index cache is not used ({err}); shard indexes are "
            "kept in memory",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    except OSError:
        return None
    index = os.path.join(folder, os.path.basename(path) + ".index")
    if os.path.isfile(index) and not rebuild:
        try:
            if os.path.getmtime(index) >= os.path.getmtime(path):
                return index
        except OSError:
            pass
    try:
        return create_index(path, index, compression="auto")
    except OSError:
        return None


def _cache_dir() -> str:
    return os.path.join(_settings.cache_dir(), "tfds")


class DataSource(_Seq[Any]):
    """Random access to the examples of a split (Grain's ``RandomAccessDataSource``).

    ``src[i]`` is the ``i``-th example in the order of the shards, as
    ``builder.as_dataset(split, read_config=ReadConfig(interleave_cycle_length=1))``
    yields it. Slices and lists of indices return lists (read one run of
    consecutive records at a time). Shard lengths come from ``dataset_info.json``
    and are checked against each shard's index when the shard is first opened.
    """

    def __init__(
        self,
        builder: Prepared,
        split: str,
        *,
        decoders: Any = None,
        as_supervised: bool = False,
        index_dir: Optional[str] = None,
    ) -> None:
        self.data_dir = builder.data_dir
        self.split = split
        self.index_dir = index_dir
        self._instructions = file_instructions(split, builder.info.splits)
        files = [fi.filename for fi in self._instructions]
        self._decode = make_decode(builder.info, decoders, as_supervised, files)
        check_files([fi.filename for fi in self._instructions])
        starts = [0]
        for fi in self._instructions:
            starts.append(starts[-1] + fi.take)
        self._starts = starts
        self._files: dict[int, TFRecordFile] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._starts[-1]

    def _file(self, k: int) -> TFRecordFile:
        f = self._files.get(k)
        if f is None:
            with self._lock:
                f = self._files.get(k)
                if f is None:
                    fi = self._instructions[k]
                    f = open_shard(fi.filename, fi.num_examples, self.index_dir)
                    self._files[k] = f
        return f

    def _locate(self, i: int) -> tuple[int, int]:
        k = bisect.bisect_right(self._starts, i) - 1
        return k, self._instructions[k].skip + (i - self._starts[k])

    def _norm(self, i: Any) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(
                f"indices must be integers, slices or lists of integers, not {type(i).__name__}"
            )
        n = len(self)
        k = int(i) + n if int(i) < 0 else int(i)
        if not 0 <= k < n:
            raise IndexError(f"index {i} out of range for a split of {n} examples")
        return k

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.__getitems__(range(*i.indices(len(self))))
        if isinstance(i, (int, np.integer)) and not isinstance(i, bool):
            k, r = self._locate(self._norm(i))
            f = self._file(k)
            try:
                return self._decode(f[r])
            except ParseError as err:
                if err.path is not None:
                    raise
                raise ParseError(
                    err.message, key=err.key, path=f.path, index=r, offset=int(f.offsets[r])
                ) from None
        if isinstance(i, (str, bytes)):
            raise TypeError(f"indices must be integers, slices or lists, not {type(i).__name__}")
        return self.__getitems__(list(i))

    def __getitems__(self, indices: Any) -> list[Any]:
        """The examples at ``indices`` (any order), reading runs of consecutive records at once."""
        ks = [self._norm(i) for i in indices]
        by_file: dict[int, list[tuple[int, int]]] = {}
        for pos, g in enumerate(ks):
            k, r = self._locate(g)
            by_file.setdefault(k, []).append((pos, r))
        records: list[bytes] = [b""] * len(ks)
        for k, items in by_file.items():
            for (pos, _), rec in zip(items, self._file(k).get_many([r for _, r in items])):
                records[pos] = rec
        if len(records) == 1:
            return [self._decode(records[0])]
        return self._decode.many(records)  # one vectorized parse for the batch

    #: Grain's name for a batched read (``SupportsBatchedReadRandomAccessDataSource``).
    _getitems = __getitems__

    def __iter__(self) -> Iterator[Any]:
        for k, fi in enumerate(self._instructions):
            f = self._file(k)
            for start in range(fi.skip, fi.skip + fi.take, 256):
                yield from self._decode.many(f[start : min(start + 256, fi.skip + fi.take)])

    def close(self) -> None:
        """Close the shard files (they reopen on the next access)."""
        with self._lock:
            for f in self._files.values():
                f.close()
            self._files.clear()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_files"] = {}
        state["_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"DataSource(name={os.path.basename(os.path.dirname(self.data_dir))}, split={self.split!r}, num_records={len(self)})"
