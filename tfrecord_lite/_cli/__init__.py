"""The ``tfrecord-lite`` command line."""

from ._main import main

__all__ = ["main"]
