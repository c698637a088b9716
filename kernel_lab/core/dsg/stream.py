"""Doubly stochastic gradients over rows in parts, in an order keyed by the row index.

DSG (:mod:`kernel_lab.core.models.dsg`) takes one mini-batch of rows per iteration. Over
partitions the rows are visited in *epochs*, each a pass over the training rows in an order
that depends on the seed and the global row indices only — not on how the rows are cut:

- the rows are grouped into **blocks** of ``R`` consecutive global indices,
  ``[kR, (k+1)R)``, with ``R`` fixed by the number of columns (:func:`block_rows`), never by
  the partitioning; a block may straddle two partitions and is read from those only
  (:func:`take_range`);
- epoch ``e`` visits the blocks in the order of their keys for ``(seed, DSG_EPOCH + e)``
  (:func:`block_order`; a block's key is that of the bit-complement of its number, so block
  and row keys never coincide), and the training rows inside a block in the order of their
  own keys (:func:`row_order`);
- the mini-batches are ``B`` consecutive rows of the stream of epochs 0, 1, 2, … (a batch may
  cross a block's or an epoch's end).

So the client holds one block of rows (two while a batch crosses into the next), and the
batches — hence every iteration, done by the model's own :meth:`~DSGRegressor.step` with
the features of iteration ``t`` drawn from the model's seed — are the same whether the data
are one array or sixteen Parquet files on a cluster. Every loss of the regressor and the
classifier runs this way, two classes or more (the multinomial loss): the learning curve
over a data set's parts, and the estimators' ``fit`` over its array as one part.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.blocks import Frontier, block_count, join
from kernel_lab.core.rows.mapreduce import (
    PartMap,
    RowPlan,
    Rows,
    _block_frontier,
    _smallest_keys,
    _take,
    part_rows,
    reduce_blocks,
)

#: Rows per block at most (a block is what the client reads at a time).
BLOCK_ROWS = 65_536
#: Rows per block at least.
MIN_BLOCK_ROWS = 1_024
#: A block of rows (float64) is kept within this size: wide data get smaller blocks.
BLOCK_BYTES = 32 * 2**20


def block_rows(p: int) -> int:
    """Rows per block for ``p`` columns: the largest power of two at most
    :data:`BLOCK_ROWS` whose block fits :data:`BLOCK_BYTES` (at least
    :data:`MIN_BLOCK_ROWS`) — a function of the data's width, not of its partitioning."""
    fit = BLOCK_BYTES // (8 * max(int(p), 1))
    rows = 1 << max(int(fit).bit_length() - 1, 0)
    return int(min(BLOCK_ROWS, max(MIN_BLOCK_ROWS, rows)))


def block_order(seed: int, epoch: int, n_blocks: int) -> np.ndarray:
    """The block numbers ``0 … n_blocks−1`` in the order epoch ``epoch`` visits them."""
    ids = ~np.arange(n_blocks, dtype=np.uint64)  # 2⁶⁴−1−k: disjoint from row indices
    return np.argsort(rowkeys.keys(seed, rowkeys.DSG_EPOCH + epoch, ids), kind="stable")


def row_order(seed: int, epoch: int, index: np.ndarray) -> np.ndarray:
    """Positions that put the global rows ``index`` in epoch ``epoch``'s order."""
    return np.argsort(rowkeys.keys(seed, rowkeys.DSG_EPOCH + epoch, index), kind="stable")


