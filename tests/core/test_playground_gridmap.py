"""The Playground's grid maps (kernel_lab.core.playground.gridmap) against the direct
formulas, and every 2-D fit's picture against its estimator's predictions on the grid."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kernel_lab.core import playground as pg
from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.models import (
    CenteredKernelRidge,
    KernelRidge,
    NystromRidge,
    RandomFourierFeatures,
    RFFRidge,
)
from kernel_lab.engine.playground.fit import FitEngine, Request
from kernel_lab.engine.playground.params import resolve_fit_params
from kernel_lab.engine.playground.state import Points


@pytest.mark.parametrize("dim", [1, 2])
@pytest.mark.parametrize("kernel", pg.KERNELS)
def test_kernel_map_is_the_kernel_matrix_times_the_coefficients(dim, kernel):
    rng = np.random.default_rng(3)
    Z = rng.uniform(-3, 3, size=(70, dim))
    C = rng.normal(size=(70, 3))
    gm = pg.GridMap(dim, 37)
    K = make_kernel(kernel, {"sigma": 0.7})(gm.points, Z)
    apply = gm.kernel(kernel, 0.7, Z)
    # the same entries by other formulas (per-coordinate factors; the direct kernel from
    # ‖g‖² + ‖z‖² − 2gᵀz or |g − z|₁), then summed in other orders. An entry's argument is
    # off by ≤ (p + 4) u ((‖g‖ + ‖z‖)²/σ² + (‖g‖ + ‖z‖)/σ) in either, which moves the entry
    # by that times K (the kernels' derivatives in their argument are ≤ K); a sum of m terms
    # is off by ≤ m u Σ|terms|
    u = np.finfo(np.float64).eps / 2
    r = (np.linalg.norm(gm.points, axis=1)[:, None] + np.linalg.norm(Z, axis=1)) / 0.7
    entries = K * ((dim + 4) * u * (r * r + r) + 4 * u)
    for c in (C[:, 0], C):
        bound = (entries + 2 * (Z.shape[0] + 2) * u * np.abs(K)) @ np.abs(c)
        assert np.all(np.abs(apply(c) - K @ c) <= bound)


@pytest.mark.parametrize("dim", [1, 2])
def test_cosine_map_is_the_features_times_the_coefficients(dim):
    rng = np.random.default_rng(4)
    W, b, c = rng.normal(size=(dim, 50)) * 3, rng.uniform(0, 2 * np.pi, 50), rng.normal(size=50)
    gm = pg.GridMap(dim, 41)
    direct = 0.2 * np.cos(gm.points @ W + b) @ c
    np.testing.assert_allclose(gm.cosines(W, b, 0.2)(c), direct, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kernel", pg.KERNELS)
def test_every_two_dimensional_picture_is_the_estimators_prediction(kernel):
    X, y, test = pg.generate("surface", 260, 0.2, seed=2)
    points = Points(X, y, test)
    params = resolve_fit_params({"kernel": kernel, "sigma": 0.7, "lam": 0.05, "s": 30,
                                 "D": 80, "sampler": "uniform", "seed": 5, "resolution": 45})
    Xtr, ytr = X[~test], y[~test]
    G = pg.grid(2, 45)
    draw = RandomFourierFeatures(kernel, sigma=0.7, n_components=pg.MAX_POINTS,
                                 random_state=5).fit(Xtr)
    refs = {"krr": KernelRidge(0.05, kernel=kernel, kernel_params={"sigma": 0.7}),
            "ckrr": CenteredKernelRidge(0.05, kernel=kernel, kernel_params={"sigma": 0.7}),
            "nystrom": NystromRidge(0.05, kernel=kernel, kernel_params={"sigma": 0.7},
                                    n_components=30, sampler="uniform", random_state=5),
            # the first D of the one draw every D's features are taken from
            "rff": RFFRidge(0.05, kernel=kernel, sigma=0.7, frequencies=draw.weights_[:, :80],
                            phases=draw.offsets_[:80])}
    for method, ref in refs.items():
        expected = ref.fit(Xtr, ytr).predict(G)
        for quick in (True, False):
            engine = FitEngine(quick=quick)
            fit = engine.compute(Request(1, 1, points, 2, "regression",
                                         dict(params, method=method), 0))
            np.testing.assert_allclose(fit.primary.grid, expected, rtol=0, atol=1e-8,
                                       err_msg=f"{method}, quick={quick}")


@pytest.mark.parametrize("centered", [False, True])
def test_a_bordered_factor_solves_as_the_factor_of_the_extended_data(centered):
    X, y, test = pg.generate("surface", 300, 0.2, seed=6)
    Xtr, ytr, Xte = X[~test], y[~test], X[test]
    first = pg.Factor.at_once(Xtr[:-3], Xte, "laplace", 0.8, 0.03)
    assert first.extends(Xtr, Xte) and not first.extends(Xtr[:-3], Xte)
    assert not first.extends(Xtr[::-1], Xte)
    bordered = first.bordered(Xtr)
    direct = pg.Factor.at_once(Xtr, Xte, "laplace", 0.8, 0.03)
    R = np.random.default_rng(2).normal(size=(len(Xtr), 5))
    for rhs in (R[:, 0], R[:, :2], R):  # one at a time (few columns) and as a block
        np.testing.assert_allclose(bordered.solve_block(rhs), direct.solve_block(rhs),
                                   rtol=0, atol=1e-10)
    np.testing.assert_allclose(bordered.test_block(), direct.K_test, atol=1e-15)
    _solves_as_the_estimator(bordered, Xtr, ytr, "laplace", centered)


def _solves_as_the_estimator(system: pg.Solved, X: np.ndarray, y: np.ndarray, kernel: str,
                             centered: bool) -> None:
    """``system`` (σ = 0.8, λ = 0.03) gives the estimator's α and intercept on (X, y)."""
    ref = (CenteredKernelRidge if centered else KernelRidge)(
        0.03, kernel=kernel, kernel_params={"sigma": 0.8}).fit(X, y)
    alpha, b = system.solve(y, centered)
    np.testing.assert_allclose(alpha, ref.dual_coef_, rtol=0, atol=1e-9)
    assert b == pytest.approx(ref.intercept_, abs=1e-9)


