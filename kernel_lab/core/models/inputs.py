"""Dask data in and out of the estimators: :class:`DaskFront`.

Every estimator of :mod:`kernel_lab.core.models` takes NumPy arrays, pandas frames, a data
set of the row layer (:func:`~kernel_lab.core.models.nystrom.row_set`) and Dask arrays or
dataframes, as dask-ml's estimators do:

- **fit**: those written on row parts (:class:`~kernel_lab.core.models.nystrom.NystromRidge`,
  :class:`~kernel_lab.core.models.nystrom.NystromFeatures`,
  :class:`~kernel_lab.core.models.rff.RandomFourierFeatures`,
  :class:`~kernel_lab.core.models.rff.RFFRidge`,
  :class:`~kernel_lab.core.models.dsg.DSGRegressor`,
  :class:`~kernel_lab.core.models.dsg.DSGClassifier`) fit a Dask input on its chunks
  where they are (:func:`~kernel_lab.core.models.dask_rows.dask_rows`: on the active
  ``distributed.Client``, else in this process), never gathering the rows; the same rows
  give the same coefficients as in memory. The others need every row at once — the n × n
  kernel ridges and greedy feature construction — and gather a Dask input when it fits in
  the memory budget, refusing by name when it does not (:func:`gathered`).
- **predict, transform, decision_function, predict_proba** of a Dask input return a Dask
  array computed blockwise (``X.map_blocks``): each row chunk is predicted where it is, by
  the fitted estimator sent with the task (the idea of dask-ml's ``ParallelPostFit``).

The estimators inherit :class:`DaskFront`, which wraps those methods of every subclass
once (``__init_subclass__``): a NumPy or pandas input goes straight through.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from kernel_lab.core.kernels import median_heuristic
from kernel_lab.core.memory import check_allocation
from kernel_lab.core.models.dask_rows import (
    DaskRows,
    dask_array,
    dask_rows,
    dask_scheduler,
    is_dask,
    row_chunks,
)
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.mapreduce import PartMap, RowPlan, keyed_subset, take_rows

#: The methods of an estimator that answer row by row: a Dask input is mapped over its
#: row chunks.
BLOCKWISE = ("predict", "transform", "decision_function", "predict_proba")

#: Copies of the rows a gather holds at once (the chunks, then the joined array).
GATHER_COPIES = 2


#: Training rows of a data set whose median pairwise distance gives the default bandwidth:
#: those with the smallest keys of the bandwidth stream under seed 0, the rows
#: :func:`~kernel_lab.core.kernels.median_heuristic` picks from an array.
BANDWIDTH_POINTS = 1000

def row_set(X: Any) -> tuple[PartMap, RowPlan] | None:
    """``(parts, plan)`` when X is a data set of the row layer — a Parquet folder or Zarr
    store opened by the data layer and kept in its partitions (on any backend: this
    process, a process pool, a Dask cluster), a data set in memory, or a Dask array's
    chunks (:mod:`~kernel_lab.core.models.inputs`) — else None (an array, a table).
    The estimators fit such a data set on its prepared (filled, standardised) training
    rows where they are, without gathering them."""
    plan = getattr(X, "plan", None)
    if isinstance(plan, RowPlan) and hasattr(X, "parts"):
        return X.parts, plan
    return None


def rows_bandwidth(parts: PartMap, plan: RowPlan) -> float:
    """The median-heuristic bandwidth of a data set's training rows: the median pairwise
    distance of the :data:`BANDWIDTH_POINTS` rows with the smallest keys (seed 0), gathered
    — for rows ``0 … n−1`` all training rows, the σ the estimators take from the same rows
    as an array."""
    rows = take_rows(parts, plan, keyed_subset(parts, plan, rowkeys.BANDWIDTH,
                                               BANDWIDTH_POINTS, seed=0))
    return median_heuristic(rows.X, BANDWIDTH_POINTS, rows=rows.index)


def _part_width(part: Any) -> int:
    held = getattr(part, "X", None)  # in memory: no read
    if held is not None:
        return int(held.shape[1])
    return int(part.read()[0].shape[1]) if part.rows else -1


def rows_width(parts: PartMap, plan: RowPlan) -> int:
    """The number of input columns of a data set of the row layer (read on a worker when
    the plan does not hold it)."""
    if plan.mean is not None:
        return int(np.asarray(plan.mean).size)
    return int(max(parts.map(_part_width)))


def _named(estimator: Any, block: np.ndarray) -> Any:
    """A block as the estimator was fitted: a pandas frame with its column names when it
    was fitted on named columns."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        return block
    import pandas as pd

    return pd.DataFrame(block, columns=list(names))


