"""``tfrecord-lite convert``: recompress, merge or split files keeping every record
in order; TFRecords to Parquet or Arrow IPC (Feather) and back.

The output's format comes from its name or ``--to`` (see ``_convert_names``); a name
and options that disagree are refused before anything is read or written.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from typing import Any, Optional

from .._examples import DEFAULT_SAMPLE
from .._files import Damage, SalvageInfo, TFRecordWriter, fs, salvage_file, shard_name
from ._common import (
    EXIT_DATA,
    EXIT_OK,
    PROG,
    Ctx,
    UsageError,
    add_command,
    damage_line,
    examples_text,
    expand_inputs,
    positive_int,
    remove_inprogress,
    same_file,
    say,
    total_size,
)
from ._convert_names import FORMATS, KNOWN, Target, input_format, output_target
from ._convert_tables import TableFile, read_tables, schema_of
from ._output import plural


class _Records:
    """The good records of TFRecord inputs, in order, with the damaged ones counted.

    Damage stops the copy (its error is raised) unless ``--skip-bad``: then each
    damaged stretch is reported on stderr and left out.
    """

    def __init__(self, args: argparse.Namespace, ctx: Ctx, inputs: list[str]) -> None:
        self.skip_bad = bool(args.skip_bad)
        self.ctx = ctx
        self.inputs = inputs
        self.skipped = 0

    def __call__(self, desc: str = "convert", report: bool = True) -> Iterator[bytes]:
        with self.ctx.bar(total_size(self.inputs), desc, "B") as bar:
            for path in self.inputs:
                info = SalvageInfo()
                for item in salvage_file(path, on_bytes=bar.update, info=info):
                    if isinstance(item, Damage):
                        if not self.skip_bad:
                            raise item.error
                        if report:
                            self.skipped += 1
                            say(bar, damage_line(item, path, bool(info.compression)), err=True)
                        continue
                    yield item.data


def _check_outputs(outputs: list[str], inputs: list[str]) -> None:
    for o in outputs:
        if os.path.isdir(o):
            raise UsageError(f"output {o!r} is a directory")
        for i in inputs:
            if same_file(i, o) or os.path.abspath(i) == os.path.abspath(o):
                raise UsageError(f"output {o!r} is also an input: write to another file")


def _make_parent(out: str) -> None:
    out_dir = os.path.dirname(out)
    if out_dir and not fs.is_url(out):
        os.makedirs(out_dir, exist_ok=True)


def _write_table_file(target: Target, out: str, tables: Iterator[Any], schema: Any) -> int:
    """Write the tables to ``out`` atomically; the number of rows written."""
    if fs.is_url(out):
        raise UsageError(f"{target.describe()} output is written to a local path, not {out!r}")
    _make_parent(out)
    sink = TableFile(out, target.format)
    written = 0
    try:
        for table in tables:
            sink.write(table)
            written += table.num_rows
        sink.commit(schema)
    except BaseException:
        sink.abort()
        raise
    return written


def _records_to_table(
    args: argparse.Namespace, target: Target, inputs: list[str], records: _Records
) -> int:
    """TFRecords -> one Parquet / Arrow file, columns as tfrecord_lite.arrow reads them."""
    from .._tables import DEFAULT_BATCH_SIZE, ReadPlan, batches

    # The schema from the records (every one is checked, see infer_schema); with
    # --skip-bad from the good ones only, so damage is not fatal there either.
    source: Any = records("schema", report=False) if records.skip_bad else inputs
    plan = ReadPlan(None, None, source, sample=args.sample)
    tables = (plan.convert(batch) for batch in batches(records(), DEFAULT_BATCH_SIZE))
    return _write_table_file(target, args.output, tables, plan.schema)


def _tables_to_records(
    args: argparse.Namespace, target: Target, inputs: list[str], source: str
) -> tuple[str, int]:
    """Parquet / Arrow inputs -> TFRecords (one file, or --shards): (where, records)."""
    from .._tables import table_records

    out = args.output
    written = 0
    if args.shards:
        from .._files import ShardedWriter

        sharded = ShardedWriter(
            out, num_shards=args.shards, compression=target.compression, write_index=args.index
        )
        try:
            for path in inputs:
                for table in read_tables(path, source):
                    written += sharded.write_all(table_records(table))
        except BaseException:
            sharded.abort()
            remove_inprogress(out, args.shards)
            raise
        paths = sharded.close()
        out = f"{paths[0]} ... {paths[-1]}" if len(paths) > 1 else paths[0]
    else:
        with TFRecordWriter(out, target.compression, atomic=True) as w:
            for path in inputs:
                for table in read_tables(path, source):
                    written += w.write_all(table_records(table))
        if args.index:
            from .._files import create_index

            create_index(out)
    return out, written


def _copy_records(args: argparse.Namespace, target: Target, records: _Records) -> int:
    """TFRecords -> TFRecords: the records' bytes as they are, recompressed, merged or split."""
    out, shards, comp = args.output, args.shards, target.compression
    written = 0
    if shards:
        from .._files import ShardedWriter

        total = sum(1 for _ in records("counting", False))
        writer = ShardedWriter(out, num_shards=shards, compression=comp, write_index=args.index)
        try:
            for k, data in enumerate(records()):
                writer.write(data, shard=min(k * shards // max(total, 1), shards - 1))
                written += 1
        except BaseException:
            writer.abort()
            remove_inprogress(out, shards)
            raise
        writer.close()
    else:
        # atomic: a temporary file renamed at the end (a URL: an upload completed at
        # the end); an error or Ctrl-C leaves nothing under the output name.
        with TFRecordWriter(out, comp, atomic=True) as w:
            for data in records():
                w.write(data)
                written += 1
        if args.index:
            from .._files import create_index

            create_index(out)
    return written


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    out = args.output
    # What to write, from the name and the options, before anything is read or written.
    target = output_target(out, args.to, args.compression)
    if target.format != "tfrecord" and (args.shards or args.index):
        raise UsageError(
            f"--shards and --index are for TFRecord output, not {target.describe()} ({out!r})"
        )
    inputs = expand_inputs(args.inputs)
    source = input_format(inputs, args.from_format)
    shards: Optional[int] = args.shards
    outputs = [shard_name(out, i, shards) for i in range(shards)] if shards else [out]
    _check_outputs(outputs, inputs)
    if source != "tfrecord" and source == target.format:
        raise UsageError(
            f"the inputs are {target.describe()} already and so is the output {out!r}: "
            "convert turns TFRecords into tables and back"
        )
    records = _Records(args, ctx, inputs)
    where = outputs[0] if len(outputs) == 1 else f"{outputs[0]} ... {outputs[-1]}"
    if source == "tfrecord" and target.format == "tfrecord":
        _make_parent(out)
        written = _copy_records(args, target, records)
    elif source == "tfrecord":
        written = _records_to_table(args, target, inputs, records)
    elif target.format == "tfrecord":
        _make_parent(out)
        where, written = _tables_to_records(args, target, inputs, source)
    else:  # Parquet <-> Arrow: the same columns in the other container
        tables = (t for path in inputs for t in read_tables(path, source))
        written = _write_table_file(target, out, tables, schema_of(inputs[0], source))
    if not ctx.quiet:
        extra = f"; {plural(records.skipped, 'damaged record')} skipped" if records.skipped else ""
        many = f", {len(outputs)} shards" if shards else ""
        print(f"wrote {plural(written, 'record')} to {where} ({target.describe()}{many}){extra}")
    return EXIT_DATA if records.skipped else EXIT_OK


def register(sub: Any) -> None:
    """Add the sub-command and its options."""
    p = add_command(
        sub,
        "convert",
        run,
        "recompress, merge or split files (order kept); TFRecords to Parquet/Arrow and back",
        "Copy the records of the inputs, in order, to OUT (or to OUT-00000-of-0000N with "
        "--shards N: contiguous runs, so the shards read in order give the records in "
        "order). Any damage stops the copy (nothing is left behind) unless --skip-bad.\n\n"
        "The output's format and compression come from its name: " + KNOWN + ". --to and "
        "--compression may say the same; a name they disagree with, or an extension of "
        "another format, is refused (exit 2) before anything is written. Parquet and Arrow "
        "inputs (by their names, or --from) are written back as Examples.",
        examples_text(
            f"{PROG} convert train.tfrecord train.tfrecord.gz",
            f"{PROG} convert 'part-*.tfrecord' merged.tfrecord",
            f"{PROG} convert big.tfrecord out/train --shards 16",
            f"{PROG} convert damaged.tfrecord repaired.tfrecord --skip-bad",
            f"{PROG} convert 'train-*.tfrecord' train.parquet",
            f"{PROG} convert 'train-*.tfrecord' train.arrow",
            f"{PROG} convert train.parquet train.tfrecord.zz",
        ),
    )
    p.add_argument("inputs", nargs="+", metavar="IN", help="input files, globs or name@N specs")
    p.add_argument(
        "output",
        metavar="OUT",
        help="output file (or shard prefix with --shards); its extension says the format",
    )
    p.add_argument(
        "--compression",
        type=str.upper,
        choices=("GZIP", "ZLIB", "NONE"),
        default=None,
        help="compression of TFRecord output (default: from the name, .gz GZIP, .zz ZLIB; "
        "else none)",
    )
    p.add_argument("--shards", type=positive_int, metavar="N", help="split into N shards")
    p.add_argument(
        "--skip-bad",
        action="store_true",
        help="drop damaged records (each is reported) instead of stopping",
    )
    p.add_argument("--index", action="store_true", help="write an index file beside each output")
    p.add_argument(
        "--to",
        choices=FORMATS,
        default=None,
        help="output format (default: from OUT's extension, else tfrecord); parquet and "
        "arrow write one file, columns as in tfrecord_lite.arrow (needs pyarrow)",
    )
    p.add_argument(
        "--from",
        dest="from_format",
        choices=FORMATS,
        help="input format (default: parquet / arrow when every input is named so)",
    )
    p.add_argument(
        "--sample",
        type=positive_int,
        default=DEFAULT_SAMPLE,
        metavar="N",
        help=f"records the table schema is inferred from (default {DEFAULT_SAMPLE})",
    )
