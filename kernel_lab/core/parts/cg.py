"""Nyström ridge by preconditioned conjugate gradients over partitions.

The problem and the iteration are those of
:func:`~kernel_lab.core.models.nystrom_cg.nystrom_ridge_cg` (the same
:func:`~kernel_lab.core.models.nystrom_cg.preconditioned_cg` loop runs): a first map-reduce
gives the column sums of ``C = k(X, S)`` and ``Cᵀ(y − ȳ)`` over the training rows, and each
iteration's ``F_cᵀF_c v`` is one map-reduce whose terms are
:func:`~kernel_lab.core.models.nystrom_cg.product_terms`, per canonical block and combined
in the one tree over the blocks (:func:`~kernel_lab.core.parts.base.reduce_blocks`). The
preconditioner is estimated on the landmarks plus a keyed subset of ``4 s`` training rows
(all of them when there are not more), gathered to the client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core import rowkeys
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.models.nystrom_cg import (
    DEFAULT_MAX_ITER,
    DEFAULT_TOL,
    PRECONDITIONER_ROWS_PER_LANDMARK,
    CGInfo,
    _check,
    cg_info,
    preconditioned_cg,
    preconditioner_factor,
    product_terms,
)
from kernel_lab.core.parts.base import (
    PartMap,
    RowPlan,
    Rows,
    keyed_subset,
    reduce_blocks,
    take_rows,
)
from kernel_lab.core.parts.landmarks import row_seed
from kernel_lab.core.progress import Progress
from kernel_lab.core.samplers import BLOCK_ENTRIES

#: Offset of :data:`~kernel_lab.core.rowkeys.LANDMARKS`: the preconditioner's extra rows.
CG_ROWS = 6


@dataclass(frozen=True)
class KernelSums:
    """Over some training rows: their number, ``ȳ``, ``Σ k(x, S)`` and ``Σ k(x, S)(y − ȳ)``;
    ``a + b`` combines two sets of rows exactly (re-centring at the joint mean)."""

    n: int
    y_mean: float
    c_sum: np.ndarray
    c_y: np.ndarray

    def __add__(self, other: KernelSums) -> KernelSums:
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        n = self.n + other.n
        y_mean = self.y_mean + (other.y_mean - self.y_mean) * (other.n / n)
        return KernelSums(n, y_mean, self.c_sum + other.c_sum,
                          self.c_y + self.c_sum * (self.y_mean - y_mean)
                          + other.c_y + other.c_sum * (other.y_mean - y_mean))


def _blocks(rows: Rows, kernel: Kernel, landmarks: np.ndarray):
    step = max(1, BLOCK_ENTRIES // landmarks.shape[0])
    for start in range(0, rows.index.size, step):
        yield kernel(rows.X[start:start + step], landmarks), rows.y[start:start + step]


def _block_first(rows: Rows, kernel: Kernel, landmarks: np.ndarray, intercept: bool
                 ) -> KernelSums:
    s = landmarks.shape[0]
    total = KernelSums(0, 0.0, np.zeros(s), np.zeros(s))
    for C, y in _blocks(rows, kernel, landmarks):
        y_mean = float(y.mean()) if intercept else 0.0
        total = total + KernelSums(y.size, y_mean, C.sum(axis=0), C.T @ (y - y_mean))
    return total


def _block_product(rows: Rows, kernel: Kernel, landmarks: np.ndarray, u: np.ndarray,
                   shift: float) -> np.ndarray:
    acc, t_sum = np.zeros(landmarks.shape[0]), 0.0
    for C, _ in _blocks(rows, kernel, landmarks):
        a, t = product_terms(C, u, shift)
        acc += a
        t_sum += t
    return np.append(acc, t_sum)


def nystrom_ridge_cg_parts(parts: PartMap, plan: RowPlan, kernel: Kernel,
                           landmarks: np.ndarray, normalization: np.ndarray, lam: float, *,
                           intercept: bool = True, tol: float = DEFAULT_TOL,
                           max_iter: int = DEFAULT_MAX_ITER,
                           preconditioner_rows: int | None = None, seed: Any = 0,
                           progress: Progress | None = None
                           ) -> tuple[np.ndarray, float, CGInfo]:
    """``min_w,c ‖y − F w − c‖² + λ‖w‖²`` over the training rows of the partitions,
    ``F = k(X, landmarks) · normalization``, by preconditioned CG with one map-reduce over
    the partitions per iteration (see the module docstring and ``nystrom_ridge_cg``, whose
    parameters these are; ``seed`` keys the preconditioner's rows). Returns the
    coefficients, the intercept and a :class:`CGInfo` (``block_rows``: rows per kernel
    block on a partition)."""
    _check(lam, tol, max_iter, None, preconditioner_rows)
    landmarks = np.asarray(landmarks, dtype=np.float64)
    N = np.asarray(normalization, dtype=np.float64)
    s = N.shape[0]
    n = plan.n_train
    first = reduce_blocks(parts, _block_first, plan, kernel, landmarks, intercept)
    c_mean = first.c_sum / n if intercept else np.zeros(s)
    mu = N.T @ c_mean
    b = N.T @ first.c_y
    extra = (PRECONDITIONER_ROWS_PER_LANDMARK * s if preconditioner_rows is None
             else int(preconditioner_rows))
    if s + extra >= n:
        R, weight = take_rows(parts, plan, keyed_subset(parts, plan, rowkeys.LANDMARKS, n)).X, 1.0
    else:
        index = keyed_subset(parts, plan, rowkeys.LANDMARKS + CG_ROWS, extra,
                             seed=row_seed(seed))
        R = np.concatenate([landmarks, take_rows(parts, plan, index).X])
        weight = n / R.shape[0]
    L = preconditioner_factor(kernel, R, landmarks, N, mu, lam, weight)

    def normal_product(v: np.ndarray) -> np.ndarray:
        u = N @ v
        shift = float(c_mean @ u)
        got = reduce_blocks(parts, _block_product, plan, kernel, landmarks, u, shift)
        return N.T @ got[:-1] - mu * got[-1] + lam * v

    w, history = preconditioned_cg(normal_product, b, L, tol, max_iter, progress)
    info = cg_info(history, tol, max_iter, max(1, BLOCK_ENTRIES // s), R.shape[0])
    return w, first.y_mean - float(mu @ w), info
