"""CRC-32C backends and TensorFlow's masked CRC (reference §A1; peers.md #7)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_lite as tfr
from tfrecord_lite._record import _crc
from tfrecord_lite._record._crc import BACKEND_ORDER, MASK_DELTA, get_crc_function, mask, unmask


def _reference_crc32c(data: bytes) -> int:
    """Bit-by-bit CRC-32C (reflected polynomial 0x82F63B78), independent of every backend."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


BACKENDS = tfr.available_crc_backends()


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != _crc.ENV_VAR}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
    )


# --------------------------------------------------------------------------- known answers


def test_known_answer_and_mask_constants() -> None:
    assert tfr.crc32c(b"123456789") == 0xE3069283
    assert _reference_crc32c(b"123456789") == 0xE3069283
    assert tfr.crc32c(b"") == 0
    assert mask(0) == 0xA282EAD8 == MASK_DELTA
    assert unmask(0xA282EAD8) == 0


def test_mask_formula() -> None:
    crc = 0xE3069283
    expected = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) % 2**32
    assert mask(crc) == expected
    assert tfr.masked_crc32c(b"123456789") == expected


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_unmask_inverts_mask(crc: int) -> None:
    masked = mask(crc)
    assert 0 <= masked < 2**32
    assert unmask(masked) == crc
    assert type(masked) is int and type(unmask(masked)) is int


@given(st.lists(st.integers(min_value=0, max_value=2**32 - 1), max_size=50))
def test_array_forms_match_the_scalar_ones(crcs: list[int]) -> None:
    arr = np.array(crcs, dtype=np.uint64)
    masked = _crc.mask_array(arr)
    assert masked.tolist() == [mask(c) for c in crcs]
    assert _crc.unmask_array(masked).tolist() == crcs
    assert _crc.unmask_array(masked.astype(np.uint32)).tolist() == crcs


def test_mask_reduces_wider_ints() -> None:
    assert mask(0x1_0000_0000) == mask(0)
    assert mask(-1) == mask(0xFFFFFFFF)


def test_masked_crc_of_golden_headers() -> None:
    # §A2: the 4 bytes after the length are Mask(crc32c(length bytes)), little-endian.
    assert tfr.masked_crc32c(bytes(8)).to_bytes(4, "little").hex() == "29039807"
    assert tfr.masked_crc32c(b"").to_bytes(4, "little").hex() == "d8ea82a2"
    assert tfr.masked_crc32c(b"foo").to_bytes(4, "little").hex() == "618abefe"


# --------------------------------------------------------------------------- backends


def test_every_backend_is_listed_and_the_active_one_is_the_first() -> None:
    assert set(BACKENDS) <= set(BACKEND_ORDER)
    assert "crcmod-python" in BACKENDS  # crcmod is a required dependency
    assert tfr.crc_backend() in BACKENDS
    if not os.environ.get(_crc.ENV_VAR):
        assert tfr.crc_backend() == BACKENDS[0]


@pytest.mark.parametrize("name", BACKENDS)
def test_backend_known_answer(name: str) -> None:
    fn = get_crc_function(name)
    for data in (b"123456789", bytearray(b"123456789"), memoryview(b"123456789")):
        value = fn(data)
        assert value == 0xE3069283
        assert type(value) is int  # never a NumPy scalar (peers.md #7)
    assert fn(b"") == 0


def test_backends_agree_on_random_data() -> None:
    rng = random.Random(1234)
    fns = {name: get_crc_function(name) for name in BACKENDS}
    lengths = [*range(0, 70), 255, 256, 1000, 1023, 4096, 4097, 8191]
    for length in lengths:
        data = rng.randbytes(length)
        expected = _reference_crc32c(data)
        padded = b"xx" + data + b"yy"
        inputs = (data, bytearray(data), memoryview(data), memoryview(padded)[2:-2])
        for name, fn in fns.items():
            for item in inputs:
                assert fn(item) == expected, (name, length, type(item))