def _paint_one_point(engine: FitEngine, X: np.ndarray, y: np.ndarray, test: np.ndarray,
                     params: dict, serial: int, monkeypatch: pytest.MonkeyPatch
                     ) -> tuple[Any, list, np.ndarray, np.ndarray, np.ndarray]:
    """A painted training point (0.5, 0.5) of class 1 as data version 2: the fit, the
    factorisations made for it and the new data."""
    X2, y2 = np.vstack([X, [[0.5, 0.5]]]), np.append(y, 1.0)
    test2 = np.append(test, False)
    made: list = []
    original = pg.Factor.at_once.__func__
    monkeypatch.setattr(pg.Factor, "at_once", classmethod(
        lambda cls, *a: made.append(a) or original(cls, *a)))
    fit = engine.compute(Request(serial, 2, Points(X2, y2, test2), 2, "classification",
                                 params, 0))
    return fit, made, X2, y2, test2


def test_a_painted_point_borders_the_last_factor_and_draws_the_estimator(monkeypatch):
    X, y, test = pg.generate("moons", 400, 0.2, seed=1)
    params = resolve_fit_params({"method": "ckrr", "sigma": 0.6, "lam": 0.01})
    engine = FitEngine(quick=True)
    engine.compute(Request(1, 1, Points(X, y, test), 2, "classification", params, 0))
    fit, made, X2, y2, test2 = _paint_one_point(engine, X, y, test, params, 2, monkeypatch)
    assert made == []  # bordered, not factorised again
    ref = CenteredKernelRidge(0.01, kernel="gaussian", kernel_params={"sigma": 0.6}).fit(
        X2[~test2], y2[~test2])
    np.testing.assert_allclose(fit.primary.grid, ref.predict(pg.grid(2, 100)), atol=1e-8)
    np.testing.assert_allclose(fit.primary.test, ref.predict(X2[test2]), atol=1e-8)
    np.testing.assert_allclose(fit.primary.train, ref.predict(X2[~test2]), atol=1e-8)