def epoch_rows(plan: RowPlan, seed: int, epoch: int, block: int) -> np.ndarray:
    """Global indices of all training rows in epoch ``epoch``'s order, with blocks of
    ``block`` rows (indices only, no data read; O(n) memory: for checks and small data)."""
    out = []
    for k in block_order(seed, epoch, -(-plan.n // block)):
        index = np.arange(k * block, min((k + 1) * block, plan.n))
        index = index[~plan.is_test(index)]
        out.append(index[row_order(seed, epoch, index)])
    return np.concatenate(out)


def _range_rows(part: Any, plan: RowPlan, which: str, lo: int, hi: int) -> Rows | None:
    """The part's training or test rows with global index in ``[lo, hi)``; None (nothing
    read) when the part holds none of them."""
    if part.start >= hi or part.start + part.rows <= lo:
        return None
    rows = part_rows(part, plan, which)
    a, b = np.searchsorted(rows.index, [lo, hi])
    return Rows(rows.X[a:b], rows.y[a:b], rows.index[a:b])


def take_range(parts: PartMap, plan: RowPlan, lo: int, hi: int, which: str = "train"
               ) -> Rows:
    """The training (or test) rows with global index in ``[lo, hi)``, in index order,
    standardised by the plan; only the parts overlapping the range are read."""
    got = [r for r in parts.map(_range_rows, plan, which, int(lo), int(hi))
           if r is not None and r.index.size]
    if not got:
        return Rows(np.zeros((0, 0)), np.zeros(0), np.zeros(0, dtype=np.int64))
    return Rows(np.concatenate([r.X for r in got]), np.concatenate([r.y for r in got]),
                np.concatenate([r.index for r in got]))


def _width(plan: RowPlan, p: int | None) -> int:
    """The number of columns: ``p``, or the length of the plan's column means."""
    if p is not None:
        return int(p)
    if plan.mean is None:
        raise ParameterError("the number of columns is needed (the plan has no column means)")
    return len(plan.mean)


class BlockStream:
    """The training rows of partitioned data as an endless stream of mini-batches of
    ``batch_size`` rows in DSG's keyed epoch order (see the module docstring).

    Iterating yields :class:`Rows` (X standardised, raw y, global indices); ``epoch`` is the
    epoch of the block read last and ``blocks_read`` counts the blocks read so far.
    ``start`` rows of the stream are passed over first (from the keys alone, no block
    before the one that holds row ``start`` is read): a stream that starts at
    ``t · batch_size`` yields the batches from iteration t + 1 on, so a model trained in
    several calls (``warm_start``) continues the stream of one call.
    """

    def __init__(self, parts: PartMap, plan: RowPlan, seed: int, batch_size: int,
                 block: int | None = None, p: int | None = None, start: int = 0) -> None:
        if batch_size < 1:
            raise ParameterError(f"the batch size must be at least 1, got {batch_size}")
        if plan.n_train < 1:
            raise ParameterError("DSG needs at least one training row")
        self.parts, self.plan, self.seed = parts, plan, int(seed)
        self.batch_size = int(batch_size)
        if block is None:
            block = block_rows(_width(plan, p))
        self.block = int(block)
        self.start = int(start)
        self.epoch = self.start // plan.n_train
        self.blocks_read = 0

    def _blocks(self) -> Iterator[Rows]:
        n, R = self.plan.n, self.block
        epoch, skip = divmod(self.start, self.plan.n_train)
        while True:
            self.epoch = epoch
            for k in block_order(self.seed, epoch, -(-n // R)):
                lo, hi = k * R, min((k + 1) * R, n)
                if skip:  # rows of the stream before ``start``: counted from keys, not read
                    count = int(np.count_nonzero(self.plan.is_train(np.arange(lo, hi))))
                    if count <= skip:
                        skip -= count
                        continue
                rows = take_range(self.parts, self.plan, lo, hi)
                self.blocks_read += 1
                if rows.index.size:
                    order = row_order(self.seed, epoch, rows.index)[skip:]
                    skip = 0
                    # rebound, so that the block in index order is freed: two blocks at most
                    rows = Rows(rows.X[order], rows.y[order], rows.index[order])
                    yield rows
                del rows
            epoch += 1

    def __iter__(self) -> Iterator[Rows]:
        B = self.batch_size
        carry = Rows(np.zeros((0, 0)), np.zeros(0), np.zeros(0, dtype=np.int64))
        for rows in self._blocks():
            m, start = rows.index.size, 0
            if carry.index.size:  # the batch that crosses into this block
                start = min(B - carry.index.size, m)
                carry = Rows(np.concatenate([carry.X, rows.X[:start]]),
                             np.concatenate([carry.y, rows.y[:start]]),
                             np.concatenate([carry.index, rows.index[:start]]))
                if carry.index.size < B:
                    continue
                yield carry
            full = start + (m - start) // B * B
            for s in range(start, full, B):
                yield Rows(rows.X[s:s + B], rows.y[s:s + B], rows.index[s:s + B])
            # a copy, so that the block itself is freed when the next one is read
            carry = Rows(rows.X[full:].copy(), rows.y[full:].copy(), rows.index[full:].copy())


@dataclass(frozen=True)
class TargetSummary:
    """What DSG needs to know of the training targets before training on partitions.

    Attributes
    ----------
    n : int
        Training rows.
    total : float
        Sum of their targets (the regressor's offset is ``total / n``).
    values : ndarray
        The distinct target values (sorted), when asked for: the classes present.
    """

    n: int
    total: float
    values: np.ndarray

    @property
    def mean(self) -> float:
        return self.total / max(self.n, 1)


def _block_targets(rows: Rows, values: bool) -> TargetSummary:
    y = rows.y
    return TargetSummary(int(y.size), float(y.sum()),
                         np.unique(y) if values else np.zeros(0))


def _add_targets(a: TargetSummary, b: TargetSummary) -> TargetSummary:
    return TargetSummary(a.n + b.n, a.total + b.total, np.union1d(a.values, b.values))


def target_summary(parts: PartMap, plan: RowPlan, values: bool = False,
                   progress: Progress | None = None) -> TargetSummary:
    """Count, sum and (``values``: class targets) distinct values of the training targets,
    in one pass: per canonical block, added in the blocks' tree (the same bits whatever
    the parts)."""
    return reduce_blocks(parts, _block_targets, plan, bool(values), combine=_add_targets,
                         progress=progress, message="the training targets")


def part_targets(part: Any, plan: RowPlan, values: bool = False) -> Frontier:
    """One part's share of :func:`target_summary`, for a caller that reads the part
    anyway (a task of its own pass): the part's frontier of the summaries of its blocks;
    :func:`join_targets` makes the summary of all parts' frontiers."""
    return _block_frontier(part, _block_targets, plan, "train", _add_targets, (bool(values),))


def join_targets(frontiers: list[Frontier], plan: RowPlan) -> TargetSummary:
    """:func:`target_summary` from every part's :func:`part_targets`, in the parts' order:
    the same canonical tree over the blocks, so the same bits."""
    return join(frontiers, _add_targets).finish(_add_targets, block_count(plan.n, plan.block))


def _part_y(part: Any, plan: RowPlan) -> np.ndarray:
    return part_rows(part, plan, "train").y


def target_median(parts: PartMap, plan: RowPlan) -> float:
    """The median of the training targets (the quantile loss's offset, as
    :meth:`DSGRegressor.fit` takes it): the target column alone is gathered, 8 bytes a
    row — an order statistic, the same value however the rows are cut."""
    return float(np.median(np.concatenate(parts.map(_part_y, plan))))


def subset_keys(part: Any, plan: RowPlan, asks: tuple[tuple[str, int, int], ...],
                values: bool | None) -> tuple[list[tuple[np.ndarray, np.ndarray]], Any]:
    """A part's smallest keys for each ``(which, stream, k)`` of ``asks``, and (unless
    ``values`` is None) its share of the training targets' summary
    (:func:`part_targets`): the first pass of the learning curve's gather of keyed
    subsets (:func:`kernel_lab.experiments.learning_curve.keyed_rows`), a task here so
    that a Dask worker running it imports the core, not the experiment."""
    keys = [_smallest_keys(part, plan, which, stream, k) for which, stream, k in asks]
    return keys, None if values is None else part_targets(part, plan, values)


def subset_rows(part: Any, plan: RowPlan, wants: tuple[tuple[str, np.ndarray], ...]
                ) -> list[Rows]:
    """A part's rows among each ``(which, sorted global indices)`` of ``wants`` (the
    second pass of that gather)."""
    return [_take(part, plan, which, wanted) for which, wanted in wants]
