"""``tfr.io``'s TensorFlow ops: serialize_tensor / parse_tensor, decode_json_example, images.

Golden bytes of ``serialize_tensor`` were produced by ``tf.io.serialize_tensor``
(TensorFlow 2.21); ``tests/interop/test_tensor_interop.py`` checks every dtype
and shape against TensorFlow itself under ``make interop``.
"""

from __future__ import annotations

import base64
import inspect
import io
import json
import time
import warnings
from typing import Any

import numpy as np
import pytest
from _helpers import TENSOR_DTYPES

import tfrecord_lite as tfr
from tfrecord_lite import tensor_pb2

GOLDEN = [
    (
        np.array([1, 2, 3], np.int32),
        b'\x08\x03\x12\x04\x12\x02\x08\x03"\x0c\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00',
    ),
    (np.float32(2.5), b'\x08\x01\x12\x00"\x04\x00\x00 @'),
    (np.zeros((0, 3), np.float64), b"\x08\x02\x12\x06\x12\x00\x12\x02\x08\x03"),
    (np.array([[True, False]]), b'\x08\n\x12\x08\x12\x02\x08\x01\x12\x02\x08\x02"\x02\x01\x00'),
    (np.array([b"a", b"bc"]), b"\x08\x07\x12\x04\x12\x02\x08\x02B\x01aB\x02bc"),
    (np.array(b"xyz"), b"\x08\x07\x12\x00B\x03xyz"),
    (np.array([], dtype="S1"), b"\x08\x07\x12\x02\x12\x00"),
    (
        np.array([1, 2], np.uint64),
        b'\x08\x17\x12\x04\x12\x02\x08\x02"\x10\x01' + b"\x00" * 7 + b"\x02" + b"\x00" * 7,
    ),
    (np.array([1.5], np.float16), b'\x08\x13\x12\x04\x12\x02\x08\x01"\x02\x00>'),
    (np.array([1, -2], np.int8), b'\x08\x06\x12\x04\x12\x02\x08\x02"\x02\x01\xfe'),
    (np.array([3], np.uint32), b'\x08\x16\x12\x04\x12\x02\x08\x01"\x04\x03\x00\x00\x00'),
]


@pytest.mark.parametrize(("value", "golden"), GOLDEN, ids=lambda v: getattr(v, "dtype", "b"))
def test_serialize_tensor_golden(value: np.ndarray, golden: bytes) -> None:
    assert tfr.io.serialize_tensor(value) == golden
    out_type = "string" if value.dtype.kind == "S" else value.dtype
    back = tfr.io.parse_tensor(golden, out_type)
    assert back.shape == value.shape
    assert back.tolist() == value.tolist()


@pytest.mark.parametrize("dtype", TENSOR_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (4,), (2, 3), (3, 0, 2)])
def test_round_trip_every_dtype(dtype: Any, shape: tuple[int, ...]) -> None:
    arr = (np.arange(int(np.prod(shape))) % 7).astype(dtype).reshape(shape)
    back = tfr.io.parse_tensor(tfr.io.serialize_tensor(arr), np.dtype(dtype))
    assert back.dtype == np.dtype(dtype) and back.shape == shape and np.array_equal(back, arr)
    assert back.flags.writeable


def test_big_endian_input_is_written_little_endian() -> None:
    arr = np.array([1, 256], dtype=">i4")
    assert tfr.io.serialize_tensor(arr) == tfr.io.serialize_tensor(arr.astype("<i4"))


def test_strings_and_the_library_dtypes() -> None:
    data = tfr.io.serialize_tensor(["a", "é"])  # str as UTF-8
    assert tfr.io.parse_tensor(data, tfr.string).tolist() == [b"a", "é".encode()]
    assert tfr.io.parse_tensor(data, bytes).tolist() == [b"a", "é".encode()]
    f = tfr.io.serialize_tensor(np.ones((2, 2), np.float32))
    assert tfr.io.parse_tensor(f, tfr.float32).dtype == np.float32
    assert tfr.io.parse_tensor(f, "float").dtype == np.float32
    i = tfr.io.serialize_tensor(np.arange(3))
    assert tfr.io.parse_tensor(i, tfr.int64).tolist() == [0, 1, 2]
    assert tfr.io.parse_tensor(i, tfr.int64, name="x").tolist() == [0, 1, 2]


def test_parse_tensor_takes_what_parsing_returns() -> None:
    """serialize_tensor in a bytes feature (TensorFlow's tutorial), read back through a parse."""
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    rec = tfr.encode_example({"t": tfr.io.serialize_tensor(arr)})
    parsed = tfr.parse_single_example(rec, {"t": tfr.FixedLenFeature([], tfr.string)})
    assert isinstance(parsed["t"], np.ndarray) and parsed["t"].ndim == 0
    assert np.array_equal(tfr.io.parse_tensor(parsed["t"], tfr.float32), arr)


def test_parse_tensor_errors() -> None:
    ints = tfr.io.serialize_tensor(np.array([1, 2], np.int32))
    with pytest.raises(
        tfr.ParseError, match=r"^Type mismatch between parsed tensor \(int32\) and dtype \(float\)$"
    ):
        tfr.io.parse_tensor(ints, tfr.float32)
    with pytest.raises(
        tfr.ParseError, match="Could not parse `serialized` as TensorProto, base64: //8="
    ):
        tfr.io.parse_tensor(b"\xff\xff", tfr.float32)
    with pytest.raises(TypeError, match="unknown out_type"):
        tfr.io.parse_tensor(ints, "no-such-type")
    with pytest.raises(TypeError, match="one bytes value"):
        tfr.io.parse_tensor([ints, ints], np.int32)
    # tensor_content of the wrong size for the shape
    p = tensor_pb2.TensorProto()
    p.ParseFromString(ints)
    p.tensor_content = p.tensor_content[:-1]
    with pytest.raises(tfr.ParseError, match="tensor_content has 7 bytes, the shape needs 8"):
        tfr.io.parse_tensor(p.SerializeToString(), np.int32)
    with pytest.raises(TypeError, match="unsupported dtype"):
        tfr.io.serialize_tensor(np.array(["2020-01-01"], dtype="datetime64[D]"))


def test_typed_fields_fill_with_the_last_value() -> None:
    """TensorFlow's rule: a *_val field shorter than the shape repeats its last value."""
    p = tensor_pb2.TensorProto(dtype=tensor_pb2.DT_INT32, int_val=[7])
    p.tensor_shape.dim.add(size=3)
    assert tfr.io.parse_tensor(p.SerializeToString(), np.int32).tolist() == [7, 7, 7]
    p = tensor_pb2.TensorProto(dtype=tensor_pb2.DT_HALF, half_val=[0x3E00])
    p.tensor_shape.dim.add(size=2)
    assert tfr.io.parse_tensor(p.SerializeToString(), np.float16).tolist() == [1.5, 1.5]
    p = tensor_pb2.TensorProto(dtype=tensor_pb2.DT_STRING, string_val=[b"s"])
    p.tensor_shape.dim.add(size=2)
    assert tfr.io.parse_tensor(p.SerializeToString(), tfr.string).tolist() == [b"s", b"s"]
    p = tensor_pb2.TensorProto(dtype=tensor_pb2.DT_COMPLEX64, scomplex_val=[1.0, 2.0])
    assert tfr.io.parse_tensor(p.SerializeToString(), np.complex64).tolist() == 1 + 2j
    too_many = tensor_pb2.TensorProto(dtype=tensor_pb2.DT_INT64, int64_val=[1, 2, 3])
    too_many.tensor_shape.dim.add(size=2)
    with pytest.raises(tfr.ParseError, match="int64_val holds 3 values but the shape holds 2"):
        tfr.io.parse_tensor(too_many.SerializeToString(), np.int64)


