"""What a run marks best, fitted to be kept (``Experiment.best_models``): for every
experiment a small run, then its models, whose predictions on the data set's own test
rows give the run's own test error — to a tolerance that follows from how each model
is computed, said at each test.

The data set is opened again from its source with the run's seed, as an export does:
the same split, the same standardisation, the same rows (in memory or kept in Parquet
partitions)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kernel_lab.core.models import CenteredKernelRidge, KernelRidge, NystromRidge
from kernel_lab.core.models.dsg import DSGClassifier, DSGRegressor
from kernel_lab.core.models.gfc import GreedyFeatureRegressor
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import blocks
from kernel_lab.data.source import DataSource
from kernel_lab.engine.runner import RunResult, run_experiment
from kernel_lab.experiments import ModelChoice, get_experiment

EPS = np.finfo(float).eps


def best(spec: str, result: RunResult) -> tuple[list[ModelChoice], object]:
    """The run's models, from its data opened again with its seed, and that data set."""
    data = DataSource.from_spec(spec).open(result.seed, Progress(None))
    choices = get_experiment(result.experiment).best_models(
        result.params, data, result.table, result.summaries, Progress(None))
    return choices, data


def mse(model, data) -> float:
    return float(np.mean((model.predict(data.X_test) - data.y_test) ** 2))


def rmse(model, data) -> float:
    return math.sqrt(mse(model, data))


