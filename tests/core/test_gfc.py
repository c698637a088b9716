"""Greedy feature construction (Oglic & Gärtner) and the leave-one-out feature ridge."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.utils.estimator_checks import parametrize_with_checks

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.models.feature_ridge import feature_ridge, ridge_loo
from kernel_lab.core.models.gfc import (
    PROTOCOLS,
    DescentSettings,
    GreedyFeatureRegressor,
    amplitudes,
    greedy_descent,
    profiled_objective,
    profiled_objective_batch,
    relative_change,
    step_search,
)
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.engine.executors import ThreadExecutor


def _fold(rng, n, d, f_scale=1.0):
    X = np.hstack([rng.normal(size=(n, d)), np.ones((n, 1))])
    return X, f_scale * rng.normal(size=n), rng.normal(size=n)


# -- the profiled objective of one greedy step -----------------------------------------
@pytest.mark.parametrize("lam", [1e-6, 1e-3, 1.0])
@pytest.mark.parametrize("f_scale", [0.0, 1.0])
def test_profiled_gradient_matches_finite_differences(lam, f_scale):
    rng = np.random.default_rng(1)
    d = 4
    train, valid = _fold(rng, 60, d, f_scale), _fold(rng, 90, d, f_scale)
    for _ in range(5):
        theta = rng.normal(size=d + 1)
        _, grad = profiled_objective(theta, train, valid, lam)
        h = 1e-6
        numeric = np.array([
            (profiled_objective(theta + h * e, train, valid, lam)[0]
             - profiled_objective(theta - h * e, train, valid, lam)[0]) / (2 * h)
            for e in np.eye(d + 1)])
        np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)


def test_batch_objective_equals_single_objective():
    rng = np.random.default_rng(2)
    train, valid = _fold(rng, 50, 3), _fold(rng, 70, 3)
    Theta = rng.normal(size=(4, 16))
    batch = profiled_objective_batch(Theta, train, valid, 1e-2)
    single = [profiled_objective(Theta[:, k], train, valid, 1e-2)[0] for k in range(16)]
    np.testing.assert_allclose(batch, single, rtol=1e-12)


def test_amplitudes_are_the_ridge_solution():
    rng = np.random.default_rng(3)
    f, phi, y = rng.normal(size=(3, 80))
    lam = 0.05
    ref = Ridge(alpha=lam * 80, fit_intercept=False).fit(
        np.column_stack([f, np.ones(80), phi]), y).coef_
    np.testing.assert_allclose(amplitudes(f, phi, y, lam), ref, rtol=1e-10)


def test_objective_is_the_validation_error_of_the_fitted_step():
    rng = np.random.default_rng(4)
    (Xt, ft, yt), (Xv, fv, yv) = _fold(rng, 40, 2), _fold(rng, 60, 2)
    theta = rng.normal(size=3)
    c = amplitudes(ft, np.cos(Xt @ theta), yt, 0.1)
    literal = np.mean((c[0] * fv + c[1] + c[2] * np.cos(Xv @ theta) - yv) ** 2)
    assert profiled_objective(theta, (Xt, ft, yt), (Xv, fv, yv), 0.1)[0] == pytest.approx(
        literal, rel=1e-12)


# -- greedy descent ----------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_folds", [2, 5])
def test_greedy_step_never_increases_training_error(seed, n_folds):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(300, 3))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.3 * rng.normal(size=300)
    f0 = np.zeros(300)
    settings = DescentSettings(max_steps=12, n_folds=n_folds, eps=0.0, sigma=1.0)
    thetas, f, errors = greedy_descent(X, y - y.mean(), f0, settings, rng)
    assert len(errors) == thetas.shape[0] + 1 >= 2
    assert np.all(np.diff(errors) <= 0)
    assert errors[-1] == pytest.approx(np.mean((y - y.mean() - f) ** 2))


def test_descent_stops_on_pure_noise():
    """The held-out check: noise has no structure to find, so the descent ends early."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(1000, 5))
    y = rng.normal(size=1000)
    thetas, _, _ = greedy_descent(X, y, np.zeros(1000), DescentSettings(max_steps=20),
                                  np.random.default_rng(0))
    assert thetas.shape[0] <= 3