def test_hostile_shape_is_refused_without_allocating() -> None:
    p = tensor_pb2.TensorProto(dtype=tensor_pb2.DT_DOUBLE, double_val=[1.0])
    p.tensor_shape.dim.add(size=10**12)
    start = time.perf_counter()
    with pytest.raises(tfr.ParseError, match="claims 1000000000000 elements"):
        tfr.io.parse_tensor(p.SerializeToString(), np.float64)
    p = tensor_pb2.TensorProto(dtype=tensor_pb2.DT_STRING, string_val=[b"x"])
    p.tensor_shape.dim.add(size=10**12)
    with pytest.raises(tfr.ParseError, match="claims"):
        tfr.io.parse_tensor(p.SerializeToString(), tfr.string)
    neg = tensor_pb2.TensorProto(dtype=tensor_pb2.DT_INT32)
    neg.tensor_shape.dim.add(size=-1)
    with pytest.raises(tfr.ParseError, match="not known"):
        tfr.io.parse_tensor(neg.SerializeToString(), np.int32)
    assert time.perf_counter() - start < 30  # (bounded: no 8 TB allocation attempted)


def test_decode_json_example() -> None:
    doc = {
        "features": {
            "feature": {
                "label": {"int64List": {"value": ["3", 4]}},
                "name": {"bytesList": {"value": [base64.b64encode(b"cat").decode()]}},
                "score": {"float_list": {"value": [0.5]}},
            }
        }
    }
    out = tfr.io.decode_json_example(json.dumps(doc))
    assert out.shape == () and out.dtype == object
    parsed = tfr.parse_single_example(
        out,
        {
            "label": tfr.FixedLenFeature([2], tfr.int64),
            "name": tfr.FixedLenFeature([], tfr.string),
            "score": tfr.FixedLenFeature([], tfr.float32),
        },
    )
    assert parsed["label"].tolist() == [3, 4] and parsed["name"].item() == b"cat"
    assert float(parsed["score"]) == 0.5
    batch = tfr.io.decode_json_example([[json.dumps(doc), "{}"]], name="j")
    assert batch.shape == (1, 2) and batch[0, 1] == b""
    assert tfr.parse_example(batch.reshape(-1), {"label": tfr.VarLenFeature(tfr.int64)})[
        "label"
    ].values.tolist() == [3, 4]
    with pytest.raises(tfr.ParseError, match="Error while parsing JSON: element 1: "):
        tfr.io.decode_json_example(["{}", '{"bad": 1}'])
    with pytest.raises(tfr.ParseError, match="Error while parsing JSON"):
        tfr.io.decode_json_example(b"not json")
    with pytest.raises(TypeError, match="str or bytes"):
        tfr.io.decode_json_example([1])


def test_every_tf_io_function_accepts_name() -> None:
    """TensorFlow's ops take name=; a ported call passing it must not fail."""
    missing = []
    for attr in tfr.io.__all__:
        obj = getattr(tfr.io, attr)
        if attr == "tf_record_iterator":  # a Python generator in TensorFlow too: no name=
            continue
        if inspect.isfunction(obj) and "name" not in inspect.signature(obj).parameters:
            missing.append(attr)
    assert missing == []
    assert tfr.io.decode_raw(b"\x01\x02", tfr.uint8, name=None).tolist() == [1, 2]
    assert tfr.decode_raw(b"\x01\x00", np.int16, True, None, None).tolist() == [1]


# --------------------------------------------------------------------------- images

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402


def picture(h: int = 12, w: int = 10, c: int = 3) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([(x * 9 + y * 3 + 40 * k) % 256 for k in range(c)], -1).astype(np.uint8)


def png_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr).save(buf, "PNG")
    return buf.getvalue()


