"""The Playground's kept feature columns (kernel_lab.core.playground.features): after s and
D moves — columns added, Gram products extended, the ridge system formed from them — the
fit is the library's estimator rebuilt from scratch on the same landmarks / frequencies."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core import playground as pg
from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.models import (
    NystromFeatures,
    NystromRidge,
    RandomFourierFeatures,
    RFFRidge,
)
from kernel_lab.core.nystrom.samplers import make_sampler
from kernel_lab.core.playground.features import (
    FREQUENCIES,
    ColumnGram,
    nested_limit,
)
from kernel_lab.engine.playground.fit import FitEngine, Request
from kernel_lab.engine.playground.params import resolve_fit_params
from kernel_lab.engine.playground.state import Points

TOL = 1e-10


def _data(dim: int = 2, n: int = 420, seed: int = 3) -> Points:
    X, y, test = pg.generate("moons" if dim == 2 else "sine", n, 0.25, seed=seed)
    return Points(X, y, test)


def _fits(engine: FitEngine, points: Points, dim: int, moves: list[dict]) -> list:
    """The engine's fits after each move (one request per move, data version 1)."""
    out = []
    for k, move in enumerate(moves):
        params = resolve_fit_params(move)
        out.append(engine.compute(Request(k + 1, 1, points, dim, "regression", params, 0)))
    return out


def _assert_is(fit, ref, points: Points, dim: int, res: int, what: str) -> None:
    """``fit`` draws and reports what the fitted estimator ``ref`` predicts."""
    train = ~points.test
    np.testing.assert_allclose(fit.primary.grid, ref.predict(pg.grid(dim, res)), rtol=0,
                               atol=TOL, err_msg=what)
    np.testing.assert_allclose(fit.primary.train, ref.predict(points.X[train]), rtol=0,
                               atol=TOL, err_msg=what)
    np.testing.assert_allclose(fit.primary.test, ref.predict(points.X[~train]), rtol=0,
                               atol=TOL, err_msg=what)


