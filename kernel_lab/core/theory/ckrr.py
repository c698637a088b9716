"""Limiting risk of centered kernel ridge regression (CKRR) and its consistent estimators.

Notation of ``../shared/spec/ckrr.md`` (the formulas there were checked numerically):
inputs ``x ~ N(0, Σ)`` in ``R^p``, n training points, ``c = p/n``, ``τ = tr(Σ)/p``,
inner-product kernel ``k(x, x') = g(xᵀx'/p)``, ``ν = g(τ) − g(0) − τ g'(0)`` and
``z = −(λ + ν)/g'(0)``. ``m(z)`` is the positive solution of

    m = −1 / ( c z − (1/n) Σ_j σ_j / (1 + m σ_j) ),     σ_j the eigenvalues of Σ.

Theorem 1 gives the limits of the training and test risks (measured against the
noiseless target f) in terms of m, σ², ``var f`` and ``b = Σ E[∇f]``; Lemma 1 and
Theorem 2 estimate the test risk from training data through
``m̂(z) = (1/p) tr(PXXᵀP/p − z I_n)⁻¹``.

Everything is vectorised over a λ grid; the estimators need one eigendecomposition
per data set and O(r) work per λ.

References
----------
K. Elkhalil, A. Kammoun, X. Zhang, M.-S. Alouini, T. Al-Naffouri, "Risk convergence of
centered kernel ridge regression with large dimensional data", IEEE Trans. Signal
Processing 68, 2020 (Theorem 1, Lemma 1, Theorem 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from kernel_lab.core.data import InputLaw, TargetFunction
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import InnerProductKernel


# ======================================================================================
# m(z)
# ======================================================================================
def m_identity(z: np.ndarray, c: float) -> np.ndarray:
    """Closed form of m(z) for Σ = I and real z < 0.

    ``m = ( −(cz − c + 1) − sqrt((cz − c − 1)² − 4c) ) / (2 c z)``.
    """
    z = np.asarray(z, dtype=np.float64)
    cz = c * z
    return (-(cz - c + 1.0) - np.sqrt((cz - c - 1.0) ** 2 - 4.0 * c)) / (2.0 * cz)


def m_general(z: np.ndarray, sigma: np.ndarray, n: int, *, tol: float = 1e-12,
              max_iter: int = 200) -> np.ndarray:
    """m(z) for Σ with eigenvalues ``sigma`` and real z < 0, by safeguarded Newton.

    Solves ``h(m) = 1 + m (c z − (1/n) Σ_j σ_j/(1 + m σ_j)) = 0`` for m > 0, vectorised
    over z, starting from ``m = −1/(c z)``; a step that would leave m > 0 is halved.

    Parameters
    ----------
    z : array_like, shape (L,)
        Negative reals.
    sigma : array_like, shape (p,)
        Eigenvalues of Σ (non-negative).
    n : int
        Number of training points.
    """
    z = np.atleast_1d(np.asarray(z, dtype=np.float64))
    if np.any(z >= 0):
        raise ParameterError("m(z) is computed for z < 0 only (λ + ν must have the sign of g'(0))")
    sigma = np.asarray(sigma, dtype=np.float64)
    p = sigma.size
    c = p / n
    m = -1.0 / (c * z)
    for _ in range(max_iter):
        d = 1.0 + m[:, None] * sigma[None, :]
        s1 = (sigma[None, :] / d).sum(axis=1) / n
        s2 = (sigma[None, :] ** 2 / d**2).sum(axis=1) / n
        h = 1.0 + m * (c * z - s1)
        dh = c * z - s1 + m * s2
        step = h / dh
        new = m - step
        bad = new <= 0
        while np.any(bad):
            step[bad] *= 0.5
            new = m - step
            bad = new <= 0
        done = np.abs(new - m) <= tol * np.abs(new)
        m = new
        if done.all():
            return m
    raise ArithmeticError("m(z) did not converge")  # pragma: no cover - never seen


# ======================================================================================
# Moments of f
# ======================================================================================
@dataclass(frozen=True)
class FMoments:
    """``var f`` and ``E[∇f]`` under the input law."""

    var_f: float
    mean_grad: np.ndarray  # shape (p,)
    exact: bool


def moments_of_f(truth: TargetFunction, law: InputLaw, *, samples: int = 200_000,
                 seed: int = 0) -> FMoments:
    """Moments of f for x ~ N(0, Σ) (Σ from ``law``; Bernoulli laws use the Gaussian
    formulas, as the paper does).

    Analytic for ``sin(aᵀx)`` (``E∇f = a e^{−s²/2}``, ``var f = (1 − e^{−2s²})/2``),
    ``aᵀx`` (``a``, ``s²``) and ``(aᵀx)²`` (0, ``2 s⁴``) with ``s² = aᵀΣa``; otherwise
    Monte Carlo with ``E[∇f] = Σ⁻¹ E[x f(x)]`` (Gaussian integration by parts).
    """
    cov = law.cov
    if cov is None:
        raise ParameterError("the limiting risk needs Gaussian or Bernoulli inputs with a known Σ")
    if truth.kind in ("sin", "linear", "quadratic"):
        a = truth.a
        s2 = float(a @ cov @ a)
        if truth.kind == "sin":
            return FMoments((1.0 - math.exp(-2.0 * s2)) / 2.0, a * math.exp(-s2 / 2.0), True)
        if truth.kind == "linear":
            return FMoments(s2, a.copy(), True)
        return FMoments(2.0 * s2 * s2, np.zeros_like(a), True)
    rng = np.random.default_rng(seed)
    gauss = InputLaw("gaussian", law.p, cov_eigvals=law.cov_eigvals, cov_eigvecs=law.cov_eigvecs)
    X = gauss.sample(samples, rng)
    f = truth(X)
    if not np.isfinite(f).all():
        raise ParameterError(f"the target {truth.text} is not finite on Gaussian inputs")
    Exf = X.T @ (f - f.mean()) / samples
    grad = np.linalg.solve(cov, Exf) if cov.size else Exf
    return FMoments(float(f.var()), grad, False)


# ======================================================================================
# Theorem 1
# ======================================================================================
@dataclass(frozen=True)
class LimitSetting:
    """Everything Theorem 1 needs besides λ and the kernel."""

    n: int
    sigma: np.ndarray        # eigenvalues of Σ, shape (p,)
    b: np.ndarray            # Uᵀ Σ E[∇f] in the eigenbasis of Σ, shape (p,)
    var_f: float
    noise: float             # σ²

    @property
    def p(self) -> int:
        return int(self.sigma.size)

    @property
    def c(self) -> float:
        return self.p / self.n

    @property
    def tau(self) -> float:
        return float(self.sigma.sum() / self.p)

    @classmethod
    def from_law(cls, law: InputLaw, truth: TargetFunction, noise: float, n: int,
                 moments: FMoments | None = None) -> LimitSetting:
        mom = moments_of_f(truth, law) if moments is None else moments
        g = mom.mean_grad
        if law.cov_eigvecs is not None:
            g = law.cov_eigvecs.T @ g
        return cls(n, np.asarray(law.cov_eigvals, dtype=float), law.cov_eigvals * g, mom.var_f,
                   float(noise))


def kernel_z(kernel: InnerProductKernel, lams: np.ndarray, tau: float) -> np.ndarray:
    """``z = −(λ + ν)/g'(0)`` with ``ν = g(τ) − g(0) − τ g'(0)``."""
    dg0 = kernel.dg0
    if dg0 == 0:
        raise ParameterError(
            f"the theory needs g'(0) ≠ 0; the {kernel.spec()} kernel has g'(0) = 0")
    nu = float(kernel.g(tau)) - kernel.g0 - tau * dg0
    z = -(np.asarray(lams, dtype=float) + nu) / dg0
    if np.any(z >= 0):
        raise ParameterError(
            f"for the {kernel.spec()} kernel, λ must exceed {-nu:g} (= −ν) for the theory to apply")
    return z


def limiting_risks(setting: LimitSetting, kernel: InnerProductKernel,
                   lams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(R∞_train, R∞_test)`` on the λ grid (Theorem 1, general Σ)."""
    lams = np.asarray(lams, dtype=float)
    z = kernel_z(kernel, lams, setting.tau)
    n, s, b2 = setting.n, setting.sigma, setting.b**2
    m = m_general(z, s, n)
    d = 1.0 + m[:, None] * s[None, :]
    A1 = (b2[None, :] / d).sum(axis=1)
    A2 = (b2[None, :] / d**2).sum(axis=1)
    T = (s[None, :] ** 2 / d**2).sum(axis=1)
    F = (n * setting.noise + n * setting.var_f - n * m * (A1 + A2)) / (n - m**2 * T)
    a = setting.c * lams * m / kernel.dg0
    r_test = F - setting.noise
    r_train = a**2 * F + setting.noise - 2.0 * setting.noise * a
    return r_train, r_test


