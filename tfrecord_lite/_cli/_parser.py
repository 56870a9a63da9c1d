"""The argument parser: the program's options and help, and one sub-command per
command module (each adds its own options with its ``register``)."""

from __future__ import annotations

import argparse

from .._version import __version__
from . import _convert, _count, _from_images, _head, _index, _info, _preview, _schema, _verify
from ._common import FORMATTER, PROG, examples_text

__all__ = ["build_parser"]

#: The commands, in the order ``--help`` lists them.
COMMANDS = (_info, _head, _count, _verify, _schema, _index, _convert, _from_images, _preview)


def build_parser() -> argparse.ArgumentParser:
    """The ``tfrecord-lite`` parser; each sub-command sets ``func`` to its ``run``."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Inspect, check and convert TensorFlow TFRecord files (plain, GZIP, ZLIB) "
            "without TensorFlow."
        ),
        epilog=(
            examples_text(
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
        formatter_class=FORMATTER,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bar and no summary lines"
    )
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser
