"""``tfrecord-lite convert``: recompress, merge or split files keeping every record
in order; TFRecords to Parquet or Arrow IPC (Feather) and back; TFRecords, tables and
TFDS / RLDS directories to WebDataset shards (``_convert_webdataset``) and ArrayRecord
(``_convert_array_record``); TFDS directories to tables (``_convert_tfds``). The
records come from ``_convert_sources``; tables are read, parsed and written in three
threads (``_convert_pipeline``).

The output's format comes from its name or ``--to`` (see ``_convert_names``); a name
and options that disagree are refused before anything is read or written.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Optional

from .._examples import DEFAULT_SAMPLE
from .._files import TFRecordWriter, fs, shard_name
from ._common import (
    EXIT_DATA,
    EXIT_OK,
    PROG,
    Ctx,
    UsageError,
    add_command,
    examples_text,
    expand_inputs,
    positive_int,
    remove_inprogress,
    same_file,
    tfds_inputs,
)
from ._convert_names import FORMATS, KNOWN, READS, Target, input_format, output_target
from ._convert_sources import Records, TableRecords, TfdsRecords
from ._convert_tables import TableFile, read_tables, schema_of
from ._convert_webdataset import TarShards, parse_size
from ._output import plural

if TYPE_CHECKING:
    from ._convert_tfds import TfdsInput

#: Batches read ahead of the parser.
READ_AHEAD = 2


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


def _write_table_file(
    target: Target, out: str, tables: Iterator[Any], schema: Optional[Any]
) -> int:
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
    args: argparse.Namespace, target: Target, inputs: list[str], records: Records
) -> int:
    """TFRecords -> one Parquet / Arrow file, columns as tfrecord_lite.arrow reads them.

    The schema is what ``infer_schema`` gives (every record checked). In one pass where
    that is sure to be the sample's schema: the records are converted with the schema
    of the first ``--sample`` records, and a later record that does not fit it fails
    to parse, which drops what was written and starts again with every record checked
    first (the second pass ``arrow.read_table`` always makes).
    """
    from .._errors import ParseError
    from .._examples import infer_schema
    from .._tables import ReadPlan

    out = args.output
    if args.schema is not None:  # given: nothing to infer
        features, sequence_features = _given_schema(args.schema)
        plan = ReadPlan(features, sequence_features, sample=args.sample)
        return _convert_records(target, out, plan, _read_ahead(records))
    # With --skip-bad the schema comes from the good records only, so damage is not
    # fatal there either. (Reading ahead while the sample is inferred would only slow
    # the inference: both hold the GIL for most of their work.)
    source: Any = records("schema", report=False) if records.skip_bad else inputs
    sampled = infer_schema(source, args.sample, check=False)
    # keys seen only as an empty Feature() get their kind from later records: checked path
    untyped = any(not set(st.kinds) - {None} for st in sampled.stats.values())
    if dict(sampled) and not sampled.is_sequence and not untyped:
        plan = ReadPlan(dict(sampled), None, sample=args.sample)
        try:
            return _convert_records(target, out, plan, _read_ahead(records))
        except ParseError:
            if sampled.records < args.sample:  # every record was in the sample
                raise
            records.skipped = 0  # the records are read again from the start
    source = records("schema", report=False) if records.skip_bad else inputs
    plan = ReadPlan(None, None, source, sample=args.sample)
    return _convert_records(target, out, plan, _read_ahead(records))


def _given_schema(path: str) -> tuple[dict[str, Any], Optional[dict[str, Any]]]:
    """``--schema FILE``: the feature dict (and feature-list dict) of a JSON file, as
    ``tfrecord-lite schema --format json`` writes it or a plain ``{"key": spec}`` object."""
    import json

    from .._tables import specs_from_json

    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if isinstance(data, dict) and isinstance(data.get("features"), dict):
            features = specs_from_json(json.dumps(data["features"]), "--schema features")
            lists = data.get("sequence_features") or None
            seq = (
                specs_from_json(json.dumps(lists), "--schema sequence_features") if lists else None
            )
        else:
            features, seq = specs_from_json(json.dumps(data), "--schema"), None
    except FileNotFoundError:
        raise
    except (OSError, ValueError, TypeError) as e:
        raise UsageError(
            f"--schema {path}: {e} (write one with: {PROG} schema FILE --format json)"
        ) from None
    if not features and not seq:
        raise UsageError(f"--schema {path} names no features")
    return features or {}, seq


def _read_ahead(records: Records) -> Any:
    """The records' batches, read in a thread of their own (see ``_convert_pipeline``)."""
    from .._tables import DEFAULT_BATCH_SIZE
    from ._convert_pipeline import Prefetch

    read = Prefetch(records.batches(DEFAULT_BATCH_SIZE), depth=READ_AHEAD, name="read")
    read.start()
    return read