# ======================================================================================
# Estimators from data (Lemma 1, Theorem 2)
# ======================================================================================
@dataclass(frozen=True)
class DataEigen:
    """One eigendecomposition of the centred Gram of a training set, for m̂ and Theorem 2.

    ``mu`` are the non-zero eigenvalues of ``XᵀPX/p`` (equivalently of ``PXXᵀP/p``),
    ``weights`` the squares ``w_j² = (v_jᵀ XᵀP y)²`` of the projections of ``u = XᵀPy``
    on the corresponding eigenvectors, ``var_y = (1/n) Σ (y_i − ȳ)²`` and ``A = ‖u‖²/n``.
    """

    n: int
    p: int
    mu: np.ndarray
    weights: np.ndarray
    var_y: float
    A: float

    @classmethod
    def from_data(cls, X: np.ndarray, y: np.ndarray) -> DataEigen:
        n, p = X.shape
        Xc = X - X.mean(axis=0)          # P X
        yc = y - y.mean()                # P y
        if p <= n:
            mu, V = np.linalg.eigh(Xc.T @ Xc / p)
            w2 = (V.T @ (Xc.T @ yc)) ** 2
        else:  # push-through: uᵀh(XᵀPX/p)u = p Σ μ_j h(μ_j) (W_jᵀ P y)² on the n×n side
            mu, W = np.linalg.eigh(Xc @ Xc.T / p)
            w2 = p * np.clip(mu, 0.0, None) * (W.T @ yc) ** 2
        keep = mu > 1e-12 * max(float(mu.max(initial=0.0)), 1e-300)
        u = Xc.T @ yc
        return cls(n, p, mu[keep], w2[keep], float(yc @ yc / n), float(u @ u / n))

    @property
    def tau(self) -> float:
        """``tr(XᵀPX)/(n p)``, the data's estimate of ``τ = tr(Σ)/p``."""
        return float(self.mu.sum() / self.n)

    def m_hat(self, z: np.ndarray) -> np.ndarray:
        """``m̂(z) = (1/p)[Σ_{μ_j>0} 1/(μ_j − z) + (n − r)/(−z)]``, shape like z."""
        z = np.asarray(z, dtype=float)
        r = self.mu.size
        return ((1.0 / (self.mu[None, :] - z[:, None])).sum(axis=1) + (self.n - r) / (-z)) / self.p

    def theorem2(self, z: np.ndarray, noise: float) -> np.ndarray:
        """Theorem 2 (general Σ): estimate of R_test on the z grid."""
        z = np.asarray(z, dtype=float)
        m = self.m_hat(z)
        diff = self.mu[None, :] - z[:, None]
        quad = (self.weights[None, :] * (2.0 * z[:, None] - self.mu[None, :]) / diff**2).sum(1)
        c = self.p / self.n
        return (quad / (self.n * self.p) + self.var_y) / (c * z * m) ** 2 - noise

    def theorem2_identity(self, z: np.ndarray, noise: float) -> np.ndarray:
        """Theorem 2, inversion-free form for Σ = I."""
        m = self.m_hat(np.asarray(z, dtype=float))
        n, p, v = self.n, self.p, self.var_y
        num = n * (1 + m) ** 2 * v - m * (2 + m) * (self.A - p * v)
        return num / (n * (1 + m) ** 2 - p * m**2) - noise