@pytest.mark.parametrize("seed", range(3))
def test_gfc_recovers_a_single_cosine_wave(seed):
    rng = np.random.default_rng(seed)
    d = 4
    w_true = rng.normal(size=d) * 1.5
    X = rng.normal(size=(1500, d))
    y = 2.0 * np.cos(X @ w_true + 0.7) + 0.05 * rng.normal(size=1500)
    model = GreedyFeatureRegressor(5, n_passes=2, n_descents=2, random_state=seed).fit(X, y)
    top = model.frequencies_[np.argmax(np.abs(model.coef_))]
    cosine = abs(top @ w_true) / (np.linalg.norm(top) * np.linalg.norm(w_true))
    assert cosine >= 0.99
    assert np.linalg.norm(top) == pytest.approx(np.linalg.norm(w_true), rel=0.02)
    assert np.sqrt(np.mean((model.predict(X) - y) ** 2)) < 0.1


# -- GFC -----------------------------------------------------------------------------------
def _friedman(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 10))
    f = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3]
         + 5 * X[:, 4])
    return X, f + rng.normal(size=n), f


def test_gfc_fits_friedman_close_to_the_noise():
    X, y, _ = _friedman(1500, 0)
    Xt, _, ft = _friedman(1000, 1)
    model = GreedyFeatureRegressor(40, random_state=0).fit(X, y)
    assert 1 <= model.n_features_out_ <= 40
    rmse = np.sqrt(np.mean((model.predict(Xt) - ft) ** 2))  # against the noiseless target
    assert rmse < 0.8  # noise std is 1, the target's std about 5


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_same_seed_same_model_on_any_executor(protocol):
    X, y, _ = _friedman(800, 2)
    kw = dict(n_features=20, n_passes=3, subset_size=400, protocol=protocol, random_state=7)
    a = GreedyFeatureRegressor(**kw).fit(X, y)
    b = GreedyFeatureRegressor(**kw).fit(X, y)
    c = GreedyFeatureRegressor(**kw, executor=ThreadExecutor(2)).fit(X, y)
    for other in (b, c):
        np.testing.assert_array_equal(a.frequencies_, other.frequencies_)
        np.testing.assert_array_equal(a.coef_, other.coef_)
    d = GreedyFeatureRegressor(**{**kw, "random_state": 8}).fit(X, y)
    assert not np.array_equal(a.frequencies_, d.frequencies_)


def test_callback_after_every_pass_and_pruning():
    X, y, _ = _friedman(600, 3)
    seen = []
    model = GreedyFeatureRegressor(15, n_passes=3, random_state=0,
                                   callback=lambda info: seen.append(info)).fit(X, y)
    assert [s["pass"] for s in seen] == [1, 2, 3]
    assert all(s["model"] is model for s in seen)
    assert seen[-1]["n_features"] == model.n_features_out_
    assert model.history_[-1]["train_rmse"] == pytest.approx(
        np.sqrt(np.mean((model.predict(X) - y) ** 2)))
    # a cut-off above every amplitude prunes every feature: the model is the mean
    empty = GreedyFeatureRegressor(15, n_passes=1, eta=1e6, random_state=0).fit(X, y)
    assert empty.n_features_out_ == 0
    np.testing.assert_allclose(empty.predict(X), y.mean())


def test_features_give_the_features_behind_predict():
    X, y, _ = _friedman(500, 4)
    model = GreedyFeatureRegressor(10, n_passes=2, random_state=0).fit(X, y)
    F = model.features(X)
    np.testing.assert_allclose(F, np.cos(X @ model.frequencies_.T + model.phases_))
    np.testing.assert_allclose(model.predict(X), F @ model.coef_ + model.intercept_)


