"""Kernels against scikit-learn / scipy references and their spectral densities."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.gaussian_process.kernels import Matern
from sklearn.metrics.pairwise import (
    laplacian_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
    sigmoid_kernel,
)

from kernel_lab.core.errors import MemoryBudgetError, ParameterError
from kernel_lab.core.kernels import (
    KERNELS,
    CauchyKernel,
    ExponentialKernel,
    GaussianKernel,
    LaplaceKernel,
    LinearKernel,
    Matern32Kernel,
    Matern52Kernel,
    PolynomialKernel,
    SigmoidKernel,
    make_kernel,
    median_heuristic,
    parse_kernel,
)

TOL = 1e-12


@pytest.fixture
def XY():
    rng = np.random.default_rng(0)
    return rng.standard_normal((37, 6)), rng.standard_normal((23, 6))


def test_gaussian_matches_sklearn(XY):
    X, Y = XY
    sigma = 1.7
    ref = rbf_kernel(X, Y, gamma=1 / (2 * sigma**2))
    np.testing.assert_allclose(GaussianKernel(sigma)(X, Y), ref, atol=TOL, rtol=0)


def test_laplace_matches_sklearn(XY):
    X, Y = XY
    np.testing.assert_allclose(LaplaceKernel(2.5)(X, Y), laplacian_kernel(X, Y, gamma=1 / 2.5),
                               atol=TOL, rtol=0)


def test_cauchy_matches_product_formula(XY):
    X, Y = XY
    sigma = 0.8
    ref = np.ones((X.shape[0], Y.shape[0]))
    for j in range(X.shape[1]):
        ref /= 1 + cdist(X[:, [j]], Y[:, [j]], "sqeuclidean") / sigma**2
    np.testing.assert_allclose(CauchyKernel(sigma)(X, Y), ref, atol=TOL, rtol=0)


@pytest.mark.parametrize("cls,nu", [(Matern32Kernel, 1.5), (Matern52Kernel, 2.5)])
def test_matern_matches_sklearn_and_scipy_distance(XY, cls, nu):
    X, Y = XY
    ref = Matern(length_scale=1.3, nu=nu)(X, Y)
    np.testing.assert_allclose(cls(1.3)(X, Y), ref, atol=TOL, rtol=0)
    r = cdist(X, Y) * np.sqrt(2 * nu) / 1.3
    closed = (1 + r) * np.exp(-r) if nu == 1.5 else (1 + r + r**2 / 3) * np.exp(-r)
    np.testing.assert_allclose(cls(1.3)(X, Y), closed, atol=TOL, rtol=0)


def test_inner_product_family_matches_sklearn(XY):
    X, Y = XY
    p = X.shape[1]
    np.testing.assert_allclose(LinearKernel(2.0, 0.5)(X, Y), 2.0 * linear_kernel(X, Y) / p + 0.5,
                               atol=TOL, rtol=0)
    np.testing.assert_allclose(PolynomialKernel(1.5, 1.0, 3)(X, Y),
                               polynomial_kernel(X, Y, degree=3, gamma=1.5 / p, coef0=1.0),
                               atol=TOL, rtol=1e-14)
    np.testing.assert_allclose(SigmoidKernel(1.0, -1.0)(X, Y),
                               sigmoid_kernel(X, Y, gamma=1.0 / p, coef0=-1.0), atol=TOL, rtol=0)
    np.testing.assert_allclose(ExponentialKernel(1.0, 0.2)(X, Y), np.exp(X @ Y.T / p + 0.2),
                               atol=TOL, rtol=1e-14)


@pytest.mark.parametrize("name", list(KERNELS))
def test_diag_matches_matrix_and_symmetry(XY, name):
    X, _ = XY
    k = make_kernel(name)
    K = k(X)
    np.testing.assert_allclose(np.diag(K), k.diag(X), atol=TOL)
    np.testing.assert_allclose(K, K.T, atol=TOL)


@pytest.mark.parametrize("name", list(KERNELS))
def test_blockwise_equals_single_block(XY, name):
    X, Y = XY
    k = make_kernel(name)
    # one row per block; BLAS may round differently per block shape, hence 1e-14
    np.testing.assert_allclose(k(X, Y, block_bytes=1), k(X, Y), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("name", list(KERNELS))
def test_one_block_into_a_buffer_equals_the_matrix(XY, name):
    """``Kernel.block`` (no blocking, no memory check; into a buffer or a new array) gives
    the matrix ``__call__`` assembles from its blocks."""
    X, Y = XY
    k = make_kernel(name)
    buffer = np.full((X.shape[0], Y.shape[0]), np.nan)
    assert k.block(X, Y, buffer) is buffer
    np.testing.assert_allclose(buffer, k(X, Y), rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(k.block(X, Y), k(X, Y), rtol=1e-14, atol=1e-14)


def test_gaussian_in_cache_sized_blocks_matches_sklearn_on_many_rows():
    """3000 × 500: the exponents and exponentials run over many row chunks of at most
    CACHE_BLOCK_BYTES, also in blocks of one row; equal to scikit-learn's rbf_kernel,
    never above 1, and 1 on coincident points up to the cancellation of ‖x‖² (here ≈ 90)
    that the distance formula has."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(3000, 10)) * 3.0
    Y = X[rng.choice(3000, size=500, replace=False)]
    K = GaussianKernel(2.0)(X, Y)
    np.testing.assert_allclose(K, rbf_kernel(X, Y, gamma=1 / 8.0), atol=TOL, rtol=0)
    np.testing.assert_allclose(GaussianKernel(2.0)(X[:50], Y, block_bytes=1), K[:50],
                               atol=TOL, rtol=0)
    assert K.max() <= 1.0
    # d² = ‖x‖² + ‖y‖² − 2 xᵀy for y = x: each of the p-term sums is off by ≤ p u Σ|terms|,
    # so d² by ≤ (p + 2) u 4‖x‖², and exp(−d²/(2σ²)) by that over 2σ², plus an ulp or two
    u = np.finfo(np.float64).eps / 2
    bound = (Y.shape[1] + 2) * u * 4 * np.sum(Y * Y, axis=1) / (2 * 2.0**2) + 2 * u
    assert np.all(np.abs(np.diag(GaussianKernel(2.0)(Y)) - 1.0) <= bound)


