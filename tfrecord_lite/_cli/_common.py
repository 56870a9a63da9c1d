"""What every command shares: the exit codes, the usage error, the run context
(quiet, debug, the progress bar), the inputs (paths, globs, ``name@N`` specs, TFDS
directories), reading the records of files, and the one-line damage report.

Each command is a module of this package with a ``register(sub)`` function adding its
sub-command (options, help and examples) and a ``run(args, ctx)`` function returning
the exit code: 0 all is well; 1 a problem with the data (bad CRC, truncated file,
records that are not Examples, images that could not be decoded) or the command
failed; 2 a usage error (bad arguments, input files that do not exist).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Generator, Sequence
from typing import Any, Callable, Optional

from .. import example_pb2
from .._errors import TFRecordError
from .._examples import KIND_SAMPLE, KindProbe, RecordKind
from .._files import Damage, NotATFRecordError, Record, expand_paths, fs, salvage_file
from ._progress import Progress, progress

PROG = "tfrecord-lite"
EXIT_OK = 0
EXIT_DATA = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """A problem with the command line itself (exit code 2)."""


class Ctx:
    """What a command is run with besides its arguments: ``quiet``, ``debug``, the bar."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.quiet: bool = bool(getattr(args, "quiet", False))
        self.debug: bool = bool(getattr(args, "debug", False))

    def bar(self, total: Optional[float] = None, desc: str = "", unit: str = "it") -> Progress:
        return progress(total, desc=desc, unit=unit, quiet=self.quiet)


#: A command's entry point: ``run(args, ctx) -> exit code``.
Run = Callable[[argparse.Namespace, Ctx], int]


def say(bar: Optional[Progress], text: str, err: bool = False) -> None:
    """Print a line (stdout, or stderr with ``err``) without colliding with the bar."""
    out = sys.stderr if err else sys.stdout
    if bar is not None:
        bar.write(text, file=out)
    else:
        print(text, file=out, flush=True)


# --------------------------------------------------------------------------- the sub-commands

FORMATTER = argparse.RawDescriptionHelpFormatter


def examples_text(*lines: str) -> str:
    """The ``examples:`` epilog of a command's help."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def add_command(
    sub: Any, name: str, run: Run, summary: str, description: str, examples: str
) -> argparse.ArgumentParser:
    """Add the sub-command ``name`` (with ``-q`` and ``--debug``) to ``sub``; return its parser."""
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
    p: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog=examples,
        formatter_class=FORMATTER,
        parents=[common],
    )
    p.set_defaults(func=run)
    return p


def positive_int(text: str) -> int:
    """An argument type: a whole number of at least 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def compression_arg(value: Optional[str]) -> str:
    """``--compression`` as the writers take it (``""`` for none)."""
    if value is None:
        return ""
    v = value.strip().upper()
    return "" if v in ("NONE", "") else v


# --------------------------------------------------------------------------- inputs


def expand_inputs(items: Sequence[str]) -> list[str]:
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


def tfds_inputs(items: Sequence[str]) -> Optional[list[str]]:
    """The inputs if they are prepared TFDS dataset directories (see tfrecord_lite.tfds), else None."""
    from ._tfds import tfds_dirs

    try:
        return tfds_dirs(items)
    except ValueError as e:
        raise UsageError(str(e)) from None


def total_size(paths: Sequence[str]) -> int:
    return sum(fs.size(p) for p in paths)


def same_file(a: str, b: str) -> bool:
    """Whether ``b`` exists and is the file ``a``."""
    try:
        return os.path.exists(b) and os.path.samefile(a, b)
    except OSError:
        return False


def remove_inprogress(prefix: str, n: int) -> None:
    """Remove what an aborted ``ShardedWriter(prefix, num_shards=n)`` may have left."""
    head, tail = os.path.split(prefix)
    for i in range(n):
        with contextlib.suppress(OSError):
            os.remove(os.path.join(head, f".{tail}-{i:05d}.inprogress"))


# --------------------------------------------------------------------------- records


def iter_records(
    ctx: Ctx, paths: Sequence[str], desc: str, bar: Optional[Progress] = None
) -> Generator[tuple[str, Record], None, None]:
    """Every record of the files, in order; the first damage raises its error."""
    own = bar is None
    bar = bar or ctx.bar(total_size(paths), desc, "B")
    try:
        for path in paths:
            for item in salvage_file(path, on_bytes=bar.update):
                if isinstance(item, Damage):
                    raise item.error
                yield path, item
    finally:
        if own:
            bar.close()


def file_kind(path: str, records: int = KIND_SAMPLE) -> RecordKind:
    """What the records of a file are, from its first ``records`` (at most KIND_SAMPLE; see
    ``RecordKind``): info, head and verify all say ``not tf.train.Example (looks like a
    TensorBoard Event)``. ``head -n 1`` looks at the records it shows, not at 100."""
    probe = KindProbe(max(1, min(records, KIND_SAMPLE)))
    for item in salvage_file(path):  # closed (with its file) as it goes out of scope
        if isinstance(item, Damage) or probe.full:
            break
        probe.add(item.data)
    return probe.result()


def parse_any(data: bytes) -> Optional[Any]:
    """The record as a SequenceExample (an Example parses to its context), or None."""
    try:
        return example_pb2.SequenceExample.FromString(data)
    except Exception:
        return None


def where_text(err: TFRecordError, compressed: bool) -> str:
    """``record N, byte offset M`` of an error (what of it is known)."""
    parts = []
    if err.index is not None:
        parts.append(f"record {err.index}")
    if err.offset is not None:
        parts.append(f"{'decompressed ' if compressed else ''}byte offset {err.offset}")
    return ", ".join(parts)


def not_tfrecord(err: BaseException) -> Optional[NotATFRecordError]:
    """``err`` when it says a whole file is of another format (an image, CSV...), else None."""
    if isinstance(err, NotATFRecordError) and err.what is not None:
        return err
    return None


def not_tfrecord_line(err: NotATFRecordError, path: Optional[str] = None) -> str:
    """One line for a file that is not a TFRecord file: which, what it is, what to do."""
    what = err.what or ""
    if what.endswith("image"):
        todo = f"to turn a folder of images into TFRecords, run {PROG} from-images DIR OUT"
    else:
        todo = "to write such data as TFRecords, use tfrecord_lite.write_examples"
    return (
        f"{path or err.path}: {err.message}. {PROG} reads TFRecord files (plain, GZIP or "
        f"ZLIB) only; {todo}"
    )


def damage_line(item: Damage, path: str, compressed: bool) -> str:
    """One line for a damaged stretch of a file: what, where, and where reading goes on."""
    other = not_tfrecord(item.error)
    if other is not None:
        return not_tfrecord_line(other, path)
    err = item.error
    where = where_text(err, compressed)
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
