"""Real TensorFlow as the oracle for schema parsing (``make interop``).

Seeded random schemas and records (missing keys, empty ``Feature()``s, defaults,
padding, VarLen, SparseFeature, RaggedFeature with every partition type and
nested partitions, FixedLenSequenceFeature, SequenceExample context + feature
lists; wrong types, wrong counts, missing required features, bad partitions)
go through ``tf.io.parse_example`` / ``parse_single_example`` /
``parse_sequence_example`` / ``parse_single_sequence_example`` and through ours.

* where TensorFlow returns, we return the same values, dtypes and shapes
  (``SparseTensor`` components; ``RaggedTensor`` flat values, every level's
  row splits and uniform row length);
* where TensorFlow raises, we raise ``ParseError`` / ``ValueError`` whose
  message names the same key, and the same record where TensorFlow names one;
* records are serialized four ways (TensorFlow's protos, ours,
  ``tfr.encode_example`` when it exists, hand-written wire bytes with unpacked
  lists or merged duplicate keys): both parsers read each the same.

Inputs where TensorFlow is known to crash (SIGSEGV on an unpacked float list
longer than a FixedLenFeature; SIGFPE on a 0-size FixedLenSequenceFeature) are
not generated. Where a corrupted input fails only our validation (ragged
partitions, sparse indices: TensorFlow returns malformed tensors) the case is
counted as deliberate; the other deliberate differences have their own tests at
the bottom. The case counts are printed (``-s``) and written to
``$TFR_INTEROP_COUNTS`` when that is set.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import struct
import warnings
from collections import Counter
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, Callable, Optional

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore", category=DeprecationWarning)

tf = pytest.importorskip("tensorflow")
tf.get_logger().setLevel("ERROR")

from _helpers import ld, varint  # noqa: E402

import tfrecord_lite as tfr  # noqa: E402
from tfrecord_lite import example_pb2, feature_pb2  # noqa: E402

N_EXAMPLE_CASES = 260
N_SEQUENCE_CASES = 160
COUNTS: Counter[str] = Counter()

KINDS = ("i", "f", "b")  # int64_list, float_list, bytes_list
TF_DT = {"i": tf.int64, "f": tf.float32, "b": tf.string}
OUR_DT = {"i": tfr.int64, "f": tfr.float32, "b": tfr.string}


# --------------------------------------------------------------------------- values


def rand_values(rng: random.Random, kind: str, n: int) -> list[Any]:
    if kind == "i":
        pool = [0, 1, -1, 7, 2**31, -(2**63), 2**63 - 1, 300]
        return [rng.choice(pool) if rng.random() < 0.3 else rng.randint(-50, 50) for _ in range(n)]
    if kind == "f":
        return [float(np.float32(rng.uniform(-10, 10))) for _ in range(n)]
    pool = [b"", b"a", b"\x00", b"ab\x00\x00", "é".encode(), bytes(range(256))]
    return [
        rng.choice(pool) if rng.random() < 0.4 else rng.randbytes(rng.randint(0, 5))
        for _ in range(n)
    ]


# A record is {key: None | (kind, [values])}; None is an empty Feature().
Record = dict[str, Optional[tuple[str, list[Any]]]]


# --------------------------------------------------------------------------- encodings


def wire_feature(value: Optional[tuple[str, list[Any]]], packed: bool) -> bytes:
    if value is None:
        return b""
    kind, vals = value
    if kind == "b":
        return ld(1, b"".join(ld(1, v) for v in vals))
    if kind == "f":
        if packed:
            body = ld(1, struct.pack(f"<{len(vals)}f", *vals)) if vals else b""
        else:
            body = b"".join(b"\x0d" + struct.pack("<f", v) for v in vals)
        return ld(2, body)
    if packed:
        body = ld(1, b"".join(varint(v) for v in vals)) if vals else b""
    else:
        body = b"".join(b"\x08" + varint(v) for v in vals)
    return ld(3, body)


def wire_features(rec: Record, packed: bool) -> bytes:
    return b"".join(
        ld(1, ld(1, k.encode()) + ld(2, wire_feature(v, packed))) for k, v in rec.items()
    )


def tf_feature(value: Optional[tuple[str, list[Any]]]) -> Any:
    if value is None:
        return tf.train.Feature()
    kind, vals = value
    if kind == "i":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=vals))
    if kind == "f":
        return tf.train.Feature(float_list=tf.train.FloatList(value=vals))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=vals))


def our_feature(value: Optional[tuple[str, list[Any]]]) -> feature_pb2.Feature:
    f = feature_pb2.Feature()
    if value is not None:
        kind, vals = value
        field = {"i": f.int64_list, "f": f.float_list, "b": f.bytes_list}[kind]
        field.SetInParent()
        field.value.extend(vals)
    return f


def encode_ours_api(rec: Record) -> Optional[bytes]:
    enc = getattr(tfr, "encode_example", None)
    if enc is None:
        return None
    arg: dict[str, Any] = {}
    for k, v in rec.items():
        if v is None or v[0] == "b":
            arg[k] = our_feature(v)  # copied unchanged (an empty list would be Feature())
        elif v[0] == "i":
            arg[k] = np.array(v[1], dtype=np.int64)
        else:
            arg[k] = np.array(v[1], dtype=np.float32)
    out: bytes = enc(arg)
    return out


def serialize_example(rng: random.Random, rec: Record, unpacked: bool = True) -> tuple[str, bytes]:
    """One of several encodings that TensorFlow and protobuf both read the same way.

    ``unpacked=False`` for corrupted cases: TensorFlow 2.21 crashes (SIGSEGV) on an
    unpacked float list longer than a FixedLenFeature's size.
    """
    how = rng.choice(["tf", "ours", "api", "unpacked" if unpacked else "tf", "merged"])
    if how == "api":
        data = encode_ours_api(rec)
        if data is not None:
            return how, data
        how = "ours"
    if how == "tf":
        ex = tf.train.Example()
        for k, v in rec.items():
            ex.features.feature[k].CopyFrom(tf_feature(v))
        return how, ex.SerializeToString()
    if how == "ours":
        ex2 = example_pb2.Example()
        for k, v in rec.items():
            ex2.features.feature[k].CopyFrom(our_feature(v))
        return how, ex2.SerializeToString()
    if how == "unpacked":
        return how, ld(1, wire_features(rec, packed=False))
    # merged: an earlier Example with decoy values for some keys, then the real one
    # (the last value per key wins). Decoys are never followed by an empty Feature(),
    # where TensorFlow differs (see test_deliberate_concat_empty_feature).
    decoy: Record = {}
    for k, v in rec.items():
        if v is not None and rng.random() < 0.5:
            kind = rng.choice(KINDS)
            decoy[k] = (kind, rand_values(rng, kind, rng.randint(0, 3)))
    decoy["zz_unused"] = ("i", [1])
    return how, ld(1, wire_features(decoy, True)) + ld(1, wire_features(rec, True))


def serialize_sequence(rng: random.Random, ctx: Record, lists: dict[str, list[Any]]) -> bytes:
    if rng.random() < 0.5:
        s = tf.train.SequenceExample()
        for k, v in ctx.items():
            s.context.feature[k].CopyFrom(tf_feature(v))
        for k, steps in lists.items():
            fl = s.feature_lists.feature_list[k]
            for st in steps:
                fl.feature.add().CopyFrom(tf_feature(st))
        return s.SerializeToString()
    packed = rng.random() < 0.5
    body = b""
    if ctx or rng.random() < 0.5:
        body += ld(1, wire_features(ctx, packed))
    fls = b"".join(
        ld(1, ld(1, k.encode()) + ld(2, b"".join(ld(1, wire_feature(st, packed)) for st in steps)))
        for k, steps in lists.items()
    )
    if lists or rng.random() < 0.5:
        body += ld(2, fls)
    return body


# --------------------------------------------------------------------------- comparison


def tf_np(x: Any) -> np.ndarray:
    v = x.numpy()
    return np.array(v, dtype=object) if x.dtype == tf.string else np.asarray(v)


def tf_norm(x: Any) -> Any:
    if isinstance(x, tf.SparseTensor):
        return ("sparse", x.indices.numpy(), tf_np(x.values), x.dense_shape.numpy())
    if isinstance(x, tf.RaggedTensor):
        levels = []
        v = x
        while isinstance(v, tf.RaggedTensor):
            url = v.uniform_row_length
            levels.append((v.row_splits.numpy(), None if url is None else int(url)))
            v = v.values
        return ("ragged", tf_np(v), levels)
    return ("dense", tf_np(x))


def our_norm(x: Any) -> Any:
    if isinstance(x, tfr.SparseValue):
        return ("sparse", x.indices, x.values, x.dense_shape)
    if isinstance(x, tfr.RaggedValue):
        levels = []
        v: Any = x
        while isinstance(v, tfr.RaggedValue):
            levels.append((v.row_splits, v.uniform_row_length))
            v = v.values
        return ("ragged", v, levels)
    assert isinstance(x, np.ndarray), type(x)
    return ("dense", x)


def same_array(ours: np.ndarray, theirs: np.ndarray, what: str) -> None:
    assert isinstance(ours, np.ndarray), (what, type(ours))
    assert ours.dtype == theirs.dtype, (what, ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape, (what, ours.shape, theirs.shape)
    if ours.dtype == object:
        assert all(isinstance(v, bytes) for v in ours.reshape(-1)), what
        assert ours.tolist() == theirs.tolist(), what
    else:
        assert np.array_equal(ours, theirs, equal_nan=ours.dtype.kind == "f"), (what, ours, theirs)


def same_value(ours: Any, theirs: Any, what: str) -> None:
    o, t = our_norm(ours), tf_norm(theirs)
    assert o[0] == t[0], (what, o[0], t[0])
    if o[0] in ("dense", "sparse"):
        parts = ["indices", "values", "dense_shape"] if o[0] == "sparse" else ["value"]
        for a, b, part in zip(o[1:], t[1:], parts):
            same_array(a, b, f"{what}.{part}")
        return
    same_array(o[1], t[1], f"{what}.flat_values")
    assert len(o[2]) == len(t[2]), (what, "ragged levels", len(o[2]), len(t[2]))
    for k, ((os_, ou), (ts, tu)) in enumerate(zip(o[2], t[2])):
        same_array(os_, ts, f"{what}.row_splits[{k}]")
        assert ou == tu, (what, "uniform_row_length", k, ou, tu)


def same_dict(ours: dict[str, Any], theirs: dict[str, Any], what: str) -> None:
    assert sorted(ours) == sorted(theirs), (what, sorted(ours), sorted(theirs))
    for k in theirs:
        same_value(ours[k], theirs[k], f"{what}[{k}]")


def tf_message(err: BaseException) -> str:
    text = getattr(err, "message", None) or str(err)
    if text.startswith("{{function_node"):
        text = text.split("}} ", 1)[1]
    return re.sub(r" \[Op:\w+\].*$", "", text, flags=re.S)


def check_error_agrees(tf_err: BaseException, our_err: BaseException, what: str) -> None:
    """Both raised: ours is a ValueError naming the key (and record) TensorFlow names."""
    assert isinstance(our_err, ValueError), (what, our_err)
    msg = str(our_err)
    tmsg = tf_message(tf_err)
    keys = re.findall(
        r"(?:Key: |Feature: |Feature list: |Context feature: |Feature list '|feature with key |for feature )"
        r"([A-Za-z0-9_]+)",
        tmsg,
    )
    for key in keys:
        assert key in msg, (what, "key", key, tmsg, msg)
    name = re.search(r"Name: ([^,]+),", tmsg)
    if name and name.group(1) != "<unknown>":
        assert f"Name: {name.group(1)}," in msg, (what, "name", tmsg, msg)
    idx = re.search(r"Index: (\d+)\.", tmsg)
    if idx:
        assert f"Index: {idx.group(1)}." in msg, (what, "index", tmsg, msg)


#: Our messages for what only we check: ragged partitions and sparse indices.
VALIDATION = re.compile(
    r"not a valid row partition|cannot be split into rows|UniformRowLength\(0\)|"
    r"must be non-negative|must begin with 0|ids for \d+ values|out of range \[0|"
    r"one index per value"
)


def both(
    api: str, tf_call: Callable[[], Any], our_call: Callable[[], Any], expect_error: bool
) -> tuple[Any, Any]:
    tf_res: Any = None
    our_res: Any = None
    tf_err: Optional[BaseException] = None
    our_err: Optional[BaseException] = None
    try:
        tf_res = tf_call()
    except (tf.errors.InvalidArgumentError, ValueError) as e:
        tf_err = e
    try:
        our_res = our_call()
    except ValueError as e:
        our_err = e
    if tf_err is not None:
        assert our_err is not None, (api, "TensorFlow raised, we did not", tf_message(tf_err))
        check_error_agrees(tf_err, our_err, api)
        COUNTS[f"{api}: error"] += 1
        return None, None
    if our_err is not None and expect_error and VALIDATION.search(str(our_err)):
        # TensorFlow does not check this (even RaggedFeature(validate=True) misses
        # values not covered by a record's partitions in a batch): garbage out.
        COUNTS[f"{api}: deliberate (we validate, TensorFlow returns garbage)"] += 1
        return None, None
    assert our_err is None, (api, "we raised, TensorFlow did not", str(our_err))
    COUNTS[f"{api}: value"] += 1
    if expect_error:
        COUNTS[f"{api}: corrupted input both accept"] += 1
    return our_res, tf_res


def count_spec(spec: Any, where: str = "") -> None:
    COUNTS[f"spec{where}: {type(spec).__name__}"] += 1
    for p in getattr(spec, "partitions", ()):
        COUNTS[f"spec{where}: RaggedFeature partition {type(p).__name__}"] += 1
    if len(getattr(spec, "partitions", ())) > 1:
        COUNTS[f"spec{where}: RaggedFeature nested partitions"] += 1


# --------------------------------------------------------------------------- Example schemas


class Spec:
    """One generated feature: its TF and our spec, keys it reads, and a data maker."""

    def __init__(
        self,
        name: str,
        tf_spec: Any,
        our_spec: Any,
        make: Callable[[random.Random], Record],
        corrupt: list[Callable[[random.Random, Record], Optional[Record]]],
    ) -> None:
        self.name = name
        self.tf_spec = tf_spec
        self.our_spec = our_spec
        self.make = make
        self.corrupt = corrupt


def wrong_kind(kind: str, rng: random.Random) -> str:
    return rng.choice([k for k in KINDS if k != kind])


def retype(key: str, kind: str) -> Callable[[random.Random, Record], Optional[Record]]:
    """Corruption: ``key`` (read as ``kind``) gets a list of another kind."""

    def go(rng: random.Random, rec: Record) -> Optional[Record]:
        wk = wrong_kind(kind, rng)
        rec[key] = (wk, rand_values(rng, wk, rng.randint(0, 3)))
        return rec

    return go


def fixed_len(rng: random.Random, key: str, single_ok: bool) -> Spec:
    kind = rng.choice(KINDS)
    shape = rng.choice([[], [1], [2], [2, 3], [0], [3, 1]])
    size = math.prod(shape)
    default: Any = None
    if rng.random() < 0.5:
        dv = rand_values(rng, kind, size)
        if not shape:
            default = dv[0]
        elif kind == "f":
            default = np.array(dv, dtype=np.float32).reshape(shape)
        else:
            default = np.array(dv, dtype=object).reshape(shape).tolist()
    p_missing = 0.3 if default is not None else 0.0

    def make(r: random.Random) -> Record:
        x = r.random()
        if x < p_missing / 2:
            return {}
        if x < p_missing:
            return {key: None}
        return {key: (kind, rand_values(r, kind, size))}

    def wrong_count(r: random.Random, rec: Record) -> Optional[Record]:
        rec[key] = (kind, rand_values(r, kind, r.choice([c for c in (0, 1, 2, 5, 6) if c != size])))
        return rec

    def drop(r: random.Random, rec: Record) -> Optional[Record]:
        if default is not None:
            return None
        rec.pop(key, None)
        if r.random() < 0.5:
            rec[key] = None
        return rec

    return Spec(
        key,
        tf.io.FixedLenFeature(shape, TF_DT[kind], default_value=default),
        tfr.FixedLenFeature(shape, OUR_DT[kind], default_value=default),
        make,
        [retype(key, kind), wrong_count, drop],
    )


def var_len(rng: random.Random, key: str) -> Spec:
    kind = rng.choice(KINDS)

    def make(r: random.Random) -> Record:
        x = r.random()
        if x < 0.15:
            return {}
        if x < 0.25:
            return {key: None}
        return {key: (kind, rand_values(r, kind, r.randint(0, 4)))}

    return Spec(
        key,
        tf.io.VarLenFeature(TF_DT[kind]),
        tfr.VarLenFeature(OUR_DT[kind]),
        make,
        [retype(key, kind)],
    )


def fixed_len_seq(rng: random.Random, key: str) -> Spec:
    kind = rng.choice(KINDS)
    shape = rng.choice([[], [2], [3, 1], [1, 2]])
    size = math.prod(shape)
    default = rand_values(rng, kind, 1)[0] if rng.random() < 0.5 else None

    def make(r: random.Random) -> Record:
        x = r.random()
        if x < 0.15:
            return {}
        if x < 0.25:
            return {key: None}
        return {key: (kind, rand_values(r, kind, size * r.randint(0, 3)))}

    def bad_stride(r: random.Random, rec: Record) -> Optional[Record]:
        if size == 1:
            return None
        rec[key] = (kind, rand_values(r, kind, size * r.randint(0, 2) + r.randint(1, size - 1)))
        return rec

    return Spec(
        key,
        tf.io.FixedLenSequenceFeature(
            shape, TF_DT[kind], allow_missing=True, default_value=default
        ),
        tfr.FixedLenSequenceFeature(shape, OUR_DT[kind], allow_missing=True, default_value=default),
        make,
        [retype(key, kind), bad_stride],
    )


def sparse(rng: random.Random, key: str, fresh: Callable[[], str]) -> Spec:
    kind = rng.choice(KINDS)
    ndim = rng.choice([1, 1, 2])
    ikeys = [fresh() for _ in range(ndim)]
    vkey = fresh()
    sizes = [rng.randint(1, 6) for _ in range(ndim)]
    already_sorted = rng.random() < 0.2

    def make(r: random.Random) -> Record:
        x = r.random()
        if x < 0.2:
            return {}
        n = r.randint(0, 4)
        idx = [[r.randrange(s) for s in sizes] for _ in range(n)]
        if already_sorted:
            idx.sort()
        rec: Record = {vkey: (kind, rand_values(r, kind, n)) if n or r.random() < 0.5 else None}
        for d, k in enumerate(ikeys):
            rec[k] = ("i", [row[d] for row in idx]) if n or r.random() < 0.5 else None
        return rec

    tf_spec = tf.io.SparseFeature(
        ikeys if ndim > 1 else ikeys[0],
        vkey,
        TF_DT[kind],
        sizes if ndim > 1 else sizes[0],
        already_sorted=already_sorted,
    )
    our_spec = tfr.SparseFeature(
        ikeys if ndim > 1 else ikeys[0],
        vkey,
        OUR_DT[kind],
        sizes if ndim > 1 else sizes[0],
        already_sorted=already_sorted,
    )

    def miscount(r: random.Random, rec: Record) -> Optional[Record]:
        k = r.choice(ikeys)
        v = rec.get(k)
        rec[k] = ("i", [*(v[1] if v else []), 0])  # one index more than values
        return rec

    corrupt = [retype(vkey, kind), retype(ikeys[0], "i"), miscount]
    return Spec(key, tf_spec, our_spec, make, corrupt)


PARTITIONS = ["RowSplits", "RowLengths", "RowStarts", "RowLimits", "ValueRowIds", "Uniform"]


def partition_encode(kind: str, lengths: list[int]) -> list[int]:
    splits = [0]
    for n in lengths:
        splits.append(splits[-1] + n)
    if kind == "RowSplits":
        return splits
    if kind == "RowLengths":
        return lengths
    if kind == "RowStarts":
        return splits[:-1]
    if kind == "RowLimits":
        return splits[1:]
    assert kind == "ValueRowIds"
    return [i for i, n in enumerate(lengths) for _ in range(n)]


def ragged(rng: random.Random, key: str, fresh: Callable[[], str]) -> Spec:
    kind = rng.choice(KINDS)
    vkey = key if rng.random() < 0.4 else fresh()
    depth = rng.choice([0, 1, 1, 2, 2, 3])
    parts: list[tuple[str, Any]] = []
    for _ in range(depth):
        p = rng.choice(PARTITIONS)
        parts.append((p, rng.randint(1, 3) if p == "Uniform" else fresh()))
    splits_dtype = rng.choice(["int32", "int64"])

    def tf_part(p: tuple[str, Any]) -> Any:
        R = tf.io.RaggedFeature
        return R.UniformRowLength(p[1]) if p[0] == "Uniform" else getattr(R, p[0])(p[1])

    def our_part(p: tuple[str, Any]) -> Any:
        R = tfr.RaggedFeature
        return R.UniformRowLength(p[1]) if p[0] == "Uniform" else getattr(R, p[0])(p[1])

    def make(r: random.Random) -> Record:
        if r.random() < 0.1 and not any(p[0] == "RowSplits" for p in parts):
            return {}  # every key missing: 0 rows at every level
        # Outermost first: choose row counts; ValueRowIds cannot end in empty rows.
        rec: Record = {}
        nrows = r.randint(0, 3)
        for p, arg in parts:
            if p == "Uniform":
                nrows = nrows * arg
                continue
            lengths = [r.randint(0, 3) for _ in range(nrows)]
            if p == "ValueRowIds" and lengths:
                lengths[-1] = max(lengths[-1], 1)
            enc = partition_encode(p, lengths)
            rec[arg] = ("i", enc) if enc or r.random() < 0.5 else None
            nrows = sum(lengths)
        rec[vkey] = (kind, rand_values(r, kind, nrows)) if nrows or r.random() < 0.5 else None
        return rec

    def bad_partition(r: random.Random, rec: Record) -> Optional[Record]:
        keyed = [arg for p, arg in parts if p != "Uniform"]
        if not keyed:
            return None
        k = r.choice(keyed)
        v = rec.get(k)
        vals = list(v[1]) if v else []
        vals.append(r.randint(5, 9))  # an extra split / length / id past the values
        rec[k] = ("i", vals)
        return rec

    corrupt = [retype(vkey, kind), bad_partition]
    # validate=True so TensorFlow checks partitions (we always do).
    tf_spec = tf.io.RaggedFeature(
        TF_DT[kind],
        value_key=vkey,
        partitions=[tf_part(p) for p in parts],
        row_splits_dtype=getattr(tf, splits_dtype),
        validate=True,
    )
    our_spec = tfr.RaggedFeature(
        OUR_DT[kind],
        value_key=vkey,
        partitions=[our_part(p) for p in parts],
        row_splits_dtype=splits_dtype,
    )
    return Spec(key, tf_spec, our_spec, make, corrupt)


def example_case(seed: int) -> tuple[list[Spec], list[Record], Optional[int]]:
    rng = random.Random(seed)
    counter = iter(range(1000))

    def fresh() -> str:
        return f"k{next(counter)}"

    specs: list[Spec] = []
    for _ in range(rng.randint(1, 4)):
        t = rng.choice(["fixed", "fixed", "var", "seq", "sparse", "ragged", "ragged"])
        key = fresh()
        if t == "fixed":
            specs.append(fixed_len(rng, key, True))
        elif t == "var":
            specs.append(var_len(rng, key))
        elif t == "seq":
            specs.append(fixed_len_seq(rng, key))
        elif t == "sparse":
            specs.append(sparse(rng, key, fresh))
        else:
            specs.append(ragged(rng, key, fresh))
    n = rng.choice([1, 1, 2, 3, 4, 6])
    records: list[Record] = []
    for _ in range(n):
        rec: Record = {}
        for s in specs:
            rec.update(s.make(rng))
        if rng.random() < 0.3:
            rec[f"extra{rng.randint(0, 9)}"] = ("i", [1, 2])  # a key no spec reads
        keys = list(rec)
        rng.shuffle(keys)
        records.append({k: rec[k] for k in keys})
    bad: Optional[int] = None  # the corrupted record, if any
    if rng.random() < 0.3:
        i = rng.randrange(n)
        s = rng.choice(specs)
        out = rng.choice(s.corrupt)(rng, dict(records[i]))
        if out is not None:
            records[i] = out
            bad = i
    return specs, records, bad


def example_cases() -> Iterator[int]:
    return iter(range(N_EXAMPLE_CASES))


#: Both parse engines against TensorFlow: ``numpy`` (always there) and ``jit`` (numba,
#: which ``make interop`` installs with the ``jit`` extra). Forced for every batch size.
ENGINES = ("numpy", "jit")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", list(example_cases()))
def test_parse_example_matches_tensorflow(seed: int, engine: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    specs, records, bad = example_case(seed)
    rng = random.Random(seed * 7919 + 1)
    encoded = [serialize_example(rng, r, unpacked=bad is None) for r in records]
    for how, _ in encoded:
        COUNTS[f"encoding: {how}"] += 1
    for sp in specs:
        count_spec(sp.our_spec)
    data = [d for _, d in encoded]
    tf_specs = {s.name: s.tf_spec for s in specs}
    our_specs = {s.name: s.our_spec for s in specs}
    names = [f"rec{i}" for i in range(len(data))] if rng.random() < 0.3 else None
    ours, theirs = both(
        "parse_example",
        lambda: tf.io.parse_example(data, tf_specs, example_names=names),
        lambda: tfr.parse_example(data, our_specs, example_names=names),
        bad is not None,
    )
    if theirs is not None:
        same_dict(ours, theirs, f"seed {seed} parse_example")
    for i, rec in enumerate(data):
        ours1, theirs1 = both(
            "parse_single_example",
            lambda rec=rec: tf.io.parse_single_example(rec, tf_specs),
            lambda rec=rec: tfr.parse_single_example(rec, our_specs),
            i == bad,
        )
        if theirs1 is not None:
            same_dict(ours1, theirs1, f"seed {seed} parse_single_example[{i}]")


# --------------------------------------------------------------------------- SequenceExample


def sequence_case(
    seed: int,
) -> tuple[
    dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any], list[bytes], Optional[int]
]:
    rng = random.Random(10_000 + seed)
    counter = iter(range(1000))

    def fresh() -> str:
        return f"k{next(counter)}"

    ctx_specs: list[Spec] = []
    for _ in range(rng.randint(0, 2)):
        t = rng.choice(["fixed", "var", "ragged"])
        key = fresh()
        ctx_specs.append(
            fixed_len(rng, key, True)
            if t == "fixed"
            else var_len(rng, key)
            if t == "var"
            else ragged(rng, key, fresh)
        )
    # Sequence features: (name, value key, kind, spec type, shape, allow_missing)
    seq: list[tuple[str, str, str, str, list[int], bool]] = []
    for _ in range(rng.randint(0 if ctx_specs else 1, 3)):
        key = fresh()
        t = rng.choice(["flsf", "flsf", "var", "ragged"])
        kind = rng.choice(KINDS)
        vkey = fresh() if t == "ragged" and rng.random() < 0.3 else key
        seq.append((key, vkey, kind, t, rng.choice([[], [2], [1, 2]]), rng.random() < 0.5))
    tf_c = {s.name: s.tf_spec for s in ctx_specs}
    our_c = {s.name: s.our_spec for s in ctx_specs}
    tf_s: dict[str, Any] = {}
    our_s: dict[str, Any] = {}
    for key, vkey, kind, t, shape, allow in seq:
        if t == "flsf":
            tf_s[key] = tf.io.FixedLenSequenceFeature(shape, TF_DT[kind], allow_missing=allow)
            our_s[key] = tfr.FixedLenSequenceFeature(shape, OUR_DT[kind], allow_missing=allow)
        elif t == "var":
            tf_s[key] = tf.io.VarLenFeature(TF_DT[kind])
            our_s[key] = tfr.VarLenFeature(OUR_DT[kind])
        else:
            tf_s[key] = tf.io.RaggedFeature(TF_DT[kind], value_key=vkey)
            our_s[key] = tfr.RaggedFeature(OUR_DT[kind], value_key=vkey)
    n = rng.choice([1, 1, 2, 3, 5, 8, 20])  # 8 and more: the vectorized path too
    recs: list[tuple[Record, dict[str, list[Any]]]] = []
    for _ in range(n):
        ctx: Record = {}
        for s in ctx_specs:
            ctx.update(s.make(rng))
        lists: dict[str, list[Any]] = {}
        for _key, vkey, kind, t, shape, allow in seq:
            if (allow or t != "flsf") and rng.random() < 0.2:
                continue
            steps: list[Any] = []
            for _ in range(rng.randint(0, 4)):
                if t == "flsf":
                    steps.append((kind, rand_values(rng, kind, math.prod(shape))))
                else:
                    steps.append(
                        None
                        if rng.random() < 0.15
                        else (kind, rand_values(rng, kind, rng.randint(0, 3)))
                    )
            lists[vkey] = steps
        recs.append((ctx, lists))
    bad: Optional[int] = None
    if rng.random() < 0.3:
        i = rng.randrange(n)
        ctx, lists = recs[i]
        what = rng.choice(["ctx", "steptype", "stepcount", "droplist"])
        if what == "ctx" and ctx_specs:
            out = rng.choice(rng.choice(ctx_specs).corrupt)(rng, dict(ctx))
            if out is not None:
                recs[i] = (out, lists)
                bad = i
        elif what != "ctx" and seq:
            key, vkey, kind, t, shape, allow = rng.choice(seq)
            steps = list(lists.get(vkey, []))
            if what == "steptype":
                wk = wrong_kind(kind, rng)
                steps.insert(rng.randint(0, len(steps)), (wk, rand_values(rng, wk, 1)))
            elif what == "stepcount" and t == "flsf":
                steps.insert(
                    rng.randint(0, len(steps)), (kind, rand_values(rng, kind, math.prod(shape) + 1))
                )
            elif what == "droplist" and t == "flsf" and not allow:
                lists = {k: v for k, v in lists.items() if k != vkey}
                recs[i] = (ctx, lists)
                bad = i
            if what in ("steptype", "stepcount") and (what == "steptype" or t == "flsf"):
                recs[i] = (ctx, {**lists, vkey: steps})
                bad = i
    data = [serialize_sequence(rng, c, ls) for c, ls in recs]
    return tf_c, our_c, tf_s, our_s, data, bad


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(N_SEQUENCE_CASES))
def test_parse_sequence_example_matches_tensorflow(
    seed: int, engine: str, monkeypatch: Any
) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    tf_c, our_c, tf_s, our_s, data, bad = sequence_case(seed)
    for spec in our_c.values():
        count_spec(spec, " (context)")
    for spec in our_s.values():
        count_spec(spec, " (feature_lists)")
    names = [f"seq{i}" for i in range(len(data))] if seed % 3 == 0 else None
    ours, theirs = both(
        "parse_sequence_example",
        lambda: tf.io.parse_sequence_example(data, tf_c, tf_s, example_names=names),
        lambda: tfr.parse_sequence_example(data, our_c, our_s, example_names=names),
        bad is not None,
    )
    if theirs is not None:
        for part, o, t in zip(("context", "feature_lists", "lengths"), ours, theirs):
            same_dict(o, t, f"seed {seed} parse_sequence_example {part}")
    for i, rec in enumerate(data):
        ours1, theirs1 = both(
            "parse_single_sequence_example",
            lambda rec=rec: tf.io.parse_single_sequence_example(rec, tf_c, tf_s),
            lambda rec=rec: tfr.parse_single_sequence_example(rec, our_c, our_s),
            i == bad,
        )
        if theirs1 is not None:
            for part, o, t in zip(("context", "feature_lists"), ours1, theirs1):
                same_dict(o, t, f"seed {seed} parse_single_sequence_example[{i}] {part}")


@pytest.mark.parametrize("seed", range(0, N_SEQUENCE_CASES, 4))
def test_dataset_parse_sequence_matches_tensorflow_pipeline(seed: int, tmp_path: Any) -> None:
    """``batch(n).parse_sequence(...)`` against ``tf.data``'s ``batch(n).map(parse_sequence_example)``:
    the same batches, and an error at the same batch."""
    tf_c, our_c, tf_s, our_s, data, bad = sequence_case(seed)
    records = data * (1 + 40 // len(data))  # several batches, extracted together
    path = str(tmp_path / "seq.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)
    size = random.Random(seed).choice([3, 8, 16])

    def run(batches: Iterator[Any], errors: Any) -> tuple[list[Any], Optional[BaseException]]:
        got: list[Any] = []
        try:
            for item in batches:
                got.append(item)
        except errors as err:
            return got, err
        return got, None

    theirs, tf_err = run(
        iter(
            tf.data.TFRecordDataset(path)
            .batch(size)
            .map(lambda b: tf.io.parse_sequence_example(b, tf_c, tf_s))
        ),
        (tf.errors.InvalidArgumentError, ValueError),
    )
    ours, our_err = run(
        iter(tfr.TFRecordDataset(path).batch(size).parse_sequence(our_c, our_s)), ValueError
    )
    if tf_err is not None:
        assert our_err is not None, ("TensorFlow raised, we did not", tf_message(tf_err))
        check_error_agrees(tf_err, our_err, "dataset parse_sequence")
        COUNTS["dataset parse_sequence: error"] += 1
    elif our_err is not None:
        assert bad is not None and VALIDATION.search(str(our_err)), str(our_err)
        COUNTS["dataset parse_sequence: deliberate (we validate)"] += 1
        return
    else:
        COUNTS["dataset parse_sequence: value"] += 1
    assert len(ours) == len(theirs)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        for part, x, y in zip(("context", "feature_lists", "lengths"), o, t):
            same_dict(x, y, f"seed {seed} batch {i} {part}")


# --------------------------------------------------------------------------- cross-serialization


def test_tf_examples_parse_identically() -> None:
    """Bytes from ``tf.train.Example(...).SerializeToString()`` read the same both ways."""
    rng = random.Random(5)
    for _ in range(40):
        rec: Record = {}
        for k in range(rng.randint(0, 5)):
            kind = rng.choice(KINDS)
            rec[f"f{k}"] = (
                None if rng.random() < 0.15 else (kind, rand_values(rng, kind, rng.randint(0, 4)))
            )
        ex = tf.train.Example()
        for k, v in rec.items():
            ex.features.feature[k].CopyFrom(tf_feature(v))
        data = ex.SerializeToString()
        assert example_pb2.Example.FromString(data).SerializeToString(deterministic=True) == (
            tf.train.Example.FromString(data).SerializeToString(deterministic=True)
        )
        tf_specs = {k: tf.io.VarLenFeature(TF_DT[v[0] if v else "i"]) for k, v in rec.items()}
        our_specs = {k: tfr.VarLenFeature(OUR_DT[v[0] if v else "i"]) for k, v in rec.items()}
        if not rec:
            continue
        same_dict(
            tfr.parse_single_example(data, our_specs),
            tf.io.parse_single_example(data, tf_specs),
            "tf bytes",
        )
        COUNTS["cross: tf-serialized example"] += 1


def test_our_examples_parse_identically_in_tensorflow() -> None:
    """Bytes we serialize (``tfr.encode_example`` / our protos) read the same in TensorFlow."""
    rng = random.Random(6)
    for _ in range(40):
        rec: Record = {}
        for k in range(rng.randint(1, 5)):
            kind = rng.choice(KINDS)
            rec[f"f{k}"] = (kind, rand_values(rng, kind, rng.randint(0, 4)))
        ex = example_pb2.Example()
        for k, v in rec.items():
            ex.features.feature[k].CopyFrom(our_feature(v))
        blobs = [ex.SerializeToString()]
        api = encode_ours_api(rec)
        if api is not None:
            blobs.append(api)
        tf_specs = {k: tf.io.VarLenFeature(TF_DT[v[0]]) for k, v in rec.items() if v}
        our_specs = {k: tfr.VarLenFeature(OUR_DT[v[0]]) for k, v in rec.items() if v}
        for data in blobs:
            assert tf.train.Example.FromString(data) == tf.train.Example.FromString(blobs[0])
            same_dict(
                tfr.parse_example([data], our_specs),
                tf.io.parse_example([data], tf_specs),
                "our bytes",
            )
            COUNTS["cross: our-serialized example"] += 1


# --------------------------------------------------------------------------- deliberate differences


def test_deliberate_concat_empty_feature() -> None:
    """An empty ``Feature()`` after a value for the same key: protobuf's last-wins
    (the key is missing -> default) where TensorFlow keeps the earlier value."""
    data = ld(1, wire_features({"a": ("i", [1])}, True)) + ld(1, wire_features({"a": None}, True))
    tf_out = tf.io.parse_single_example(data, {"a": tf.io.FixedLenFeature([], tf.int64, 9)})
    ours = tfr.parse_single_example(data, {"a": tfr.FixedLenFeature([], tfr.int64, 9)})
    assert int(tf_out["a"]) == 1 and int(ours["a"]) == 9


def test_deliberate_bad_partitions_validated() -> None:
    """TensorFlow's validate=False returns a malformed RaggedTensor; we raise."""
    data = ld(1, wire_features({"v": ("i", [1, 2, 3]), "s": ("i", [0, 1, 2])}, True))
    spec = tf.io.RaggedFeature(tf.int64, "v", [tf.io.RaggedFeature.RowSplits("s")])
    tf.io.parse_example([data], {"r": spec})  # no error in TensorFlow
    with pytest.raises(tfr.ParseError, match="Key: r"):
        tfr.parse_example(
            [data], {"r": tfr.RaggedFeature(tfr.int64, "v", [tfr.RaggedFeature.RowSplits("s")])}
        )


