"""decode_raw (reference §F23) and the Pillow image helpers."""

from __future__ import annotations

import importlib.util
import io
import struct
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tfrecord_lite import ParseError
from tfrecord_lite._decoding import decode_image, decode_raw, encode_image

# --------------------------------------------------------------------------- §F23 goldens


def test_fixed_length_golden_little_endian() -> None:
    out = decode_raw([b"\x01\x23"], np.int32, fixed_length=8)
    assert out.dtype == np.int32
    assert out.tolist() == [[0x2301, 0]]


def test_fixed_length_golden_big_endian() -> None:
    out = decode_raw([b"\x01\x23"], np.int32, little_endian=False, fixed_length=8)
    assert out.tolist() == [[0x01230000, 0]]
    assert out.dtype == np.dtype(np.int32)
    assert out.dtype.isnative


def test_different_sizes_message() -> None:
    with pytest.raises(
        ParseError,
        match=r"^DecodeRaw requires input strings to all be the same size, but element 1 "
        r"has size 6 != 13$",
    ):
        decode_raw([b"abcdef", b"0123456789abc"], np.uint8)
    # TensorFlow reports the *first* element's size first
    with pytest.raises(ParseError, match=r"element 2 has size 5 != 6"):
        decode_raw([b"short", b"elsee", b"longer"], np.uint8)
    with pytest.raises(ParseError, match=r"element 1 has size 0 != 4"):
        decode_raw([b"", b"abcd"], np.uint8)


def test_not_a_multiple_message() -> None:
    with pytest.raises(
        ParseError,
        match=r"^Input to DecodeRaw has length 3 that is not a multiple of 4, the size of float$",
    ):
        decode_raw([b"abc"], np.float32)
    with pytest.raises(ParseError, match=r"the size of float$"):
        decode_raw(b"abc", np.float32)
    with pytest.raises(
        ParseError, match="length 5 that is not a multiple of 8, the size of double"
    ):
        decode_raw(b"abcde", np.float64)
    with pytest.raises(ParseError, match="multiple of 2, the size of half"):
        decode_raw(b"abc", np.float16)
    with pytest.raises(ParseError, match="multiple of 8, the size of int64"):
        decode_raw(b"abc", np.int64)


def test_parse_errors_are_value_errors() -> None:
    with pytest.raises(ValueError):
        decode_raw(b"abc", np.int32)


