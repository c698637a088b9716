"""Data in partitions, and computations that map over them and reduce.

A partitioned data set (a folder of Parquet files, a Zarr store, or arrays cut into pieces)
is a sequence of :class:`Part` objects: each knows the global index of its first row, its
number of rows, and how to read them (``part.read() -> (X, y)``, raw float64 values). A
part is small and picklable, so it travels to the machine that reads it; the rows never
travel back unless a computation asks for a few of them (landmarks, an evaluation subset).

Computations are written once against :class:`PartMap`:

- ``map(fn, *args)`` calls ``fn(part, *args)`` on every part and returns the results in part
  order;
- ``reduce(fn, *args, combine=add)`` combines the per-part results pairwise in a fixed tree
  (parts 0+1, 2+3, …, then the pairs' results, …) — the same tree in memory and on a
  cluster.

Sums over rows go through :func:`reduce_blocks`: a function of the rows of one canonical
block (``plan.block`` global rows, :mod:`kernel_lab.core.rows.blocks`), its values combined
in one fixed tree over the *block* numbers. With parts cut at block boundaries
(:func:`~kernel_lab.core.rows.align_parts`) every block is computed whole, with the same
rows, and added in the same order, however the rows are stored — so one Parquet file,
sixteen of unequal sizes and a Zarr store give the same bits, here or on a cluster.

:class:`LocalParts` runs them in this process, one part at a time, each with one BLAS thread
(as a cluster worker does); :mod:`kernel_lab.engine.dask_parts` runs them on Dask.

Which rows are training and test rows, and how columns are standardised, is a small
picklable :class:`RowPlan`: the split is defined per row by :mod:`kernel_lab.core.rows.keys`
(the ``n_test`` rows with the smallest split keys are the test rows), so it does not depend
on where the rows live or how they are cut.
"""

from __future__ import annotations

import itertools
import operator
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from kernel_lab.core.errors import DataError, ParameterError, data_option
from kernel_lab.core.executor import call_single_threaded
from kernel_lab.core.memory import check_allocation, memory_budget_bytes
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.blocks import (
    Frontier,
    MergeFrontiers,
    block_count,
    row_block,
    tree_combine,
)


class Part(Protocol):
    """One partition: rows ``start … start + rows − 1`` of the data set."""

    index: int
    start: int
    rows: int

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        """The partition's rows: X (rows × p, float64) and y (rows,), as stored."""
        ...

    def describe(self) -> str:
        """Where the partition lives, for messages (a file name, a chunk of a store)."""
        ...