def test_deliberate_sparse_index_out_of_range() -> None:
    data = ld(1, wire_features({"i": ("i", [0, 19]), "v": ("i", [1, 2])}, True))
    out = tf.io.parse_example([data], {"s": tf.io.SparseFeature("i", "v", tf.int64, 13)})
    assert out["s"].indices.numpy().tolist() == [[0, 0], [0, 19]]  # outside dense_shape
    with pytest.raises(tfr.ParseError, match="out of range"):
        tfr.parse_example([data], {"s": tfr.SparseFeature("i", "v", tfr.int64, 13)})


def test_deliberate_missing_row_splits_single() -> None:
    """A missing RowSplits feature is 0 rows in TensorFlow's batch parse; its
    single-example parse fails (``Dimension -1 must be >= 0``, in a fresh process at
    least: it depends on what ran before). We return 0 rows for both."""
    data = ld(1, wire_features({"v": ("i", [])}, True))
    spec = tf.io.RaggedFeature(tf.int64, "v", [tf.io.RaggedFeature.RowSplits("s")])
    ours_spec = tfr.RaggedFeature(tfr.int64, "v", [tfr.RaggedFeature.RowSplits("s")])
    assert tf.io.parse_example([data], {"r": spec})["r"].to_list() == [[]]
    assert tfr.parse_example([data], {"r": ours_spec})["r"].to_list() == [[]]
    assert tfr.parse_single_example(data, {"r": ours_spec})["r"].to_list() == []


