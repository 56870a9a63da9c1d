"""``tfr.io`` tensor, JSON and image ops against real TensorFlow (``make interop``).

* ``serialize_tensor`` writes TensorFlow's bytes exactly, for every dtype both
  libraries have (strings too) and scalar, empty and N-d shapes; each library's
  ``parse_tensor`` reads the other's bytes, and ours reads the typed ``*_val``
  forms ``tf.make_tensor_proto`` writes.
* ``decode_json_example`` gives the Examples TensorFlow's gives.
* Images: PNG decoding is TensorFlow's exactly (every ``channels``, uint8 and
  uint16); JPEG decoding with simplejpeg (the ``image`` extra) is exact for every
  ``dct_method`` and ``channels``; with the Pillow fallback
  (``TFRECORD_LITE_JPEG_BACKEND=pillow``) it is exact with
  ``dct_method="INTEGER_ACCURATE"`` and on grayscale / 4:4:4 JPEGs with the default,
  and on chroma-subsampled JPEGs the default differs by at most ``JPEG_MAX_DIFF``,
  measured and printed here; TensorFlow decodes our encoders' bytes to what we decode.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

tf: Any = pytest.importorskip("tensorflow")
Image = pytest.importorskip("PIL.Image")

from _helpers import TENSOR_DTYPES  # noqa: E402

import tfrecord_lite as tfr  # noqa: E402
from tfrecord_lite._decoding._jpeg import JPEG_MAX_DIFF  # noqa: E402

DTYPES = TENSOR_DTYPES
SHAPES = [(), (0,), (3,), (2, 3), (0, 3), (2, 1, 4)]


def sample(dtype: Any, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if np.dtype(dtype).kind == "b":
        flat = rng.integers(0, 2, n).astype(bool)
    elif np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        flat = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    elif np.dtype(dtype).kind == "c":
        flat = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    else:
        flat = (rng.standard_normal(n) * 100).astype(dtype)
    return np.asarray(flat, dtype=dtype).reshape(shape)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_serialize_tensor_is_tensorflows(dtype: Any, shape: tuple[int, ...]) -> None:
    arr = sample(dtype, shape)
    theirs = tf.io.serialize_tensor(tf.constant(arr)).numpy()
    ours = tfr.io.serialize_tensor(arr)
    assert ours == theirs
    back = tfr.io.parse_tensor(theirs, np.dtype(dtype))
    assert back.dtype == np.dtype(dtype) and back.shape == shape and np.array_equal(back, arr)
    tf_back = tf.io.parse_tensor(ours, tf.as_dtype(np.dtype(dtype))).numpy()
    assert np.array_equal(tf_back, arr)


@pytest.mark.parametrize(
    "values",
    [
        np.array(b"one"),
        np.array([b"a", b"", b"\x00\xff"], dtype=object),
        np.array([[b"ab", b"c"], [b"", b"d"]], dtype=object),
        np.array([], dtype=object),
    ],
    ids=["scalar", "vector", "matrix", "empty"],
)
def test_string_tensors_both_ways(values: np.ndarray) -> None:
    theirs = tf.io.serialize_tensor(tf.constant(values, dtype=tf.string)).numpy()
    ours = tfr.io.serialize_tensor(values)
    assert ours == theirs
    back = tfr.io.parse_tensor(theirs, tfr.string)
    assert back.shape == values.shape and back.tolist() == values.tolist()
    assert np.asarray(tf.io.parse_tensor(ours, tf.string).numpy()).tolist() == values.tolist()
    # TensorFlow's dtype objects name the out_type too
    assert tfr.io.parse_tensor(theirs, tf.string).tolist() == values.tolist()


@pytest.mark.parametrize(
    "value",
    [
        np.float32(2.5),
        np.array([1, 2, 3], np.int32),
        np.array([True]),
        np.float16(1.5),
        np.array([7], np.int64),
        np.complex64(1 + 2j),
        np.array([1.0, 2.0]),
    ],
    ids=str,
)
def test_typed_value_protos(value: Any) -> None:
    """tf.make_tensor_proto writes scalars as *_val fields (and fills from one value)."""
    proto = tf.make_tensor_proto(value)
    data = proto.SerializeToString()
    got = tfr.io.parse_tensor(data, np.asarray(value).dtype)
    assert np.array_equal(got, tf.io.parse_tensor(data, proto.dtype).numpy())
    filled = tf.make_tensor_proto(np.asarray(value).reshape(-1)[:1][0], shape=[3])
    data = filled.SerializeToString()
    assert np.array_equal(
        tfr.io.parse_tensor(data, np.asarray(value).dtype),
        tf.io.parse_tensor(data, filled.dtype).numpy(),
    )


def test_parse_tensor_type_mismatch_text() -> None:
    data = tf.io.serialize_tensor(tf.constant([1, 2])).numpy()
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf.io.parse_tensor(data, tf.float32)
    with pytest.raises(tfr.ParseError) as ours:
        tfr.io.parse_tensor(data, tfr.float32)
    assert str(ours.value) in str(theirs.value)


def test_decode_json_example_is_tensorflows() -> None:
    texts = [
        '{"features": {"feature": {"a": {"int64List": {"value": ["1", 2]}}, '
        '"b": {"bytesList": {"value": ["aGk="]}}, "c": {"floatList": {"value": [1.5, -2]}}}}}',
        "{}",
        '{"features": {}}',
        '{"features": {"feature": {"e": {}}}}',
    ]
    theirs = tf.io.decode_json_example(texts).numpy()
    ours = tfr.io.decode_json_example(texts)
    assert ours.shape == theirs.shape
    for a, b in zip(ours.tolist(), theirs.tolist()):
        assert tf.train.Example.FromString(a) == tf.train.Example.FromString(b)
    for bad in ('{"bad": 1}', "not json", '{"featureLists": {}}'):
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.io.decode_json_example(bad)
        with pytest.raises(tfr.ParseError, match="Error while parsing JSON"):
            tfr.io.decode_json_example(bad)


# --------------------------------------------------------------------------- images


def picture(h: int, w: int, c: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack(
        [np.sin(x / 7.0 + k) * 60 + np.cos(y / 11.0 - k) * 50 + 128 for k in range(c)], -1
    )
    base += rng.normal(0, 20, base.shape)
    return np.clip(base, 0, 255).astype(np.uint8)


def jpeg(arr: np.ndarray, subsampling: int, quality: int) -> bytes:
    buf = io.BytesIO()
    img = Image.fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr)
    img.save(buf, "JPEG", quality=quality, subsampling=subsampling)
    return buf.getvalue()


@pytest.mark.parametrize("backend", ["simplejpeg", "pillow"])
def test_jpeg_pixels_against_tensorflow(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if backend == "simplejpeg":
        pytest.importorskip("simplejpeg")
    monkeypatch.setenv("TFRECORD_LITE_JPEG_BACKEND", backend)
    worst = 0
    for seed, (h, w) in enumerate([(92, 112), (240, 320), (61, 77)]):
        rgb = picture(h, w, 3, seed)
        gray = picture(h, w, 1, seed)
        for quality in (75, 95):
            cases = [
                (jpeg(rgb, 0, quality), True),  # 4:4:4
                (jpeg(gray, 0, quality), True),  # grayscale
                (jpeg(rgb, 2, quality), False),  # 4:2:0
                (tf.io.encode_jpeg(rgb, quality=quality).numpy(), False),
            ]
            for data, exact in cases:
                accurate = tf.io.decode_jpeg(data, dct_method="INTEGER_ACCURATE").numpy()
                assert np.array_equal(
                    tfr.io.decode_jpeg(data, dct_method="INTEGER_ACCURATE"), accurate
                )
                default = tf.io.decode_jpeg(data).numpy().astype(int)
                ours = tfr.io.decode_jpeg(data).astype(int)
                diff = int(np.abs(ours - default).max())
                if exact or backend == "simplejpeg":
                    assert diff == 0
                worst = max(worst, diff)
                for channels in (1, 3):
                    for dct in ("INTEGER_ACCURATE", "INTEGER_FAST"):
                        want = tf.io.decode_jpeg(data, channels=channels, dct_method=dct).numpy()
                        got = tfr.io.decode_jpeg(data, channels=channels, dct_method=dct)
                        if dct == "INTEGER_ACCURATE" or backend == "simplejpeg":
                            assert np.array_equal(got, want), (channels, dct)
                        else:
                            d = int(np.abs(got.astype(int) - want.astype(int)).max())
                            worst = max(worst, d)
                    want = tf.io.decode_image(data, channels=channels).numpy()
                    got = tfr.io.decode_image(data, channels=channels)
                    if backend == "simplejpeg":
                        assert np.array_equal(got, want), channels
    print(f"{backend}: largest pixel difference from tf.io.decode_jpeg (default): {worst}")
    assert worst <= (0 if backend == "simplejpeg" else JPEG_MAX_DIFF)


@pytest.mark.parametrize("stored", [1, 2, 3, 4])
def test_png_is_tensorflows(stored: int) -> None:
    arr = picture(20, 30, stored, stored)
    for data in (tf.io.encode_png(arr).numpy(), tfr.io.encode_png(arr)):
        for channels in (0, 1, 3, 4):
            want = tf.io.decode_png(data, channels=channels).numpy()
            assert np.array_equal(tfr.io.decode_png(data, channels=channels), want), channels
            want = tf.io.decode_image(data, channels=channels, dtype=tf.float32).numpy()
            got = tfr.io.decode_image(data, channels=channels, dtype=np.float32)
            assert got.dtype == np.float32 and np.array_equal(got, want)
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be 0, 1, 3 or 4"):
            tf.io.decode_png(data, channels=2)
        with pytest.raises(ValueError, match="must be 0, 1, 3 or 4 but got 2"):
            tfr.io.decode_png(data, channels=2)
        want16 = tf.io.decode_png(data, dtype=tf.uint16).numpy()
        assert np.array_equal(tfr.io.decode_png(data, dtype=np.uint16), want16)


def test_png16_is_tensorflows() -> None:
    arr = (picture(10, 12, 1).astype(np.uint16) * 257 + 5).astype(np.uint16)
    for data in (tf.io.encode_png(arr).numpy(), tfr.io.encode_png(arr)):
        assert np.array_equal(tfr.io.decode_png(data, dtype=np.uint16), arr)
        assert np.array_equal(tfr.io.decode_png(data), tf.io.decode_png(data).numpy())
        assert np.array_equal(tfr.io.decode_image(data), tf.io.decode_image(data).numpy())


def test_our_jpeg_bytes_decode_alike_in_tensorflow() -> None:
    for arr in (picture(40, 50, 3), picture(40, 50, 1)):
        data = tfr.io.encode_jpeg(arr, quality=90)
        want = tf.io.decode_jpeg(data, dct_method="INTEGER_ACCURATE").numpy()
        assert np.array_equal(tfr.io.decode_jpeg(data, dct_method="INTEGER_ACCURATE"), want)
        assert np.abs(want.astype(int) - arr.astype(int)).mean() < 20  # noisy picture


def test_gif_frames_like_tensorflow() -> None:
    frames = [Image.fromarray(picture(16, 20, 3, k)).quantize(64) for k in range(3)]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:], duration=50)
    data = buf.getvalue()
    want = tf.io.decode_image(data).numpy()
    got = tfr.io.decode_image(data)
    assert got.shape == want.shape == (3, 16, 20, 3)
    assert np.array_equal(got, want)
    first = tf.io.decode_image(data, expand_animations=False).numpy()
    assert np.array_equal(tfr.io.decode_image(data, expand_animations=False), first)