def _convert_records(target: Target, out: str, plan: Any, read: Any) -> int:
    """The batches ``read`` gives parsed by ``plan`` into a table file: read, parsed and
    written in three threads (see ``_convert_pipeline``)."""
    from ._convert_pipeline import Prefetch

    with read, Prefetch((plan.convert(batch) for batch in read), name="parse") as tables:
        return _write_table_file(target, out, iter(tables), plan.schema)


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


def _copy_records(args: argparse.Namespace, target: Target, records: Records) -> int:
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


def _records_to_webdataset(args: argparse.Namespace, shards: TarShards, records: Records) -> str:
    """Records -> WebDataset samples in tar shards (see ``_convert_samples``)."""
    from ._convert_samples import SampleMaker
    from ._convert_webdataset import write_samples

    tfds = records.tfds if isinstance(records, TfdsRecords) else None
    maker = SampleMaker(args.key, tfds.sequence_keys() if tfds is not None else frozenset())

    def samples() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
        for n, data in enumerate(records()):
            path, index = records.where
            yield maker.make(data, n, path, index)

    write_samples(shards, samples())
    return shards.describe()


def _check_options(args: argparse.Namespace, target: Target, tfds: bool) -> None:
    """Options that do not apply to the output or the inputs: refused before anything runs."""
    out = args.output
    if target.format != "tfrecord" and (args.shards or args.index):
        raise UsageError(
            f"--shards and --index are for TFRecord output, not {target.describe()} ({out!r})"
        )
    if target.format != "webdataset":
        given = [o for o, v in (("--shard-size", args.shard_size), ("--key", args.key)) if v]
        given += ["--overwrite"] if args.overwrite else []
        if given:
            raise UsageError(
                f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for WebDataset "
                f"output (.tar), not {target.describe()} ({out!r})"
            )
    elif args.shard_size is None and "%" in os.path.basename(out):
        raise UsageError(f"output {out!r} is a shard pattern: give --shard-size too")
    if not tfds and (args.split is not None or args.steps is not None):
        raise UsageError("--split and --steps are for TFDS dataset directories as inputs")
    if tfds and args.steps == "rows" and target.format not in ("parquet", "arrow"):
        raise UsageError(
            f"--steps rows is for Parquet and Arrow output; {target.describe()} output gets "
            "the episodes' records as they are stored"
        )
    if args.schema is not None and (tfds or target.format not in ("parquet", "arrow")):
        raise UsageError(
            "--schema is for TFRecord inputs written as Parquet or Arrow (the columns it names)"
        )
    if tfds and (args.skip_bad or args.from_format):
        raise UsageError(
            f"{'--skip-bad' if args.skip_bad else '--from'} is for input files, not TFDS "
            "dataset directories"
        )


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    out = args.output
    # What to write, from the name and the options, before anything is read or written.
    target = output_target(out, args.to, args.compression)
    dirs = tfds_inputs(args.inputs)
    _check_options(args, target, dirs is not None)
    tfds: Optional[TfdsInput] = None
    if dirs is not None:
        from ._convert_tfds import TfdsInput

        inputs = dirs
        source = "tfds"
        tfds = TfdsInput(dirs, args.split, args.steps or "lists")  # checked before writing
    else:
        inputs = expand_inputs(args.inputs)
        source = input_format(inputs, args.from_format)
    shards: Optional[int] = args.shards
    outputs = [shard_name(out, i, shards) for i in range(shards)] if shards else [out]
    _check_outputs(outputs, [] if tfds else inputs)
    if source not in ("tfrecord", "tfds") and source == target.format:
        raise UsageError(
            f"the inputs are {target.describe()} already and so is the output {out!r}: "
            "convert turns TFRecords into tables and back"
        )
    tar = TarShards(out, args.shard_size, args.overwrite) if target.format == "webdataset" else None
    if tar is not None:
        tar.check()  # an output that exists: refused unless --overwrite
    records: Records
    if tfds is not None:
        records = TfdsRecords(args, ctx, tfds)
    elif source in READS and source != "tfrecord":
        records = TableRecords(args, ctx, inputs, source)
    else:
        records = Records(args, ctx, inputs)
    where = outputs[0] if len(outputs) == 1 else f"{outputs[0]} ... {outputs[-1]}"
    if target.format in ("parquet", "arrow") and tfds is not None:
        with ctx.bar(None if args.steps == "rows" else tfds.num_examples, "convert", "ex") as bar:
            written = _write_table_file(target, out, tfds.tables(bar.update), None)
    elif target.format == "webdataset":
        assert tar is not None
        _make_parent(out)
        where = _records_to_webdataset(args, tar, records)
        written = tar.samples
    elif target.format == "array_record":
        from ._convert_array_record import array_record_module, write_array_record

        array_record_module()  # the install hint before anything is read
        _make_parent(out)
        written = write_array_record(out, records())
    elif source in ("tfrecord", "tfds") and target.format == "tfrecord":
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
        if tar is not None and len(tar.paths) > 1:
            many = f", {len(tar.paths)} shards"
        noun = (
            "sample"
            if tar is not None
            else ("row" if tfds and target.format in ("parquet", "arrow") else "record")
        )
        print(f"wrote {plural(written, noun)} to {where} ({target.describe()}{many}){extra}")
    return EXIT_DATA if records.skipped else EXIT_OK