@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("base", ["factor", "eigen"])
def test_a_system_bordered_twice_solves_the_extended_data(base, centered):
    """Block elimination on a Cholesky factor or an eigendecomposition, bordered once and
    then again (a painted stroke), is the estimator on the extended data."""
    X, y, test = pg.generate("surface", 300, 0.2, seed=6)
    Xtr, ytr, Xte = X[~test], y[~test], X[test]
    n = len(Xtr) - 5
    if base == "factor":
        first: pg.Solved = pg.Factor.at_once(Xtr[:n], Xte, "cauchy", 0.8, 0.03)
    else:
        first = pg.ExactCache(Xtr[:n], ytr[:n], Xte, pg.GridMap(2, 20), "cauchy", 0.8,
                              False).system(0.03)
    once = pg.Bordered(first, Xtr[: n + 2])
    assert once.extends(Xtr, Xte) and not once.extends(Xtr[: n + 2], Xte)
    twice = once.bordered(Xtr)
    np.testing.assert_allclose(twice.test_block(),
                               make_kernel("cauchy", {"sigma": 0.8})(Xte, Xtr), atol=1e-15)
    _solves_as_the_estimator(twice, Xtr, ytr, "cauchy", centered)


def test_a_painted_point_after_a_lambda_move_borders_the_eigendecomposition(monkeypatch):
    """No factor at the new λ: the point borders exact KRR's eigendecomposition (any λ),
    no O(n³) factorisation, and the picture is the estimator's."""
    X, y, test = pg.generate("moons", 400, 0.2, seed=1)
    params = resolve_fit_params({"method": "krr", "sigma": 0.6, "lam": 0.01})
    engine = FitEngine(quick=True)
    engine.compute(Request(1, 1, Points(X, y, test), 2, "classification", params, 0))
    engine.compute(Request(1, 1, Points(X, y, test), 2, "classification", params, 0),
                   followup=True)  # the eigendecomposition, made once the hand rests
    params = dict(params, lam=0.003)  # a λ move: answered from it, no factor
    engine.compute(Request(2, 1, Points(X, y, test), 2, "classification", params, 0))
    fit, made, X2, y2, test2 = _paint_one_point(engine, X, y, test, params, 3, monkeypatch)
    assert made == [] and fit.primary.extra.get("followup")
    ref = KernelRidge(0.003, kernel="gaussian", kernel_params={"sigma": 0.6}).fit(
        X2[~test2], y2[~test2])
    np.testing.assert_allclose(fit.primary.grid, ref.predict(pg.grid(2, 100)), atol=1e-8)
    np.testing.assert_allclose(fit.primary.test, ref.predict(X2[test2]), atol=1e-8)
    np.testing.assert_allclose(fit.primary.train, ref.predict(X2[~test2]), atol=1e-8)


