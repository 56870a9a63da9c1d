"""Random access into an indexed GZIP/ZLIB object on ``s3://`` and ``gs://``: each read
fetches only the compressed bytes from the seek point before the record on, by ranged
requests, never the whole object. The requests are counted on the fsspec filesystem
the library reads through."""

from __future__ import annotations

import uuid
from typing import Any

import fsspec
import numpy as np
import pytest

import tfrecord_lite as tfr

#: Seek-point spacing of the files written here (uncompressed bytes between flush points).
SPACING = 64 * 1024
N = 12_000


def records(n: int) -> list[bytes]:
    """About 300 bytes each, half of them random (the object compresses to ~60%)."""
    rng = np.random.default_rng(1)
    return [b"%08d" % i + rng.bytes(150) + b"x" * 142 for i in range(n)]


class Counted:
    """The byte ranges requested through a filesystem's ``cat_file`` / ``open``, per path."""

    def __init__(self, fs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ranges: list[tuple[str, Any, Any]] = []
        self.opened: list[str] = []
        cat_file, open_ = fs.cat_file, fs.open

        def counted_cat(path: str, start: Any = None, end: Any = None, **kw: Any) -> Any:
            self.ranges.append((path, start, end))
            return cat_file(path, start=start, end=end, **kw)

        def counted_open(path: str, *args: Any, **kw: Any) -> Any:
            self.opened.append(path)
            return open_(path, *args, **kw)

        monkeypatch.setattr(fs, "cat_file", counted_cat)
        monkeypatch.setattr(fs, "open", counted_open)

    def data_bytes(self, key: str) -> int:
        """Bytes asked of the data object ``key`` (an open range counts as unbounded)."""
        total = 0
        for path, start, end in self.ranges:
            if path.endswith(key):
                assert start is not None and end is not None, "an unbounded read of the object"
                total += end - start
        return total

    def clear(self) -> None:
        self.ranges.clear()
        self.opened.clear()


def check_ranged_reads(url: str, so: dict[str, Any], proto: str, compression: str, mp: Any) -> None:
    recs = records(N)
    with tfr.TFRecordWriter(url, compression, seekable=SPACING, storage_options=so) as w:
        w.write_all(recs)
    tfr.create_index(url, spacing=SPACING, storage_options=so)
    fs = fsspec.filesystem(proto, **so)
    key = url.split("://", 1)[1]
    size = fs.size(key)
    counted = Counted(fs, mp)
    mp.setenv("TFRECORD_LITE_GZIP_SPAN_CACHE", "0")  # each read from its seek point
    f = tfr.TFRecordFile(url, storage_options=so)
    assert f.index_path == url + ".index" and len(f) == N
    opening = counted.data_bytes(key)
    # the index's check (64 KiB hashed at each end) and the first and last records' headers
    assert opening <= 128 * 1024 + 4 * SPACING < size // 4, f"opening read {opening} of {size}"
    assert not any(p.endswith(key) for p in counted.opened)
    for k in (N - 3, N // 2, 17):
        counted.clear()
        assert f[k] == recs[k]
        got = counted.data_bytes(key)
        # the compressed span of one seek-point interval (and the read's rounding), not more
        assert 0 < got <= 2 * SPACING, f"record {k}: {got} bytes of a {size}-byte object"
        assert not any(p.endswith(key) for p in counted.opened)
    counted.clear()
    picks = [N - 1, 5, N // 3]
    assert f[picks] == [recs[i] for i in picks]
    assert counted.data_bytes(key) <= 3 * 2 * SPACING < size // 4
    counted.clear()
    assert f[N - 20 : N - 10] == recs[N - 20 : N - 10]
    assert 0 < counted.data_bytes(key) <= 2 * SPACING
    f.close()
    mp.delenv("TFRECORD_LITE_GZIP_SPAN_CACHE")  # the default cache of inflated spans
    with tfr.TFRecordFile(url, storage_options=so) as g:
        counted.clear()
        assert g[N // 2] == recs[N // 2]
        assert 0 < counted.data_bytes(key) <= 2 * SPACING  # its span, once
        counted.clear()
        assert g[N // 2 + 1] == recs[N // 2 + 1] and g[N // 2 - 1] == recs[N // 2 - 1]
        assert counted.data_bytes(key) == 0  # slices of the span kept


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_s3_reads_a_record_from_its_seek_point_by_range(
    bucket: str, storage_options: dict[str, Any], compression: str, monkeypatch: Any
) -> None:
    url = f"s3://{bucket}/seek/{compression.lower()}.tfrecord"
    check_ranged_reads(url, storage_options, "s3", compression, monkeypatch)


def test_gcs_reads_a_record_from_its_seek_point_by_range(
    gcs_options: dict[str, Any], monkeypatch: Any
) -> None:
    url = f"gs://tfr/{uuid.uuid4().hex[:10]}/seek.tfrecord.gz"
    check_ranged_reads(url, gcs_options, "gs", "GZIP", monkeypatch)


def test_global_shuffle_and_range_shards_over_indexed_gzip_objects(
    bucket: str, storage_options: dict[str, Any], monkeypatch: Any
) -> None:
    so = storage_options
    recs = records(3000)
    parts = [recs[:1700], recs[1700:2100], recs[2100:]]
    urls = []
    for k, (part, comp) in enumerate(zip(parts, ["GZIP", "", "ZLIB"])):
        url = f"s3://{bucket}/ds/part-{k}.tfrecord"
        with tfr.TFRecordWriter(url, comp, seekable=SPACING, storage_options=so) as w:
            w.write_all(part)
        tfr.create_index(url, spacing=SPACING, storage_options=so)
        urls.append(url)
    ds = tfr.TFRecordDataset(urls, storage_options=so)
    shuffled = list(ds.global_shuffle(seed=0))
    assert sorted(shuffled) == sorted(recs) and shuffled != recs
    ranks = [list(ds.shard(4, r, by="range")) for r in range(4)]
    assert [x for p in ranks for x in p] == recs
    fs = fsspec.filesystem("s3", **so)
    counted = Counted(fs, monkeypatch)
    assert list(ds.shard(8, 7, by="range")) == recs[-375:]  # the end of part-2 only
    first = f"{bucket}/ds/part-0.tfrecord"
    assert counted.data_bytes(first) <= 128 * 1024 + 4 * SPACING  # its index check only
