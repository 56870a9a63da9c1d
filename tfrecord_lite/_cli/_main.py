"""The ``tfrecord-lite`` command line tool (also ``python -m tfrecord_lite``).

Commands: info, head, count, verify, schema, index, convert, from-images,
preview, one module each; ``tfrecord-lite COMMAND --help`` shows each one's options
and examples.

Exit codes: 0 all is well; 1 a problem with the data (bad CRC, truncated file,
records that are not Examples, images that could not be decoded, a file that an
input names but that is missing, such as a TFDS shard listed in its
``dataset_info.json``) or the command failed; 2 a usage error (bad arguments,
input files that do not exist). Errors are one line on stderr; ``--debug`` shows
the traceback.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Optional

from .._errors import TFRecordError
from ._common import (
    EXIT_DATA,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    Ctx,
    UsageError,
    not_tfrecord,
    not_tfrecord_line,
)
from ._parser import build_parser

__all__ = ["main"]


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
    ctx = Ctx(args)
    try:
        code: int = args.func(args, ctx)
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (`| head -1`): it has what it wanted, so stop
        # quietly and succeed, as `set -o pipefail` scripts expect of a reader cut short.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # pragma: no cover
            pass
        return EXIT_OK
    except Exception as e:
        if ctx.debug:
            raise
        return _report(e)


def _report(e: Exception) -> int:
    if isinstance(e, UsageError):
        _error(str(e))
        return EXIT_USAGE
    if isinstance(e, (FileNotFoundError, NotADirectoryError)) and not isinstance(
        e, TFRecordError
    ):  # (the library's own not-found errors are about a file the input names: data)
        name = e.filename if e.filename is not None else ""
        _error(f"{e.strerror or e}: {name}" if name else str(e))
        return EXIT_USAGE
    other = not_tfrecord(e)
    if other is not None:  # a CSV, an image...: which file, what it is, what to do
        _error(not_tfrecord_line(other))
        return EXIT_DATA
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
