"""One dataset iterator shared by several threads: every element once, no early end."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import tfrecord_lite as tfr

N_RECORDS = 200_000
THREADS = 4


def _consume(it: object, got: list[bytes], errors: list[BaseException]) -> None:
    try:
        for record in it:  # type: ignore[attr-defined]
            got.append(record)
    except BaseException as err:  # the test reports any
        errors.append(err)


def test_four_threads_share_one_iterator_and_get_every_record_once(tmp_path: Path) -> None:
    path = os.fspath(tmp_path / "small.tfrecord")
    records = [i.to_bytes(4, "little") for i in range(N_RECORDS)]
    with tfr.TFRecordWriter(path) as w:
        w.write_all(records)
    it = iter(tfr.TFRecordDataset(path))
    got: list[list[bytes]] = [[] for _ in range(THREADS)]
    errors: list[BaseException] = []
    threads = [threading.Thread(target=_consume, args=(it, got[t], errors)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sum(len(g) for g in got) == N_RECORDS
    numbers = [[int.from_bytes(r, "little") for r in g] for g in got]
    assert sorted(n for g in numbers for n in g) == list(range(N_RECORDS))
    for g in numbers:  # each thread's share comes in file order (one next() at a time)
        assert g == sorted(g)
    assert next(it, None) is None  # the epoch is over for everyone
