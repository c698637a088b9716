"""Nested trials of the nystrom experiment: every size of a trial from one draw of the
largest and one pass over the rows gives, at each s, what a fit on the first s landmarks
(features) alone gives — checked against brute-force features and scikit-learn's ridge."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from kernel_lab.core.kernels import GaussianKernel
from kernel_lab.core.models.rff import sample_features
from kernel_lab.core.samplers import SAMPLERS, RPCholeskySampler
from kernel_lab.data.generators import generate
from kernel_lab.experiments.nystrom_cells import downstream_ridge
from kernel_lab.experiments.nystrom_nested import CellTask, run_nested

SIZES = (5, 12, 30)


def _task(sampler, d, kernel, lam, rows, seed=7):
    eval_rows = np.arange(0, d.X_train.shape[0], 4)
    return CellTask(sampler, None, np.random.SeedSequence(seed), d.X_train, d.y_train,
                    d.X_test, d.y_test, eval_rows, kernel(d.X_train[eval_rows]), kernel, lam,
                    block_rows=rows, sizes=SIZES)


def _brute_features(sampler, task, s):
    """The features of the first s landmarks (features) of the task's draw, from scratch:
    ``k(X, S) W^{-1/2}`` by an eigendecomposition, or ``√(2/s) cos(XW + b)``."""
    rng = np.random.default_rng(task.seed)
    X, kernel = task.X, task.kernel
    if sampler.startswith("rff"):
        W, b = sample_features(kernel, X.shape[1], SIZES[-1], rng,
                               orthogonal=sampler == "rff-orthogonal")
        return lambda A: math.sqrt(2.0 / s) * np.cos(A @ W[:, :s] + b[:s])
    order = SAMPLERS[sampler]().sample(X, kernel, SIZES[-1], rng).order
    L = X[order[:s]]
    e, V = np.linalg.eigh(kernel(L))
    keep = e > 1e-12 * e.max()
    N = V[:, keep] / np.sqrt(e[keep])
    return lambda A: kernel(A, L) @ N


@pytest.mark.parametrize("sampler", ["uniform", "rp-cholesky", "rff", "rff-orthogonal"])
@pytest.mark.parametrize("lam", [0.5, None])
@pytest.mark.parametrize("rows", [37, 10_000])
def test_every_size_equals_a_fit_on_its_prefix_alone(sampler, lam, rows):
    d = generate("friedman", {"n": 500, "n_test": 120}, seed=2)
    kernel = GaussianKernel(2.0)
    task = _task(sampler, d, kernel, lam, rows)
    results = run_nested(task)
    assert [r["landmarks"] for r in results] == list(SIZES)
    for s, res in zip(SIZES, results, strict=True):
        f = _brute_features(sampler, task, s)
        F = f(d.X_train)
        assert res["trace"] == pytest.approx(d.X_train.shape[0] - np.sum(F * F), rel=1e-9,
                                             abs=1e-8)
        F_eval = f(d.X_train[task.eval_rows])
        spectral = np.linalg.norm(task.K_eval - F_eval @ F_eval.T, 2)
        assert res["spectral"] == pytest.approx(spectral, rel=1e-7, abs=1e-10)
        if lam is None:  # leave-one-out on the features held whole
            coef, intercept, chosen = downstream_ridge(F, d.y_train, None)
            pred = f(d.X_test) @ coef + intercept
            assert res["ridge_lam"] == pytest.approx(chosen, rel=1e-9)
            rel = 1e-6
        else:
            pred = Ridge(alpha=lam).fit(F, d.y_train).predict(f(d.X_test))
            rel = 1e-8
        rmse = np.sqrt(np.mean((pred - d.y_test) ** 2))
        assert res["rmse"] == pytest.approx(rmse, rel=rel)
        if not sampler.startswith("rff"):
            assert res["indices"].size == s


def test_an_ill_conditioned_prefix_gets_a_pass_of_its_own(monkeypatch):
    """Pairs of points 1e-4 σ apart make W's kept eigenvalues span far more than 10⁶: such
    a size sums its features, not k(X, S), in a pass of its own, the shared pass stops at
    the last size that may use it, and every size still equals the fit from scratch."""
    from kernel_lab.experiments import nystrom_nested

    base = generate("friedman", {"n": 80, "n_test": 40}, seed=1)
    X = np.vstack([base.X_train, base.X_train + 1e-4 * 3.0 / np.sqrt(base.X_train.shape[1])])
    d = type("D", (), {"X_train": X, "y_train": np.tile(base.y_train, 2),
                       "X_test": base.X_test, "y_test": base.y_test})
    kernel = GaussianKernel(3.0)
    task = _task("uniform", d, kernel, 0.5, 50, seed=1)  # a twin pair from s = 30 on
    passes = []
    real = nystrom_nested._pass
    monkeypatch.setattr(nystrom_nested, "_pass",
                        lambda t, c, sizes: passes.append(sizes) or real(t, c, sizes))
    own = []
    ridge = nystrom_nested.StreamedRidge

    class Counted(ridge):
        def __init__(self, *a):
            own.append(a[3])
            ridge.__init__(self, *a)

    monkeypatch.setattr(nystrom_nested, "StreamedRidge", Counted)
    results = run_nested(task)
    drawn = _draw_order(task)
    pairs = [np.unique(drawn[:s] % 80).size < s for s in SIZES]  # a point and its twin
    assert pairs == [False, False, True]
    assert len(own) == sum(pairs)  # a pass of its own for each ill-conditioned size
    assert passes == ([] if all(pairs) else [SIZES[:max(j for j, p in enumerate(pairs)
                                                       if not p) + 1]])
    for s, res in zip(SIZES, results, strict=True):
        f = _brute_features("uniform", task, s)
        F = f(X)
        assert res["trace"] == pytest.approx(X.shape[0] - np.sum(F * F), rel=1e-9, abs=1e-6)
        pred = Ridge(alpha=0.5).fit(F, d.y_train).predict(f(d.X_test))
        assert res["rmse"] == pytest.approx(np.sqrt(np.mean((pred - d.y_test) ** 2)),
                                            rel=1e-6)


def _draw_order(task):
    rng = np.random.default_rng(task.seed)
    return SAMPLERS[task.sampler]().sample(task.X, task.kernel, SIZES[-1], rng).order


def test_rp_cholesky_one_at_a_time_draws_the_same_first_pivots_at_every_size():
    """The prefix of a draw at the largest s is the draw at s itself (same seed) for the
    one-pivot-at-a-time form; both forms say when each pivot was final."""
    X = generate("clusters", {"n": 400, "k": 5, "spread": 0.1}, seed=0).X_train
    kernel = GaussianKernel(0.5)
    big = RPCholeskySampler(accelerated=False).sample(X, kernel, 40,
                                                      np.random.default_rng(5))
    for s in (1, 7, 25):
        small = RPCholeskySampler(accelerated=False).sample(X, kernel, s,
                                                            np.random.default_rng(5))
        np.testing.assert_array_equal(small.order, big.order[:s])
    for accelerated in (False, True):
        smp = RPCholeskySampler(accelerated=accelerated).sample(X, kernel, 40,
                                                                np.random.default_rng(1))
        assert smp.marks.shape == (40, 2)
        assert np.all(np.diff(smp.marks, axis=0) >= 0)  # time and evaluations only grow
        assert smp.marks[-1, 1] <= smp.kernel_evaluations
        np.testing.assert_array_equal(np.sort(smp.order), smp.indices)


def test_time_and_evaluations_accumulate_over_the_sizes(monkeypatch):
    """The time at s adds the pass's work on every group of landmarks up to s: with a clock
    that advances one second per reading, it grows with s (real timings are the
    benchmarks' business); kernel evaluations grow with s."""
    import itertools

    from kernel_lab.experiments import nystrom_nested

    d = generate("friedman", {"n": 400, "n_test": 50}, seed=0)
    kernel = GaussianKernel(2.0)
    uniform = run_nested(_task("uniform", d, kernel, 1.0, 64))
    assert [r["evals"] for r in uniform] == [s * s for s in SIZES]  # W only
    rpc = run_nested(_task("rp-cholesky", d, kernel, 1.0, 64))
    assert np.all(np.diff([r["evals"] for r in rpc]) > 0)
    ticks = itertools.count()
    monkeypatch.setattr(nystrom_nested.time, "perf_counter", lambda: float(next(ticks)))
    blocks = -(-d.X_train.shape[0] // 64)
    # per block of rows, each group's own work is one tick and the Gram product of all
    # groups one more, charged to the groups by their share of its multiply-adds
    lows = (0, *SIZES[:-1])
    share = np.array([(hi * hi - lo * lo) / SIZES[-1] ** 2
                      for lo, hi in zip(lows, SIZES, strict=True)])
    for sampler in ("uniform", "rff"):
        times = [r["time"] for r in run_nested(_task(sampler, d, kernel, 1.0, 64))]
        # the time at the next size adds the next group's (and W's share and the
        # factorisation, under two ticks)
        assert times[0] > 0, sampler
        steps = np.diff(times) - blocks * (1.0 + share[1:])
        assert np.all(steps >= -1e-9) and np.all(steps < 2), (sampler, times)
