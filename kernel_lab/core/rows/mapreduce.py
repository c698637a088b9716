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


class OnePart(LocalParts):
    """One part run in the caller's thread with the caller's BLAS threads (a
    :class:`LocalParts` limits each part's call to one, for parts run side by side; with
    one part that costs a few tenths of a millisecond per pass, which the Playground's
    small fits felt, and the cores of a large array)."""

    def calls(self, fn: Callable[..., Any], args: tuple[Any, ...],
              progress: Progress | None = None) -> Iterator[tuple[int, Any]]:
        for k, part in enumerate(self.parts):
            yield k, fn(part, *args)


def one_part(X: np.ndarray, y: np.ndarray | None = None) -> tuple[OnePart, RowPlan]:
    """Arrays handed to an estimator as one part of training rows: every row ``0 … n−1``
    a training row (:meth:`RowPlan.given` with no test rows), no scaling, run in this
    thread (:class:`OnePart`). What the fronts (samplers, DSG, conjugate gradients) run
    the implementation over parts on, so that the same rows give the same draws as in a
    data set whose training rows are global rows ``0 … n−1``. ``y`` defaults to zeros (a
    sampler needs no target)."""
    X = np.asarray(X, dtype=np.float64)
    n = int(X.shape[0])
    y = np.zeros(n) if y is None else np.asarray(y, dtype=np.float64)
    return OnePart([ArrayPart(0, 0, X, y)]), RowPlan.given(n, 0)


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
    sums, subsets); a worker that keeps what it has read answers the later passes from
    memory — the data stay spread over the workers, each holding a share. What it keeps
    of a part is its rows *as the computations see them* (:meth:`rows`: the training or
    the test rows, filled and standardised by a plan, with their global indices), so a
    later pass takes them as they are — no mask, no copy, no second standardisation. The
    raw rows (:meth:`read`, for the pass of column statistics that makes the plan) are
    kept only in room nothing else wants: the first prepared pass makes the prepared rows
    from them and they give way.

    What does not fit is read again in each pass, once: the last prepared rows of each
    kind that did not fit are held beyond the limit until the next miss of that kind, so
    the many calls one task makes on its part (a fused pass: every cell's call) read it
    once (without that, 4M rows in 16 files on 2 workers read a part up to 337 times in one
    ``nystrom`` run). Rows of the plan in use never give way to each other, since under
    repeated scans in one order an evicting (LRU) cache would miss every time while one
    that keeps its first entries hits on that share of them. Rows of
    another plan (an earlier run in the same worker) and raw rows give way to them, oldest
    first. In-memory parts (:class:`ArrayPart`) are not copied. Cached arrays are
    read-only: shared by later passes, never changed in place."""

    def __init__(self) -> None:
        self.limit = 0
        self.used = 0
        #: (part's key, plan's key or :data:`_RAW`) → (value, bytes), oldest first
        self.entries: dict[tuple[str, str], tuple[Any, int]] = {}
        #: per part (``repr``): [times its files were read, times its rows were prepared]
        #: by this process — what :func:`read_counts` reports (a run's locality, measured)
        self.counts: dict[str, list[int]] = {}
        #: per kind of rows (``which``): the last prepared rows that did not fit, kept
        #: beyond the limit until the next miss of that kind — the calls of one task
        #: (a fused pass makes every cell's call on the part) then read it once
        self.current: dict[str, tuple[tuple[str, str], Rows]] = {}

    def _count(self, part: Part, read: int, prepared: int) -> None:
        c = self.counts.setdefault(repr(part), [0, 0])
        c[0] += read
        c[1] += prepared

    def configure(self, limit: int) -> None:
        """Set the size limit; entries beyond a smaller limit are dropped."""
        self.limit = max(int(limit), 0)
        if self.limit == 0:
            self.current.clear()
        if self.used > self.limit:
            self.entries.clear()
            self.used = 0

    def read(self, part: Part) -> tuple[np.ndarray, np.ndarray]:
        """The part's raw rows (X, y), kept if there is free room."""
        if isinstance(part, ArrayPart):
            return part.read()
        if self.limit <= 0:
            self._count(part, 1, 0)
            return part.read()
        key = (_cache_key(part), _RAW)
        hit = self.entries.get(key)
        if hit is not None:
            return hit[0]
        self._count(part, 1, 0)
        X, y = part.read()
        self._keep(key, (X, y), (X, y), evict=False)
        return X, y

    def rows(self, part: Part, plan: RowPlan, which: str) -> Rows:
        """The part's training (or test) rows prepared by ``plan`` (:func:`part_rows`),
        kept while they fit (see the class docstring)."""
        if isinstance(part, ArrayPart):
            return _prepared_rows(part, plan, which, *part.read())
        if self.limit <= 0:
            self._count(part, 1, 1)
            return _prepared_rows(part, plan, which, *part.read())
        name = _cache_key(part)
        key = (name, f"{_plan_key(plan)}:{which}")
        hit = self.entries.get(key)
        if hit is not None:
            return hit[0]
        last = self.current.pop(which, None)
        if last is not None and last[0] == key:
            self.current[which] = last
            return last[1]
        del last  # (freed before the next rows are read)
        raw = self.entries.get((name, _RAW))
        self._count(part, 0 if raw else 1, 1)
        X, y = raw[0] if raw else part.read()
        rows = _prepared_rows(part, plan, which, X, y)
        if self._keep(key, rows, (rows.X, rows.y, rows.index), evict=True):
            self._alongside(part, plan, name, which, X, y)
        else:
            for a in (rows.X, rows.y, rows.index):
                a.flags.writeable = False
            self.current[which] = (key, rows)
        return rows

    def _alongside(self, part: Part, plan: RowPlan, name: str, which: str, X: np.ndarray,
                   y: np.ndarray) -> None:
        """After ``which`` rows of a part were kept: its rows of the other kind too, from
        the same raw rows, when they fit — so a part whose rows all fit is read once per
        plan, not once per kind (its raw rows give way before the test rows' pass)."""
        other = "test" if which == "train" else "train"
        plan_key = _plan_key(plan)
        key = (name, f"{plan_key}:{other}")
        count = plan.n_test if other == "test" else plan.n_train
        if key in self.entries or count <= 0:
            return
        need = int(count / plan.n * X.shape[0]) * (X.shape[1] + 2) * 8
        room = self.limit - self.used + sum(
            size for k, (_, size) in self.entries.items()
            if k[1] == _RAW or k[1].rsplit(":", 1)[0] != plan_key)
        if need > room:
            return
        try:
            rows = _prepared_rows(part, plan, other, X, y)
        except DataError:  # said when those rows are asked for
            return
        if self._keep(key, rows, (rows.X, rows.y, rows.index), evict=True):
            self._count(part, 0, 1)

    def _keep(self, key: tuple[str, str], value: Any, arrays: tuple[np.ndarray, ...],
              evict: bool) -> bool:
        """Keep ``value`` if it fits — with ``evict``, after dropping raw rows and rows of
        other plans, oldest first, as far as needed; whether it was kept."""
        size = sum(int(a.nbytes) for a in arrays)
        if size > self.limit:
            return False
        if evict and self.used + size > self.limit:
            plan = key[1].rsplit(":", 1)[0]
            for old in [k for k in self.entries
                        if k[1] == _RAW or k[1].rsplit(":", 1)[0] != plan]:
                self.used -= self.entries.pop(old)[1]
                if self.used + size <= self.limit:
                    break
        if self.used + size > self.limit:
            return False
        for a in arrays:
            a.flags.writeable = False
        self.entries[key] = (value, size)
        self.used += size
        return True


#: The cache's mark of a part's raw rows.
_RAW = "raw"


def _plan_key(plan: RowPlan) -> str:
    """What identifies the rows a plan prepares: its split, dropped rows, filling and
    scaling (not its block size, which does not change the rows)."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    h.update(repr((plan.seed, plan.n, plan.n_test, plan.cut, plan.given_test_start)).encode())
    for a in (plan.dropped, plan.fill, plan.mean, plan.scale):
        h.update(b"-" if a is None else np.ascontiguousarray(a).tobytes() + b"|")
    return h.hexdigest()


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


def read_counts(clear: bool = False) -> dict[str, tuple[int, int]]:
    """How often this process read each part's files and prepared its rows (the read
    cache's misses: ``repr(part)`` → (reads, preparations)), since it started or since the
    counts were last cleared (``clear`` clears them after reporting). A cluster whose
    tasks go to the worker that keeps their part reads and prepares each part once per
    plan and kind of rows."""
    got = {k: (v[0], v[1]) for k, v in READ_CACHE.counts.items()}
    if clear:
        READ_CACHE.counts.clear()
    return got


def read_cache_room() -> int:
    """Bytes the read cache of this process may still fill."""
    return max(READ_CACHE.limit - READ_CACHE.used, 0)


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
    was made); other parts' prepared rows are kept by this process's read cache while
    they fit (:func:`set_read_cache`), read-only."""
    if isinstance(part, MemoryPart):
        if part.split != split_signature(plan):
            raise ValueError(f"the plan splits {plan.n:,} rows otherwise than the rows held in "
                             "memory were split: use the data set's own plan")
        return part.held(which)
    return READ_CACHE.rows(part, plan, which)


def _prepared_rows(part: Part, plan: RowPlan, which: str, X: np.ndarray, y: np.ndarray
                   ) -> Rows:
    """:func:`part_rows` of the raw rows ``X, y`` of ``part``: selected, checked, filled
    and scaled — in place in the selected rows' own copy (the arithmetic of
    :meth:`RowPlan.prepared`, element by element: the same bits)."""
    index = np.arange(part.start, part.start + X.shape[0])
    keep = plan.which(index, which)
    own = not keep.all()
    if own:  # every row kept (an array as one part): views, no copy of X
        X, y, index = X[keep], y[keep], index[keep]
    finite = np.isfinite(X)
    holes = None
    bad = ~np.isfinite(y)
    if not finite.all():
        holes = np.isnan(X)
        bad |= (~(finite | holes)).any(axis=1) if plan.fill is not None else ~finite.all(axis=1)
    del finite
    if bad.any():
        first = int(index[np.flatnonzero(bad)[0]])
        where = holder_of(part, first)
        raise DataError(f"{where.describe()}: row {first:,} (row {first - where.start + 1:,} "
                        f"of this partition) has a missing or non-finite value that is not "
                        "filled; "
                        f"{int(bad.sum()):,} such rows in this partition",
                        "open the data again (its files may have changed), or drop the rows "
                        f"with missing values ({data_option('drop_nan', 'true')})")
    if not own or not X.flags.writeable:
        return Rows(plan.prepared(X, holes), y, index)
    if plan.fill is not None and holes is not None and holes.any():
        np.copyto(X, plan.fill, where=holes)  # np.where(holes, fill, X), in place
    if plan.mean is not None and plan.scale is not None:
        np.subtract(X, plan.mean, out=X)  # (X − mean) / scale, in place
        np.divide(X, plan.scale, out=X)
    return Rows(X, y, index)


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
    if isinstance(part, MemoryPart):  # its rows' indices are held: no split keys again
        index = part_rows(part, plan, which).index
    else:
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
