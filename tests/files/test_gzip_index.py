"""Random access into GZIP/ZLIB files: the binary index (records and seek points) and
``TFRecordFile`` reading through it, and every way an index can fail to fit its file."""

from __future__ import annotations

import gzip
import io
import os
import pickle
import struct
import threading
import zlib
from pathlib import Path

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files import _gzindex, _restart, _zran
from tfrecord_lite._files._index import StaleIndexError, TFRecordFile, create_index, read_index

COMPRESSIONS = ["GZIP", "ZLIB"]


def records(n: int, seed: int = 0) -> list[bytes]:
    """Records that deflate into many blocks: random bytes and long runs, mixed."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        noise = rng.integers(0, 256, int(rng.integers(0, 300)), dtype=np.uint8).tobytes()
        out.append(noise + bytes([i % 7 + 97]) * int(rng.integers(0, 2000)) + b"#%d" % i)
    return out


def write(path: Path, recs: list[bytes], compression: str) -> str:
    """The records as one GZIP or ZLIB stream by zlib (as TensorFlow writes them: a
    deflate block every 16K symbols or so), or a plain file."""
    data = tfr.encode_records(recs)
    if compression:
        z = zlib.compressobj(6, zlib.DEFLATED, 31 if compression == "GZIP" else 15)
        data = z.compress(data) + z.flush()
    Path(path).write_bytes(data)
    return os.fspath(path)


def members(path: Path, recs: list[bytes], per: int, padding: int = 0) -> str:
    """A GZIP file of several members (``per`` records each), then ``padding`` zero bytes."""
    with open(path, "wb") as f:
        for k in range(0, len(recs), per):
            f.write(gzip.compress(tfr.encode_records(recs[k : k + per]), mtime=0))
        f.write(bytes(padding))
    return os.fspath(path)


def load(index: str) -> _gzindex.GzIndex:
    return _gzindex.decode(Path(index).read_bytes())


def rewrite(index: str, changed: _gzindex.GzIndex) -> None:
    """Write ``changed`` as ``index``, its CRCs right: only the checks against the data
    file can tell it is wrong."""
    Path(index).write_bytes(_gzindex.encode(changed))


@pytest.fixture(params=COMPRESSIONS)
def indexed(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, list[bytes]]:
    recs = records(1500, seed=1)
    path = write(tmp_path / "data.tfrecord", recs, request.param)
    return path, create_index(path, spacing=64 * 1024), recs


# --------------------------------------------------------------------------- reading


def test_every_record_by_index_slice_and_list(indexed: tuple[str, str, list[bytes]]) -> None:
    path, index, recs = indexed
    assert len(load(index).points) > 10  # many seek points inside the deflate stream
    rng = np.random.default_rng(0)
    with TFRecordFile(path) as f:
        assert f.index_path == index and len(f) == len(recs)
        for i in rng.permutation(len(recs))[:300].tolist():
            assert f[i] == recs[i]
        assert f[-1] == recs[-1] and f[-len(recs)] == recs[0]
        assert f[700:760] == recs[700:760] and f[1400:] == recs[1400:]
        assert f[::97] == recs[::97]
        picks = [1499, 3, 3, 800, 0]
        assert f[picks] == [recs[i] for i in picks]
        assert list(f) == recs
        assert np.array_equal(f.lengths, [len(r) + 16 for r in recs])


def test_a_fresh_file_per_read_starts_from_a_seek_point(
    indexed: tuple[str, str, list[bytes]],
) -> None:
    path, _, recs = indexed
    for i in (0, 1, 333, 1024, 1499):
        with TFRecordFile(path) as f:
            assert f[i] == recs[i]


def test_every_seek_point_restarts_the_stream(tmp_path: Path) -> None:
    """A seek point at every block boundary, at every bit position within a byte."""
    recs = records(300, seed=2)
    z = zlib.compressobj(6, zlib.DEFLATED, 31, memLevel=1)  # a block every 128 symbols
    path = os.fspath(tmp_path / "data.gz")
    Path(path).write_bytes(z.compress(tfr.encode_records(recs)) + z.flush())
    index = create_index(path, spacing=1)
    points = load(index).points
    assert {p.bit % 8 for p in points if p.kind == _gzindex.BLOCK} == set(range(8))
    bounds = np.cumsum([0] + [len(r) + 16 for r in recs])
    with TFRecordFile(path) as f:
        for p in points:
            i = int(np.searchsorted(bounds, p.out, side="left"))
            f._gz.drop()  # type: ignore[union-attr]  # no inflater carried over
            if i < len(recs):
                assert f[i] == recs[i]


@pytest.mark.parametrize("k", range(8))
def test_the_primer_is_empty_deflate_ending_k_bits_into_a_byte(k: int) -> None:
    head, q = _restart.primer(k)
    assert len(head) == (q + 1 if k else 0)
    if not k:
        return
    # The primer, then a final stored block of b"ok" starting at bit k of the last byte.
    z = zlib.decompressobj(-15, zdict=b"window")
    final = 1 | (0 << 1)  # BFINAL=1, BTYPE=00 (stored), padded to the byte's end
    last = head[q] | ((final << k) & 0xFF)
    rest = b"" if k + 3 <= 8 else bytes([final >> (8 - k)])
    stream = head[:q] + bytes([last]) + rest + struct.pack("<HH", 2, 0xFFFD) + b"ok"
    assert z.decompress(stream) == b"ok" and z.eof


def test_multi_member_gzip_with_padding(tmp_path: Path) -> None:
    recs = records(600, seed=3)
    path = members(tmp_path / "m.gz", recs, per=7, padding=512)
    index = create_index(path, spacing=16 * 1024)
    assert any(p.kind == _gzindex.START and p.out for p in load(index).points)
    with TFRecordFile(path) as f:
        assert len(f) == 600 and list(f) == recs
        for i in np.random.default_rng(1).permutation(600)[:100].tolist():
            f._gz.drop()  # type: ignore[union-attr]
            assert f[i] == recs[i]


def test_without_an_index_file_the_seek_points_are_built_in_memory(tmp_path: Path) -> None:
    recs = records(400, seed=4)
    path = write(tmp_path / "d.zz", recs, "ZLIB")
    with TFRecordFile(path) as f:
        assert f.index_path is None and f[399] == recs[399] and f[5:9] == recs[5:9]
    assert not os.path.exists(path + ".index")


def test_without_the_c_zlib_members_are_the_seek_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_zran, "_TRIED", True)
    monkeypatch.setattr(_zran, "_LIB", None)
    recs = records(300, seed=5)
    path = members(tmp_path / "m.gz", recs, per=50)
    index = create_index(path, spacing=1)
    assert {p.kind for p in load(index).points} == {_gzindex.START}
    with TFRecordFile(path) as f:
        assert f[299] == recs[299] and f[120:130] == recs[120:130]


def test_the_text_format_is_the_plain_files_index(tmp_path: Path) -> None:
    recs = records(200, seed=6)
    gz = write(tmp_path / "g.gz", recs, "GZIP")
    plain = write(tmp_path / "p.tfrecord", recs, "")
    text = create_index(gz, tmp_path / "g.idx", format="text")
    assert Path(text).read_text() == Path(create_index(plain)).read_text()
    binary = create_index(gz)
    assert np.array_equal(read_index(binary), read_index(text))
    with TFRecordFile(gz, index_path=text) as f:  # a text index: checked, then used
        assert f[150] == recs[150]
    with pytest.raises(ValueError, match="format"):
        create_index(gz, format="csv")


def test_pickled_and_shared_by_threads(indexed: tuple[str, str, list[bytes]]) -> None:
    path, _, recs = indexed
    f = TFRecordFile(path)
    assert f[10] == recs[10]
    g = pickle.loads(pickle.dumps(f))
    assert g[1200] == recs[1200] and len(g) == len(recs)
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for i in np.random.default_rng(seed).integers(0, len(recs), 40).tolist():
                assert f[i] == recs[i]
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# --------------------------------------------------------------------------- bad input


def test_an_index_of_another_file_of_the_same_size(tmp_path: Path) -> None:
    recs = records(300, seed=7)
    path = write(tmp_path / "a.gz", recs, "GZIP")
    index = create_index(path)
    blob = bytearray(Path(path).read_bytes())
    blob[4:8] = b"\x01\x02\x03\x04"  # another GZIP header time: same size, other bytes
    Path(path).write_bytes(bytes(blob))
    with pytest.raises(StaleIndexError, match="other bytes") as info:
        TFRecordFile(path)
    assert info.value.path == index and index in str(info.value)


def test_an_index_of_an_older_version_of_its_file(tmp_path: Path) -> None:
    recs = records(300, seed=8)
    path = write(tmp_path / "a.gz", recs, "GZIP")
    index = create_index(path)
    with open(path, "ab") as f:  # a member appended: the file grew
        f.write(gzip.compress(tfr.encode_record(b"more"), mtime=0))
    with pytest.raises(StaleIndexError, match="another version") as info:
        TFRecordFile(path)
    assert info.value.path == index


@pytest.mark.parametrize("cut", [4, 8, 20, 60, -1])
def test_a_truncated_index(indexed: tuple[str, str, list[bytes]], cut: int) -> None:
    path, index, _ = indexed
    blob = Path(index).read_bytes()
    Path(index).write_bytes(blob[:cut])
    with pytest.raises(StaleIndexError) as info:
        TFRecordFile(path)
    assert info.value.path == index and index in str(info.value)


def test_a_damaged_index_fails_its_crc(indexed: tuple[str, str, list[bytes]]) -> None:
    path, index, _ = indexed
    blob = bytearray(Path(index).read_bytes())
    blob[len(blob) // 2] ^= 0x10
    Path(index).write_bytes(bytes(blob))
    with pytest.raises(StaleIndexError, match="damaged") as info:
        TFRecordFile(path)
    assert info.value.path == index


@pytest.mark.parametrize("verify", [True, False])
def test_a_tampered_window_never_gives_wrong_records(
    indexed: tuple[str, str, list[bytes]], verify: bool
) -> None:
    path, index, recs = indexed
    good = load(index)
    bounds = good.offsets()
    refused = 0
    blocks = [k for k, p in enumerate(good.points) if p.kind == _gzindex.BLOCK]
    for k in blocks:
        ix = load(index)
        p = ix.points[k]
        ix.points[k] = _gzindex.SeekPoint(p.bit, p.out, p.kind, p.window[::-1])
        Path(index + ".bad").write_bytes(_gzindex.encode(ix))
        i = int(np.searchsorted(bounds, p.out, side="left"))
        try:
            with TFRecordFile(path, index_path=index + ".bad", verify=verify) as f:
                got = f[i : i + 3]
        except StaleIndexError as err:
            assert err.path == index + ".bad" and index + ".bad" in str(err)
            refused += 1
        else:  # records that reach no further back than the block: the true ones
            assert got == recs[i : i + 3]
    assert refused > len(blocks) // 2


def test_a_tampered_seek_point_position(indexed: tuple[str, str, list[bytes]]) -> None:
    path, index, _ = indexed
    ix = load(index)
    k = len(ix.points) // 2
    p = ix.points[k]
    ix.points[k] = _gzindex.SeekPoint(p.bit + 13, p.out, p.kind, p.window)
    rewrite(index, ix)
    i = int(np.searchsorted(ix.offsets(), p.out, side="left"))
    with TFRecordFile(path) as f, pytest.raises(StaleIndexError) as info:
        f[i]
    assert info.value.path == index


def test_an_index_that_lies_about_record_lengths(indexed: tuple[str, str, list[bytes]]) -> None:
    path, index, _ = indexed
    ix = load(index)
    ix.lengths[3] += 5
    ix.lengths[4] -= 5
    rewrite(index, ix)
    with TFRecordFile(path) as f, pytest.raises(StaleIndexError) as info:
        f[3]
    assert info.value.path == index


def test_a_gzip_index_used_for_a_zlib_file(tmp_path: Path) -> None:
    recs = records(50)
    gz = write(tmp_path / "a.gz", recs, "GZIP")
    zz = write(tmp_path / "a.zz", recs, "ZLIB")
    index = create_index(gz)
    with pytest.raises(StaleIndexError, match="GZIP") as info:
        TFRecordFile(zz, index_path=index)
    assert info.value.path == index


def test_a_wrong_text_index_for_a_compressed_file(tmp_path: Path) -> None:
    recs = records(50)
    gz = write(tmp_path / "a.gz", recs, "GZIP")
    text = create_index(gz, tmp_path / "a.idx", format="text")
    lines = Path(text).read_text().splitlines()
    lines[10], lines[11] = lines[11], lines[10]
    Path(text).write_text("\n".join(lines) + "\n")
    with pytest.raises(StaleIndexError) as info:
        TFRecordFile(gz, index_path=text)
    assert info.value.path == text


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_a_truncated_data_file(tmp_path: Path, compression: str) -> None:
    recs = records(300, seed=9)
    path = write(tmp_path / "a", recs, compression)
    blob = Path(path).read_bytes()
    Path(path).write_bytes(blob[: len(blob) // 2])
    with pytest.raises(tfr.TruncatedRecordError) as info:
        create_index(path)
    assert info.value.path == path
    with pytest.raises(tfr.TruncatedRecordError):
        TFRecordFile(path)
    assert not os.path.exists(path + ".index")


def test_a_data_file_cut_after_indexing(indexed: tuple[str, str, list[bytes]]) -> None:
    path, index, _ = indexed
    blob = Path(path).read_bytes()
    Path(path).write_bytes(blob[:-100])
    with pytest.raises(StaleIndexError) as info:
        TFRecordFile(path)
    assert info.value.path == index


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_an_index_that_is_a_fifo_is_refused_not_read(tmp_path: Path) -> None:
    recs = records(20)
    path = write(tmp_path / "a.gz", recs, "GZIP")
    fifo = tmp_path / "a.fifo"
    os.mkfifo(fifo)
    with pytest.raises(StaleIndexError, match="regular file"):
        TFRecordFile(path, index_path=fifo)
    with pytest.raises(StaleIndexError, match="regular file"):
        read_index(fifo)


def _gzip_with_name(recs: list[bytes]) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="n.tfrecord", mode="wb", fileobj=buf, mtime=0) as g:
        g.write(tfr.encode_records(recs))
    return buf.getvalue()


ONE = tfr.encode_record(b"a")
EDGES = {
    "empty GZIP": gzip.compress(b"", mtime=0),
    "empty ZLIB": zlib.compress(b""),
    "zero padding": gzip.compress(ONE, mtime=0) + bytes(100),
    "bytes after ZLIB": zlib.compress(ONE) + b"junk",
    "bytes after GZIP": gzip.compress(ONE, mtime=0) + b"junk",
    "one byte of a member": gzip.compress(ONE, mtime=0) + b"\x1f",
    "member header cut": gzip.compress(ONE, mtime=0) + gzip.compress(ONE, mtime=0)[:6],
    "members with names": _gzip_with_name([b"x", b"yy"]) * 2,
}


@pytest.mark.parametrize("name", sorted(EDGES))
@pytest.mark.parametrize("with_index", [False, True])
def test_edges_read_as_the_iterator_reads_them(tmp_path: Path, name: str, with_index: bool) -> None:
    path = tmp_path / "edge"
    path.write_bytes(EDGES[name])
    try:
        expected: object = list(tfr.tf_record_iterator(str(path)))
    except tfr.TFRecordError as err:
        expected = type(err)
    try:
        if with_index:
            create_index(path)
        with TFRecordFile(path) as f:
            got: object = list(f)
    except tfr.TFRecordError as err:
        got = type(err)
    assert got == expected


def test_many_small_members_are_indexed_by_one_inflater(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One inflater reset per member (not one made per member, with its buffers), and the
    members' outputs framed together: 10^5 one-record members index in 0.7 s (was 13 s)."""
    made: list[int] = []
    framed: list[int] = []
    real_init = _zran.BlockInflater.__init__
    real_take = _gzindex._Walker._take

    def init(self: _zran.BlockInflater, *args: object, **kwargs: object) -> None:
        made.append(1)
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]

    def take(self: _gzindex._Walker, piece: bytes) -> None:
        framed.append(len(piece))
        real_take(self, piece)

    monkeypatch.setattr(_zran.BlockInflater, "__init__", init)
    monkeypatch.setattr(_gzindex._Walker, "_take", take)
    recs = [b"r%04d" % i for i in range(2000)]
    path = members(tmp_path / "m.gz", recs, per=1)
    index = create_index(path)
    assert len(load(index).lengths) == 2000
    if _zran.available():
        assert len(made) == 1
    assert len(framed) == 1  # 2000 outputs of 21 bytes: framed at once
    with TFRecordFile(path) as f:
        assert f[1999] == recs[1999] and f[:3] == recs[:3]


def test_get_many_reads_records_between_two_seek_points_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfrecord_lite._files import _gzread

    recs = records(1500, seed=5)
    path = write(tmp_path / "many.gz", recs, "GZIP")
    create_index(path, spacing=256 * 1024)
    reads: list[tuple[int, int]] = []
    real = _gzread.GzRanges.read

    def counting(gz: _gzread.GzRanges, start: int, n: int) -> bytes:
        reads.append((start, n))
        return real(gz, start, n)

    # Without the cache of inflated spans (with it, each record is a slice of its span).
    monkeypatch.setenv("TFRECORD_LITE_GZIP_SPAN_CACHE", "0")
    with TFRecordFile(path) as f:
        points = len(f._gz.index.points)  # type: ignore[union-attr]
        monkeypatch.setattr(_gzread.GzRanges, "read", counting)
        picks = list(range(1, 1500, 3))
        assert f.get_many(picks[::-1]) == [recs[i] for i in picks[::-1]]
        # one read between two seek points (and per 16 MiB), not one per record
        assert len(reads) <= points + 1 < len(picks) // 10
        reads.clear()
        picks = [1400, 5, 700]  # far apart: one read each
        assert f[picks] == [recs[i] for i in picks] and len(reads) == 3