def _int64s(rec: bytes) -> bytes:
    """An Example whose feature ``a`` is an ``Int64List`` with these ``value`` field bytes."""
    return ld(1, ld(1, ld(1, b"a") + ld(2, ld(3, rec))))


#: The payloads of docs/tensorflow-behaviour.md's table "where TensorFlow 2.21's parser and
#: protobuf differ": (record, spec kind, TensorFlow's answer, ours). An answer is a list of
#: values of feature ``a`` or the error class's name. Ours is protobuf's reading, from every
#: engine; this test keeps the table's TensorFlow column true.
TF_DIFFERS = {
    "several_packed_pieces": (
        _int64s(ld(1, b"\x01\x02") + ld(1, b"\x03")),
        "int64",
        [1, 2],
        [1, 2, 3],
    ),
    "packed_then_unpacked": (_int64s(ld(1, b"\x01\x02") + b"\x08\x03"), "int64", [1, 2], [1, 2, 3]),
    "float_then_int64_read_as_float": (
        ld(
            1,
            ld(
                1, ld(1, b"a") + ld(2, ld(2, ld(1, struct.pack("<f", 1.5))) + ld(3, ld(1, b"\x07")))
            ),
        ),
        "float32",
        [1.5],
        "ParseError",
    ),
    "float_then_int64_read_as_int64": (
        ld(
            1,
            ld(
                1, ld(1, b"a") + ld(2, ld(2, ld(1, struct.pack("<f", 1.5))) + ld(3, ld(1, b"\x07")))
            ),
        ),
        "int64",
        "InvalidArgumentError",
        [7],
    ),
    "key_without_value": (ld(1, ld(1, ld(1, b"a"))), "int64", "InvalidArgumentError", []),
    "invalid_utf8_key": (
        ld(1, ld(1, ld(1, b"\xff") + ld(2, ld(3, ld(1, b"\x05")))))
        + ld(1, ld(1, ld(1, b"a") + ld(2, ld(3, ld(1, b"\x09"))))),
        "int64",
        [9],
        "ParseError",
    ),
    "packed_length_past_the_end": (_int64s(b"\x0a\xe8\x07\x01\x02"), "int64", [1, 2], "ParseError"),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(TF_DIFFERS))