def lemma1(r_train: np.ndarray, z: np.ndarray, lams: np.ndarray, m_hat: np.ndarray, c: float,
           dg0: float, noise: float) -> np.ndarray:
    """Lemma 1: ``R̂_test = R_train/a² − σ²(1/a − 1)²`` with ``a = c λ m̂/g'(0)``
    (unstable for small λ, as the paper notes)."""
    a = c * np.asarray(lams, dtype=float) * m_hat / dg0
    return r_train / a**2 - noise * (1.0 / a - 1.0) ** 2


# ======================================================================================
# Optimal λ
# ======================================================================================
@dataclass(frozen=True)
class Optimum:
    """A minimiser on log λ; ``inside`` is False when it sits on a bound of the search."""

    lam: float
    value: float
    inside: bool


def optimal_lam(curve: Callable[[np.ndarray], np.ndarray], lam_min: float,
                lam_max: float) -> Optimum:
    """Minimise ``curve(λ)`` over ``[lam_min, lam_max]`` by a bounded search on log λ.

    A coarse log grid locates the basin; a bounded Brent search refines it. When the
    minimum lies at a bound, ``inside`` is False so callers can say so.
    """
    lo, hi = math.log(lam_min), math.log(lam_max)
    grid = np.linspace(lo, hi, 121)
    vals = np.asarray(curve(np.exp(grid)), dtype=float)
    vals = np.where(np.isfinite(vals), vals, np.inf)
    k = int(np.argmin(vals))
    if k in (0, grid.size - 1):
        return Optimum(float(np.exp(grid[k])), float(vals[k]), False)
    res = minimize_scalar(lambda t: float(curve(np.array([math.exp(t)]))[0]),
                          bounds=(grid[k - 1], grid[k + 1]), method="bounded",
                          options={"xatol": 1e-10})
    return Optimum(float(math.exp(res.x)), float(res.fun), True)


