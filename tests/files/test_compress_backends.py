"""The deflate/inflate backends (``tfrecord_lite._files._compress``): ISA-L when installed, zlib exactly
when asked for, and the same files, records and errors whichever one is in use.

The fast backend's output is checked with the standard library's zlib (any
inflater must read it; TensorFlow itself reads it in tests/interop/); errors on
damaged streams are compared with the zlib backend's, which the rest of the
suite checks against TensorFlow's behaviour.
"""

from __future__ import annotations

import gzip
import importlib.util
import io
import os
import pathlib
import random
import subprocess
import sys
import zlib
from typing import Any

import pytest

import tfrecord_lite as tfr
from tfrecord_lite._files import _compress, _inflate

ENV = _compress.ENV_VAR
BACKENDS = _compress.available_deflate_backends()
FAST = [b for b in BACKENDS if b != "zlib"]
#: The `fast` extra is installed where `make test` runs; `make test-oldest` runs without it.
FAST_EXTRA = importlib.util.find_spec("crc32c") is not None
needs_isal = pytest.mark.skipif(
    "isal" not in BACKENDS, reason="isal (the fast extra) is not installed in this venv"
)
ROOT = pathlib.Path(__file__).resolve().parents[2]


def records_for(seed: int, n: int = 200, max_len: int = 3000) -> list[bytes]:
    """Compressible records (text-like, repeated words) of varied sizes, empty ones included."""
    rng = random.Random(seed)
    words = [bytes(rng.choice(b"abcdefgh") for _ in range(rng.randint(2, 9))) for _ in range(40)]
    out = []
    for _ in range(n):
        k = rng.randint(0, max_len // 6)
        out.append(b" ".join(rng.choice(words) for _ in range(k))[:max_len])
    return out


def inflate_std(blob: bytes, compression: str) -> bytes:
    """The standard library's reading of a whole stream (concatenated gzip members too)."""
    if compression == "GZIP":
        return gzip.decompress(blob)
    return zlib.decompress(blob)


def write(path: pathlib.Path, records: list[bytes], compression: str, **options: Any) -> bytes:
    with tfr.TFRecordWriter(path, tfr.TFRecordOptions(compression, **options)) as w:
        for r in records:
            w.write(r)
    return path.read_bytes()


def outcome(path: pathlib.Path, compression: str = "auto") -> tuple[list[bytes], Any]:
    """(records read, error class and message) for a possibly damaged file."""
    got: list[bytes] = []
    try:
        for r in tfr.tf_record_iterator(path, compression):
            got.append(r)
    except tfr.TFRecordError as err:
        return got, (type(err).__name__, str(err), err.offset, err.index)
    return got, None


@pytest.fixture(params=["auto", *BACKENDS])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(ENV, request.param)
    return str(request.param)


# --------------------------------------------------------------------------- choosing


def test_isal_is_installed_here() -> None:
    # Where the `fast` extra is installed, the fast path must be the one tested.
    if not FAST_EXTRA:
        pytest.skip("the fast extra is not installed in this venv")
    assert "isal" in BACKENDS


@needs_isal
def test_auto_picks_isal_and_env_selects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert _compress.deflate_backend() == "isal"
    for name in BACKENDS:
        monkeypatch.setenv(ENV, name.upper())
        assert _compress.deflate_backend() == name
    monkeypatch.setenv(ENV, "auto")
    assert _compress.deflate_backend() == "isal"
    monkeypatch.setenv(ENV, "brotli")
    with pytest.raises(ValueError, match=r"brotli.*isal, zlib-ng, zlib"):
        _compress.deflate_backend()
    with pytest.raises(ValueError, match="brotli"):
        tfr.TFRecordWriter(os.devnull, "GZIP")


def test_missing_isal_falls_back_to_zlib_silently(tmp_path: pathlib.Path) -> None:
    # A Python without isal (the import fails for real: sys.modules entry None).
    script = f"""
import sys, warnings
for name in ("isal", "isal.isal_zlib", "zlib_ng", "zlib_ng.zlib_ng"):
    sys.modules[name] = None
warnings.simplefilter("error")
import zlib, tfrecord_lite as tfr
from tfrecord_lite._files import _compress, _inflate
assert _compress.deflate_backend() == "zlib", _compress.deflate_backend()
assert "isal" not in _compress.available_deflate_backends()
p = {str(tmp_path / "x.gz")!r}
with tfr.TFRecordWriter(p, "GZIP") as w:
    w.write(b"abc" * 100)
z = zlib.compressobj(6, zlib.DEFLATED, 31, 9, 0)
from pathlib import Path
assert Path(p).read_bytes() == z.compress(tfr.encode_records([b"abc" * 100])) + z.flush()
assert list(tfr.tf_record_iterator(p)) == [b"abc" * 100]
import os
os.environ["{ENV}"] = "isal"
try:
    _compress.deflate_backend()
except ImportError as err:
    assert "tfrecord-lite-np[fast]" in str(err), err
else:
    raise AssertionError("no ImportError")
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
    assert out.stderr == ""


@needs_isal
@pytest.mark.parametrize(
    ("level", "mem_level", "strategy", "flush", "expected"),
    [
        (-1, 9, 0, zlib.Z_NO_FLUSH, "isal"),
        (1, 9, 0, zlib.Z_NO_FLUSH, "isal"),
        (6, 9, 0, zlib.Z_SYNC_FLUSH, "isal"),
        (6, 9, 0, zlib.Z_FULL_FLUSH, "isal"),
        (0, 9, 0, zlib.Z_NO_FLUSH, "zlib"),  # store only: ISA-L has no such level
        (7, 9, 0, zlib.Z_NO_FLUSH, "zlib"),
        (9, 9, 0, zlib.Z_NO_FLUSH, "zlib"),
        (-1, 8, 0, zlib.Z_NO_FLUSH, "zlib"),  # mem_level means something else to ISA-L
        (-1, 9, zlib.Z_FILTERED, zlib.Z_NO_FLUSH, "zlib"),
        (-1, 9, 0, zlib.Z_PARTIAL_FLUSH, "zlib"),  # ISA-L has no partial flush
    ],
)
def test_options_isal_cannot_honour_use_zlib(
    monkeypatch: pytest.MonkeyPatch,
    level: int,
    mem_level: int,
    strategy: int,
    flush: int,
    expected: str,
) -> None:
    monkeypatch.setenv(ENV, "isal")
    _, used = _compress.compressobj(level, 31, mem_level, strategy, flush)
    assert used == expected


@needs_isal
def test_auto_keeps_isal_only_when_as_small(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    rng = random.Random(12)
    text = tfr.encode_records(records_for(12, n=400))  # repetitive: ISA-L is >10% bigger here
    noise = rng.randbytes(3 * _compress.TRIAL_BYTES)  # incompressible: ISA-L is as small
    for data, kept in ((text, "zlib-ng" if "zlib-ng" in BACKENDS else "zlib"), (noise, "isal")):
        for size in (len(data), _compress.TRIAL_BYTES // 3):  # a sample, or all of a small file
            z, name = _compress.compressobj(-1, 31, 9, 0)
            assert name == "auto"
            blob = z.compress(data[:size]) + z.flush()
            assert z.backend == kept
            assert gzip.decompress(blob) == data[:size]
            ref = zlib.compressobj(6, zlib.DEFLATED, 31, 9, 0)
            assert len(blob) <= _compress.SIZE_TOLERANCE * len(
                ref.compress(data[:size]) + ref.flush()
            )
    # A whole file written with the defaults stays within 3% of zlib level 6.
    records = records_for(13, n=3000)
    path = tmp_path / "f.gz"
    with tfr.TFRecordWriter(path, "GZIP") as w:
        w.write_all(records)
    ref = zlib.compressobj(6, zlib.DEFLATED, 31, 9, 0)
    expected = ref.compress(tfr.encode_records(records)) + ref.flush()
    assert path.stat().st_size <= _compress.SIZE_TOLERANCE * len(expected)
    assert list(tfr.tf_record_iterator(path)) == records


def test_level_mapping() -> None:
    assert [_compress.isal_level(v) for v in range(-1, 10)] == [1, None] + [1] * 6 + [None] * 3


def test_zlib_backend_is_tensorflows_bytes(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "zlib")
    records = records_for(1)
    for compression, wbits in (("GZIP", 31), ("ZLIB", 15)):
        for level in (-1, 1, 6, 9):
            blob = write(tmp_path / "z", records, compression, compression_level=level)
            z = zlib.compressobj(level, zlib.DEFLATED, wbits, 9, 0)
            assert blob == z.compress(tfr.encode_records(records)) + z.flush()


# --------------------------------------------------------------------------- writing


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_every_level_reads_back_everywhere(
    tmp_path: pathlib.Path, backend: str, compression: str
) -> None:
    records = records_for(2)
    framed = tfr.encode_records(records)
    wbits = 31 if compression == "GZIP" else 15
    for level in range(-1, 10):
        blob = write(tmp_path / "f", records, compression, compression_level=level)
        assert inflate_std(blob, compression) == framed, level
        assert list(tfr.tf_record_iterator(tmp_path / "f")) == records
        # The header is zlib's for the same options (TensorFlow's first bytes), whatever encoded it.
        z = zlib.compressobj(level, zlib.DEFLATED, wbits, 9, 0)
        head = (z.compress(b"") + z.flush(zlib.Z_FULL_FLUSH))[: 10 if compression == "GZIP" else 2]
        assert blob[: len(head)] == head, level


@pytest.mark.parametrize(
    "options",
    [
        {"window_bits": 9},
        {"window_bits": 12},
        {"window_bits": 25},
        {"mem_level": 1},
        {"compression_strategy": 2},
        {"flush_mode": zlib.Z_SYNC_FLUSH},
        {"flush_mode": zlib.Z_FULL_FLUSH},
        {"flush_mode": zlib.Z_PARTIAL_FLUSH},
        {"output_buffer_size": 1},
    ],
)
@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_options_with_every_backend(
    tmp_path: pathlib.Path, backend: str, compression: str, options: dict[str, int]
) -> None:
    records = records_for(3, n=60)
    blob = write(tmp_path / "f", records, compression, **options)
    bits = options.get("window_bits", 15)
    bits = bits - 16 if bits > 15 else bits
    # An inflater with exactly the declared window reads it: no match reaches further back.
    d = zlib.decompressobj(bits + 16 if compression == "GZIP" else bits)
    assert d.decompress(blob) + d.flush() == tfr.encode_records(records)
    assert d.eof
    assert list(tfr.tf_record_iterator(tmp_path / "f")) == records


def test_flush_makes_records_readable(tmp_path: pathlib.Path, backend: str) -> None:
    path = tmp_path / "f.gz"
    records = records_for(4, n=50)
    w = tfr.TFRecordWriter(path, "GZIP")
    for r in records[:20]:
        w.write(r)
    w.flush()
    d = zlib.decompressobj(31)
    assert d.decompress(path.read_bytes()) == tfr.encode_records(records[:20])
    for r in records[20:]:
        w.write(r)
    w.close()
    assert inflate_std(path.read_bytes(), "GZIP") == tfr.encode_records(records)


def test_append_adds_a_member(tmp_path: pathlib.Path, backend: str) -> None:
    path = tmp_path / "f.gz"
    a, b = records_for(5, n=30), records_for(6, n=30)
    write(path, a, "GZIP")
    with tfr.TFRecordWriter(path, "GZIP", mode="a") as w:
        w.write_all(b)
    assert inflate_std(path.read_bytes(), "GZIP") == tfr.encode_records(a + b)
    assert list(tfr.tf_record_iterator(path)) == a + b


def test_write_all_and_write_examples_compressed(tmp_path: pathlib.Path, backend: str) -> None:
    records = records_for(7, n=5000, max_len=300)
    path = tmp_path / "f.gz"
    with tfr.TFRecordWriter(path, "GZIP") as w:
        assert w.write_all(records) == len(records)
    assert inflate_std(path.read_bytes(), "GZIP") == tfr.encode_records(records)


# --------------------------------------------------------------------------- reading


def test_reads_are_the_same_with_every_backend(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = records_for(8, n=3000)
    monkeypatch.setenv(ENV, "zlib")
    for compression in ("GZIP", "ZLIB"):
        path = tmp_path / f"f.{compression}"
        write(path, records, compression)
        for name in BACKENDS:
            monkeypatch.setenv(ENV, name)
            assert list(tfr.tf_record_iterator(path)) == records, name
            with path.open("rb") as f:  # a file object, read from where it stands
                assert list(tfr.TFRecordReader(f, compression)) == records, name


def _damaged(
    tmp_path: pathlib.Path, records: list[bytes], where: float, member2: bool
) -> pathlib.Path:
    path = tmp_path / "bad.gz"
    write(path, records, "GZIP")
    if member2:
        with tfr.TFRecordWriter(path, "GZIP", mode="a") as w:
            w.write_all(records)
    blob = bytearray(path.read_bytes())
    i = int(len(blob) * where)
    blob[i] ^= 0x5A
    blob[i + 1] ^= 0xA5
    path.write_bytes(bytes(blob))
    return path


@pytest.mark.parametrize("where", [0.004, 0.3, 0.61, 0.9, 0.9995])
@pytest.mark.parametrize("member2", [False, True])
def test_damage_is_found_alike_by_every_backend(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, where: float, member2: bool
) -> None:
    # ISA-L cannot be copied: on damage the member is decoded again by zlib, so the
    # intact records before it, the error and its position are zlib's exactly.
    records = records_for(9, n=4000, max_len=1500)
    monkeypatch.setenv(ENV, "zlib")
    path = _damaged(tmp_path, records, where, member2)
    expected = outcome(path)
    assert expected[1] is not None  # the damage is noticed
    expected_skip = skipping(path)
    assert expected_skip[1][-1][0] == "compression"
    for name in FAST:
        monkeypatch.setenv(ENV, name)
        assert outcome(path) == expected, name
        assert skipping(path) == expected_skip, name


def skipping(path: pathlib.Path) -> tuple[list[bytes], list[tuple[Any, ...]]]:
    reports: list[Any] = []
    got = list(tfr.tf_record_iterator(path, on_error="skip", on_skip=reports.append))
    return got, [(r.reason, r.offset, r.length, r.index, str(r.error)) for r in reports]


@pytest.mark.parametrize("keep", [0.0005, 0.3, 0.75, 0.999])
def test_cut_short_is_found_alike_by_every_backend(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, keep: float
) -> None:
    records = records_for(10, n=4000, max_len=1500)
    monkeypatch.setenv(ENV, "zlib")
    path = tmp_path / "cut.gz"
    blob = write(path, records, "GZIP")
    path.write_bytes(blob[: int(len(blob) * keep)])
    expected = outcome(path, "GZIP")
    assert expected[1] is not None and expected[1][0] == "TruncatedRecordError"
    for name in FAST:
        monkeypatch.setenv(ENV, name)
        assert outcome(path, "GZIP") == expected, name


def test_inflate_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    # A deflate bomb: 1 GiB of zeros in ~1 MB; no call returns more than INFLATE_CHUNK.
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    piece = bytes(2**20)
    blob = b"".join(z.compress(piece) for _ in range(256)) + z.flush()
    for name in BACKENDS:
        monkeypatch.setenv(ENV, name)
        total = biggest = 0
        restart = lambda offset: iter([blob[offset:]])  # noqa: E731
        for out in _inflate.inflate(iter([blob]), "GZIP", None, restart):
            biggest = max(biggest, len(out))
            total += len(out)
        assert total == 256 * 2**20
        assert biggest <= _inflate.INFLATE_CHUNK


@needs_isal
def test_inflate_without_restart_uses_a_copyable_inflater(monkeypatch: pytest.MonkeyPatch) -> None:
    records = records_for(11, n=500)
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    blob = bytearray(z.compress(tfr.encode_records(records)) + z.flush())
    blob[len(blob) // 2] ^= 0xFF
    outs = []
    for name in ("zlib", "isal"):
        monkeypatch.setenv(ENV, name)
        out = io.BytesIO()
        with pytest.raises(tfr.CompressionError, match="noticed at compressed byte") as info:
            for chunk in _inflate.inflate(iter([bytes(blob)]), "GZIP", None):
                out.write(chunk)
        outs.append((out.getvalue(), str(info.value)))
    assert outs[0][0]  # the output before the damage was handed out
    assert outs[1] == outs[0]
