"""Parameter specs, the registry, the krr-path experiment and the in-process runner."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.models import CenteredKernelRidge, KernelRidge
from kernel_lab.core.params import ParamSpec, resolve_params
from kernel_lab.core.progress import Cancelled, Progress
from kernel_lab.data.source import load_data
from kernel_lab.engine import run_experiment
from kernel_lab.experiments import get_experiment, list_experiments


def test_param_spec_coercion():
    spec = ParamSpec("lam", "float", 1.0, low=1e-9, high=1e3, log=True)
    assert spec.coerce("0.5") == 0.5
    with pytest.raises(ParameterError, match="≥ 1e-09"):
        spec.coerce("-1")
    with pytest.raises(ParameterError, match="must be a number"):
        spec.coerce("abc")
    assert ParamSpec("n", "int", 1).coerce("30") == 30
    with pytest.raises(ParameterError, match="whole number"):
        ParamSpec("n", "int", 1).coerce("2.5")
    assert ParamSpec("b", "bool", False).coerce("yes") is True
    kinds = ParamSpec("k", "choices", ["a"], choices=("a", "b", "c"))
    assert kinds.coerce("c,a") == ["c", "a"]
    assert ParamSpec("s", "float", None, allow_auto=True).coerce("auto") is None


def test_resolve_params_rejects_unknown_names_with_suggestion():
    specs = [ParamSpec("lam_min", "float", 1e-3)]
    with pytest.raises(ParameterError, match="did you mean 'lam_min'"):
        resolve_params(specs, {"lam_mn": 1}, owner="x")


def test_registry_lists_krr_path():
    names = [e.name for e in list_experiments()]
    assert "krr-path" in names
    with pytest.raises(ParameterError, match="did you mean 'krr-path'"):
        get_experiment("krr-pat")


def test_the_registry_lists_the_experiment_of_every_experiment_module():
    """Experiment modules do not register themselves (they do not import the registry);
    the registry lists each module's experiment class, and only those."""
    import importlib
    import inspect
    import pkgutil

    import kernel_lab.experiments as package
    from kernel_lab.experiments.base import Experiment
    from tests.test_layers import PART_SUFFIXES

    helpers = {"base", "plotspec", "registry"}
    found = set()
    modules = {info.name for info in pkgutil.iter_modules(package.__path__)}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name in helpers:
            continue
        suffix = next((s for s in PART_SUFFIXES if info.name.endswith(s)), None)
        if suffix:
            # a module of an experiment (its run on data kept in partitions, its cells,
            # nested trials, table, picture, cost model, summaries, the words of its
            # plots): no experiment class of its own, and its experiment exists
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            assert info.name.removesuffix(suffix) in modules, info.name
            assert not [c for _, c in inspect.getmembers(module, inspect.isclass)
                        if issubclass(c, Experiment) and c.__module__ == module.__name__]
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        classes = [c for _, c in inspect.getmembers(module, inspect.isclass)
                   if issubclass(c, Experiment) and c.__module__ == module.__name__]
        assert len(classes) == 1, (info.name, classes)
        found.add(classes[0])
    assert set(list_experiments()) == found
    assert len(found) == 6


def test_every_experiment_is_self_describing():
    for cls in list_experiments():
        info = cls.describe()
        json.dumps(info)
        assert info["description"] and info["plots"] and info["params"]
        assert any(p["name"] == "seed" for p in info["params"])
        defaults = cls.resolve({})
        load_data(cls.default_data, seed=defaults["seed"])


def test_krr_path_results_match_the_estimators():
    data = load_data("gaussian:n=150,p=10,n_test=300", seed=3)
    result = run_experiment("krr-path", {"kernel": "exponential", "n_lams": 7, "lam_min": 1e-2,
                                         "lam_max": 1e2, "seed": 3}, data=data)
    lams = result.table["lam"]
    np.testing.assert_allclose(lams, np.logspace(-2, 2, 7))
    for i in (0, 3, 6):
        for name, cls in (("krr", KernelRidge), ("ckrr", CenteredKernelRidge)):
            model = cls(lams[i], kernel="exponential").fit(data.X_train, data.y_train)
            mse = np.mean((model.predict(data.X_test) - data.y_test) ** 2)
            risk = np.mean((model.predict(data.X_test) - data.f_test) ** 2)
            train = np.mean((model.predict(data.X_train) - data.y_train) ** 2)
            assert result.table[f"test_mse_{name}"][i] == pytest.approx(mse, rel=1e-9)
            assert result.table[f"test_risk_{name}"][i] == pytest.approx(risk, rel=1e-9)
            assert result.table[f"train_mse_{name}"][i] == pytest.approx(train, rel=1e-9)
    best = int(np.argmin(result.table["test_mse_ckrr"]))
    assert result.summaries["lam_best_ckrr"] == pytest.approx(lams[best])
    # training error grows with λ
    assert np.all(np.diff(result.table["train_mse_ckrr"]) > 0)