def test_coarse_gaussian_entries_lie_within_their_stated_error():
    """``coarse=True`` (float32 exponentials): every entry within ``coarse_error`` of
    scikit-learn's, on 1-D points whose exponents cover [−104, 0] densely (to below
    float32's smallest normal number) and on wide data through the extended product; the
    bound is not loose by orders of magnitude (it is used to decide when coarse entries
    are allowed)."""
    k = GaussianKernel(1.0)
    X = np.linspace(0.0, np.sqrt(208.0), 400_001)[:, None]       # t = −x²/2 ∈ [−104, 0]
    Y = np.zeros((1, 1))
    got = k.block(X, Y, coarse=True)
    exact = rbf_kernel(X, Y, gamma=0.5)
    error = np.abs(got - exact).max()
    assert error <= GaussianKernel.coarse_error
    assert error > GaussianKernel.coarse_error / 10
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(3000, 10)), rng.normal(size=(300, 10))
    buffer = np.empty((3000, 300))
    assert k.block(A, B, buffer, coarse=True) is buffer
    assert np.abs(buffer - rbf_kernel(A, B, gamma=0.5)).max() <= GaussianKernel.coarse_error
    assert not np.array_equal(buffer, k.block(A, B))               # it did take float32


@pytest.mark.parametrize("m", [3, 40, 300])
def test_coarse_gaussian_entries_into_float32_are_the_coarse_values(m):
    """A float32 block holds the coarse entries themselves (float32 values): those written
    into float64 (to one float32 rounding: the exponents come from products over chunks of
    rows instead of the whole block), within ``coarse_error`` of scikit-learn's, for narrow
    and wide samples (the two forms of the product) and more rows than one cache chunk."""
    rng = np.random.default_rng(m)
    A, B = rng.normal(size=(20_000, 10)), rng.normal(size=(m, 10))
    k = GaussianKernel(2.0)
    single = np.empty((20_000, m), dtype=np.float32)
    assert k.block(A, B, single, coarse=True) is single
    coarse = k.block(A, B, coarse=True)
    np.testing.assert_allclose(single, coarse, rtol=0, atol=2.0**-24)
    assert np.abs(single - rbf_kernel(A, B, gamma=1 / 8)).max() <= GaussianKernel.coarse_error