@pytest.mark.parametrize("kernel", ["gaussian", "laplace", "cauchy"])
def test_a_pair_kernel_is_the_kernel_at_every_sigma(kernel):
    """The σ-free part kept per data set gives the library kernel's matrix at any σ."""
    from kernel_lab.core.kernels import make_kernel

    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(70, 2)), rng.normal(size=(40, 2))
    pair = pg.PairKernel(kernel, Y, X)
    for sigma in (0.2, 0.9, 4.0):
        np.testing.assert_allclose(pair(sigma), make_kernel(kernel, {"sigma": sigma})(Y, X),
                                   rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kernel", ["gaussian", "laplace", "cauchy"])
def test_a_pair_kernels_lower_triangle_is_the_kernels_with_zeros_above(kernel):
    """The quick factorisation's half of K(X, X): the library kernel's entries on and
    below the diagonal (rows split in blocks, the last one short), zeros above."""
    from kernel_lab.core.kernels import make_kernel

    for n in (1, 7, 103):  # one row, fewer rows than blocks, a short last block
        X = np.random.default_rng(5).normal(size=(n, 2))
        pair = pg.PairKernel(kernel, X, X)
        for sigma in (0.3, 2.0):
            K = make_kernel(kernel, {"sigma": sigma})(X)
            low = pair(sigma, lower=True)
            np.testing.assert_allclose(np.tril(low), np.tril(K), rtol=1e-12, atol=1e-15)
            assert not np.triu(low, 1).any()
    with pytest.raises(ValueError, match="square"):
        pg.PairKernel(kernel, X[:5], X)(1.0, lower=True)


def test_a_sigma_move_evaluates_the_kernel_from_the_kept_distances(monkeypatch):
    """The second σ on the same data makes no distances: one pass over the kept ones."""
    from kernel_lab.core import kernels

    X, y, test = pg.generate("moons", 300, 0.2, seed=4)
    engine = FitEngine(quick=True)
    params = resolve_fit_params({"method": "krr", "sigma": 0.6, "lam": 0.02})
    engine.compute(Request(1, 1, Points(X, y, test), 2, "classification", params, 0))
    calls = []
    real = kernels.squared_distances
    monkeypatch.setattr(kernels, "squared_distances", lambda *a: calls.append(1) or real(*a))
    params = resolve_fit_params({"method": "krr", "sigma": 0.9, "lam": 0.02})
    fit = engine.compute(Request(2, 1, Points(X, y, test), 2, "classification", params, 0))
    assert calls == []
    ref = KernelRidge(0.02, kernel="gaussian", kernel_params={"sigma": 0.9}).fit(
        X[~test], y[~test])
    np.testing.assert_allclose(fit.primary.grid, ref.predict(pg.grid(2, 100)), atol=1e-8)
    np.testing.assert_allclose(fit.primary.test, ref.predict(X[test]), atol=1e-8)


def test_a_painted_point_after_a_ckrr_lambda_move_borders_the_prepared_factor(monkeypatch):
    """CKRR's eigendecomposition (of the centred matrix) cannot border a painted point:
    while the hand rests after a λ move the engine prepares the factor at the new λ, and
    the point then makes no factorisation; the picture is the estimator's."""
    X, y, test = pg.generate("moons", 400, 0.2, seed=1)
    params = resolve_fit_params({"method": "ckrr", "sigma": 0.6, "lam": 0.01})
    engine = FitEngine(quick=True)
    req = Request(1, 1, Points(X, y, test), 2, "classification", params, 0)
    engine.compute(req)
    engine.compute(req, followup=True)
    params = dict(params, lam=0.003)  # a λ move: answered from the eigendecomposition
    moved = Request(2, 1, Points(X, y, test), 2, "classification", params, 0)
    engine.compute(moved)
    assert engine.wants_preparing(moved)
    engine.prepare(moved)
    assert not engine.wants_preparing(moved)
    fit, made, X2, y2, test2 = _paint_one_point(engine, X, y, test, params, 3, monkeypatch)
    assert made == []
    ref = CenteredKernelRidge(0.003, kernel="gaussian", kernel_params={"sigma": 0.6}).fit(
        X2[~test2], y2[~test2])
    np.testing.assert_allclose(fit.primary.grid, ref.predict(pg.grid(2, 100)), atol=1e-8)
    np.testing.assert_allclose(fit.primary.test, ref.predict(X2[test2]), atol=1e-8)


def test_only_a_worker_thread_prepares_while_the_hand_rests():
    """The worker thread prepares once the user has paused; an inline worker (scripts,
    the headless run) does not spend the caller's time on it."""
    from kernel_lab.model.playground.worker import fit_worker

    X, y, test = pg.generate("moons", 200, 0.2, seed=2)
    params = resolve_fit_params({"method": "ckrr", "sigma": 0.6, "lam": 0.01,
                                 "resolution": 40})
    for inline in (True, False):
        engine = FitEngine(quick=True)
        worker = fit_worker(engine, inline=inline)
        base = Request(1, 1, Points(X, y, test), 2, "classification", params, 0)
        worker.submit(base)
        assert worker.wait_idle(10)
        moved = Request(2, 1, Points(X, y, test), 2, "classification",
                        dict(params, lam=0.003), 0)
        worker.submit(moved)
        assert worker.wait_idle(10)
        assert engine.wants_preparing(moved) == inline
        worker.close()
