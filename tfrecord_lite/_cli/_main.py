"""The ``tfrecord-lite`` command line tool (also ``python -m tfrecord_lite``).

Commands: info, head, count, verify, schema, index, convert, from-images,
preview. ``tfrecord-lite COMMAND --help`` shows each one's options and examples.

Exit codes: 0 all is well; 1 a problem with the data (bad CRC, truncated file,
records that are not Examples, images that could not be decoded) or the
command failed; 2 a usage error (bad arguments, input files that do not
exist). Errors are one line on stderr; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import math
import os
import random
import sys
from collections.abc import Generator, Iterator, Sequence
from typing import Any, Callable, Optional, Union

import numpy as np

from .. import example_pb2
from .._errors import DataLossError, ParseError, TFRecordError
from .._examples import (
    DEFAULT_SAMPLE,
    FeatureStats,
    add_records,
    infer_schema,
    schema_from_stats,
)
from .._files import SalvageInfo, TFRecordWriter, expand_paths, fs, salvage_file, shard_name
from .._record import Damage, Record, crc_backend
from .._version import __version__
from ._progress import Progress, progress

__all__ = ["main"]

PROG = "tfrecord-lite"
EXIT_OK = 0
EXIT_DATA = 1
EXIT_USAGE = 2

#: Values shown per feature by ``head`` before "... (N values)".
SHOW_VALUES = 8
#: Characters of a text value shown by ``head``.
SHOW_TEXT = 60
#: Bytes shown in hex for a binary value.
SHOW_HEX = 16


class UsageError(Exception):
    """A problem with the command line itself (exit code 2)."""


class _Ctx:
    def __init__(self, args: argparse.Namespace) -> None:
        self.quiet: bool = bool(getattr(args, "quiet", False))
        self.debug: bool = bool(getattr(args, "debug", False))

    def bar(self, total: Optional[float] = None, desc: str = "", unit: str = "it") -> Progress:
        return progress(total, desc=desc, unit=unit, quiet=self.quiet)


def _say(bar: Optional[Progress], text: str, err: bool = False) -> None:
    out = sys.stderr if err else sys.stdout
    if bar is not None:
        bar.write(text, file=out)
    else:
        print(text, file=out, flush=True)


# --------------------------------------------------------------------------- shared helpers


def _inputs(items: Sequence[str]) -> list[str]:
    """Expand paths, globs, directories and ``name@N`` specs; every file must exist."""
    out: list[str] = []
    for item in items:
        # URLs (s3://, gs://, ...) too: credentials and endpoints from the environment.
        for p in expand_paths(item):
            path = os.fspath(p)  # type: ignore[arg-type]
            if not fs.exists(path):
                raise FileNotFoundError(2, "No such file or directory", path)
            if fs.isdir(path):
                raise UsageError(f"{path!r} is a directory")
            out.append(path)
    return out


def _total_size(paths: Sequence[str]) -> int:
    return sum(fs.size(p) for p in paths)


def _plural(n: int, word: str, plural: Optional[str] = None) -> str:
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def _where(err: TFRecordError, compressed: bool) -> str:
    parts = []
    if err.index is not None:
        parts.append(f"record {err.index}")
    if err.offset is not None:
        parts.append(f"{'decompressed ' if compressed else ''}byte offset {err.offset}")
    return ", ".join(parts)


def _damage_line(item: Damage, path: str, compressed: bool) -> str:
    err = item.error
    where = _where(err, compressed)
    line = f"{path}: {where + ': ' if where else ''}{err.message}"
    at = f"{'decompressed ' if compressed else ''}byte offset {item.resume}"
    if item.resume is not None:
        if item.exact:
            line += f"; skipped it, reading on at {at}"
        else:
            line += (
                f"; reading on at the next valid record, {at} "
                "(records may have been lost: record numbers from here on are counts)"
            )
    return line


def _parse_any(data: bytes) -> Optional[Any]:
    """The record as a SequenceExample (an Example parses to its context), or None."""
    try:
        return example_pb2.SequenceExample.FromString(data)
    except Exception:
        return None


def _parse_error(data: bytes) -> str:
    try:
        example_pb2.SequenceExample.FromString(data)
    except Exception as e:
        return " ".join(str(e).split()) or type(e).__name__
    return ""


def _records(
    ctx: _Ctx, paths: Sequence[str], desc: str, bar: Optional[Progress] = None
) -> Generator[tuple[str, Record], None, None]:
    """Every record of the files, in order; the first damage raises its error."""
    own = bar is None
    bar = bar or ctx.bar(_total_size(paths), desc, "B")
    try:
        for path in paths:
            for item in salvage_file(path, on_bytes=bar.update):
                if isinstance(item, Damage):
                    raise item.error
                yield path, item
    finally:
        if own:
            bar.close()


# --------------------------------------------------------------------------- info


def _span(lo: Optional[int], hi: Optional[int]) -> str:
    if lo is None or hi is None:
        return "-"
    return str(lo) if lo == hi else f"{lo}..{hi}"


def _num(value: Optional[float], kind: Optional[str]) -> str:
    if value is None:
        return ""
    if kind == "float_list":
        return str(np.float32(value))
    return str(int(value))


def _kind_text(st: FeatureStats) -> str:
    kinds = {k: v for k, v in st.kinds.items() if k is not None}
    if len(kinds) == 1:
        return next(iter(kinds))
    if not kinds:
        return "(empty)"
    return "mixed: " + ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items()))


def _table(rows: list[list[str]], indent: str = "    ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def _feature_rows(stats: dict[str, FeatureStats], n: int, sequence: bool) -> list[str]:
    head = ["feature", "kind"]
    head += ["steps", "values/step"] if sequence else ["values/record"]
    head += ["length", "present", "value range"]
    rows = [head]
    for key in sorted(stats):
        st = stats[key]
        kind = st.kind
        row = [_text(key), _kind_text(st)]
        if sequence:
            row.append(_span(st.min_steps, st.max_steps))
        row.append(_span(st.min_count, st.max_count))
        fixed = st.fixed and not st.kinds.get(None, 0) and (sequence or st.present == n)
        row.append("fixed" if fixed else "variable")
        row.append(f"{st.present}/{n}")
        if st.min_value is not None:
            row.append(f"{_num(st.min_value, kind)} .. {_num(st.max_value, kind)}")
        else:
            row.append("")
        rows.append(row)
    return _table(rows)


def _tfds_dirs(items: Sequence[str]) -> Optional[list[str]]:
    """The inputs if they are prepared TFDS dataset directories (see tfrecord_lite.tfds), else None."""
    from ._tfds import tfds_dirs

    try:
        return tfds_dirs(items)
    except ValueError as e:
        raise UsageError(str(e)) from None


def cmd_info(args: argparse.Namespace, ctx: _Ctx) -> int:
    tfds = _tfds_dirs(args.files)
    if tfds is not None:
        from ._tfds import info as tfds_info

        return tfds_info(tfds, args)
    paths = _inputs(args.files)
    sample: Optional[int] = args.sample
    reports: list[dict[str, Any]] = []
    problems = 0
    if not args.json:
        print(f"{PROG} {__version__}, CRC32C backend: {crc_backend()}")
    with ctx.bar(_total_size(paths), "info", "B") as bar:
        for path in paths:
            info = SalvageInfo()
            stats: dict[str, FeatureStats] = {}
            seq_stats: dict[str, FeatureStats] = {}
            records = data_bytes = parsed = not_examples = 0
            first_bad: Optional[int] = None
            damage: list[str] = []
            for item in salvage_file(path, on_bytes=bar.update, info=info):
                if isinstance(item, Damage):
                    damage.append(_damage_line(item, path, bool(info.compression)))
                    if not args.json:
                        _say(bar, damage[-1], err=True)
                    continue
                records += 1
                data_bytes += len(item.data)
                if sample is not None and parsed + not_examples >= sample:
                    continue
                try:
                    add_records([item.data], stats, seq_stats)
                    parsed += 1
                except ParseError:
                    not_examples += 1
                    if first_bad is None:
                        first_bad = item.index
            problems += len(damage)
            report = _info_report(
                path, info, records, data_bytes, parsed, not_examples, first_bad, stats, seq_stats
            )
            report["problems"] = damage
            reports.append(report)
            if not args.json:
                _say(bar, "\n".join(_info_text(report, stats, seq_stats, parsed)))
    if args.json:
        out = {"version": __version__, "crc_backend": crc_backend(), "files": reports}
        print(json.dumps(out, indent=2))
    elif len(paths) > 1:
        total = sum(r["records"] for r in reports)
        print(f"\ntotal: {_plural(total, 'record')} in {len(paths)} files")
    return EXIT_DATA if problems else EXIT_OK


def _info_report(
    path: str,
    info: SalvageInfo,
    records: int,
    data_bytes: int,
    parsed: int,
    not_examples: int,
    first_bad: Optional[int],
    stats: dict[str, FeatureStats],
    seq_stats: dict[str, FeatureStats],
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "path": path,
        "compression": info.compression or "none",
        "file_bytes": info.file_size,
        "records": records,
        "data_bytes": data_bytes,
        "stream_bytes": data_bytes + 16 * records,
        "records_sampled": parsed + not_examples,
    }
    if not_examples:
        report["record_type"] = "unknown"
        report["not_examples"] = not_examples
        report["first_not_example"] = first_bad
        report["schema"] = None
    elif not parsed:
        report["record_type"] = None
        report["schema"] = None
    else:
        try:
            schema = schema_from_stats(stats, seq_stats, parsed)
        except ParseError as e:
            report["record_type"] = "SequenceExample" if seq_stats else "Example"
            report["schema"] = None
            report["schema_error"] = e.message
            report["stats"] = {k: s.as_dict() for k, s in stats.items()}
        else:
            report["record_type"] = "SequenceExample" if schema.is_sequence else "Example"
            report["schema"] = schema.to_json()
    return report


def _info_text(
    report: dict[str, Any],
    stats: dict[str, FeatureStats],
    seq_stats: dict[str, FeatureStats],
    parsed: int,
) -> list[str]:
    lines = ["", report["path"]]
    lines.append(f"  compression:  {report['compression']}")
    size = f"  file size:    {_plural(report['file_bytes'], 'byte')}"
    if report["compression"] != "none":
        size += f" ({report['stream_bytes']:,} bytes uncompressed)"
    lines.append(size)
    lines.append(
        f"  records:      {report['records']:,} ({report['data_bytes']:,} bytes of record data)"
    )
    kind = report["record_type"]
    if kind == "unknown":
        lines.append(
            f"  record type:  not tf.train.Example ({report['not_examples']:,} of "
            f"{report['records_sampled']:,} records do not parse, the first is record "
            f"{report['first_not_example']})"
        )
        return lines
    if kind is None:
        return lines
    lines.append(f"  record type:  {kind}")
    scope = (
        f"all {parsed:,} records"
        if report["records_sampled"] == report["records"]
        else f"the first {parsed:,} records"
    )
    if "schema_error" in report:
        lines.append(f"  schema:       none fits: {report['schema_error']}")
    title = "context features" if seq_stats else "features"
    lines.append(f"  {title} ({len(stats)}, from {scope}):")
    if stats:
        lines += _feature_rows(stats, parsed, sequence=False)
    if seq_stats:
        lines.append(f"  feature lists ({len(seq_stats)}):")
        lines += _feature_rows(seq_stats, parsed, sequence=True)
    return lines


# --------------------------------------------------------------------------- count / verify


def cmd_count(args: argparse.Namespace, ctx: _Ctx) -> int:
    paths = _inputs(args.files)
    total = 0
    problems = 0
    with ctx.bar(_total_size(paths), "count", "B") as bar:
        for path in paths:
            info = SalvageInfo()
            n = 0
            for item in salvage_file(path, on_bytes=bar.update, info=info):
                if isinstance(item, Damage):
                    problems += 1
                    _say(bar, _damage_line(item, path, bool(info.compression)), err=True)
                else:
                    n += 1
            total += n
            _say(bar, f"{n} {path}")
    if len(paths) > 1:
        print(f"{total} total")
    return EXIT_DATA if problems else EXIT_OK


def cmd_verify(args: argparse.Namespace, ctx: _Ctx) -> int:
    paths = _inputs(args.files)
    bad_files = 0
    records = 0
    not_examples = 0
    with ctx.bar(_total_size(paths), "verify", "B") as bar:
        for path in paths:
            info = SalvageInfo()
            good = problems = 0
            for item in salvage_file(path, on_bytes=bar.update, info=info):
                if isinstance(item, Damage):
                    problems += 1
                    _say(bar, _damage_line(item, path, bool(info.compression)))
                    continue
                good += 1
                if args.no_parse:
                    continue
                why = _parse_error(item.data)
                if why:
                    problems += 1
                    not_examples += 1
                    where = "decompressed byte offset" if info.compression else "byte offset"
                    _say(
                        bar,
                        f"{path}: record {item.index}, {where} {item.offset}: not a "
                        f"tf.train.Example or SequenceExample ({why})",
                    )
            records += good
            if problems:
                bad_files += 1
                _say(bar, f"FAILED {path}: {_plural(problems, 'problem')}, {good:,} intact records")
            elif not ctx.quiet:
                _say(bar, f"ok     {path}: {_plural(good, 'record')}")
    if bad_files:
        hint = ""
        if not_examples:
            hint = (
                " (records that are not Examples are fine if you wrote raw bytes: use --no-parse)"
            )
        print(f"{bad_files} of {_plural(len(paths), 'file')} failed verification{hint}")
        return EXIT_DATA
    if not ctx.quiet:
        print(f"all {_plural(len(paths), 'file')} ok: {_plural(records, 'record')}")
    return EXIT_OK


# --------------------------------------------------------------------------- schema


def cmd_schema(args: argparse.Namespace, ctx: _Ctx) -> int:
    paths = _inputs(args.files)
    # (records before the file, path, its first record's index): where a record number lands
    starts: list[tuple[int, str, int]] = []
    seen = [0]

    def records() -> Generator[bytes, None, None]:
        for path, item in _records(ctx, paths, "schema"):
            if not starts or starts[-1][1] != path:
                starts.append((seen[0], path, item.index))
            seen[0] += 1
            yield item.data

    gen = records()
    try:
        # the same call, with the same defaults, as tfr.infer_schema(files)
        schema = infer_schema(gen, args.sample, check=not args.no_check)
    except ParseError as e:
        if e.index is not None and starts:
            before, path, first = next(x for x in reversed(starts) if x[0] <= e.index)
            index = first + e.index - before
            raise ParseError(e.message, key=e.key, path=path, index=index) from None
        raise
    finally:
        gen.close()
    if args.format == "json":
        print(json.dumps(schema.to_json(), indent=2))
    else:
        print(schema.to_python(), end="")
    if schema.records == 0 and not ctx.quiet:
        print(f"{PROG}: note: no records, so no features", file=sys.stderr)
    return EXIT_OK


# --------------------------------------------------------------------------- head


def _text(s: str) -> str:
    """A key for display: printable as is, else escaped."""
    if s.isprintable() and s.strip() == s and s:
        return s
    return json.dumps(s, ensure_ascii=False)


def _printable(s: str) -> bool:
    return all(ch.isprintable() or ch in "\t\n\r" for ch in s)


def format_bytes(v: bytes) -> str:
    """A bytes value for display: image summary, quoted text, or length + hex prefix."""
    img = _sniff(v)
    if img is not None:
        fmt, w, h = img
        dims = f" {w}x{h}" if w and h else ""
        return f"<{fmt}{dims}, {len(v):,} bytes>"
    try:
        s: Optional[str] = v.decode("utf-8")
    except UnicodeDecodeError:
        s = None
    if s is not None and _printable(s):
        if len(s) <= SHOW_TEXT:
            return json.dumps(s, ensure_ascii=False)
        return json.dumps(s[:SHOW_TEXT], ensure_ascii=False) + f"... ({len(v):,} bytes)"
    shown = " ".join(f"{b:02x}" for b in v[:SHOW_HEX])
    more = " ..." if len(v) > SHOW_HEX else ""
    return f"<{len(v):,} bytes: {shown}{more}>"


def _sniff(v: bytes) -> Optional[tuple[str, Optional[int], Optional[int]]]:
    from .._decoding import sniff_image

    return sniff_image(v)


def _format_values(feature: Any) -> tuple[str, int, str]:
    """(kind, number of values, the values shown) of a Feature."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return "(no kind)", 0, ""
    values = getattr(feature, kind).value
    n = len(values)
    shown = values[:SHOW_VALUES]
    if kind == "bytes_list":
        parts = [format_bytes(v) for v in shown]
    elif kind == "float_list":
        parts = [str(np.float32(v)) for v in shown]
    else:
        parts = [str(v) for v in shown]
    text = ", ".join(parts)
    if n > SHOW_VALUES:
        text += f", ... ({n:,} values)"
    return kind, n, text


