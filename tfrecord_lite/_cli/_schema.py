"""``tfrecord-lite schema``: the inferred feature dict, as Python or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Generator
from typing import Any

from .._errors import ParseError
from .._examples import (
    DEFAULT_SAMPLE,
    NotExampleError,
    infer_schema,
)
from ._common import (
    EXIT_OK,
    PROG,
    Ctx,
    add_command,
    examples_text,
    expand_inputs,
    iter_records,
    positive_int,
)


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    paths = expand_inputs(args.files)
    # (records before the file, path, its first record's index): where a record number lands
    starts: list[tuple[int, str, int]] = []
    seen = [0]

    def records() -> Generator[bytes, None, None]:
        for path, item in iter_records(ctx, paths, "schema"):
            if not starts or starts[-1][1] != path:
                starts.append((seen[0], path, item.index))
            seen[0] += 1
            yield item.data

    gen = records()
    try:
        # the same call, with the same defaults, as tfr.infer_schema(files)
        schema = infer_schema(gen, args.sample, check=not args.no_check)
    except NotExampleError as e:
        if e.kind is None or not starts:
            raise
        raise e.kind.error(starts[0][1]) from None  # the file the records came from
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


def register(sub: Any) -> None:
    """Add the sub-command and its options."""
    p = add_command(
        sub,
        "schema",
        run,
        "print the inferred feature dict, ready to paste",
        "Infer the feature dict (FixedLenFeature for keys with the same number of values "
        "in every record, else VarLenFeature) and print it as Python or JSON. The first "
        "N records (--sample) are read in full and every later one is checked, so the "
        "feature dict parses every record; the same as tfr.infer_schema(FILES).",
        examples_text(
            f"{PROG} schema train.tfrecord > features.py",
            f"{PROG} schema train.tfrecord --format json --sample 1000",
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--format", choices=("python", "json"), default="python")
    p.add_argument(
        "--sample",
        type=positive_int,
        metavar="N",
        default=DEFAULT_SAMPLE,
        help=f"read the first N records in full (default: {DEFAULT_SAMPLE}); later ones are checked",
    )
    p.add_argument(
        "--no-check",
        action="store_true",
        help="read only the first N records (quick; the result may not fit later records)",
    )
