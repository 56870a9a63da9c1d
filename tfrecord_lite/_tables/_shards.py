"""A write job's TFRecord shards, committed whole: what every engine's writer shares.

Each write task writes one shard under a hidden staging name that depends only
on the job and the task's index, through a temporary file renamed into place
when the shard is complete. When every task has succeeded, :meth:`ShardJob.commit`
renames the staging shards to their final ``<prefix>-NNNNN-of-MMMMM`` names.
So a task that fails and is retried by the engine rewrites the same staging
shard (no record is written twice), a task killed mid-write leaves only a
temporary file (removed at the end, never renamed), and a job that fails leaves
no file under a final name (:meth:`ShardJob.abort`). Ray's datasink, the Spark
data source's writer and Daft's sink are each a thin adapter of a :class:`ShardJob`.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from .._files import TFRecordWriter, shard_name
from .._files import fs as _fs
from ._from_arrow import table_records

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

#: A write task's key: the engine's task index, or a string that sorts in shard order.
TaskKey = Union[int, str]

_SHARD_RE = r"-\d{5}-of-\d{5}"
#: After a failed write, the job's directory is swept this often (seconds) ...
FAILED_SWEEP_EVERY = 0.5
#: ... until this many sweeps in a row find nothing to remove or abort ...
FAILED_SWEEPS_QUIET = 4
#: ... or for at most this long (seconds).
FAILED_SWEEP_FOR = 30.0


class ShardJob:
    """One write job into directory ``path``: staging shards per task, committed or aborted.

    Picklable: the engines send it to their write tasks, which call :meth:`write`;
    the driver calls :meth:`start` first and :meth:`commit` or :meth:`abort` last.
    """

    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        *,
        compression: Optional[str] = None,
        prefix: str = "part",
        suffix: str = "",
        sequence_features: Optional[Sequence[str]] = None,
        overwrite: bool = False,
        storage_options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if not prefix or "/" in prefix or os.sep in prefix:
            raise ValueError(f"prefix must be a file name prefix, got {prefix!r}")
        #: The output directory (a URL carries its storage options).
        self.path = _fs.bind(path, storage_options)
        self.url = _fs.is_url(self.path)
        self.compression = compression
        self.prefix = prefix
        self.suffix = suffix
        self.sequence_features = list(sequence_features) if sequence_features else None
        self.overwrite = overwrite
        #: Unique per write job: staging names never collide with another job's.
        self.job = uuid.uuid4().hex[:12]
        #: The shards written, in order (set when the job is committed).
        self.paths: list[str] = []
        #: Records per shard, in the order of :attr:`paths`.
        self.shard_records: list[int] = []
        #: What :meth:`abort` reads the time from and sleeps with (``monotonic``, ``sleep``).
        self.clock: Any = time

    # -- where things go

    def staging(self, task: TaskKey) -> str:
        """The staging shard of write task ``task`` (every attempt of it writes this one):
        an engine's task index, or a key that sorts in the order the shards should have."""
        name = f"{task:06d}" if isinstance(task, int) else task
        return _fs.join(self.path, f".{self.prefix}-{self.job}-{name}.staging")

    def _entries(self) -> list[str]:
        if self.url:  # other processes wrote here: a cached listing would miss their files
            fs, root = _fs.filesystem(self.path)
            with contextlib.suppress(Exception):
                fs.invalidate_cache(root)
        if not _fs.isdir(self.path):
            return []
        return [full for full, is_file in _fs.listdir(self.path) if is_file]

    def existing_shards(self) -> list[str]:
        """The files of the directory named ``<prefix>-NNNNN-of-MMMMM<suffix>``."""
        pattern = re.compile(re.escape(self.prefix) + _SHARD_RE + re.escape(self.suffix) + "$")
        return [p for p in self._entries() if pattern.match(_fs.split(p)[1])]

    def leftovers(self) -> list[str]:
        """Every staging or temporary file of this job still in the directory."""
        return [p for p in self._entries() if self.job in _fs.split(p)[1]]

    @staticmethod
    def _remove(paths: Sequence[str]) -> None:
        for p in paths:
            with contextlib.suppress(OSError):
                _fs.remove(p)

    # -- the job

    def start(self) -> None:
        """Create the directory; refuse to mix with shards already there (unless overwrite)."""
        if self.url:
            fs, root = _fs.filesystem(self.path)
            with contextlib.suppress(OSError, NotImplementedError):  # object stores: no dirs
                fs.makedirs(root, exist_ok=True)
        else:
            os.makedirs(self.path, exist_ok=True)
        if not self.overwrite:
            old = self.existing_shards()
            if old:
                raise FileExistsError(
                    f"{self.path!r} already holds shards named {self.prefix}-NNNNN-of-MMMMM "
                    f"(e.g. {old[0]!r}); write elsewhere, pass another prefix, or "
                    "overwrite to replace them once the new ones are complete"
                )

    def write(self, task: TaskKey, tables: Iterable[pa.Table]) -> dict[str, Any]:
        """Write task ``task``'s tables to its staging shard (whole, or not at all).

        Returns the commit message :meth:`commit` takes: ``{"task", "staging", "rows"}``.
        """
        staging = self.staging(task)
        rows = 0
        # atomic: a local temporary file renamed onto the staging name when complete; on an
        # object store an upload that becomes visible only when complete. A retry of this
        # task rewrites the same staging shard whole.
        with TFRecordWriter(staging, self.compression, atomic=True) as w:
            for table in tables:
                rows += w.write_all(table_records(table, sequence_features=self.sequence_features))
        return {"task": task, "staging": staging, "rows": rows}

    def commit(self, messages: Iterable[Any]) -> list[str]:
        """Rename the staging shards to ``<prefix>-NNNNN-of-MMMMM``; remove what is left over.

        ``messages`` are what :meth:`write` returned (anything else is ignored). Tasks
        without rows give no shard, unless no task has rows: then there is one empty,
        valid shard. With ``overwrite``, the shards that were there before are removed
        once the new ones are in place. Returns the shards' paths, in order.
        """
        by_task: dict[TaskKey, dict[str, Any]] = {}
        for r in messages:  # a re-executed task reports the same staging shard again
            if isinstance(r, dict) and "staging" in r:
                by_task[r["task"]] = r
        done = [by_task[k] for k in sorted(by_task, key=lambda k: (isinstance(k, str), k))]
        keep = [r for r in done if r["rows"]] or done[:1]
        old = self.existing_shards() if self.overwrite else []
        if not keep:  # nothing was written at all: one empty, valid shard
            empty = self.staging(0)
            TFRecordWriter(empty, self.compression, atomic=True).close()
            keep = [{"task": 0, "staging": empty, "rows": 0}]
        total = len(keep)
        finals = [
            _fs.join(self.path, shard_name(self.prefix, i, total) + self.suffix)
            for i in range(total)
        ]
        for r, final in zip(keep, finals):
            _fs.rename(_fs.join(self.path, _fs.split(r["staging"])[1]), final)
        self._remove([p for p in old if str(p) not in {str(f) for f in finals}])
        self._remove(self.leftovers())
        self.paths = [str(f) for f in finals]
        self.shard_records = [int(r["rows"]) for r in keep]
        return list(self.paths)

    def abort(self) -> None:
        """Remove every staging and temporary file of this job; no shard gets a final name.

        On S3, uploads of this job's staging shards that cancelled tasks left
        unfinished are aborted too. An engine need not wait for the write tasks a
        failure cancelled: one may still complete its staging shard (or a part of an
        upload) after a first sweep. So the directory is swept again every
        :data:`FAILED_SWEEP_EVERY` seconds until :data:`FAILED_SWEEPS_QUIET` sweeps in
        a row find nothing, for at most :data:`FAILED_SWEEP_FOR` seconds.
        """
        deadline = self.clock.monotonic() + FAILED_SWEEP_FOR
        quiet = 0
        while True:
            found = self.leftovers()
            self._remove(found)
            aborted: Optional[int] = None
            with contextlib.suppress(OSError):
                aborted = _fs.abort_uploads(self.path, self.job)
            quiet = 0 if found or aborted else quiet + 1
            if quiet >= FAILED_SWEEPS_QUIET or self.clock.monotonic() >= deadline:
                return
            self.clock.sleep(FAILED_SWEEP_EVERY)
