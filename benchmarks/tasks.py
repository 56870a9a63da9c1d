"""The benchmark tasks: one small set-up function per (task, implementation).

A set-up function takes the :class:`Context` (data files, manifest, scratch
directory), does everything that should not be timed (imports, building a
``tf.data`` pipeline, loading the arrays to write), and returns its *variants*:
``{name: run}``, where each ``run()`` does the timed work once and returns a
:class:`Count` (records and bytes processed, and a checksum the runner compares
with the manifest, so that a fast wrong answer is caught).

Implementations:

``tfrecord_lite``  our public API only (``import tfrecord_lite as tfr``)
``tensorflow``     TensorFlow's own tools (several ``tf.data`` variants; the best one counts)
``tfrecord``       the ``tfrecord`` package on PyPI (it does not verify CRCs)
``naive``          struct + crcmod + protobuf + NumPy, one record at a time
``machine``        machine limits, timed beside the ImageNet-like raw read: ``readinto``
                   of the file into a preallocated buffer, and each CRC32C backend

Each run happens in a fresh child process (``python -m benchmarks.tasks``, see
:func:`main`), which prints one JSON line prefixed by ``BENCH_RESULT``. A name
missing from our API makes the cell "n/a (missing: name)" instead of an error.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import struct
import sys
import time
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from . import data

BATCH = 1024
RESULT_PREFIX = "BENCH_RESULT "


@dataclass(frozen=True)
class Count:
    """What one timed run processed."""

    records: int
    nbytes: int
    check: int
    #: A file the run wrote (write tasks): its size is reported, then it is read back.
    out: str = ""
    #: What the run used, when it chooses for itself (e.g. the deflate backend).
    note: str = ""


@dataclass(frozen=True)
class TaskInfo:
    """A benchmark task, as the runner and the report see it."""

    name: str
    title: str
    dataset: str
    unit: str  # "krec/s" or "MB/s"
    #: How the target is judged: "tf" (ours / TF >= value), "limit" (ours >= value x
    #: min(file read, CRC)), "rss" (peak RSS growth <= value MiB), or "" (none).
    target_kind: str = ""
    target_value: float = 0.0
    #: The TensorFlow variant the ratio is taken against; None: TF's best variant.
    tf_ref: Optional[str] = None
    #: What the checksum is: "payload" (record bytes), "label" (label column), "written".
    check: str = "label"
    #: Exactly one timed run per child (big files; the RSS measurement).
    single_shot: bool = False
    #: Records per batch (parse tasks).
    batch: int = BATCH
    #: Our variant the ratio and target use; None: our best variant.
    ours_ref: Optional[str] = None

    @property
    def target_text(self) -> str:
        if self.target_kind == "tf":
            ref = self.tf_ref or "TF best"
            return f">= {self.target_value:g}x {ref}"
        if self.target_kind == "limit":
            return f">= {self.target_value:.0%} of min(file read, CRC)"
        if self.target_kind == "rss":
            return f"peak RSS growth <= {self.target_value:g} MiB"
        return ""


def _parse_tasks() -> list[TaskInfo]:
    """Read + parse at batch 1024 and 256 on every Example data set, and on sequences."""
    out = []
    for dataset, title, unit, target in (
        ("mnist", "MNIST-like", "krec/s", 2.0),
        ("mnist_gzip", "MNIST-like, one GZIP file", "krec/s", 0.0),
        ("imagenet", "ImageNet-like (~110 KB)", "MB/s", 2.0),
        ("tabular", "Tabular (~170 B, fixed layout)", "krec/s", 1.5),
        ("taxi", "Taxi-like (TFX, values missing, GZIP shards)", "krec/s", 1.5),
        ("transformed", "Transformed (key order per record, GZIP shards)", "krec/s", 1.5),
        ("sequence", "SequenceExample (floats + JPEG per step)", "krec/s", 0.0),
        ("tfx_taxi", "Real TFX taxi shards (2 GZIP shards, not generated)", "krec/s", 0.0),
    ):
        for batch in (1024, 256):
            name = f"{dataset}_parse" + ("" if batch == 1024 else f"_{batch}")
            out.append(
                TaskInfo(
                    name,
                    f"{title} read + parse, batch {batch}",
                    dataset,
                    unit,
                    "tf" if target else "",
                    target,
                    batch=batch,
                )
            )
    return out


TASKS: dict[str, TaskInfo] = {
    t.name: t
    for t in [
        TaskInfo(
            "mnist_raw",
            "MNIST raw records, CRC verified",
            "mnist",
            "krec/s",
            "tf",
            1.5,
            tf_ref="tf_record_iterator",
            check="payload",
        ),
        *_parse_tasks(),
        TaskInfo(
            "mnist_single",
            "MNIST-like, TF tutorial: .map(parse_single_example), a record at a time",
            "mnist",
            "krec/s",
            "tf",
            2.0,
        ),
        TaskInfo(
            "mnist_write",
            "MNIST write from NumPy arrays",
            "mnist",
            "krec/s",
            "tf",
            8.0,
            check="written",
        ),
        TaskInfo(
            "imagenet_raw",
            "ImageNet-like raw records (~110 KB)",
            "imagenet",
            "MB/s",
            "limit",
            0.7,
            tf_ref="tf_record_iterator",
            check="payload",
        ),
        TaskInfo(
            "gzip_raw",
            "GZIP MNIST raw records",
            "mnist_gzip",
            "krec/s",
            "tf",
            1.5,
            tf_ref="tf_record_iterator",
            check="payload",
            ours_ref="tf_record_iterator",
        ),
        TaskInfo(
            "gzip_write",
            "GZIP write, taxi-like records, TF default options",
            "taxi",
            "krec/s",
            "tf",
            5.0,
            check="written",
            ours_ref="write_all (auto)",
        ),
        TaskInfo(
            "stream_rss",
            "Stream a big file (raw), peak RSS",
            "big",
            "MB/s",
            "rss",
            64,
            tf_ref="tf_record_iterator",
            check="payload",
            single_shot=True,
        ),
    ]
}

#: The row "our parse rate as % of our raw-read rate": (parse task, raw task, target).
PARSE_OF_RAW = ("mnist_parse", "mnist_raw", 0.60)


class Missing(Exception):
    """A name our API does not have (yet)."""


def need(module: Any, *names: str) -> None:
    """Raise :class:`Missing` unless ``module`` has every attribute in ``names``."""
    for name in names:
        if not hasattr(module, name):
            raise Missing(name)


@dataclass
class Context:
    """What a set-up function gets: the data files and a scratch directory."""

    data_dir: Path
    manifest: dict[str, Any]
    work_dir: Path

    def entry(self, dataset: str) -> dict[str, Any]:
        e: dict[str, Any] = self.manifest["datasets"][dataset]
        return e

    def path(self, dataset: str) -> str:
        return str(self.data_dir / self.entry(dataset)["file"])

    def paths(self, dataset: str) -> list[str]:
        """Every file of a data set (the shards of a sharded one)."""
        entry = self.entry(dataset)
        return [str(self.data_dir / f) for f in entry.get("files", [entry["file"]])]


Run = Callable[[], Count]
Setup = Callable[[Context, TaskInfo], dict[str, Run]]
IMPLS: dict[tuple[str, str], Setup] = {}


def impl(*keys: tuple[str, str]) -> Callable[[Setup], Setup]:
    """Register a set-up function for one or more (task, implementation) pairs."""

    def register(fn: Setup) -> Setup:
        for key in keys:
            IMPLS[key] = fn
        return fn

    return register


def implementations(task: str) -> list[str]:
    return [name for (t, name) in IMPLS if t == task]


# --------------------------------------------------------------------------- helpers


def _count_raw(records: Iterable[Any], file_bytes: int) -> Count:
    n = 0
    payload = 0
    for r in records:
        n += 1
        payload += len(r)
    return Count(n, file_bytes, payload)


def _first_column_sum(values: Any) -> int:
    arr = np.asarray(values)
    if arr.ndim > 1:
        arr = arr.reshape(arr.shape[0], -1)[:, 0]
    return int(arr.sum())


def _mnist_columns(ctx: Context) -> dict[str, np.ndarray]:
    with np.load(ctx.data_dir / "mnist_columns.npz") as z:
        return {k: z[k] for k in z.files}


def _out_path(ctx: Context, name: str) -> str:
    return str(ctx.work_dir / f"{name}.tfrecord")


def _read_back(path: str) -> int:
    """Total payload of a written file, every CRC verified by tfrecord_lite's reader."""
    tfr = _tfr()

    return sum(len(r) for r in tfr.tf_record_iterator(path))


