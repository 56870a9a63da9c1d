"""``python -m tfrecord_lite``: the ``tfrecord-lite`` command line tool."""

from ._cli import main

if __name__ == "__main__":
    raise SystemExit(main())
