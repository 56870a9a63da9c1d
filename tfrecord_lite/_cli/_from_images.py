"""``tfrecord-lite from-images``: a folder of class sub-folders of images to
TFRecord shards and ``labels.txt``, locally (worker processes) or on Ray.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
from collections.abc import Iterator
from typing import Any, Optional

from ._common import (
    EXIT_DATA,
    EXIT_OK,
    PROG,
    Ctx,
    UsageError,
    add_command,
    compression_arg,
    examples_text,
    positive_int,
    remove_inprogress,
    say,
)
from ._output import plural


def _parse_size(text: str) -> tuple[int, int]:
    parts = text.lower().replace("*", "x").split("x")
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected WIDTHxHEIGHT like 224x224, got {text!r}"
        ) from None
    if len(nums) == 1:
        nums = nums * 2
    if len(nums) != 2 or min(nums) < 1:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT like 224x224, got {text!r}")
    return nums[0], nums[1]


def _default_workers(n_tasks: int) -> int:
    cpus = os.cpu_count() or 1
    if n_tasks < 64:
        return 1
    return max(1, min(cpus, 8))


def _from_images_on_ray(args: argparse.Namespace, ctx: Ctx) -> int:
    """``from-images --engine ray``: one Ray task per shard (tfrecord_lite.ray)."""
    from .._tables import require_ray_data
    from ..ray import images_to_tfrecords

    require_ray_data()  # the install hint, if Ray is missing
    import ray

    if not ray.is_initialized():
        ray.init(address=args.ray_address, include_dashboard=False, log_to_driver=False)
    result = images_to_tfrecords(
        args.dir,
        args.out,
        shards=args.shards,
        size=args.size,
        encode=args.encode,
        channels=args.channels,
        quality=args.quality,
        shuffle=args.shuffle,
        seed=args.seed,
        compression=compression_arg(args.compression) or None,
    )
    for rel, why in result["skipped"]:
        print(f"{PROG}: skipped {os.path.join(args.dir, rel)}: {why}", file=sys.stderr)
    paths, written = result["paths"], result["written"]
    if not ctx.quiet:
        where = paths[0] if len(paths) == 1 else f"{paths[0]} ... {paths[-1]}"
        classes = plural(len(result["classes"]), "class", "classes")
        print(f"wrote {plural(written, 'image')} of {classes} to {where} and {result['labels']}")
    if written == 0:
        print(f"{PROG}: error: no image could be read from {args.dir!r}", file=sys.stderr)
        return EXIT_DATA
    return EXIT_DATA if result["skipped"] and not args.allow_skips else EXIT_OK


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    if args.engine == "ray":
        if not os.path.isdir(args.dir):
            raise UsageError(f"{args.dir!r} is not a directory")
        if args.index:
            raise UsageError("--index is not supported with --engine ray")
        return _from_images_on_ray(args, ctx)
    from .._decoding import ImageOptions, convert_task, pil, scan_image_folder, worker_pool
    from .._files import ShardedWriter

    if not os.path.isdir(args.dir):
        if os.path.exists(args.dir):
            raise UsageError(f"{args.dir!r} is not a directory")
        raise FileNotFoundError(2, "No such file or directory", args.dir)
    pil()  # fail now, with the install hint, if Pillow is missing
    folder = scan_image_folder(args.dir)
    if not folder.classes:
        print(
            f"{PROG}: error: {args.dir!r} has no sub-folders: put the images of each class "
            "in a sub-folder named after the class (e.g. DIR/cat/1.jpg, DIR/dog/2.jpg)",
            file=sys.stderr,
        )
        return EXIT_DATA
    out = args.out
    if os.path.isdir(out) or out.endswith(("/", os.sep)):
        out = os.path.join(out, os.path.basename(os.path.abspath(args.dir)) or "images")
    out_dir = os.path.dirname(out) or "."
    os.makedirs(out_dir, exist_ok=True)
    options = ImageOptions(
        size=args.size, encode=args.encode, channels=args.channels, quality=args.quality
    )
    order = list(folder.files)
    if args.shuffle:
        random.Random(args.seed).shuffle(order)
    tasks = [(folder.root, rel, label, folder.classes[label], options) for rel, label in order]
    counts = [0] * len(folder.classes)
    for _, label in order:
        counts[label] += 1
    if not ctx.quiet:
        for name, c in zip(folder.classes, counts):
            if c == 0:
                print(f"{PROG}: warning: class {name!r} has no images", file=sys.stderr)
        if folder.ignored:
            names = ", ".join(folder.ignored[:3]) + (", ..." if len(folder.ignored) > 3 else "")
            print(
                f"{PROG}: note: ignored {plural(len(folder.ignored), 'file')} that are not "
                f"images by name or not in a class folder: {names}",
                file=sys.stderr,
            )
    workers = args.workers or _default_workers(len(tasks))
    shards = args.shards
    skipped: list[str] = []
    written = 0
    pools = contextlib.ExitStack()
    pool = None
    if workers > 1 and len(tasks) > 1:
        # workers ignore Ctrl-C: the parent reports it once and cleans up
        pool = pools.enter_context(worker_pool(workers))
    comp = compression_arg(args.compression)
    try:
        writer = ShardedWriter(out, num_shards=shards, compression=comp, write_index=args.index)
    except BaseException:
        pools.close()
        raise
    try:
        if pool is not None:
            chunk = max(1, min(32, len(tasks) // (workers * 4)))
            results: Iterator[tuple[Optional[bytes], Optional[str]]] = pool.imap(
                convert_task, tasks, chunksize=chunk
            )
        else:
            results = map(convert_task, tasks)
        with ctx.bar(len(tasks), "images", "img") as bar:
            for task, (example, why) in zip(tasks, results):
                if example is None:
                    skipped.append(task[1])
                    say(bar, f"{PROG}: skipped {os.path.join(args.dir, task[1])}: {why}", err=True)
                else:
                    writer.write(example)
                    written += 1
                bar.update(1)
    except BaseException:
        writer.abort()
        remove_inprogress(out, shards)
        raise
    finally:
        pools.close()
    paths = writer.close()
    labels_path = os.path.join(out_dir, "labels.txt")
    with open(labels_path, "w", encoding="utf-8", errors="surrogateescape", newline="\n") as f:
        f.write("".join(name + "\n" for name in folder.classes))
    if not ctx.quiet:
        where = paths[0] if len(paths) == 1 else f"{paths[0]} ... {paths[-1]}"
        classes = plural(len(folder.classes), "class", "classes")
        note = ""
        if skipped:
            verb = "was" if len(skipped) == 1 else "were"
            note = f"; {plural(len(skipped), 'file')} could not be decoded and {verb} skipped"
        print(f"wrote {plural(written, 'image')} of {classes} to {where} and {labels_path}{note}")
    if written == 0:
        print(f"{PROG}: error: no image could be read from {args.dir!r}", file=sys.stderr)
        return EXIT_DATA
    return EXIT_DATA if skipped and not args.allow_skips else EXIT_OK


def register(sub: Any) -> None:
    """Add the sub-command and its options."""
    p = add_command(
        sub,
        "from-images",
        run,
        "turn a folder of class sub-folders of images into TFRecords",
        "DIR has one sub-folder per class. Each image becomes an Example with "
        "image/encoded (or image_raw with --encode raw), image/format, image/class/label "
        "(the class's position in sorted order), image/class/text, image/height, "
        "image/width, image/channels and image/filename. Images are dealt round-robin "
        "over the shards OUT-00000-of-0000N; labels.txt (one class per line) is written "
        "beside them. Files that cannot be decoded are reported and skipped (exit code "
        "1 unless --allow-skips). The output is the same whatever --workers is.",
        examples_text(
            f"{PROG} from-images photos/ out/photos --shards 4 --size 224x224",
            f"{PROG} from-images digits/ out/ --encode raw --channels 1 --workers 4",
        ),
    )
    p.add_argument("dir", metavar="DIR")
    p.add_argument("out", metavar="OUT", help="output prefix (or an existing directory)")
    p.add_argument("--shards", type=positive_int, default=1, metavar="N")
    p.add_argument(
        "--size",
        type=_parse_size,
        metavar="WxH",
        help="resize every image to WIDTHxHEIGHT (default: keep)",
    )
    p.add_argument(
        "--encode",
        choices=("jpeg", "png", "raw"),
        default="jpeg",
        help="how to store pixels (default jpeg; a JPEG/PNG file that needs no "
        "change is stored byte for byte)",
    )
    p.add_argument(
        "--channels",
        choices=("auto", "1", "3"),
        default="auto",
        help="1 grayscale, 3 RGB, auto: grayscale stays grayscale (default)",
    )
    p.add_argument("--quality", type=int, default=95, help="JPEG quality (default 95)")
    p.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help="processes decoding images (default: one per core for large folders)",
    )
    p.add_argument("--shuffle", action="store_true", help="shuffle the images (see --seed)")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed (default 0)")
    p.add_argument("--compression", type=str.upper, choices=("GZIP", "ZLIB", "NONE"), default=None)
    p.add_argument("--index", action="store_true", help="write an index file beside each shard")
    p.add_argument(
        "--allow-skips",
        action="store_true",
        help="exit 0 even when some files could not be decoded",
    )
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="ray: one Ray task per shard, on the cluster of --ray-address (the folders "
        "must be on a file system every node sees; needs tfrecord-lite-np[ray])",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="Ray cluster to join (default: RAY_ADDRESS, else a local Ray)",
    )
