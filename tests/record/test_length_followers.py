"""Following length fields: the Python follower, the compiled one, and the scan over both.

* ``_boundaries`` (the scan's first phase) gives what the loop it replaced gave
  (:func:`_old_boundaries`, kept here as the reference: one ``struct`` read a record
  after a copy of every length field of the block), for any bytes;
* the compiled follower (:mod:`tfrecord_lite._examples._engines._jit_framing`, with
  numba) gives exactly what :func:`tfrecord_lite._record.follow_lengths` gives, and
  the scan, the decoder and ``iter_records`` give the same records, errors (kind,
  offset, record index) and good records before an error with either follower in
  use, over valid, truncated, corrupted-length, corrupted-CRC and mixed-length
  blocks;
* the compiled follower is lent only once the compiled kernels are loaded, and
  reading never imports numba by itself.
"""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, Optional

import numpy as np
import pytest

import tfrecord_lite as tfr
from tfrecord_lite._record import (
    RecordDecoder,
    _lengths,
    _scan,
    follow_lengths,
    length_follower,
    use_length_follower,
)
from tfrecord_lite._record._framing import encode_records

OVERHEAD, HEADER = 16, 12


def _old_boundaries(
    buf: bytes, end: int, max_records: int, limit: Optional[int]
) -> tuple[list[int], list[int], int, int, bool]:
    """The scan's first phase as it was: the reference for the new one."""
    unpack = struct.Struct("<Q").unpack_from
    head_s: list[int] = []
    head_l: list[int] = []
    pos = 0
    if end >= HEADER and max_records != 0:
        (first,) = unpack(buf, 0)
        step = first + OVERHEAD
        count = min(end // step, max_records if max_records > 0 else end)
        if first < end and count > 1:
            arr = np.frombuffer(buf, dtype=np.uint8, count=count * step).reshape(count, step)
            same = arr[:, :8].copy().view("<u8")[:, 0] == first
            good = count if same.all() else int(np.argmin(same))
            head_s, head_l, pos = list(range(0, good * step, step)), [first] * good, good * step
    need, claim = HEADER, False
    starts: list[int] = []
    lengths: list[int] = []
    left = max_records - len(head_s) if max_records >= 0 else -1
    while pos <= end - HEADER and left:
        (length,) = unpack(buf, pos)
        nxt = pos + length + OVERHEAD
        if nxt > end:
            need = length + OVERHEAD
            claim = limit is not None and pos + need > limit
            break
        starts.append(pos)
        lengths.append(length)
        pos = nxt
        left -= 1
    return head_s + starts, head_l + lengths, pos, need, claim


def _blocks(seed: int, count: int) -> Iterator[bytes]:
    """Valid, cut, length-damaged, CRC-damaged, mixed- and equal-length blocks."""
    rng = random.Random(seed)
    for _ in range(count):
        kind = rng.choice(["equal", "mixed", "equal-then-mixed", "zero"])
        n = rng.randrange(0, 40)
        if kind == "equal":
            sizes = [rng.choice([0, 1, 7, 100])] * n
        elif kind == "mixed":
            sizes = [rng.randrange(300) for _ in range(n)]
        elif kind == "equal-then-mixed":
            sizes = [20] * rng.randrange(n + 1)
            sizes += [rng.randrange(60) for _ in range(n - len(sizes))]
        else:
            sizes = [0] * n
        buf = bytearray(encode_records([rng.randbytes(k) for k in sizes]))
        damage = rng.choice(["none", "none", "length", "huge", "crc", "data", "bytes"])
        starts = [sum(k + OVERHEAD for k in sizes[:i]) for i in range(n)]
        if damage == "length" and n:
            at = rng.choice(starts)
            buf[at + rng.randrange(8)] ^= 1 << rng.randrange(8)
        elif damage == "huge" and n:
            at = rng.choice(starts)
            buf[at : at + 8] = rng.choice([2**64 - 1, 2**63, 2**32, len(buf)]).to_bytes(8, "little")
        elif damage == "crc" and n:
            buf[rng.choice(starts) + 8 + rng.randrange(4)] ^= 0x10
        elif damage in ("data", "bytes") and buf:
            for _ in range(rng.randrange(1, 4)):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
        yield bytes(buf[: rng.choice([len(buf), len(buf), rng.randrange(len(buf) + 1)])])


def test_the_scan_finds_what_the_old_loop_found() -> None:
    rng = random.Random(11)
    for data in _blocks(1, 1500):
        for max_records in (-1, 0, 1, 3, rng.randrange(50), 10**9):
            limit = rng.choice([None, len(data), len(data) + rng.randrange(100)])
            s, ln, *rest = _scan._boundaries(data, len(data), max_records, limit)
            old = _old_boundaries(data, len(data), max_records, limit)
            assert (s.tolist(), ln.tolist(), *rest) == old
            assert s.dtype == ln.dtype == np.int64


def test_equal_lengths_are_not_followed_one_by_one(monkeypatch: Any) -> None:
    """A block of one length is confirmed with NumPy: the follower is asked only
    about what comes after it (here: nothing), from its end."""
    asked: list[tuple[int, int]] = []

    def watching(buf: Any, pos: int, cap: int) -> Any:
        asked.append((pos, cap))
        return follow_lengths(buf, pos, cap)

    records = [bytes([i % 256]) * 50 for i in range(1000)]
    data = encode_records(records)
    monkeypatch.setattr(_lengths, "_follower", watching)
    assert list(_scan.scan(data).records) == records
    assert asked == [(len(data), -1)]


def test_distinct_lengths_are_what_np_unique_gives() -> None:
    rng = np.random.default_rng(2)
    for top in (1, 5, 600, 70_000, 2**40):
        for n in (1, 2, 50, 3000):
            lengths = rng.integers(0, top, n, dtype=np.int64)
            uniq, inverse = _scan._distinct(lengths)
            want_uniq, want_inverse = np.unique(lengths, return_inverse=True)
            assert uniq.tolist() == want_uniq.tolist() and uniq.dtype == np.int64
            assert inverse.tolist() == want_inverse.reshape(-1).tolist()


# --------------------------------------------------------------------------- compiled follower


@pytest.fixture(scope="module")
def compiled() -> Any:
    pytest.importorskip("numba", reason="the compiled follower needs numba (the jit extra)")
    from tfrecord_lite._examples._engines import _jit_framing

    return _jit_framing.follow_lengths


@pytest.fixture
def use(compiled: Any) -> Iterator[Any]:
    """Sets the follower in use for one test, and puts the one before back."""
    before = length_follower()
    yield use_length_follower
    use_length_follower(None if before is follow_lengths else before)


def test_the_compiled_follower_is_the_python_one(compiled: Any) -> None:
    rng = random.Random(5)
    for data in _blocks(2, 1500):
        for buf in (data, bytearray(data), memoryview(data)):
            for pos in {0, rng.randrange(len(data) + 1)}:
                for cap in (-1, 0, 1, 2, rng.randrange(40), 10**12):
                    got, want = compiled(buf, pos, cap), follow_lengths(buf, pos, cap)
                    assert got[0].tolist() == want[0].tolist()
                    assert got[1:] == want[1:] and type(got[1]) is int
                    assert got[0].dtype == np.int64


def test_the_compiled_follower_reads_lengths_up_to_2_to_the_64(compiled: Any) -> None:
    for length in (2**64 - 1, 2**63, 2**63 - 1, 2**62, 2**32, 23):
        buf = length.to_bytes(8, "little") + bytes(30)
        for follow in (compiled, follow_lengths):
            starts, stop, claimed = follow(buf, 0, -1)
            assert (starts.tolist(), stop, claimed) == ([], 0, length)
            starts, stop, claimed = follow(buf[:11], 0, -1)  # (no whole header)
            assert (starts.tolist(), stop, claimed) == ([], 0, None)


def test_the_compiled_follower_releases_the_gil(compiled: Any) -> None:
    from tfrecord_lite._examples._engines import _jit_framing

    assert _jit_framing._follow.targetoptions["nogil"] is True


def _outcome(data: bytes, **kw: Any) -> tuple[Any, ...]:
    got = _scan.scan(data, **kw)
    return list(got.records), got.consumed, got.problem, got.need


def _read(data: bytes, chunk: int) -> tuple[list[bytes], Optional[tuple[Any, ...]]]:
    """Records the decoder gives, fed in pieces of ``chunk`` bytes, and its error."""
    out: list[bytes] = []
    decoder = RecordDecoder()
    try:
        for at in range(0, len(data), chunk):
            decoder.feed(data[at : at + chunk])
            out += decoder.records()
        out += decoder.close()
    except tfr.TFRecordError as err:
        where = (getattr(err, "offset", None), getattr(err, "index", None))
        return out, (type(err).__name__, getattr(err, "part", None), *where, str(err))
    return out, None


def test_scans_and_errors_are_the_same_with_either_follower(use: Any) -> None:
    rng = random.Random(9)
    for data in _blocks(3, 600):
        kw: dict[str, Any] = {
            "verify": rng.random() < 0.8,
            "max_records": rng.choice([-1, -1, 2, 10**9]),
            "limit": rng.choice([None, len(data), len(data) + 50]),
            "spans": rng.random() < 0.5,
        }
        chunk = rng.choice([len(data) or 1, 7, 100, 1000])
        use(None)
        python = _outcome(data, **kw), _read(data, chunk)
        use(_compiled_follower())
        assert length_follower() is not follow_lengths
        assert (_outcome(data, **kw), _read(data, chunk)) == python


def _compiled_follower() -> Any:
    from tfrecord_lite._examples._engines import _jit_framing

    return _jit_framing.follow_lengths


def test_iter_records_reports_the_same_error_with_either_follower(use: Any) -> None:
    rng = random.Random(4)
    records = [rng.randbytes(rng.randrange(200)) for _ in range(300)]
    stream = encode_records(records)
    starts = [sum(len(r) + OVERHEAD for r in records[:i]) for i in range(len(records))]
    for index, at in ((0, 3), (150, 2), (151, 9), (299, 14), (200, 40)):
        damaged = bytearray(stream)
        damaged[starts[index] + at % (len(records[index]) + OVERHEAD)] ^= 0x04
        seen = []
        for follower in (None, _compiled_follower()):
            use(follower)
            out: list[bytes] = []
            with pytest.raises(tfr.CorruptRecordError) as info:
                out.extend(tfr.iter_records(bytes(damaged)))
            err = info.value
            seen.append((out, err.part, err.offset, err.index, str(err)))
        assert seen[0] == seen[1]
        assert seen[0][0] == records[:index] and seen[0][3] == index


# --------------------------------------------------------------------------- when it is lent


def test_it_is_lent_only_once_the_kernels_are_loaded(monkeypatch: Any) -> None:
    from tfrecord_lite._examples._engines import _framing, _kernels

    started: list[str] = []

    class Thread:
        def __init__(self, name: str, **kw: Any) -> None:
            self.name = name

        def start(self) -> None:
            started.append(self.name)

    monkeypatch.setattr(_framing, "_started", False)
    monkeypatch.setattr(_framing.threading, "Thread", Thread)
    monkeypatch.setattr(_kernels, "loaded", lambda *names: False)
    _framing.install()
    assert started == []
    monkeypatch.setattr(_kernels, "loaded", lambda *names: True)
    _framing.install()
    assert started == ["tfrecord_lite-framing"]
    _framing.install()  # once per process
    assert started == ["tfrecord_lite-framing"]


def test_install_now_lends_the_compiled_follower(use: Any) -> None:
    from tfrecord_lite._examples._engines import _framing

    use(None)
    _framing._lent = False
    assert _framing.install_now()
    assert length_follower() is _compiled_follower() and _framing.installed()


def test_reading_records_never_imports_numba(tmp_path: Any) -> None:
    path = tmp_path / "a.tfrecord"
    with tfr.TFRecordWriter(str(path)) as writer:
        for i in range(2000):
            writer.write(bytes(i % 50))
    code = (
        "import sys, tfrecord_lite as tfr\n"
        "from tfrecord_lite._record import length_follower, follow_lengths\n"
        f"n = sum(1 for _ in tfr.tf_record_iterator({str(path)!r}))\n"
        "assert n == 2000, n\n"
        "assert 'numba' not in sys.modules\n"
        "assert length_follower() is follow_lengths\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr
