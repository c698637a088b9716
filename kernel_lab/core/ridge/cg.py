"""Nyström ridge regression by preconditioned conjugate gradients (FALKON-style), without
ever forming the n × r feature matrix.

The problem is the one :func:`~kernel_lab.core.models.feature_ridge.feature_ridge` solves on
the Nyström features ``F = C N`` (``C = k(X, S)`` for the landmarks S, ``N`` a
normalisation with ``N Nᵀ = W⁺``: ``W^{-1/2}`` or a Cholesky ``L⁻ᵀ``, see
:func:`~kernel_lab.core.models.nystrom.nystrom_normalization`)::

    min_w,c ‖y − F w − c‖² + λ ‖w‖²        (c = 0 without an intercept)

Its normal equations ``(F_cᵀF_c + λI) w = F_cᵀ(y − ȳ)``, with ``F_c = F − 1μᵀ`` the features
less their column means μ (``F_c = F``, ȳ = 0 without an intercept), are solved by
preconditioned CG. Every product ``F_cᵀF_c v = Nᵀ Cᵀ t − μ (1ᵀt)``, ``t = C N v − 1 μᵀv``,
is one map-reduce over the rows (:func:`~kernel_lab.core.rows.mapreduce.reduce_blocks`): per
canonical row block (:mod:`kernel_lab.core.rows.blocks`) ``k(X_block, S)`` is evaluated
afresh in sub-blocks of at most :data:`~kernel_lab.core.memory.DEFAULT_BLOCK_BYTES`, and the
blocks' terms are combined in the one fixed tree over the block numbers. Memory stays at one
sub-block plus O(s r) whatever n is; a pass costs O(n s p) kernel work and O(n s) for the
two products. Because the sums are per canonical block and the preconditioner's rows are
keyed by their global row index, the answer is the same bits whether the rows are one array
(:func:`nystrom_ridge_cg`, which ``NystromRidge(solver="cg")`` calls) or partitions cut at
block boundaries, in this process or on a cluster (:func:`nystrom_ridge_cg_parts`).

Preconditioner
--------------
FALKON's preconditioner approximates ``CᵀC`` by the landmark rows alone,
``(n/s) K_SSᵀK_SS``; in the whitened coordinates w used here that is
``(n/s) Nᵀ W² N + λI``, in W's eigenbasis ``(n/s) diag(e) + λI`` (e the kept eigenvalues
of W) — diagonal. It
under-estimates ``F_cᵀF_c`` badly in the directions of W's small eigenvalues: there a
feature is tiny on the landmarks (its squared norm on them is e_j) but can be of order one
at other points. So the preconditioner here is the same estimate taken over more rows: the
landmarks plus ``m`` (default 4 s) training rows drawn at random — the ``m`` rows with
the smallest keys of :data:`~kernel_lab.core.rows.keys.LANDMARKS` ``+`` :data:`CG_ROWS`
under the seed (:func:`~kernel_lab.core.rows.mapreduce.keyed_subset`), gathered to the client,

    P = (n / (s + m)) · Σ_{rows i} (f_i − μ)(f_i − μ)ᵀ + λI,

a sub-sampled ``F_cᵀF_c + λI`` (with all n rows when s + m ≥ n, when it equals the system
matrix and CG stops after a step or two). P is factorised once by Cholesky (O((s + m) s r + r³)),
and applied by two triangular solves per iteration. On 200,000 points in [0, 1]²⁰ with
2,000 uniform landmarks (Gaussian kernel, median bandwidth), the iterations needed for
coefficients within 1e-6 of the direct solve were, for λ = 1e-3 / 1 / 100: 313 / 66 / 15
without a preconditioner, 163 / 45 / 14 with FALKON's diagonal, 100 / 28 / 10 with the
landmark rows centred at μ, and 24 / 13 / 6 with the 4 s extra rows.

References
----------
A. Rudi, L. Carratino and L. Rosasco, "FALKON: an optimal large scale kernel method",
NIPS 2017.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular
from sklearn.exceptions import ConvergenceWarning

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.memory import rows_per_block
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.mapreduce import (
    PartMap,
    RowPlan,
    Rows,
    keyed_subset,
    one_part,
    reduce_blocks,
    take_rows,
)
from kernel_lab.core.validation import check_seed

#: Default stopping tolerance on the relative residual ``√(rᵀP⁻¹r / bᵀP⁻¹b)``.
DEFAULT_TOL = 1e-8
#: Default bound on the number of CG iterations.
DEFAULT_MAX_ITER = 200
#: Extra random rows of X in the preconditioner, as a multiple of the number of landmarks.
PRECONDITIONER_ROWS_PER_LANDMARK = 4
#: Offset of :data:`~kernel_lab.core.rows.keys.LANDMARKS`: the preconditioner's extra rows.
CG_ROWS = 6

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class CGInfo:
    """How a CG solve went.

    Attributes
    ----------
    iterations : int
        CG iterations made (each one pass over X).
    residual : float
        Final relative residual ``√(rᵀP⁻¹r / bᵀP⁻¹b)`` (r = b − A w, b the right-hand side,
        P the preconditioner), as updated by the CG recurrence.
    converged : bool
        Whether ``residual ≤ tol`` was reached within ``max_iter`` iterations.
    tol : float
    max_iter : int
    block_rows : int
        Rows of X per kernel block.
    preconditioner_rows : int
        Rows the preconditioner was estimated from (landmarks included).
    history : tuple of float
        The relative residual after every iteration.
    """

    iterations: int
    residual: float
    converged: bool
    tol: float
    max_iter: int
    block_rows: int
    preconditioner_rows: int
    history: tuple[float, ...]

    @property
    def passes(self) -> int:
        """Passes over X: one for the means and right-hand side, one per iteration."""
        return self.iterations + 1


def kernel_blocks(kernel: Callable[..., np.ndarray], X: np.ndarray, landmarks: np.ndarray,
                  block_rows: int) -> Iterator[tuple[slice, np.ndarray]]:
    """``(rows, k(X[rows], landmarks))`` for consecutive row blocks of X."""
    for start in range(0, X.shape[0], block_rows):
        rows = slice(start, min(start + block_rows, X.shape[0]))
        yield rows, kernel(X[rows], landmarks)


def nystrom_predict(kernel: Callable[..., np.ndarray], X: np.ndarray, landmarks: np.ndarray,
                    normalization: np.ndarray, coef: np.ndarray, intercept: float, *,
                    block_rows: int | None = None) -> np.ndarray:
    """``F w + c`` with ``F = k(X, S) N``, computed as ``k(X, S) (N w) + c`` in row blocks
    (memory: one block, never n × s).

    Parameters
    ----------
    kernel : Kernel
    X : ndarray, shape (n, p)
    landmarks : ndarray, shape (s, p)
    normalization : ndarray, shape (s, r)
    coef : ndarray, shape (r,)
    intercept : float
    block_rows : int, optional
        Rows per block; default: a block of :data:`~kernel_lab.core.memory.DEFAULT_BLOCK_BYTES`.

    Returns
    -------
    ndarray, shape (n,)
    """
    alpha = normalization @ coef
    rows = rows_per_block(landmarks.shape[0]) if block_rows is None else int(block_rows)
    out = np.empty(X.shape[0])
    for block, C in kernel_blocks(kernel, X, landmarks, rows):
        out[block] = C @ alpha
    out += intercept
    return out


def _check(lam: float, tol: float, max_iter: int, block_rows: int | None,
           preconditioner_rows: int | None) -> None:
    if (isinstance(lam, bool) or not isinstance(lam, numbers.Real)
            or not (math.isfinite(lam) and lam > 0)):
        raise ParameterError(f"λ (lam) must be positive and finite, got {lam!r}")
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not 0 < tol < 1:
        raise ParameterError(f"the CG tolerance must lie strictly between 0 and 1, "
                             f"got {tol!r}; e.g. 1e-8")
    for name, value, low in (("max_iter", max_iter, 1), ("block_rows", block_rows, 1),
                             ("preconditioner_rows", preconditioner_rows, 0)):
        if value is None and name != "max_iter":
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            raise ParameterError(f"{name} must be an integer ≥ {low}, got {value!r}")


def preconditioner_factor(kernel: Callable[..., np.ndarray], R: np.ndarray,
                          landmarks: np.ndarray, N: np.ndarray, mu: np.ndarray, lam: float,
                          weight: float) -> np.ndarray:
    """Lower Cholesky factor of ``weight · Σ_{rows of R} (f_i − μ)(f_i − μ)ᵀ + λI``."""
    s, r = N.shape
    G = np.zeros((r, r))
    for _, C in kernel_blocks(kernel, R, landmarks, rows_per_block(s + r)):
        Fb = C @ N
        Fb -= mu
        G += Fb.T @ Fb
    G *= weight
    G.flat[:: r + 1] += lam
    jitter = 0.0
    scale = max(float(np.trace(G)) / r, lam)
    while True:  # P ⪰ λI in exact arithmetic; rounding can still break a tiny λ
        try:
            return np.linalg.cholesky(G)
        except np.linalg.LinAlgError:
            step = 1e-12 * scale if jitter == 0.0 else 9.0 * jitter
            G.flat[:: r + 1] += step
            jitter += step
            if jitter > scale:
                raise




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


def _blocks(rows: Rows, kernel: Kernel, landmarks: np.ndarray, step: int
            ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(k(X_sub, S), y_sub)`` for the runs of ``step`` rows of one canonical block, from
    its first row (so a row's kernel block depends on its block's rows alone)."""
    for start in range(0, rows.index.size, step):
        yield kernel(rows.X[start:start + step], landmarks), rows.y[start:start + step]


