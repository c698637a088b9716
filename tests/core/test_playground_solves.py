"""Exact KRR / CKRR by preconditioned CG (the Playground at large n): every answer is a
backward-stable solution (normwise backward error ≤ TOL), compared with dense direct solves,
the library's estimators and the eigendecomposition's curve."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core import playground as pg
from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.models import CenteredKernelRidge, KernelRidge
from kernel_lab.core.playground.solves import (
    TOL,
    ExactSolves,
    LambdaBasis,
    NotSolved,
    NystromPreconditioner,
    backward_error,
    low_rank_factor,
    rhs,
    shifted_cg,
)


def _moons(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, np.pi, n)
    upper = rng.random(n) < 0.5
    X = np.column_stack([np.where(upper, np.cos(t), 1 - np.cos(t)),
                         np.where(upper, np.sin(t), 0.5 - np.sin(t))])
    X += 0.2 * rng.standard_normal(X.shape)
    return X, np.where(upper, 1.0, -1.0)


def _kernel(X: np.ndarray, sigma: float) -> np.ndarray:
    return make_kernel("gaussian", {"sigma": sigma})(X)


def test_low_rank_factor_stays_below_the_kernel_and_meets_its_trace():
    X, _ = _moons()
    K = _kernel(X, 0.5)
    L = low_rank_factor(K, 1e-6, 400)
    rest = K - L @ L.T
    assert np.trace(rest) <= 1e-6 + 1e-9 * np.trace(K)
    assert np.linalg.eigvalsh(rest).min() >= -1e-10 * np.trace(K)  # K̃ ⪯ K
    assert L.shape[1] < len(X)  # low rank: the spectrum falls off
    capped = low_rank_factor(K, 1e-12, 40)
    assert capped.shape[1] <= 40


@pytest.mark.parametrize("sigma", [0.3, 1.0])
def test_shifted_cg_solves_every_lambda_to_the_backward_error_of_a_direct_solver(sigma):
    X, y = _moons()
    K = _kernel(X, sigma)
    lams = np.logspace(-6, 3, 10)
    prec = NystromPreconditioner(low_rank_factor(K, 1e-7, 300))
    B = np.column_stack([y, np.ones_like(y)])
    cols = np.tile(B, len(lams))
    lam_cols = np.repeat(lams, 2)
    sol, info = shifted_cg(K, cols, lam_cols, prec)
    assert info.converged and np.all(info.backward_error <= TOL)
    # the same backward error recomputed independently, with the exact 2-norm of K + λI
    top = np.linalg.eigvalsh(K)[-1]
    for j, lam in enumerate(lam_cols):
        r = cols[:, j] - (K @ sol[:, j] + lam * sol[:, j])
        eta = np.linalg.norm(r) / ((top + lam) * np.linalg.norm(sol[:, j])
                                   + np.linalg.norm(cols[:, j]))
        assert eta <= TOL
        # and the forward error of a backward-stable solve: ≲ κ · η against a dense solve
        A = K + lam * np.eye(len(X))
        direct = np.linalg.solve(A, cols[:, j])
        kappa = (top + lam) / (max(np.linalg.eigvalsh(K)[0], 0.0) + lam)
        assert np.linalg.norm(sol[:, j] - direct) <= 4 * kappa * TOL * np.linalg.norm(direct)


def test_a_warm_started_solve_equals_a_cold_one_to_the_tolerance():
    X, y = _moons()
    K1, K2 = _kernel(X, 0.50), _kernel(X, 0.52)  # a σ step
    lam = 0.01
    prec1 = NystromPreconditioner(low_rank_factor(K1, 0.1 * lam, 300))
    prec2 = NystromPreconditioner(low_rank_factor(K2, 0.1 * lam, 300))
    previous, _ = shifted_cg(K1, y[:, None], lam, prec1)
    cold, cold_info = shifted_cg(K2, y[:, None], lam, prec2)
    warm, warm_info = shifted_cg(K2, y[:, None], lam, prec2, previous)
    assert cold_info.converged and warm_info.converged
    assert warm_info.iterations[0] <= cold_info.iterations[0]
    # both are solutions with backward error ≤ TOL, so they differ by at most
    # 2 κ TOL ‖x‖ (κ the condition number of K + λI)
    e = np.linalg.eigvalsh(K2)
    kappa = (e[-1] + lam) / (max(e[0], 0.0) + lam)
    assert np.linalg.norm(warm - cold) <= 2 * kappa * TOL * np.linalg.norm(cold) * 2
    # and the fits they make agree far closer than the display needs
    np.testing.assert_allclose(K2 @ warm, K2 @ cold, atol=1e-10)


def test_lambda_basis_answers_any_lambda_exactly_or_says_it_did_not():
    X, y = _moons()
    K = _kernel(X, 0.5)
    lams = np.logspace(-6, 4, 41)
    prec = NystromPreconditioner(low_rank_factor(K, 1e-7, 300))
    sol, info = shifted_cg(K, np.repeat(y[:, None], len(lams), axis=1), lams, prec)
    assert info.converged
    basis = LambdaBasis(K, np.column_stack([sol, y]), y[:, None])
    for lam in (3.3e-6, 2e-3, 0.77, 123.0):
        x, eta = basis.solve(lam, prec.top)
        direct = np.linalg.solve(K + lam * np.eye(len(X)), y)
        _, true_eta = backward_error(K, None, x, y[:, None], np.array([lam]), prec.top)
        np.testing.assert_allclose(eta, true_eta, rtol=1e-3, atol=1e-16)  # it says how good
        if eta[0] <= TOL:
            np.testing.assert_allclose(K @ x[:, 0], K @ direct, atol=1e-9)


def _solves(X, y, X_test, sigma, centered, max_rank=300) -> ExactSolves:
    k = make_kernel("gaussian", {"sigma": sigma})
    G = pg.GridMap(2, 30)
    return ExactSolves(k(X), k(X_test, X), G.kernel("gaussian", sigma, X), X, y, X_test,
                       "gaussian", sigma, centered, max_rank=max_rank)


@pytest.mark.parametrize(("centered", "cls"), [(False, KernelRidge),
                                               (True, CenteredKernelRidge)])
def test_exact_solves_predict_as_the_estimator_at_every_lambda(centered, cls):
    X, y = _moons(700)
    X_train, y_train, X_test, y_test = X[:500], y[:500], X[500:], y[500:]
    s = _solves(X_train, y_train, X_test, 0.6, centered)
    G = pg.GridMap(2, 30)
    # (λ where two backward-stable solvers agree to 1e-10: at λ = 3e-3 the library's CKRR
    # and two dense solves of its two forms already differ by 1e-9 on the grid)
    for lam in (0.1, 0.02, 0.0123, 50.0):  # the first ones by CG, then from the basis
        if lam == 0.0123:
            s.complete(pg.lam_grid(lam))
        grid, train, test = s.predict(lam)
        est = cls(lam, kernel="gaussian", kernel_params={"sigma": 0.6}).fit(X_train, y_train)
        np.testing.assert_allclose(train, est.predict(X_train), atol=1e-10)
        np.testing.assert_allclose(test, est.predict(X_test), atol=1e-10)
        np.testing.assert_allclose(grid, est.predict(G.points), atol=1e-10)
    # the curve equals the eigendecomposition's (every λ from 1e-6 to 1e4) as two
    # backward-stable solvers agree: to about κ(K + λI) ε, 1e-8 at λ = 1e-6 (κ ≈ 1e8)
    exact = pg.ExactCache(X_train, y_train, X_test, G, "gaussian", 0.6, centered)
    lams = pg.lam_grid(0.1)
    mine, ref = s.curve(lams, y_test, "regression"), exact.curve(lams, y_test, "regression")
    kappa = (exact.e.max() + lams) / (np.clip(exact.e.min(), 0, None) + lams)
    for part in ("train", "test"):
        assert np.all(np.abs(mine[part] - ref[part])
                      <= 1e-12 + 10 * kappa * np.finfo(float).eps * np.abs(ref[part]))
        np.testing.assert_allclose(mine[part][lams >= 1e-3], ref[part][lams >= 1e-3],
                                   rtol=1e-10)


def test_a_painted_point_borders_the_cg_system_as_the_estimator_fits():
    X, y = _moons(700)
    X_train, y_train, X_test = X[:500], y[:500], X[500:]
    s = _solves(X_train, y_train, X_test, 0.6, False)
    s.solve(0.1)
    problem = pg.Problem(np.vstack([X_train, [[0.1, 2.5], [0.2, 2.4]]]),
                         np.concatenate([y_train, [1.0, -1.0]]), X_test, y[500:],
                         pg.GridMap(2, 30), "classification")
    base = s.system(0.1)
    assert base.extends(problem.X, X_test)
    once = base.bordered(problem.X[:501]).bordered(problem.X)  # a stroke: one at a time
    for centered, cls in ((False, KernelRidge), (True, CenteredKernelRidge)):
        grid, train, test = once.predict(problem, centered)
        est = cls(0.1, kernel="gaussian", kernel_params={"sigma": 0.6}).fit(problem.X,
                                                                           problem.y)
        np.testing.assert_allclose(train, est.predict(problem.X), atol=1e-10)
        np.testing.assert_allclose(test, est.predict(X_test), atol=1e-10)
        np.testing.assert_allclose(grid, est.predict(problem.grid.points), atol=1e-10)


def test_cg_that_cannot_reach_the_tolerance_says_so():
    X, y = _moons()
    K = _kernel(X, 0.05)  # a flat spectrum: a rank-5 preconditioner cannot help at λ = 1e-8
    prec = NystromPreconditioner(low_rank_factor(K, 1e-12, 5))
    _, info = shifted_cg(K, rhs(y, False), 1e-8, prec, max_iter=5)
    assert not info.converged and info.iterations[0] == 5
    s = ExactSolves(K, np.zeros((0, len(X))), lambda c: c[:0], X, y, X[:0], "gaussian",
                    0.05, False, max_rank=5)
    with pytest.raises(NotSolved, match="backward error"):
        s.solve(1e-12)
