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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from kernel_lab.core.errors import DataError, ParameterError
from kernel_lab.core.executor import call_single_threaded
from kernel_lab.core.memory import memory_budget_bytes
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
        if not all(isinstance(p, ArrayPart) for p in self.parts):
            set_read_cache(cache)

    def map(self, fn: Callable[..., Any], *args: Any, progress: Progress | None = None,
            message: str = "") -> list[Any]:
        out = []
        for k, part in enumerate(self.parts):
            out.append(call_single_threaded(lambda p: fn(p, *args), part))
            if progress is not None:
                progress((k + 1) / len(self.parts),
                         f"{message} ({k + 1}/{len(self.parts)} partitions)")
        return out

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
    """The split of n rows (seeded, per row) and the columns' standardisation.

    ``cut``: rows whose split key is at most ``cut`` are test rows (None: no test rows);
    ``mean``/``scale``: ``(x − mean) / scale`` per column, or None to keep raw values;
    ``block``: rows per canonical block (:mod:`kernel_lab.core.rows.blocks`), the unit every
    computation per row and every sum over rows is done in — it travels with the plan, so
    the workers of a cluster use the client's."""

    seed: int
    n: int
    n_test: int
    cut: int | None
    mean: np.ndarray | None = None
    scale: np.ndarray | None = None
    block: int = field(default_factory=row_block)

    @classmethod
    def split(cls, seed: int, n: int, test_fraction: float, source: str | None = None
              ) -> RowPlan:
        n_test = test_count(n, test_fraction, source)
        cut = (int(rowkeys.threshold(seed, rowkeys.SPLIT, n, n_test)) if n_test else None)
        return cls(int(seed), int(n), n_test, cut)

    @property
    def n_train(self) -> int:
        return self.n - self.n_test

    def is_test(self, rows: np.ndarray) -> np.ndarray:
        if self.cut is None:
            return np.zeros(np.asarray(rows).shape, dtype=bool)
        return rowkeys.is_selected(self.seed, rowkeys.SPLIT, rows, np.uint64(self.cut))

    def scaled(self, X: np.ndarray) -> np.ndarray:
        if self.mean is None or self.scale is None:
            return X
        return (X - self.mean) / self.scale

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


def part_rows(part: Part, plan: RowPlan, which: str = "train") -> Rows:
    """The training (``which="train"``) or test rows of a partition, standardised by the
    plan. Raw values are checked: a non-finite value is a :class:`DataError` naming the
    partition and the row."""
    X, y = READ_CACHE.read(part)
    index = np.arange(part.start, part.start + X.shape[0])
    bad = ~(np.isfinite(X).all(axis=1) & np.isfinite(y))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise DataError(f"{part.describe()}: row {part.start + first:,} (row {first + 1:,} "
                        f"of this partition) has a missing or non-finite value; "
                        f"{int(bad.sum()):,} such rows in this partition",
                        "drop or fill the missing values before opening the data")
    test = plan.is_test(index)
    keep = test if which == "test" else ~test
    return Rows(plan.scaled(X[keep]), y[keep], index[keep])


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


def _moments(rows: Rows) -> tuple[int, np.ndarray, np.ndarray]:
    X = rows.X
    if X.shape[0] == 0:
        return 0, np.zeros(X.shape[1]), np.zeros(X.shape[1])
    mean = X.mean(axis=0)
    d = X - mean
    return X.shape[0], mean, np.einsum("ij,ij->j", d, d)


def _merge_moments(a: tuple[int, np.ndarray, np.ndarray], b: tuple[int, np.ndarray, np.ndarray]
                   ) -> tuple[int, np.ndarray, np.ndarray]:
    """Chan et al.'s pairwise update of (count, mean, sum of squared deviations)."""
    na, ma, sa = a
    nb, mb, sb = b
    if na == 0:
        return b
    if nb == 0:
        return a
    n = na + nb
    delta = mb - ma
    return n, ma + delta * (nb / n), sa + sb + delta * delta * (na * nb / n)


def training_moments(parts: PartMap, plan: RowPlan, progress: Progress | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Column means and standard deviations of the training rows (raw values), reduced
    over the partitions; a constant column is a :class:`DataError` naming it by number."""
    n, mean, ss = reduce_blocks(parts, _moments, replace(plan, mean=None, scale=None),
                                combine=_merge_moments, progress=progress,
                                message="column statistics")
    std = np.sqrt(ss / max(n, 1))
    return mean, std


def standardize_plan(parts: PartMap, plan: RowPlan, names: Sequence[str] | None = None,
                     progress: Progress | None = None) -> RowPlan:
    """The plan with the training rows' column statistics (constant columns refused)."""
    mean, std = training_moments(parts, plan, progress)
    flat = np.flatnonzero(~(std > 0))
    if flat.size:
        label = ", ".join(repr(names[j]) if names else f"column {j + 1}" for j in flat[:5])
        raise DataError(f"constant column{'s' if flat.size > 1 else ''} {label} in the "
                        "training rows: nothing to standardise by",
                        "drop the column, or open the data without standardisation")
    return plan.with_scaling(mean, std)


def _take(part: Part, plan: RowPlan, which: str, wanted: np.ndarray) -> Rows:
    lo, hi = np.searchsorted(wanted, [part.start, part.start + part.rows])
    if hi == lo:
        return Rows(np.zeros((0, 0)), np.zeros(0), np.zeros(0, dtype=np.int64))
    rows = part_rows(part, plan, which)
    keep = np.isin(rows.index, wanted[lo:hi])
    return Rows(rows.X[keep], rows.y[keep], rows.index[keep])


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
    test = plan.is_test(index)
    index = index[test] if which == "test" else index[~test]
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
    """A data set that stays in its partitions: what an experiment gets instead of a
    :class:`~kernel_lab.core.dataset.Dataset` when the rows are not gathered.

    ``parts`` runs computations on the partitions (in this process or on a cluster);
    ``plan`` says which rows train and test and how columns are standardised."""

    parts: PartMap
    plan: RowPlan
    feature_names: list[str]
    target_name: str
    name: str = ""
    notes: list[str] = field(default_factory=list)
    #: "regression" or "classification" (a target with two values), from the source.
    task: str = "regression"
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
                "warnings": list(self.warnings)}
