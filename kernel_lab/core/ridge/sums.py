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

The same idea serves ridge with an unpenalised intercept (Nyström CKRR downstream of the
nystrom experiment, :mod:`kernel_lab.core.ridge.fit`): :class:`CentredSums` from one
pass (combined over blocks and parts alike), and λ by exact leave-one-out from a second
pass (:class:`LooGrid`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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


def columns_well_conditioned(N: np.ndarray) -> bool:
    """Whether the Nyström normalisation in W's eigenbasis, ``N = V e^{-1/2}``, keeps
    eigenvalues of W spanning at most :data:`GRAM_KAPPA_MAX`, so that sums of ``k(X, S)``
    mapped by N are accurate."""
    if N.shape[1] == 0:
        return False
    e = 1.0 / np.einsum("ij,ij->j", N, N)  # the kept eigenvalues of W (columns V e^{-1/2})
    return bool(e.max() <= GRAM_KAPPA_MAX * e.min())


def column_means(F: np.ndarray) -> np.ndarray:
    """The column means of a block; for float64 one BLAS product with a constant vector
    (numpy's mean over axis 0 took 2.2 ns per entry of 10 columns, the product 0.4)."""
    if F.dtype != np.float64 or F.shape[0] == 0:
        return F.mean(axis=0)
    return np.full(F.shape[0], 1.0 / F.shape[0]) @ F


@dataclass(frozen=True)
class CentredSums:
    """What the downstream ridge with an unpenalised intercept needs of features F and
    targets y over ``n`` rows, kept centred so that sums over parts combine exactly:
    the column means ``mean`` and ``y_mean``, ``gram = F_cᵀF_c`` and ``rhs = F_cᵀ(y − ȳ)``.
    ``a + b`` is the sums over both sets of rows (Chan et al.'s pairwise update), so
    blocks of rows and partitions are combined by one rule (in a fixed tree over parts)."""

    n: int
    mean: np.ndarray
    y_mean: float
    gram: np.ndarray
    rhs: np.ndarray

    @classmethod
    def of(cls, F: np.ndarray, y: np.ndarray, overwrite: bool = False) -> CentredSums:
        """The sums of one block of rows (any number, none included); with ``overwrite``
        the block (a float64 scratch array) is centred in place rather than copied."""
        n, r = F.shape
        if n == 0:
            return cls(0, np.zeros(r), 0.0, np.zeros((r, r)), np.zeros(r))
        mean = column_means(F)
        y_mean = float(y.mean())
        in_place = overwrite and F.dtype == np.float64 and F.flags.writeable
        Fc = np.subtract(F, mean, out=F if in_place else None)
        return cls(n, mean, y_mean, Fc.T @ Fc, Fc.T @ (y - y_mean))

    def __add__(self, other: CentredSums) -> CentredSums:
        if other.n == 0 or self.n == 0:
            return self if other.n == 0 else other
        copy = CentredSums(self.n, self.mean.copy(), self.y_mean, self.gram.copy(),
                           self.rhs.copy())
        return copy.absorb(other)

    def absorb(self, other: CentredSums, scratch: np.ndarray | None = None) -> CentredSums:
        """``self + other`` written over self's arrays, which the caller owns (a running
        total over blocks of rows: no new s × s arrays per block); the same numbers as
        ``+``. ``scratch``: an s × s work array to reuse."""
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        n = self.n + other.n
        delta, delta_y = other.mean - self.mean, other.y_mean - self.y_mean
        w = self.n * other.n / n
        if scratch is None:
            scratch = np.empty_like(self.gram)
        gram = self.gram
        gram += other.gram
        np.multiply.outer(delta, delta, out=scratch)
        scratch *= w
        gram += scratch
        rhs = self.rhs
        rhs += other.rhs
        rhs += w * delta * delta_y
        mean = self.mean
        mean += delta * (other.n / n)
        return CentredSums(n, mean, self.y_mean + delta_y * (other.n / n), gram, rhs)

    def leading(self, s: int) -> CentredSums:
        """The sums of the first s columns of F."""
        return CentredSums(self.n, self.mean[:s], self.y_mean, self.gram[:s, :s],
                           self.rhs[:s])

    def mapped(self, N: np.ndarray) -> CentredSums:
        """The sums of the features ``F N`` (from those of F)."""
        return CentredSums(self.n, self.mean @ N, self.y_mean, N.T @ self.gram @ N,
                           N.T @ self.rhs)

    @property
    def squared_norm(self) -> float:
        """``‖F‖_F²``."""
        return float(np.trace(self.gram) + self.n * (self.mean @ self.mean))

    def solve(self, lam: float) -> tuple[np.ndarray, float]:
        """Coefficients and intercept of the ridge at λ (a Cholesky solve)."""
        A = self.gram.copy()
        A.flat[:: A.shape[0] + 1] += lam
        L = np.linalg.cholesky(A)
        coef = np.linalg.solve(L.T, np.linalg.solve(L, self.rhs))
        return coef, self.y_mean - float(self.mean @ coef)

    def solve_ridge(self, lam: float, intercept: bool = True) -> tuple[np.ndarray, float]:
        """:meth:`solve`, or without an intercept (c = 0) the ridge on the plain sums:
        ``FᵀF = F_cᵀF_c + n μμᵀ`` and ``Fᵀy = F_cᵀ(y − ȳ) + n ȳ μ``."""
        if intercept:
            return self.solve(lam)
        plain = CentredSums(self.n, np.zeros_like(self.mean), 0.0,
                            self.gram + self.n * np.outer(self.mean, self.mean),
                            self.rhs + self.n * self.y_mean * self.mean)
        return plain.solve(lam)[0], 0.0


@dataclass(frozen=True)
class LooGrid:
    """Exact leave-one-out of the ridge on centred sums, over
    :func:`~kernel_lab.core.models.feature_ridge.ridge_loo`'s grid without refinement:
    with ``F_c = U S Vᵀ`` from ``F_cᵀF_c = V S² Vᵀ`` (directions below :data:`GRAM_RCOND`
    dropped), the rows of U are ``F_c V S⁻¹``, recomputed from the features of any block of
    rows (:meth:`sse`, summed over blocks or parts) to add up the leave-one-out residuals."""

    sums: CentredSums
    e: np.ndarray
    V: np.ndarray
    Uty: np.ndarray
    nus: np.ndarray

    @classmethod
    def of(cls, sums: CentredSums) -> LooGrid:
        e, V = np.linalg.eigh(sums.gram)
        keep = e > GRAM_RCOND * max(float(e.max(initial=0.0)), 1e-300)
        e, V = e[keep], V[:, keep]
        Uty = (V.T @ sums.rhs) / np.sqrt(e)
        return cls(sums, e, V, Uty, float(e.max(initial=1.0)) * np.logspace(-10, 1, 61))

    def sse(self, F: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Sum of squared leave-one-out residuals of the rows (F, y), per grid value."""
        s = np.sqrt(self.e)
        D = self.e[:, None] / (self.e[:, None] + self.nus[None, :])     # (r, G)
        U = (F - self.sums.mean) @ (self.V / s)
        h = 1.0 / self.sums.n + (U * U) @ D
        resid = ((y - self.sums.y_mean)[:, None] - U @ (D * self.Uty[:, None])) \
            / np.maximum(1.0 - h, 1e-12)
        return np.einsum("ij,ij->j", resid, resid)

    def solve(self, sse: np.ndarray) -> tuple[np.ndarray, float, float]:
        """Coefficients, intercept and λ at the grid value of least ``sse``."""
        nu = float(self.nus[int(np.argmin(sse))])
        coef = self.V @ (np.sqrt(self.e) / (self.e + nu) * self.Uty)
        return coef, self.sums.y_mean - float(self.sums.mean @ coef), nu
