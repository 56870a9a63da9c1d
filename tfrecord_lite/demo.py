"""End-to-end demo: an MNIST-style image/label dataset, written and read back without TensorFlow.

Run it with ``make demo`` or ``python -m tfrecord_lite.demo --out demo-out``. It

1. draws 28x28 digit images (seven-segment strokes with jitter and noise),
2. writes them with :func:`tfrecord_lite.write_examples`, plain and GZIP,
3. writes the same data the way TensorFlow's tutorials do (``tfr.train.Example``
   per record, ``TFRecordWriter``), reads it back with ``parse_example`` +
   ``decode_raw``, and checks both round trips are exact,
4. turns an image folder into TFRecord shards with the ``tfrecord-lite``
   command line, inspects, verifies and previews them, and streams the shards
   back as NumPy batches,

printing a short summary of each step.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Optional

import numpy as np

import tfrecord_lite as tfr

#: Which of the seven segments (a..g) each digit lights.
_SEGMENTS = {
    0: "abcdef",
    1: "bc",
    2: "abdeg",
    3: "abcdg",
    4: "bcfg",
    5: "acdfg",
    6: "acdefg",
    7: "abc",
    8: "abcdefg",
    9: "abcdfg",
}


def draw_digits(labels: np.ndarray, seed: int = 0, size: int = 28) -> np.ndarray:
    """Draw one ``size x size`` uint8 image per label: a jittered seven-segment digit."""
    rng = np.random.default_rng(seed)
    images = np.zeros((len(labels), size, size), dtype=np.float32)
    for i, label in enumerate(labels.tolist()):
        x0, y0 = 8 + rng.integers(-3, 4), 4 + rng.integers(-2, 3)
        w, h = 11 + rng.integers(-2, 3), 9 + rng.integers(-1, 2)
        t = int(rng.integers(2, 4))  # stroke thickness
        img = images[i]
        for seg in _SEGMENTS[int(label)]:
            if seg == "a":
                img[y0 : y0 + t, x0 : x0 + w] = 1
            elif seg == "g":
                img[y0 + h : y0 + h + t, x0 : x0 + w] = 1
            elif seg == "d":
                img[y0 + 2 * h : y0 + 2 * h + t, x0 : x0 + w] = 1
            elif seg == "f":
                img[y0 : y0 + h + t, x0 : x0 + t] = 1
            elif seg == "b":
                img[y0 : y0 + h + t, x0 + w - t : x0 + w] = 1
            elif seg == "e":
                img[y0 + h : y0 + 2 * h + t, x0 : x0 + t] = 1
            elif seg == "c":
                img[y0 + h : y0 + 2 * h + t, x0 + w - t : x0 + w] = 1
    images += rng.normal(0, 0.08, images.shape).astype(np.float32)
    return (np.clip(images, 0, 1) * 255).astype(np.uint8)


def _step(title: str) -> None:
    print(f"\n== {title}")


def _rate(n: int, seconds: float) -> str:
    return f"{n / seconds / 1e3:,.0f}k records/s" if seconds > 0 else "-"


def numpy_round_trip(out: str, n: int) -> None:
    """Steps 1-2: columns in, columns out."""
    _step(f"write_examples / read_examples: {n} MNIST-style records")
    labels = np.arange(n, dtype=np.int64) % 10
    images = draw_digits(labels)
    for compression in (None, "GZIP"):
        path = os.path.join(out, "digits.tfrecord" + (".gz" if compression else ""))
        t0 = time.perf_counter()
        tfr.write_examples(path, {"image": images, "label": labels}, compression=compression)
        t1 = time.perf_counter()
        back = tfr.read_examples(path)
        t2 = time.perf_counter()
        assert back["image"].dtype == np.uint8 and back["image"].shape == images.shape
        assert np.array_equal(back["image"], images) and np.array_equal(back["label"], labels)
        print(
            f"{os.path.basename(path):22s} {os.path.getsize(path) / 1e6:6.2f} MB  "
            f"write {_rate(n, t1 - t0)}, read {_rate(n, t2 - t1)}  round trip exact"
        )
    print("schema:", tfr.infer_schema(os.path.join(out, "digits.tfrecord")))


def tensorflow_style(out: str, n: int) -> None:
    """Step 3: the TensorFlow tutorial's code with ``tf.`` replaced by ``tfr.``."""
    _step("TensorFlow-style: tfr.train.Example + TFRecordWriter, parse_example + decode_raw")
    labels = np.arange(n, dtype=np.int64) % 10
    images = draw_digits(labels, seed=1)
    path = os.path.join(out, "tf_style.tfrecord")
    with tfr.TFRecordWriter(path) as writer:
        for image, label in zip(images, labels):
            example = tfr.train.Example(
                features=tfr.train.Features(
                    feature={
                        "image_raw": tfr.train.Feature(
                            bytes_list=tfr.train.BytesList(value=[image.tobytes()])
                        ),
                        "label": tfr.train.Feature(
                            int64_list=tfr.train.Int64List(value=[int(label)])
                        ),
                    }
                )
            )
            writer.write(example.SerializeToString())
    features = {
        "image_raw": tfr.io.FixedLenFeature([], tfr.string),
        "label": tfr.io.FixedLenFeature([], tfr.int64),
    }
    records = list(tfr.tf_record_iterator(path))
    batch = tfr.io.parse_example(records, features)
    decoded = tfr.decode_raw(batch["image_raw"], tfr.uint8).reshape(-1, 28, 28)
    assert np.array_equal(decoded, images)
    assert np.array_equal(np.asarray(batch["label"]), labels)
    one = tfr.io.parse_single_example(records[7], features)
    img7 = tfr.decode_raw(one["image_raw"], np.uint8).reshape(28, 28)
    assert np.array_equal(img7, images[7]) and int(np.asarray(one["label"])) == 7
    print(f"{len(records)} records parsed; decode_raw + reshape gives the images back exactly")


