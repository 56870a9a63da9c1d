"""Writing a data set as TensorFlow-style shards: ``train-00000-of-00010`` ...

:class:`ShardedWriter` splits records over several TFRecord files, named as
TensorFlow, Beam and TFDS name them (``%s-%05d-of-%05d``), optionally writing an
index file (``<shard>.index``, the ``offset length`` format of
:mod:`tfrecord_lite._files._index`, or the binary index of a seekable GZIP/ZLIB
shard) beside each shard.

Three ways to split:

* ``num_shards=N``: N files, records dealt round-robin (record k goes to shard
  ``k % N``, or to the shard passed to :meth:`ShardedWriter.write`);
* ``records_per_shard=R``: a new shard every R records;
* ``max_bytes_per_shard=B``: a new shard before one would exceed B bytes (counted
  as framed, uncompressed bytes, so a compressed shard is smaller still; a single
  record larger than B gets a shard of its own).

The last two may be combined. With them the number of shards is only known at
the end: shards are written under hidden temporary names
(``.train-00003.inprogress``) and renamed to their final ``-of-N`` names by
:meth:`ShardedWriter.close`. If the ``with`` block raises, nothing is renamed, so
an interrupted job never looks like a complete data set; its temporary files are
left for inspection.

Completion is recorded, not inferred from names: the writer keeps a manifest beside
the shards, ``_<name><suffix>.shards.json`` (:mod:`tfrecord_lite._files._shardset`),
written as "not complete" when it opens and replaced by the complete one (each
shard's name and record count) as the very last step of :meth:`ShardedWriter.close`,
after every shard and index is under its final name. A job killed at any point
before that, during ``close()`` included, leaves a set that readers of the directory,
of a glob or of the ``name@N`` spec refuse (:class:`IncompleteShardSetError`), even
when some shards already have their final names.

On object stores (``s3://``, ``gs://`` ...) there is no rename, and an upload is
visible only once it is complete. So:

* with ``num_shards`` each shard is uploaded directly under its final name and
  completed by :meth:`ShardedWriter.close`; if the ``with`` block raises (or
  :meth:`ShardedWriter.abort` is called) every upload is aborted, and a process
  killed mid-way never completes one: nothing appears under a final name;
* with ``records_per_shard`` / ``max_bytes_per_shard`` each shard is uploaded
  under its hidden temporary name, completed when the next one starts, and
  :meth:`ShardedWriter.close` copies it (server-side) to its final name and
  deletes the temporary object; the shard being written when the job fails is
  aborted, finished ones stay under their temporary names.

Either way a name ``-of-N`` only ever holds a complete shard. Indexes are
uploaded after their shard, each in one upload.
"""

from __future__ import annotations

import contextlib
import os
import threading
from array import array
from collections.abc import Iterable, Mapping
from typing import Any, Optional, Union

import numpy as np

from .._errors import ClosedError
from .._record import RECORD_OVERHEAD, as_buffer
from . import _fs
from ._gzindex import FLUSH, START, GzIndex, SeekPoint, encode, fingerprint
from ._handles import create_parent, named_for
from ._index import write_index
from ._indexfile import _write_bytes
from ._lockfile import PathLock
from ._options import TFRecordOptions
from ._paths import shard_name
from ._shardset import manifest_path, write_manifest
from ._writer import TFRecordWriter, seek_spacing

__all__ = ["ShardedWriter"]

Record = Union[bytes, bytearray, memoryview]


def _positive(name: str, value: Optional[int]) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value


class _Shard:
    """One open shard: its writer, temporary name and (optionally) record offsets."""

    __slots__ = ("bytes", "offsets", "records", "tmp_path", "writer")

    def __init__(
        self,
        tmp_path: str,
        options: TFRecordOptions,
        with_index: bool,
        atomic: bool = False,
        seekable: Union[bool, int] = False,
    ) -> None:
        self.tmp_path = tmp_path
        self.writer = TFRecordWriter(tmp_path, options, atomic=atomic, seekable=seekable)
        self.offsets: Optional[array[int]] = array("q") if with_index else None
        self.records = 0
        self.bytes = 0  # framed, uncompressed bytes: also the next record's offset

    def add(self, data: Record) -> None:
        self.writer.write(data)
        if self.offsets is not None:
            self.offsets.append(self.bytes)
        self.records += 1
        self.bytes += len(data) + RECORD_OVERHEAD


