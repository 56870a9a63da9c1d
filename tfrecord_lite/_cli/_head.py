"""``tfrecord-lite head``: the first records of each file, shown as Examples (text or
JSON lines): each feature's kind, value count and values.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import sys
from typing import Any, Optional, Union

import numpy as np

from .._examples import RecordKind
from .._files import Damage, Record, SalvageInfo, salvage_file
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
    file_kind,
    parse_any,
)
from ._output import key_text, plural

#: Values shown per feature before "... (N values)".
SHOW_VALUES = 8
#: Characters of a text value shown.
SHOW_TEXT = 60
#: Bytes shown in hex for a binary value.
SHOW_HEX = 16


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


def _feature_lines(fmap: Any, indent: str) -> list[str]:
    keys = sorted(fmap)
    if not keys:
        return [indent + "(no features)"]
    width = min(max(len(key_text(k)) for k in keys), 32)
    lines = []
    for key in keys:
        kind, n, text = _format_values(fmap[key])
        label = f"{kind}[{n}]" if kind != "(no kind)" else kind
        lines.append(f"{indent}{key_text(key).ljust(width)}  {label:<15} {text}".rstrip())
    return lines


def _head_text(path: str, rec: Record, compressed: bool, records: RecordKind) -> list[str]:
    where = "decompressed offset" if compressed else "offset"
    title = f"record {rec.index}  ({where} {rec.offset}, {plural(len(rec.data), 'byte')}"
    if not records.is_example:  # parses as an Example only by accident: show its bytes
        guess = f": looks like a {records.looks_like}" if records.looks_like else ""
        return [f"{title}, not an Example{guess})", "  " + format_bytes(rec.data)]
    msg = parse_any(rec.data)
    if msg is None:
        return [f"{title}, not an Example)", "  " + format_bytes(rec.data)]
    lists = msg.feature_lists.feature_list
    context = msg.context.feature
    if not lists:
        lines = [f"{title}, Example, {plural(len(context), 'feature')})"]
        lines += _feature_lines(context, "  ")
        return lines
    lines = [
        f"{title}, SequenceExample, {plural(len(context), 'context feature')}, "
        f"{plural(len(lists), 'feature list')})",
        "  context:",
    ]
    lines += _feature_lines(context, "    ")
    lines.append("  feature_lists:")
    for key in sorted(lists):
        steps = lists[key].feature
        lines.append(f"    {key_text(key)}  ({plural(len(steps), 'step')})")
        for i, feature in enumerate(steps[:SHOW_VALUES]):
            kind, n, text = _format_values(feature)
            label = f"{kind}[{n}]" if kind != "(no kind)" else kind
            lines.append(f"      step {i:<3} {label:<15} {text}".rstrip())
        if len(steps) > SHOW_VALUES:
            lines.append(f"      ... ({len(steps):,} steps)")
    return lines


def _head_json(path: str, rec: Record, kind: RecordKind) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "file": path,
        "index": rec.index,
        "offset": rec.offset,
        "length": len(rec.data),
    }
    msg = parse_any(rec.data) if kind.is_example else None
    if msg is None:
        obj["type"] = None
        if not kind.is_example:
            obj["description"] = kind.describe()
            obj["looks_like"] = kind.looks_like
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


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    if args.n < 0 or args.skip < 0:
        raise UsageError("-n and --skip must not be negative")
    paths = expand_inputs(args.files)
    problems = 0
    for i, path in enumerate(paths):
        if len(paths) > 1 and not args.json:
            print(f"{'' if i == 0 else chr(10)}==> {path} <==")
        shown = 0
        info = SalvageInfo()
        # TensorBoard events, ELWC... are not shown as Examples (judged as info judges)
        kind = file_kind(path, args.skip + args.n)
        for item in salvage_file(path, info=info):
            if shown >= args.n:
                break  # the generator (and its file) is closed as it goes out of scope
            if isinstance(item, Damage):
                problems += 1
                print(damage_line(item, path, bool(info.compression)), file=sys.stderr)
                continue
            if item.index < args.skip:
                continue
            if args.json:
                print(json.dumps(_head_json(path, item, kind)))
            else:
                print("\n".join(_head_text(path, item, bool(info.compression), kind)))
            shown += 1
        if shown == 0 and not problems:
            # Say so, rather than print nothing (on stderr: --json output stays JSON lines).
            where = f"past record {args.skip - 1}" if args.skip else "in it"
            print(f"{path}: no records {where}", file=sys.stderr)
    return EXIT_DATA if problems else EXIT_OK


def register(sub: Any) -> None:
    """Add the sub-command and its options."""
    p = add_command(
        sub,
        "head",
        run,
        "print the first records as Examples",
        "Print records as Example / SequenceExample: each feature's kind, value count "
        "and values (the first 8). Bytes show as text when they are printable UTF-8, as "
        "'<JPEG 640x480, 35,121 bytes>' when they are an image, else as length + hex.",
        examples_text(
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