def _block_first(rows: Rows, kernel: Kernel, landmarks: np.ndarray, intercept: bool,
                 step: int) -> KernelSums:
    s = landmarks.shape[0]
    total = KernelSums(0, 0.0, np.zeros(s), np.zeros(s))
    for C, y in _blocks(rows, kernel, landmarks, step):
        y_mean = float(y.mean()) if intercept else 0.0
        total = total + KernelSums(y.size, y_mean, C.sum(axis=0), C.T @ (y - y_mean))
    return total


def _block_product(rows: Rows, kernel: Kernel, landmarks: np.ndarray, u: np.ndarray,
                   shift: float, step: int) -> np.ndarray:
    acc, t_sum = np.zeros(landmarks.shape[0]), 0.0
    for C, _ in _blocks(rows, kernel, landmarks, step):
        a, t = product_terms(C, u, shift)
        acc += a
        t_sum += t
    return np.append(acc, t_sum)


def key_seed(seed: Any) -> int:
    """The integer seed that keys the preconditioner's rows: an int itself, a
    SeedSequence's first 64-bit word, else one drawn by
    :func:`~kernel_lab.core.validation.check_seed` (a Generator, a RandomState, None)."""
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return int(seed)
    if isinstance(seed, np.random.SeedSequence):
        return int(seed.generate_state(1, np.uint64)[0])
    return check_seed(seed)


def preconditioner_rows_index(parts: PartMap, plan: RowPlan, s: int, extra: int,
                              seed: Any) -> np.ndarray | None:
    """Global indices (sorted) of the ``extra`` training rows added to the landmarks in the
    preconditioner — the smallest keys of ``LANDMARKS + CG_ROWS`` under ``key_seed(seed)``
    — or None when ``s + extra`` reaches the training rows (then all of them are used)."""
    if s + extra >= plan.n_train:
        return None
    return keyed_subset(parts, plan, rowkeys.LANDMARKS + CG_ROWS, extra, seed=key_seed(seed))


def nystrom_ridge_cg_parts(parts: PartMap, plan: RowPlan, kernel: Kernel,
                           landmarks: np.ndarray, normalization: np.ndarray, lam: float, *,
                           intercept: bool = True, tol: float = DEFAULT_TOL,
                           max_iter: int = DEFAULT_MAX_ITER, block_rows: int | None = None,
                           preconditioner_rows: int | None = None, seed: Any = 0,
                           progress: Progress | None = None
                           ) -> tuple[np.ndarray, float, CGInfo]:
    """``min_w,c ‖y − F w − c‖² + λ‖w‖²`` over the training rows of the partitions,
    ``F = k(X, landmarks) · normalization``, by preconditioned CG with one map-reduce over
    the partitions per iteration (see the module docstring and :func:`nystrom_ridge_cg`,
    whose parameters these are; ``seed`` keys the preconditioner's rows, see
    :func:`key_seed`). Returns the coefficients, the intercept and a :class:`CGInfo`
    (``block_rows``: rows per kernel block, at most the plan's canonical block)."""
    _check(lam, tol, max_iter, block_rows, preconditioner_rows)
    landmarks = np.asarray(landmarks, dtype=np.float64)
    N = np.asarray(normalization, dtype=np.float64)
    s = N.shape[0]
    if landmarks.shape[0] != s:
        raise ValueError(f"the landmarks have {landmarks.shape[0]} rows and the "
                         f"normalization {s}: they must agree")
    n = plan.n_train
    step = min(rows_per_block(s) if block_rows is None else int(block_rows), int(plan.block))
    first = reduce_blocks(parts, _block_first, plan, kernel, landmarks, intercept, step)
    c_mean = first.c_sum / n if intercept else np.zeros(s)
    mu = N.T @ c_mean                       # column means of F
    b = N.T @ first.c_y                     # F_cᵀ(y − ȳ) = Fᵀ(y − ȳ)
    extra = (PRECONDITIONER_ROWS_PER_LANDMARK * s if preconditioner_rows is None
             else int(preconditioner_rows))
    index = preconditioner_rows_index(parts, plan, s, extra, seed)
    if index is None:
        R = take_rows(parts, plan, keyed_subset(parts, plan, rowkeys.LANDMARKS, n)).X
        weight = 1.0
    else:
        R = (np.concatenate([landmarks, take_rows(parts, plan, index).X]) if index.size
             else landmarks)
        weight = n / R.shape[0]
    L = preconditioner_factor(kernel, R, landmarks, N, mu, lam, weight)

    def normal_product(v: np.ndarray) -> np.ndarray:
        """``(F_cᵀF_c + λI) v`` in one pass over the rows."""
        u = N @ v
        shift = float(c_mean @ u)           # μᵀv
        got = reduce_blocks(parts, _block_product, plan, kernel, landmarks, u, shift, step)
        return N.T @ got[:-1] - mu * got[-1] + lam * v

    w, history = preconditioned_cg(normal_product, b, L, tol, max_iter, progress)
    info = cg_info(history, tol, max_iter, step, R.shape[0])
    return w, first.y_mean - float(mu @ w), info


