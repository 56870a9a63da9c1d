"""``tfrecord-lite info``: compression, sizes, record count, record type and the
inferred features of each file (a TFDS directory: ``_tfds``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Optional

import numpy as np

from .._errors import ParseError
from .._examples import (
    FeatureStats,
    KindProbe,
    RecordKind,
    add_records,
    schema_from_stats,
)
from .._files import Damage, NotATFRecordError, SalvageInfo, salvage_file
from .._record import crc_backend
from .._version import __version__
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
    positive_int,
    say,
    tfds_inputs,
    total_size,
)
from ._output import key_text, plural, table


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


def _feature_rows(stats: dict[str, FeatureStats], n: int, sequence: bool) -> list[str]:
    head = ["feature", "kind"]
    head += ["steps", "values/step"] if sequence else ["values/record"]
    head += ["length", "present", "value range"]
    rows = [head]
    for key in sorted(stats):
        st = stats[key]
        kind = st.kind
        row = [key_text(key), _kind_text(st)]
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
    return table(rows)


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    tfds = tfds_inputs(args.files)
    if tfds is not None:
        from ._tfds import info as tfds_info

        return tfds_info(tfds, args)
    paths = expand_inputs(args.files)
    sample: Optional[int] = args.sample
    reports: list[dict[str, Any]] = []
    problems = 0
    title = f"{PROG} {__version__}, CRC32C backend: {crc_backend()}"  # before the first report
    with ctx.bar(total_size(paths), "info", "B") as bar:
        for path in paths:
            info = SalvageInfo()
            stats: dict[str, FeatureStats] = {}
            seq_stats: dict[str, FeatureStats] = {}
            records = data_bytes = parsed = not_examples = 0
            first_bad: Optional[int] = None
            damage: list[str] = []
            other: Optional[NotATFRecordError] = None
            probe = KindProbe()
            for item in salvage_file(path, on_bytes=bar.update, info=info):
                if isinstance(item, Damage):
                    other = not_tfrecord(item.error)
                    damage.append(damage_line(item, path, bool(info.compression)))
                    if not args.json:
                        say(bar, damage[-1], err=True)
                    continue
                records += 1
                data_bytes += len(item.data)
                probe.add(item.data)
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
            _kind_report(report, probe.result())
            report["problems"] = damage
            if other is not None:  # a CSV, an image...: its one line said it all
                report["not_a_tfrecord"] = other.message
                report["record_type"] = None
            reports.append(report)
            if not args.json and other is None:
                lines = _info_text(report, stats, seq_stats, parsed)
                if title:
                    lines.insert(0, title)
                    title = ""
                say(bar, "\n".join(lines))
    if args.json:
        out = {"version": __version__, "crc_backend": crc_backend(), "files": reports}
        print(json.dumps(out, indent=2))
    elif len(paths) > 1 and title == "":  # (some file was a TFRecord file)
        total = sum(r["records"] for r in reports)
        others = sum("not_a_tfrecord" in r for r in reports)
        files = plural(len(paths) - others, "file")
        if others:
            files += f" (and {others} not " + (
                "a TFRecord file)" if others == 1 else "TFRecord files)"
            )
        print(f"\ntotal: {plural(total, 'record')} in {files}")
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


def _kind_report(report: dict[str, Any], kind: RecordKind) -> None:
    """Records that parse as Examples only by accident: say what they look like instead."""
    if kind.is_example or report["record_type"] == "unknown":
        return
    report["record_type"] = "not Example"
    report["looks_like"] = kind.looks_like
    report["description"] = kind.describe()
    report["not_example_reason"] = kind.evidence()
    report["schema"] = None
    report.pop("schema_error", None)
    report.pop("stats", None)


def _info_text(
    report: dict[str, Any],
    stats: dict[str, FeatureStats],
    seq_stats: dict[str, FeatureStats],
    parsed: int,
) -> list[str]:
    lines = ["", report["path"]]
    lines.append(f"  compression:  {report['compression']}")
    size = f"  file size:    {plural(report['file_bytes'], 'byte')}"
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
    if kind == "not Example":
        lines.append(f"  record type:  {report['description']}")
        lines.append(f"                {report['not_example_reason']}")
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


def register(sub: Any) -> None:
    """Add the sub-command and its options."""
    p = add_command(
        sub,
        "info",
        run,
        "records, sizes, compression and the inferred features of files",
        "Read every record (checking CRCs) and show the compression, sizes, record count, "
        "record type and, per feature: kind, values per record (min..max), fixed or "
        "variable length, how many records have it, and the value range.",
        examples_text(f"{PROG} info train.tfrecord", f"{PROG} info 'data/train-*' --json"),
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="files, globs or name@N shard specs")
    p.add_argument(
        "--sample",
        type=positive_int,
        metavar="N",
        help="features from the first N records of each file only (default: all)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