def _feature_lines(fmap: Any, indent: str) -> list[str]:
    keys = sorted(fmap)
    if not keys:
        return [indent + "(no features)"]
    width = min(max(len(_text(k)) for k in keys), 32)
    lines = []
    for key in keys:
        kind, n, text = _format_values(fmap[key])
        label = f"{kind}[{n}]" if kind != "(no kind)" else kind
        lines.append(f"{indent}{_text(key).ljust(width)}  {label:<15} {text}".rstrip())
    return lines


def _head_text(path: str, rec: Record, compressed: bool) -> list[str]:
    msg = _parse_any(rec.data)
    where = "decompressed offset" if compressed else "offset"
    title = f"record {rec.index}  ({where} {rec.offset}, {_plural(len(rec.data), 'byte')}"
    if msg is None:
        return [f"{title}, not an Example)", "  " + format_bytes(rec.data)]
    lists = msg.feature_lists.feature_list
    context = msg.context.feature
    if not lists:
        lines = [f"{title}, Example, {_plural(len(context), 'feature')})"]
        lines += _feature_lines(context, "  ")
        return lines
    lines = [
        f"{title}, SequenceExample, {_plural(len(context), 'context feature')}, "
        f"{_plural(len(lists), 'feature list')})",
        "  context:",
    ]
    lines += _feature_lines(context, "    ")
    lines.append("  feature_lists:")
    for key in sorted(lists):
        steps = lists[key].feature
        lines.append(f"    {_text(key)}  ({_plural(len(steps), 'step')})")
        for i, feature in enumerate(steps[:SHOW_VALUES]):
            kind, n, text = _format_values(feature)
            label = f"{kind}[{n}]" if kind != "(no kind)" else kind
            lines.append(f"      step {i:<3} {label:<15} {text}".rstrip())
        if len(steps) > SHOW_VALUES:
            lines.append(f"      ... ({len(steps):,} steps)")
    return lines