def image_folder(out: str, per_class: int) -> None:
    """Step 4: an image folder through the command line, then streamed back."""
    try:
        from PIL import Image
    except ImportError:
        print(
            "\n(skipping the image-folder step: it needs Pillow, `pip install 'tfrecord-lite-np[image]'`)"
        )
        return
    _step(f"image folder -> shards with `tfrecord-lite` ({10 * per_class} PNG files)")
    folder = os.path.join(out, "images")
    labels = np.repeat(np.arange(10), per_class)
    images = draw_digits(labels, seed=2)
    for i, (img, label) in enumerate(zip(images, labels)):
        cls = os.path.join(folder, f"digit_{label}")
        os.makedirs(cls, exist_ok=True)
        Image.fromarray(img).save(os.path.join(cls, f"{i:04d}.png"))
    shards = os.path.join(out, "shards", "digits")
    shown = command_name()
    cli = [sys.executable, "-m", "tfrecord_lite"]
    commands = [
        [
            *cli,
            "from-images",
            folder,
            shards,
            "--shards",
            "2",
            "--format",
            "png",
            "--shuffle",
            "--seed",
            "0",
            "--quiet",
        ],
        [*cli, "info", f"{shards}-*"],
        [*cli, "verify", f"{shards}-*"],
        [
            *cli,
            "preview",
            f"{shards}-00000-of-00002",
            "--image-key",
            "image/encoded",
            "--label-key",
            "image/class/text",
            "-n",
            "16",
            "-o",
            os.path.join(out, "preview.png"),
        ],
    ]
    for cmd in commands:
        print(f"$ {shown} " + " ".join(cmd[3:]))
        subprocess.run(cmd, check=True)
    features = {
        "image/encoded": tfr.FixedLenFeature([], tfr.string),
        "image/class/label": tfr.FixedLenFeature([], tfr.int64),
    }
    dataset = tfr.TFRecordDataset(f"{shards}@2").shuffle(256, seed=0).batch(64).parse(features)
    seen = 0
    for batch in dataset:  # tf.io.decode_image's shapes: a grayscale PNG is (H, W, 1)
        pixels = np.stack([tfr.decode_image(b) for b in batch["image/encoded"]])
        seen += len(pixels)
    print(f"streamed {seen} images back as NumPy batches of 64 (pixels {pixels.shape[1:]})")


def command_name() -> str:
    """How to call the ``tfrecord-lite`` command from here: its name where it is on ``PATH``,
    else its path beside this Python (a virtual environment that is not activated)."""
    script = os.path.join(os.path.dirname(sys.executable), "tfrecord-lite")
    found = shutil.which("tfrecord-lite")
    if not os.path.exists(script):
        return "tfrecord-lite" if found else f"{os.path.relpath(sys.executable)} -m tfrecord_lite"
    if found and os.path.samefile(found, script):
        return "tfrecord-lite"
    return os.path.relpath(script)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tfrecord_lite.demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", default="demo-out", help="output folder (default: demo-out)")
    parser.add_argument("-n", type=int, default=20000, help="records for the NumPy steps")
    parser.add_argument("--per-class", type=int, default=20, help="images per class, step 4")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    print(
        f"tfrecord_lite {tfr.__version__}; CRC32C backend: {tfr.crc_backend()}; output: {args.out}/"
    )
    numpy_round_trip(args.out, args.n)
    tensorflow_style(args.out, min(args.n, 5000))
    image_folder(args.out, args.per_class)
    print("\nDemo complete.")
    if command_name() != "tfrecord-lite":
        bin_dir = os.path.relpath(os.path.dirname(sys.executable))
        print(
            f"The command line is {command_name()}; `. {os.path.join(bin_dir, 'activate')}` "
            "puts `tfrecord-lite` on your PATH."
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
