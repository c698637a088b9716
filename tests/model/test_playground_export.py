"""The Playground's *Export model…*: the estimator exported for each method gives the
Playground's own fit (its training, test and grid values, computed by the Playground's
caches, not by the estimator) to 1e-10, and the metadata carries its test error,
parameters and inputs."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.models import DSGClassifier
from kernel_lab.engine.model_file import load_model
from kernel_lab.engine.worker import Worker
from kernel_lab.model.playground import PlaygroundModel
from kernel_lab.model.playground.export import (
    export_playground,
    export_request,
    playground_export_job,
)
from tests.model.qtfree import run_without_qt

#: method → the parameters and steps that make its fit
CASES = {
    "krr": ({"kernel": "gaussian", "sigma": 0.7, "lam": 0.05}, 0),
    "ckrr": ({"kernel": "laplace", "sigma": 1.3, "lam": 0.2}, 0),
    "nystrom": ({"kernel": "gaussian", "sigma": 0.6, "lam": 0.01, "s": 15,
                 "sampler": "recursive-rls"}, 0),
    "rff": ({"kernel": "gaussian", "sigma": 0.8, "lam": 0.03, "D": 40, "orthogonal": True}, 0),
    "rff-cauchy": ({"method": "rff", "kernel": "cauchy", "sigma": 0.8, "lam": 0.03, "D": 40}, 0),
    "dsg": ({"kernel": "gaussian", "sigma": 0.5, "nu": 1e-3}, 37),
    "gfc": ({}, 6),
}


def playground(dataset: str, method: str) -> PlaygroundModel:
    m = PlaygroundModel()  # its fits computed at once, completely (no quick answer)
    m.set_dataset(dataset, n=80, noise=0.25)
    params, steps = CASES[method]
    params = {"method": method, **params}
    method = params["method"]
    m.set_params(seed=3, **params)
    if steps:
        m.step(steps)
    assert m.latest is not None and not m.error and m.latest.primary.method == method
    return m


def function(pipeline: Pipeline):
    """The fitted function: DSG's classifier's decision function, else predict."""
    est = pipeline[-1]
    return pipeline.decision_function if isinstance(est, DSGClassifier) else pipeline.predict


@pytest.mark.parametrize("dataset", ["sine", "moons"])  # 1-D regression, 2-D classes
@pytest.mark.parametrize("method", list(CASES))
def test_the_exported_model_is_the_playgrounds_fit(tmp_path, dataset, method):
    m = playground(dataset, method)
    fit = m.latest
    r = fit.primary
    report = export_playground(**vars(export_request(m, tmp_path / "pg")))
    path = tmp_path / "pg.skops"
    assert report.path == path
    saved = load_model(path)  # the model file's own checks: version, trusted types
    (name, pipeline), = saved.models.items()
    assert report.names == [name] and isinstance(pipeline, Pipeline)
    f = function(pipeline)
    pts = m.points
    np.testing.assert_allclose(f(pts.X[~pts.test]), r.train, rtol=0, atol=1e-10)
    np.testing.assert_allclose(f(pts.X[pts.test]), r.test, rtol=0, atol=1e-10)
    np.testing.assert_allclose(f(fit.grid), r.grid, rtol=0, atol=1e-10)
    meta = saved.metadata
    info = meta["models"][name]
    assert info["test_error"] == pytest.approx(r.test_error, abs=1e-12)
    assert info["error_name"] == ("test MSE" if dataset == "sine" else "test error rate")
    assert info["params"]["method"] == r.method
    names = ["x"] if dataset == "sine" else ["x1", "x2"]
    assert meta["columns"] == [{"column": c, "kind": "number"} for c in names]
    assert meta["experiment"] == "playground" and meta["seed"] == 3
    assert meta["data"]["playground"] == dataset and meta["data"]["points"] == pts.n
    if r.method in ("krr", "ckrr", "nystrom", "rff"):
        assert f"λ={CASES[method][0]['lam']:g}" in name


def test_the_model_reads_new_points_by_column_name(tmp_path):
    import pandas as pd

    from kernel_lab.core.errors import DataError

    m = playground("moons", "krr")
    export_playground(**vars(export_request(m, tmp_path / "k.skops")))
    pipeline = load_model(tmp_path / "k.skops").model()
    X = m.points.X[~m.points.test][:5]  # five training points: the Playground's values
    frame = pd.DataFrame({"x2": X[:, 1], "x1": X[:, 0]})  # any order, by name
    np.testing.assert_allclose(pipeline.predict(frame), m.latest.primary.train[:5],
                               rtol=0, atol=1e-10)
    with pytest.raises(DataError, match="x2"):
        pipeline.predict(pd.DataFrame({"x1": X[:, 0]}))


def test_gfc_exports_the_features_it_built_when_it_stopped_early(tmp_path):
    m = playground("sine", "gfc")
    m.step(500)  # GFC stops at its last feature, before the steps asked for
    r = m.latest.primary
    assert r.extra["done"] and r.extra["features"] < m.steps
    report = export_playground(**vars(export_request(m, tmp_path / "g.skops")))
    pipeline = load_model(report.path).model(report.names[0])
    assert pipeline[-1].n_features_out_ == r.extra["features"]
    np.testing.assert_allclose(pipeline.predict(m.points.X[~m.points.test]), r.train,
                               rtol=0, atol=1e-10)


@pytest.mark.parametrize("method", ["dsg", "gfc"])
def test_a_stepped_method_before_its_first_step_is_refused(tmp_path, method):
    m = PlaygroundModel()
    m.set_params(method=method)
    with pytest.raises(ParameterError, match="Step or Play"):
        export_playground(**vars(export_request(m, tmp_path / "x.skops")))
    assert not (tmp_path / "x.skops").exists()


def test_too_few_training_points_are_refused(tmp_path):
    m = PlaygroundModel()
    m.set_dataset("paint-2d")
    m.add_points([[0.0, 0.0]], 1.0)
    with pytest.raises(ParameterError, match="two training points"):
        export_playground(**vars(export_request(m, tmp_path / "x.skops")))


def test_the_export_job_answers_on_the_worker(tmp_path):
    m = playground("sine", "krr")
    got: list = []
    worker = Worker(playground_export_job, inline=True)
    worker.submit(export_request(m, tmp_path / "k.skops"),
                  receive=lambda kind, *p: got.append((kind, p)))
    (kind, (report,)), = got
    assert kind == "finished" and report.path == tmp_path / "k.skops"
    worker.submit(export_request(PlaygroundModel(), tmp_path / "none.skops"),
                  receive=lambda kind, *p: got.append((kind, p)))
    m2 = PlaygroundModel()
    m2.set_dataset("paint-1d")
    worker.submit(export_request(m2, tmp_path / "none.skops"),
                  receive=lambda kind, *p: got.append((kind, p)))
    assert got[-1][0] == "failed" and "two training points" in got[-1][1][0]


def test_without_qt():
    run_without_qt(__file__)