def test_a_float32_block_is_refused_for_exact_entries():
    k = GaussianKernel(1.0)
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match="float32 block"):
        k.block(X, X, np.empty((4, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="float32 block"):
        make_kernel("laplace").block(X, X, np.empty((4, 4), dtype=np.float32), coarse=True)


@pytest.mark.parametrize("name", [n for n in KERNELS if KERNELS[n].coarse_error is None])
def test_kernels_without_coarse_entries_ignore_the_request(XY, name):
    X, Y = XY
    k = make_kernel(name)
    np.testing.assert_array_equal(k.block(X, Y, coarse=True), k.block(X, Y))


@pytest.mark.parametrize("name", ["gaussian", "laplace", "cauchy", "matern32", "matern52"])
def test_shift_invariant_kernels_are_psd(name):
    X = np.random.default_rng(1).standard_normal((60, 3))
    assert np.linalg.eigvalsh(make_kernel(name, {"sigma": 0.7})(X)).min() > -1e-10


@pytest.mark.parametrize(
    "kernel,g0,dg0,d2g0",
    [
        (LinearKernel(2.0, 1.0), 1.0, 2.0, 0.0),
        (PolynomialKernel(1.0, 1.0, 2), 1.0, 2.0, 2.0),
        (PolynomialKernel(2.0, 0.5, 3), 0.125, 3 * 2 * 0.25, 6 * 4 * 0.5),
        (SigmoidKernel(1.0, -1.0), np.tanh(-1), 1 - np.tanh(-1) ** 2,
         -2 * np.tanh(-1) * (1 - np.tanh(-1) ** 2)),
        (ExponentialKernel(1.5, 0.0), 1.0, 1.5, 2.25),
    ],
)
def test_g_derivatives_at_zero(kernel, g0, dg0, d2g0):
    assert kernel.g0 == pytest.approx(g0, abs=1e-14)
    assert kernel.dg0 == pytest.approx(dg0, abs=1e-14)
    assert kernel.d2g0 == pytest.approx(d2g0, abs=1e-14)
    # and the derivative functions agree with finite differences away from 0
    t, h = 0.3, 1e-5
    assert kernel.dg(t) == pytest.approx((kernel.g(t + h) - kernel.g(t - h)) / (2 * h), rel=1e-7,
                                         abs=1e-9)
    assert kernel.d2g(t) == pytest.approx((kernel.dg(t + h) - kernel.dg(t - h)) / (2 * h),
                                          rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("name", ["gaussian", "laplace", "cauchy", "matern32", "matern52"])
def test_random_features_are_unbiased(name):
    """E[2 cos(ωᵀx + b) cos(ωᵀx' + b)] = k(x, x') with ω from sample_frequencies."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((12, 3)) * 0.6
    k = make_kernel(name, {"sigma": 1.1})
    r = 200_000
    W = k.sample_frequencies(3, r, rng)
    b = rng.uniform(0, 2 * np.pi, r)
    Z = np.sqrt(2.0 / r) * np.cos(X @ W + b)
    err = np.abs(Z @ Z.T - k(X))
    assert err.mean() < 0.01
    assert err.max() < 0.03


def test_memory_budget_refuses_huge_matrix():
    k = GaussianKernel(1.0)
    with pytest.raises(MemoryBudgetError, match=r"kernel matrix .* memory budget.*Nyström"):
        k(np.zeros((2000, 2)), budget=1000)


def test_parse_and_spec_round_trip():
    k = parse_kernel("polynomial:alpha=2,beta=0.5,degree=3")
    assert k == PolynomialKernel(2.0, 0.5, 3)
    assert parse_kernel(k.spec()) == k
    assert parse_kernel("rbf:sigma=2") == GaussianKernel(2.0)


@pytest.mark.parametrize(
    "spec,match",
    [("gausian", "unknown kernel"), ("gaussian:sigma=-1", "positive"),
     ("gaussian:alpha=1", "no parameter 'alpha'"), ("polynomial:degree=2.5", "whole number"),
     ("linear:alpha", "name=value")],
)
def test_bad_kernel_specs(spec, match):
    with pytest.raises(ParameterError, match=match):
        parse_kernel(spec)


def test_median_heuristic():
    X = np.array([[0.0], [1.0], [3.0]])
    assert median_heuristic(X) == 2.0  # distances 1, 3, 2


def test_a_small_allocation_needs_no_look_at_the_free_memory(monkeypatch):
    """Requests within the least budget free memory can give pass without reading it
    (it cost 3 % of a million-row run); larger ones, and any with a budget set in the
    environment, are checked as before."""
    from kernel_lab.core import memory

    def unread() -> int:
        raise AssertionError("the free memory was read")

    monkeypatch.delenv(memory.BUDGET_ENV, raising=False)
    monkeypatch.setattr(memory, "available_memory_bytes", unread)
    memory.check_allocation(memory.FLOOR_BUDGET_BYTES, "a block", "")
    with pytest.raises(AssertionError, match="free memory was read"):
        memory.check_allocation(memory.FLOOR_BUDGET_BYTES + 1, "a block", "")
    monkeypatch.setattr(memory, "available_memory_bytes", lambda: 2**40)
    monkeypatch.setenv(memory.BUDGET_ENV, "1")  # 1 MiB
    with pytest.raises(MemoryBudgetError, match="the 1000×1000 kernel matrix"):
        GaussianKernel(1.0)(np.zeros((1000, 2)))


@pytest.mark.parametrize("shape", [(300, 200, 5), (3, 4000, 700), (1, 1, 2), (0, 7, 3)])
def test_gaussian_blocks_by_either_product_equal_scikit_learn(shape):
    """Narrow inputs take the product of extended rows, wide ones with few rows the
    product and the norms subtracted (the extended copies would outweigh the block):
    both give scikit-learn's rbf_kernel to rounding, in [0, 1]."""
    n, m, p = shape
    rng = np.random.default_rng(9)
    X, Y = rng.normal(size=(n, p)), rng.normal(size=(m, p))
    kernel = GaussianKernel(0.7 * np.sqrt(p))
    K = kernel.block(X, Y)
    ref = rbf_kernel(X, Y, gamma=1.0 / (2 * kernel.sigma**2)) if n else np.zeros((0, m))
    np.testing.assert_allclose(K, ref, rtol=1e-13, atol=1e-15)
    assert (K <= 1.0).all() and (K >= 0.0).all()