def test_decode_image_takes_what_parsing_returns() -> None:
    """Defect: tfr.decode_image(parse_single_example(...)["image/encoded"]) failed."""
    arr = picture()
    rec = tfr.encode_example({"image/encoded": png_bytes(arr), "label": 1})
    parsed = tfr.parse_single_example(rec, {"image/encoded": tfr.FixedLenFeature([], tfr.string)})
    assert np.array_equal(tfr.decode_image(parsed["image/encoded"]), arr)
    assert np.array_equal(tfr.io.decode_image(parsed["image/encoded"]), arr)
    assert np.array_equal(tfr.io.decode_png(parsed["image/encoded"]), arr)
    one = tfr.parse_single_example(rec, {"image/encoded": tfr.FixedLenFeature([1], tfr.string)})
    assert one["image/encoded"].shape == (1,)
    assert np.array_equal(tfr.decode_image(one["image/encoded"]), arr)
    assert np.array_equal(tfr.io.decode_image(one["image/encoded"]), arr)
    batch = tfr.parse_example([rec, rec], {"image/encoded": tfr.FixedLenFeature([], tfr.string)})
    with pytest.raises(ValueError, match="one encoded image"):
        tfr.io.decode_image(batch["image/encoded"])


def test_tf_shapes_and_channels() -> None:
    gray = picture(c=1)
    data = png_bytes(gray)
    assert tfr.decode_image(data).shape == (12, 10, 1)  # TensorFlow's: always (H, W, C)
    assert tfr.io.decode_image(data).shape == (12, 10, 1)
    assert tfr.decode_with_pillow(data).shape == (12, 10)  # the Pillow-style helper: 2-D gray
    assert tfr.io.decode_image(data, channels=3).shape == (12, 10, 3)
    assert tfr.io.decode_png(data, channels=4)[0, 0].tolist() == [gray[0, 0, 0]] * 3 + [255]
    rgb = picture()
    jpg = tfr.io.encode_jpeg(rgb, quality=90)
    assert Image.open(io.BytesIO(jpg)).format == "JPEG"
    assert tfr.io.decode_jpeg(jpg).shape == (12, 10, 3)
    assert tfr.io.decode_jpeg(jpg, channels=1).shape == (12, 10, 1)
    assert tfr.io.decode_jpeg(jpg, ratio=2).shape == (6, 5, 3)
    assert tfr.io.decode_image(jpg, dtype=np.float32).dtype == np.float32
    g = tfr.io.encode_jpeg(gray, format="grayscale")
    assert tfr.io.decode_jpeg(g).shape == (12, 10, 1)
    with pytest.raises(ValueError, match="must be 0, 1 or 3 but got 4"):
        tfr.io.decode_jpeg(jpg, channels=4)
    with pytest.raises(tfr.ParseError, match="not a JPEG"):
        tfr.io.decode_jpeg(data)
    with pytest.raises(tfr.ParseError, match="cannot decode image"):
        tfr.io.decode_image(b"not an image")
    with pytest.raises(ValueError, match="3-dimensional"):
        tfr.io.encode_png(rgb[:, :, 0])
    with pytest.raises(ValueError, match="dct_method"):
        tfr.io.decode_jpeg(jpg, dct_method="SLOW")