@dataclass(frozen=True)
class ArrayPart:
    """A partition held as arrays (in memory, or a test's pieces of one data set)."""

    index: int
    start: int
    X: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)

    @property
    def rows(self) -> int:
        return int(self.X.shape[0])

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.X, dtype=np.float64), np.asarray(self.y, dtype=np.float64)

    def read_range(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``lo … hi − 1`` of the part (views when the arrays are float64)."""
        return (np.asarray(self.X[lo:hi], dtype=np.float64),
                np.asarray(self.y[lo:hi], dtype=np.float64))

    def describe(self) -> str:
        return f"rows {self.start:,}–{self.start + self.rows - 1:,} (in memory)"


def array_parts(X: np.ndarray, y: np.ndarray, pieces: int | Sequence[int] = 1
                ) -> list[ArrayPart]:
    """X and y cut into ``pieces`` parts of near-equal size (or at the given row counts)."""
    n = X.shape[0]
    if isinstance(pieces, int):
        bounds = np.linspace(0, n, max(1, pieces) + 1).round().astype(int)
    else:
        bounds = np.concatenate([[0], np.cumsum(pieces)]).astype(int)
        if bounds[-1] != n:
            raise ValueError(f"the part sizes add up to {bounds[-1]}, not {n}")
    spans = [(int(a), int(b)) for a, b in itertools.pairwise(bounds) if b > a]
    return [ArrayPart(k, a, X[a:b], y[a:b]) for k, (a, b) in enumerate(spans)]


@dataclass(frozen=True)
class MemoryPart:
    """A data set held in memory as one part: its rows already split and prepared.

    Global rows ``0 … rows − 1`` (training, test and dropped rows alike); ``X_train``,
    ``y_train`` hold the training rows filled and standardised by the plan they were made
    with, in global row order, ``i_train`` their sorted global indices, and likewise the
    test rows. :func:`part_rows` hands out views of these arrays — no mask, no copy, no
    second preparation — so every computation written against parts runs on it unchanged,
    with the bits of the same rows read raw from files and prepared by the same plan.
    ``split``: ``(seed, n, n_test, cut, given_test_start, n_dropped)`` of that plan, which
    :func:`part_rows` checks a plan against. The raw values are not kept (:meth:`read`
    refuses); its arrays travel to a process pool once, through shared memory
    (:mod:`kernel_lab.engine.pool_parts`)."""

    index: int
    start: int
    rows: int
    X_train: np.ndarray = field(repr=False)
    y_train: np.ndarray = field(repr=False)
    i_train: np.ndarray = field(repr=False)
    X_test: np.ndarray = field(repr=False)
    y_test: np.ndarray = field(repr=False)
    i_test: np.ndarray = field(repr=False)
    split: tuple[Any, ...] = ()

    @property
    def X(self) -> np.ndarray:
        """The training rows (their width, for size estimates)."""
        return self.X_train

    def held(self, which: str) -> Rows:
        """The training (``which="train"``) or test rows, as views."""
        if which == "test":
            return Rows(self.X_test, self.y_test, self.i_test)
        return Rows(self.X_train, self.y_train, self.i_train)

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        raise TypeError("an in-memory data set holds its rows already split and prepared: "
                        "read them with part_rows (its raw values are not kept), and compute "
                        "column statistics or missing values on the table it was made from")

    def describe(self) -> str:
        return f"rows 0–{self.rows - 1:,} (in memory)"


def split_signature(plan: RowPlan) -> tuple[Any, ...]:
    """What identifies a plan's split (:attr:`MemoryPart.split`)."""
    return (plan.seed, plan.n, plan.n_test, plan.cut, plan.given_test_start,
            plan.n_dropped)


class PartMap(Protocol):
    """Runs functions over the parts of a data set (see the module docstring)."""

    parts: Sequence[Part]

    def map(self, fn: Callable[..., Any], *args: Any, progress: Progress | None = None,
            message: str = "") -> list[Any]: ...

    def reduce(self, fn: Callable[..., Any], *args: Any,
               combine: Callable[[Any, Any], Any] = operator.add,
               progress: Progress | None = None, message: str = "") -> Any: ...


class LocalParts:
    """:class:`PartMap` in this process: one part at a time, one BLAS thread per call.

    ``cache``: bytes of the partitions read that this process may keep for the later
    passes of a run (:func:`set_read_cache`; default none — the window's loader, say, makes
    one pass); runs ask for a share of the memory budget (:func:`run_cache_bytes`)."""

    def __init__(self, parts: Sequence[Part], cache: int = 0) -> None:
        self.parts = list(parts)
        if not all(isinstance(p, (ArrayPart, MemoryPart)) for p in self.parts):
            set_read_cache(cache)

    def map(self, fn: Callable[..., Any], *args: Any, progress: Progress | None = None,
            message: str = "") -> list[Any]:
        total = len(self.parts)
        out: list[Any] = [None] * total
        for done, (k, value) in enumerate(self.calls(fn, args, progress), start=1):
            out[k] = value
            if progress is not None:
                progress(done / total, f"{message} ({done}/{total} partitions)")
        return out

    def calls(self, fn: Callable[..., Any], args: tuple[Any, ...],
              progress: Progress | None = None) -> Iterator[tuple[int, Any]]:
        """``(k, fn(parts[k], *args))`` for every part, as each is done: here one after the
        other, in part order. The one step a process pool replaces
        (:mod:`kernel_lab.engine.pool_parts`), which may also check ``progress`` for
        cancellation while it waits; everything else — the results' order, the reports,
        the combining tree — stays this class's."""
        for k, part in enumerate(self.parts):
            yield k, call_single_threaded(lambda p: fn(p, *args), part)

    def reduce(self, fn: Callable[..., Any], *args: Any,
               combine: Callable[[Any, Any], Any] = operator.add,
               progress: Progress | None = None, message: str = "") -> Any:
        return tree_combine(self.map(fn, *args, progress=progress, message=message), combine)


# ---------------------------------------------------------------------------------------
# Which rows train and test, and the columns' scaling


def test_count(n: int, test_fraction: float, source: str | None = None) -> int:
    """Test rows of a split of n rows: ``round(fraction · n)``, at least one for a positive
    fraction, leaving at least two training rows (else a :class:`DataError` naming
    ``source``)."""
    if not 0.0 <= test_fraction < 1.0:
        raise ParameterError(f"test fraction must be in [0, 1), got {test_fraction}")
    n_test = round(test_fraction * n)
    if test_fraction > 0:
        n_test = max(n_test, 1)
    if n - n_test < 2:
        rows = "row" if n == 1 else "rows"
        held = f" with {n_test} held out for testing" if n_test else ""
        raise DataError(f"only {n} {rows}{held}: too few to keep at least two for training",
                        "use a larger data set or a smaller test fraction", path=source)
    return n_test


def split_masks(seed: int, n: int, n_test: int, rows: np.ndarray) -> np.ndarray:
    """True for the test rows among the global row indices ``rows`` (the ``n_test`` rows of
    ``0 … n−1`` with the smallest split keys)."""
    if n_test == 0:
        return np.zeros(np.asarray(rows).shape, dtype=bool)
    return rowkeys.is_selected(seed, rowkeys.SPLIT, rows,
                               rowkeys.threshold(seed, rowkeys.SPLIT, n, n_test))


@dataclass(frozen=True)
class RowPlan:
    """The split of n rows (seeded, per row), the rows dropped, and the columns' filling
    and standardisation.

    ``cut``: rows whose split key is at most ``cut`` are test rows (None: no test rows);
    ``dropped``: sorted global indices of rows that are neither training nor test rows
    (``drop_nan``: a missing or non-finite value); ``fill``: per column, the value a
    missing (NaN) feature cell takes (None: a missing cell is refused where it is read);
    ``mean``/``scale``: ``(x − mean) / scale`` per column, or None to keep raw values;
    ``block``: rows per canonical block (:mod:`kernel_lab.core.rows.blocks`), the unit every
    computation per row and every sum over rows is done in — it travels with the plan, so
    the workers of a cluster use the client's; ``given_test_start``: a *given* split
    (:meth:`given`: generated data, plain arrays) — global rows at or past it are the test
    rows, no keys (``cut`` is then None)."""

    seed: int
    n: int
    n_test: int
    cut: int | None
    mean: np.ndarray | None = None
    scale: np.ndarray | None = None
    fill: np.ndarray | None = None
    dropped: np.ndarray | None = None
    block: int = field(default_factory=row_block)
    given_test_start: int | None = None

    @classmethod
    def split(cls, seed: int, n: int, test_fraction: float, source: str | None = None,
              dropped: np.ndarray | None = None) -> RowPlan:
        """The keyed split of rows ``0 … n−1``; ``dropped`` (global indices) are left
        out, the test rows counted among the others (``round(fraction · kept)``)."""
        gone = (None if dropped is None or len(dropped) == 0
                else np.unique(np.asarray(dropped, dtype=np.int64)))
        n_test = test_count(n - (0 if gone is None else gone.size), test_fraction, source)
        cut = (int(rowkeys.threshold(seed, rowkeys.SPLIT, n, n_test, exclude=gone))
               if n_test else None)
        return cls(int(seed), int(n), n_test, cut, dropped=gone)

    @classmethod
    def given(cls, n: int, n_test: int, seed: int = 0) -> RowPlan:
        """The given split of rows ``0 … n−1``: the last ``n_test`` are the test rows, the
        others the training rows (data drawn as a training and a test sample, arrays handed
        over as they are). ``seed`` is the seed of the keyed choices made on the rows."""
        if not 0 <= n_test <= n:
            raise ValueError(f"{n_test} test rows of {n}")
        return cls(int(seed), int(n), int(n_test), None, given_test_start=int(n - n_test))

    @property
    def n_dropped(self) -> int:
        return 0 if self.dropped is None else int(self.dropped.size)

    @property
    def n_train(self) -> int:
        return self.n - self.n_test - self.n_dropped

    def kept(self, rows: np.ndarray) -> np.ndarray:
        """Whether each global row is kept (not dropped for a missing value)."""
        rows = np.asarray(rows)
        if self.dropped is None:
            return np.ones(rows.shape, dtype=bool)
        at = np.minimum(np.searchsorted(self.dropped, rows), self.dropped.size - 1)
        return self.dropped[at] != rows

    def is_test(self, rows: np.ndarray) -> np.ndarray:
        if self.given_test_start is not None:
            test = np.asarray(rows) >= self.given_test_start
            return test if self.dropped is None else test & self.kept(rows)
        if self.cut is None:
            return np.zeros(np.asarray(rows).shape, dtype=bool)
        test = rowkeys.is_selected(self.seed, rowkeys.SPLIT, rows, np.uint64(self.cut))
        return test if self.dropped is None else test & self.kept(rows)

    def is_train(self, rows: np.ndarray) -> np.ndarray:
        """Whether each global row is a training row (neither test nor dropped)."""
        train = ~self.is_test(rows)
        return train if self.dropped is None else train & self.kept(rows)

    def which(self, rows: np.ndarray, which: str) -> np.ndarray:
        """:meth:`is_test` for ``which="test"``, else :meth:`is_train`."""
        return self.is_test(rows) if which == "test" else self.is_train(rows)

    def scaled(self, X: np.ndarray) -> np.ndarray:
        if self.mean is None or self.scale is None:
            return X
        return (X - self.mean) / self.scale

    def prepared(self, X: np.ndarray, holes: np.ndarray | None = None) -> np.ndarray:
        """Rows as the computations see them: missing cells (``holes``, default where X
        is NaN) filled, then scaled."""
        if self.fill is not None:
            holes = np.isnan(X) if holes is None else holes
            if holes.any():
                X = np.where(holes, self.fill, X)
        return self.scaled(X)

    def with_scaling(self, mean: np.ndarray, scale: np.ndarray) -> RowPlan:
        return replace(self, mean=np.asarray(mean, float), scale=np.asarray(scale, float))


@dataclass(frozen=True)
class Rows:
    """Rows of one partition: X, y and their global indices (in file order)."""

    X: np.ndarray
    y: np.ndarray
    index: np.ndarray


class _ReadCache:
    """Partitions read by this process, kept while they fit in ``limit`` bytes.

    A computation passes over the same partitions many times (statistics, landmarks,
    sums, subsets); a worker that keeps the partitions it has read answers the later
    passes from memory — the data stay spread over the workers, each holding a share.
    What does not fit is read again each time: the cache never evicts, since under
    repeated scans in one order an evicting (LRU) cache would miss every time while one
    that keeps its first entries hits on that share of them. In-memory parts
    (:class:`ArrayPart`) are not copied."""

    def __init__(self) -> None:
        self.limit = 0
        self.used = 0
        self.entries: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def configure(self, limit: int) -> None:
        """Set the size limit; entries beyond a smaller limit are dropped."""
        self.limit = max(int(limit), 0)
        if self.used > self.limit:
            self.entries.clear()
            self.used = 0

    def read(self, part: Part) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(part, ArrayPart) or self.limit <= 0:
            return part.read()
        key = _cache_key(part)
        hit = self.entries.get(key)
        if hit is not None:
            return hit
        X, y = part.read()
        size = X.nbytes + y.nbytes
        if self.used + size <= self.limit:
            X.flags.writeable = False  # shared by later passes: never changed in place
            y.flags.writeable = False
            self.entries[key] = (X, y)
            self.used += size
        return X, y


def _cache_key(part: Part) -> str:
    """The part and, for a part read from files, each file's size and modification time:
    a file rewritten since it was kept is read again."""
    paths = getattr(part, "paths", None) or (getattr(part, "path", None),)
    stamps = []
    for path in paths:
        if isinstance(path, str):
            try:
                st = os.stat(path)
                stamps.append(f"{st.st_size}:{st.st_mtime_ns}")
            except OSError:
                stamps.append("?")
    return f"{part!r}@{','.join(stamps)}"


READ_CACHE = _ReadCache()


def run_cache_bytes() -> int:
    """What a run in this process may keep of the partitions it reads: a quarter of the
    memory budget."""
    return memory_budget_bytes() // 4


def set_read_cache(limit: int) -> None:
    """Let this process keep up to ``limit`` bytes of the partitions it reads (0: none)."""
    READ_CACHE.configure(limit)


def holder_of(part: Part, row: int) -> Part:
    """The file or chunk holding global row ``row`` of ``part`` (a part of whole row blocks
    may read several): what a message about the row names."""
    holder = getattr(part, "holder", None)
    return part if holder is None else holder(row)


def part_rows(part: Part, plan: RowPlan, which: str = "train") -> Rows:
    """The training (``which="train"``) or test rows of a partition, filled and
    standardised by the plan (dropped rows are in neither). Raw values are checked: a
    value the plan neither drops nor fills (a missing target, an infinite value, or any
    missing value of a plan without ``fill``) is a :class:`DataError` naming the partition
    and the row. A :class:`MemoryPart` gives views of its prepared rows (checked when it
    was made)."""
    if isinstance(part, MemoryPart):
        if part.split != split_signature(plan):
            raise ValueError(f"the plan splits {plan.n:,} rows otherwise than the rows held in "
                             "memory were split: use the data set's own plan")
        return part.held(which)
    X, y = READ_CACHE.read(part)
    index = np.arange(part.start, part.start + X.shape[0])
    keep = plan.which(index, which)
    if not keep.all():  # every row kept (an array as one part): views, no copy of X
        X, y, index = X[keep], y[keep], index[keep]
    finite = np.isfinite(X)
    holes = None
    bad = ~np.isfinite(y)
    if not finite.all():
        holes = np.isnan(X)
        bad |= (~(finite | holes)).any(axis=1) if plan.fill is not None else ~finite.all(axis=1)
    if bad.any():
        first = int(index[np.flatnonzero(bad)[0]])
        where = holder_of(part, first)
        raise DataError(f"{where.describe()}: row {first:,} (row {first - where.start + 1:,} "
                        f"of this partition) has a missing or non-finite value that is not "
                        "filled; "
                        f"{int(bad.sum()):,} such rows in this partition",
                        "open the data again (its files may have changed), or drop the rows "
                        f"with missing values ({data_option('drop_nan', 'true')})")
    return Rows(plan.prepared(X, holes), y, index)


# ---------------------------------------------------------------------------------------
# Sums over rows: per canonical block, combined in the one tree over the blocks


def part_blocks(part: Part, plan: RowPlan, which: str = "train") -> list[tuple[int, Rows]]:
    """The part's training (or test) rows cut into canonical blocks of ``plan.block``
    global rows: ``(block number, rows)`` for every block the part's rows touch (a block
    without rows of that kind too: the tree has a leaf for every block). The first and
    last block hold only the part's rows of them when the part is not cut at block
    boundaries (:func:`~kernel_lab.core.rows.align_parts`). The rows are views."""
    if part.rows <= 0:
        return []
    rows = part_rows(part, plan, which)
    B = int(plan.block)
    end = part.start + part.rows
    first, last = part.start // B, (end - 1) // B
    bounds = np.searchsorted(rows.index, np.arange(first, last + 2, dtype=np.int64) * B)
    out = [(first + k, Rows(rows.X[a:b], rows.y[a:b], rows.index[a:b]))
           for k, (a, b) in enumerate(itertools.pairwise(bounds.tolist()))]
    return out


def _block_frontier(part: Part, fn: Callable[..., Any], plan: RowPlan, which: str,
                    combine: Callable[[Any, Any], Any], args: tuple[Any, ...]) -> Frontier:
    """A part's task of :func:`reduce_blocks`: ``fn`` on each of its blocks, folded into
    the part's frontier of the canonical tree."""
    return Frontier.of(((k, fn(rows, *args)) for k, rows in part_blocks(part, plan, which)),
                       combine, rows=(part.start, part.start + part.rows), block=plan.block,
                       n=plan.n)


def reduce_blocks(parts: PartMap, fn: Callable[..., Any], plan: RowPlan, *args: Any,
                  which: str = "train", combine: Callable[[Any, Any], Any] = operator.add,
                  progress: Progress | None = None, message: str = "") -> Any:
    """``fn(rows, *args)`` on the training (or test) rows of every canonical block of the
    data, combined in the one fixed tree over the block numbers
    (:class:`~kernel_lab.core.rows.blocks.Frontier`): each part folds its blocks into its
    frontier, the parts' frontiers merge in the PartMap's pairwise tree (on the workers of
    a cluster), and the client takes the root. With parts cut at block boundaries the
    result is the same bits whatever the parts — one file or sixteen, this process or a
    cluster. ``fn`` must be a module-level function (it travels); it is called on every
    block, with no rows too."""
    front = parts.reduce(_block_frontier, fn, plan, which, combine, tuple(args),
                         combine=MergeFrontiers(combine), progress=progress, message=message)
    return front.finish(combine, block_count(plan.n, plan.block))


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
        stats.count[:] = A.shape[0]
        stats.mean = A.mean(axis=0)
        d = A - stats.mean
        stats.m2 = np.einsum("ij,ij->j", d, d)
        return stats
    ok = np.isfinite(A)
    stats.count = ok.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        stats.mean = np.where(stats.count > 0, np.where(ok, A, 0.0).sum(axis=0)
                              / stats.count, 0.0)
    d = np.where(ok, A - stats.mean, 0.0)
    stats.m2 = np.einsum("ij,ij->j", d, d)
    return stats


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


#: A column whose training standard deviation is below this keeps scale 1 (as in memory).
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
    and scaling second, as in memory: the filled cells add nothing to the sum of squared
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


def _take(part: Part, plan: RowPlan, which: str, wanted: np.ndarray) -> Rows:
    lo, hi = np.searchsorted(wanted, [part.start, part.start + part.rows])
    if hi == lo:
        return Rows(np.zeros((0, 0)), np.zeros(0), np.zeros(0, dtype=np.int64))
    rows = part_rows(part, plan, which)
    wanted = wanted[lo:hi]
    at = np.minimum(np.searchsorted(rows.index, wanted), max(rows.index.size - 1, 0))
    keep = at[rows.index[at] == wanted] if rows.index.size else at[:0]
    return Rows(np.take(rows.X, keep, axis=0), rows.y[keep], rows.index[keep])


def take_rows(parts: PartMap, plan: RowPlan, index: np.ndarray, which: str = "train"
              ) -> Rows:
    """The rows with the given global indices (of the training or test rows), gathered
    in increasing index order; only the parts that hold them are read."""
    wanted = np.unique(np.asarray(index, dtype=np.int64))
    got = [r for r in parts.map(_take, plan, which, wanted) if r.index.size]
    if not got:
        return Rows(np.zeros((0, 0)), np.zeros(0), np.zeros(0, dtype=np.int64))
    return Rows(np.concatenate([r.X for r in got]), np.concatenate([r.y for r in got]),
                np.concatenate([r.index for r in got]))


def _smallest_keys(part: Part, plan: RowPlan, which: str, stream: int, k: int,
                   seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    index = np.arange(part.start, part.start + part.rows)
    index = index[plan.which(index, which)]
    key = rowkeys.keys(plan.seed if seed is None else seed, stream, index)
    pick = rowkeys.smallest(key, index, k)
    return key[pick], index[pick]


def keyed_subset(parts: PartMap, plan: RowPlan, stream: int, k: int, which: str = "train",
                 seed: int | None = None) -> np.ndarray:
    """Global indices (sorted) of ``k`` rows of the training or test rows, a uniform random
    subset defined per row by ``(plan.seed, stream)`` — no row is read, only indices.
    ``seed`` replaces ``plan.seed`` in the keys (a trial's own draws; the split stays)."""
    got = parts.map(_smallest_keys, plan, which, stream, k, seed)
    key = np.concatenate([g[0] for g in got])
    index = np.concatenate([g[1] for g in got])
    return np.sort(index[rowkeys.smallest(key, index, k)])


def keyed_subset_of(index: np.ndarray, seed: int, stream: int, k: int) -> np.ndarray:
    """The same rule as :func:`keyed_subset` on indices held in memory (sorted result)."""
    index = np.asarray(index, dtype=np.int64)
    return np.sort(index[rowkeys.smallest(rowkeys.keys(seed, stream, index), index, k)])


@dataclass
class PartitionedData:
    """A data set that stays in its partitions, with the interface of a data set in memory
    (:class:`~kernel_lab.core.dataset.Dataset`): an experiment takes either alike.

    ``parts`` runs computations on the partitions (in this process or on a cluster);
    ``plan`` says which rows train and test and how columns are standardised. What needs
    every row at once reads :attr:`X_train` … : the prepared rows gathered in global row
    order, checked first against the memory budget (refused, with the seeded sample
    offered, when they do not fit)."""

    parts: PartMap
    plan: RowPlan
    feature_names: list[str]
    target_name: str
    name: str = ""
    notes: list[str] = field(default_factory=list)
    #: "regression", "classification" (a target with two values) or "multiclass" (class
    #: codes 0 … K−1 of a text target, named by :attr:`classes`), from the source.
    task: str = "regression"
    #: The class names of a text target with more than two values (codes 0 … K−1).
    classes: list[str] | None = None
    #: The first training rows (for a preview), once :meth:`first_rows` has read them.
    head: Rows | None = None
    #: What the user should look at before trusting a result (target leakage, …).
    warnings: list[str] = field(default_factory=list)

    @property
    def n_train(self) -> int:
        return self.plan.n_train

    @property
    def n_test(self) -> int:
        return self.plan.n_test

    @property
    def p(self) -> int:
        return len(self.feature_names)

    #: The rows stay in their partitions until something reads every training row at
    #: once (:attr:`X_train` …, gathered when they fit in memory).
    in_memory = False
    #: A table's own column names before encoding (a text column before one-hot): the
    #: partitioned readers name the stored columns themselves, so none.
    columns = None
    #: No generating process and no noiseless target: the rows come from files.
    source = None
    f_train = None
    f_test = None
    #: The gathered rows (:meth:`gathered`), by ``"train"`` / ``"test"``.
    _gathered: dict[str, Rows] = field(default_factory=dict, repr=False, compare=False)

    def gathered(self, which: str = "train") -> Rows:
        """Every training (or test) row, prepared as the computations see them (filled,
        standardised), in global row order, read from the partitions once and kept.

        Raises
        ------
        MemoryBudgetError
            When the rows do not fit in the memory budget: the error names the data, the
            size, and the seeded sample (``subsample=N``) that would fit.
        """
        rows = self._gathered.get(which)
        if rows is None:
            check_gather(self, which)
            rows = gather_rows(self.parts, self.plan, which)
            self._gathered[which] = rows
        return rows

    @property
    def X_train(self) -> np.ndarray:
        """The training rows, prepared, in global row order (:meth:`gathered`)."""
        return self.gathered("train").X

    @property
    def y_train(self) -> np.ndarray:
        return self.gathered("train").y

    @property
    def X_test(self) -> np.ndarray:
        """The test rows, prepared, in global row order (:meth:`gathered`)."""
        return self.gathered("test").X

    @property
    def y_test(self) -> np.ndarray:
        return self.gathered("test").y

    def first_rows(self, rows: int = 8) -> Rows:
        """The first ``rows`` training rows (standardised), read from the first partitions
        that have any, and kept in :attr:`head`."""
        if self.head is None or self.head.index.size < rows:
            got: list[Rows] = []
            for part in self.parts.parts:
                got.append(part_rows(part, self.plan))
                if sum(r.index.size for r in got) >= rows:
                    break
            self.head = Rows(np.concatenate([r.X for r in got])[:rows],
                             np.concatenate([r.y for r in got])[:rows],
                             np.concatenate([r.index for r in got])[:rows])
        return self.head

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "n_train": self.n_train, "n_test": self.n_test,
                "p": self.p, "partitions": len(self.parts.parts), "target": self.target_name,
                "task": self.task, "notes": list(self.notes),
                "classes": None if self.classes is None else list(self.classes),
                "synthetic": False, "truth": None, "warnings": list(self.warnings)}


#: How many copies of the gathered rows exist at once while they are joined: each
#: part's rows, then the joined array.
GATHER_COPIES = 2


def gather_bytes(data: PartitionedData, which: str = "train") -> int:
    """Peak bytes of gathering the training (or test) rows of ``data`` into memory
    (float64 features and target, :data:`GATHER_COPIES` copies while they are joined)."""
    n = data.n_train if which == "train" else data.n_test
    return GATHER_COPIES * 8 * n * (data.p + 1)


def check_gather(data: PartitionedData, which: str = "train") -> None:
    """Refuse (:class:`~kernel_lab.core.errors.MemoryBudgetError`) to gather rows that do
    not fit in the memory budget, naming the data, the size and the seeded sample."""
    n = data.n_train if which == "train" else data.n_test
    where = f"of {data.name}" if data.name else "of the data"
    k = len(data.parts.parts)
    check_allocation(
        gather_bytes(data, which),
        f"all {n:,} {'training' if which == 'train' else 'test'} rows {where} "
        f"({n:,} × {data.p} values, kept in {k} partition{'s' if k != 1 else ''}) read "
        "into memory at once",
        f"Use a seeded sample of the rows ({data_option('subsample', 'N')}, e.g. 2000), "
        "or an experiment that works on the rows where they are (nystrom, learning-curve).")


def gather_rows(parts: PartMap, plan: RowPlan, which: str = "train") -> Rows:
    """Every training (or test) row of the parts, prepared by the plan, in global row
    order (the parts are in row order): one map over the parts, each sending back its
    rows. The caller checks the memory first (:func:`check_gather`)."""
    every = parts.map(part_rows, plan, which)
    got = [r for r in every if r.index.size] or every[:1]
    if len(got) == 1:
        return got[0]
    return Rows(np.concatenate([r.X for r in got]), np.concatenate([r.y for r in got]),
                np.concatenate([r.index for r in got]))
