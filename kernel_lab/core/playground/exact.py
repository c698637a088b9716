"""Exact KRR and CKRR in the Playground: every λ from one eigendecomposition
(:class:`ExactCache`), and the quick direct answer to a new σ or new data."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.playground.fits import Problem, error
from kernel_lab.core.playground.gridmap import GridMap

Array = np.ndarray


class ExactCache:
    """Exact KRR (``centered=False``) or CKRR (``True``) for every λ from one
    eigendecomposition; see the module docstring. The test points' kernel block and the
    grid's map (:class:`~kernel_lab.core.playground.gridmap.GridMap`) are kept, so a λ
    costs ``α(λ) = U (w / (e + λ))`` and one product per point set; training predictions
    need no product at all: ``f(X) = y − λ α(λ)`` (from ``(K_c + λI) α = P y`` and
    ``1ᵀα = 0`` for CKRR; ``(K + λI) α = y`` for KRR)."""

    def __init__(self, X: Array, y: Array, X_test: Array, G: GridMap, kernel: str,
                 sigma: float, centered: bool) -> None:
        k = make_kernel(kernel, {"sigma": sigma})
        K = k(X)
        self.col_means = K.mean(axis=0)
        if centered:
            K -= self.col_means[None, :]
            K -= self.col_means[:, None]
            K += self.col_means.mean()
        self.e, self.U = np.linalg.eigh(K)
        del K
        self.centered = centered
        self.y = y
        self.shift = float(y.mean()) if centered else 0.0
        self.w = self.U.T @ (y - self.shift)
        self.K_test = k(X_test, X) if len(X_test) else np.zeros((0, len(y)))
        self.K_grid = G.kernel(kernel, sigma, X)  # c ↦ K(G, X) c

    def alphas(self, lam: float | Array) -> tuple[Array, Array]:
        lams = np.atleast_1d(np.asarray(lam, dtype=np.float64))
        A = self.U @ (self.w[:, None] / (self.e[:, None] + lams[None, :]))
        if self.centered:
            # CKRR's α sums to zero; at a tiny λ the rounding left along the constant
            # eigenvector (eigenvalue ≈ 0 of K_c) would be divided by ≈ λ — project it out
            A -= A.mean(axis=0, keepdims=True)
        return lams, A

    def _apply(self, K: Array | Callable[[Array], Array], A: Array) -> Array:
        out = K(A) if callable(K) else K @ A
        if self.centered:
            out += self.shift - self.col_means @ A
        return out

    def predict(self, lam: float) -> tuple[Array, Array, Array]:
        """Grid, train and test predictions at λ."""
        lams, A = self.alphas(lam)
        train = self.y[:, None] - lams[None, :] * A
        return (self._apply(self.K_grid, A)[:, 0], train[:, 0],
                self._apply(self.K_test, A)[:, 0])

    def dof(self, lam: float) -> float:
        """Effective degrees of freedom tr K(K + λI)⁻¹ (of K_c for CKRR)."""
        e = np.clip(self.e, 0.0, None)
        return float(np.sum(e / (e + lam)))

    def curve(self, lams: Array, y_test: Array, task: str) -> dict[str, Array]:
        """Train and test error at every λ of ``lams`` (kept: the grid does not move)."""
        key = (tuple(np.asarray(lams, dtype=float)), task)
        if getattr(self, "_curve", (None,))[0] != key:
            self._curve = (key, self._curve_of(lams, y_test, task))
        return self._curve[1]

    def _curve_of(self, lams: Array, y_test: Array, task: str) -> dict[str, Array]:
        lams, A = self.alphas(lams)
        train = self.y[:, None] - lams[None, :] * A
        test = self._apply(self.K_test, A)
        return {"lam": lams,
                "train": np.array([error(train[:, j], self.y, task)
                                   for j in range(len(lams))]),
                "test": np.array([error(test[:, j], y_test, task) for j in range(len(lams))])}


def exact_direct(problem: Problem, kernel: str, sigma: float, lam: float, centered: bool
                 ) -> tuple[Array, Array, Array]:
    """One exact fit at λ by the library's estimator (a Cholesky factorisation): the quick
    answer to a new σ or new data while the eigendecomposition is still to be made; the
    grid's values through its map (the grid, train and test predictions)."""
    from kernel_lab.core.models import CenteredKernelRidge, KernelRidge

    est = (CenteredKernelRidge if centered else KernelRidge)(
        lam, kernel=kernel, kernel_params={"sigma": sigma}).fit(problem.X, problem.y)
    test = est.predict(problem.X_test) if len(problem.X_test) else np.zeros(0)
    grid = problem.grid.kernel(kernel, sigma, problem.X)(est.dual_coef_) + est.intercept_
    return grid, est.predict(problem.X), test