@pytest.mark.parametrize(
    ("fixed_length", "error", "match"),
    [
        (0, ValueError, r"^fixed_length \(0\) must be greater than zero\.$"),
        (-4, ValueError, "must be greater than zero"),
        (6, ValueError, r"^fixed_length \(6\) must be a multiple of the size of out_type \(4\)$"),
        (4.0, TypeError, "must be an int"),
        (True, TypeError, "must be an int"),
    ],
)
def test_fixed_length_validation(fixed_length: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        decode_raw([b"abcd"], np.float32, fixed_length=fixed_length)


def test_fixed_length_pads_and_truncates() -> None:
    out = decode_raw([b"\x01", b"\x01\x02\x03\x04\x05\x06", b""], np.uint8, fixed_length=4)
    assert out.tolist() == [[1, 0, 0, 0], [1, 2, 3, 4], [0, 0, 0, 0]]
    assert decode_raw(b"\x01\x00\x00\x00\x02", np.int32, fixed_length=4).tolist() == [1]
    assert decode_raw(b"", np.int16, fixed_length=4).tolist() == [0, 0]
    assert decode_raw([], np.int16, fixed_length=4).shape == (0, 2)


# --------------------------------------------------------------------------- shapes


def test_shapes() -> None:
    assert decode_raw(b"\x01\x02\x03\x04", np.uint8).shape == (4,)
    assert decode_raw([b"ab", b"cd", b"ef"], np.uint8).shape == (3, 2)
    assert decode_raw([b"abcd"], np.int16).shape == (1, 2)
    nested = decode_raw([[b"ab", b"cd"], [b"ef", b"gh"], [b"ij", b"kl"]], np.uint8)
    assert nested.shape == (3, 2, 2)
    assert nested[2, 1].tolist() == list(b"kl")
    assert decode_raw(np.array([[b"abcd"]], dtype=object), np.int32).shape == (1, 1, 1)
    assert decode_raw(np.array(b"abcd", dtype=object), np.int32).shape == (1,)


def test_empty_inputs() -> None:
    assert decode_raw(b"", np.float32).shape == (0,)
    assert decode_raw([b"", b""], np.float32).shape == (2, 0)
    assert decode_raw([], np.float32).shape == (0, 0)
    assert decode_raw(np.array([], dtype=object), np.int64).shape == (0, 0)
    assert decode_raw(np.array([], dtype="S3"), np.int64).shape == (0, 0)


def test_ragged_nested_list_rejected() -> None:
    with pytest.raises(ValueError, match="rectangular"):
        decode_raw([[b"ab"], [b"cd", b"ef"]], np.uint8)


def test_non_bytes_inputs_rejected() -> None:
    with pytest.raises(TypeError, match="elements must be bytes"):
        decode_raw([b"ab", 5], np.uint8)
    with pytest.raises(TypeError, match="input_bytes must hold bytes"):
        decode_raw(np.arange(4, dtype=np.uint8), np.uint8)
    with pytest.raises(TypeError, match="input_bytes must be bytes"):
        decode_raw(5, np.uint8)
    with pytest.raises(TypeError, match="input_bytes must be bytes"):
        decode_raw(None, np.uint8)


# --------------------------------------------------------------------------- values & byte order


@given(
    hnp.arrays(
        dtype=st.sampled_from(
            [
                *(np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64),
                *(np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128),
            ]
        ),
        shape=st.integers(0, 20),
    )
)
def test_roundtrip_tobytes(arr: np.ndarray) -> None:
    le = arr.astype(arr.dtype.newbyteorder("<"))
    be = arr.astype(arr.dtype.newbyteorder(">"))
    got_le = decode_raw(le.tobytes(), arr.dtype)
    got_be = decode_raw(be.tobytes(), arr.dtype, little_endian=False)
    for got in (got_le, got_be):
        assert got.dtype == arr.dtype.newbyteorder("=")
        np.testing.assert_array_equal(got, arr)
    batch = decode_raw([le.tobytes()] * 3, arr.dtype)
    assert batch.shape == (3, arr.size)
    np.testing.assert_array_equal(batch, np.stack([arr] * 3).reshape(3, arr.size))


def test_big_endian_values() -> None:
    data = struct.pack(">ihf", -2, 300, 1.5)
    assert decode_raw(data[:4], np.int32, little_endian=False).tolist() == [-2]
    assert decode_raw(data[4:6], np.int16, little_endian=False).tolist() == [300]
    assert decode_raw(data[6:], np.float32, little_endian=False).tolist() == [1.5]
    assert decode_raw(struct.pack("<q", -5), np.int64).tolist() == [-5]
    z = np.array([1 + 2j], dtype=">c8")
    assert decode_raw(z.tobytes(), np.complex64, little_endian=False).tolist() == [1 + 2j]


def test_dtype_byte_order_is_ignored() -> None:
    """``little_endian`` decides the data's byte order; the result is native."""
    data = struct.pack("<i", 7)
    assert decode_raw(data, ">i4").tolist() == [7]
    assert decode_raw(data, "<i4").dtype.isnative


def test_bool_any_nonzero_is_true() -> None:
    out = decode_raw(b"\x00\x01\x02\xff", np.bool_)
    assert out.dtype == np.bool_
    assert out.tolist() == [False, True, True, True]
    assert decode_raw([b"\x00\x05"], "bool").tolist() == [[False, True]]


# --------------------------------------------------------------------------- out_type spellings


class _FakeTfrDType:
    """Like ``tfr.int64``: carries ``np_dtype``."""

    def __init__(self, dtype: Any) -> None:
        self.np_dtype = np.dtype(dtype)


class _FakeTfDType:
    """Like TensorFlow's ``tf.uint16``: carries ``as_numpy_dtype``."""

    as_numpy_dtype = np.uint16


@pytest.mark.parametrize(
    ("out_type", "expected"),
    [
        (np.uint8, np.uint8),
        ("uint8", np.uint8),
        ("tf.uint8", np.uint8),
        ("tfr.int16", np.int16),
        ("<i2", np.int16),
        (np.dtype(np.float64), np.float64),
        ("float", np.float32),
        ("float32", np.float32),
        ("half", np.float16),
        ("double", np.float64),
        (float, np.float32),
        (int, np.int64),
        (bool, np.bool_),
        (_FakeTfrDType(np.int64), np.int64),
        (_FakeTfrDType(np.float32), np.float32),
        (_FakeTfDType(), np.uint16),
    ],
)
def test_out_type_spellings(out_type: Any, expected: Any) -> None:
    out = decode_raw(bytes(8), out_type)
    assert out.dtype == np.dtype(expected)
    assert out.size == 8 // np.dtype(expected).itemsize


@pytest.mark.parametrize(
    "out_type",
    ["string", "bytes", "tf.string", bytes, str, object, "S4", "U2", _FakeTfrDType(object)],
)
def test_string_out_types_rejected(out_type: Any) -> None:
    with pytest.raises(TypeError, match="string type"):
        decode_raw(b"ab", out_type)


@pytest.mark.parametrize("out_type", ["nonsense", "datetime64[D]", np.timedelta64])
def test_bad_out_types_rejected(out_type: Any) -> None:
    with pytest.raises(TypeError):
        decode_raw(b"ab", out_type)


# --------------------------------------------------------------------------- memory


def test_single_bytes_is_read_only_zero_copy() -> None:
    data = struct.pack("<4i", 1, 2, 3, 4)
    out = decode_raw(data, np.int32)
    assert out.tolist() == [1, 2, 3, 4]
    assert not out.flags.writeable
    assert np.shares_memory(out, np.frombuffer(data, np.uint8))
    copied = decode_raw(data, np.int32, copy=True)
    assert copied.flags.writeable
    assert not np.shares_memory(copied, np.frombuffer(data, np.uint8))
    # a non-native byte order is a conversion, hence a fresh array
    assert decode_raw(data, np.int32, little_endian=sys.byteorder == "big").flags.writeable


def test_mutable_buffers_are_copied() -> None:
    buf = bytearray(struct.pack("<2i", 5, 6))
    out = decode_raw(buf, np.int32)
    assert out.flags.writeable
    buf[0] = 99  # the caller reuses its buffer
    assert out.tolist() == [5, 6]
    view = memoryview(bytes(struct.pack("<2i", 7, 8)))
    assert decode_raw(view, np.int32).tolist() == [7, 8]


def test_batches_are_fresh_and_writable() -> None:
    items = [b"\x01\x00", b"\x02\x00"]
    out = decode_raw(items, np.int16)
    assert out.flags.writeable
    out[0, 0] = 9
    assert items[0] == b"\x01\x00"


# --------------------------------------------------------------------------- numpy string arrays


def test_s_arrays() -> None:
    arr = np.array([b"\x01\x02", b"\x03\x04"])
    assert decode_raw(arr, np.uint8).tolist() == [[1, 2], [3, 4]]
    # NumPy's value of b"\x01\x00" is b"\x01": sizes differ as TensorFlow would see them
    with pytest.raises(ParseError, match="element 1 has size 2 != 1"):
        decode_raw(np.array([b"\x01\x02", b"\x01\x00"]), np.uint8)
    # ... and all-shorter values are cut to their common size
    assert decode_raw(np.array([b"\x01", b"\x02"], dtype="S4"), np.uint8).tolist() == [[1], [2]]
    # fixed_length pads with zeros, which is exactly the stored padding
    padded = decode_raw(np.array([b"\x01\x00", b"\x02"]), np.uint8, fixed_length=3)
    assert padded.tolist() == [[1, 0, 0], [2, 0, 0]]
    assert decode_raw(np.array([[b"ab"], [b"cd"]]), np.uint8).shape == (2, 1, 2)


def test_v_and_object_and_u_arrays() -> None:
    v = np.frombuffer(b"\x01\x00\x02\x00", dtype="V2")
    assert decode_raw(v, np.uint16).tolist() == [[1], [2]]
    assert decode_raw(v[0], np.uint16).tolist() == [1]
    obj = np.array([b"\x00\x01", bytearray(b"\x00\x02")], dtype=object)
    assert decode_raw(obj, np.uint16, little_endian=False).tolist() == [[1], [2]]
    assert decode_raw(np.array(["ab", "cd"]), np.uint8).tolist() == [[97, 98], [99, 100]]
    assert decode_raw("é", np.uint8).tolist() == list("é".encode())


def test_mnist_style_roundtrip() -> None:
    images = np.random.default_rng(0).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    out = decode_raw([img.tobytes() for img in images], np.uint8).reshape(-1, 28, 28)
    np.testing.assert_array_equal(out, images)


# --------------------------------------------------------------------------- images

needs_pillow = pytest.mark.skipif(
    importlib.util.find_spec("PIL") is None, reason="Pillow (the image extra) is not installed"
)


@needs_pillow
@pytest.mark.parametrize("shape", [(5, 7), (5, 7, 2), (5, 7, 3), (5, 7, 4)])
def test_png_roundtrip_exact(shape: tuple[int, ...]) -> None:
    arr = np.random.default_rng(1).integers(0, 256, shape, dtype=np.uint8)
    data = encode_image(arr)
    assert data.startswith(b"\x89PNG")
    out = decode_image(data)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, arr)


