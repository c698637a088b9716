"""Ridge from sums over row blocks (kernel_lab.core.ridge.sums) against the dense
solver on the n × D features."""

import math

import numpy as np
import pytest

from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.models.feature_ridge import feature_ridge, ridge_loo
from kernel_lab.core.models.nystrom import nystrom_factor
from kernel_lab.core.models.regularised import fit_regularised
from kernel_lab.core.models.rff import cos_features
from kernel_lab.core.progress import Cancelled, Progress
from kernel_lab.core.ridge import sums as streaming


def _data(n=700, p=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=n), rng


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Blocks of a few rows, so that a small problem crosses many block boundaries."""
    monkeypatch.setattr(streaming, "BLOCK_BYTES", 8 * 64 * 37)  # 37 rows of 64 features


@pytest.mark.parametrize("nu", [1e-6, 1e-3, 1.0])
def test_random_features_from_sums_equal_the_dense_fit(tiny_blocks, nu):
    X, y, rng = _data()
    W, b = rng.normal(size=(X.shape[1], 64)), rng.uniform(0, 2 * math.pi, 64)
    sums = streaming.accumulate(lambda A: cos_features(A, W, b, 1.0), X, y, 64)
    for D in (5, 30, 64):  # the first D of the draw, z = √(2/D) cos(·)
        dense = fit_regularised(cos_features(X, W[:, :D], b[:D], math.sqrt(2 / D)), y,
                                "squared", nu)
        w, value = streaming.solve_squared(sums.restrict(D, scale=2 / D), nu)
        np.testing.assert_allclose(w, dense.w, rtol=1e-8, atol=1e-10)
        assert value == pytest.approx(dense.objective, rel=1e-8)


def test_nystrom_features_from_sums_equal_the_dense_fit(tiny_blocks):
    X, y, rng = _data(seed=1)
    kernel = make_kernel("gaussian", {"sigma": 1.5})
    L = X[rng.choice(len(X), 40, replace=False)]
    sums = streaming.accumulate(lambda A: kernel(A, L), X, y, 40)
    for s in (8, 25, 40):
        N = nystrom_factor(kernel(L[:s]))
        dense = fit_regularised(kernel(X, L[:s]) @ N, y, "squared", 1e-3)
        w, value = streaming.solve_squared(sums.restrict(s, N), 1e-3)
        np.testing.assert_allclose(w, dense.w, rtol=1e-8, atol=1e-10)
        assert value == pytest.approx(dense.objective, rel=1e-8)


def test_the_sums_are_those_of_the_whole_matrix_whatever_the_block_size(monkeypatch):
    X, y, rng = _data(n=301)
    F = rng.normal(size=(7, 11))
    whole = None
    for budget in (8 * 11, 8 * 11 * 13, 2**25):  # one row, 13 rows, all rows per block
        monkeypatch.setattr(streaming, "BLOCK_BYTES", budget)
        seen = []
        sums = streaming.accumulate(lambda A: np.tanh(A @ F[: A.shape[1]]), X, y, 11,
                                    Progress(lambda f, m, seen=seen: seen.append(f)))
        assert len(seen) == math.ceil(301 / streaming.block_rows(11))
        Phi = np.tanh(X @ F[:4])
        np.testing.assert_allclose(sums.G, Phi.T @ Phi, rtol=1e-12)
        np.testing.assert_allclose(sums.b, Phi.T @ y, rtol=1e-12)
        assert sums.n == 301 and sums.yy == pytest.approx(float(y @ y))
        assert np.array_equal(sums.G, sums.G.T)
        whole = whole or sums
    assert streaming.block_rows(11, 8 * 11 * 13) == 13


def test_accumulation_reports_each_block_and_can_be_cancelled(monkeypatch):
    monkeypatch.setattr(streaming, "BLOCK_BYTES", 8 * 4 * 37)
    X, y, _ = _data(n=400)
    seen = []
    streaming.accumulate(lambda A: A, X, y, 4, Progress(lambda f, m: seen.append(f)), "sums")
    assert len(seen) > 5 and seen[-1] == 1.0 and seen == sorted(seen)
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(Cancelled):
        streaming.accumulate(lambda A: A, X, y, 4, Progress(None, cancelled))


# -- the downstream ridge of Nyström / random features with an intercept, over row blocks ---

def test_centred_sums_over_blocks_are_feature_ridge_and_ridge_loo():
    """The shifted sums of row blocks against the centred dense formulas (feature_ridge at
    a given λ, ridge_loo's grid without refinement for λ=None, its residuals summed per
    block), on features whose columns have a mean far above their spread (the shift keeps
    the centring exact)."""
    rng = np.random.default_rng(2)
    F = 50.0 + rng.normal(size=(1000, 6)) @ np.diag([3, 1, 0.3, 0.1, 0.03, 0.01])
    y = F @ rng.normal(size=6) + rng.normal(size=1000)
    starts = range(0, 1000, 64)
    sums = streaming.CentredSums.of(F[:64], y[:64])
    for a in starts[1:]:
        sums = sums + streaming.CentredSums.of(F[a:a + 64], y[a:a + 64])
    assert sums.squared_norm == pytest.approx(float(np.sum(F * F)), rel=1e-13)
    for lam in (1e-3, 1.0):
        coef, intercept = sums.solve(lam)
        ref_coef, ref_intercept = feature_ridge(F, y, lam)
        np.testing.assert_allclose(coef, ref_coef, rtol=1e-7)
        assert intercept == pytest.approx(ref_intercept, rel=1e-7)
    grid = streaming.LooGrid.of(sums)
    coef, intercept, used = grid.solve(sum(grid.sse(F[a:a + 64], y[a:a + 64]) for a in starts))
    ref_coef, ref_intercept, ref_nu, _ = ridge_loo(F, y, refine=False)
    np.testing.assert_allclose(coef, ref_coef, rtol=1e-7)
    assert intercept == pytest.approx(ref_intercept, rel=1e-7)
    assert used == pytest.approx(ref_nu, rel=1e-9)


def test_centred_sums_in_place_equal_those_of_a_copy():
    """``overwrite`` centres the block in place: the same sums (bit for bit), and the
    caller's block is left alone without it."""
    rng = np.random.default_rng(4)
    F, y = rng.normal(size=(300, 7)) + 3.0, rng.normal(size=300)
    keep = F.copy()
    a = streaming.CentredSums.of(F, y)
    np.testing.assert_array_equal(F, keep)
    b = streaming.CentredSums.of(F, y, overwrite=True)
    for name in ("mean", "y_mean", "gram", "rhs"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    # the means come from a BLAS product with 1/n, the reference's from numpy's pairwise
    # sum: two orders of n terms, each within (n + 1) u Σ|F_ij|/n of the exact mean; the
    # subtraction adds an ulp
    u = np.finfo(np.float64).eps / 2
    centred = keep - keep.mean(axis=0)
    bound = 2 * (F.shape[0] + 1) * u * np.abs(keep).mean(axis=0) + u * np.abs(centred)
    assert np.all(np.abs(F - centred) <= bound)
    ref = (keep - keep.mean(axis=0)).T @ (keep - keep.mean(axis=0))
    np.testing.assert_allclose(b.gram, ref, rtol=1e-12)


def test_absorbing_a_block_in_place_gives_the_sums_of_both():
    """``a.absorb(b)`` writes the sums of both blocks over a's arrays (those of the rows
    stacked, to rounding) and leaves b alone; ``a + b`` gives the same numbers and leaves
    a alone; empty sums on either side change nothing."""
    rng = np.random.default_rng(6)
    F1, F2 = rng.normal(size=(40, 5)) + 2.0, rng.normal(size=(25, 5)) - 1.0
    y1, y2 = rng.normal(size=40), rng.normal(size=25)
    both = streaming.CentredSums.of(np.vstack([F1, F2]), np.concatenate([y1, y2]))
    a, b = streaming.CentredSums.of(F1, y1), streaming.CentredSums.of(F2, y2)
    a_gram, b_gram = a.gram.copy(), b.gram.copy()
    added = a + b
    np.testing.assert_array_equal(a.gram, a_gram)  # + makes new arrays
    got = a.absorb(b, np.empty((5, 5)))
    assert got.n == 65 and got.gram is a.gram
    for name in ("mean", "y_mean", "gram", "rhs"):
        np.testing.assert_allclose(getattr(got, name), getattr(both, name), rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_array_equal(getattr(got, name), getattr(added, name))
    np.testing.assert_array_equal(b.gram, b_gram)
    empty = streaming.CentredSums.of(np.zeros((0, 5)), np.zeros(0))
    assert got.absorb(empty) is got and empty.absorb(b) is b
