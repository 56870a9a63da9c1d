"""SequenceExamples in a pipeline: every order of parsing and batching gives what
``parse_sequence_example`` gives, a ``Schema`` of feature lists is parsed whole, and
feature lists are never dropped silently."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_lite as tfr

N = 10


@pytest.fixture
def seq_file(tmp_path: Path) -> str:
    path = os.fspath(tmp_path / "clips.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        for i in range(N):
            steps = [[10 * i + j] for j in range(i % 3 + 1)]
            w.write(tfr.make_sequence_example({"n": [i]}, {"v": steps}).SerializeToString())
    return path


def _records(path: str) -> list[bytes]:
    return list(tfr.tf_record_iterator(path))


def _same(a: Any, b: Any) -> None:
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert sorted(a) == sorted(b)
        for k in a:
            _same(a[k], b[k])
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_parse_of_a_schema_reads_the_feature_lists(seq_file: str) -> None:
    schema = tfr.infer_schema(seq_file)
    assert schema.sequence_features  # the Schema holds both parts
    records = _records(seq_file)
    singles = list(tfr.TFRecordDataset(seq_file).parse(schema))
    assert len(singles) == N
    for rec, got in zip(records, singles):
        _same(got, tfr.parse_single_sequence_example(rec, dict(schema), schema.sequence_features))
    assert [int(lists["v"][-1]) for _, lists in singles] == [10 * i + i % 3 for i in range(N)]


@pytest.mark.parametrize("drop", [False, True])
def test_every_batching_order_gives_parse_sequence_example(seq_file: str, drop: bool) -> None:
    schema = tfr.infer_schema(seq_file)
    ctx, lists = dict(schema), schema.sequence_features
    records = _records(seq_file)
    want = [
        tfr.parse_sequence_example(records[a : a + 4], ctx, lists)
        for a in range(0, N, 4)
        if not drop or a + 4 <= N
    ]
    ds = tfr.TFRecordDataset(seq_file)
    for pipeline in (
        ds.batch(4, drop_remainder=drop).parse_sequence(ctx, lists),
        ds.parse_sequence(ctx, lists).batch(4, drop_remainder=drop),
        ds.parse(schema).batch(4, drop_remainder=drop),
        ds.parse_sequence(ctx, lists).prefetch(2).batch(4, drop_remainder=drop),
    ):
        got = list(pipeline)
        assert len(got) == len(want), repr(pipeline)
        for g, w in zip(got, want):
            assert len(g) == 3  # (context, feature_lists, lengths)
            _same(g, w)


def test_plain_features_on_sequences_warn_naming_parse_sequence(seq_file: str) -> None:
    context_only = {"n": tfr.FixedLenFeature([], tfr.int64)}
    for ds in (
        tfr.TFRecordDataset(seq_file).parse(context_only),
        tfr.TFRecordDataset(seq_file).parse(context_only).batch(4),
        tfr.TFRecordDataset(seq_file).batch(4).parse(context_only),
    ):
        with pytest.warns(UserWarning, match=r"feature lists \['v'\].*parse_sequence"):
            out = list(ds)
        assert out  # the context is still read


def test_examples_do_not_warn(tmp_path: Path) -> None:
    path = os.fspath(tmp_path / "ex.tfrecord")
    with tfr.TFRecordWriter(path) as w:
        for i in range(5):
            w.write(tfr.make_example({"n": [i]}).SerializeToString())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = list(tfr.TFRecordDataset(path).parse({"n": tfr.FixedLenFeature([], tfr.int64)}))
    assert [int(x["n"]) for x in got] == list(range(5))


def test_read_examples_reads_sequence_files(seq_file: str) -> None:
    out = tfr.read_examples(seq_file)
    schema = tfr.infer_schema(seq_file)
    ctx, lists, lengths = tfr.parse_sequence_example(
        _records(seq_file), dict(schema), schema.sequence_features
    )
    assert sorted(out) == ["n", "v", "v/length"]
    _same(out["n"], ctx["n"])
    _same(out["v"], lists["v"])
    assert out["v/length"].tolist() == [i % 3 + 1 for i in range(N)] == lengths["v"].tolist()
