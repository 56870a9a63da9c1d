"""``convert`` to ArrayRecord: the records' bytes as they are, in order, through the
``array_record`` package (the ``array_record`` extra), so Grain's
``ArrayRecordDataSource`` and TFDS (``file_format=array_record``) read them.

The file is written with ``group_size:1`` (each record its own chunk group), the
setting Grain and TFDS use for random access; Grain warns about larger groups. It is
written under a temporary name beside the output and renamed when every record is
in: an error or Ctrl-C leaves nothing under the output's name.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from typing import Any

from .._tables import require

__all__ = ["WRITER_OPTIONS", "write_array_record"]

#: The options of the files written (random access, as Grain and TFDS write them).
WRITER_OPTIONS = "group_size:1"


def array_record_module() -> Any:
    """``array_record.python.array_record_module``, or an ImportError naming the extra."""
    try:
        return require(
            "array_record.python.array_record_module",
            "convert to ArrayRecord",
            "the array_record package",
            "array_record",
        )
    except ImportError as e:
        raise ImportError(
            f"{e} (array-record has wheels for Python 3.10 and later on Linux and "
            "macOS on Apple silicon)"
        ) from None


def write_array_record(path: str, records: Iterable[bytes]) -> int:
    """Write the records to the ArrayRecord file ``path`` atomically; how many."""
    module = array_record_module()
    head, tail = os.path.split(path)
    tmp = os.path.join(head, f".{tail}.tmp-{os.getpid()}")
    writer = module.ArrayRecordWriter(tmp, WRITER_OPTIONS)
    written = 0
    try:
        for data in records:
            writer.write(data)
            written += 1
        writer.close()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(Exception):
            writer.close()
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    return written
