"""``tfrecord-lite preview``: the first images of a file as a labelled grid (a TFDS
directory: ``_tfds``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, Optional

import numpy as np

from .._errors import TFRecordError
from ._common import (
    EXIT_DATA,
    EXIT_OK,
    PROG,
    Ctx,
    UsageError,
    add_command,
    examples_text,
    expand_inputs,
    file_kind,
    iter_records,
    parse_any,
    positive_int,
    tfds_inputs,
)
from ._output import plural, save_grid


def _parse_shape(text: str) -> tuple[int, ...]:
    parts = text.lower().replace(",", "x").split("x")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected HxW or HxWxC like 28x28x1, got {text!r}"
        ) from None
    if len(dims) not in (2, 3) or min(dims) < 1:
        raise argparse.ArgumentTypeError(f"expected HxW or HxWxC like 28x28x1, got {text!r}")
    return dims


_SHAPE_KEYS = ("height", "width")
_CHANNEL_KEYS = ("channels", "depth")


def _int_feature(fmap: Any, key: str) -> Optional[list[int]]:
    if key not in fmap:
        return None
    f = fmap[key]
    if f.WhichOneof("kind") != "int64_list":
        return None
    return [int(v) for v in f.int64_list.value]


def _bytes_feature(fmap: Any, key: str) -> Optional[bytes]:
    if key not in fmap:
        return None
    f = fmap[key]
    if f.WhichOneof("kind") != "bytes_list" or not f.bytes_list.value:
        return None
    value: bytes = f.bytes_list.value[0]
    return value


def _stored_shape(fmap: Any, key: str) -> Optional[tuple[int, ...]]:
    """The shape recorded beside a raw image: ``key/shape``, or height/width(/channels)."""
    shape = _int_feature(fmap, key + "/shape")
    if shape:
        return tuple(shape)
    prefixes = [key + "/"]
    if "/" in key:
        prefixes.append(key.rsplit("/", 1)[0] + "/")
    prefixes.append("")
    for p in prefixes:
        h = _int_feature(fmap, p + "height")
        w = _int_feature(fmap, p + "width")
        if h and w:
            for ck in _CHANNEL_KEYS:
                c = _int_feature(fmap, p + ck)
                if c:
                    return (h[0], w[0], c[0])
            return (h[0], w[0])
    return None


def _fit_shape(shape: tuple[int, ...], count: int) -> tuple[int, ...]:
    """Complete an (H, W) shape with a channel count when the data has more values."""
    hw = shape[0] * shape[1]
    if len(shape) == 2 and hw and count != hw and count % hw == 0:
        return (shape[0], shape[1], count // hw)
    return shape


def feature_names(msg: Any) -> str:
    """The features of a record, for a message: a SequenceExample's context features and
    feature lists both (``context features: a, b; feature lists: c``)."""

    def some(keys: Any) -> str:
        names = sorted(keys)
        more = f", ... ({len(names)} in all)" if len(names) > 12 else ""
        return ", ".join(names[:12]) + more or "(none)"

    lists = msg.feature_lists.feature_list
    if not lists:
        return f"features: {some(msg.context.feature)}"
    return f"context features: {some(msg.context.feature)}; feature lists: {some(lists)}"


def _preview_feature(
    feature: Any, key: str, fmap: Any, args: argparse.Namespace, what: str = "feature"
) -> tuple[Optional[np.ndarray], Optional[str]]:
    """A ``Feature`` (a context feature, or one step of a feature list) as an image;
    ``fmap`` holds the shapes stored beside it (``KEY/shape``, ``image/height`` ...)."""
    from .._decoding import decode_image, display_array, sniff_image

    kind = feature.WhichOneof("kind")
    if kind is None:
        return None, f"{what} {key!r} is empty"
    values = getattr(feature, kind).value
    if not values:
        return None, f"{what} {key!r} has no values"
    shape: Optional[tuple[int, ...]] = args.shape or _stored_shape(fmap, key)
    if kind == "bytes_list":
        data = bytes(values[0])
        if sniff_image(data) is not None or (shape is None and args.dtype is None):
            try:
                return display_array(decode_image(data)), None
            except Exception as e:
                if sniff_image(data) is not None:
                    return None, f"cannot decode the image: {getattr(e, 'message', e)}"
        dtype_text = args.dtype or (_bytes_feature(fmap, key + "/dtype") or b"").decode(
            "ascii", "replace"
        )
        try:
            dtype = np.dtype(dtype_text or "uint8")
        except TypeError:
            return None, f"unknown dtype {dtype_text!r}"
        if len(data) % dtype.itemsize:
            return None, f"{len(data)} bytes are not a whole number of {dtype} values"
        arr: np.ndarray = np.frombuffer(data, dtype=dtype)
    else:
        arr = np.asarray(list(values), dtype=np.float32 if kind == "float_list" else np.int64)
    if shape is None:
        side = math.isqrt(arr.size)
        if side * side != arr.size or arr.size == 0:
            return None, (
                f"cannot tell the shape of {arr.size} values in {key!r}: pass --shape HxW[xC]"
            )
        shape = (side, side)
    shape = _fit_shape(shape, arr.size)
    if math.prod(shape) != arr.size:
        return None, f"{arr.size} values do not fit the shape {'x'.join(map(str, shape))}"
    return display_array(arr.reshape(shape)), None


def image_key(fmap: Any, lists: Any = None) -> Optional[str]:
    """The feature of a record that holds an encoded image (JPEG, PNG ...), as ``head``
    recognises one: ``image/encoded`` first, then the others in sorted order; then, in
    the same order, a feature list (``lists``) whose first step holds one (the frames of
    a SequenceExample, as MediaPipe writes ``image/encoded``)."""
    from .._decoding import sniff_image

    keys = sorted(fmap, key=lambda k: (k != "image/encoded", k))
    for key in keys:
        value = _bytes_feature(fmap, key)
        if value is not None and sniff_image(value) is not None:
            return str(key)
    for key in sorted(lists or (), key=lambda k: (k != "image/encoded", k)):
        steps = lists[key].feature
        value = _bytes_feature({key: steps[0]}, key) if steps else None
        if value is not None and sniff_image(value) is not None:
            return str(key)
    return None


def _frames(
    msg: Any, key: str, args: argparse.Namespace, names: Optional[list[str]], room: int
) -> list[tuple[Optional[np.ndarray], Optional[str], Optional[str]]]:
    """Up to ``room`` frames of the feature list ``key``: (image, label, why not)."""
    context = msg.context.feature
    lists = msg.feature_lists.feature_list
    steps = lists[key].feature
    if not steps:
        return [(None, "-", f"feature list {key!r} has no steps")]
    labels = lists[args.label_key].feature if args.label_key in lists else None
    out: list[tuple[Optional[np.ndarray], Optional[str], Optional[str]]] = []
    for j, step in enumerate(steps[:room]):
        arr, why = _preview_feature(step, key, context, args, what=f"step {j} of feature list")
        if labels is not None:
            label = _label_text({"_": labels[j]}, "_", names) if j < len(labels) else "-"
        else:
            label = _label_text(context, args.label_key, names)
        out.append((arr, label, why))
    return out


def _label_text(fmap: Any, key: Optional[str], names: Optional[list[str]]) -> Optional[str]:
    if not key:
        return None
    if key not in fmap:
        return "?"
    f = fmap[key]
    kind = f.WhichOneof("kind")
    if kind is None or not getattr(f, kind).value:
        return "-"
    v = getattr(f, kind).value[0]
    if kind == "bytes_list":
        return bytes(v).decode("utf-8", "replace")
    if kind == "float_list":
        return str(np.float32(v))
    label = int(v)
    if names is not None and 0 <= label < len(names) and names[label] != str(label):
        return f"{label} {names[label]}"
    return str(label)


def _load_names(args: argparse.Namespace, first_path: str) -> Optional[list[str]]:
    path = args.labels
    if path is None:
        guess = os.path.join(os.path.dirname(first_path), "labels.txt")
        if not os.path.isfile(guess):
            return None
        path = guess
    with open(path, encoding="utf-8", errors="replace") as f:
        return [line.rstrip("\r\n") for line in f]


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    from .._decoding import draw_grid, pil

    if args.n < 1:
        raise UsageError("-n must be at least 1")
    tfds = tfds_inputs(args.files)
    if tfds is not None:
        from ._tfds import preview

        try:
            return preview(tfds, args, ctx.quiet)
        except TFRecordError:
            raise  # a problem with the data (exit 1), not with the command line
        except ValueError as e:
            raise UsageError(str(e)) from None
    paths = expand_inputs(args.files)
    pil()
    names = _load_names(args, paths[0]) if args.label_key else None
    cells: list[tuple[Optional[np.ndarray], Optional[str]]] = []
    problems = 0
    seen = 0
    # Each distinct problem is printed once (a wrong --image-key fails every record
    # the same way); repeats are counted and summed up at the end.
    repeats: dict[str, int] = {}

    def report(path: str, index: int, why: str) -> None:
        if why in repeats:
            repeats[why] += 1
        else:
            repeats[why] = 0
            print(f"{path}: record {index}: {why}", file=sys.stderr)

    for path in paths:  # TensorBoard events, ELWC...: said as info, head and verify say it
        kind = file_kind(path, args.skip + args.n)
        if not kind.is_example:
            print(
                f"{PROG}: error: {path}: the records are {kind.describe()}: no image to preview",
                file=sys.stderr,
            )
            return EXIT_DATA
    gen = iter_records(ctx, paths, "preview")
    try:
        for path, rec in gen:
            if seen < args.skip:
                seen += 1
                continue
            if len(cells) >= args.n:
                break
            msg = parse_any(rec.data)
            if msg is None:
                problems += 1
                report(path, rec.index, "not a tf.train.Example")
                cells.append((None, "?"))
                continue
            fmap = msg.context.feature
            lists = msg.feature_lists.feature_list
            if args.image_key is None:
                args.image_key = image_key(fmap, lists)
                if args.image_key is None:
                    raise UsageError(
                        f"{path}: record {rec.index} has no feature holding an encoded image "
                        f"({feature_names(msg)}): pass --image-key"
                    )
                if not ctx.quiet:
                    what = "feature" if args.image_key in fmap else "feature list"
                    print(f"{PROG}: images from {what} {args.image_key!r}", file=sys.stderr)
            key = args.image_key
            if key not in fmap and key in lists:  # a SequenceExample's frames
                for arr, label, why in _frames(msg, key, args, names, args.n - len(cells)):
                    if arr is None:
                        problems += 1
                        report(path, rec.index, why or "cannot show this frame")
                    cells.append((arr, label))
                continue
            if key not in fmap:
                arr, why = None, f"no feature {key!r} ({feature_names(msg)})"
            else:
                arr, why = _preview_feature(fmap[key], key, fmap, args)
            if arr is None:
                problems += 1
                report(path, rec.index, why or "cannot show this record")
            cells.append((arr, _label_text(fmap, args.label_key, names)))
    finally:
        gen.close()
    for why, more in repeats.items():
        if more:
            what = f" ({why})" if len(repeats) > 1 else ""
            print(
                f"{PROG}: the same problem{what} in {plural(more, 'more record')}",
                file=sys.stderr,
            )
    if not cells:
        print(f"{PROG}: error: no records to preview", file=sys.stderr)
        return EXIT_DATA
    if all(arr is None for arr, _ in cells):
        print(f"{PROG}: error: no image could be shown; nothing written", file=sys.stderr)
        return EXIT_DATA
    grid = draw_grid(cells, cell=args.cell, cols=args.cols)
    save_grid(grid, args.output)
    if not ctx.quiet:
        print(
            f"wrote {args.output}: {plural(len(cells), 'image')}, {grid.width}x{grid.height} pixels"
        )
    return EXIT_DATA if problems else EXIT_OK


def register(sub: Any) -> None:
    """Add the sub-command and its options."""
    p = add_command(
        sub,
        "preview",
        run,
        "draw the first images of a file as a labelled grid (PNG)",
        "Draw the first N images as a grid, each with its label underneath. Encoded "
        "images (JPEG, PNG, ...) are decoded; raw pixel bytes or int64/float lists need a "
        "shape: --shape, or stored features (KEY/shape, or height/width[/channels|depth] "
        "beside the key); square images of one channel are recognised. --dtype says how "
        "to read raw bytes (default: KEY/dtype if stored, else uint8). Integer labels are "
        "named from --labels, or a labels.txt next to the file.",
        examples_text(
            f"{PROG} preview train-00000-of-00004 --image-key image/encoded "
            "--label-key image/class/label -o grid.png",
            f"{PROG} preview mnist.tfrecord --image-key image_raw --label-key label "
            "--shape 28x28 -n 64 -o mnist.png",
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument(
        "--image-key",
        metavar="K",
        help="the feature holding images (default: the first record's feature holding an "
        "encoded image, image/encoded first; a TFDS directory: its first Image feature; an "
        "RLDS directory: a step's first Image feature, one cell per step)",
    )
    p.add_argument("--split", metavar="S", help="TFDS directory: the split (default train)")
    p.add_argument("--label-key", metavar="L", help="the feature holding labels")
    p.add_argument("-n", type=int, default=16, metavar="N", help="images to draw (default 16)")
    p.add_argument("-o", "--output", required=True, metavar="PNG", help="the picture to write")
    p.add_argument("--shape", type=_parse_shape, metavar="HxW[xC]", help="shape of raw images")
    p.add_argument(
        "--dtype", metavar="DTYPE", help="NumPy dtype of raw image bytes (uint8, float32...)"
    )
    p.add_argument("--labels", metavar="FILE", help="class names, one per line")
    p.add_argument(
        "--cell",
        type=positive_int,
        default=96,
        metavar="PX",
        help="cell size in pixels (default 96)",
    )
    p.add_argument("--cols", type=positive_int, metavar="N", help="columns (default: square grid)")
    p.add_argument(
        "--skip",
        type=int,
        default=0,
        metavar="K",
        help="start after K records (an RLDS directory: K episodes)",
    )
