"""Dask arrays and dataframes as data sets of the row layer, fitted where their chunks are.

An estimator given a Dask array X (or a Dask dataframe, whose columns must be numbers) and
its targets y fits on the chunks without gathering them: :func:`dask_rows` makes a
:class:`DaskRows` — one part per row chunk (:class:`ChunkPart`, its global row indices
from the chunk sizes), y cut at the same rows, and the plan a given split with no test rows
and no standardisation (:meth:`~kernel_lab.core.rows.mapreduce.RowPlan.given`: the
estimator's input is used as it is) — and :class:`DaskChunks` runs the map/reduce of
:mod:`kernel_lab.core.rows.mapreduce` as a Dask graph: one task per chunk that computes the
chunk where it lives and calls the function on it, the results combined pairwise in the
fixed tree of :func:`~kernel_lab.core.rows.blocks.tree_combine` by tasks of the same graph;
only each computation's result comes back. Sums over rows combine per canonical block
(:func:`~kernel_lab.core.rows.mapreduce.reduce_blocks`), so chunks of any sizes give the
bits of the same rows as one array in memory.

Where the graph runs: on the active ``distributed.Client`` when there is one (Dask's own
rule: the default client), under the scheduler set in Dask's configuration when one is set
(``dask.config.set(scheduler=...)``), otherwise in this process, one chunk after the other
(Dask's synchronous scheduler: the numerical core starts no threads). Each pass over the
rows computes the chunks again from their source: persist X and y first
(``X.persist()``) to keep them in the workers' memory between passes.

Dask is imported only inside the functions here (it is an optional extra,
``pip install 'kernel-lab[dask]'``); nothing here imports it for data that is not Dask's.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_lab.core.errors import DataError
from kernel_lab.core.executor import call_single_threaded
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows.blocks import tree_combine
from kernel_lab.core.rows.mapreduce import ArrayPart, RowPlan


def is_dask(obj: Any) -> bool:
    """Whether ``obj`` is a Dask collection (array, dataframe, series), told without
    importing Dask."""
    return (type(obj).__module__.partition(".")[0] == "dask"
            and hasattr(obj, "__dask_graph__"))


def dask_array(X: Any, what: str = "X") -> Any:
    """A Dask array or dataframe (or series) as a Dask array of float64 with one chunk
    across its columns; a dataframe's columns must all be numbers (a :class:`DataError`
    names the others)."""
    if hasattr(X, "to_dask_array"):  # a dataframe or a series
        dtypes = getattr(X, "dtypes", None)
        if dtypes is not None and hasattr(dtypes, "items"):
            from pandas.api.types import is_bool_dtype, is_numeric_dtype

            bad = [str(c) for c, t in dtypes.items()
                   if not (is_numeric_dtype(t) or is_bool_dtype(t))]
            if bad:
                raise DataError(f"the Dask dataframe {what} has columns that are not "
                                f"numbers: {', '.join(bad)}",
                                "encode them as numbers (one-hot, codes) or drop them")
        X = X.to_dask_array()
    if X.ndim not in (1, 2):
        raise DataError(f"{what} is a Dask array of {X.ndim} dimensions",
                        "give a 2-D array of rows × columns (1-D for the target)")
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    if X.ndim == 2 and len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X


def row_chunks(X: Any) -> tuple[int, ...]:
    """The rows of each chunk of a Dask array, computed when Dask does not know them (a
    dataframe's partitions): one small pass that returns only the counts."""
    chunks = X.chunks[0]
    if any(np.isnan(c) for c in chunks):
        X.compute_chunk_sizes()
        chunks = X.chunks[0]
    return tuple(int(c) for c in chunks)


@dataclass(frozen=True)
class ChunkPart(ArrayPart):
    """One row chunk of a Dask array, computed: global rows ``start … start + rows − 1``
    (for messages, the chunk's number and the collection's name)."""

    name: str = field(default="X", repr=False)

    def describe(self) -> str:
        return (f"chunk {self.index + 1} of the Dask array {self.name} (rows "
                f"{self.start:,}–{self.start + self.rows - 1:,})")


@dataclass(frozen=True)
class ChunkSpan:
    """Where a chunk's rows lie (no data): what a task turns into a :class:`ChunkPart`."""

    index: int
    start: int
    rows: int
    name: str = "X"

    def read(self) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - not on the client
        raise TypeError("a chunk of a Dask array is read by its task, not by the client")

    def describe(self) -> str:
        return (f"chunk {self.index + 1} of the Dask array {self.name} (rows "
                f"{self.start:,}–{self.start + self.rows - 1:,})")


def _on_chunk(fn: Callable[..., Any], span: ChunkSpan, X: np.ndarray, y: np.ndarray,
              args: tuple[Any, ...]) -> Any:
    """A chunk's task: ``fn(part, *args)`` on the chunk's computed rows, one BLAS thread
    (as a worker of the project's own cluster backend runs a partition)."""
    part = ChunkPart(span.index, span.start, np.asarray(X, dtype=np.float64),
                     np.asarray(y, dtype=np.float64).reshape(-1), span.name)
    return call_single_threaded(lambda p: fn(p, *args), part)


def _combine(combine: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    return call_single_threaded(lambda pair: combine(*pair), (a, b))


def dask_scheduler() -> str | None:
    """None (Dask's choice: the default ``distributed.Client``, or the configured
    scheduler) when a client is active or a scheduler is configured, else
    ``"synchronous"``: this process, one task after the other."""
    import dask

    if dask.config.get("scheduler", None) is not None:
        return None
    try:
        from distributed import default_client

        default_client()
        return None
    except (ImportError, ValueError):
        return "synchronous"


class DaskChunks:
    """:class:`~kernel_lab.core.rows.mapreduce.PartMap` over the row chunks of Dask arrays
    X (rows × p) and y (rows), as one Dask graph per computation (see the module
    docstring). ``parts`` are the chunks' :class:`ChunkSpan` (their rows, no data)."""

    def __init__(self, X: Any, y: Any, name: str = "X") -> None:
        self.X, self.y = X, y
        sizes = row_chunks(X)
        starts = np.concatenate([[0], np.cumsum(sizes)])[:-1]
        self.parts: Sequence[ChunkSpan] = [ChunkSpan(k, int(a), int(r), name)
                                           for k, (a, r) in enumerate(zip(starts, sizes,
                                                                          strict=True))]

    def _tasks(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> list[Any]:
        from dask import delayed

        shared = delayed(args, traverse=False)  # sent once, not once per chunk
        xs = self.X.to_delayed().ravel()
        ys = self.y.to_delayed().ravel()
        call = delayed(_on_chunk, pure=True)
        return [call(fn, span, xs[k], ys[k], shared) for k, span in enumerate(self.parts)]

    def _compute(self, *values: Any) -> tuple[Any, ...]:
        import dask

        return dask.compute(*values, scheduler=dask_scheduler())

    def map(self, fn: Callable[..., Any], *args: Any, progress: Progress | None = None,
            message: str = "") -> list[Any]:
        out = list(self._compute(*self._tasks(fn, args)))
        if progress is not None:
            total = len(self.parts)
            progress(1.0, f"{message} ({total}/{total} partitions)")
        return out

    def reduce(self, fn: Callable[..., Any], *args: Any,
               combine: Callable[[Any, Any], Any] = operator.add,
               progress: Progress | None = None, message: str = "") -> Any:
        from dask import delayed

        join = delayed(_combine, pure=True)
        root = tree_combine(self._tasks(fn, args), lambda a, b: join(combine, a, b))
        (out,) = self._compute(root)
        if progress is not None:
            total = len(self.parts)
            progress(1.0, f"{message} ({total}/{total} partitions)")
        return out


@dataclass
class DaskRows:
    """Dask arrays X and y as a data set of the row layer (``parts``, ``plan``): every row
    a training row, no scaling — what the estimators fit where the chunks are."""

    parts: DaskChunks
    plan: RowPlan

    @property
    def n(self) -> int:
        return self.plan.n


def dask_rows(X: Any, y: Any = None) -> DaskRows | None:
    """:class:`DaskRows` of X when X is a Dask array or dataframe (y: a Dask array or
    series, an array in memory — cut at X's chunks — or None for zeros), else None. Only
    the chunks' row counts are computed here (when Dask does not know them)."""
    if not is_dask(X):
        if is_dask(y):
            raise DataError("y is a Dask collection and X is not",
                            "give X as a Dask array too (the rows of both are cut into the "
                            "same chunks), or compute y")
        return None
    import dask.array as da

    Xd = dask_array(X, "X")
    if Xd.ndim != 2:
        raise DataError("X is a 1-D Dask array", "give the rows as a 2-D array "
                        "(reshape(-1, 1) for one column)")
    sizes = row_chunks(Xd)
    n = sum(sizes)
    if y is None:
        yd = da.zeros(n, chunks=(sizes,))
    elif is_dask(y):
        yd = dask_array(y, "y")
        if yd.ndim == 2 and yd.shape[1] == 1:
            yd = yd[:, 0]
        if yd.ndim != 1:
            raise DataError("y is a Dask array of several columns",
                            "give one target column")
        y_sizes = row_chunks(yd)
        if sum(y_sizes) != n:
            raise DataError(f"X has {n:,} rows and y {sum(y_sizes):,}",
                            "give a target for every row of X")
        if y_sizes != sizes:
            yd = yd.rechunk((sizes,))
    else:
        held = np.asarray(y, dtype=np.float64).reshape(-1)
        if held.size != n:
            raise DataError(f"X has {n:,} rows and y {held.size:,}",
                            "give a target for every row of X")
        yd = da.from_array(held, chunks=(sizes,))
    if n < 1:
        raise DataError("X is a Dask array with no rows", "give at least one row")
    Xd = Xd.rechunk((sizes, Xd.chunks[1])) if Xd.chunks[0] != sizes else Xd
    return DaskRows(DaskChunks(Xd, yd), RowPlan.given(n, 0))


__all__ = ["ChunkPart", "ChunkSpan", "DaskChunks", "DaskRows", "dask_array", "dask_rows",
           "dask_scheduler",
           "is_dask", "row_chunks"]
