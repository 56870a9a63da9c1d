"""Where ``convert`` gets its records: TFRecord files (damage stops the copy, or is
skipped and reported with ``--skip-bad``), the rows of Parquet / Arrow files as
Examples, and the records of TFDS splits as they are stored. Each hands out the
records one at a time, or in batches bounded in count and bytes, and says where the
record last handed out comes from (for errors about it).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._files import Damage, SalvageInfo, fs, salvage_file
from .._record import join_records, record_lengths
from ._common import Ctx, damage_line, say, total_size
from ._convert_tables import read_tables

if TYPE_CHECKING:
    from ._convert_tfds import TfdsInput

__all__ = ["BATCH_BYTES", "Records", "TableRecords", "TfdsRecords"]

#: Record bytes in one batch at most (with up to DEFAULT_BATCH_SIZE records): the
#: read, parse and write stages hold a few batches each.
BATCH_BYTES = 32 * 2**20


class Records:
    """The good records of TFRecord inputs, in order, with the damaged ones counted.

    Damage stops the copy (its error is raised) unless ``--skip-bad``: then each
    damaged stretch is reported on stderr and left out.
    """

    def __init__(self, args: argparse.Namespace, ctx: Ctx, inputs: list[str]) -> None:
        self.skip_bad = bool(args.skip_bad)
        self.ctx = ctx
        self.inputs = inputs
        self.skipped = 0
        #: the file and index of the record last handed out (for errors about it)
        self.where: tuple[str, int] = ("", 0)

    def __call__(self, desc: str = "convert", report: bool = True) -> Iterator[bytes]:
        with self.ctx.bar(total_size(self.inputs), desc, "B") as bar:
            for path in self.inputs:
                info = SalvageInfo()
                for item in salvage_file(path, on_bytes=bar.update, info=info):
                    if isinstance(item, Damage):
                        if not self.skip_bad:
                            raise item.error
                        if report:
                            self.skipped += 1
                            say(bar, damage_line(item, path, bool(info.compression)), err=True)
                        continue
                    self.where = (path, item.index)
                    yield item.data

    def batches(self, size: int) -> Iterator[Sequence[bytes]]:
        """The records in batches of ``size``, or of :data:`BATCH_BYTES` where they are
        big (so memory stays bounded). Where no damage is to be skipped, a batch is the
        records as they lie in the blocks read (spans joined, no object per record)."""
        if self.skip_bad or type(self).__call__ is not Records.__call__:
            yield from self._listed(size)
            return
        pieces: list[Sequence[bytes]] = []
        have = held = 0
        for block in self._blocks():
            n = len(block)
            lengths = record_lengths(block)
            ends = np.cumsum(lengths)  # the block's bytes up to and with each record
            pos = 0
            while pos < n:
                take = min(size - have, n - pos)
                before = int(ends[pos - 1]) if pos else 0
                # the first record that takes the batch to BATCH_BYTES ends it
                over = int(np.searchsorted(ends[pos : pos + take], before + BATCH_BYTES - held))
                full = have + take == size or over < take
                take = min(take, over + 1)
                pieces.append(block if take == n else block[pos : pos + take])
                have += take
                held += int(ends[pos + take - 1]) - before
                pos += take
                if full:
                    yield join_records(pieces)
                    pieces, have, held = [], 0, 0
        if pieces:
            yield join_records(pieces)

    def _listed(self, size: int) -> Iterator[list[bytes]]:
        """:meth:`batches` a record at a time (records to be checked one by one)."""
        batch: list[bytes] = []
        held = 0
        for data in self():
            batch.append(data)
            held += len(data)
            if len(batch) >= size or held >= BATCH_BYTES:
                yield batch
                batch, held = [], 0
        if batch:
            yield batch

    def _blocks(self) -> Iterator[Sequence[bytes]]:
        """The records of the inputs a block at a time (spans of the blocks read)."""
        from .._files import READ_BLOCK_SIZE, detect_compression, read_batches

        with self.ctx.bar(total_size(self.inputs), "convert", "B") as bar:
            for path in self.inputs:
                with fs.open_read(path) as f:
                    compressed = bool(detect_compression(f.read(64)))
                blocks = read_batches(
                    path, "auto", True, READ_BLOCK_SIZE, "raise", None, None, True, True
                )
                for block in blocks:
                    yield block
                    if not compressed:  # the bytes of a compressed file: when it is done
                        bar.update(int(record_lengths(block).sum()) + 16 * len(block))
                if compressed:
                    bar.update(fs.size(path))


class TableRecords(Records):
    """The rows of Parquet / Arrow inputs as Examples (or SequenceExamples)."""

    def __init__(self, args: argparse.Namespace, ctx: Ctx, inputs: list[str], fmt: str) -> None:
        super().__init__(args, ctx, inputs)
        self.format = fmt

    def __call__(self, desc: str = "convert", report: bool = True) -> Iterator[bytes]:
        from .._tables import table_records

        for path in self.inputs:
            row = 0
            for table in read_tables(path, self.format):
                for data in table_records(table):
                    self.where = (path, row)
                    row += 1
                    yield data


class TfdsRecords(Records):
    """The records of TFDS splits as they are stored (see ``_convert_tfds``)."""

    def __init__(self, args: argparse.Namespace, ctx: Ctx, tfds: TfdsInput) -> None:
        super().__init__(args, ctx, [])
        self.tfds = tfds

    def __call__(self, desc: str = "convert", report: bool = True) -> Iterator[bytes]:
        with self.ctx.bar(self.tfds.num_examples, desc, "rec") as bar:
            for path, index, data in self.tfds.records(bar.update):
                self.where = (path, index)
                yield data
