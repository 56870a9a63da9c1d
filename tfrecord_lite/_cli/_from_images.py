"""``tfrecord-lite from-images``: a folder of class sub-folders of images to
TFRecord shards and ``labels.txt``, locally (worker processes) or on Ray.
"""

from __future__ import annotations

import argparse
import os
import sys
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
    """``from-images --runner ray``: one Ray task per shard (tfrecord_lite.ray)."""
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


def _format(args: argparse.Namespace) -> str:
    """``--format``, or the deprecated ``--encode`` (which meant ``--format``)."""
    if args.encode is not None:
        if args.format is not None and args.format != args.encode:
            raise UsageError("--encode is the old name of --format: give only --format")
        print(
            f"{PROG}: warning: --encode is deprecated, use --format {args.encode}",
            file=sys.stderr,
        )
        return str(args.encode)
    return str(args.format or "keep")


def _runner(args: argparse.Namespace) -> str:
    """``--runner``, or the deprecated ``--engine`` (which meant ``--runner``)."""
    if args.engine is not None:
        if args.runner is not None and args.runner != args.engine:
            raise UsageError("--engine is the old name of --runner: give only --runner")
        print(
            f"{PROG}: warning: --engine is deprecated, use --runner {args.engine}",
            file=sys.stderr,
        )
        return str(args.engine)
    return str(args.runner or "local")


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    fmt = _format(args)
    if _runner(args) == "ray":
        if not os.path.isdir(args.dir):
            raise UsageError(f"{args.dir!r} is not a directory")
        if args.index:
            raise UsageError("--index is not supported with --runner ray")
        args.encode = fmt  # ImageOptions takes "keep" under its old name too
        return _from_images_on_ray(args, ctx)
    from .._decoding import IMAGE_EXTENSIONS, pil, scan_image_folder, write_image_folder

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
    loose = [
        name
        for name in folder.ignored
        if os.sep not in name and os.path.splitext(name)[1].lower() in IMAGE_EXTENSIONS
    ]
    if loose:  # their class is unknown: writing only the sub-folders' images would lose them
        names = ", ".join(loose[:3]) + (", ..." if len(loose) > 3 else "")
        print(
            f"{PROG}: error: {args.dir!r} holds {plural(len(loose), 'image')} outside a class "
            f"sub-folder ({names}): move each into the sub-folder named after its class "
            "(e.g. DIR/cat/1.jpg), or point at a folder whose images all sit in class folders",
            file=sys.stderr,
        )
        return EXIT_DATA
    out = args.out
    if os.path.isdir(out) or out.endswith(("/", os.sep)):
        out = os.path.join(out, os.path.basename(os.path.abspath(args.dir)) or "images")
    if not ctx.quiet:
        counts = [0] * len(folder.classes)
        for _, label in folder.files:
            counts[label] += 1
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
    channels = None if args.channels in (None, "auto") else int(args.channels)
    with ctx.bar(len(folder.files), "images", "img") as bar:

        def on_image(rel: str, why: Optional[str]) -> None:
            if why is not None:
                say(bar, f"{PROG}: skipped {os.path.join(args.dir, rel)}: {why}", err=True)
            bar.update(1)

        try:
            summary = write_image_folder(
                args.dir,
                out,
                shards=args.shards,
                format=fmt,
                channels=channels,
                quality=args.quality,
                size=args.size,
                shuffle=args.shuffle,
                seed=args.seed,
                compression=compression_arg(args.compression),
                write_index=args.index,
                workers=args.workers or _default_workers(len(folder.files)),
                on_image=on_image,
            )
        except BaseException:
            remove_inprogress(out, args.shards)
            raise
    paths, written, skipped = summary.paths, summary.written, summary.skipped
    if not ctx.quiet:
        where = paths[0] if len(paths) == 1 else f"{paths[0]} ... {paths[-1]}"
        classes = plural(len(summary.classes), "class", "classes")
        note = ""
        if skipped:
            verb = "was" if len(skipped) == 1 else "were"
            note = (
                f"; {plural(len(skipped), 'file')} could not be decoded or converted and "
                f"{verb} skipped"
            )
        print(
            f"wrote {plural(written, 'image')} of {classes} to {where} and {summary.labels}{note}"
        )
        print(f"images: {summary.describe()}")
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
        "image/encoded (or image_raw with --format raw), image/format, image/class/label "
        "(the class's position in sorted order), image/class/text, image/height, "
        "image/width, image/channels and image/filename. Images are dealt round-robin "
        "over the shards OUT-00000-of-0000N; labels.txt (one class per line) is written "
        "beside them. Files that cannot be decoded are reported and skipped (exit code "
        "1 unless --allow-skips). Each file's bytes are stored as they are unless "
        "--format, --channels or --size asks for a change; the summary counts every "
        "change made. The output is the same whatever --workers is.",
        examples_text(
            f"{PROG} from-images photos/ out/photos --shards 4 --size 224x224",
            f"{PROG} from-images digits/ out/ --format raw --channels 1 --workers 4",
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
        "--format",
        choices=("keep", "jpeg", "png", "raw"),
        default=None,
        help="keep (default): each file's bytes as they are, its format in image/format; "
        "jpeg / png: every image in that format (a file already in it that needs no "
        "change is kept byte for byte); raw: uint8 pixels under image_raw",
    )
    p.add_argument(
        "--encode",
        choices=("jpeg", "png", "raw"),
        default=None,
        help=argparse.SUPPRESS,  # the deprecated name of --format
    )
    p.add_argument(
        "--channels",
        choices=("auto", "1", "3", "4"),
        default=None,
        help="1 grayscale, 3 RGB, 4 RGBA (default: keep each image's; --format jpeg "
        "drops alpha, which JPEG cannot hold, and says so)",
    )
    p.add_argument(
        "--quality", type=int, default=95, help="JPEG quality of converted images (default 95)"
    )
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
        "--runner",
        choices=("local", "ray"),
        default=None,
        help="local (default): this process; ray: one Ray task per shard, on the cluster of "
        "--ray-address (the folders must be on a file system every node sees; needs "
        "tfrecord-lite-np[ray])",
    )
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        default=None,
        help=argparse.SUPPRESS,  # the deprecated name of --runner ("engine" is the parse engine's word)
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="Ray cluster to join (default: RAY_ADDRESS, else a local Ray)",
    )