def test_where_tensorflow_and_protobuf_differ(name: str, engine: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("TFRECORD_LITE_ENGINE", engine)
    record, kind, tf_answer, our_answer = TF_DIFFERS[name]
    # A batch of 100 (the engines' batch walk) and the record alone (the single-record route).
    batch = [tfr.encode_example({"a": [4]} if kind == "int64" else {"a": [4.0]})] * 99 + [record]
    tf_spec = {"a": tf.io.VarLenFeature(TF_DT[kind[0]])}
    our_spec = {"a": tfr.VarLenFeature(OUR_DT[kind[0]])}
    for records in (batch, [record]):
        try:
            sparse = tf.io.parse_example(records, tf_spec)["a"]
            last = sparse.indices.numpy()[:, 0] == len(records) - 1
            theirs: Any = sparse.values.numpy()[last].tolist()
        except tf.errors.InvalidArgumentError:
            theirs = "InvalidArgumentError"
        assert theirs == tf_answer, (name, len(records), theirs)
        try:
            out = tfr.parse_example(records, our_spec)["a"]
            ours: Any = out.values[out.indices[:, 0] == len(records) - 1].tolist()
        except tfr.ParseError:
            ours = "ParseError"
        assert ours == our_answer, (name, len(records), ours)


#: tf.io's spec classes with tf's dtypes: spelled like ``tfr`` for shared spec makers.
TFNS = SimpleNamespace(
    FixedLenFeature=tf.io.FixedLenFeature,
    FixedLenSequenceFeature=tf.io.FixedLenSequenceFeature,
    VarLenFeature=tf.io.VarLenFeature,
    SparseFeature=tf.io.SparseFeature,
    RaggedFeature=tf.io.RaggedFeature,
    int64=tf.int64,
    float32=tf.float32,
    string=tf.string,
)

EMPTY_BATCH_SPECS = [
    ("fixed", lambda m: m.FixedLenFeature([2], m.float32, default_value=[1.0, 2.0])),
    ("fixed_str", lambda m: m.FixedLenFeature([], m.string, default_value=b"x")),
    ("var", lambda m: m.VarLenFeature(m.int64)),
    ("var_str", lambda m: m.VarLenFeature(m.string)),
    ("seq", lambda m: m.FixedLenSequenceFeature([3], m.string, allow_missing=True)),
    ("sparse", lambda m: m.SparseFeature("i", "v", m.float32, 5)),
    ("ragged", lambda m: m.RaggedFeature(m.int64)),
    (
        "ragged_parts",
        lambda m: m.RaggedFeature(
            m.float32,
            value_key="v2",
            partitions=[m.RaggedFeature.RowLengths("l"), m.RaggedFeature.UniformRowLength(2)],
        ),
    ),
]


@pytest.mark.parametrize("name,make", EMPTY_BATCH_SPECS, ids=[n for n, _ in EMPTY_BATCH_SPECS])
def test_empty_batch_matches_tensorflow(name: str, make: Callable[[Any], Any]) -> None:
    theirs = tf.io.parse_example(tf.constant([], tf.string), {name: make(TFNS)})
    ours = tfr.parse_example([], {name: make(tfr)})
    same_dict(ours, theirs, f"empty batch {name}")
    COUNTS["parse_example: empty batch"] += 1


def test_empty_sequence_batch() -> None:
    """An empty batch (``tf.constant([], tf.string)``: a plain ``[]`` would become a
    float32 tensor in TensorFlow) gives correctly shaped empty outputs."""
    ctx = {
        "c": lambda m: m.FixedLenFeature([], m.int64, default_value=0),
        "v": lambda m: m.VarLenFeature(m.float32),
        "r": lambda m: m.RaggedFeature(m.int64),
    }
    seq = {
        "a": lambda m: m.FixedLenSequenceFeature([2], m.int64),
        "b": lambda m: m.VarLenFeature(m.string),
        "d": lambda m: m.RaggedFeature(m.float32),
    }
    for keep in (["c", "a"], ["c", "r", "d"], ["c", "v", "r", "a", "b", "d"]):
        tf_c = {k: f(TFNS) for k, f in ctx.items() if k in keep}
        tf_s = {k: f(TFNS) for k, f in seq.items() if k in keep}
        our_c = {k: f(tfr) for k, f in ctx.items() if k in keep}
        our_s = {k: f(tfr) for k, f in seq.items() if k in keep}
        ours = tfr.parse_sequence_example([], our_c, our_s)
        theirs = tf.io.parse_sequence_example(tf.constant([], tf.string), tf_c, tf_s)
        for part, o, t in zip(("context", "feature_lists", "lengths"), ours, theirs):
            same_dict(o, t, f"empty sequence batch {keep} {part}")
        COUNTS["parse_sequence_example: empty batch"] += 1


# --------------------------------------------------------------------------- counts


@pytest.fixture(scope="module", autouse=True)
def _report_counts() -> Iterator[None]:
    yield
    if not COUNTS:
        return
    lines = [f"{k}: {v}" for k, v in sorted(COUNTS.items())]
    print("\ninterop parse case counts:\n  " + "\n  ".join(lines))
    target = os.environ.get("TFR_INTEROP_COUNTS")
    if target:
        with open(target, "w") as f:
            json.dump(dict(sorted(COUNTS.items())), f, indent=1)
