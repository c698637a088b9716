"""The nystrom experiment's paper protocol (Musco & Musco, Section 5) and Algorithm 2
(recursive RLS at a fixed λ) on the same axes as the fixed-size samplers."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.models import CenteredKernelRidge
from kernel_lab.core.models.feature_ridge import feature_ridge
from kernel_lab.core.models.nystrom import NystromFeatures
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows.mapreduce import LocalParts, RowPlan, array_parts, take_rows
from kernel_lab.core.rows.partitioned import PartitionedData
from kernel_lab.core.rows.prepare import standardize_plan
from kernel_lab.data.generators import generate
from kernel_lab.engine import run_experiment
from kernel_lab.experiments import get_experiment
from kernel_lab.experiments.base import build_kernel
from kernel_lab.experiments.nystrom import parse_lams
from kernel_lab.experiments.nystrom_cells import (
    FIXED_LAMBDA,
    CellInputs,
    CellTask,
    cell_seed,
    downstream_ridge,
    run_cell,
)
from kernel_lab.experiments.plotspec import resolve_curves

DATA = "clusters:n=300,n_test=100,k=5,imbalance=3,spread=0.1"


def test_cross_validation_picks_what_a_brute_force_loop_picks():
    """The paper protocol's downstream λ: leave-one-out over 61 values log-spaced from
    1e-10 to 10 × λ_max(F_cᵀF_c). A literal loop — refit without point i, predict it, for
    every i and every λ of that grid — picks the same λ and the same fit."""
    d = generate("friedman", {"n": 120, "n_test": 10}, seed=3)
    F = NystromFeatures("gaussian", kernel_params={"sigma": 1.0}, n_components=12,
                        sampler="uniform", random_state=0).fit_transform(d.X_train)
    y = d.y_train
    Fc = F - F.mean(axis=0)
    grid = np.linalg.eigvalsh(Fc.T @ Fc)[-1] * np.logspace(-10, 1, 61)
    loo = np.zeros(grid.size)
    for g, lam in enumerate(grid):
        for i in range(y.size):
            rest = np.arange(y.size) != i
            coef, intercept = feature_ridge(F[rest], y[rest], lam)
            loo[g] += (F[i] @ coef + intercept - y[i]) ** 2 / y.size
    best = int(np.argmin(loo))
    assert 0 < best < grid.size - 1  # an interior minimum: the grid is not what decides
    coef, intercept, chosen = downstream_ridge(F, y, None)
    assert chosen == pytest.approx(grid[best], rel=1e-9)
    ref_coef, ref_intercept = feature_ridge(F, y, grid[best])
    np.testing.assert_allclose(coef, ref_coef, rtol=1e-6, atol=1e-9)
    assert intercept == pytest.approx(ref_intercept, rel=1e-6)
    assert downstream_ridge(F, y, 0.5)[2] == 0.5  # a fixed λ is used as given


def test_paper_protocol_means_of_ten_trials_on_all_points_with_cv():
    """protocol=paper overrides trials, eval_points and lam: 10 trials, their mean, the
    error on every training point (fewer than 20 000), λ by cross-validation — for the
    exact-KRR line too; the summaries say so."""
    params = {"sizes": "10,40", "samplers": ["uniform", "recursive-rls"], "trials": 2,
              "eval_points": 60, "lam": 5.0, "protocol": "paper", "seed": 11}
    r = run_experiment("nystrom", params, data=DATA, workers=2)
    n = r.summaries["n"]
    assert (r.summaries["protocol"], r.summaries["trials"], r.summaries["statistic"]) == (
        "paper", 10, "mean")
    assert r.summaries["eval_points"] == n and "note" not in r.summaries
    note = r.summaries["protocol_note"]
    assert "paper protocol" in note and f"all {n} training points" in note
    assert "mean of 10 trials" in note and "leave-one-out" in note
    assert "spectral_median[uniform]" not in r.table and "rmse_median[uniform]" not in r.table
    for name in ("uniform", "recursive-rls"):
        assert np.all(np.isfinite(r.table[f"spectral_mean[{name}]"][:2]))
        assert np.all(r.table[f"ridge_lam_median[{name}]"][:2] > 0)
    # exact KRR at the cross-validated λ, by the estimator itself
    data = generate("clusters", {"n": 300, "n_test": 100, "k": 5, "imbalance": 3,
                                 "spread": 0.1}, seed=11)
    X, y = data.X_train, data.y_train
    kernel = build_kernel(get_experiment("nystrom").resolve(params), X)
    exact = CenteredKernelRidge(r.summaries["lam_exact"], kernel=kernel).fit(X, y)
    rmse = np.sqrt(np.mean((exact.predict(data.X_test) - data.y_test) ** 2))
    assert r.summaries["rmse_exact"] == pytest.approx(rmse, rel=1e-6)


def test_paper_protocol_means_the_cells_of_the_run():
    """Under the paper protocol a table entry is the mean of ten cells, each recomputed
    here with its seed (run seed, sampler, trial, s) on the run's keyed subsets."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(400, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=400)
    parts = LocalParts(array_parts(X, y, 2))
    plan = standardize_plan(parts, RowPlan.split(11, 400, 0.25))
    d = PartitionedData(parts, plan, ["a", "b", "c"], "y")
    exp = get_experiment("nystrom")
    params = exp.resolve({"sizes": "10,40", "samplers": ["recursive-rls"],
                          "protocol": "paper", "seed": 11})
    r = None
    for r in exp.run(params, d, Progress()):  # noqa: B007
        pass
    train = take_rows(parts, plan, np.arange(400))
    test = take_rows(parts, plan, np.arange(400), "test")
    kernel = build_kernel(params, train.X)  # fewer rows than BANDWIDTH_ROWS: all of them
    inputs = CellInputs(d, kernel, None, float(kernel.diag(train.X).sum()), train.X,
                        kernel(train.X), test.X, test.y, np.zeros(0, dtype=np.int64))
    cells = [run_cell(CellTask("recursive-rls", 10, None,
                               cell_seed(11, "recursive-rls", t, 10), inputs))
             for t in range(10)]
    assert r.table["spectral_mean[recursive-rls]"][0] == pytest.approx(
        np.mean([c["spectral"] for c in cells]), rel=1e-9)
    assert r.table["rmse_mean[recursive-rls]"][0] == pytest.approx(
        np.mean([c["rmse"] for c in cells]), rel=1e-9)


def test_light_protocol_is_the_default_and_says_so():
    r = run_experiment("nystrom", {"sizes": "10,20", "samplers": ["uniform"], "trials": 2,
                                   "eval_points": 100}, data=DATA)
    assert r.summaries["protocol"] == "light" and r.summaries["statistic"] == "median"
    assert r.summaries["protocol_note"].startswith(
        "light protocol: ‖K − K̃‖₂ on a keyed random subset of 100 of the")
    assert "median of 2 trials, downstream λ = 1 (fixed)" in r.summaries["protocol_note"]
    assert "spectral_mean[uniform]" not in r.table and "ridge_lam_median[uniform]" not in r.table
    np.testing.assert_array_equal(r.table["s[uniform]"][:2], [10, 20])
    np.testing.assert_array_equal(r.table["time[uniform]"][:2], r.table["time_median[uniform]"][:2])


def test_algorithm2_is_placed_at_its_realised_sample_size():
    base = {"sizes": "10,40", "trials": 3, "eval_points": 200, "seed": 5}
    alone = run_experiment("nystrom", {**base, "samplers": ["uniform"]}, data=DATA)
    r = run_experiment("nystrom", {**base, "samplers": ["uniform", FIXED_LAMBDA],
                                   "rls_lams": "0.1, 10;1"}, data=DATA, workers=2)
    # the fixed-size samplers keep their seeds and results
    np.testing.assert_array_equal(r.table["spectral_median[uniform]"][:2],
                                  alone.table["spectral_median[uniform]"][:2])
    lams = r.table[f"lam_bound[{FIXED_LAMBDA}]"][:3]
    np.testing.assert_array_equal(lams, [10, 1, 0.1])         # largest λ first
    sizes = r.table[f"s[{FIXED_LAMBDA}]"][:3]
    assert np.all(np.diff(sizes) > 0) and np.all(sizes == np.round(sizes))
    # d_eff by brute force, and the sizes against it
    X = generate("clusters", {"n": 300, "n_test": 100, "k": 5, "imbalance": 3,
                              "spread": 0.1}, seed=5).X_train
    kernel = build_kernel(get_experiment("nystrom").resolve(base), X)
    e = np.clip(np.linalg.eigvalsh(kernel(X)), 0.0, None)
    for lam, s in zip(lams, sizes, strict=True):
        d_eff = float(np.sum(e / (e + lam)))
        assert r.summaries[f"d_eff[λ={lam:g}]"] == pytest.approx(d_eff, rel=1e-8)
        assert r.summaries[f"landmarks[λ={lam:g}]"] == s and s >= d_eff
    assert np.all(r.table[f"spectral_median[{FIXED_LAMBDA}]"][:3] <= lams)
    assert r.summaries[f"bound_held[{FIXED_LAMBDA}]"] == 1.0
    # on the plots: at x = its own sizes, with λ (the bound) beside it; exact KRR at x = s
    plots = get_experiment("nystrom").plots
    lines = {line.column: line.x for line in resolve_curves(plots[0], r.table)}
    assert lines[f"spectral_median[{FIXED_LAMBDA}]"] == f"s[{FIXED_LAMBDA}]"
    assert lines[f"lam_bound[{FIXED_LAMBDA}]"] == f"s[{FIXED_LAMBDA}]"
    assert lines["spectral_median[uniform]"] == "s[uniform]"
    assert {line.column: line.x for line in resolve_curves(plots[2], r.table)}[
        "rmse_exact"] == "s"