def nystrom_ridge_cg(kernel: Callable[..., np.ndarray], X: np.ndarray, y: np.ndarray,
                     landmarks: np.ndarray, normalization: np.ndarray, lam: float, *,
                     intercept: bool = True, tol: float = DEFAULT_TOL,
                     max_iter: int = DEFAULT_MAX_ITER, block_rows: int | None = None,
                     preconditioner_rows: int | None = None, random_state: Any = 0,
                     progress: Progress | None = None) -> tuple[np.ndarray, float, CGInfo]:
    """Solve ``min_w,c ‖y − F w − c‖² + λ ‖w‖²`` for ``F = k(X, landmarks) · normalization``
    by preconditioned conjugate gradients, streaming X in row blocks (F is never formed):
    :func:`nystrom_ridge_cg_parts` on X as one part, every row a training row.

    The answer is that of ``feature_ridge(F, y, lam, intercept=intercept)`` up to the
    tolerance: the default stops at a relative residual of 1e-8, which put coefficients
    within 2e-7 and predictions within 1e-8 (relative) of the direct solve in the tests
    (the relative error in the norm of P is at most cond(P⁻¹A) times the residual).

    Parameters
    ----------
    kernel : Kernel
        A callable ``kernel(A, B) → k(A, B)``.
    X : ndarray, shape (n, p)
    y : ndarray, shape (n,)
    landmarks : ndarray, shape (s, p)
    normalization : ndarray, shape (s, r)
        N with ``N Nᵀ = W⁺`` (:func:`~kernel_lab.core.models.nystrom.nystrom_normalization`);
        nothing here depends on the basis.
    lam : float
        The ridge λ > 0.
    intercept : bool
        Fit an unpenalised intercept c (the features and y are centred).
    tol : float
        Stop when ``√(rᵀP⁻¹r / bᵀP⁻¹b) ≤ tol`` (the residual in the norm the preconditioner
        defines, relative to the right-hand side's).
    max_iter : int
        At most this many iterations; when the tolerance is not met by then a
        :class:`~sklearn.exceptions.ConvergenceWarning` is issued and ``info.converged`` is
        False.
    block_rows : int, optional
        Rows of X per kernel block within a canonical row block; default: a block
        ``k(X_block, landmarks)`` of :data:`~kernel_lab.core.memory.DEFAULT_BLOCK_BYTES`
        (64 MiB), or the canonical block when that is smaller.
    preconditioner_rows : int, optional
        Random rows of X added to the landmarks to estimate the preconditioner; default
        ``4 s``; 0 uses the landmarks alone.
    random_state : int, Generator, SeedSequence, … or None
        Keys those rows (an int is the key seed itself; others give one through
        :func:`~kernel_lab.core.validation.check_seed`); the solution depends on it only
        within the tolerance.
    progress : callable, optional
        ``progress(fraction, message)``, called once after every iteration; an exception
        it raises (a cancellation) propagates.

    Returns
    -------
    coef : ndarray, shape (r,)
    intercept : float
        0 when ``intercept`` is False.
    info : CGInfo
    """
    _check(lam, tol, max_iter, block_rows, preconditioner_rows)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    n, s = X.shape[0], np.shape(normalization)[0]
    if y.shape[0] != n or np.shape(landmarks)[0] != s:
        raise ValueError(f"X has {n} rows, y {y.shape[0]}; landmarks have "
                         f"{np.shape(landmarks)[0]} rows and the normalization {s}: they "
                         "must agree")
    return nystrom_ridge_cg_parts(*one_part(X, y), kernel,
                                  landmarks, normalization, lam, intercept=intercept, tol=tol,
                                  max_iter=max_iter, block_rows=block_rows,
                                  preconditioner_rows=preconditioner_rows, seed=random_state,
                                  progress=progress)


