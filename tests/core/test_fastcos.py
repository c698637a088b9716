"""The vectorised cosine of random Fourier features against the C library's (``np.cos``),
against exact identities, and its coefficients derived again in exact arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from kernel_lab.core.fastcos import (
    COEFFICIENTS,
    COS_BLOCK,
    FAST_LIMIT,
    PI_HI,
    PI_LO,
    cos_scaled,
)
from kernel_lab.core.models.rff import RandomFourierFeatures, cos_features

#: |cos_scaled − np.cos| on values of magnitude up to 1 (a few float64 roundings)
TOL = 5e-16


def fast(x: np.ndarray, scale: float = 1.0) -> np.ndarray:
    return cos_scaled(np.array(x, dtype=np.float64), scale)


@pytest.mark.parametrize("half_width", [0.5, 4.0, 30.0, 1e3, 1e6, 3.2e6])
def test_matches_np_cos_on_uniform_arguments(half_width):
    x = np.random.default_rng(0).uniform(-half_width, half_width, 1_000_000)
    assert np.abs(fast(x) - np.cos(x)).max() <= TOL


def test_matches_np_cos_at_the_reduction_boundaries():
    # arguments next to kπ/2 (zeros and extremes of cos, where k switches), both sides
    k = np.arange(-200_000, 200_000, dtype=np.float64)
    for x in (k * (np.pi / 2), np.nextafter(k * (np.pi / 2), np.inf),
              np.nextafter(k * (np.pi / 2), -np.inf), (k + 0.5) * np.pi * (1 + 1e-16)):
        assert np.abs(fast(x) - np.cos(x)).max() <= TOL


def test_exact_identities_independent_of_the_c_library():
    # cos of float64 arguments reduced by π to 60 digits and summed as a Taylor series,
    # all in exact rational arithmetic: a reference that shares nothing with libm
    pi = Fraction("3.14159265358979323846264338327950288419716939937510582097494459")

    def cos_exact(x: Fraction) -> float:
        k = round(x / pi)
        r = x - k * pi
        s, term = Fraction(0), Fraction(1)
        for j in range(30):
            s += term
            term = -term * r * r / ((2 * j + 1) * (2 * j + 2))
        return float((-1) ** k * s)

    xs = [0.0, 1e-300, 0.5, 1.0, math.pi / 2, 2.0, 3.0, 10.0, -7.25, 123.456, 1e4 + 0.1,
          -98765.4321, 2.5e6, FAST_LIMIT * 0.999]
    got = fast(np.array(xs))
    want = np.array([cos_exact(Fraction(x)) for x in xs])
    assert np.abs(got - want).max() <= TOL


def test_scale_is_folded_in():
    x = np.random.default_rng(1).uniform(-50, 50, 100_000)
    scale = math.sqrt(2 / 2000)
    assert np.abs(fast(x, scale) - scale * np.cos(x)).max() <= TOL * scale


def test_large_infinite_and_nan_values_fall_back_to_np_cos():
    rng = np.random.default_rng(2)
    x = rng.uniform(-10, 10, 3 * COS_BLOCK + 17)
    x[5] = 1e9                          # first block: beyond the fast range
    x[COS_BLOCK + 3] = np.inf           # second block
    x[2 * COS_BLOCK + 4] = np.nan       # third block
    with np.errstate(invalid="ignore"):
        got, want = fast(x), np.cos(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.abs(got[ok] - want[ok]).max() <= TOL
    assert got[5] == np.cos(1e9)


def test_in_place_on_blocks_of_any_shape_and_rejects_other_arrays():
    z = np.random.default_rng(3).normal(size=(7, 3, 5))
    ref = np.cos(z)
    out = cos_scaled(z)
    assert out is z
    assert np.abs(z - ref).max() <= TOL
    cos_scaled(np.empty(0))  # nothing to do
    with pytest.raises(ValueError, match="C-contiguous float64"):
        cos_scaled(np.ones((4, 4))[:, ::2])
    with pytest.raises(ValueError, match="C-contiguous float64"):
        cos_scaled(np.ones(4, dtype=np.float32))


def test_reduction_constants():
    pi = Fraction("3.14159265358979323846264338327950288419716939937510582097494459")
    # PI_HI has at most 31 significant bits, so k·PI_HI is exact for |k| < 2²²
    mantissa, _ = math.frexp(PI_HI)
    assert (Fraction(mantissa) * 2**31).denominator == 1
    assert abs(pi - Fraction(PI_HI) - Fraction(PI_LO)) < Fraction(1, 10**26)
    assert FAST_LIMIT / math.pi <= 2**20


def test_coefficients_are_the_chebyshev_interpolant_of_cos():
    # the module docstring's recipe in exact rational arithmetic: interpolate cos √t at the
    # 9 Chebyshev nodes of [0, (π/2)² (1 + 10⁻⁶)], cos from its Taylor series
    n = len(COEFFICIENTS)
    top = Fraction(math.pi / 2) ** 2 * Fraction(1000001, 1000000)
    nodes = [(Fraction(math.cos((2 * k + 1) * math.pi / (2 * n))).limit_denominator(10**12)
              + 1) / 2 * top for k in range(n)]

    def cos_sqrt(t: Fraction) -> Fraction:
        s, term = Fraction(0), Fraction(1)
        for j in range(19):
            s += term
            term = -term * t / ((2 * j + 1) * (2 * j + 2))
        return s

    rows = [[t**j for j in range(n)] + [cos_sqrt(t)] for t in nodes]
    for i in range(n):  # Gauss–Jordan elimination, exact
        pivot = max(range(i, n), key=lambda r: abs(rows[r][i]))
        rows[i], rows[pivot] = rows[pivot], rows[i]
        for r in range(n):
            if r != i and rows[r][i]:
                f = rows[r][i] / rows[i][i]
                rows[r] = [a - f * b for a, b in zip(rows[r], rows[i], strict=True)]
    assert [float(rows[i][n] / rows[i][i]) for i in range(n)] == list(COEFFICIENTS)


def reordered_bound(X: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How far ``cos(X W + b)`` can move between two evaluations that form the arguments
    with other BLAS calls (row blocks against one product, another kernel set): each
    argument is p products and a phase summed in float64, off by at most
    (p + 1) u (|X||W| + |b|) in any order; cos is 1-Lipschitz; each cosine adds its own
    error (TOL for cos_scaled, an ulp for np.cos)."""
    u = np.finfo(np.float64).eps / 2
    return 2 * (X.shape[1] + 1) * u * (np.abs(X) @ np.abs(W) + np.abs(b)) + TOL + 2 * u


def test_rff_transform_equals_np_cos_features():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1003, 7))
    model = RandomFourierFeatures("gaussian", sigma=0.3, n_components=301,
                                  random_state=0).fit(X)
    Z = model.transform(X)
    W, b = model.weights_, model.offsets_
    scale = math.sqrt(2 / 301)
    ref = scale * np.cos(X @ W + b)
    assert Z.dtype == np.float64
    assert np.all(np.abs(Z - ref) <= scale * reordered_bound(X, W, b))
    # a column slice of W (non-contiguous), one column, and more columns than a block (one
    # row per block: a matrix-vector product per row against one matrix product)
    wide = rng.normal(size=(7, COS_BLOCK + 5))
    phase = rng.uniform(0, 2 * np.pi, COS_BLOCK + 5)
    for A, V, c, k in ((X, W[:, 10:50], b[10:50], 1.0), (X, W[:, :1], b[:1], 2.0),
                       (X[:3], wide, phase, 1.0)):
        got = cos_features(A, V, c, k)
        assert np.all(np.abs(got - k * np.cos(A @ V + c)) <= k * reordered_bound(A, V, c))