class ShardedWriter:
    """Write records into TensorFlow-style shards ``prefix-00000-of-00010`` ...

    >>> with ShardedWriter("out/train", num_shards=4, write_index=True) as w:   # doctest: +SKIP
    ...     for example in examples:
    ...         w.write(example.SerializeToString())
    >>> w.paths                                                                   # doctest: +SKIP
    ['out/train-00000-of-00004', ..., 'out/train-00003-of-00004']

    Missing local folders above ``prefix`` are created (object-store prefixes need
    none); an error writing a shard names ``prefix``, not the hidden temporary name.

    Give exactly one of ``num_shards`` or (``records_per_shard`` and/or
    ``max_bytes_per_shard``); see the module documentation. ``compression`` /
    ``options`` are as for :class:`TFRecordWriter`. ``suffix`` is appended to each
    name (``suffix=".tfrecord"`` gives ``train-00000-of-00004.tfrecord``).
    ``write_index=True`` writes ``<shard>.index`` next to each shard: the
    ``offset length`` text index (offsets in the decompressed stream for a GZIP/ZLIB
    shard).

    ``seekable=True`` (GZIP/ZLIB) writes each shard as
    ``TFRecordWriter(..., seekable=True)`` does: a full flush at a record boundary
    every few MiB (``seekable=N``: every ``N`` bytes of records), one standard
    stream any reader reads. With ``write_index=True`` the
    index of such a shard is the binary index of compressed files
    (:func:`~tfrecord_lite.create_index`), its seek points those flush points, made
    from what was written without reading the shard again: ``TFRecordFile``, the
    ``torch`` ``MapDataset`` and the other random-access readers open each shard at
    once.

    After :meth:`close`: :attr:`paths` are the shard files, :attr:`index_paths`
    their index files (if written) and :attr:`shard_records` the number of records
    in each shard (what TFDS keeps as ``shard_lengths``).
    """

    def __init__(
        self,
        prefix: Union[str, os.PathLike[str]],
        num_shards: Optional[int] = None,
        *,
        records_per_shard: Optional[int] = None,
        max_bytes_per_shard: Optional[int] = None,
        compression: Union[str, int, TFRecordOptions, None] = None,
        options: Union[str, int, TFRecordOptions, None] = None,
        suffix: str = "",
        write_index: bool = False,
        seekable: Union[bool, int] = False,
        storage_options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self.prefix = _fs.bind(prefix, storage_options)
        if not isinstance(self.prefix, str) or not self.prefix:
            raise ValueError("prefix must be a non-empty path")
        if not isinstance(suffix, str) or "/" in suffix or os.sep in suffix:
            raise ValueError(f"suffix must be a file name ending, got {suffix!r}")
        self._num_shards = _positive("num_shards", num_shards)
        self.records_per_shard = _positive("records_per_shard", records_per_shard)
        self.max_bytes_per_shard = _positive("max_bytes_per_shard", max_bytes_per_shard)
        sequential = self.records_per_shard is not None or self.max_bytes_per_shard is not None
        if (self._num_shards is not None) == sequential:
            raise ValueError(
                "give either num_shards, or records_per_shard and/or max_bytes_per_shard"
            )
        if compression is not None and options is not None:
            raise TypeError("pass either compression= or options=, not both")
        opt = options if options is not None else compression
        self._options = opt if isinstance(opt, TFRecordOptions) else TFRecordOptions(opt)
        self.compression = self._options.compression_type
        self.suffix = suffix
        self.write_index = write_index
        seek_spacing(seekable)  # checked now, before a file is made
        self.seekable = seekable
        self._lock = threading.Lock()
        self._done: list[_Shard] = []  # finished shards (sequential mode)
        self._open: list[_Shard] = []  # open shards: all N, or the current one
        self._closed = False
        self.records_written = 0
        self.paths: list[str] = []
        self.index_paths: list[str] = []
        self.shard_records: list[int] = []
        #: The set's manifest (see :mod:`tfrecord_lite._files._shardset`): written now as
        #: not complete, replaced by the complete one when :meth:`close` has finished.
        self.manifest_path = manifest_path(self.prefix, suffix)
        self._set_lock: Optional[PathLock] = None
        with named_for(self.prefix, self.manifest_path):
            create_parent(self.manifest_path)
        if not _fs.is_url(self.prefix):
            # One writer of a set at a time, for this writer's whole life: a second one is
            # refused here, before it writes, truncates or removes anything.
            head, tail = os.path.split(self.prefix)
            lock = os.path.join(head, f".{tail}{suffix}.shards.lock")
            with named_for(self.prefix, lock):
                self._set_lock = PathLock(
                    lock,
                    self.prefix,
                    "Write to another prefix, or wait until the first writer is closed",
                )
        try:
            with named_for(self.prefix, self.manifest_path):
                write_manifest(self.prefix, suffix)
            if self._num_shards is not None:
                for i in range(self._num_shards):
                    self._open.append(self._new_shard(i))
        except BaseException:
            self._discard()
            raise

    @property
    def num_shards(self) -> Optional[int]:
        """The number of shards: given up front, or known once closed (else None)."""
        if self._num_shards is not None:
            return self._num_shards
        return len(self.paths) if self._closed else None

    @property
    def closed(self) -> bool:
        """True once :meth:`close` (or :meth:`abort`) has run."""
        return self._closed

    def _tmp_name(self, i: int) -> str:
        head, tail = _fs.split(self.prefix)
        name = f".{tail}-{i:05d}{self.suffix}.inprogress"
        return _fs.join(head, name) if _fs.is_url(self.prefix) else os.path.join(head, name)

    def _new_shard(self, i: int) -> _Shard:
        if _fs.is_url(self.prefix):
            if self._num_shards is not None:  # final name known: upload there, commit at close
                final = shard_name(self.prefix, i, self._num_shards) + self.suffix
                return _Shard(final, self._options, self.write_index, True, self.seekable)
            return _Shard(self._tmp_name(i), self._options, self.write_index, True, self.seekable)
        tmp = self._tmp_name(i)
        with named_for(self.prefix, tmp):  # an error names the prefix, not the hidden name
            return _Shard(tmp, self._options, self.write_index, seekable=self.seekable)

    def write(self, record: Record, shard: Optional[int] = None) -> None:
        """Append one record; ``shard`` picks the shard (only with ``num_shards``)."""
        data = as_buffer(record)
        with self._lock:
            self._check_open()
            self._write(data, shard)

    def write_all(self, records: Iterable[Record]) -> int:
        """Append every record of an iterable; return how many were written."""
        count = 0
        with self._lock:
            self._check_open()
            for record in records:
                self._write(as_buffer(record), None)
                count += 1
        return count

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("ShardedWriter is closed.", path=self.prefix)

    def _write(self, data: Record, shard: Optional[int]) -> None:
        n = self._num_shards
        if n is not None:
            if shard is None:
                shard = self.records_written % n
            elif isinstance(shard, bool) or not isinstance(shard, int) or not 0 <= shard < n:
                raise ValueError(f"shard must be an int in [0, {n}), got {shard!r}")
            target = self._open[shard]
        else:
            if shard is not None:
                raise ValueError("shard= is only for a writer with num_shards")
            target = self._open[0] if self._open else self._roll()
            size = len(data) + RECORD_OVERHEAD
            full = (
                self.records_per_shard is not None and target.records >= self.records_per_shard
            ) or (
                self.max_bytes_per_shard is not None
                and target.records > 0
                and target.bytes + size > self.max_bytes_per_shard
            )
            if full:
                target = self._roll()
        target.add(data)
        self.records_written += 1

    def _roll(self) -> _Shard:
        """Finish the current shard (sequential mode) and start the next one."""
        if self._open:
            current = self._open.pop()
            current.writer.close()
            self._done.append(current)
        shard = self._new_shard(len(self._done))
        self._open.append(shard)
        return shard

    def flush(self) -> None:
        """Flush every open shard (see :meth:`TFRecordWriter.flush`)."""
        with self._lock:
            self._check_open()
            for shard in self._open:
                shard.writer.flush()

    def close(self) -> list[str]:
        """Finish every shard, rename it to its ``-of-N`` name, write indexes; return the paths.

        Calling it again returns the same paths.
        """
        with self._lock:
            if self._closed:
                return list(self.paths)
            self._closed = True
            try:
                return self._finish()
            finally:
                self._release()

    def _finish(self) -> list[str]:
        for shard in self._open:
            shard.writer.close()
        shards = self._done + self._open
        if not shards:  # sequential mode, nothing written: one empty, valid shard
            empty = self._new_shard(0)
            empty.writer.close()
            shards = [empty]
        self._done, self._open = [], []
        total = len(shards)
        for i, shard in enumerate(shards):
            final = shard_name(self.prefix, i, total) + self.suffix
            if shard.tmp_path != final:
                _fs.rename(shard.tmp_path, final)
            self.paths.append(final)
            self.shard_records.append(shard.records)
            if shard.offsets is not None:
                self.index_paths.append(self._write_shard_index(final, shard))
        # Last: the manifest that says the set is complete.
        names = [_fs.split(p)[1] for p in self.paths]
        write_manifest(self.prefix, self.suffix, list(zip(names, self.shard_records)))
        return list(self.paths)

    def _write_shard_index(self, final: str, shard: _Shard) -> str:
        """The index of a finished shard, from what was written: offsets and lengths as
        text, or (a seekable GZIP/ZLIB shard) the binary index with the writer's full
        flush points as its seek points, no pass over the file needed."""
        offsets = np.frombuffer(shard.offsets, dtype=np.int64) if shard.offsets else None
        if offsets is None:
            offsets = np.zeros(0, dtype=np.int64)
        lengths = np.diff(np.append(offsets, np.int64(shard.bytes)))
        name = final + ".index"
        if not (self.seekable and self.compression):
            return write_index(name, np.stack([offsets, lengths], axis=1))
        size = _fs.size(final)
        points = [SeekPoint(0, 0, START)]
        for comp, out in shard.writer._flush_points:
            if points[-1].out < out < shard.bytes and comp < size:
                points.append(SeekPoint(8 * comp, out, FLUSH))
        index = GzIndex(
            self.compression, size, fingerprint(final, size), lengths, shard.bytes, points
        )
        _write_bytes(name, encode(index))
        return name

    def _discard(self) -> None:
        """Close and delete every temporary file (construction failed)."""
        self._closed = True
        for shard in self._open:
            shard.writer._discard()  # an atomic (URL) writer: its upload is aborted
            shard.writer.close()
            with contextlib.suppress(OSError):
                _fs.remove(shard.tmp_path)
        self._open = []
        with contextlib.suppress(OSError):
            _fs.remove(self.manifest_path)  # nothing was written
        self._release()

    def _release(self) -> None:
        """Give up the set's lock (another writer may open the prefix from now on)."""
        lock, self._set_lock = self._set_lock, None
        if lock is not None:
            lock.release()

    def abort(self) -> None:
        """Close every file without renaming: the shards stay under their temporary names
        (and the manifest goes: no shard of this writer has a final name)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for shard in self._open:
                if shard.writer.atomic:
                    shard.writer._discard()  # URL: the upload is aborted, nothing appears
                else:
                    shard.writer.close()
            # No shard of this writer has a final name: there is no set to mark.
            with contextlib.suppress(OSError):
                _fs.remove(self.manifest_path)
            self._release()

    def __enter__(self) -> ShardedWriter:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (
            f"<ShardedWriter {self.prefix!r} shards={self.num_shards} "
            f"records={self.records_written} compression={self.compression!r} {state}>"
        )
