"""Exact minimisers of a regularised risk — the objective doubly stochastic gradients
(Dai et al., 2014) descend —

    J(w) = (1/n) Σ_i l(φ(x_i)ᵀ w, y_i) + (ν/2) ‖w‖²

for a feature map φ given as the rows of Φ (n × D): random Fourier features, Nyström
features, or the exact kernel's own map on the training points, ``Φ = U Λ^{1/2}`` from
``K = U Λ Uᵀ`` (by the representer theorem the minimiser over the RKHS lies in the span
of the training points, where ``f(X) = Φ c`` and ``‖f‖² = ‖c‖²``).

Solvers, each to about machine precision rather than to a statistical tolerance, so that
an excess objective J(f_t) − J(f*) of order 1e-6 is still measured:

- squared loss: the normal equations by Cholesky;
- logistic and squared hinge (smooth): Newton's method with a backtracking line search
  (the squared hinge uses its generalised Hessian, exact on each piece);
- hinge: liblinear's dual coordinate descent (scikit-learn's ``LinearSVC``, no intercept,
  C = 1/(nν)) on the box-constrained dual
  ``max_β (1/n) Σ β_i − 1/(2 n² ν) βᵀ(yyᵀ ∘ ΦΦᵀ)β, 0 ≤ β ≤ 1``, ``w = Φᵀ(β ∘ y)/(nν)``;
- multinomial: Newton–CG (trust region) with exact Hessian-vector products.

There is no intercept: DSG has none (it subtracts a fixed mean in regression).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import linalg, optimize
from sklearn.exceptions import ConvergenceWarning

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.losses import class_codes, make_loss

#: Losses with an exact solver here.
SOLVABLE_LOSSES = ("squared", "logistic", "squared_hinge", "hinge", "multinomial")


@dataclass(frozen=True)
class RegularisedFit:
    """``w`` (D,) or (D, K); ``objective`` J(w) on the training data; ``iterations``."""

    w: np.ndarray
    objective: float
    iterations: int


def objective(scores: np.ndarray, y: np.ndarray, loss: str, nu: float, norm2: float) -> float:
    """``J = mean l(scores, y) + ν/2 · norm2``."""
    return float(np.mean(make_loss(loss).value(scores, y)) + 0.5 * nu * norm2)


def _check(Phi: np.ndarray, y: np.ndarray, loss: str, nu: float) -> None:
    if loss not in SOLVABLE_LOSSES:
        raise ParameterError(f"no exact solver for the {loss} loss (solvable: "
                             f"{', '.join(SOLVABLE_LOSSES)})")
    if not nu > 0:
        raise ParameterError(f"the regulariser ν must be > 0, got {nu}")
    if Phi.ndim != 2 or Phi.shape[0] != y.shape[0]:
        raise ParameterError(f"Φ has shape {Phi.shape} and y {y.shape}: rows must match")


def fit_regularised(Phi: np.ndarray, y: np.ndarray, loss: str, nu: float, *,
                    n_classes: int | None = None, max_iter: int = 200) -> RegularisedFit:
    """Minimise J(w) over w for features Φ (n × D); see the module docstring.

    ``y``: targets (squared), ±1 labels (logistic, hinge, squared hinge) or class codes
    0 … K−1 with ``n_classes`` = K (multinomial). When D > n the problem is solved in the
    n-dimensional span of the rows of Φ (same minimiser).
    """
    Phi = np.asarray(Phi, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    _check(Phi, y, loss, nu)
    n, D = Phi.shape
    if loss == "hinge":
        return _hinge(Phi, y, nu)
    if D > n:  # ΦΦᵀ = ΨΨᵀ, Ψ = U Λ^{1/2}: solve for c on Ψ, then w = Φᵀ U Λ^{-1/2} c
        Psi, B = kernel_feature_map(Phi @ Phi.T)
        inner = fit_regularised(Psi, y, loss, nu, n_classes=n_classes, max_iter=max_iter)
        return RegularisedFit(Phi.T @ (B @ inner.w), inner.objective, inner.iterations)
    if loss == "squared":
        A = Phi.T @ Phi / n
        A[np.diag_indices(D)] += nu
        w = linalg.cho_solve(linalg.cho_factor(A), Phi.T @ y / n)
        return RegularisedFit(w, objective(Phi @ w, y, loss, nu, float(w @ w)), 1)
    if loss == "multinomial":
        return _multinomial(Phi, y, nu, int(n_classes or (y.max() + 1)), max_iter)
    return _newton(Phi, y, loss, nu, max_iter)


def _newton(Phi: np.ndarray, y: np.ndarray, loss: str, nu: float, max_iter: int
            ) -> RegularisedFit:
    n, D = Phi.shape
    fn = make_loss(loss)

    def J(w: np.ndarray) -> float:
        return objective(Phi @ w, y, loss, nu, float(w @ w))

    w = np.zeros(D)
    value = J(w)
    for it in range(1, max_iter + 1):
        u = Phi @ w
        grad = Phi.T @ fn.deriv(u, y) / n + nu * w
        if loss == "logistic":
            s = 1.0 / (1.0 + np.exp(-y * u))
            curv = s * (1.0 - s)
        else:  # squared hinge: 1 where the margin is violated
            curv = (y * u < 1.0).astype(np.float64)
        H = (Phi.T * curv) @ Phi / n
        H[np.diag_indices(D)] += nu
        step = linalg.cho_solve(linalg.cho_factor(H), grad)
        decrease = float(grad @ step)
        t = 1.0
        while True:
            trial = w - t * step
            new = J(trial)
            if new <= value - 1e-4 * t * decrease or t < 1e-10:
                break
            t *= 0.5
        w, value = trial, new
        if decrease < 1e-26 * max(1.0, abs(value)) or np.sqrt(max(decrease, 0.0)) < 1e-14:
            return RegularisedFit(w, value, it)
    return RegularisedFit(w, value, max_iter)


def _multinomial(Phi: np.ndarray, y: np.ndarray, nu: float, k: int, max_iter: int
                 ) -> RegularisedFit:
    n, D = Phi.shape
    codes = class_codes(y, k)
    onehot = np.zeros((n, k))
    onehot[np.arange(n), codes] = 1.0

    def probs(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        U = Phi @ W
        U -= U.max(axis=1, keepdims=True)
        E = np.exp(U)
        return U, E / E.sum(axis=1, keepdims=True)

    def fun(v: np.ndarray) -> tuple[float, np.ndarray]:
        W = v.reshape(D, k)
        U, P = probs(W)
        value = float(np.mean(np.log(np.exp(U).sum(axis=1)) - U[np.arange(n), codes]))
        value += 0.5 * nu * float(v @ v)
        grad = Phi.T @ (P - onehot) / n + nu * W
        return value, grad.ravel()

    def hessp(v: np.ndarray, d: np.ndarray) -> np.ndarray:
        _, P = probs(v.reshape(D, k))
        A = Phi @ d.reshape(D, k)
        M = P * A - P * (P * A).sum(axis=1, keepdims=True)
        return (Phi.T @ M / n + nu * d.reshape(D, k)).ravel()

    res = optimize.minimize(fun, np.zeros(D * k), jac=True, hessp=hessp, method="trust-ncg",
                            options={"gtol": 1e-12, "maxiter": max_iter})
    W = res.x.reshape(D, k)
    return RegularisedFit(W, objective(Phi @ W, y, "multinomial", nu, float(res.x @ res.x)),
                          int(res.nit))


def _hinge(Phi: np.ndarray, y: np.ndarray, nu: float) -> RegularisedFit:
    # liblinear's dual coordinate descent (through scikit-learn) on
    # ½‖w‖² + C Σ max(0, 1 − y_i φ_iᵀw) with C = 1/(nν), which is J/ν. It visits the
    # coordinates in a random order: a fixed random_state makes the same rows give the
    # same bits (without it, liblinear draws from numpy's global generator: the floor
    # moved by ~1e-10 from run to run)
    from sklearn.svm import LinearSVC

    n = Phi.shape[0]
    svm = LinearSVC(loss="hinge", C=1.0 / (n * nu), fit_intercept=False, dual=True,
                    tol=1e-10, max_iter=1_000_000, random_state=0)
    with warnings.catch_warnings():  # reaching max_iter is checked below
        warnings.simplefilter("ignore", ConvergenceWarning)
        svm.fit(Phi, y)
    if int(np.max(svm.n_iter_)) >= svm.max_iter:
        raise ParameterError("the exact hinge-loss solution did not converge; use the "
                             "logistic loss or a larger ν")
    w = svm.coef_[0].copy()
    return RegularisedFit(w, objective(Phi @ w, y, "hinge", nu, float(w @ w)),
                          int(np.max(svm.n_iter_)))


def kernel_feature_map(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Φ = U Λ^{1/2}`` of a kernel matrix (eigenvalues below 1e-13·n·λ_max dropped) and
    ``B = U Λ^{-1/2}``, so that a fit ``c`` on Φ gives the function ``f = k(·, X) B c``."""
    lam, U = linalg.eigh(K)
    keep = lam > lam[-1] * 1e-13 * K.shape[0]
    U, lam = U[:, keep], lam[keep]
    root = np.sqrt(lam)
    return U * root, U / root
