"""``encode_columns`` of a big numeric column builds its records a run of rows at a
time (issue 34, item 14): a 512 MiB int column took 4.4 GB, every temporary of the
2-D row layout made for the whole column at once. Measured with ``tracemalloc``
(NumPy's arrays and the ``bytes`` returned), not timed.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np

from tfrecord_lite._examples import _encode_columns, encode_columns, encode_example


def test_a_big_int_column_is_encoded_in_runs_of_rows(monkeypatch: Any) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "numpy")
    column = (np.arange(4 << 20, dtype=np.int64) * 977).reshape(-1, 8)  # 32 MiB, 512 Ki rows
    tracemalloc.start()
    records = encode_columns({"x": column}, len(column))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(records) == len(column)
    for i in (0, 1, 70_000, len(column) - 1):
        assert records[i] == encode_example({"x": column[i]})
    out = sum(map(len, records)) + 40 * len(records)  # (the records themselves)
    # the rows of one run at a time: the column's bytes and the records, not 8x the column
    assert peak < out + 3 * column.nbytes, (peak, out)
    assert column.nbytes > _encode_columns.ROWS_CHUNK_BYTES


def test_records_of_several_sizes_come_back_in_order_across_runs(monkeypatch: Any) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", "numpy")
    monkeypatch.setattr(_encode_columns, "ROWS_CHUNK_BYTES", 4096)
    rng = np.random.default_rng(1)
    ints = rng.integers(0, 2**20, (50_000, 3))  # varints of 1 to 3 bytes: several sizes
    floats = rng.standard_normal((50_000, 2)).astype(np.float32)
    records = encode_columns({"i": ints, "f": floats}, 50_000)
    for j in rng.integers(0, 50_000, 200).tolist():
        assert records[j] == encode_example({"i": ints[j], "f": floats[j]})