@pytest.mark.parametrize("bad", [dict(n_features=0), dict(lam=0.0), dict(lam=-1.0),
                                 dict(nu=-1.0), dict(n_folds=1), dict(eta=-1.0),
                                 dict(n_passes=0), dict(subset_size=1)])
def test_bad_parameters_are_named(bad):
    X, y, _ = _friedman(100, 5)
    name = next(iter(bad))
    with pytest.raises(ParameterError, match=name if name != "lam" else "λ"):
        GreedyFeatureRegressor(**bad).fit(X, y)


@parametrize_with_checks([GreedyFeatureRegressor(8, n_passes=2, random_state=0),
                          GreedyFeatureRegressor(6, n_passes=1, nu=1e-2, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# -- leave-one-out ridge -------------------------------------------------------------------
def test_ridge_loo_equals_literal_leave_one_out():
    rng = np.random.default_rng(6)
    F = rng.normal(size=(40, 6))
    y = F @ rng.normal(size=6) + 3.0 + 0.5 * rng.normal(size=40)
    nus = np.array([1e-2, 1e-1, 1.0, 10.0])
    coef, icpt, nu, loo = ridge_loo(F, y, nus, refine=False)
    literal = []
    for v in nus:
        errs = []
        for i in range(40):
            keep = np.arange(40) != i
            c, b = feature_ridge(F[keep], y[keep], v)
            errs.append(y[i] - F[i] @ c - b)
        literal.append(np.mean(np.square(errs)))
    k = int(np.argmin(literal))
    assert nu == nus[k]
    assert loo == pytest.approx(literal[k], rel=1e-10)
    ref_c, ref_b = feature_ridge(F, y, nus[k])
    np.testing.assert_allclose(coef, ref_c, rtol=1e-10)
    assert icpt == pytest.approx(ref_b, rel=1e-10)
    # refining on log ν never does worse than the grid
    assert ridge_loo(F, y, nus)[3] <= loo


def test_ridge_loo_handles_duplicate_features_and_rejects_bad_grid():
    rng = np.random.default_rng(7)
    F = rng.normal(size=(30, 3))
    F = np.hstack([F, F[:, :1]])  # rank deficient
    y = rng.normal(size=30)
    coef, _, _, loo = ridge_loo(F, y)
    assert np.all(np.isfinite(coef)) and np.isfinite(loo)
    with pytest.raises(ParameterError, match="ν"):
        ridge_loo(F, y, np.array([0.0, 1.0]))


# -- the paper's protocol --------------------------------------------------------------------
def _literal_paper_descent(X, y, f0, settings, rng, key_seed):
    """Algorithm 1 as the paper prints it, with its use of the folds: c fitted on one fold
    and θ tuned on all the others (the roles rotating), the step's feature added (line 4)
    and only then the relative-ε test on the sample's training error (line 5). The
    amplitudes come from scikit-learn's Ridge; θ from the module's own step search, and the
    folds from the rows in the order of their keys (``key_seed``), so that the random
    draws are the same."""
    n = len(y)
    Xa = np.hstack([X, np.ones((n, 1))])
    perm = np.argsort(rowkeys.keys(key_seed, rowkeys.GFC_FOLDS, np.arange(n)))
    folds = np.array_split(perm, settings.n_folds)
    W, f, E = [], f0.copy(), [np.mean((y - f0) ** 2)]
    for k in range(settings.max_steps):
        t = k % len(folds)
        tr = folds[t]
        va = np.concatenate([folds[j] for j in range(len(folds)) if j != t])
        theta = step_search((Xa[tr], f[tr], y[tr]), (Xa[va], f[va], y[va]), settings, rng)
        A = np.column_stack([f, np.ones(n), np.cos(Xa @ theta)])
        c = Ridge(alpha=settings.lam * n, fit_intercept=False, solver="cholesky",
                  tol=1e-12).fit(A, y).coef_
        f = A @ c
        W.append(theta)
        E.append(np.mean((y - f) ** 2))
        if abs(E[-1] - E[-2]) / max(E[-1], E[-2]) < settings.eps:
            break
    return np.array(W), f, E


def _wavy(seed, n=400, d=3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.3 * rng.normal(size=n)
    return X, y - y.mean()


@pytest.mark.parametrize("seed", range(3))
def test_paper_rule_equals_a_literal_algorithm_1(seed):
    X, y = _wavy(seed)
    f0 = np.zeros(len(y))
    base = DescentSettings(max_steps=10, eps=0.0, protocol="paper", candidates=64)
    full, _, e_full = greedy_descent(X, y, f0, base, np.random.default_rng(seed), seed=seed)
    assert full.shape[0] == 10  # ε = 0: the rule never fires (a change is never < 0)
    r = [relative_change(a, b) for a, b in itertools.pairwise(e_full)]  # r[j]: step j + 1
    # a precision that first fires at step k + 1: between r[k] and every earlier r
    k = next(j for j in range(2, len(r)) if r[j] < min(r[:j]))
    eps = math.sqrt(r[k] * min(r[:k]))
    settings = replace(base, eps=eps)
    thetas, f, errors = greedy_descent(X, y, f0, settings, np.random.default_rng(seed),
                                       seed=seed)
    assert thetas.shape[0] == k + 1  # the feature that triggers the stop is kept
    np.testing.assert_array_equal(thetas, full[: k + 1])
    lit_W, lit_f, lit_E = _literal_paper_descent(X, y, f0, settings,
                                                 np.random.default_rng(seed), seed)
    np.testing.assert_allclose(thetas, lit_W, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(errors, lit_E, rtol=1e-8)
    np.testing.assert_allclose(f, lit_f, rtol=1e-6, atol=1e-8)


def test_paper_protocol_keeps_steps_that_the_held_out_check_rejects():
    """On pure noise the held-out protocol ends at once; the paper's keeps adding
    features, since fitting noise still changes the training error by more than ε."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(1000, 5))
    y = rng.normal(size=1000)
    held, _, _ = greedy_descent(X, y, np.zeros(1000), DescentSettings(max_steps=20),
                                np.random.default_rng(0))
    paper, _, errors = greedy_descent(X, y, np.zeros(1000),
                                      DescentSettings(max_steps=20, protocol="paper"),
                                      np.random.default_rng(0))
    assert held.shape[0] <= 3 and paper.shape[0] == 20
    assert errors[-1] < errors[0]


@pytest.mark.parametrize("n_passes, n_descents", [(1, 1), (3, 2), (10, 4)])
def test_paper_protocol_reaches_the_budget_unless_the_rule_fires(n_passes, n_descents):
    X, y, _ = _friedman(1200, 8)
    kw = dict(n_passes=n_passes, n_descents=n_descents, protocol="paper", eta=0.0,
              candidates=64, random_state=0)
    exact = GreedyFeatureRegressor(30, eps=0.0, **kw).fit(X, y)
    assert exact.n_features_out_ == 30
    assert sum(h["short_descents"] for h in exact.history_) == 0
    default = GreedyFeatureRegressor(30, **kw).fit(X, y)
    if sum(h["short_descents"] for h in default.history_) == 0:
        assert default.n_features_out_ == 30
    held = GreedyFeatureRegressor(30, **{**kw, "protocol": "held-out"}).fit(X, y)
    assert held.n_features_out_ < 30  # the held-out check stops once the residual is noise


def test_paper_rule_firing_ends_a_descent_short():
    X, y, _ = _friedman(1200, 9)
    model = GreedyFeatureRegressor(30, n_passes=1, n_descents=2, protocol="paper", eps=0.05,
                                   eta=0.0, candidates=64, random_state=0).fit(X, y)
    assert model.history_[0]["short_descents"] >= 1
    assert 2 <= model.n_features_out_ < 30  # every descent adds at least its first step


def test_unknown_protocol_is_named():
    X, y, _ = _friedman(100, 5)
    with pytest.raises(ParameterError, match="protocol must be one of: held-out, paper"):
        GreedyFeatureRegressor(protocol="loose").fit(X, y)