# ======================================================================================
# Spectrum of the sample covariance
# ======================================================================================
def _m_complex(z: complex, sigma: np.ndarray, n: int, m0: complex) -> complex:
    """m(z) for one complex z with Im z > 0: Newton from ``m0``, falling back to a damped
    fixed-point iteration when Newton leaves the upper half-plane or stalls."""
    c = sigma.size / n
    m = m0
    for _ in range(100):
        d = 1.0 + m * sigma
        s1 = (sigma / d).sum() / n
        s2 = (sigma**2 / d**2).sum() / n
        h = 1.0 + m * (c * z - s1)
        new = m - h / (c * z - s1 + m * s2)
        if abs(new - m) <= 1e-13 * abs(new):
            if new.imag > 0:
                return complex(new)
            break
        m = new
    m = m0 if m0.imag > 0 else complex(-1.0 / (c * z))
    for _ in range(20_000):
        new = -1.0 / (c * z - (sigma / (1.0 + m * sigma)).sum() / n)
        if abs(new - m) <= 1e-12 * abs(new):
            return complex(new)
        m = 0.5 * m + 0.5 * new
    return complex(m)


def covariance_spectrum_density(x: np.ndarray, sigma: np.ndarray, n: int,
                                eps: float = 1e-4) -> np.ndarray:
    """Limiting density of the eigenvalues of the sample covariance ``XᵀX/n`` at ``x``.

    Uses the Stieltjes transform of the eigenvalues of ``XᵀX/p``,
    ``s(z) = −(1/(p z)) Σ_j 1/(1 + m(z) σ_j)`` with m solved in complex arithmetic at
    ``z = t + iε`` (warm-started along the grid), density ``(1/π) Im s``, and the change
    of variables ``XᵀX/n = c · XᵀX/p``. For Σ = I this is the Marchenko–Pastur law.

    Parameters
    ----------
    x : array_like, shape (G,)
        Points (eigenvalues of XᵀX/n), increasing.
    sigma : array_like, shape (p,)
        Eigenvalues of Σ.
    n : int
        Number of samples.
    eps : float
        Imaginary part used to evaluate the transform (relative to the scale of x).
    """
    sigma = np.asarray(sigma, dtype=float)
    p = sigma.size
    c = p / n
    t = np.asarray(x, dtype=float) / c      # the same points as eigenvalues of XᵀX/p
    scale = float(max(np.abs(t).max(initial=1.0), 1.0))
    out = np.empty(t.size)
    m = None
    for i, ti in enumerate(t):
        z = complex(ti, eps * scale)
        m = _m_complex(z, sigma, n, complex(-1.0 / (c * z)) if m is None else m)
        s = -(1.0 / (1.0 + m * sigma)).sum() / (p * z)
        out[i] = max(s.imag, 0.0) / np.pi
    return out / c


def marchenko_pastur_density(x: np.ndarray, c: float) -> np.ndarray:
    """Marchenko–Pastur density of the eigenvalues of ``XᵀX/n`` for Σ = I and
    ``c = p/n ≤ 1``: ``sqrt((b − x)(x − a)) / (2π c x)`` on ``[a, b] = [(1 ∓ √c)²]``."""
    x = np.asarray(x, dtype=float)
    a, b = (1 - math.sqrt(c)) ** 2, (1 + math.sqrt(c)) ** 2
    inside = (x > a) & (x < b)
    out = np.zeros_like(x)
    out[inside] = np.sqrt((b - x[inside]) * (x[inside] - a)) / (2 * math.pi * c * x[inside])
    return out
