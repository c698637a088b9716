"""Ridge regression on explicit features, shared by the random-feature and Nyström models."""

from __future__ import annotations

import math

import numpy as np

from kernel_lab.core.errors import ParameterError


def feature_ridge(F: np.ndarray, y: np.ndarray, lam: float, *,
                  intercept: bool = True, target_mean: bool = False
                  ) -> tuple[np.ndarray, float]:
    """Solve ``min_w,c ‖y − F w − c‖² + λ ‖w‖²`` (c = 0 without ``intercept``) by a
    Cholesky factorisation of ``FᵀF + λI`` (r × r, cheap for r ≪ n). With
    ``target_mean`` and no ``intercept``, c is fixed to the targets' mean ȳ instead of 0:
    ``min_w ‖(y − ȳ) − F w‖² + λ ‖w‖²`` (with ``intercept`` it changes nothing).

    Parameters
    ----------
    F : ndarray, shape (n, r)
    y : ndarray, shape (n,)
    lam : float

    Returns
    -------
    coef : ndarray, shape (r,)
    intercept : float
        The unpenalised offset (0 when ``intercept`` is False, ȳ with ``target_mean``).
    """
    f_mean = F.mean(axis=0) if intercept else np.zeros(F.shape[1])
    y_mean = float(y.mean()) if intercept or target_mean else 0.0
    Fc = F - f_mean
    A = Fc.T @ Fc
    A.flat[:: A.shape[0] + 1] += lam
    L = np.linalg.cholesky(A)
    coef = np.linalg.solve(L.T, np.linalg.solve(L, Fc.T @ (y - y_mean)))
    return coef, y_mean - float(f_mean @ coef)


def ridge_loo(F: np.ndarray, y: np.ndarray, nus: np.ndarray | None = None, *,
              refine: bool = True) -> tuple[np.ndarray, float, float, float]:
    """Ridge on features with an unpenalised intercept, ν chosen by exact leave-one-out
    cross-validation from one SVD of the centred features.

    For the linear smoother ``ŷ = H y`` with ``H = 11ᵀ/m + F_c (F_cᵀF_c + νI)⁻¹ F_cᵀ`` the
    leave-one-out residuals are ``(y_i − ŷ_i) / (1 − H_ii)`` exactly, and with
    ``F_c = U S Vᵀ`` both ŷ and diag(H) cost O(m r) per ν once the SVD (O(m r²)) is done.
    The grid minimum is refined by a bounded search on log ν.

    Parameters
    ----------
    F : ndarray, shape (m, r)
    y : ndarray, shape (m,)
    nus : ndarray, optional
        Candidate ν; default 61 values from 1e-10 to 10 times the largest squared
        singular value.

    Returns
    -------
    coef : ndarray, shape (r,)
    intercept : float
    nu : float
        The chosen ν.
    loo_mse : float
        Its leave-one-out mean squared error.
    """
    m = F.shape[0]
    f_mean = F.mean(axis=0)
    y_mean = float(y.mean())
    U, s, Vt = np.linalg.svd(F - f_mean, full_matrices=False)
    keep = s > 1e-12 * max(float(s.max(initial=0.0)), 1e-300)
    U, s, Vt = U[:, keep], s[keep], Vt[keep]
    yc = y - y_mean
    Uty = U.T @ yc
    U2 = U * U
    s2 = s * s
    top = float(s2.max(initial=1.0))
    if nus is None:
        nus = top * np.logspace(-10, 1, 61)
    nus = np.asarray(nus, dtype=np.float64)
    if nus.size == 0 or not np.all(np.isfinite(nus) & (nus > 0)):
        raise ParameterError("ridge ν candidates must be positive and finite")

    def loo(nu_values: np.ndarray) -> np.ndarray:
        D = s2[:, None] / (s2[:, None] + nu_values[None, :])        # (r, G)
        fitted = U @ (D * Uty[:, None])                              # (m, G)
        h = 1.0 / m + U2 @ D
        resid = (yc[:, None] - fitted) / np.maximum(1.0 - h, 1e-12)
        return np.mean(resid * resid, axis=0)

    scores = loo(nus)
    k = int(np.argmin(scores))
    nu, best = float(nus[k]), float(scores[k])
    if refine and nus.size > 2:
        from scipy.optimize import minimize_scalar
        lo = math.log(nus[max(k - 1, 0)])
        hi = math.log(nus[min(k + 1, nus.size - 1)])
        if hi > lo:
            res = minimize_scalar(lambda t: float(loo(np.array([math.exp(t)]))[0]),
                                  bounds=(lo, hi), method="bounded",
                                  options={"xatol": 1e-3})
            if res.fun < best:
                nu, best = math.exp(float(res.x)), float(res.fun)
    coef = Vt.T @ (s / (s2 + nu) * Uty)
    return coef, y_mean - float(f_mean @ coef), nu, best