@needs_pillow
def test_png_single_channel_squeezed() -> None:
    arr = np.arange(12, dtype=np.uint8).reshape(3, 4, 1)
    assert decode_image(encode_image(arr)).shape == (3, 4)


@needs_pillow
def test_jpeg_roundtrip_close() -> None:
    arr = np.full((16, 16, 3), 120, dtype=np.uint8)
    arr[:8] = 200
    data = encode_image(arr, format="jpeg", quality=90)
    assert data.startswith(b"\xff\xd8")
    out = decode_image(data)
    assert out.shape == arr.shape
    assert np.abs(out.astype(int) - arr).mean() < 4
    assert decode_image(encode_image(arr[:, :, 0], "JPG")).shape == (16, 16)


@needs_pillow
def test_decode_image_modes() -> None:
    from PIL import Image

    rgb = np.random.default_rng(2).integers(0, 256, (4, 4, 3), dtype=np.uint8)
    assert decode_image(encode_image(rgb), mode="L").shape == (4, 4)
    assert decode_image(encode_image(rgb[:, :, 0]), mode="RGB").shape == (4, 4, 3)
    # palette PNG -> RGB
    pal = Image.fromarray(rgb).convert("P")
    buf = io.BytesIO()
    pal.save(buf, format="PNG")
    assert decode_image(buf.getvalue()).shape == (4, 4, 3)
    # 1-bit -> L
    buf = io.BytesIO()
    Image.fromarray(rgb[:, :, 0] > 128).save(buf, format="PNG")
    one = decode_image(buf.getvalue())
    assert one.shape == (4, 4)
    assert set(np.unique(one).tolist()) <= {0, 255}
    # 16-bit -> error unless converted
    buf = io.BytesIO()
    Image.fromarray(np.full((3, 3), 40000, dtype=np.uint16)).save(buf, format="PNG")
    with pytest.raises(ValueError, match="more than 8 bits"):
        decode_image(buf.getvalue())