@pytest.fixture(scope="module")
def table_csv(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A small table as R's write.csv writes one: a row-name column, a text column."""
    rng = np.random.default_rng(11)
    n = 160
    x = rng.normal(size=(n, 3))
    kind = rng.choice(["a", "b", "c"], size=n)
    price = 20 + 3 * np.sin(x[:, 0]) + x[:, 1] + (kind == "b") * 2 + 0.3 * rng.normal(size=n)
    frame = pd.DataFrame({"": np.arange(1, n + 1), "x1": x[:, 0], "x2": x[:, 1],
                          "x3": x[:, 2], "kind": kind, "price": price})
    path = tmp_path_factory.mktemp("best") / "table.csv"
    frame.to_csv(path, index=False)
    return f"{path}:target=price"


def test_krr_path_exports_krr_and_ckrr_at_their_starred_lambda(table_csv) -> None:
    result = run_experiment("krr-path", {"n_lams": 15, "seed": 4}, data=table_csv)
    choices, data = best(table_csv, result)
    assert [type(c.estimator) for c in choices] in ([CenteredKernelRidge, KernelRidge],
                                                    [KernelRidge, CenteredKernelRidge])
    assert choices[0].test_error <= choices[1].test_error  # the better one is the default
    for choice in choices:
        method = choice.params["method"]
        curve = result.table[f"test_mse_{method}"]
        star = int(np.nanargmin(curve))
        assert choice.params["lam"] == result.table["lam"][star]
        assert choice.test_error == curve[star]
        assert choice.estimator.kernel_.sigma == result.summaries["sigma"]
        # the model comes from the eigendecomposition the curve came from; only the order
        # of the sums of its prediction differs (a matrix–vector product against a column
        # of a matrix–matrix one): a few eps relative per prediction
        assert mse(choice.estimator, data) == pytest.approx(choice.test_error, rel=1e-10)
        assert choice.error_name == "test MSE" and choice.notes


def test_ckrr_risk_exports_one_fit_and_says_the_run_figure_is_a_mean() -> None:
    spec = "gaussian:n=120,p=40,noise=0.5,f=sin"
    params = {"trials": 3, "n_test": 200, "n_lams": 12, "kernels": ["linear", "polynomial"],
              "seed": 2}
    result = run_experiment("ckrr-risk", params, data=spec)
    (choice,), data = best(spec, result)
    name = min(params["kernels"], key=lambda k: result.summaries[f"R_test_min_emp[{k}]"])
    assert isinstance(choice.estimator, CenteredKernelRidge)
    assert choice.params["lam"] == result.summaries[f"lam_best_emp[{name}]"]
    assert choice.params["kernel"].startswith(name)
    assert any("mean over fits" in note for note in choice.notes)
    # no trial's fit is on the data set's rows: the run's own number for this very fit is
    # krr-path's CKRR curve on the same data, kernel and λ grid (the same eigendecomposition)
    path = run_experiment("krr-path", {"kernel": name, "lam_min": params.get("lam_min", 1e-2),
                                       "lam_max": 1e2, "n_lams": 12, "seed": 2}, data=spec)
    at = int(np.flatnonzero(path.table["lam"] == choice.params["lam"])[0])
    assert choice.test_error == pytest.approx(path.table["test_mse_ckrr"][at], rel=1e-10)
    assert mse(choice.estimator, data) == pytest.approx(choice.test_error, rel=1e-12)


def _nystrom_tolerance(model: NystromRidge, data) -> float:
    """The exported model and the run's differ only in the basis of their features
    (Cholesky L⁻ᵀ against W^{-1/2}): rotations equal to a few eps, amplified in the
    coefficients by the condition number κ of the ridge system FᵀF_c + λI. So the test
    RMSEs agree to about κ·eps; 1000 κ eps leaves room for the sums over the rows."""
    F = model.features_.transform(data.X_train)
    F -= F.mean(axis=0)
    e = np.linalg.eigvalsh(F.T @ F)
    kappa = (e[-1] + model.lam) / (max(e[0], 0.0) + model.lam)
    return 1000 * kappa * EPS


@pytest.mark.parametrize("samplers, sizes", [
    (["uniform", "recursive-rls", "rp-cholesky"], "8,16,32"),   # uniform: nested trials
    (["recursive-rls-lambda"], "8"),                              # Algorithm 2
])
def test_nystrom_exports_the_median_trial_of_the_best_cell(samplers, sizes) -> None:
    spec = "clusters:n=500,k=4,imbalance=3,spread=0.1"
    params = {"samplers": samplers, "sizes": sizes, "rls_lams": "1,0.1", "trials": 3,
              "eval_points": 100, "seed": 3}
    result = run_experiment("nystrom", params, data=spec)
    (choice,), data = best(spec, result)
    name, model = choice.params["sampler"], choice.estimator
    curve = result.table[f"rmse_median[{name}]"]
    everyone = np.concatenate([result.table[f"rmse_median[{s}]"] for s in samplers])
    assert np.nanmin(curve) == np.nanmin(everyone)
    # an odd number of trials: the table's median is one trial's figure, and that trial's
    # figure (the run's own cell code) is the exported model's test error, bit for bit
    assert choice.test_error == np.nanmin(curve)
    assert isinstance(model, NystromRidge) and model.features_.landmark_indices_ is None
    assert model.features_.landmarks_.shape[0] == choice.params["landmarks"]
    assert rmse(model, data) == pytest.approx(choice.test_error,
                                              rel=_nystrom_tolerance(model, data))


def test_nystrom_paper_protocol_says_the_table_figure_is_a_mean() -> None:
    spec = "clusters:n=400,k=4,imbalance=3,spread=0.1"
    result = run_experiment("nystrom", {"samplers": ["uniform", "recursive-rls-fast"],
                                        "sizes": "10,20", "protocol": "paper", "seed": 1},
                            data=spec)
    (choice,), data = best(spec, result)
    name = choice.params["sampler"]
    assert choice.params["table_rmse"] == np.nanmin(result.table[f"rmse_mean[{name}]"])
    assert any("which no single fit has" in note for note in choice.notes)
    # the λ is the trial's own leave-one-out choice: the model's test RMSE is the trial's
    assert rmse(choice.estimator, data) == pytest.approx(
        choice.test_error, rel=_nystrom_tolerance(choice.estimator, data))


@pytest.fixture(scope="module")
def parquet_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(8)
    root = tmp_path_factory.mktemp("parts")
    for k, rows in enumerate((230, 170, 300)):   # unequal files
        X = rng.normal(size=(rows, 3))
        frame = pd.DataFrame(X, columns=["a", "b", "c"])
        frame["y"] = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 / 3 + 0.1 * rng.normal(size=rows)
        frame.to_parquet(root / f"part-{k}.parquet")
    return root


def test_nystrom_on_parquet_partitions_fits_where_the_rows_are(
        parquet_folder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "ROW_BLOCK", 128)   # canonical blocks across the files
    params = {"samplers": ["uniform", "recursive-rls"], "sizes": "10,25", "trials": 3,
              "eval_points": 100, "seed": 6}
    kept = f"{parquet_folder}:partitions=keep"
    result = run_experiment("nystrom", params, data=kept)
    assert result.summaries["partitions"] > 1
    (choice,), data = best(kept, result)
    assert not data.in_memory and len(data.parts.parts) > 1   # fitted on the partitions
    assert choice.test_error == np.nanmin(result.table[f"rmse_median[{choice.params['sampler']}]"])
    model = choice.estimator
    assert rmse(model, data) == pytest.approx(choice.test_error,
                                              rel=_nystrom_tolerance(model, data))
    # the same rows read whole: the same run, the same landmarks, the same coefficients
    whole = f"{parquet_folder}:partitions=load"
    (same,), _ = best(whole, run_experiment("nystrom", params, data=whole))
    np.testing.assert_array_equal(same.estimator.features_.landmarks_,
                                  model.features_.landmarks_)
    np.testing.assert_allclose(same.estimator.coef_, model.coef_, rtol=1e-8)


@pytest.mark.parametrize("spec", ["friedman:n=300,n_test=120", "breast-cancer",
                                  "digits:subsample=300"])
def test_learning_curve_exports_dsg_at_its_last_iteration(spec) -> None:
    params = {"n_iter": 40, "points": 4, "exact_max": 0, "seed": 2}
    result = run_experiment("learning-curve", params, data=spec)
    (choice, *baselines), data = best(spec, result)
    model = choice.estimator
    assert model.n_iter_ == result.summaries["n_iter"] == 40
    assert choice.test_error == result.table["dsg_test_error"][-1]
    if data.task == "regression":
        assert isinstance(model, DSGRegressor)
        # the run extends its test predictions block by block at each curve point, the
        # model sums every iteration's features at once: the same terms in another order
        assert mse(model, data) == pytest.approx(choice.test_error, rel=1e-12)
        # the squared loss in memory: the Nyström baseline at its largest count too, a
        # NystromRidge on the run's landmarks inside TransformedTargetRegressor
        (baseline,) = baselines
        errors = result.table["nystrom_test_error"]
        j = int(np.flatnonzero(np.isfinite(errors))[-1])
        assert baseline.test_error == errors[j]
        assert baseline.params["landmarks"] == result.table["n_features"][j]
        ridge = baseline.estimator.regressor_
        assert ridge.lam == pytest.approx(data.n_train * result.params["nu"], rel=1e-15)
        # the run's ridge comes from sums of kernel columns mapped by W^{-1/2}, the
        # model's from its own features (Cholesky basis): κ-amplified rounding
        assert mse(baseline.estimator, data) == pytest.approx(
            baseline.test_error, rel=_nystrom_tolerance(ridge, data))
    else:
        assert baselines == []   # no other loss has a baseline estimator
        # a misclassification rate: a count, equal unless a score sits within rounding
        # of the decision boundary
        assert isinstance(model, DSGClassifier)
        assert np.mean(model.predict(data.X_test) != data.y_test) == choice.test_error


def test_gfc_exports_its_learned_features_in_the_target_units() -> None:
    spec = "friedman:n=250,n_test=100"
    params = {"n_features": 15, "n_passes": 3, "methods": ["gfc", "rff-gaussian"],
              "points": 2, "bandwidths": 2, "seed": 1}
    result = run_experiment("gfc", params, data=spec)
    (choice,), data = best(spec, result)
    model = choice.estimator
    assert isinstance(model, GreedyFeatureRegressor)
    assert model.frequencies_.shape[0] == result.summaries["features_built[gfc]"]
    scale = choice.params["target_range"]
    assert scale == np.ptp(data.y_train)
    # the run's error is 100 RMSE on targets scaled to range 1; the model's output layer
    # maps to the target's units (one multiply-add per prediction)
    error = 100 * rmse(model, data) / scale
    assert error == pytest.approx(result.summaries["error[gfc]"], rel=1e-12)
    # without GFC among the methods there is nothing learned to keep
    result = run_experiment("gfc", {**params, "methods": ["rff-gaussian"]}, data=spec)
    assert best(spec, result)[0] == []


def test_spectrum_fits_no_model() -> None:
    spec = "gaussian:n=80,p=20"
    result = run_experiment("spectrum", {}, data=spec)
    assert best(spec, result)[0] == []