def test_top_level_decode_image_is_tensorflows() -> None:
    """Issue 35 item 9: tfr.decode_image returned grayscale (H, W) (with a warning) where
    tfr.io.decode_image and tf.io.decode_image give (H, W, 1)."""
    assert tfr.decode_image is tfr.io.decode_image is tfr.image.decode_image
    gray = picture(c=1)
    rgb = picture()
    png_gray = png_bytes(gray)
    jpg_gray = tfr.io.encode_jpeg(gray, format="grayscale", quality=90)
    jpg_rgb = tfr.io.encode_jpeg(rgb, quality=90)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation warning any more
        got_png = tfr.decode_image(png_gray)
        got_jpg = tfr.decode_image(jpg_gray)
        got_rgb = tfr.decode_image(png_bytes(rgb))
        got_rgb_jpg = tfr.decode_image(jpg_rgb)
    assert got_png.shape == got_jpg.shape == (12, 10, 1)
    assert got_png.dtype == got_jpg.dtype == np.uint8
    assert np.array_equal(got_png, gray)  # PNG is lossless
    assert np.array_equal(got_jpg, tfr.io.decode_image(jpg_gray))
    pillow = tfr.decode_with_pillow(jpg_gray)  # 2-D; its own IDCT (TensorFlow's is the fast one)
    assert pillow.shape == (12, 10)
    assert np.abs(got_jpg[:, :, 0].astype(np.int16) - pillow).max() <= 8
    assert got_rgb.shape == got_rgb_jpg.shape == (12, 10, 3)
    assert np.array_equal(got_rgb, rgb)
    assert np.array_equal(got_rgb_jpg, tfr.io.decode_image(jpg_rgb))
    # channels= converts as TensorFlow does, both ways
    assert np.array_equal(tfr.decode_image(png_gray, channels=3), np.repeat(gray, 3, axis=2))
    assert tfr.decode_image(jpg_gray, channels=3).shape == (12, 10, 3)
    assert tfr.decode_image(png_bytes(rgb), channels=1).shape == (12, 10, 1)
    assert np.array_equal(
        tfr.decode_image(jpg_rgb, channels=1), tfr.io.decode_jpeg(jpg_rgb, channels=1)
    )
    # what parsing returns, and dtype=
    rec = tfr.encode_example({"image/encoded": png_gray})
    parsed = tfr.parse_single_example(rec, {"image/encoded": tfr.FixedLenFeature([], tfr.string)})
    assert np.array_equal(tfr.decode_image(parsed["image/encoded"]), gray)
    scaled = tfr.decode_image(png_gray, dtype=np.float32)
    assert scaled.shape == (12, 10, 1) and np.allclose(scaled, gray / 255.0)
    # the Pillow-style call says where that helper is now
    with pytest.raises(TypeError, match=r"tfr\.decode_with_pillow\(data, mode=\.\.\.\)"):
        tfr.decode_image(png_gray, "L")
    assert tfr.decode_with_pillow(png_gray, mode="RGB").shape == (12, 10, 3)


@pytest.mark.parametrize("c", [1, 2, 3, 4])
def test_encode_png_is_lossless(c: int) -> None:
    arr = picture(c=c)
    data = tfr.io.encode_png(arr, compression=9)
    assert np.array_equal(tfr.io.decode_png(data), arr)


def test_png16_and_dtypes() -> None:
    arr = (picture(c=1).astype(np.uint16) * 257 + 1).astype(np.uint16)
    data = tfr.io.encode_png(arr)
    assert np.array_equal(tfr.io.decode_png(data, dtype=np.uint16), arr)
    assert np.array_equal(tfr.io.decode_png(data), (arr // 256).astype(np.uint8))
    eight = tfr.io.encode_png(picture(c=1))
    assert np.array_equal(
        tfr.io.decode_png(eight, dtype=np.uint16), picture(c=1).astype(np.uint16) * 257
    )


def test_gif_animation_frames() -> None:
    frames = [Image.fromarray(picture(8, 6) + k * 20) for k in range(3)]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:])
    data = buf.getvalue()
    assert tfr.io.decode_image(data).shape == (3, 8, 6, 3)
    assert tfr.io.decode_image(data, expand_animations=False).shape == (8, 6, 3)


def test_jpeg_default_dct_documented() -> None:
    from tfrecord_lite._decoding._jpeg import JPEG_MAX_DIFF

    assert JPEG_MAX_DIFF == 8
    assert "8" in (tfr.io.decode_jpeg.__doc__ or "")


# --------------------------------------------------------------------------- JPEG backends


def _photo_jpeg(subsampling: int, gray: bool = False, quality: int = 90) -> bytes:
    rng = np.random.default_rng(5)
    y, x = np.mgrid[0:37, 0:53]
    base = np.stack([np.sin(x / 6.0 + k) * 70 + np.cos(y / 9.0) * 40 + 128 for k in range(3)], -1)
    arr = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
    img = Image.fromarray(arr[:, :, 0] if gray else arr)
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=quality, subsampling=subsampling)
    return buf.getvalue()


