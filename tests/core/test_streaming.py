"""Ridge from sums over row blocks (kernel_lab.core.models.streaming) against the dense
solver on the n × D features."""

import math

import numpy as np
import pytest

from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.models import streaming
from kernel_lab.core.models.nystrom import nystrom_factor
from kernel_lab.core.models.regularised import fit_regularised
from kernel_lab.core.models.rff import cos_features
from kernel_lab.core.progress import Cancelled, Progress


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
        pred = streaming.predict_blocks(lambda A, s=s, N=N: kernel(A, L[:s]) @ N, X, w)
        np.testing.assert_allclose(pred, kernel(X, L[:s]) @ N @ w, rtol=1e-12, atol=1e-12)


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