def product_terms(C: np.ndarray, u: np.ndarray, shift: float) -> tuple[np.ndarray, float]:
    """One block's share of ``F_cᵀF_c v``: with ``t = C u − μᵀv`` (``F_c v`` on the block's
    rows, ``u = N v``, ``shift = μᵀv``), ``(Cᵀ t, Σ t)``; summed over the blocks (or parts),
    ``F_cᵀF_c v = Nᵀ Σ Cᵀt − μ Σ t``."""
    t = C @ u
    t -= shift
    return C.T @ t, float(t.sum())


def preconditioned_cg(normal_product: Callable[[np.ndarray], np.ndarray], b: np.ndarray,
                      L: np.ndarray, tol: float, max_iter: int,
                      progress: Progress | None = None) -> tuple[np.ndarray, list[float]]:
    """Conjugate gradients on ``A w = b`` with ``A v = normal_product(v)`` (one pass over the
    rows, in memory or over partitions) and the preconditioner ``P = L Lᵀ``; stops when
    ``√(rᵀP⁻¹r / bᵀP⁻¹b) ≤ tol`` or after ``max_iter`` iterations, warning
    (:class:`~sklearn.exceptions.ConvergenceWarning`) when the tolerance was not met.
    Returns w and the relative residual after every iteration."""

    def precondition(v: np.ndarray) -> np.ndarray:
        # two O(r²) solves with one right-hand side: they leave scipy's OpenBLAS threads
        # asleep (unlike a matrix right-hand side, see samplers.ridge_scores), so numpy's
        # kernel products that follow keep their speed (measured)
        z = solve_triangular(L, v, lower=True, check_finite=False)
        return solve_triangular(L, z, lower=True, trans="T", check_finite=False)

    w = np.zeros(b.shape[0])
    res = b.copy()
    z = precondition(res)
    rz = float(res @ z)
    b_norm = math.sqrt(max(rz, 0.0))
    history: list[float] = []
    relres = 0.0 if b_norm == 0.0 else 1.0
    done = 0.0
    iterations = 0
    direction = z.copy()
    while relres > tol and iterations < max_iter:
        Ad = normal_product(direction)
        step = rz / float(direction @ Ad)
        w += step * direction
        res -= step * Ad
        z = precondition(res)
        rz_new = float(res @ z)
        iterations += 1
        relres = math.sqrt(max(rz_new, 0.0)) / b_norm
        history.append(relres)
        # progress: the larger of the iterations used and the decades of residual gained
        gained = 1.0 if relres <= tol else math.log(relres) / math.log(tol)
        done = max(done, iterations / max_iter, min(max(gained, 0.0), 1.0))
        if progress is not None:
            progress(done, f"CG iteration {iterations}: relative residual {relres:.2e} "
                           f"(target {tol:.0e})")
        direction *= rz_new / rz
        direction += z
        rz = rz_new
    if relres > tol:
        warnings.warn(f"Nyström CG stopped after {iterations} iterations at a relative "
                      f"residual of {relres:.2e}, above the tolerance {tol:.0e}: the "
                      f"solution is not accurate. Raise max_iter or λ, or use the direct "
                      f"solver.", ConvergenceWarning, stacklevel=3)
    return w, history


def cg_info(history: list[float], tol: float, max_iter: int, block_rows: int,
            preconditioner_rows: int) -> CGInfo:
    """The :class:`CGInfo` of a run with the given residual history."""
    relres = history[-1] if history else 0.0
    return CGInfo(iterations=len(history), residual=relres, converged=relres <= tol,
                  tol=float(tol), max_iter=int(max_iter), block_rows=block_rows,
                  preconditioner_rows=preconditioner_rows, history=tuple(history))