def test_jpeg_backend_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    from tfrecord_lite._decoding._jpeg import jpeg_backend

    monkeypatch.setenv("TFRECORD_LITE_JPEG_BACKEND", "pillow")
    assert jpeg_backend() == "pillow"
    monkeypatch.setenv("TFRECORD_LITE_JPEG_BACKEND", "libjpeg")
    with pytest.raises(
        ValueError, match=r"TFRECORD_LITE_JPEG_BACKEND='libjpeg'.*simplejpeg, pillow"
    ):
        tfr.io.decode_jpeg(_photo_jpeg(0))
    monkeypatch.delenv("TFRECORD_LITE_JPEG_BACKEND")
    try:
        import simplejpeg  # noqa: F401
    except ImportError:
        assert jpeg_backend() == "pillow"
    else:
        assert jpeg_backend() == "simplejpeg"


@pytest.mark.parametrize("backend", ["simplejpeg", "pillow"])
def test_jpeg_backends_agree_where_both_are_exact(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both backends give TensorFlow's pixels for INTEGER_ACCURATE and for 4:4:4 / gray
    with the default DCT, so they agree there; on 4:2:0 with the default DCT Pillow is
    within JPEG_MAX_DIFF (simplejpeg is exact: tests/interop/test_tensor_interop.py)."""
    from tfrecord_lite._decoding._jpeg import JPEG_MAX_DIFF

    if backend == "simplejpeg":
        pytest.importorskip("simplejpeg")
    cases = [(_photo_jpeg(0), True), (_photo_jpeg(0, gray=True), True), (_photo_jpeg(2), False)]
    for data, exact in cases:
        for channels in (0, 1, 3):
            for dct in ("", "INTEGER_FAST", "INTEGER_ACCURATE"):
                monkeypatch.setenv("TFRECORD_LITE_JPEG_BACKEND", "pillow")
                ref = tfr.io.decode_jpeg(data, channels=channels, dct_method=dct)
                monkeypatch.setenv("TFRECORD_LITE_JPEG_BACKEND", backend)
                got = tfr.io.decode_jpeg(data, channels=channels, dct_method=dct)
                assert got.dtype == np.uint8 and got.shape == ref.shape
                assert got.flags.writeable and got.flags.c_contiguous
                diff = int(np.abs(got.astype(int) - ref.astype(int)).max())
                if dct == "INTEGER_ACCURATE" or (exact and channels == 0):
                    assert diff == 0, (exact, channels, dct)
                else:
                    assert diff <= JPEG_MAX_DIFF
                assert np.array_equal(
                    tfr.io.decode_image(data, channels=channels),
                    tfr.io.decode_jpeg(data, channels=channels),
                )


@pytest.mark.parametrize("backend", ["simplejpeg", "pillow"])
def test_jpeg_errors_are_the_same_with_both_backends(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend == "simplejpeg":
        pytest.importorskip("simplejpeg")
    monkeypatch.setenv("TFRECORD_LITE_JPEG_BACKEND", backend)
    data = _photo_jpeg(2)
    for bad in (data[: len(data) // 2], data[:40], b"\xff\xd8\xff" + b"\x00" * 30):
        with pytest.raises(tfr.ParseError, match="decode_jpeg: cannot decode image"):
            tfr.io.decode_jpeg(bad)
    with pytest.raises(tfr.ParseError, match="not a JPEG image"):
        tfr.io.decode_jpeg(png_bytes(picture()))
    cmyk = io.BytesIO()
    Image.fromarray(picture(9, 7, 4), "CMYK").save(cmyk, "JPEG")
    out = tfr.io.decode_jpeg(cmyk.getvalue())  # Pillow decodes CMYK under both backends
    assert out.shape == (9, 7, 3) and out.dtype == np.uint8
