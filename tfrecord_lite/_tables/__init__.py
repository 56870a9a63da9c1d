"""The table layer the integrations share: the type mapping between parsed columns and
Apache Arrow, the read plan (specs given or inferred, compiled once, and their Arrow
schema), file pieces (one per read task) and reading them into tables, write jobs whose shards
are committed whole (:class:`ShardJob`), and the lazy imports of the optional engines.

Arrow, Ray, Dask, Spark, Daft and Hugging Face build on these names only; none of
them imports another integration.
"""

from ._extras import require, require_dask_dataframe, require_pyarrow, require_ray_data
from ._from_arrow import feature_lists_of, from_arrow, table_records
from ._pieces import (
    DEFAULT_PARTITION_BYTES,
    DEFAULT_RECORDS_PER_TASK,
    Paths,
    Piece,
    PieceReader,
    check_read_options,
    expand,
    group_pieces,
    read_pieces,
    split_file,
    split_files,
)
from ._plan import DEFAULT_BATCH_SIZE, ReadPlan
from ._read_options import READ_OPTION_NAMES, ReadOptions
from ._shards import FAILED_SWEEP_EVERY, FAILED_SWEEP_FOR, FAILED_SWEEPS_QUIET, ShardJob
from ._spec_json import spec_from_json, spec_to_json, specs_from_json, specs_to_json
from ._stream import make_plan, projected_plan, stream_tables
from ._to_arrow import FEATURE_LISTS_KEY, to_arrow

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_PARTITION_BYTES",
    "DEFAULT_RECORDS_PER_TASK",
    "FAILED_SWEEPS_QUIET",
    "FAILED_SWEEP_EVERY",
    "FAILED_SWEEP_FOR",
    "FEATURE_LISTS_KEY",
    "READ_OPTION_NAMES",
    "Paths",
    "Piece",
    "PieceReader",
    "ReadOptions",
    "ReadPlan",
    "ShardJob",
    "check_read_options",
    "expand",
    "feature_lists_of",
    "from_arrow",
    "group_pieces",
    "make_plan",
    "projected_plan",
    "read_pieces",
    "require",
    "require_dask_dataframe",
    "require_pyarrow",
    "require_ray_data",
    "spec_from_json",
    "spec_to_json",
    "specs_from_json",
    "specs_to_json",
    "split_file",
    "split_files",
    "stream_tables",
    "table_records",
    "to_arrow",
]
