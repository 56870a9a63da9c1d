"""``tfrecord-lite count``: the intact records of each file (or, with ``--fast``, the
number its index or its shard set's manifest gives)."""

from __future__ import annotations

import argparse
from typing import Any

from .._files import (
    Damage,
    IncompleteShardSetError,
    SalvageInfo,
    StaleIndexError,
    check_shard_records,
    fs,
    known_count,
    salvage_file,
)
from ._common import (
    EXIT_DATA,
    EXIT_OK,
    PROG,
    Ctx,
    add_command,
    damage_line,
    examples_text,
    expand_inputs,
    say,
    total_size,
)


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    paths = expand_inputs(args.files)
    total = 0
    problems = 0
    with ctx.bar(total_size(paths), "count", "B") as bar:
        for path in paths:
            if args.fast:
                try:
                    known = known_count(path)
                except (StaleIndexError, IncompleteShardSetError) as err:
                    say(bar, f"{path}: {err.message}; counting its records instead", err=True)
                    known = None
                if known is not None:
                    total += known[0]
                    say(bar, f"{known[0]} {path} (from its {known[1]})")
                    bar.update(fs.size(path))
                    continue
            info = SalvageInfo()
            n = 0
            for item in salvage_file(path, on_bytes=bar.update, info=info):
                if isinstance(item, Damage):
                    problems += 1
                    say(bar, damage_line(item, path, bool(info.compression)), err=True)
                else:
                    n += 1
            try:  # a shard of a complete set: the count its manifest lists
                check_shard_records(path, n)
            except IncompleteShardSetError as err:
                problems += 1
                say(bar, str(err), err=True)
            total += n
            say(bar, f"{n} {path}" + (" (read)" if args.fast else ""))
    if len(paths) > 1:
        print(f"{total} total")
    return EXIT_DATA if problems else EXIT_OK


def register(sub: Any) -> None:
    """Add the sub-command and its options."""
    p = add_command(
        sub,
        "count",
        run,
        "count the records of files (checking CRCs)",
        "Count the intact records of each file. Damaged records are reported on stderr "
        "(file, record number, byte offset) and reading goes on past them; the exit "
        "code is then 1. With --fast, a file's count comes without reading its records "
        "where its index (checked against the file: its size, and for a GZIP/ZLIB "
        "file's index a hash of its first and last 64 KiB) or its shard set's complete "
        "manifest (which lists the shard's size) gives it; each line then says where "
        "its number came from, and only the other files are read.",
        examples_text(
            f"{PROG} count train.tfrecord",
            f"{PROG} count 'data/*.tfrecord'",
            f"{PROG} count --fast data/",
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument(
        "--fast",
        action="store_true",
        help="take each count from the file's index or its set's manifest where one "
        "gives it (records not read, nor their CRCs checked)",
    )