@needs_pillow
def test_decode_image_bad_data() -> None:
    with pytest.raises(ParseError, match="cannot decode image"):
        decode_image(b"definitely not an image")
    png = encode_image(np.zeros((8, 8), np.uint8))
    with pytest.raises(ParseError):
        decode_image(png[: len(png) // 2])
    with pytest.raises(TypeError):
        decode_image("a str")


@needs_pillow
@needs_pillow
@pytest.mark.parametrize(
    ("array", "kwargs", "error"),
    [
        (np.zeros((4, 4), np.float32), {}, TypeError),
        (np.zeros((4,), np.uint8), {}, ValueError),
        (np.zeros((4, 4, 5), np.uint8), {}, ValueError),
        (np.zeros((4, 4, 4), np.uint8), {"format": "jpeg"}, ValueError),
        (np.zeros((4, 4), np.uint8), {"format": "gif"}, ValueError),
        (np.zeros((4, 4), np.uint8), {"format": "jpeg", "quality": 0}, ValueError),
    ],
)
def test_encode_image_errors(array: np.ndarray, kwargs: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        encode_image(array, **kwargs)


def test_missing_pillow_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match=r"pip install 'tfrecord-lite-np\[image\]'"):
        encode_image(np.zeros((2, 2), np.uint8))
    with pytest.raises(ImportError, match="Pillow"):
        decode_image(b"x")