def test_kept_columns_give_the_gram_products_of_the_columns_chosen():
    """Columns added in three steps: the Gram products of any subset are those of the
    centred columns formed directly."""
    rng = np.random.default_rng(0)
    C, Ct, y = rng.normal(size=(90, 40)) + 2.0, rng.normal(size=(30, 40)), rng.normal(size=90)
    kept = ColumnGram(y, 30, 40)
    for a, b in ((0, 1), (1, 17), (17, 40)):  # room grows by doubling as columns come
        kept.extend(C[:, a:b], Ct[:, a:b])
    pick = np.array([3, 39, 0, 21, 17])
    N = rng.normal(size=(5, 4))
    seen = []
    ridge = kept.ridge(pick, N, lambda beta: seen.append(beta) or np.zeros(2))
    Fc = (C[:, pick] - C[:, pick].mean(axis=0)) @ N
    np.testing.assert_allclose(ridge.V @ np.diag(ridge.e) @ ridge.V.T, Fc.T @ Fc,
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(ridge.V @ ridge.r, Fc.T @ (y - y.mean()), rtol=0, atol=1e-10)
    # the centred values: F w − μᵀw on the test points, and ȳ added by predict
    w = rng.normal(size=4)
    _, train, test = ridge.values(w)
    np.testing.assert_allclose(train, Fc @ w, rtol=0, atol=1e-12)
    np.testing.assert_allclose(test, (Ct[:, pick] - C[:, pick].mean(axis=0)) @ (N @ w),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("sampler", ["uniform", "rp-cholesky"])
def test_a_nested_samplers_prefix_is_its_own_draw(sampler):
    """Within :func:`nested_limit`, the first s of a larger draw's order are the sampler's
    draw of s (so the Playground's landmarks at any s are those the sampler gives)."""
    X = _data().X
    kernel = make_kernel("gaussian", {"sigma": 0.5})
    n = len(X)
    assert nested_limit(sampler, n) >= 100 and nested_limit("recursive-rls", n) == 0
    big = make_sampler(sampler).sample(X, kernel, 100, 11).order
    for s in (1, 2, 37, 99):
        own = make_sampler(sampler).sample(X, kernel, s, 11).indices
        np.testing.assert_array_equal(np.sort(big[:s]), np.sort(own))


def _nystrom_moves(points: Points, dim: int, base: dict, sizes: tuple[int, ...]) -> list:
    """(move, fit, the sampler's own sorted draw, the training X and y) after s moves."""
    moves = [dict(base, s=s) for s in sizes] + [dict(base, s=sizes[-2], lam=0.002)]
    train = ~points.test
    X, y = points.X[train], points.y[train]
    out = []
    for move, fit in zip(moves, _fits(FitEngine(quick=True), points, dim, moves),
                         strict=True):
        own = np.sort(NystromFeatures(base["kernel"], kernel_params={"sigma": base["sigma"]},
                                      n_components=move["s"], sampler=base["sampler"],
                                      random_state=base["seed"]).fit(X).landmark_indices_)
        np.testing.assert_array_equal(fit.primary.landmarks, own)
        out.append((move, fit, own, X, y))
    return out


def _nystrom_ridge(move: dict, X: np.ndarray, y: np.ndarray, Z: np.ndarray) -> NystromRidge:
    return NystromRidge(move["lam"], kernel=move["kernel"],
                        kernel_params={"sigma": move["sigma"]}, landmarks=Z,
                        solver="direct").fit(X, y)


@pytest.mark.parametrize("dim,kernel,sigma,sampler", [
    (2, "gaussian", 0.2, "uniform"), (2, "laplace", 0.8, "rp-cholesky"),
    (2, "cauchy", 0.3, "recursive-rls"), (1, "laplace", 0.8, "uniform")])
def test_after_s_moves_the_fit_is_the_library_nystrom_ridge_rebuilt(dim, kernel, sigma,
                                                                     sampler):
    """s up, down, up past the kept draw, then λ: each fit is NystromRidge rebuilt from
    scratch on the landmarks NystromFeatures draws for s, to 1e-10 (W = K(Z, Z) within
    κ ≤ 10⁶ here)."""
    points = _data(dim)
    base = {"method": "nystrom", "kernel": kernel, "sigma": sigma, "lam": 0.03,
            "sampler": sampler, "seed": 4, "resolution": 31}
    for move, fit, own, X, y in _nystrom_moves(points, dim, base, (40, 41, 25, 90, 70)):
        W = make_kernel(kernel, {"sigma": sigma})(X[own])
        assert np.linalg.cond(W) < 1e6
        _assert_is(fit, _nystrom_ridge(move, X, y, X[own]), points, dim, 31,
                   f"s = {move['s']}")


@pytest.mark.parametrize("dim,kernel,sigma", [(2, "gaussian", 0.8), (1, "cauchy", 0.3)])
def test_with_an_ill_conditioned_w_the_fit_is_as_near_the_library_as_it_is_to_itself(
        dim, kernel, sigma):
    """W = K(Z, Z) with κ from 10⁹ to 10¹³ (the eigenbasis, with its cut-off): rounding
    moves the library's own fit when the same landmarks come in another order; after s
    moves the Playground's fit is within 1e-10 of the library's, or within that spread."""
    points = _data(dim)
    base = {"method": "nystrom", "kernel": kernel, "sigma": sigma, "lam": 0.03,
            "sampler": "uniform", "seed": 4, "resolution": 31}
    G = pg.grid(dim, 31)
    rng = np.random.default_rng(0)
    for move, fit, own, X, y in _nystrom_moves(points, dim, base, (40, 41, 25, 90, 70)):
        ref = _nystrom_ridge(move, X, y, X[own])
        spread = max(float(np.abs(_nystrom_ridge(move, X, y, X[rng.permutation(own)])
                                  .predict(G) - ref.predict(G)).max()) for _ in range(2))
        assert np.abs(fit.primary.grid - ref.predict(G)).max() <= max(TOL, spread)
        assert np.abs(fit.primary.train - ref.predict(X)).max() <= max(TOL, spread)


@pytest.mark.parametrize("dim", [1, 2])
@pytest.mark.parametrize("kernel,orthogonal", [("gaussian", False), ("gaussian", True),
                                               ("laplace", False), ("cauchy", False)])
def test_after_d_moves_the_fit_is_the_library_rff_ridge_on_the_first_d(dim, kernel,
                                                                        orthogonal):
    """D up, down and up again, then λ: each fit is RFFRidge rebuilt from scratch on the
    first D frequencies of the library's draw of :data:`FREQUENCIES` at σ, to 1e-10."""
    points = _data(dim)
    base = {"method": "rff", "kernel": kernel, "sigma": 0.6, "lam": 0.05,
            "orthogonal": orthogonal, "seed": 8, "resolution": 27}
    moves = [dict(base, D=D) for D in (50, 51, 70, 33, 201)] + [dict(base, D=70, lam=1e-3)]
    train = ~points.test
    X, y = points.X[train], points.y[train]
    draw = RandomFourierFeatures(kernel, sigma=0.6, n_components=FREQUENCIES,
                                 orthogonal=orthogonal, random_state=8).fit(X)
    for move, fit in zip(moves, _fits(FitEngine(), points, dim, moves), strict=True):
        D = move["D"]
        ref = RFFRidge(move["lam"], kernel=kernel, sigma=0.6,
                       frequencies=draw.weights_[:, :D], phases=draw.offsets_[:D]).fit(X, y)
        _assert_is(fit, ref, points, dim, 27, f"D = {D}")


def test_the_kept_frequencies_are_the_first_of_the_librarys_draw_at_sigma():
    """The frequencies kept at σ (drawn once at σ = 1, over σ) are the library's draw of
    :data:`FREQUENCIES` at σ: exactly for Gaussian and Laplace frequencies, to rounding
    for Cauchy (drawn at scale 1/σ) and orthogonal ones (normed at σ)."""
    points = _data()
    train = ~points.test
    problem = pg.Problem(points.X[train], points.y[train], points.X[~train],
                         points.y[~train], pg.GridMap(2, 5), "regression")
    for kernel, orthogonal in (("gaussian", False), ("laplace", False), ("cauchy", False),
                               ("gaussian", True)):
        kept = pg.FrequencyColumns(problem, kernel, 0.37, orthogonal, 21)
        draw = RandomFourierFeatures(kernel, sigma=0.37, n_components=FREQUENCIES,
                                     orthogonal=orthogonal, random_state=21).fit(problem.X)
        exact = kernel != "cauchy" and not orthogonal  # σ⁻¹ω, not ω at scale σ⁻¹
        np.testing.assert_allclose(kept.W, draw.weights_, rtol=0 if exact else 1e-15,
                                   atol=0)
        np.testing.assert_array_equal(kept.b, draw.offsets_)


def test_a_new_landmark_computes_its_column_only(monkeypatch):
    """An s move by one landmark of a nested sampler evaluates that landmark's kernel
    column, not the others'."""
    points = _data()
    base = {"method": "nystrom", "sigma": 0.5, "lam": 0.1, "sampler": "uniform", "seed": 2}
    engine = FitEngine()
    _fits(engine, points, 2, [dict(base, s=60)])
    from kernel_lab.core.playground import features

    widths: list[int] = []
    extend = features.KeptColumns.extend
    monkeypatch.setattr(features.KeptColumns, "extend",
                        lambda self, tr, te: widths.append(tr.shape[1]) or extend(self, tr, te))
    _fits(engine, points, 2, [dict(base, s=61), dict(base, s=45)])
    assert widths == [1]  # one new column for s = 61, none for s = 45
