"""The read arguments every table integration takes, in one object: :class:`ReadOptions`.

Ray, Daft, Spark, Dask and Hugging Face ``datasets`` read TFRecord files with the same
arguments, under the same names and defaults (``features`` positional or by keyword,
the rest by keyword). Each ``read_tfrecords`` (``load_dataset``) builds one
:class:`ReadOptions` from them, checked at once, and passes it on: to
:meth:`ReadOptions.read`, which expands the paths, makes the read plan and cuts the
files into pieces, one per read task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Optional

from .._examples import DEFAULT_SAMPLE, FeatureSpec
from ._pieces import DEFAULT_RECORDS_PER_TASK, Paths, Piece, PieceReader, read_pieces
from ._plan import DEFAULT_BATCH_SIZE

__all__ = ["READ_OPTION_NAMES", "ReadOptions"]


@dataclass(frozen=True)
class ReadOptions:
    """How TFRecord files are read into tables (the arguments of every ``read_tfrecords``).

    ``features`` are the Example's specs (for SequenceExamples: the context's, plus
    ``sequence_features``); when both are ``None`` the schema is inferred from the first
    ``sample`` records of the first file (``None``: all of it). ``compression``
    (``"auto"``: detected per file), ``verify`` (CRC checks) and ``on_error``
    (``"raise"``, ``"skip"``, ``"stop"``) are the core reader's; ``storage_options`` go to
    fsspec for URLs. ``batch_size`` records are parsed at a time; a large file with an
    index file is read in tasks of about ``records_per_task`` records;
    ``include_paths=True`` adds a ``path`` column. Bad values raise ``ValueError`` when
    the options are made.
    """

    features: Optional[Mapping[str, FeatureSpec]] = None
    sequence_features: Optional[Mapping[str, FeatureSpec]] = None
    compression: Optional[str] = "auto"
    verify: bool = True
    on_error: str = "raise"
    storage_options: Optional[Mapping[str, Any]] = None
    batch_size: int = DEFAULT_BATCH_SIZE
    records_per_task: int = DEFAULT_RECORDS_PER_TASK
    include_paths: bool = False
    sample: Optional[int] = DEFAULT_SAMPLE

    def __post_init__(self) -> None:
        for name in ("batch_size", "records_per_task"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if self.on_error not in ("raise", "skip", "stop"):
            raise ValueError(f"on_error must be 'raise', 'skip' or 'stop', got {self.on_error!r}")
        if self.sample is not None and (
            isinstance(self.sample, bool) or not isinstance(self.sample, int) or self.sample < 1
        ):
            raise ValueError(
                f"sample must be a number of records of at least 1, or None (all), "
                f"got {self.sample!r}"
            )
        for name in ("features", "sequence_features", "storage_options"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Mapping):
                raise TypeError(f"{name} must be a dict or None, got {type(value).__name__}")

    def read(self, paths: Paths) -> tuple[PieceReader, list[Piece]]:
        """The files of ``paths`` expanded, the specs (inferred when not given), the
        :class:`PieceReader` of their plan and the pieces, one per read task."""
        return read_pieces(
            paths,
            self.features,
            self.sequence_features,
            compression=self.compression,
            verify=self.verify,
            on_error=self.on_error,
            storage_options=self.storage_options,
            batch_size=self.batch_size,
            records_per_task=self.records_per_task,
            include_paths=self.include_paths,
            sample=self.sample,
        )

    def as_dict(self) -> dict[str, Any]:
        """The options by name (specs as they were given)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


#: The argument names, in order (after the paths), that every integration's reader takes.
READ_OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(ReadOptions))