def _apply(block: np.ndarray, method: Callable[..., Any], estimator: Any,
           ndim: int) -> np.ndarray:
    """One row chunk's task: the method on the chunk (``ndim``: of the output, 1 or 2)."""
    out = np.asarray(method(estimator, _named(estimator, block)))
    return out.reshape(-1) if ndim == 1 else out


def blockwise(method: Callable[..., Any], estimator: Any, X: Any) -> Any:
    """``method(estimator, X)`` of a Dask array or dataframe X as a Dask array computed
    blockwise over X's row chunks: shape (n,) or (n, k) as the method answers for one row
    (found by calling it on one row of zeros, on the client)."""
    if hasattr(X, "columns"):
        names = getattr(estimator, "feature_names_in_", None)
        if names is not None and [str(c) for c in X.columns] != [str(c) for c in names]:
            from kernel_lab.core.errors import DataError

            raise DataError(f"the Dask dataframe's columns {list(map(str, X.columns))} are "
                            f"not those the model was fitted on: {list(map(str, names))}",
                            "give the same columns, in the same order")
    Xd = dask_array(X, "X")
    if Xd.ndim != 2:
        from kernel_lab.core.errors import DataError

        raise DataError(f"X is a {Xd.ndim}-D Dask array", "give a 2-D array of rows")
    probe = np.asarray(method(estimator, _named(estimator, np.zeros((1, Xd.shape[1])))))
    if probe.ndim == 1:
        return Xd.map_blocks(_apply, method, estimator, 1, dtype=probe.dtype, drop_axis=1,
                             meta=np.empty((0,), dtype=probe.dtype))
    return Xd.map_blocks(_apply, method, estimator, 2, dtype=probe.dtype,
                         chunks=(Xd.chunks[0], (int(probe.shape[1]),)),
                         meta=np.empty((0, 0), dtype=probe.dtype))


def _dask_aware(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` that maps a Dask input over its row chunks (:func:`blockwise`)."""
    if getattr(method, "_dask_blockwise", False):
        return method

    @functools.wraps(method)
    def wrapper(self: Any, X: Any, *args: Any, **kwargs: Any) -> Any:
        if is_dask(X) and not args and not kwargs:
            return blockwise(method, self, X)
        return method(self, X, *args, **kwargs)

    wrapper._dask_blockwise = True  # type: ignore[attr-defined]
    return wrapper


def rows_input(X: Any, y: Any = None) -> tuple[Any, Any]:
    """``(DaskRows, None)`` for a Dask X (and y), fitted on its chunks where they are
    (:func:`~kernel_lab.core.models.dask_rows.dask_rows`); anything else unchanged."""
    rows = dask_rows(X, y)
    return (X, y) if rows is None else (rows, None)


def gathered(estimator: Any, X: Any, y: Any = None, *,
             extra_bytes: Callable[[int], float] | None = None) -> tuple[Any, Any]:
    """A Dask X (and y) computed into arrays for an estimator that needs every row at once,
    when the rows (:data:`GATHER_COPIES` copies, plus ``extra_bytes(n)``: what the fit
    then holds for n rows, say an n × n matrix) fit in the memory budget; refused by
    name otherwise (:class:`~kernel_lab.core.errors.MemoryBudgetError`), before any row
    is computed. Anything else unchanged."""
    if not is_dask(X) and not is_dask(y):
        return X, y
    import dask

    name = type(estimator).__name__
    Xd = dask_array(X, "X") if is_dask(X) else np.asarray(X)
    n = sum(row_chunks(Xd)) if is_dask(Xd) else int(Xd.shape[0])
    p = int(Xd.shape[1]) if Xd.ndim == 2 else 1
    need = GATHER_COPIES * 8.0 * n * (p + 1) + (0.0 if extra_bytes is None else extra_bytes(n))
    check_allocation(need, f"{name} on {n:,} rows × {p} columns of Dask data, gathered "
                     "into this process,",
                     f"{name} needs every row in memory at once; fit NystromRidge, "
                     "RFFRidge or DSGRegressor, which run on the chunks where they are, or "
                     "fit on a sample of the rows")
    yd = dask_array(y, "y") if is_dask(y) else y
    got = dask.compute(Xd, yd, scheduler=dask_scheduler())
    return got[0], got[1]


class DaskFront:
    """Mixin of the estimators: their :data:`BLOCKWISE` methods map a Dask input over its
    row chunks (see the module docstring). Put it first among the bases."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in BLOCKWISE:
            method = cls.__dict__.get(name)
            if callable(method):
                setattr(cls, name, _dask_aware(method))


__all__ = ["BANDWIDTH_POINTS", "BLOCKWISE", "DaskFront", "DaskRows", "blockwise", "gathered",
           "row_set", "rows_bandwidth", "rows_input", "rows_width"]