# --------------------------------------------------------------------------- tfrecord_lite


def _tfr() -> Any:
    """tfrecord_lite, typed Any: parts of the API are checked with :func:`need` at run time."""
    import tfrecord_lite

    return tfrecord_lite


def _lite_dtype(tfr: Any, kind: str) -> Any:
    name = {"bytes": "string", "int64": "int64", "float32": "float32"}[kind]
    return getattr(tfr, name, name)


def lite_features(tfr: Any, dataset: str) -> dict[str, Any]:
    if dataset in data.TAXI_SETS:
        return {
            name: tfr.VarLenFeature(_lite_dtype(tfr, kind))
            if how == "var"
            else tfr.FixedLenFeature([], _lite_dtype(tfr, kind))
            for name, kind, how in data.TAXI_SPEC
        }
    return {
        f.name: tfr.FixedLenFeature(list(f.shape), _lite_dtype(tfr, f.kind))
        for f in data.SPECS[dataset]
    }


def _parse_task_names() -> list[str]:
    return [t.name for t in TASKS.values() if "_parse" in t.name]


#: The parse tasks the peers that only know fixed-length Examples run.
FIXED_PARSE = ("mnist_parse", "tabular_parse", "imagenet_parse")


@impl(
    ("mnist_raw", "tfrecord_lite"),
    ("imagenet_raw", "tfrecord_lite"),
    ("gzip_raw", "tfrecord_lite"),
    ("stream_rss", "tfrecord_lite"),
)
def lite_raw(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    tfr = _tfr()

    need(tfr, "tf_record_iterator")
    path, size = ctx.path(task.dataset), ctx.entry(task.dataset)["file_bytes"]
    variants = {"tf_record_iterator": lambda: _count_raw(tfr.tf_record_iterator(path), size)}
    if ctx.entry(task.dataset)["compression"] and not task.single_shot:
        for backend in _deflate_backends():
            variants[f"tf_record_iterator ({backend} inflate)"] = _with_backend(
                backend, lambda: _count_raw(tfr.tf_record_iterator(path), size)
            )
    return variants


DEFLATE_ENV = "TFRECORD_LITE_DEFLATE_BACKEND"


def _deflate_backends() -> list[str]:
    """The deflate backends installed here (empty if this tfrecord_lite has none)."""
    try:
        from tfrecord_lite._files import _compress
    except ImportError:
        return []
    return list(_compress.available_deflate_backends())


def _with_backend(backend: str, fn: Run) -> Run:
    """``fn`` run with ``TFRECORD_LITE_DEFLATE_BACKEND=backend`` (read per reader/writer)."""
    return _with_env(DEFLATE_ENV, backend, fn)


#: Caps tfrecord_lite's own threads (read per reader); 1: GZIP/ZLIB inflate inline.
THREADS_ENV = "TFRECORD_LITE_THREADS"


def _with_env(name: str, value: str, fn: Run) -> Run:
    """``fn`` run with the environment variable ``name`` set to ``value``."""

    def run() -> Count:
        old = os.environ.get(name)
        os.environ[name] = value
        try:
            return fn()
        finally:
            if old is None:
                del os.environ[name]
            else:
                os.environ[name] = old

    return run


def lite_parse(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    tfr = _tfr()
    need(tfr, "TFRecordDataset", "parse_example", "FixedLenFeature")
    paths, size = ctx.paths(task.dataset), ctx.entry(task.dataset)["file_bytes"]
    source: Any = paths[0] if len(paths) == 1 else paths
    key = data.CHECK_KEY[task.dataset]
    batch = task.batch
    if task.dataset == "sequence":
        return _lite_sequence(tfr, source, size, batch)
    features = lite_features(tfr, task.dataset)
    parse_example = tfr.parse_example

    def count(batches: Iterable[Any]) -> Count:
        n = check = 0
        for parsed in batches:
            labels = parsed[key]
            n += len(labels)
            check += _first_column_sum(labels)
        return Count(n, size, check)

    def batch_then_parse() -> Count:
        # TensorFlow's pipeline, spelled the same way.
        batches = tfr.TFRecordDataset(source).batch(batch)
        return count(parse_example(b, features) for b in batches)

    variants = {"batch+parse_example": batch_then_parse}
    ds = tfr.TFRecordDataset(source)
    if hasattr(ds, "parse"):
        # The dataset's own fused pipeline (and with a background prefetch thread).
        pipeline = ds.parse(features).batch(batch)
        variants["parse.batch"] = lambda: count(pipeline)
        if hasattr(pipeline, "prefetch"):
            prefetched = pipeline.prefetch(2)
            variants["parse.batch.prefetch"] = lambda: count(prefetched)
        autotune = getattr(tfr, "AUTOTUNE", None)
        if autotune is not None:
            # As tf.data at its best: the parse on every core (num_parallel_calls).
            threaded = ds.parse(features, num_parallel_calls=autotune).batch(batch)
            variants["parse(AUTOTUNE).batch"] = lambda: count(threaded)
        if ctx.entry(task.dataset)["compression"]:
            # The same pipeline with no thread of ours: a local GZIP file is
            # inflated inline instead of ahead in a background thread.
            variants[f"parse.batch ({THREADS_ENV}=1)"] = _with_env(
                THREADS_ENV, "1", lambda: count(pipeline)
            )
    return variants


def _sequence_specs(make_fixed: Any, make_seq: Any, dtype: Any) -> tuple[Any, Any]:
    context = {f.name: make_fixed(list(f.shape), dtype(f.kind)) for f in data.SEQUENCE_CONTEXT}
    steps = {f.name: make_seq(list(f.shape), dtype(f.kind)) for f in data.SEQUENCE_STEPS}
    return context, steps


def _lite_sequence(tfr: Any, source: Any, size: int, batch: int) -> dict[str, Run]:
    need(tfr, "parse_sequence_example", "FixedLenSequenceFeature")
    context, steps = _sequence_specs(
        tfr.FixedLenFeature, tfr.FixedLenSequenceFeature, lambda k: _lite_dtype(tfr, k)
    )
    parse = tfr.parse_sequence_example

    def count(parsed: Iterable[Any]) -> Count:
        n = check = 0
        for ctx_values, _, _ in parsed:
            labels = ctx_values["label"]
            n += len(labels)
            check += _first_column_sum(labels)
        return Count(n, size, check)

    def run() -> Count:
        # TensorFlow's pipeline, spelled the same way.
        return count(parse(b, context, steps) for b in tfr.TFRecordDataset(source).batch(batch))

    variants = {"batch+parse_sequence_example": run}
    ds = tfr.TFRecordDataset(source).batch(batch)
    if hasattr(ds, "parse_sequence"):
        # The dataset's own op: consecutive batches extracted together.
        pipeline = ds.parse_sequence(context, steps)
        variants["batch.parse_sequence"] = lambda: count(pipeline)
        autotune = getattr(tfr, "AUTOTUNE", None)
        if autotune is not None:
            threaded = ds.parse_sequence(context, steps, num_parallel_calls=autotune)
            variants["batch.parse_sequence(AUTOTUNE)"] = lambda: count(threaded)
    return variants


for _name in _parse_task_names():
    impl((_name, "tfrecord_lite"))(lite_parse)


@impl(("mnist_single", "tfrecord_lite"))
def lite_single(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    """TensorFlow's tutorial pipeline, ported by replacing ``tf.`` with ``tfr.``."""
    tfr = _tfr()
    need(tfr, "data", "io")
    path, size = ctx.path(task.dataset), ctx.entry(task.dataset)["file_bytes"]
    spec = lite_features(tfr, task.dataset)
    key = data.CHECK_KEY[task.dataset]
    pipeline = tfr.data.TFRecordDataset(path).map(lambda r: tfr.io.parse_single_example(r, spec))

    def run() -> Count:
        n = check = 0
        for example in pipeline:
            n += 1
            check += int(np.asarray(example[key]).reshape(-1)[0])
        return Count(n, size, check)

    return {"map(parse_single_example)": run}


@impl(("mnist_write", "tfrecord_lite"))
def lite_write(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    tfr = _tfr()
    need(tfr, "write_examples")
    cols = _mnist_columns(ctx)
    out = _out_path(ctx, "tfrecord_lite")
    size = ctx.entry(task.dataset)["file_bytes"]
    bytes_rows = getattr(tfr, "bytes_rows", None)

    def run() -> Count:
        images = cols["image_raw"]
        # One bytes value per image (a plain uint8 array would be an int64 list, as in TF):
        # tfr.bytes_rows is the zero-copy way; a list of bytes where it does not exist.
        image_col = bytes_rows(images) if bytes_rows else [row.tobytes() for row in images]
        columns = {"image_raw": image_col, "label": cols["label"], "dim": cols["dim"]}
        tfr.write_examples(out, columns)
        return Count(len(images), size, 0)

    return {"write_examples" + ("(bytes_rows)" if bytes_rows else "(list of bytes)"): run}


def _taxi_records(ctx: Context) -> list[bytes]:
    """The taxi-like records (read untimed, with our reader), to be written again."""
    tfr = _tfr()
    return [r for path in ctx.paths("taxi") for r in tfr.tf_record_iterator(path)]


@impl(("gzip_write", "tfrecord_lite"))
def lite_gzip_write(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    tfr = _tfr()
    records = _taxi_records(ctx)
    size = ctx.entry(task.dataset)["framed_bytes"]

    def make(backend: str, out: str) -> Run:
        def run() -> Count:
            with tfr.TFRecordWriter(out, "GZIP") as w:
                w.write_all(records)
                # ``auto`` decides on the first 128 KiB: which encoder it kept.
                zobj = getattr(w, "_zobj", None)
                note = getattr(zobj, "backend", "") or backend
                if getattr(zobj, "level", None) is not None:
                    note += f" level {zobj.level}"  # e.g. zlib-ng level 5
            return Count(len(records), size, 0, out, note)

        return _with_backend(backend, run)

    variants = {"write_all (auto)": make("auto", _out_path(ctx, "lite-auto"))}
    for backend in _deflate_backends():
        variants[f"write_all ({backend})"] = make(backend, _out_path(ctx, f"lite-{backend}"))
    return variants


# --------------------------------------------------------------------------- TensorFlow


def _import_tf() -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    return tf


def tf_features(tf: Any, dataset: str) -> dict[str, Any]:
    dtypes = {"bytes": tf.string, "int64": tf.int64, "float32": tf.float32}
    if dataset in data.TAXI_SETS:
        return {
            name: tf.io.VarLenFeature(dtypes[kind])
            if how == "var"
            else tf.io.FixedLenFeature([], dtypes[kind])
            for name, kind, how in data.TAXI_SPEC
        }
    return {
        f.name: tf.io.FixedLenFeature(list(f.shape), dtypes[f.kind]) for f in data.SPECS[dataset]
    }


@impl(
    ("mnist_raw", "tensorflow"),
    ("imagenet_raw", "tensorflow"),
    ("gzip_raw", "tensorflow"),
    ("stream_rss", "tensorflow"),
)
def tf_raw(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    tf = _import_tf()
    entry = ctx.entry(task.dataset)
    path, size, comp = ctx.path(task.dataset), entry["file_bytes"], entry["compression"]
    options = tf.io.TFRecordOptions(compression_type=comp) if comp else None

    def iterator() -> Count:
        return _count_raw(tf.compat.v1.io.tf_record_iterator(path, options), size)

    def dataset() -> Count:
        n = payload = 0
        ds = tf.data.TFRecordDataset(path, compression_type=comp).batch(BATCH)
        for batch in ds.as_numpy_iterator():
            n += len(batch)
            payload += sum(map(len, batch))
        return Count(n, size, payload)

    variants = {"tf_record_iterator": iterator}
    if not task.single_shot:
        variants["TFRecordDataset.batch"] = dataset
    return variants


def tf_parse(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    tf = _import_tf()
    entry = ctx.entry(task.dataset)
    paths, size, comp = ctx.paths(task.dataset), entry["file_bytes"], entry["compression"]
    key = data.CHECK_KEY[task.dataset]
    autotune = tf.data.AUTOTUNE
    batch = task.batch

    if task.dataset == "sequence":
        dtypes = {"bytes": tf.string, "int64": tf.int64, "float32": tf.float32}
        context, steps = _sequence_specs(
            tf.io.FixedLenFeature, tf.io.FixedLenSequenceFeature, dtypes.__getitem__
        )

        def parse(x: Any) -> Any:
            ctx_values, _, _ = tf.io.parse_sequence_example(x, context, steps)
            return ctx_values

    else:
        spec = tf_features(tf, task.dataset)

        def parse(x: Any) -> Any:
            return tf.io.parse_example(x, spec)

    def source() -> Any:
        return tf.data.TFRecordDataset(paths, compression_type=comp or None)

    # Built (and `parse` traced) here, untimed; each run iterates a fresh iterator.
    pipelines = {
        "batch.map": source().batch(batch).map(parse),
        "batch.map.prefetch": source().batch(batch).map(parse).prefetch(autotune),
        "batch.map(AUTOTUNE).prefetch": source()
        .batch(batch)
        .map(parse, num_parallel_calls=autotune)
        .prefetch(autotune),
    }

    def runner(ds: Any) -> Run:
        def run() -> Count:
            n = check = 0
            # Tensors as tf.data hands them out; only the checked column becomes NumPy
            # (as_numpy_iterator would also densify the sparse ones).
            for b in ds:
                labels = b[key].numpy()
                n += len(labels)
                check += _first_column_sum(labels)
            return Count(n, size, check)

        return run

    return {name: runner(ds) for name, ds in pipelines.items()}


for _name in _parse_task_names():
    impl((_name, "tensorflow"))(tf_parse)


@impl(("mnist_single", "tensorflow"))
def tf_single(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    """The tutorial's ``TFRecordDataset(f).map(lambda r: parse_single_example(r, spec))``."""
    tf = _import_tf()
    path, size = ctx.path(task.dataset), ctx.entry(task.dataset)["file_bytes"]
    spec = tf_features(tf, task.dataset)
    key = data.CHECK_KEY[task.dataset]

    def parse(r: Any) -> Any:
        return tf.io.parse_single_example(r, spec)

    pipelines = {
        "map": tf.data.TFRecordDataset(path).map(parse),
        "map(AUTOTUNE).prefetch": tf.data.TFRecordDataset(path)
        .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE),
    }

    def runner(ds: Any) -> Run:
        def run() -> Count:
            n = check = 0
            for example in ds:
                n += 1
                check += int(example[key].numpy().reshape(-1)[0])
            return Count(n, size, check)

        return run

    return {name: runner(ds) for name, ds in pipelines.items()}


@impl(("gzip_write", "tensorflow"))
def tf_gzip_write(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    tf = _import_tf()
    records = _taxi_records(ctx)
    size = ctx.entry(task.dataset)["framed_bytes"]
    out = _out_path(ctx, "tensorflow")
    options = tf.io.TFRecordOptions(compression_type="GZIP")

    def run() -> Count:
        with tf.io.TFRecordWriter(out, options) as w:
            for r in records:
                w.write(r)
        return Count(len(records), size, 0, out)

    return {"TFRecordWriter(GZIP)": run}


@impl(("mnist_write", "tensorflow"))
def tf_write(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    tf = _import_tf()
    cols = _mnist_columns(ctx)
    out = _out_path(ctx, "tensorflow")
    size = ctx.entry(task.dataset)["file_bytes"]
    train = tf.train

    def run() -> Count:
        images, labels, dims = cols["image_raw"], cols["label"], cols["dim"]
        with tf.io.TFRecordWriter(out) as w:
            for i in range(len(images)):
                feature = {
                    "image_raw": train.Feature(
                        bytes_list=train.BytesList(value=[images[i].tobytes()])
                    ),
                    "label": train.Feature(int64_list=train.Int64List(value=[int(labels[i])])),
                    "dim": train.Feature(int64_list=train.Int64List(value=dims[i].tolist())),
                }
                example = train.Example(features=train.Features(feature=feature))
                w.write(example.SerializeToString())
        return Count(len(images), size, 0)

    return {"Example+TFRecordWriter": run}


# --------------------------------------------------------------------------- tfrecord (PyPI)


@impl(
    ("mnist_raw", "tfrecord"),
    ("imagenet_raw", "tfrecord"),
    ("gzip_raw", "tfrecord"),
)
def vahidk_raw(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    from tfrecord import reader

    entry = ctx.entry(task.dataset)
    path, size = ctx.path(task.dataset), entry["file_bytes"]
    comp = "gzip" if entry["compression"] == "GZIP" else None
    return {
        "tfrecord_iterator (no CRC check)": lambda: _count_raw(
            reader.tfrecord_iterator(path, compression_type=comp), size
        )
    }


@impl(
    ("mnist_single", "tfrecord"),
    ("mnist_parse", "tfrecord"),
    ("tabular_parse", "tfrecord"),
    ("imagenet_parse", "tfrecord"),
)
def vahidk_parse(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    import tfrecord

    path, size = ctx.path(task.dataset), ctx.entry(task.dataset)["file_bytes"]
    kinds = {"bytes": "byte", "int64": "int", "float32": "float"}
    description = {f.name: kinds[f.kind] for f in data.SPECS[task.dataset]}
    key = data.CHECK_KEY[task.dataset]

    def run() -> Count:
        n = check = 0
        for example in tfrecord.tfrecord_loader(path, None, description):
            n += 1
            check += int(np.asarray(example[key]).reshape(-1)[0])
        return Count(n, size, check)

    return {"tfrecord_loader (per record, no CRC check)": run}


@impl(("mnist_write", "tfrecord"))
def vahidk_write(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    import tfrecord

    cols = _mnist_columns(ctx)
    out = _out_path(ctx, "tfrecord")
    size = ctx.entry(task.dataset)["file_bytes"]

    def run() -> Count:
        images, labels, dims = cols["image_raw"], cols["label"], cols["dim"]
        w = tfrecord.TFRecordWriter(out)
        for i in range(len(images)):
            w.write(
                {
                    "image_raw": (images[i].tobytes(), "byte"),
                    "label": (int(labels[i]), "int"),
                    "dim": (dims[i].tolist(), "int"),
                }
            )
        w.close()
        return Count(len(images), size, 0)

    return {"TFRecordWriter": run}


# --------------------------------------------------------------------------- naive baseline


def _naive_crc() -> Callable[[bytes], int]:
    import crcmod.predefined

    crc = crcmod.predefined.mkCrcFun("crc-32c")

    def masked(data: bytes) -> int:
        c = int(crc(data))
        return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    return masked


def _naive_records(path: str, gz: bool) -> Iterator[bytes]:
    masked = _naive_crc()
    unpack = struct.Struct("<QI").unpack
    unpack_crc = struct.Struct("<I").unpack
    with gzip.open(path, "rb") if gz else open(path, "rb") as f:
        read = f.read
        while True:
            header = read(12)
            if not header:
                return
            length, length_crc = unpack(header)
            if masked(header[:8]) != length_crc:
                raise ValueError("bad length CRC")
            record = read(length)
            (data_crc,) = unpack_crc(read(4))
            if masked(record) != data_crc:
                raise ValueError("bad data CRC")
            yield record


@impl(
    ("mnist_raw", "naive"),
    ("imagenet_raw", "naive"),
    ("gzip_raw", "naive"),
)
def naive_raw(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    entry = ctx.entry(task.dataset)
    path, size, gz = ctx.path(task.dataset), entry["file_bytes"], entry["compression"] == "GZIP"
    return {"struct+crcmod": lambda: _count_raw(_naive_records(path, gz), size)}


@impl(
    ("mnist_parse", "naive"),
    ("tabular_parse", "naive"),
    ("imagenet_parse", "naive"),
)
def naive_parse(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    from tfrecord_lite.example_pb2 import Example

    path, size = ctx.path(task.dataset), ctx.entry(task.dataset)["file_bytes"]
    spec = data.SPECS[task.dataset]
    key = data.CHECK_KEY[task.dataset]
    np_types = {"int64": np.int64, "float32": np.float32}

    def to_arrays(rows: dict[str, list[Any]]) -> dict[str, np.ndarray]:
        out = {}
        for f in spec:
            if f.kind == "bytes":
                out[f.name] = np.array(rows[f.name], dtype=object)
            else:
                out[f.name] = np.stack(rows[f.name])
        return out

    def run() -> Count:
        n = check = 0
        rows: dict[str, list[Any]] = {f.name: [] for f in spec}
        for record in _naive_records(path, False):
            fmap = Example.FromString(record).features.feature
            for f in spec:
                if f.kind == "bytes":
                    rows[f.name].append(fmap[f.name].bytes_list.value[0])
                elif f.kind == "int64":
                    rows[f.name].append(np.array(fmap[f.name].int64_list.value, np.int64))
                else:
                    rows[f.name].append(np.array(fmap[f.name].float_list.value, np_types[f.kind]))
            if len(rows[key]) == BATCH:
                batch = to_arrays(rows)
                n += len(batch[key])
                check += _first_column_sum(batch[key])
                rows = {f.name: [] for f in spec}
        if rows[key]:
            batch = to_arrays(rows)
            n += len(batch[key])
            check += _first_column_sum(batch[key])
        return Count(n, size, check)

    return {"struct+crcmod+protobuf": run}


@impl(("mnist_write", "naive"))
def naive_write(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    from tfrecord_lite.example_pb2 import Example

    masked = _naive_crc()
    cols = _mnist_columns(ctx)
    out = _out_path(ctx, "naive")
    size = ctx.entry(task.dataset)["file_bytes"]
    pack_len = struct.Struct("<Q").pack
    pack_crc = struct.Struct("<I").pack

    def run() -> Count:
        images, labels, dims = cols["image_raw"], cols["label"], cols["dim"]
        with open(out, "wb") as f:
            for i in range(len(images)):
                ex = Example()
                fmap = ex.features.feature
                fmap["image_raw"].bytes_list.value.append(images[i].tobytes())
                fmap["label"].int64_list.value.append(int(labels[i]))
                fmap["dim"].int64_list.value.extend(dims[i].tolist())
                record = ex.SerializeToString()
                header = pack_len(len(record))
                f.write(header + pack_crc(masked(header)) + record + pack_crc(masked(record)))
        return Count(len(images), size, 0)

    return {"protobuf+struct+crcmod": run}


# --------------------------------------------------------------------------- machine limits


@impl(("imagenet_raw", "machine"))
def machine_limits(ctx: Context, task: TaskInfo) -> dict[str, Run]:
    from tfrecord_lite._record import _crc

    path, size = ctx.path(task.dataset), ctx.entry(task.dataset)["file_bytes"]

    def reader(block: int) -> Run:
        buf = bytearray(block)

        def run() -> Count:
            total = 0
            with open(path, "rb", buffering=0) as f:
                while True:
                    got = f.readinto(buf)
                    if not got:
                        break
                    total += got
            return Count(0, total, total)

        return run

    blob = Path(path).read_bytes()
    chunk = 128 * 1024
    chunks = [blob[i : i + chunk] for i in range(0, len(blob), chunk)]

    def crc(fn: Callable[[bytes], int]) -> Run:
        def run() -> Count:
            for c in chunks:
                fn(c)
            return Count(0, size, size)

        return run

    variants = {"file read 1 MiB": reader(2**20), "file read 8 MiB": reader(8 * 2**20)}
    for name in _crc.available_crc_backends():
        if name != "crcmod-python":
            variants[f"crc32c {name}"] = crc(_crc.get_crc_function(name))
    return variants


# --------------------------------------------------------------------------- child process


def _maxrss_kb() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _proc_status_kb(field: str) -> Optional[int]:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _reset_peak_rss() -> Optional[int]:
    """Reset the peak-RSS mark (Linux ``clear_refs`` 5); return the current RSS, kB.

    ``ru_maxrss`` cannot be used as is: Linux carries it over ``exec`` from the
    parent, so a child's ``ru_maxrss`` is never below the runner's RSS. ``VmHWM``
    belongs to this process's own address space, and can be reset so that it
    covers the timed runs only.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return _proc_status_kb("VmRSS")


#: Seconds of untimed warm-up in each child before its variants are timed (:func:`run_child`).
WARMUP_S = 3.0


def run_child(
    task_name: str, impl_name: str, data_dir: Path, work_dir: Path, min_time: float, max_inner: int
) -> dict[str, Any]:
    """Set up one implementation of one task, time its variants; return the result dict."""
    task = TASKS[task_name]
    result: dict[str, Any] = {"task": task_name, "impl": impl_name}
    try:
        import tfrecord_lite as tfr

        result["crc_backend"] = tfr.crc_backend()
    except Exception as err:  # pragma: no cover - reported, not fatal
        result["crc_backend"] = f"unavailable: {err}"
    manifest = json.loads((data_dir / data.MANIFEST).read_text())
    ctx = Context(data_dir, manifest, work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        variants = IMPLS[(task_name, impl_name)](ctx, task)
        result["setup_s"] = time.perf_counter() - t0
        if not task.single_shot:
            # Untimed warm-up: every variant in turn for WARMUP_S seconds in all, so what
            # a process does once (imports, the page cache, TensorFlow's graph tracing,
            # the compiled kernels loading in the background) is not inside a timed round.
            warm_until = time.perf_counter() + WARMUP_S
            while True:
                for fn in variants.values():
                    fn()
                if time.perf_counter() >= warm_until:
                    break
        rss_before = _reset_peak_rss()
        result["rss_source"] = "VmHWM" if rss_before is not None else "ru_maxrss"
        result["rss_before_kb"] = rss_before if rss_before is not None else _maxrss_kb()
        times: dict[str, list[float]] = {name: [] for name in variants}
        counts: dict[str, Count] = {}
        start = time.perf_counter()
        rounds = 0
        while True:
            for name, fn in variants.items():  # alternate variants inside the child too
                t = time.perf_counter()
                count = fn()
                times[name].append(time.perf_counter() - t)
                if name in counts and counts[name] != count:
                    raise RuntimeError(f"{name}: runs disagree: {counts[name]} vs {count}")
                counts[name] = count
            rounds += 1
            if task.single_shot or rounds >= max_inner:
                break
            if time.perf_counter() - start >= min_time * len(variants):
                break
        result["ru_maxrss_kb"] = _maxrss_kb()
        peak = _proc_status_kb("VmHWM") if rss_before is not None else None
        result["maxrss_kb"] = peak if peak is not None else result["ru_maxrss_kb"]
        out_bytes: dict[str, int] = {}
        if task.check == "written":
            for name, count in counts.items():
                out = count.out or _out_path(ctx, impl_name)
                out_bytes[name] = os.path.getsize(out)
                counts[name] = Count(
                    count.records, count.nbytes, _read_back(out), count.out, count.note
                )
                os.unlink(out)
        result["variants"] = {
            name: {
                "times": times[name],
                "records": counts[name].records,
                "nbytes": counts[name].nbytes,
                "check": counts[name].check,
                "note": counts[name].note,
                "out_bytes": out_bytes.get(name),
            }
            for name in variants
        }
        result["status"] = "ok"
    except Missing as err:
        result["status"] = "missing"
        result["missing"] = str(err)
    except ImportError as err:
        result["status"] = "missing"
        result["missing"] = f"import {err.name}" if err.name else str(err)
    except Exception as err:
        result["status"] = "error"
        result["error"] = f"{type(err).__name__}: {err}"[:500]
        result["traceback"] = traceback.format_exc()[-3000:]
    return result


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description="Run one benchmark (task, implementation) once.")
    p.add_argument("--task", required=True, choices=sorted(TASKS))
    p.add_argument("--impl", required=True)
    p.add_argument("--data-dir", type=Path, default=data.DATA_DIR)
    p.add_argument("--work-dir", type=Path, default=data.DATA_DIR / "out")
    p.add_argument("--min-time", type=float, default=0.5)
    p.add_argument("--max-inner", type=int, default=20)
    args = p.parse_args(argv)
    result = run_child(
        args.task, args.impl, args.data_dir, args.work_dir, args.min_time, args.max_inner
    )
    sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
