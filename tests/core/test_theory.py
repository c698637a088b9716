"""CKRR random-matrix theory against closed forms, literal formulas and the checked values
of ../shared/spec/ckrr.md."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import (
    ExponentialKernel,
    LinearKernel,
    PolynomialKernel,
    SigmoidKernel,
)
from kernel_lab.core.synthetic import make_target
from kernel_lab.core.theory.ckrr import (
    DataSpectrum,
    LimitSetting,
    covariance_spectrum_density,
    kernel_z,
    limiting_risks,
    m_general,
    m_identity,
    marchenko_pastur_density,
    moments_of_f,
    optimal_lam,
    theorem2_mean,
)
from kernel_lab.data.generators import generate

PAPER_KERNELS = [LinearKernel(1, 1), PolynomialKernel(1, 1, 2), SigmoidKernel(1, -1),
                 ExponentialKernel(1, 0)]


def toeplitz_setting(p=100, n=200, noise=0.5):
    src = generate("gaussian", {"n": 2, "p": p, "cov": "toeplitz", "rho": 0.4,
                                "noise": noise}, seed=0).source
    return src, LimitSetting.from_law(src.law, src.truth, noise, n)


@pytest.mark.parametrize("c", [0.1, 0.5, 1.0, 2.0, 5.0])
def test_m_general_equals_identity_closed_form(c):
    p = 100
    n = round(p / c)
    z = -np.logspace(-4, 3, 200)
    np.testing.assert_allclose(m_general(z, np.ones(p), n), m_identity(z, p / n),
                               rtol=1e-10, atol=0)


def test_m_general_solves_the_fixed_point_for_toeplitz():
    _, s = toeplitz_setting()
    z = -np.logspace(-3, 2, 50)
    m = m_general(z, s.sigma, s.n)
    rhs = -1.0 / (s.c * z - (s.sigma[None, :] / (1 + m[:, None] * s.sigma[None, :])).sum(1) / s.n)
    np.testing.assert_allclose(m, rhs, rtol=1e-12)
    assert (m > 0).all()


def test_m_rejects_nonnegative_z():
    with pytest.raises(ParameterError, match="z < 0"):
        m_general(np.array([0.1]), np.ones(3), 5)


# Checked values, ../shared/spec/ckrr.md (exponential kernel α = 1, β = 0).
SPEC_GAUSSIAN = {0.05: 0.4518, 0.3: 0.4218, 1: 0.3823, 3: 0.3627, 10: 0.3939}
SPEC_WIDE = {0.3: 0.4508, 1: 0.4322, 3: 0.4344, 10: 0.4600, 30: 0.4800}  # p = 200, n = 100
SPEC_BERNOULLI_100_200 = {30: 0.4424}


@pytest.mark.parametrize("p,n,table", [(100, 200, SPEC_GAUSSIAN), (200, 100, SPEC_WIDE),
                                       (100, 200, SPEC_BERNOULLI_100_200)])
def test_limit_reproduces_checked_values(p, n, table):
    _, setting = toeplitz_setting(p, n)
    lams = np.array(list(table))
    _, r_test = limiting_risks(setting, ExponentialKernel(1, 0), lams)
    np.testing.assert_allclose(r_test, list(table.values()), rtol=0.01)


def test_identity_sigma_matches_the_papers_simplified_form():
    p, n, noise = 60, 150, 0.3
    src = generate("gaussian", {"n": 2, "p": p, "noise": noise}, seed=0).source
    setting = LimitSetting.from_law(src.law, src.truth, noise, n)
    kernel = PolynomialKernel(1, 1, 3)
    lams = np.logspace(-2, 2, 20)
    _, r_test = limiting_risks(setting, kernel, lams)
    z = kernel_z(kernel, lams, 1.0)
    m = m_identity(z, p / n)
    g2 = float(setting.b @ setting.b)
    ref = (n * (1 + m) ** 2 * (noise + setting.var_f) - n * m * (2 + m) * g2) / (
        n * (1 + m) ** 2 - p * m**2) - noise
    np.testing.assert_allclose(r_test, ref, rtol=1e-10)


def test_all_kernels_share_the_minimum_test_risk():
    _, setting = toeplitz_setting()
    optima = [optimal_lam(lambda lam, k=k: limiting_risks(setting, k, lam)[1], 1e-3, 1e4)
              for k in PAPER_KERNELS]
    values = [o.value for o in optima]
    assert max(values) - min(values) < 1e-6
    assert all(o.inside for o in optima)
    assert len({round(o.lam, 3) for o in optima}) == 4  # … at four different λ*


def test_optimal_lam_reports_an_edge():
    opt = optimal_lam(lambda lam: 1.0 / lam, 0.1, 10.0)
    assert not opt.inside and opt.lam == pytest.approx(10.0)
    inner = optimal_lam(lambda lam: (np.log(lam) - 1.0) ** 2, 0.01, 100.0)
    assert inner.inside and inner.lam == pytest.approx(np.e, rel=1e-6)


@pytest.mark.parametrize("kind", ["sin", "linear", "quadratic"])
def test_analytic_moments_match_monte_carlo(kind):
    src = generate("gaussian", {"n": 2, "p": 8, "cov": "toeplitz", "rho": 0.4}, seed=0).source
    exact = moments_of_f(make_target(kind, 8), src.law)
    text = {"sin": "sin(sum(x) / sqrt(p))", "linear": "sum(x) / sqrt(p)",
            "quadratic": "(sum(x) / sqrt(p))^2"}[kind]
    mc = moments_of_f(make_target(text, 8), src.law, samples=400_000, seed=1)
    assert exact.exact and not mc.exact
    assert mc.var_f == pytest.approx(exact.var_f, rel=0.03, abs=0.003)
    # the quadratic's x·f(x) has heavy tails: a looser Monte Carlo tolerance
    np.testing.assert_allclose(mc.mean_grad, exact.mean_grad,
                               atol=0.04 if kind == "quadratic" else 0.01)


# -- estimators --------------------------------------------------------------------------
@pytest.mark.parametrize("n,p", [(60, 25), (25, 60)])
def test_m_hat_and_theorem2_match_literal_formulas(n, p):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, p))
    y = np.sin(X.sum(1) / np.sqrt(p)) + 0.3 * rng.standard_normal(n)
    eig = DataSpectrum.from_data(X, y)
    P = np.eye(n) - 1.0 / n
    z = -np.logspace(-2, 1, 7)
    noise = 0.09
    for zi, m_fast, t2 in zip(z, eig.m_hat(z), eig.theorem2(z, noise), strict=True):
        m_ref = np.trace(np.linalg.inv(P @ X @ X.T @ P / p - zi * np.eye(n))) / p
        assert m_fast == pytest.approx(m_ref, rel=1e-10)
        Q = np.linalg.inv(X.T @ P @ X / p - zi * np.eye(p))
        u = X.T @ P @ y
        var_y = np.mean((y - y.mean()) ** 2)
        ref = ((u @ (zi * Q @ Q - Q) @ u) / (n * p) + var_y) / ((p / n) * zi * m_ref) ** 2 - noise
        assert t2 == pytest.approx(ref, rel=1e-9)
    assert eig.tau == pytest.approx(np.trace(X.T @ P @ X) / (n * p))


def _literal_quad(X, y, z):
    """uᵀ(2z − G)(G − z)⁻²u with u = XᵀPy and G = XᵀPX/p, by dense inverses."""
    n, p = X.shape
    P = np.eye(n) - 1.0 / n
    G = X.T @ P @ X / p
    u = X.T @ P @ y
    out = []
    for zi in z:
        R = np.linalg.inv(G - zi * np.eye(p))
        out.append(u @ ((2 * zi * np.eye(p) - G) @ R @ R) @ u)
    return np.array(out)


@pytest.mark.parametrize("n,p", [(60, 25), (25, 60), (40, 40), (3, 1), (2, 5)])
def test_quad_form_on_both_sides_of_the_spectrum(n, p):
    """The tridiagonal route equals dense inverses below the spectrum (one banded solve)
    and inside or above it (the spectral sum, g'(0) < 0), for p ≤ n and p > n."""
    rng = np.random.default_rng(n * 100 + p)
    X = rng.standard_normal((n, p))
    y = X[:, 0] + 0.5 * rng.standard_normal(n)
    spec = DataSpectrum.from_data(X, y)
    ev = np.linalg.eigvalsh(X.T @ (np.eye(n) - 1.0 / n) @ X / p)
    inside = (ev[-1] + ev[-2]) / 2 if ev.size > 1 else ev[-1] + 0.3
    z = np.array([-10.0, -0.5, -1e-3, inside, ev[-1] + 1.0])
    ref = _literal_quad(X, y, z)
    np.testing.assert_allclose(spec.quad(z), ref, rtol=1e-8, atol=1e-10 * np.abs(ref).max())
    np.testing.assert_allclose(np.sort(spec.mu), ev[ev > 1e-10 * ev.max()], rtol=1e-10)
    P = np.eye(n) - 1.0 / n
    m_ref = [np.trace(np.linalg.inv(P @ X @ X.T @ P / p - zi * np.eye(n))) / p for zi in z]
    np.testing.assert_allclose(spec.m_hat(z), m_ref, rtol=1e-8, atol=1e-12 * np.abs(m_ref).max())
    # the grid in any order, and each z alone, give the same numbers
    t2 = spec.theorem2(z, 0.1)
    tol = {"rtol": 1e-12, "atol": 1e-12 * np.abs(t2).max()}
    np.testing.assert_allclose(spec.theorem2(z[::-1], 0.1)[::-1], t2, **tol)
    np.testing.assert_allclose([spec.theorem2(z[i:i + 1], 0.1)[0] for i in range(z.size)],
                               t2, **tol)


def test_quad_form_with_repeated_features_and_constant_response():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((50, 10))
    X = np.hstack([base, base[:, :5]])           # rank 10 of 15: zero eigenvalues
    y = base @ rng.standard_normal(10)
    spec = DataSpectrum.from_data(X, y)
    assert spec.mu.size == 10
    z = -np.logspace(-2, 1, 6)
    np.testing.assert_allclose(spec.quad(z), _literal_quad(X, y, z), rtol=1e-8)
    flat = DataSpectrum.from_data(X, np.full(50, 3.0))
    assert flat.scale == 0.0 and not flat.quad(z).any()
    assert np.isfinite(flat.theorem2(z, 0.1)).all()


@pytest.mark.parametrize("scale,z", [(1.0, -1e-12), (1e3, -1e-8)])
def test_m_hat_keeps_the_centring_zero_exact_when_p_exceeds_n(scale, z):
    """For p ≥ n, PXXᵀP/p has the eigenvalue 0 (eigenvector 1) exactly; computed, it
    would be ~1e-16‖N‖ and ruin m̂ at tiny |z| (a linear kernel with λ near 1e-12)."""
    rng = np.random.default_rng(7)
    n, p = 60, 120
    X = scale * rng.standard_normal((n, p))
    y = rng.standard_normal(n)
    Xc = X - X.mean(0)
    mu = np.linalg.eigvalsh(Xc @ Xc.T / p)[1:]          # all but the centring zero
    m_ref = ((1.0 / (mu - z)).sum() + 1.0 / -z) / p
    spec = DataSpectrum.from_data(X, y)
    assert spec.m_hat(np.array([z]))[0] == pytest.approx(m_ref, rel=1e-9)
    assert spec.diag.size == n - 1


def test_estimates_skip_non_finite_z():
    rng = np.random.default_rng(3)
    spec = DataSpectrum.from_data(rng.standard_normal((30, 10)), rng.standard_normal(30))
    both = spec.theorem2(np.array([np.nan, -1.0, np.inf]), 0.2)
    assert np.isnan(both[0]) and np.isnan(both[2])
    assert both[1] == spec.theorem2(np.array([-1.0]), 0.2)[0]
    out = theorem2_mean([spec, spec], np.array([np.nan, -1.0]), 0.2)
    assert np.isnan(out[0]) and out[1] == pytest.approx(both[1])


def test_theorem2_mean_equals_the_mean_of_the_estimates():
    rng = np.random.default_rng(2)
    spectra = [DataSpectrum.from_data(rng.standard_normal((40, 20)), rng.standard_normal(40))
               for _ in range(5)]
    for z in (np.array([-0.7]), -np.logspace(-2, 1, 30), np.array([-0.2, 5.0])):
        ref = np.mean([s.theorem2(z, 0.3) for s in spectra], axis=0)
        np.testing.assert_allclose(theorem2_mean(spectra, z, 0.3), ref, rtol=1e-12)
    rows = -np.abs(rng.standard_normal((5, 3))) - 0.1         # one z row per spectrum
    np.testing.assert_allclose(theorem2_mean(spectra, rows, 0.3),
                               np.mean([s.theorem2(r, 0.3)
                                        for s, r in zip(spectra, rows, strict=True)], axis=0),
                               rtol=1e-12)
    mixed = [*spectra, DataSpectrum.from_data(rng.standard_normal((30, 20)),
                                              rng.standard_normal(30))]
    z = np.array([-0.7])
    np.testing.assert_allclose(theorem2_mean(mixed, z, 0.3),
                               np.mean([s.theorem2(z, 0.3) for s in mixed], axis=0))


def test_optimal_lam_from_a_coarse_curve_at_hand():
    curve = lambda lam: (np.log(lam) - 1.0) ** 2  # noqa: E731
    grid = np.geomspace(0.01, 100.0, 9)
    opt = optimal_lam(curve, 0.01, 100.0, (grid, curve(grid)))
    assert opt.inside and opt.lam == pytest.approx(np.e, rel=1e-6)
    edge = optimal_lam(lambda lam: 1.0 / lam, 0.1, 10.0, (grid[2:7], 1.0 / grid[2:7]))
    assert not edge.inside and edge.lam == grid[6]
    # best grid point on the bound, true minimum just inside: found, and called inside
    near = lambda lam: (np.log(lam) - np.log(0.02)) ** 2  # noqa: E731
    opt = optimal_lam(near, 0.01, 100.0, (grid, near(grid)))
    assert opt.inside and opt.lam == pytest.approx(0.02, rel=1e-6)


def test_estimators_track_the_limit_on_average():
    """Theorem 2 (both forms) averaged over draws is close to R∞_test for Σ = I."""
    p, n, noise = 100, 200, 0.5
    src = generate("gaussian", {"n": 2, "p": p, "noise": noise}, seed=0).source
    setting = LimitSetting.from_law(src.law, src.truth, noise, n)
    kernel = ExponentialKernel(1, 0)
    lams = np.array([0.3, 1.0, 3.0, 10.0])
    _, limit = limiting_risks(setting, kernel, lams)
    z = kernel_z(kernel, lams, 1.0)
    rng = np.random.default_rng(3)
    general, identity = [], []
    for _ in range(40):
        X, _, y = src.sample(n, rng)
        eig = DataSpectrum.from_data(X, y)
        general.append(eig.theorem2(z, noise))
        identity.append(eig.theorem2_identity(z, noise))
    np.testing.assert_allclose(np.mean(general, 0), limit, rtol=0.06)
    np.testing.assert_allclose(np.mean(identity, 0), limit, rtol=0.06)


# -- spectrum ------------------------------------------------------------------------------
def test_spectrum_density_for_identity_is_marchenko_pastur():
    x = np.linspace(0.2, 2.8, 300)
    dens = covariance_spectrum_density(x, np.ones(300), 600, eps=1e-6)
    mp = marchenko_pastur_density(x, 0.5)
    interior = (x > 0.1716 + 0.05) & (x < 2.9142 - 0.05)
    np.testing.assert_allclose(dens[interior], mp[interior], atol=1e-3)


def test_spectrum_density_matches_histogram_for_two_level_sigma():
    """The spec's check: p = 400, n = 800, eigenvalues 1 and 3 (half each)."""
    sigma = np.repeat([1.0, 3.0], 200)
    X = np.random.default_rng(0).standard_normal((800, 400)) * np.sqrt(sigma)
    ev = np.linalg.eigvalsh(X.T @ X / 800)
    x = np.linspace(1e-3, ev.max() * 1.1, 3000)
    dens = covariance_spectrum_density(x, sigma, 800)
    assert np.trapezoid(dens, x) == pytest.approx(1.0, abs=2e-3)
    counts, edges = np.histogram(ev, bins=20, density=True)
    per_bin = [dens[(x >= a) & (x < b)].mean() for a, b in itertools.pairwise(edges)]
    assert np.abs(counts - per_bin).max() < 0.03


@pytest.mark.parametrize("spec,scale", [
    ("gaussian:n=200,p=100,cov=identity,noise=0.5,f=sin", 1.0),
    ("gaussian:n=100,p=200,cov=identity,noise=0.5,f=sin", 1.0),
    ("gaussian:n=400,p=50,cov=identity,noise=0.5", 1.0),
    ("gaussian:n=200,p=100,cov=spectrum,spectrum=1.5,noise=0.5,f=sin", 1.5),
    ("gaussian:n=100,p=200,cov=spectrum,spectrum=4,noise=0.5,f=sin", 4.0)])
def test_eq26_closed_form_optimum_equals_the_numeric_search(spec, scale):
    from scipy.optimize import minimize_scalar

    from kernel_lab.core.theory.ckrr import DataSpectrum
    from kernel_lab.data.source import load_data

    d = load_data(spec, seed=1)
    sp = DataSpectrum.from_data(d.X_train, d.y_train)
    m_star, z_star, value = sp.identity_optimum(0.5, scale=scale)
    # eq. 25 is defined where its denominator n(1 + μ)² − pμ² is positive, as its limit's
    # n − m²T is; for p > n, m̂ (with the centring's zero eigenvalue) passes the pole as
    # z → 0⁻: the search stays on the side of the optimum
    ts = np.linspace(-12.0, 8.0, 2001)
    mu = scale * sp.m_hat(-np.exp(ts))
    ts = ts[sp.n * (1 + mu) ** 2 - sp.p * mu**2 > 0]
    assert ts[0] == -12.0 or sp.p > sp.n

    def curve(t):
        return float(sp.theorem2_identity(np.array([-np.exp(t)]), 0.5, scale=scale)[0])

    k = int(np.argmin([curve(t) for t in ts]))
    res = minimize_scalar(curve, bounds=(ts[max(k - 1, 0)], ts[min(k + 1, ts.size - 1)]),
                          method="bounded", options={"xatol": 1e-12})
    assert z_star == pytest.approx(-np.exp(res.x), rel=1e-6)
    assert value <= res.fun + 1e-12
    assert sp.m_hat(np.array([z_star]))[0] == pytest.approx(m_star, rel=1e-10)


# -- Σ = sI: eq. 25 and eq. 26 need the scale s ---------------------------------------------
def _scaled_identity(s, p=100, n=200, noise=0.5):
    src = generate("gaussian", {"n": 2, "p": p, "cov": "spectrum", "spectrum": str(s),
                                "noise": noise}, seed=0).source
    return src, LimitSetting.from_law(src.law, src.truth, noise, n)


@pytest.mark.parametrize("s", [1.5, 4.0])
def test_eq25_with_the_scale_of_sigma_tracks_the_limit(s):
    """For Σ = sI the inversion-free form holds with m̂ → s m̂ and A → A/s (Theorem 2 at z
    on X equals Theorem 2 at z/s on X/√s, whose Σ is I): averaged over draws it follows
    R∞_test as the general form (24) does; the paper's Σ = I form taken as it stands
    (s = 1) misses it by more than 10 %."""
    p, n, noise = 100, 200, 0.5
    src, setting = _scaled_identity(s, p, n, noise)
    kernel = ExponentialKernel(1, 0)
    lams = np.array([0.3, 1.0, 3.0, 10.0])
    _, limit = limiting_risks(setting, kernel, lams)
    z = kernel_z(kernel, lams, s)
    rng = np.random.default_rng(3)
    scaled, general, unscaled = [], [], []
    for _ in range(40):
        X, _, y = src.sample(n, rng)
        eig = DataSpectrum.from_data(X, y)
        scaled.append(eig.theorem2_identity(z, noise, scale=s))
        general.append(eig.theorem2(z, noise))
        unscaled.append(eig.theorem2_identity(z, noise))
    np.testing.assert_allclose(np.mean(scaled, 0), limit, rtol=0.06)
    np.testing.assert_allclose(np.mean(general, 0), limit, rtol=0.06)
    assert np.abs(np.mean(unscaled, 0) / limit - 1).max() > 0.1


@pytest.mark.parametrize("s", [1.0, 1.5, 4.0])
@pytest.mark.parametrize("kernel", [LinearKernel(1, 1), ExponentialKernel(1, 0)])
def test_eq26_for_a_multiple_of_the_identity_is_the_limits_optimum(s, kernel):
    """The closed form of eq. 26 for Σ = sI, fed the population values (v = σ² + var f,
    B = n s ‖E∇f‖²), gives μ* = s m*; z* follows from the fixed point solved for z, and
    λ* = −z* g'(0) − ν equals a numeric minimisation of R∞_test over λ."""
    from kernel_lab.core.theory.ckrr import eq26_optimum

    p, n, noise = 100, 200, 0.5
    _, setting = _scaled_identity(s, p, n, noise)
    g = setting.b / s                                      # E∇f (Σ diagonal)
    mu = eq26_optimum(n, p, noise + setting.var_f, n * s * float(g @ g))
    assert mu is not None and mu > 0
    m = mu / s
    z = (-1.0 / m + (p / n) * s / (1.0 + m * s)) / (p / n)  # m(z) = m, solved for z
    nu = float(kernel.g(s)) - kernel.g0 - s * kernel.dg0
    lam_closed = -z * kernel.dg0 - nu
    numeric = optimal_lam(lambda lam: limiting_risks(setting, kernel, lam)[1], 1e-3, 1e4)
    assert numeric.inside
    assert lam_closed == pytest.approx(numeric.lam, rel=1e-5)