def test_runner_is_reproducible_and_records_everything():
    a = run_experiment("krr-path", {"n_lams": 5, "seed": 11})
    b = run_experiment("krr-path", {"n_lams": 5, "seed": 11})
    for key in a.table:
        np.testing.assert_array_equal(a.table[key], b.table[key])
    doc = json.loads(a.to_json())
    assert doc["seed"] == 11 and doc["params"]["n_lams"] == 5
    assert doc["data"]["n_train"] == 400 and doc["versions"]["numpy"] == np.__version__
    assert set(doc["timings"]) == {"data_s", "run_s", "total_s"}
    c = run_experiment("krr-path", {"n_lams": 5, "seed": 12})
    assert not np.allclose(a.table["test_mse_krr"], c.table["test_mse_krr"])


def test_partial_results_stream_and_progress_is_monotone():
    partials, fractions = [], []
    run_experiment("krr-path", {"n_lams": 4}, on_partial=partials.append,
                   on_progress=lambda f, m: fractions.append(f))
    assert len(partials) == 3
    assert np.isnan(partials[1].table["test_mse_ckrr"]).all()  # KRR first, CKRR still pending
    assert np.isfinite(partials[2].table["test_mse_ckrr"]).all()
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


def test_cancellation_stops_the_run():
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(Cancelled):
        run_experiment("krr-path", {"n_lams": 4}, is_cancelled=cancelled)


def test_progress_sub_ranges():
    seen = []
    p = Progress(lambda f, m: seen.append(f)).sub(0.5, 1.0).sub(0.0, 0.5)
    p(0.5)
    assert seen == [0.625]


def test_lam_bounds_out_of_order():
    with pytest.raises(ParameterError, match="must be below"):
        run_experiment("krr-path", {"lam_min": 10, "lam_max": 1})


def _shifted_target_data():
    """A target far from 0 compared with its spread (as CASchools' test scores, about
    650 ± 19), on inputs where the kernel's test rows are small: plain KRR shrinks towards
    0 and does worse than predicting the training mean."""
    from kernel_lab.core.rows.dataset import Dataset

    rng = np.random.default_rng(0)
    X, Xt = rng.normal(size=(150, 30)), rng.normal(size=(200, 30))

    def f(A):
        return 650 + 19 * np.sin(A[:, 0]) + 8 * A[:, 1]

    y, yt = f(X) + 5 * rng.normal(size=150), f(Xt) + 5 * rng.normal(size=200)
    return Dataset(X, y, Xt, yt, [f"x{i}" for i in range(30)], "score", name="shifted")


def test_krr_path_compares_with_predicting_the_mean_and_says_when_krr_loses():
    data = _shifted_target_data()
    r = run_experiment("krr-path", {}, data=data)
    s, t = r.summaries, r.table
    mean_mse = float(np.mean((data.y_train.mean() - data.y_test) ** 2))
    assert s["test_mse_mean"] == pytest.approx(mean_mse, rel=1e-12)
    np.testing.assert_allclose(t["test_mse_mean"], mean_mse, rtol=1e-12)
    assert s["test_mse_min_krr"] > mean_mse > s["test_mse_min_ckrr"]  # the situation
    note = s["worse_than_mean_krr"]
    assert f"{s['test_mse_min_krr']:.4g}" in note and f"{mean_mse:.4g}" in note
    assert "CKRR" in note and "centre the target" in note
    assert "worse_than_mean_ckrr" not in s
    plot = get_experiment("krr-path").plots[0]
    assert "test_mse_mean" in [c.series for c in plot.curves]
    assert "predicting the training mean" in get_experiment("krr-path").description
    # a target centred near 0: KRR beats the mean and nothing is said
    r = run_experiment("krr-path", {"n_lams": 10})
    assert r.summaries["test_mse_min_krr"] < r.summaries["test_mse_mean"]
    assert not any(k.startswith("worse_than_mean") for k in r.summaries)