def test_signed_and_char_memoryviews() -> None:
    data = bytes(range(256))
    expected = _reference_crc32c(data)
    for name in BACKENDS:
        fn = get_crc_function(name)
        assert fn(memoryview(data).cast("b")) == expected, name
        assert fn(memoryview(data).cast("c")) == expected, name


def test_unknown_backend_name() -> None:
    with pytest.raises(ValueError, match="unknown CRC backend"):
        get_crc_function("md5")


def test_no_numpy_warning_or_float_arithmetic() -> None:
    # Arithmetic is on Python ints: no overflow warnings anywhere (peers.md #7).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for crc in (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF):
            assert unmask(mask(crc)) == crc
        assert tfr.masked_crc32c(b"\xff" * 100) == mask(_reference_crc32c(b"\xff" * 100))


# --------------------------------------------------------------------------- selection (subprocess)

_REPORT = """
import warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import tfrecord_lite as tfr
    results = [tfr.crc32c(b"123456789") for _ in range(3)]
    results.append(tfr.crc32c(bytes(range(256)) * 20))
    import tfrecord_lite._record._crc  # re-import: no second warning
caught = [w for w in caught if "CRC32C" in str(w.message)]  # ignore other libraries' warnings
print(tfr.crc_backend())
print(",".join(tfr.available_crc_backends()))
print(",".join(hex(r) for r in results))
print(len(caught))
for w in caught:
    print(w.category.__name__, "|", str(w.message))
"""

_REF_LONG = hex(_reference_crc32c(bytes(range(256)) * 20))


@pytest.mark.parametrize("name", BACKENDS)
def test_env_var_forces_backend(name: str) -> None:
    proc = _run(_REPORT, TFRECORD_LITE_CRC_BACKEND=name)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == name
    assert lines[2] == ",".join(["0xe3069283"] * 3 + [_REF_LONG])
    assert lines[3] == "0"  # forcing the slow one on purpose does not warn


def test_env_var_unknown_backend_fails_loudly() -> None:
    proc = _run("import tfrecord_lite", TFRECORD_LITE_CRC_BACKEND="nope")
    assert proc.returncode != 0
    assert "unknown CRC backend 'nope'" in proc.stderr


def test_env_var_forcing_a_missing_backend_fails() -> None:
    code = """
        import sys
        sys.modules["crc32c"] = None
        import tfrecord_lite
    """
    proc = _run(code, TFRECORD_LITE_CRC_BACKEND="crc32c")
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr or "ModuleNotFoundError" in proc.stderr


def test_default_choice_without_env_var() -> None:
    proc = _run(_REPORT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == BACKENDS[0]
    assert lines[3] == "0"


def test_pure_python_fallback_warns_once_and_is_correct() -> None:
    code = (
        """
import sys
sys.modules["crcmod._crcfunext"] = None   # crcmod installed without its C extension
sys.modules["crc32c"] = None              # and no fast package
sys.modules["google_crc32c"] = None
"""
        + _REPORT
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "crcmod-python"
    assert lines[1] == "crcmod-python"
    assert lines[2] == ",".join(["0xe3069283"] * 3 + [_REF_LONG])
    assert lines[3] == "1", proc.stdout
    category, message = lines[4].split(" | ", 1)
    assert category == "RuntimeWarning"
    assert "300x" in message
    assert "pip install tfrecord-lite-np[fast]" in message
    assert "--no-binary crcmod" in message


def test_software_only_crc32c_package_is_skipped() -> None:
    # A crc32c package without hardware support is slower than the other choices.
    code = (
        """
import sys, types
fake = types.ModuleType("crc32c")
fake.hardware_based = False
fake.crc32c = lambda data: 0
sys.modules["crc32c"] = fake
"""
        + _REPORT
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] != "crc32c"
    assert "crc32c" not in lines[1].split(",")
    assert lines[2] == ",".join(["0xe3069283"] * 3 + [_REF_LONG])
