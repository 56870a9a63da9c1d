"""``tfrecord-lite index``: an index file per file, built by several processes at once."""

from __future__ import annotations

import argparse
import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Optional

from .._errors import DataLossError, TFRecordError
from .._files import ensure_index, fs, indexed_count
from ._common import (
    EXIT_DATA,
    EXIT_OK,
    PROG,
    Ctx,
    UsageError,
    add_command,
    examples_text,
    expand_inputs,
    not_tfrecord,
    not_tfrecord_line,
    say,
    where_text,
)
from ._output import plural

#: Files given to one worker process at a time.
_MAX_JOBS = 32


def _count_lines(path: str) -> int:
    n = 0
    with fs.open_read(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
    return n


def index_one(path: str, output: Optional[str], keep: bool, format: str) -> tuple[bool, str]:
    """Index one file: ``(ok, the line to print)`` (a worker process's task: what it
    returns pickles whatever went wrong)."""
    try:
        dest, built = ensure_index(path, output, keep=keep, format=format)
        n = indexed_count(path, dest)
    except DataLossError as e:
        other = not_tfrecord(e)
        where = where_text(e, False)
        line = f"{path}: {where + ': ' if where else ''}{e.message}"
        return False, line if other is None else not_tfrecord_line(other, path)
    except TFRecordError as e:  # a lock held too long, an index that cannot be written
        return False, f"{path}: {e.message}"
    except ValueError as e:  # --format binary for a plain file
        return False, f"{path}: {e}"
    count = _count_lines(dest) if n is None else n
    return True, f"{dest}: {plural(count, 'record')}{'' if built else ' (kept: up to date)'}"


def _jobs(asked: Optional[int], files: int) -> int:
    if asked is not None:
        if asked < 1:
            raise UsageError("-j/--jobs must be at least 1")
        return min(asked, files)
    return max(1, min(os.cpu_count() or 1, files, _MAX_JOBS))


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    paths = expand_inputs(args.files)
    if args.output and len(paths) != 1:
        raise UsageError("-o/--output needs exactly one input file")
    jobs = _jobs(args.jobs, len(paths))
    keep = bool(args.missing)
    failed = 0
    with ctx.bar(len(paths), "index", "file") as bar:

        def report(ok: bool, line: str) -> None:
            nonlocal failed
            if not ok:
                failed += 1
                say(bar, line, err=True)
            elif not ctx.quiet:
                say(bar, line)
            bar.update(1)

        if jobs == 1:
            for path in paths:
                report(*index_one(path, args.output, keep, args.format))
            return EXIT_DATA if failed else EXIT_OK
        # Worker processes started afresh ("spawn"): nothing of this one's threads or
        # locks is copied into them.
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(jobs, mp_context=context) as pool:
            pending: set[Future[tuple[bool, str]]] = set()
            todo = iter(paths)
            for path in todo:
                pending.add(pool.submit(index_one, path, args.output, keep, args.format))
                if len(pending) >= 2 * jobs:
                    break
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    report(*future.result())
                for path in todo:
                    pending.add(pool.submit(index_one, path, args.output, keep, args.format))
                    if len(pending) >= 2 * jobs:
                        break
    return EXIT_DATA if failed else EXIT_OK


def register(sub: Any) -> None:
    """Add the sub-command and its options."""
    p = add_command(
        sub,
        "index",
        run,
        "write index files (random access; offset length per record)",
        "Write FILE.index for each file. A plain file's index is one 'offset length' line "
        "per record, the format of tfrecord2idx (vahidk/tfrecord, NVIDIA DALI); only "
        "record headers are read. A GZIP/ZLIB file's index is binary: its records and "
        "seek points (every 4 MiB of output, with their 32 KiB windows), so that "
        "TFRecordFile reads any record by inflating from the nearest one; --format text "
        "writes the 'offset length' lines of its decompressed stream instead. Several "
        "files are indexed by as many processes (-j) at once. Each index is built under "
        "a lock file beside it and renamed into place when whole: ranks of a job that "
        "all run 'index --missing' build each index once (the others wait, then keep it) "
        "and never see a torn one.",
        examples_text(
            f"{PROG} index data/*.tfrecord",
            f"{PROG} index train.tfrecord -o train.idx",
            f"{PROG} index --missing -j 8 'gs-copy/train-*.tfrecord.gz'",
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", metavar="PATH", help="index path (one input only)")
    p.add_argument(
        "--format",
        choices=["auto", "text", "binary"],
        default="auto",
        help="auto (default): text for plain files, binary for GZIP/ZLIB ones; text: "
        "'offset length' lines (of the decompressed stream for GZIP/ZLIB); binary: "
        "GZIP/ZLIB only",
    )
    p.add_argument(
        "--missing",
        action="store_true",
        help="keep an index that is already there and fits its file; build the others",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        metavar="N",
        default=None,
        help="processes building indexes at once (default: one per CPU, at most one per file)",
    )
