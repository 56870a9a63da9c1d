"""The files of a dataset directory stay inside it: a symbolic link that leads out of the
directory (a shard, ``dataset_info.json``, a ``*.labels.txt``) is refused, as names from
the metadata that would lead out of it are.
"""

from __future__ import annotations

import os

__all__ = ["check_inside"]


def check_inside(path: str) -> None:
    """Raise ``ValueError`` if ``path`` resolves (through links) outside its directory."""
    folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    real = os.path.realpath(path)
    if os.path.commonpath([folder, real]) != folder:
        raise ValueError(
            f"{path} is a symbolic link to {real}, outside the dataset directory {folder}: "
            "refused (copy the file into the directory, or link the whole directory instead)"
        )
