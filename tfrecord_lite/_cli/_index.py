"""``tfrecord-lite index``: an index file (``offset length`` per record) per file."""

from __future__ import annotations

import argparse
from typing import Any

from .._errors import DataLossError
from .._files import fs
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


def _count_lines(path: str) -> int:
    n = 0
    with fs.open_read(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
    return n


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    from .._files import create_index

    paths = expand_inputs(args.files)
    if args.output and len(paths) != 1:
        raise UsageError("-o/--output needs exactly one input file")
    failed = 0
    with ctx.bar(len(paths), "index", "file") as bar:
        for path in paths:
            try:
                dest = create_index(path, args.output)
            except DataLossError as e:
                failed += 1
                other = not_tfrecord(e)
                where = where_text(e, False)
                line = f"{path}: {where + ': ' if where else ''}{e.message}"
                say(bar, line if other is None else not_tfrecord_line(other, path), err=True)
            else:
                if not ctx.quiet:
                    say(bar, f"{dest}: {plural(_count_lines(dest), 'record')}")
            bar.update(1)
    return EXIT_DATA if failed else EXIT_OK


def register(sub: Any) -> None:
    """Add the sub-command and its options."""
    p = add_command(
        sub,
        "index",
        run,
        "write index files (offset length per record)",
        "Write FILE.index for each file: one 'offset length' line per record, the format "
        "of tfrecord2idx (vahidk/tfrecord, NVIDIA DALI). One streaming pass in bounded "
        "memory; for a plain file only record headers are read. For GZIP/ZLIB files "
        "the offsets are in the decompressed stream.",
        examples_text(f"{PROG} index data/*.tfrecord", f"{PROG} index train.tfrecord -o train.idx"),
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", metavar="PATH", help="index path (one input only)")
