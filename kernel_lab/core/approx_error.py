"""How good is a low-rank kernel approximation ``K̃ = F Fᵀ``?

Spectral error ``‖K − K̃‖₂`` (exact for small n, Lanczos on a blockwise operator
otherwise, on a random evaluation subset of at most ``max_points`` rows as in Musco &
Musco), trace error ``tr(K − K̃)`` in O(n s), and the effective dimension
``d_eff(λ) = Σ_j e_j/(e_j + λ)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.sparse.linalg import LinearOperator, eigsh

from kernel_lab.core.kernels import Kernel
from kernel_lab.core.memory import DEFAULT_BLOCK_BYTES, memory_budget_bytes


@dataclass(frozen=True)
class SpectralError:
    """``‖K − F Fᵀ‖₂`` on ``points`` rows (all of them, or a random subset), and how."""

    value: float
    points: int
    method: str  # "exact", "lanczos" or "lanczos-blockwise"


def trace_error(X: np.ndarray, kernel: Kernel, F: np.ndarray) -> float:
    """``tr(K − F Fᵀ) = Σ_i K_ii − ‖F‖_F²`` (n kernel evaluations)."""
    return float(kernel.diag(X).sum() - np.einsum("ij,ij->", F, F))


def spectral_error(X: np.ndarray, kernel: Kernel, F: np.ndarray, *,
                   max_points: int = 20_000, exact_max: int = 2_000,
                   rng: np.random.Generator | None = None) -> SpectralError:
    """Largest absolute eigenvalue of ``K − F Fᵀ``.

    Parameters
    ----------
    X : ndarray, shape (n, p)
    kernel : Kernel
    F : ndarray, shape (n, r)
        Low-rank factor on the same rows.
    max_points : int
        Above this many rows a uniform random subset of that size is used.
    exact_max : int
        Up to this many rows the residual is formed and diagonalised exactly.
    rng : Generator, optional
        Draws the evaluation subset.
    """
    n = X.shape[0]
    if n > max_points:
        rng = np.random.default_rng(0) if rng is None else rng
        idx = np.sort(rng.choice(n, size=max_points, replace=False))
        X, F, n = X[idx], F[idx], max_points
    if n <= exact_max or 8.0 * n * n <= 0.5 * memory_budget_bytes():
        return residual_norm(kernel(X), F, exact_max=exact_max)
    rows = max(1, DEFAULT_BLOCK_BYTES // (8 * n))

    def matvec(v: np.ndarray) -> np.ndarray:  # K blockwise: never n×n in memory
        v = np.ravel(v)
        out = -(F @ (F.T @ v))
        for start in range(0, n, rows):
            out[start:start + rows] += kernel(X[start:start + rows], X) @ v
        return out

    return SpectralError(_largest(matvec, n), n, "lanczos-blockwise")


def _largest(matvec: Any, n: int) -> float:
    """Largest |eigenvalue| of a symmetric operator by Lanczos (ARPACK)."""
    v0 = np.ones(n) / np.sqrt(n)
    if not np.any(matvec(v0)):  # ARPACK fails on an exactly zero start (K = F Fᵀ)
        v0 = np.random.default_rng(0).standard_normal(n)
        if not np.any(matvec(v0)):
            return 0.0
    op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
    vals = eigsh(op, k=1, which="LM", return_eigenvectors=False, tol=1e-6, v0=v0)
    return float(abs(vals[0]))


def residual_norm(K: np.ndarray, F: np.ndarray, *, exact_max: int = 2_000) -> SpectralError:
    """``‖K − F Fᵀ‖₂`` for a kernel matrix K already in memory (exact up to ``exact_max``
    rows, Lanczos above)."""
    n = K.shape[0]
    if n <= exact_max:
        e = np.linalg.eigvalsh(K - F @ F.T)
        return SpectralError(float(max(abs(e[0]), abs(e[-1]))), n, "exact")

    def matvec(v: np.ndarray) -> np.ndarray:
        v = np.ravel(v)
        return K @ v - F @ (F.T @ v)

    return SpectralError(_largest(matvec, n), n, "lanczos")


def effective_dimension(eigvals: np.ndarray, lam: float) -> float:
    """``d_eff(λ) = Σ_j e_j / (e_j + λ)`` (negative eigenvalues clipped to 0)."""
    e = np.clip(np.asarray(eigvals, dtype=float), 0.0, None)
    return float(np.sum(e / (e + lam)))
