"""``tfrecord-lite verify``: every CRC checked, and that every record parses."""

from __future__ import annotations

import argparse
from typing import Any

from .. import example_pb2
from .._examples import KindProbe
from .._files import Damage, IncompleteShardSetError, SalvageInfo, check_shard_records, salvage_file
from ._common import (
    EXIT_DATA,
    EXIT_OK,
    PROG,
    Ctx,
    add_command,
    damage_line,
    examples_text,
    expand_inputs,
    not_tfrecord,
    say,
    tfds_inputs,
    total_size,
)
from ._head import SHOW_HEX
from ._output import plural


def _parse_error(data: bytes) -> str:
    """Why a record is not an Example or SequenceExample, in a few words ("" if it is)."""
    try:
        example_pb2.SequenceExample.FromString(data)
    except Exception:
        # The protocol buffer library's message names its internals; say what is wrong.
        shown = " ".join(f"{b:02x}" for b in data[:SHOW_HEX]) + (
            " ..." if len(data) > SHOW_HEX else ""
        )
        return f"its {plural(len(data), 'byte')} do not parse as a protocol buffer ({shown})"
    return ""


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    tfds = tfds_inputs(args.files)
    if tfds is not None:
        from ._tfds import verify as tfds_verify

        return tfds_verify(tfds, args.no_parse, ctx.quiet)
    paths = expand_inputs(args.files)
    failed: list[str] = []
    records = 0
    not_examples = 0
    with ctx.bar(total_size(paths), "verify", "B") as bar:
        for path in paths:
            info = SalvageInfo()
            good = problems = unparsed = 0
            other = False  # not a TFRecord file at all (a CSV, an image...)
            probe = KindProbe()
            for item in salvage_file(path, on_bytes=bar.update, info=info):
                if isinstance(item, Damage):
                    problems += 1
                    other = other or not_tfrecord(item.error) is not None
                    say(bar, damage_line(item, path, bool(info.compression)))
                    continue
                good += 1
                if args.no_parse:
                    continue
                probe.add(item.data)
                why = _parse_error(item.data)
                if why:
                    problems += 1
                    unparsed += 1
                    where = "decompressed byte offset" if info.compression else "byte offset"
                    say(
                        bar,
                        f"{path}: record {item.index}, {where} {item.offset}: not a "
                        f"tf.train.Example or SequenceExample: {why}",
                    )
            try:  # a shard of a complete set: the count its manifest lists
                check_shard_records(path, good)
            except IncompleteShardSetError as err:
                problems += 1
                say(bar, str(err))
            kind = probe.result()
            if not kind.is_example and not unparsed:  # Examples only by accident
                problems += 1
                unparsed += 1
                say(
                    bar,
                    f"{path}: the records are {kind.describe()}: {kind.evidence()}; to check "
                    "only the "
                    "framing and CRCs of records of another kind, use --no-parse",
                )
            records += good
            not_examples += unparsed
            if other:
                failed.append(path)
                say(bar, f"FAILED {path}: not a TFRecord file")
            elif problems:
                failed.append(path)
                say(bar, f"FAILED {path}: {plural(problems, 'problem')}, {good:,} intact records")
            elif not ctx.quiet:
                say(bar, f"ok     {path}: {plural(good, 'record')}")
    if failed:
        hint = ""
        if not_examples:
            hint = (
                " (records that are not Examples are fine if you wrote raw bytes: use --no-parse)"
            )
        print(
            f"{len(failed)} of {plural(len(paths), 'file')} failed verification: "
            f"{_names(failed)}{hint}"
        )
        return EXIT_DATA
    if not ctx.quiet:
        print(f"all {plural(len(paths), 'file')} ok: {plural(records, 'record')}")
    return EXIT_OK


#: Failed files the summary names before "and N more".
NAMED_FAILURES = 10


def _names(paths: list[str]) -> str:
    """The failed files, for the summary line (the first :data:`NAMED_FAILURES`)."""
    names = ", ".join(paths[:NAMED_FAILURES])
    more = len(paths) - NAMED_FAILURES
    return names + (f" and {more:,} more" if more > 0 else "")


def register(sub: Any) -> None:
    """Add the sub-command and its options."""
    p = add_command(
        sub,
        "verify",
        run,
        "check every CRC and that every record parses",
        "Check the length and data CRC of every record and that every record parses as "
        "a tf.train.Example or SequenceExample. Each problem is one line with its file, "
        "record number and byte offset (of the decompressed stream for GZIP/ZLIB). "
        "Reading goes on past a damaged record: right after it when only its data is "
        "damaged, else at the next valid record header. Exit code 0 only when every "
        "file is intact.",
        examples_text(f"{PROG} verify data/*.tfrecord", f"{PROG} verify raw.tfrecord --no-parse"),
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument(
        "--no-parse",
        action="store_true",
        help="check the framing and CRCs only (records that are not Examples)",
    )