def test_algorithm2_alone_and_bad_lambda_values():
    r = run_experiment("nystrom", {"samplers": [FIXED_LAMBDA], "rls_lams": "3", "trials": 1,
                                   "sizes": "not used", "eval_points": 100}, data=DATA)
    assert np.isfinite(r.table[f"spectral_median[{FIXED_LAMBDA}]"][0])
    assert list(parse_lams("1e-2, 1,0.1")) == [1.0, 0.1, 0.01]
    for text, message in (("0.1, 0", "positive and finite, got 0.0"),
                          ("-1", "positive and finite, got -1.0"),
                          ("inf", "positive and finite, got inf"),
                          ("nan", "positive and finite, got nan"),
                          ("one", "must be numbers separated by commas"),
                          (" , ", "at least one λ")):
        with pytest.raises(ParameterError, match=message):
            parse_lams(text)
    with pytest.raises(ParameterError, match="positive and finite"):
        run_experiment("nystrom", {"samplers": ["uniform", FIXED_LAMBDA], "rls_lams": "-1",
                                   "sizes": "10", "trials": 1}, data=DATA)


@pytest.mark.slow
def test_nystrom_paper_preset_shows_what_its_text_says():
    """The full preset (10–40 s on two cores): the claims of its text, with their numbers."""
    from kernel_lab.engine import run
    from kernel_lab.engine.presets import load_preset

    preset = load_preset("nystrom-paper")
    for words in ("14–31 % higher up to 50 landmarks", "2.2 times higher at 400 (1.1 against 0.50)",
                  "6 to 91 times above", "at most 1.4 %", "less than 1 % from 100 on",
                  "within 1 % of exact kernel ridge (0.137)", "1.3 % above it there",
                  "30, 87, 205 and 507 landmarks", "5.5 to 9 times d_eff(λ)",
                  "within 5 % at 87 and 205 landmarks, 24 % above it at 30"):
        assert words in preset.about, words  # the text quotes what this test checks
    r = run(preset.spec)
    s, t = r.summaries, r.table
    assert (r.data["n_train"], r.data["n_test"], r.data["p"]) == (1496, 498, 99)
    assert (s["protocol"], s["trials"], s["eval_points"]) == ("paper", 10, 1496)
    sizes = t["s"][:6]
    np.testing.assert_array_equal(sizes, [10, 20, 50, 100, 200, 400])
    rls, uni, rff = (t[f"spectral_mean[{m}]"][:6] for m in ("recursive-rls", "uniform", "rff"))
    assert np.all(rls < uni)
    above = uni[:3] / rls[:3] - 1
    assert (round(100 * above.min()), round(100 * above.max())) == (14, 31)  # 14–31 % up to 50
    assert round(uni[-1] / rls[-1], 1) == 2.2 and round(uni[-1], 1) == 1.1
    assert round(rls[-1], 2) == 0.50                              # 1.1 against 0.50 at 400
    ratio = rff / rls
    assert (round(ratio.min()), round(ratio.max())) == (6, 91)    # 6 to 91 times
    R, U, Z = (t[f"rmse_mean[{m}]"][:6] for m in ("recursive-rls", "uniform", "rff"))
    exact = s["rmse_exact"]
    assert round(exact, 3) == 0.137
    apart = np.abs(R / U - 1)
    assert round(100 * apart[1:].max(), 1) == 1.4                # at most 1.4 % from 20 on
    assert np.all(apart[3:] < 0.01)                               # < 1 % from 100 on
    assert 0 < R[-1] / exact - 1 < 0.01 and 0 < U[-1] / exact - 1 < 0.01  # within 1 % at 400
    assert round(100 * (Z[-1] / exact - 1), 1) == 1.3                # 1.3 % above
    # Algorithm 2: sizes, against d_eff, the bound, on the fixed-budget curve
    lams = t[f"lam_bound[{FIXED_LAMBDA}]"][:4]
    np.testing.assert_array_equal(lams, [100, 30, 10, 3])
    got = t[f"s[{FIXED_LAMBDA}]"][:4]
    np.testing.assert_allclose(got, [30, 87, 205, 507], atol=0.5)
    d_eff = np.array([s[f"d_eff[λ={lam:g}]"] for lam in lams])
    assert np.all((got / d_eff > 5.5) & (got / d_eff < 9))
    assert s[f"bound_held[{FIXED_LAMBDA}]"] == 1.0
    err = t[f"spectral_mean[{FIXED_LAMBDA}]"][:4]
    inside = got <= sizes[-1]
    curve = np.exp(np.interp(np.log(got[inside]), np.log(sizes), np.log(rls)))
    off = err[inside] / curve - 1
    assert inside.tolist() == [True, True, True, False] and round(100 * off[0]) == 24
    assert np.all(np.abs(off[1:]) < 0.05)         # within 5 % at 87 and 205 landmarks
