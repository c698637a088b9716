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
