"""What one pass over the rows learns about the columns, and the plan it prepares.

:func:`column_stats` reads every row once (per canonical block, combined in the blocks'
one tree, :func:`~kernel_lab.core.rows.mapreduce.reduce_blocks`): the training rows' column
moments, the missing cells, the rows with a missing target or an infinite value.
:func:`prepared_plan` turns them into the :class:`~kernel_lab.core.rows.mapreduce.RowPlan`
that fills missing cells with the training mean and standardises — the same for rows in
memory (one part) and rows kept in partitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from kernel_lab.core.progress import Progress
from kernel_lab.core.rows.blocks import Frontier, MergeFrontiers, block_count
from kernel_lab.core.rows.mapreduce import READ_CACHE, Part, PartMap, RowPlan, holder_of


@dataclass
class ColumnStats:
    """What one pass over the rows learns about the columns (:func:`column_stats`).

    ``count``/``mean``/``m2``: per column, the non-missing training values' count, mean
    and sum of squared deviations; ``missing``: per column, the missing (NaN) cells of the
    kept rows (training and test); ``bad_target``: rows with a missing or non-finite
    target; ``infinite``: per column, rows with an infinite value; ``first_bad``: the
    first such row (global index), its part's first row and the part's description."""

    rows: int
    count: np.ndarray
    mean: np.ndarray
    m2: np.ndarray
    missing: np.ndarray
    bad_target: int = 0
    infinite: np.ndarray | None = None
    first_bad: tuple[int, int, str] | None = None
    #: Rows with a missing target or an infinite value (the first is ``first_bad``).
    bad_rows: int = 0

    @property
    def several(self) -> bool:
        return self.bad_rows > 1

    def merge(self, other: ColumnStats) -> ColumnStats:
        """Both sets of rows (Chan et al.'s pairwise update, column by column)."""
        na, nb = self.count, other.count
        n = na + nb
        delta = other.mean - self.mean
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(na == 0, other.mean, np.where(
                nb == 0, self.mean, self.mean + delta * (nb / n)))
            m2 = np.where(na == 0, other.m2, np.where(
                nb == 0, self.m2, self.m2 + other.m2 + delta * delta * (na * nb / n)))
        firsts = [f for f in (self.first_bad, other.first_bad) if f is not None]
        infinite = (other.infinite if self.infinite is None else self.infinite
                    if other.infinite is None else self.infinite + other.infinite)
        return ColumnStats(self.rows + other.rows, n, mean, m2, self.missing + other.missing,
                           self.bad_target + other.bad_target, infinite,
                           min(firsts) if firsts else None, self.bad_rows + other.bad_rows)


def _block_stats(X: np.ndarray, y: np.ndarray, start: int, part: Part, plan: RowPlan
                 ) -> ColumnStats:
    """:class:`ColumnStats` of the raw rows ``X, y`` whose first is global row ``start``
    (one canonical block, or the part of it ``part`` holds)."""
    index = np.arange(start, start + X.shape[0])
    kept = plan.kept(index)
    p = X.shape[1]
    stats = ColumnStats(int(kept.sum()), np.zeros(p, dtype=np.int64), np.zeros(p),
                        np.zeros(p), np.zeros(p, dtype=np.int64))
    finite = np.isfinite(X)
    clean = bool(finite.all())
    if not clean or not np.isfinite(y).all():
        holes = np.isnan(X) & kept[:, None]
        stats.missing = holes.sum(axis=0)
        infinite = np.isinf(X) & kept[:, None]
        bad = (~np.isfinite(y) & kept) | infinite.any(axis=1)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            stats.bad_target = int((~np.isfinite(y) & kept).sum())
            stats.infinite = infinite.sum(axis=0)
            where = holder_of(part, start + first)
            stats.first_bad = (start + first, where.start, where.describe())
            stats.bad_rows = int(bad.sum())
    train = plan.is_train(index)
    A = X[train]
    if A.shape[0] == 0:
        return stats
    if clean:  # the usual case: every training value present
        return clean_moments(stats, A)
    ok = np.isfinite(A)
    stats.count = ok.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        stats.mean = np.where(stats.count > 0, np.where(ok, A, 0.0).sum(axis=0)
                              / stats.count, 0.0)
    d = np.where(ok, A - stats.mean, 0.0)
    stats.m2 = np.einsum("ij,ij->j", d, d)
    return stats


def clean_moments(stats: ColumnStats, A: np.ndarray) -> ColumnStats:
    """``stats`` with the count, mean and sum of squared deviations of the training rows
    ``A`` of one canonical block, every value present (float64, C order: the bits depend
    on the layout, so whoever gathers a block's training rows hands them over so)."""
    stats.count[:] = A.shape[0]
    stats.mean = A.mean(axis=0)
    d = A - stats.mean
    stats.m2 = np.einsum("ij,ij->j", d, d)
    return stats


def clean_block_stats(A: np.ndarray, rows: int) -> ColumnStats:
    """:class:`ColumnStats` of one canonical block of ``rows`` kept rows, none missing or
    infinite, whose training rows are ``A`` (what :func:`column_stats` computes for such a
    block, from rows already gathered)."""
    p = A.shape[1]
    stats = ColumnStats(int(rows), np.zeros(p, dtype=np.int64), np.zeros(p), np.zeros(p),
                        np.zeros(p, dtype=np.int64))
    return clean_moments(stats, A) if A.shape[0] else stats


def combined_stats(blocks: Iterable[ColumnStats], plan: RowPlan) -> ColumnStats:
    """The statistics of all rows from those of every canonical block (in order), combined
    in the blocks' one tree: the bits :func:`column_stats` gives."""
    front = Frontier.of(enumerate(blocks), ColumnStats.merge, rows=(0, plan.n),
                        block=int(plan.block), n=plan.n)
    return front.finish(ColumnStats.merge, block_count(plan.n, plan.block))


def _stats_frontier(part: Part, plan: RowPlan) -> Frontier:
    """A part's task of :func:`column_stats`: its raw rows' statistics per canonical
    block, folded into the part's frontier of the blocks' tree."""
    X, y = READ_CACHE.read(part)
    if X.shape[0] == 0:
        return Frontier()
    B, start, end = int(plan.block), part.start, part.start + X.shape[0]

    def block(k: int) -> ColumnStats:
        lo, hi = max(k * B, start) - start, min((k + 1) * B, end) - start
        return _block_stats(X[lo:hi], y[lo:hi], start + lo, part, plan)

    return Frontier.of(((k, block(k)) for k in range(start // B, (end - 1) // B + 1)),
                       ColumnStats.merge, rows=(start, end), block=B, n=plan.n)


def column_stats(parts: PartMap, plan: RowPlan, progress: Progress | None = None
                 ) -> ColumnStats:
    """One pass over the partitions: the training rows' column moments over their
    non-missing values, the missing cells of each column, and the rows whose target is
    missing or which hold an infinite value (see :class:`ColumnStats`). Computed per
    canonical block and combined in the blocks' one tree, so the same bits whatever the
    files (:func:`reduce_blocks`)."""
    front = parts.reduce(_stats_frontier, plan, combine=MergeFrontiers(ColumnStats.merge),
                         progress=progress, message="column statistics")
    return front.finish(ColumnStats.merge, block_count(plan.n, plan.block))


def _nonfinite_rows(part: Part) -> np.ndarray:
    X, y = READ_CACHE.read(part)
    bad = ~(np.isfinite(X).all(axis=1) & np.isfinite(y))
    return part.start + np.flatnonzero(bad)


def nonfinite_rows(parts: PartMap, progress: Progress | None = None) -> np.ndarray:
    """Global indices (sorted) of the rows with a missing or non-finite value: the rows
    ``drop_nan`` leaves out."""
    got = parts.map(_nonfinite_rows, progress=progress, message="rows with missing values")
    return np.sort(np.concatenate([np.asarray(g, dtype=np.int64) for g in got]))


#: A column whose training standard deviation is below this keeps scale 1.
CONSTANT_SCALE = 1e-12


def training_moments(parts: PartMap, plan: RowPlan, progress: Progress | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Column means and standard deviations of the training rows (raw values, missing
    cells filled by the mean), reduced over the partitions."""
    stats = column_stats(parts, plan, progress)
    return stats.mean, np.sqrt(stats.m2 / max(plan.n_train, 1))


def prepared_plan(plan: RowPlan, stats: ColumnStats, standardize: bool = True
                  ) -> tuple[RowPlan, np.ndarray]:
    """The plan that fills each missing cell with its column's training mean and (when
    ``standardize``) scales by the training mean and standard deviation — filling first
    and scaling second: the filled cells add nothing to the sum of squared
    deviations, so the standard deviation is ``sqrt(m2 / n_train)``. A column of scale
    below :data:`CONSTANT_SCALE` keeps scale 1; their numbers are returned (0-based) for a
    note. The caller refuses a column with missing cells and no training value."""
    fill = stats.mean.copy() if stats.missing.any() else None
    if not standardize:
        return replace(plan, fill=fill), np.zeros(0, dtype=np.intp)
    scale = np.sqrt(stats.m2 / max(plan.n_train, 1))
    flat = np.flatnonzero(scale < CONSTANT_SCALE)
    scale[flat] = 1.0
    return replace(plan.with_scaling(stats.mean, scale), fill=fill), flat


def standardize_plan(parts: PartMap, plan: RowPlan, names: Sequence[str] | None = None,
                     progress: Progress | None = None) -> RowPlan:
    """The plan with the training rows' column statistics (missing cells filled by the
    training mean, constant columns kept with scale 1)."""
    return prepared_plan(plan, column_stats(parts, plan, progress))[0]
