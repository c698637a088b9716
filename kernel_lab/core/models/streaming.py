"""Squared-loss ridge on features too many to hold at once.

For features φ(x) ∈ ℝᴰ on n rows, the minimiser of DSG's objective with the squared loss,

    J(w) = (1/n) Σ_i ½ (φ(x_i)ᵀ w − y_i)² + (ν/2) ‖w‖²,

solves ``(ΦᵀΦ/n + νI) w = Φᵀy/n``, and J itself is a function of the same sums:
``J = (yᵀy − 2 wᵀΦᵀy + wᵀΦᵀΦ w) / (2n) + ν/2 ‖w‖²``. So the n × D matrix Φ is never
needed: ``ΦᵀΦ`` (D × D), ``Φᵀy`` and ``yᵀy`` are accumulated over blocks of rows whose
features fill a bounded buffer (:data:`BLOCK_BYTES`), memory O(D² + block), and a whole
family of smaller fits comes from the same sums:

- the first d of D random features: the leading d × d block (scaled, as z has √(2/d));
- Nyström features on the first s of the landmarks, ``Φ_s = C_s N_s`` with
  ``C = k(X, landmarks)``: ``Φ_sᵀΦ_s = N_sᵀ (CᵀC)[:s, :s] N_s``.

The dense solver (:func:`kernel_lab.core.models.regularised.fit_regularised`) gives the
same w to rounding; the tests compare the two.

:class:`StreamedRidge` is the same idea for ridge with an unpenalised intercept (Nyström
CKRR downstream of the nystrom experiment): centred sums from one shifted pass, and λ by
exact leave-one-out from a second pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg
from scipy.linalg import blas

from kernel_lab.core.memory import rows_per_block
from kernel_lab.core.progress import Progress

#: A block of features (rows × D, float64) is kept near this size.
BLOCK_BYTES = 32 * 2**20

#: On row blocks the paper protocol's leave-one-out comes from the eigendecomposition of
#: F_cᵀF_c: directions whose eigenvalue is below this fraction of the largest are dropped
#: (their singular values are below 1e-5 of the largest; an eigenvalue of FᵀF is accurate
#: to about 1e-16 of the largest).
GRAM_RCOND = 1e-10

#: On row blocks, Nyström features F = C N (C = k(X, S), N = W^{-1/2}) are summed as C —
#: ``FᵀF = Nᵀ(CᵀC)N``, without the n × s × s product C N — when the kept eigenvalues of W
#: span at most this ratio (rounding in CᵀC is then magnified at most this much, to about
#: 1e-10 relative); above, F itself is formed block by block.
GRAM_KAPPA_MAX = 1e6


def block_rows(width: int, budget: int | None = None) -> int:
    """Rows per block so that a block of ``width`` float64 features stays within budget
    (default :data:`BLOCK_BYTES`)."""
    return rows_per_block(width, BLOCK_BYTES if budget is None else budget)


@dataclass(frozen=True)
class NormalSums:
    """``G = ΦᵀΦ`` (D × D), ``b = Φᵀy`` (D,), ``yy = yᵀy`` over ``n`` rows."""

    G: np.ndarray
    b: np.ndarray
    yy: float
    n: int

    def restrict(self, d: int, transform: np.ndarray | None = None,
                 scale: float = 1.0) -> NormalSums:
        """The sums of the features ``scale · φ[:d] @ transform`` (``transform``: d × r)."""
        G, b = self.G[:d, :d] * scale, self.b[:d] * np.sqrt(scale)
        if transform is not None:
            G = transform.T @ G @ transform
            b = transform.T @ b
        return NormalSums(G, b, self.yy, self.n)


def accumulate(features: Callable[[np.ndarray], np.ndarray], X: np.ndarray, y: np.ndarray,
               width: int, progress: Progress | None = None, message: str = ""
               ) -> NormalSums:
    """:class:`NormalSums` of ``features(X_block)`` (blocks × ``width``) over row blocks of X.

    ``progress`` is told after every block (and may cancel)."""
    n = X.shape[0]
    G = np.zeros((width, width), order="F")
    b = np.zeros(width)
    step = block_rows(width)
    for start in range(0, n, step):
        stop = min(start + step, n)
        Z = np.asarray(features(X[start:stop]), dtype=np.float64)
        # G += ZᵀZ, upper triangle only (half a matrix product): BLAS syrk on Zᵀ, which
        # is Fortran-ordered when Z is C-ordered, so no copy
        G = blas.dsyrk(1.0, Z.T, beta=1.0, c=G, trans=0, lower=0, overwrite_c=1)
        b += Z.T @ y[start:stop]
        if progress is not None:
            progress(stop / n, message)
    upper = np.triu(G)
    G = upper + np.triu(upper, 1).T
    return NormalSums(G, b, float(y @ y), n)


def solve_squared(sums: NormalSums, nu: float) -> tuple[np.ndarray, float]:
    """``w`` minimising J (see the module docstring) and J(w), by a Cholesky solve."""
    A = sums.G / sums.n
    A[np.diag_indices_from(A)] += nu
    w = linalg.cho_solve(linalg.cho_factor(A), sums.b / sums.n)
    residual = sums.yy - 2.0 * float(w @ sums.b) + float(w @ (sums.G @ w))
    return w, 0.5 * max(residual, 0.0) / sums.n + 0.5 * nu * float(w @ w)


def predict_blocks(features: Callable[[np.ndarray], np.ndarray], X: np.ndarray,
                   w: np.ndarray) -> np.ndarray:
    """``features(X) @ w`` over row blocks of X (the features of all rows never held)."""
    out = np.empty(X.shape[0])
    step = block_rows(w.shape[0])
    for start in range(0, X.shape[0], step):
        out[start:start + step] = features(X[start:start + step]) @ w
    return out


def kernel_columns(features: Any) -> tuple[Any, np.ndarray] | None:
    """``(x ↦ k(x, S), N)`` for Nyström features ``F = k(X, S) N`` whose W is well conditioned
    (see :data:`GRAM_KAPPA_MAX`), else None (random features, or an ill-conditioned W):
    :class:`StreamedRidge` then sums the s columns of k(X, S) instead of the features."""
    N = getattr(features, "normalization_", None)
    if N is None or N.shape[1] == 0:
        return None
    e = 1.0 / np.einsum("ij,ij->j", N, N)  # the kept eigenvalues of W (columns V e^{-1/2})
    if e.max() > GRAM_KAPPA_MAX * e.min():
        return None
    kernel, landmarks = features.kernel_, features.landmarks_
    return (lambda A: kernel(A, landmarks)), N


class StreamedRidge:
    """The downstream ridge on features F = ``transform(X)`` streamed over row blocks.

    One pass accumulates, with every column shifted by its mean over the first block (so
    the centring that follows cancels little): ``Σ (F − c)ᵀ(F − c)``, ``Σ (F − c)ᵀ(y − c_y)``
    and the column sums; from them the centred ``F_cᵀF_c``, ``F_cᵀ(y − ȳ)``, the means and
    ``‖F‖_F²``. With ``columns = (C, N)`` the sums are those of ``C(X)`` and are mapped by N
    (``F = C(X) N``, see :func:`kernel_columns`). :meth:`solve` then fits at a given λ
    exactly as :func:`~kernel_lab.core.models.feature_ridge.feature_ridge` does, or, with
    ``lam=None``, picks λ by exact leave-one-out on
    :func:`~kernel_lab.core.models.feature_ridge.ridge_loo`'s grid (without refinement),
    from the eigendecomposition of ``F_cᵀF_c`` and a second pass over the blocks.

    Parameters
    ----------
    transform : callable
        Rows of X (a block) to their features.
    X, y : ndarray
        The training rows and targets.
    rows : int
        Rows per block.
    columns : (callable, ndarray), optional
        ``(x ↦ k(x, S), N)`` for Nyström features ``F = k(X, S) N`` (:func:`kernel_columns`).
    """

    def __init__(self, transform: Any, X: np.ndarray, y: np.ndarray, rows: int,
                 columns: tuple[Any, np.ndarray] | None = None) -> None:
        self.transform, self.X, self.y, self.rows = transform, X, y, rows
        n = X.shape[0]
        block = transform if columns is None else columns[0]
        for start in range(0, n, rows):
            F = block(X[start:start + rows])
            yb = y[start:start + rows]
            if start == 0:
                shift, y_shift = F.mean(axis=0), float(yb.mean())
                r = F.shape[1]
                G, b, f, y_sum = np.zeros((r, r)), np.zeros(r), np.zeros(r), 0.0
            F -= shift
            yb = yb - y_shift
            G += F.T @ F
            b += F.T @ yb
            f += F.sum(axis=0)
            y_sum += float(yb.sum())
        delta, delta_y = f / n, y_sum / n
        gram = G - n * np.outer(delta, delta)               # F_cᵀ F_c (or C_cᵀ C_c)
        rhs = b - n * delta * delta_y                       # F_cᵀ (y − ȳ)
        f_mean = shift + delta
        if columns is not None:
            N = columns[1]
            gram, rhs, f_mean = N.T @ gram @ N, N.T @ rhs, f_mean @ N
        self.gram, self.rhs, self.f_mean = gram, rhs, f_mean
        self.y_mean = y_shift + delta_y
        self.squared_norm = float(np.trace(gram) + n * (f_mean @ f_mean))

    def solve(self, lam: float | None) -> tuple[np.ndarray, float, float]:
        """Coefficients, intercept and the λ used (``lam=None``: chosen by leave-one-out)."""
        if lam is None:
            return self._loo()
        A = self.gram.copy()
        A.flat[:: A.shape[0] + 1] += lam
        L = np.linalg.cholesky(A)
        coef = np.linalg.solve(L.T, np.linalg.solve(L, self.rhs))
        return coef, self.y_mean - float(self.f_mean @ coef), float(lam)

    def _loo(self) -> tuple[np.ndarray, float, float]:
        """``ridge_loo(F, y, refine=False)`` over row blocks: with ``F_c = U S Vᵀ`` from
        ``F_cᵀF_c = V S² Vᵀ`` (directions below :data:`GRAM_RCOND` dropped), the rows of U
        are ``F_c V S⁻¹``, recomputed block by block to sum the leave-one-out residuals."""
        e, V = np.linalg.eigh(self.gram)
        keep = e > GRAM_RCOND * max(float(e.max(initial=0.0)), 1e-300)
        e, V = e[keep], V[:, keep]
        s = np.sqrt(e)
        Uty = (V.T @ self.rhs) / s
        nus = float(e.max(initial=1.0)) * np.logspace(-10, 1, 61)
        D = e[:, None] / (e[:, None] + nus[None, :])                 # (r, G)
        DU = D * Uty[:, None]
        P = V / s
        n = self.X.shape[0]
        sse = np.zeros(nus.size)
        for start in range(0, n, self.rows):
            F = self.transform(self.X[start:start + self.rows])
            F -= self.f_mean
            U = F @ P
            yc = self.y[start:start + self.rows] - self.y_mean
            h = 1.0 / n + (U * U) @ D
            resid = (yc[:, None] - U @ DU) / np.maximum(1.0 - h, 1e-12)
            sse += np.einsum("ij,ij->j", resid, resid)
        nu = float(nus[int(np.argmin(sse))])
        coef = V @ (s / (e + nu) * Uty)
        return coef, self.y_mean - float(self.f_mean @ coef), nu