def register(sub: Any) -> None:
    """Add the sub-command and its options."""
    p = add_command(
        sub,
        "convert",
        run,
        "recompress, merge or split files (order kept); TFRecords to Parquet, Arrow, "
        "WebDataset, ArrayRecord and back; TFDS / RLDS directories to any of them",
        "Copy the records of the inputs, in order, to OUT (or to OUT-00000-of-0000N with "
        "--shards N: contiguous runs, so the shards read in order give the records in "
        "order). Any damage stops the copy (nothing is left behind) unless --skip-bad.\n\n"
        "The output's format and compression come from its name: " + KNOWN + ". --to and "
        "--compression may say the same; a name they disagree with, or an extension of "
        "another format, is refused (exit 2) before anything is written. Parquet and Arrow "
        "inputs (by their names, or --from) are written back as Examples.\n\n"
        "WebDataset: one sample per record, KEY.jpg / KEY.png for an encoded image (byte "
        "for byte), KEY.json for the other features, KEY.FEATURE.npy for long arrays; "
        "--shard-size splits the samples into OUT-000000.tar, OUT-000001.tar ... "
        "ArrayRecord (the array_record extra): the records' bytes as they are.\n\n"
        "TFDS / RLDS dataset directories (holding dataset_info.json): --split picks the "
        "split; to Parquet / Arrow one row per example (or per step with --steps rows), "
        "images kept encoded; to the other formats the records as they are stored.",
        examples_text(
            f"{PROG} convert train.tfrecord train.tfrecord.gz",
            f"{PROG} convert 'part-*.tfrecord' merged.tfrecord",
            f"{PROG} convert big.tfrecord out/train --shards 16",
            f"{PROG} convert damaged.tfrecord repaired.tfrecord --skip-bad",
            f"{PROG} convert 'train-*.tfrecord' train.parquet",
            f"{PROG} convert 'train-*.tfrecord' train.arrow",
            f"{PROG} convert 'train-*.tfrecord' train.parquet --schema features.json",
            f"{PROG} convert train.parquet train.tfrecord.zz",
            f"{PROG} convert 'train-*.tfrecord' shards/train.tar --shard-size 1GB",
            f"{PROG} convert train.tfrecord train.array_record",
            f"{PROG} convert ~/tensorflow_datasets/bridge/0.1.0 bridge.parquet --split train",
            f"{PROG} convert ~/tensorflow_datasets/bridge/0.1.0 steps.parquet --split train "
            "--steps rows",
        ),
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="IN",
        help="input files, globs or name@N specs, or TFDS dataset directories",
    )
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
        "arrow write one file, columns as in tfrecord_lite.arrow (needs pyarrow); "
        "webdataset tar files; array_record one file (needs array-record)",
    )
    p.add_argument(
        "--from",
        dest="from_format",
        choices=READS,
        help="input format (default: parquet / arrow when every input is named so)",
    )
    p.add_argument(
        "--sample",
        type=positive_int,
        default=DEFAULT_SAMPLE,
        metavar="N",
        help=f"records the table schema is inferred from (default {DEFAULT_SAMPLE})",
    )
    p.add_argument(
        "--schema",
        metavar="FILE",
        help="the features to write as columns (JSON, as `schema --format json` writes it, "
        'or {"key": "int64", ...}) instead of the inferred schema',
    )
    wds = p.add_argument_group("WebDataset output (.tar)")
    wds.add_argument(
        "--shard-size",
        type=_size_arg,
        metavar="SIZE",
        help="split the samples into tar shards of at most SIZE (500MB, 1GB, 2GiB), "
        "named OUT-000000.tar, OUT-000001.tar ... or after a %%06d in OUT",
    )
    wds.add_argument(
        "--key",
        metavar="FEATURE",
        help="the feature whose value (one string or integer) is each sample's key "
        "(default: the record's index, zero-padded)",
    )
    wds.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing output (and remove its shards the new run does not write)",
    )
    tf = p.add_argument_group("TFDS / RLDS dataset directories as inputs")
    tf.add_argument(
        "--split",
        help="the split to read: train, test, 'train[:10%%]' ... (default: the only one)",
    )
    tf.add_argument(
        "--steps",
        choices=("lists", "rows"),
        default=None,
        help="episodic (RLDS) datasets to Parquet / Arrow: one row per episode, its steps "
        "as list columns (lists, the default), or one row per step with episode_index and "
        "step_index (rows)",
    )


def _size_arg(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
