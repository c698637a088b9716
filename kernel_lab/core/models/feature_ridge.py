"""Ridge regression on explicit features, shared by the random-feature and Nyström models."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError


def check_lam(lam: Any) -> float:
    """λ as a float; a clear error unless it is a positive finite number."""
    if isinstance(lam, bool) or not (isinstance(lam, int | float | np.number)
                                     and math.isfinite(lam) and lam > 0):
        raise ParameterError(f"λ (lam) must be positive and finite, got {lam!r}")
    return float(lam)


def feature_ridge(F: np.ndarray, y: np.ndarray, lam: float, *,
                  intercept: bool = True) -> tuple[np.ndarray, float]:
    """Solve ``min_w,c ‖y − F w − c‖² + λ ‖w‖²`` (c = 0 without ``intercept``) by a
    Cholesky factorisation of ``FᵀF + λI`` (r × r, cheap for r ≪ n).

    Parameters
    ----------
    F : ndarray, shape (n, r)
    y : ndarray, shape (n,)
    lam : float

    Returns
    -------
    coef : ndarray, shape (r,)
    intercept : float
        The unpenalised offset (0 when ``intercept`` is False).
    """
    f_mean = F.mean(axis=0) if intercept else np.zeros(F.shape[1])
    y_mean = float(y.mean()) if intercept else 0.0
    Fc = F - f_mean
    A = Fc.T @ Fc
    A.flat[:: A.shape[0] + 1] += lam
    L = np.linalg.cholesky(A)
    coef = np.linalg.solve(L.T, np.linalg.solve(L, Fc.T @ (y - y_mean)))
    return coef, y_mean - float(f_mean @ coef)
