"""Doubly stochastic gradients over partitioned rows, in an order keyed by the row index.

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
classifier runs this way, two classes or more (the multinomial loss).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core import rowkeys
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.models.dsg import DSGClassifier, DSGRegressor, Step
from kernel_lab.core.parts.base import PartMap, RowPlan, Rows, part_rows, reduce_blocks
from kernel_lab.core.progress import Progress

#: Rows per block at most (a block is what the client reads at a time).
BLOCK_ROWS = 65_536
#: Rows per block at least.
MIN_BLOCK_ROWS = 1_024
#: A block of rows (float64) is kept within this size: wide data get smaller blocks.
BLOCK_BYTES = 32 * 2**20
#: :meth:`BlockedDSG.advance` reports progress (a cancellation point) this often.
REPORT_EVERY = 64


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
    """

    def __init__(self, parts: PartMap, plan: RowPlan, seed: int, batch_size: int,
                 block: int | None = None, p: int | None = None) -> None:
        if batch_size < 1:
            raise ParameterError(f"the batch size must be at least 1, got {batch_size}")
        self.parts, self.plan, self.seed = parts, plan, int(seed)
        self.batch_size = int(batch_size)
        if block is None:
            block = block_rows(_width(plan, p))
        self.block = int(block)
        self.epoch = 0
        self.blocks_read = 0

    def _blocks(self) -> Iterator[Rows]:
        n, R = self.plan.n, self.block
        epoch = 0
        while True:
            self.epoch = epoch
            for k in block_order(self.seed, epoch, -(-n // R)):
                rows = take_range(self.parts, self.plan, k * R, min((k + 1) * R, n))
                self.blocks_read += 1
                if rows.index.size:
                    order = row_order(self.seed, epoch, rows.index)
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


class BlockedDSG:
    """A DSG model (:class:`~kernel_lab.core.models.DSGRegressor` or
    :class:`~kernel_lab.core.models.DSGClassifier`, any of their losses) trained on
    partitioned rows through its public training protocol (``prepare``, ``labels``,
    ``step``, ``finish``), one mini-batch of the keyed :class:`BlockStream` per iteration.

    Parameters
    ----------
    model : DSGRegressor or DSGClassifier
        Unfitted, with an explicit bandwidth ``sigma``; its ``batch_size`` is the batch, its
        ``random_state`` draws the features of each iteration (as in memory).
    parts, plan
        The partitions and their split and standardisation.
    seed : int
        Seed of the epochs' order of rows (keys of the global row indices).
    offset : float
        Regression: the value subtracted from the targets and added back to predictions
        (:meth:`DSGRegressor.fit` takes the mean of y; the median under the quantile loss).
    classes : array_like, optional
        Classification: every class label of the data set (two: the upper one is +1; more,
        or the multinomial loss: class codes in the order of the sorted labels).
    block : int, optional
        Rows per block; default :func:`block_rows` of the number of columns.
    p : int, optional
        Number of columns; default the length of the plan's column means.

    Attributes
    ----------
    model : the model being trained (``predict`` works on standardised rows at any time)
    stream : BlockStream
    """

    def __init__(self, model: DSGRegressor | DSGClassifier, parts: PartMap, plan: RowPlan,
                 seed: int, *, offset: float = 0.0, classes: Any = None,
                 block: int | None = None, p: int | None = None) -> None:
        if model.sigma is None:
            raise ParameterError("DSG on partitioned data needs an explicit bandwidth σ "
                                 "(compute it from a keyed sample of the rows)")
        p = _width(plan, p)
        if isinstance(model, DSGClassifier):
            found = np.unique(np.asarray([] if classes is None else classes))
            if found.size < 2:
                raise ParameterError("DSG over partitions classifies the data set's classes; "
                                     f"give every class label (got {found.size})")
            model.prepare(np.zeros((1, p)), classes=found)
        else:
            model.prepare(np.zeros((1, p)), offset=offset)
        self.model = model
        self.stream = BlockStream(parts, plan, seed, int(model.batch_size), block, p)
        self._batches = iter(self.stream)

    def advance(self, iterations: int, progress: Progress | None = None, message: str = "",
                on_step: Callable[[Rows, Step], Any] | None = None) -> list[float]:
        """Run ``iterations`` more iterations; the mean loss of each batch before its
        update (DSG's progressive training loss). ``progress`` is told every
        :data:`REPORT_EVERY` iterations (and may cancel); ``on_step(batch, step)`` is
        called after each iteration with the batch's rows (global indices) and what the
        step did (its loss gradients and step size: a kernel twin follows them)."""
        out = []
        model = self.model
        for i in range(int(iterations)):
            if progress is not None and i % REPORT_EVERY == 0:
                progress(i / iterations, message)
            batch = next(self._batches)
            step = model.step(batch.X, model.labels(batch.y))
            if on_step is not None:
                on_step(batch, step)
            out.append(step.loss)
        model.finish()
        if progress is not None:
            progress(1.0, message)
        return out


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


def _part_y(part: Any, plan: RowPlan) -> np.ndarray:
    return part_rows(part, plan, "train").y


def target_median(parts: PartMap, plan: RowPlan) -> float:
    """The median of the training targets (the quantile loss's offset, as
    :meth:`DSGRegressor.fit` takes it): the target column alone is gathered, 8 bytes a
    row — an order statistic, the same value however the rows are cut."""
    return float(np.median(np.concatenate(parts.map(_part_y, plan))))
