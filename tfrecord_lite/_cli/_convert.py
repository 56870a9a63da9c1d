"""``tfrecord-lite convert``: recompress, merge or split files keeping every record
in order; TFRecords to Parquet and back (``--to`` / ``--from parquet``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from typing import Any, Optional

from .._examples import (
    DEFAULT_SAMPLE,
)
from .._files import Damage, SalvageInfo, TFRecordWriter, fs, salvage_file, shard_name
from ._common import (
    EXIT_DATA,
    EXIT_OK,
    PROG,
    Ctx,
    UsageError,
    add_command,
    compression_arg,
    damage_line,
    examples_text,
    expand_inputs,
    positive_int,
    remove_inprogress,
    same_file,
    say,
    total_size,
)
from ._output import plural

_PARQUET_SUFFIXES = (".parquet", ".pq")


def _convert_parquet(args: argparse.Namespace, ctx: Ctx, inputs: list[str]) -> int:
    """``convert --to parquet`` (TFRecords -> one Parquet file), or Parquet inputs -> TFRecords."""
    from .._tables import require, require_pyarrow
    from ..arrow import iter_tables, table_records

    pa = require_pyarrow("convert --to/--from parquet")
    pq = require("pyarrow.parquet", "convert --to/--from parquet", "pyarrow", "arrow")

    out = args.output
    for i in inputs:
        if same_file(i, out) or os.path.abspath(i) == os.path.abspath(out):
            raise UsageError(f"output {out!r} is also an input: write to another file")
    if os.path.isdir(out):
        raise UsageError(f"output {out!r} is a directory")
    out_dir = os.path.dirname(out)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    from_parquet = args.from_format == "parquet" or (
        args.from_format is None and all(i.lower().endswith(_PARQUET_SUFFIXES) for i in inputs)
    )
    written = 0
    if args.to == "parquet":
        if from_parquet:
            raise UsageError("the inputs are Parquet already: --to parquet needs TFRecord inputs")
        if args.shards or args.index or args.compression:
            raise UsageError("--shards, --index and --compression are for TFRecord output")
        tmp = f"{out}.tmp-{os.getpid()}"
        writer = None
        try:
            for table in iter_tables(inputs, sample=args.sample):
                if writer is None:
                    writer = pq.ParquetWriter(tmp, table.schema)
                writer.write_table(table)
                written += table.num_rows
            if writer is None:  # no records: an empty file with no columns
                writer = pq.ParquetWriter(tmp, pa.schema([]))
            writer.close()
            os.replace(tmp, out)
        except BaseException:
            if writer is not None:
                with contextlib.suppress(Exception):
                    writer.close()
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise
        what = "Parquet"
    else:
        if not from_parquet:
            raise UsageError("--from parquet: the inputs must be Parquet files")
        comp = compression_arg(args.compression)
        from .._files import ShardedWriter

        if args.shards:
            sharded = ShardedWriter(
                out, num_shards=args.shards, compression=comp, write_index=args.index
            )
            try:
                for path in inputs:
                    for batch in pq.ParquetFile(path).iter_batches():
                        written += sharded.write_all(table_records(pa.Table.from_batches([batch])))
            except BaseException:
                sharded.abort()
                remove_inprogress(out, args.shards)
                raise
            paths = sharded.close()
            out = f"{paths[0]} ... {paths[-1]}" if len(paths) > 1 else paths[0]
        else:
            with TFRecordWriter(out, comp, atomic=True) as w:
                for path in inputs:
                    for batch in pq.ParquetFile(path).iter_batches():
                        written += w.write_all(table_records(pa.Table.from_batches([batch])))
            if args.index:
                from .._files import create_index

                create_index(out)
        what = comp or "uncompressed"
    if not ctx.quiet:
        print(f"wrote {plural(written, 'record')} to {out} ({what})")
    return EXIT_OK


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    out = args.output
    inputs = expand_inputs(args.inputs)
    if (
        args.to == "parquet"
        or args.from_format == "parquet"
        or all(i.lower().endswith(_PARQUET_SUFFIXES) for i in inputs)
    ):
        return _convert_parquet(args, ctx, inputs)
    comp = compression_arg(args.compression)
    shards: Optional[int] = args.shards
    if shards is not None and shards < 1:
        raise UsageError("--shards must be at least 1")
    outputs = [shard_name(out, i, shards) for i in range(shards)] if shards else [out]
    for o in outputs:
        if os.path.isdir(o):
            raise UsageError(f"output {o!r} is a directory")
        for i in inputs:
            if same_file(i, o) or os.path.abspath(i) == os.path.abspath(o):
                raise UsageError(f"output {o!r} is also an input: write to another file")
    out_dir = os.path.dirname(out)
    if out_dir and not fs.is_url(out):
        os.makedirs(out_dir, exist_ok=True)
    skipped = 0

    def good_records(desc: str, report: bool) -> Iterator[bytes]:
        nonlocal skipped
        with ctx.bar(total_size(inputs), desc, "B") as bar:
            for path in inputs:
                info = SalvageInfo()
                for item in salvage_file(path, on_bytes=bar.update, info=info):
                    if isinstance(item, Damage):
                        if not args.skip_bad:
                            raise item.error
                        if report:
                            skipped += 1
                            say(bar, damage_line(item, path, bool(info.compression)), err=True)
                        continue
                    yield item.data

    written = 0
    if shards:
        from .._files import ShardedWriter

        total = sum(1 for _ in good_records("counting", False))
        writer = ShardedWriter(out, num_shards=shards, compression=comp, write_index=args.index)
        try:
            for k, data in enumerate(good_records("convert", True)):
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
            for data in good_records("convert", True):
                w.write(data)
                written += 1
        if args.index:
            from .._files import create_index

            create_index(out)
    if not ctx.quiet:
        where = outputs[0] if len(outputs) == 1 else f"{outputs[0]} ... {outputs[-1]}"
        extra = f"; {plural(skipped, 'damaged record')} skipped" if skipped else ""
        print(
            f"wrote {plural(written, 'record')} to {where} "
            f"({comp or 'uncompressed'}{', ' + str(len(outputs)) + ' shards' if shards else ''})"
            f"{extra}"
        )
    return EXIT_DATA if skipped else EXIT_OK


def register(sub: Any) -> None:
    """Add the sub-command and its options."""
    p = add_command(
        sub,
        "convert",
        run,
        "recompress, merge or split files, keeping every record in order",
        "Copy the records of the inputs, in order, to OUT (or to OUT-00000-of-0000N with "
        "--shards N: contiguous runs, so the shards read in order give the records in "
        "order). Any damage stops the copy (nothing is left behind) unless --skip-bad.",
        examples_text(
            f"{PROG} convert train.tfrecord train.tfrecord.gz --compression GZIP",
            f"{PROG} convert 'part-*.tfrecord' merged.tfrecord",
            f"{PROG} convert big.tfrecord out/train --shards 16",
            f"{PROG} convert damaged.tfrecord repaired.tfrecord --skip-bad",
            f"{PROG} convert 'train-*.tfrecord' train.parquet --to parquet",
            f"{PROG} convert train.parquet train.tfrecord.gz --compression GZIP",
        ),
    )
    p.add_argument("inputs", nargs="+", metavar="IN", help="input files, globs or name@N specs")
    p.add_argument("output", metavar="OUT", help="output file (or shard prefix with --shards)")
    p.add_argument(
        "--compression",
        type=str.upper,
        choices=("GZIP", "ZLIB", "NONE"),
        default=None,
        help="compression of the output (default: none)",
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
        choices=("tfrecord", "parquet"),
        default="tfrecord",
        help="output format: parquet writes one Parquet file, columns as in "
        "tfrecord_lite.arrow (needs pyarrow)",
    )
    p.add_argument(
        "--from",
        dest="from_format",
        choices=("tfrecord", "parquet"),
        help="input format (default: parquet when every input ends in .parquet / .pq)",
    )
    p.add_argument(
        "--sample",
        type=positive_int,
        default=DEFAULT_SAMPLE,
        metavar="N",
        help=f"records the Parquet schema is inferred from (default {DEFAULT_SAMPLE})",
    )