def _json_float(v: float) -> Union[float, str]:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return float(str(np.float32(v)))


def feature_json(feature: Any) -> dict[str, Any]:
    """A Feature as JSON: ``{"kind": ..., "value": [...]}``; bytes are base64."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return {"kind": None, "value": []}
    values = getattr(feature, kind).value
    if kind == "bytes_list":
        out: list[Any] = [base64.b64encode(v).decode("ascii") for v in values]
    elif kind == "float_list":
        out = [_json_float(v) for v in values]
    else:
        out = [int(v) for v in values]
    return {"kind": kind, "value": out}


def _head_json(path: str, rec: Record) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "file": path,
        "index": rec.index,
        "offset": rec.offset,
        "length": len(rec.data),
    }
    msg = _parse_any(rec.data)
    if msg is None:
        obj["type"] = None
        obj["data"] = base64.b64encode(rec.data).decode("ascii")
        return obj
    lists = msg.feature_lists.feature_list
    obj["type"] = "SequenceExample" if lists else "Example"
    context = msg.context.feature
    obj["features"] = {k: feature_json(context[k]) for k in sorted(context)}
    if lists:
        obj["feature_lists"] = {
            k: [feature_json(f) for f in lists[k].feature] for k in sorted(lists)
        }
    return obj


def cmd_head(args: argparse.Namespace, ctx: _Ctx) -> int:
    if args.n < 0 or args.skip < 0:
        raise UsageError("-n and --skip must not be negative")
    paths = _inputs(args.files)
    problems = 0
    for i, path in enumerate(paths):
        if len(paths) > 1 and not args.json:
            print(f"{'' if i == 0 else chr(10)}==> {path} <==")
        shown = 0
        info = SalvageInfo()
        for item in salvage_file(path, info=info):
            if shown >= args.n:
                break  # the generator (and its file) is closed as it goes out of scope
            if isinstance(item, Damage):
                problems += 1
                print(_damage_line(item, path, bool(info.compression)), file=sys.stderr)
                continue
            if item.index < args.skip:
                continue
            if args.json:
                print(json.dumps(_head_json(path, item)))
            else:
                print("\n".join(_head_text(path, item, bool(info.compression))))
            shown += 1
    return EXIT_DATA if problems else EXIT_OK


# --------------------------------------------------------------------------- index


def _count_lines(path: str) -> int:
    n = 0
    with fs.open_read(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
    return n


def cmd_index(args: argparse.Namespace, ctx: _Ctx) -> int:
    from .._files import create_index

    paths = _inputs(args.files)
    if args.output and len(paths) != 1:
        raise UsageError("-o/--output needs exactly one input file")
    failed = 0
    with ctx.bar(len(paths), "index", "file") as bar:
        for path in paths:
            try:
                dest = create_index(path, args.output)
            except DataLossError as e:
                failed += 1
                where = _where(e, False)
                _say(bar, f"{path}: {where + ': ' if where else ''}{e.message}", err=True)
            else:
                if not ctx.quiet:
                    _say(bar, f"{dest}: {_plural(_count_lines(dest), 'record')}")
            bar.update(1)
    return EXIT_DATA if failed else EXIT_OK


# --------------------------------------------------------------------------- convert


def _compression_arg(value: Optional[str]) -> str:
    if value is None:
        return ""
    v = value.strip().upper()
    return "" if v in ("NONE", "") else v


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.exists(b) and os.path.samefile(a, b)
    except OSError:
        return False


def _inprogress_names(prefix: str, n: int) -> list[str]:
    head, tail = os.path.split(prefix)
    return [os.path.join(head, f".{tail}-{i:05d}.inprogress") for i in range(n)]


def _remove_quietly(paths: Sequence[str]) -> None:
    for p in paths:
        with contextlib.suppress(OSError):
            os.remove(p)


_PARQUET_SUFFIXES = (".parquet", ".pq")


def _convert_parquet(args: argparse.Namespace, ctx: _Ctx, inputs: list[str]) -> int:
    """``convert --to parquet`` (TFRecords -> one Parquet file), or Parquet inputs -> TFRecords."""
    from ..arrow import _pa, iter_tables, table_records

    pa = _pa()
    import pyarrow.parquet as pq

    out = args.output
    for i in inputs:
        if _same_file(i, out) or os.path.abspath(i) == os.path.abspath(out):
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
            _remove_quietly([tmp])
            raise
        what = "Parquet"
    else:
        if not from_parquet:
            raise UsageError("--from parquet: the inputs must be Parquet files")
        comp = _compression_arg(args.compression)
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
                _remove_quietly(_inprogress_names(out, args.shards))
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
        print(f"wrote {_plural(written, 'record')} to {out} ({what})")
    return EXIT_OK


def cmd_convert(args: argparse.Namespace, ctx: _Ctx) -> int:
    out = args.output
    inputs = _inputs(args.inputs)
    if (
        args.to == "parquet"
        or args.from_format == "parquet"
        or all(i.lower().endswith(_PARQUET_SUFFIXES) for i in inputs)
    ):
        return _convert_parquet(args, ctx, inputs)
    comp = _compression_arg(args.compression)
    shards: Optional[int] = args.shards
    if shards is not None and shards < 1:
        raise UsageError("--shards must be at least 1")
    outputs = [shard_name(out, i, shards) for i in range(shards)] if shards else [out]
    for o in outputs:
        if os.path.isdir(o):
            raise UsageError(f"output {o!r} is a directory")
        for i in inputs:
            if _same_file(i, o) or os.path.abspath(i) == os.path.abspath(o):
                raise UsageError(f"output {o!r} is also an input: write to another file")
    out_dir = os.path.dirname(out)
    if out_dir and not fs.is_url(out):
        os.makedirs(out_dir, exist_ok=True)
    skipped = 0

    def good_records(desc: str, report: bool) -> Iterator[bytes]:
        nonlocal skipped
        with ctx.bar(_total_size(inputs), desc, "B") as bar:
            for path in inputs:
                info = SalvageInfo()
                for item in salvage_file(path, on_bytes=bar.update, info=info):
                    if isinstance(item, Damage):
                        if not args.skip_bad:
                            raise item.error
                        if report:
                            skipped += 1
                            _say(bar, _damage_line(item, path, bool(info.compression)), err=True)
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
            _remove_quietly(_inprogress_names(out, shards))
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
        extra = f"; {_plural(skipped, 'damaged record')} skipped" if skipped else ""
        print(
            f"wrote {_plural(written, 'record')} to {where} "
            f"({comp or 'uncompressed'}{', ' + str(len(outputs)) + ' shards' if shards else ''})"
            f"{extra}"
        )
    return EXIT_DATA if skipped else EXIT_OK


# --------------------------------------------------------------------------- from-images


def _parse_size(text: str) -> tuple[int, int]:
    parts = text.lower().replace("*", "x").split("x")
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected WIDTHxHEIGHT like 224x224, got {text!r}"
        ) from None
    if len(nums) == 1:
        nums = nums * 2
    if len(nums) != 2 or min(nums) < 1:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT like 224x224, got {text!r}")
    return nums[0], nums[1]


def _parse_shape(text: str) -> tuple[int, ...]:
    parts = text.lower().replace(",", "x").split("x")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected HxW or HxWxC like 28x28x1, got {text!r}"
        ) from None
    if len(dims) not in (2, 3) or min(dims) < 1:
        raise argparse.ArgumentTypeError(f"expected HxW or HxWxC like 28x28x1, got {text!r}")
    return dims


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def _default_workers(n_tasks: int) -> int:
    cpus = os.cpu_count() or 1
    if n_tasks < 64:
        return 1
    return max(1, min(cpus, 8))


def _from_images_on_ray(args: argparse.Namespace, ctx: _Ctx) -> int:
    """``from-images --engine ray``: one Ray task per shard (tfrecord_lite.ray)."""
    from ..ray import _ray_data, images_to_tfrecords

    _ray_data()  # the install hint, if Ray is missing
    import ray

    if not ray.is_initialized():
        ray.init(address=args.ray_address, include_dashboard=False, log_to_driver=False)
    result = images_to_tfrecords(
        args.dir,
        args.out,
        shards=args.shards,
        size=args.size,
        encode=args.encode,
        channels=args.channels,
        quality=args.quality,
        shuffle=args.shuffle,
        seed=args.seed,
        compression=_compression_arg(args.compression) or None,
    )
    for rel, why in result["skipped"]:
        print(f"{PROG}: skipped {os.path.join(args.dir, rel)}: {why}", file=sys.stderr)
    paths, written = result["paths"], result["written"]
    if not ctx.quiet:
        where = paths[0] if len(paths) == 1 else f"{paths[0]} ... {paths[-1]}"
        classes = _plural(len(result["classes"]), "class", "classes")
        print(f"wrote {_plural(written, 'image')} of {classes} to {where} and {result['labels']}")
    if written == 0:
        print(f"{PROG}: error: no image could be read from {args.dir!r}", file=sys.stderr)
        return EXIT_DATA
    return EXIT_DATA if result["skipped"] and not args.allow_skips else EXIT_OK


def cmd_from_images(args: argparse.Namespace, ctx: _Ctx) -> int:
    if args.engine == "ray":
        if not os.path.isdir(args.dir):
            raise UsageError(f"{args.dir!r} is not a directory")
        if args.index:
            raise UsageError("--index is not supported with --engine ray")
        return _from_images_on_ray(args, ctx)
    from .._decoding import ImageOptions, convert_task, pil, scan_image_folder, worker_pool
    from .._files import ShardedWriter

    if not os.path.isdir(args.dir):
        if os.path.exists(args.dir):
            raise UsageError(f"{args.dir!r} is not a directory")
        raise FileNotFoundError(2, "No such file or directory", args.dir)
    pil()  # fail now, with the install hint, if Pillow is missing
    folder = scan_image_folder(args.dir)
    if not folder.classes:
        print(
            f"{PROG}: error: {args.dir!r} has no sub-folders: put the images of each class "
            "in a sub-folder named after the class (e.g. DIR/cat/1.jpg, DIR/dog/2.jpg)",
            file=sys.stderr,
        )
        return EXIT_DATA
    out = args.out
    if os.path.isdir(out) or out.endswith(("/", os.sep)):
        out = os.path.join(out, os.path.basename(os.path.abspath(args.dir)) or "images")
    out_dir = os.path.dirname(out) or "."
    os.makedirs(out_dir, exist_ok=True)
    options = ImageOptions(
        size=args.size, encode=args.encode, channels=args.channels, quality=args.quality
    )
    order = list(folder.files)
    if args.shuffle:
        random.Random(args.seed).shuffle(order)
    tasks = [(folder.root, rel, label, folder.classes[label], options) for rel, label in order]
    counts = [0] * len(folder.classes)
    for _, label in order:
        counts[label] += 1
    if not ctx.quiet:
        for name, c in zip(folder.classes, counts):
            if c == 0:
                print(f"{PROG}: warning: class {name!r} has no images", file=sys.stderr)
        if folder.ignored:
            names = ", ".join(folder.ignored[:3]) + (", ..." if len(folder.ignored) > 3 else "")
            print(
                f"{PROG}: note: ignored {_plural(len(folder.ignored), 'file')} that are not "
                f"images by name or not in a class folder: {names}",
                file=sys.stderr,
            )
    workers = args.workers or _default_workers(len(tasks))
    shards = args.shards
    skipped: list[str] = []
    written = 0
    pools = contextlib.ExitStack()
    pool = None
    if workers > 1 and len(tasks) > 1:
        # workers ignore Ctrl-C: the parent reports it once and cleans up
        pool = pools.enter_context(worker_pool(workers))
    comp = _compression_arg(args.compression)
    try:
        writer = ShardedWriter(out, num_shards=shards, compression=comp, write_index=args.index)
    except BaseException:
        pools.close()
        raise
    try:
        if pool is not None:
            chunk = max(1, min(32, len(tasks) // (workers * 4)))
            results: Iterator[tuple[Optional[bytes], Optional[str]]] = pool.imap(
                convert_task, tasks, chunksize=chunk
            )
        else:
            results = map(convert_task, tasks)
        with ctx.bar(len(tasks), "images", "img") as bar:
            for task, (example, why) in zip(tasks, results):
                if example is None:
                    skipped.append(task[1])
                    _say(bar, f"{PROG}: skipped {os.path.join(args.dir, task[1])}: {why}", err=True)
                else:
                    writer.write(example)
                    written += 1
                bar.update(1)
    except BaseException:
        writer.abort()
        _remove_quietly(_inprogress_names(out, shards))
        raise
    finally:
        pools.close()
    paths = writer.close()
    labels_path = os.path.join(out_dir, "labels.txt")
    with open(labels_path, "w", encoding="utf-8", errors="surrogateescape", newline="\n") as f:
        f.write("".join(name + "\n" for name in folder.classes))
    if not ctx.quiet:
        where = paths[0] if len(paths) == 1 else f"{paths[0]} ... {paths[-1]}"
        classes = _plural(len(folder.classes), "class", "classes")
        note = ""
        if skipped:
            verb = "was" if len(skipped) == 1 else "were"
            note = f"; {_plural(len(skipped), 'file')} could not be decoded and {verb} skipped"
        print(f"wrote {_plural(written, 'image')} of {classes} to {where} and {labels_path}{note}")
    if written == 0:
        print(f"{PROG}: error: no image could be read from {args.dir!r}", file=sys.stderr)
        return EXIT_DATA
    return EXIT_DATA if skipped and not args.allow_skips else EXIT_OK


# --------------------------------------------------------------------------- preview

_SHAPE_KEYS = ("height", "width")
_CHANNEL_KEYS = ("channels", "depth")


def _int_feature(fmap: Any, key: str) -> Optional[list[int]]:
    if key not in fmap:
        return None
    f = fmap[key]
    if f.WhichOneof("kind") != "int64_list":
        return None
    return [int(v) for v in f.int64_list.value]


def _bytes_feature(fmap: Any, key: str) -> Optional[bytes]:
    if key not in fmap:
        return None
    f = fmap[key]
    if f.WhichOneof("kind") != "bytes_list" or not f.bytes_list.value:
        return None
    value: bytes = f.bytes_list.value[0]
    return value


def _stored_shape(fmap: Any, key: str) -> Optional[tuple[int, ...]]:
    """The shape recorded beside a raw image: ``key/shape``, or height/width(/channels)."""
    shape = _int_feature(fmap, key + "/shape")
    if shape:
        return tuple(shape)
    prefixes = [key + "/"]
    if "/" in key:
        prefixes.append(key.rsplit("/", 1)[0] + "/")
    prefixes.append("")
    for p in prefixes:
        h = _int_feature(fmap, p + "height")
        w = _int_feature(fmap, p + "width")
        if h and w:
            for ck in _CHANNEL_KEYS:
                c = _int_feature(fmap, p + ck)
                if c:
                    return (h[0], w[0], c[0])
            return (h[0], w[0])
    return None


def _fit_shape(shape: tuple[int, ...], count: int) -> tuple[int, ...]:
    """Complete an (H, W) shape with a channel count when the data has more values."""
    hw = shape[0] * shape[1]
    if len(shape) == 2 and hw and count != hw and count % hw == 0:
        return (shape[0], shape[1], count // hw)
    return shape


def _preview_cell(
    fmap: Any, key: str, args: argparse.Namespace
) -> tuple[Optional[np.ndarray], Optional[str]]:
    """(display array, None) or (None, why not)."""
    from .._decoding import decode_image, display_array, sniff_image

    if key not in fmap:
        keys = ", ".join(sorted(fmap)[:12]) or "(none)"
        return None, f"no feature {key!r} (features: {keys})"
    feature = fmap[key]
    kind = feature.WhichOneof("kind")
    if kind is None:
        return None, f"feature {key!r} is empty"
    values = getattr(feature, kind).value
    if not values:
        return None, f"feature {key!r} has no values"
    shape: Optional[tuple[int, ...]] = args.shape or _stored_shape(fmap, key)
    if kind == "bytes_list":
        data = bytes(values[0])
        if sniff_image(data) is not None or (shape is None and args.dtype is None):
            try:
                return display_array(decode_image(data)), None
            except Exception as e:
                if sniff_image(data) is not None:
                    return None, f"cannot decode the image: {getattr(e, 'message', e)}"
        dtype_text = args.dtype or (_bytes_feature(fmap, key + "/dtype") or b"").decode(
            "ascii", "replace"
        )
        try:
            dtype = np.dtype(dtype_text or "uint8")
        except TypeError:
            return None, f"unknown dtype {dtype_text!r}"
        if len(data) % dtype.itemsize:
            return None, f"{len(data)} bytes are not a whole number of {dtype} values"
        arr: np.ndarray = np.frombuffer(data, dtype=dtype)
    else:
        arr = np.asarray(list(values), dtype=np.float32 if kind == "float_list" else np.int64)
    if shape is None:
        side = math.isqrt(arr.size)
        if side * side != arr.size or arr.size == 0:
            return None, (
                f"cannot tell the shape of {arr.size} values in {key!r}: pass --shape HxW[xC]"
            )
        shape = (side, side)
    shape = _fit_shape(shape, arr.size)
    if math.prod(shape) != arr.size:
        return None, f"{arr.size} values do not fit the shape {'x'.join(map(str, shape))}"
    return display_array(arr.reshape(shape)), None


def _label_text(fmap: Any, key: Optional[str], names: Optional[list[str]]) -> Optional[str]:
    if not key:
        return None
    if key not in fmap:
        return "?"
    f = fmap[key]
    kind = f.WhichOneof("kind")
    if kind is None or not getattr(f, kind).value:
        return "-"
    v = getattr(f, kind).value[0]
    if kind == "bytes_list":
        return bytes(v).decode("utf-8", "replace")
    if kind == "float_list":
        return str(np.float32(v))
    label = int(v)
    if names is not None and 0 <= label < len(names) and names[label] != str(label):
        return f"{label} {names[label]}"
    return str(label)


def _load_names(args: argparse.Namespace, first_path: str) -> Optional[list[str]]:
    path = args.labels
    if path is None:
        guess = os.path.join(os.path.dirname(first_path), "labels.txt")
        if not os.path.isfile(guess):
            return None
        path = guess
    with open(path, encoding="utf-8", errors="replace") as f:
        return [line.rstrip("\r\n") for line in f]


def cmd_preview(args: argparse.Namespace, ctx: _Ctx) -> int:
    from .._decoding import draw_grid, pil

    if args.n < 1:
        raise UsageError("-n must be at least 1")
    tfds = _tfds_dirs(args.files)
    if tfds is not None:
        from ._tfds import preview

        try:
            return preview(tfds, args, ctx.quiet)
        except ValueError as e:
            raise UsageError(str(e)) from None
    if args.image_key is None:
        raise UsageError("--image-key is required (optional only for a TFDS dataset directory)")
    paths = _inputs(args.files)
    pil()
    names = _load_names(args, paths[0]) if args.label_key else None
    cells: list[tuple[Optional[np.ndarray], Optional[str]]] = []
    problems = 0
    seen = 0
    # Each distinct problem is printed once (a wrong --image-key fails every record
    # the same way); repeats are counted and summed up at the end.
    repeats: dict[str, int] = {}

    def report(path: str, index: int, why: str) -> None:
        if why in repeats:
            repeats[why] += 1
        else:
            repeats[why] = 0
            print(f"{path}: record {index}: {why}", file=sys.stderr)

    gen = _records(ctx, paths, "preview")
    try:
        for path, rec in gen:
            if seen < args.skip:
                seen += 1
                continue
            if len(cells) >= args.n:
                break
            msg = _parse_any(rec.data)
            if msg is None:
                problems += 1
                report(path, rec.index, "not a tf.train.Example")
                cells.append((None, "?"))
                continue
            fmap = msg.context.feature
            arr, why = _preview_cell(fmap, args.image_key, args)
            if arr is None:
                problems += 1
                report(path, rec.index, why or "cannot show this record")
            cells.append((arr, _label_text(fmap, args.label_key, names)))
    finally:
        gen.close()
    for why, more in repeats.items():
        if more:
            what = f" ({why})" if len(repeats) > 1 else ""
            print(
                f"{PROG}: the same problem{what} in {_plural(more, 'more record')}",
                file=sys.stderr,
            )
    if not cells:
        print(f"{PROG}: error: no records to preview", file=sys.stderr)
        return EXIT_DATA
    if all(arr is None for arr, _ in cells):
        print(f"{PROG}: error: no image could be shown; nothing written", file=sys.stderr)
        return EXIT_DATA
    grid = draw_grid(cells, cell=args.cell, cols=args.cols)
    out_dir = os.path.dirname(args.output)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    ext = os.path.splitext(args.output)[1].lower()
    grid.save(
        args.output,
        format=None if ext in (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp") else "PNG",
    )
    if not ctx.quiet:
        print(
            f"wrote {args.output}: {_plural(len(cells), 'image')}, "
            f"{grid.width}x{grid.height} pixels"
        )
    return EXIT_DATA if problems else EXIT_OK


# --------------------------------------------------------------------------- parser

_FORMATTER = argparse.RawDescriptionHelpFormatter


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="no progress bar and no summary lines",
    )
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback of an error",
    )
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Inspect, check and convert TensorFlow TFRecord files (plain, GZIP, ZLIB) "
            "without TensorFlow."
        ),
        epilog=(
            _examples(
                f"{PROG} info data/train-*.tfrecord",
                f"{PROG} head train.tfrecord -n 3",
                f"{PROG} verify data/*.tfrecord",
                f"{PROG} schema train.tfrecord > features.py",
                f"{PROG} from-images photos/ out/train --shards 4 --size 224x224",
                f"{PROG} preview out/train-00000-of-00004 --image-key image/encoded "
                "--label-key image/class/label -o grid.png",
            )
            + "\n\nexit codes: 0 ok, 1 a problem with the data, 2 a usage error.\n"
            f"'{PROG} COMMAND --help' shows each command's options."
        ),
        formatter_class=_FORMATTER,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bar and no summary lines"
    )
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(
        name: str,
        func: Callable[[argparse.Namespace, _Ctx], int],
        summary: str,
        description: str,
        examples: str,
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name,
            help=summary,
            description=description,
            epilog=examples,
            formatter_class=_FORMATTER,
            parents=[common],
        )
        p.set_defaults(func=func)
        return p

    p = add(
        "info",
        cmd_info,
        "records, sizes, compression and the inferred features of files",
        "Read every record (checking CRCs) and show the compression, sizes, record count, "
        "record type and, per feature: kind, values per record (min..max), fixed or "
        "variable length, how many records have it, and the value range.",
        _examples(f"{PROG} info train.tfrecord", f"{PROG} info 'data/train-*' --json"),
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="files, globs or name@N shard specs")
    p.add_argument(
        "--sample",
        type=_positive_int,
        metavar="N",
        help="features from the first N records of each file only (default: all)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")

    p = add(
        "head",
        cmd_head,
        "print the first records as Examples",
        "Print records as Example / SequenceExample: each feature's kind, value count "
        "and values (the first 8). Bytes show as text when they are printable UTF-8, as "
        "'<JPEG 640x480, 35,121 bytes>' when they are an image, else as length + hex.",
        _examples(
            f"{PROG} head train.tfrecord",
            f"{PROG} head train.tfrecord -n 1 --skip 100",
            f"{PROG} head train.tfrecord --json | jq .features.label",
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-n", type=int, default=5, metavar="N", help="records per file (default 5)")
    p.add_argument("--skip", type=int, default=0, metavar="K", help="start after K records")
    p.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per record (JSON lines); bytes are base64, non-finite floats "
        "the strings NaN / Infinity / -Infinity",
    )

    p = add(
        "count",
        cmd_count,
        "count the records of files (checking CRCs)",
        "Count the intact records of each file. Damaged records are reported on stderr "
        "(file, record number, byte offset) and reading goes on past them; the exit "
        "code is then 1.",
        _examples(f"{PROG} count train.tfrecord", f"{PROG} count 'data/*.tfrecord'"),
    )
    p.add_argument("files", nargs="+", metavar="FILE")

    p = add(
        "verify",
        cmd_verify,
        "check every CRC and that every record parses",
        "Check the length and data CRC of every record and that every record parses as "
        "a tf.train.Example or SequenceExample. Each problem is one line with its file, "
        "record number and byte offset (of the decompressed stream for GZIP/ZLIB). "
        "Reading goes on past a damaged record: right after it when only its data is "
        "damaged, else at the next valid record header. Exit code 0 only when every "
        "file is intact.",
        _examples(f"{PROG} verify data/*.tfrecord", f"{PROG} verify raw.tfrecord --no-parse"),
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument(
        "--no-parse",
        action="store_true",
        help="check the framing and CRCs only (records that are not Examples)",
    )

    p = add(
        "schema",
        cmd_schema,
        "print the inferred feature dict, ready to paste",
        "Infer the feature dict (FixedLenFeature for keys with the same number of values "
        "in every record, else VarLenFeature) and print it as Python or JSON. The first "
        "N records (--sample) are read in full and every later one is checked, so the "
        "feature dict parses every record; the same as tfr.infer_schema(FILES).",
        _examples(
            f"{PROG} schema train.tfrecord > features.py",
            f"{PROG} schema train.tfrecord --format json --sample 1000",
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--format", choices=("python", "json"), default="python")
    p.add_argument(
        "--sample",
        type=_positive_int,
        metavar="N",
        default=DEFAULT_SAMPLE,
        help=f"read the first N records in full (default: {DEFAULT_SAMPLE}); later ones are checked",
    )
    p.add_argument(
        "--no-check",
        action="store_true",
        help="read only the first N records (quick; the result may not fit later records)",
    )

    p = add(
        "index",
        cmd_index,
        "write index files (offset length per record)",
        "Write FILE.index for each file: one 'offset length' line per record, the format "
        "of tfrecord2idx (vahidk/tfrecord, NVIDIA DALI). One streaming pass in bounded "
        "memory; for a plain file only record headers are read. For GZIP/ZLIB files "
        "the offsets are in the decompressed stream.",
        _examples(f"{PROG} index data/*.tfrecord", f"{PROG} index train.tfrecord -o train.idx"),
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", metavar="PATH", help="index path (one input only)")

    p = add(
        "convert",
        cmd_convert,
        "recompress, merge or split files, keeping every record in order",
        "Copy the records of the inputs, in order, to OUT (or to OUT-00000-of-0000N with "
        "--shards N: contiguous runs, so the shards read in order give the records in "
        "order). Any damage stops the copy (nothing is left behind) unless --skip-bad.",
        _examples(
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
    p.add_argument("--shards", type=_positive_int, metavar="N", help="split into N shards")
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
        type=_positive_int,
        default=DEFAULT_SAMPLE,
        metavar="N",
        help=f"records the Parquet schema is inferred from (default {DEFAULT_SAMPLE})",
    )

    p = add(
        "from-images",
        cmd_from_images,
        "turn a folder of class sub-folders of images into TFRecords",
        "DIR has one sub-folder per class. Each image becomes an Example with "
        "image/encoded (or image_raw with --encode raw), image/format, image/class/label "
        "(the class's position in sorted order), image/class/text, image/height, "
        "image/width, image/channels and image/filename. Images are dealt round-robin "
        "over the shards OUT-00000-of-0000N; labels.txt (one class per line) is written "
        "beside them. Files that cannot be decoded are reported and skipped (exit code "
        "1 unless --allow-skips). The output is the same whatever --workers is.",
        _examples(
            f"{PROG} from-images photos/ out/photos --shards 4 --size 224x224",
            f"{PROG} from-images digits/ out/ --encode raw --channels 1 --workers 4",
        ),
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument("out", metavar="OUT", help="output prefix (or an existing directory)")
    p.add_argument("--shards", type=_positive_int, default=1, metavar="N")
    p.add_argument(
        "--size",
        type=_parse_size,
        metavar="WxH",
        help="resize every image to WIDTHxHEIGHT (default: keep)",
    )
    p.add_argument(
        "--encode",
        choices=("jpeg", "png", "raw"),
        default="jpeg",
        help="how to store pixels (default jpeg; a JPEG/PNG file that needs no "
        "change is stored byte for byte)",
    )
    p.add_argument(
        "--channels",
        choices=("auto", "1", "3"),
        default="auto",
        help="1 grayscale, 3 RGB, auto: grayscale stays grayscale (default)",
    )
    p.add_argument("--quality", type=int, default=95, help="JPEG quality (default 95)")
    p.add_argument(
        "--workers",
        type=_positive_int,
        metavar="N",
        help="processes decoding images (default: one per core for large folders)",
    )
    p.add_argument("--shuffle", action="store_true", help="shuffle the images (see --seed)")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed (default 0)")
    p.add_argument("--compression", type=str.upper, choices=("GZIP", "ZLIB", "NONE"), default=None)
    p.add_argument("--index", action="store_true", help="write an index file beside each shard")
    p.add_argument(
        "--allow-skips",
        action="store_true",
        help="exit 0 even when some files could not be decoded",
    )
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="ray: one Ray task per shard, on the cluster of --ray-address (the folders "
        "must be on a file system every node sees; needs tfrecord-lite[ray])",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="Ray cluster to join (default: RAY_ADDRESS, else a local Ray)",
    )

    p = add(
        "preview",
        cmd_preview,
        "draw the first images of a file as a labelled grid (PNG)",
        "Draw the first N images as a grid, each with its label underneath. Encoded "
        "images (JPEG, PNG, ...) are decoded; raw pixel bytes or int64/float lists need a "
        "shape: --shape, or stored features (KEY/shape, or height/width[/channels|depth] "
        "beside the key); square images of one channel are recognised. --dtype says how "
        "to read raw bytes (default: KEY/dtype if stored, else uint8). Integer labels are "
        "named from --labels, or a labels.txt next to the file.",
        _examples(
            f"{PROG} preview train-00000-of-00004 --image-key image/encoded "
            "--label-key image/class/label -o grid.png",
            f"{PROG} preview mnist.tfrecord --image-key image_raw --label-key label "
            "--shape 28x28 -n 64 -o mnist.png",
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument(
        "--image-key",
        metavar="K",
        help="the feature holding images (a TFDS directory: its first Image feature)",
    )
    p.add_argument("--split", metavar="S", help="TFDS directory: the split (default train)")
    p.add_argument("--label-key", metavar="L", help="the feature holding labels")
    p.add_argument("-n", type=int, default=16, metavar="N", help="images to draw (default 16)")
    p.add_argument("-o", "--output", required=True, metavar="PNG", help="the picture to write")
    p.add_argument("--shape", type=_parse_shape, metavar="HxW[xC]", help="shape of raw images")
    p.add_argument(
        "--dtype", metavar="DTYPE", help="NumPy dtype of raw image bytes (uint8, float32...)"
    )
    p.add_argument("--labels", metavar="FILE", help="class names, one per line")
    p.add_argument(
        "--cell",
        type=_positive_int,
        default=96,
        metavar="PX",
        help="cell size in pixels (default 96)",
    )
    p.add_argument("--cols", type=_positive_int, metavar="N", help="columns (default: square grid)")
    p.add_argument("--skip", type=int, default=0, metavar="K", help="start after K records")
    return parser


# --------------------------------------------------------------------------- main


def _error(message: str) -> None:
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line tool; return the exit code."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (EXIT_OK if e.code is None else EXIT_USAGE)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    ctx = _Ctx(args)
    try:
        code: int = args.func(args, ctx)
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (e.g. `| head`): stop quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # pragma: no cover
            pass
        return EXIT_DATA
    except Exception as e:
        if ctx.debug:
            raise
        return _report(e)


def _report(e: Exception) -> int:
    if isinstance(e, UsageError):
        _error(str(e))
        return EXIT_USAGE
    if isinstance(e, (FileNotFoundError, NotADirectoryError)):
        name = e.filename if e.filename is not None else ""
        _error(f"{e.strerror or e}: {name}" if name else str(e))
        return EXIT_USAGE
    if isinstance(e, TFRecordError):
        _error(str(e))
        return EXIT_DATA
    if isinstance(e, ImportError):
        _error(str(e))
        return EXIT_DATA
    if isinstance(e, OSError):
        name = f": {e.filename}" if e.filename is not None else ""
        _error(f"{e.strerror or e}{name}")
        return EXIT_DATA
    _error(f"{type(e).__name__}: {e} (run with --debug for the traceback)")
    return EXIT_DATA
