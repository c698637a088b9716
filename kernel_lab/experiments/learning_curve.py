"""Experiment ``learning-curve``: doubly stochastic gradients against random-feature ridge
and exact kernel ridge, test error against iterations."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from kernel_lab.core.data import Dataset
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import resolve_bandwidth
from kernel_lab.core.losses import CLASSIFICATION_LOSSES, REGRESSION_LOSSES
from kernel_lab.core.models import (
    DSGClassifier,
    DSGRegressor,
    KernelRidge,
    NystromRidge,
    RFFRidge,
)
from kernel_lab.core.params import ParamSpec
from kernel_lab.core.progress import Progress
from kernel_lab.core.validation import check_seed
from kernel_lab.experiments.base import SERIAL, Experiment, PartialResult, PlotSpec, TaskExecutor
from kernel_lab.experiments.plotspec import Curve
from kernel_lab.experiments.registry import register


def checkpoints(n_iter: int, count: int) -> np.ndarray:
    """About ``count`` log-spaced iteration numbers from 1 to ``n_iter`` (distinct)."""
    pts = np.unique(np.round(np.logspace(0, math.log10(n_iter), count)).astype(int))
    return pts[(pts >= 1) & (pts <= n_iter)]


def loglog_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of log y against log x over the points with y > 0 (NaN if < 2)."""
    ok = np.isfinite(y) & (y > 0) & (x > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


@register
class LearningCurveExperiment(Experiment):
    name = "learning-curve"
    title = "Doubly stochastic gradients: learning curve"
    description = (
        "Doubly stochastic functional gradients (Dai et al.) train a kernel machine by SGD in "
        "which two things are random at every step: the data points (a mini-batch) and the "
        "random Fourier features that stand in for the kernel (a fresh block per iteration). "
        "Both randomisations keep the gradient unbiased, so with steps θ/(t + t0) the test "
        "error falls at the O(1/t) rate — a slope of −1 on these log–log axes for the excess "
        "error (the reported slope is measured over the last decade of iterations). The "
        "model is only the coefficients and a seed: the features are regenerated from "
        "(seed, iteration) when predicting, so memory grows as O(t), not O(n²). For "
        "comparison: ridge regression on the same number of random features drawn once "
        "(RFF), ridge on as many Nyström landmarks chosen by recursive leverage scores, and "
        "exact kernel ridge regression with matched regularisation λ = nν as the "
        "floor — all three minimise DSG's own objective: DSG subtracts the mean of the "
        "training targets and fits the rest without an intercept, so the floor is plain "
        "kernel ridge on y − ȳ, the limit DSG converges to. On classification data (two "
        "label values) the error is the misclassification rate; DSG then uses a "
        "classification loss, and the references stay ridge fits of the ±1 labels."
    )
    params = (
        ParamSpec("kernel", "choice", "gaussian", choices=("gaussian", "laplace", "cauchy"),
                  help="shift-invariant kernel (its spectral density drives the features)"),
        ParamSpec("sigma", "float", None, label="bandwidth σ", low=1e-12, high=1e12, log=True,
                  allow_auto=True, help="auto = median pairwise distance of the inputs"),
        ParamSpec("loss", "choice", "auto",
                  choices=("auto", *REGRESSION_LOSSES, *CLASSIFICATION_LOSSES),
                  help="auto = squared for regression, logistic for classification"),
        ParamSpec("nu", "float", 1e-3, label="ν", low=1e-12, high=1.0, log=True,
                  help="regulariser ν; exact KRR uses λ = n ν"),
        ParamSpec("theta", "float", None, label="θ", low=1e-9, high=1e12, log=True,
                  allow_auto=True, help="step θ/(t + t0); auto = 1/ν"),
        ParamSpec("t0", "float", None, low=0.0, high=1e12, allow_auto=True,
                  help="step offset; auto = θ"),
        ParamSpec("n_iter", "int", 1000, label="iterations", low=2, high=10_000_000),
        ParamSpec("batch_size", "int", 32, label="batch size", low=1, high=100_000),
        ParamSpec("features_per_iter", "int", 16, label="features per iteration", low=1,
                  high=100_000),
        ParamSpec("points", "int", 16, label="curve points", low=2, high=200,
                  help="log-spaced iterations at which the test error is measured"),
        ParamSpec("rff_max", "int", 1000, label="RFF features max", low=0, high=100_000,
                  help="RFF ridge is fitted at the curve points with at most this many "
                       "features (0: no RFF curve)"),
        ParamSpec("exact_max", "int", 4000, label="exact KRR up to n", low=0,
                  high=1_000_000, help="exact kernel ridge floor only for n up to this"),
    )
    plots = (
        PlotSpec("Test error against the number of features", "n_features",
                 (Curve("dsg_test_error", "measured", "DSG"),
                  Curve("rff_test_error", "baseline", "RFF ridge"),
                  Curve("nystrom_test_error", "baseline", "Nyström ridge (landmarks)"),
                  Curve("krr_test_error", "baseline", "exact KRR (λ = nν)")),
                 xlabel="random features (DSG: iterations × features per iteration; "
                        "RFF: drawn once; Nyström: landmarks)",
                 ylabel="test error", logx=True, logy=True),
        PlotSpec("Training loss (progressive, before each update)", "iteration",
                 (Curve("dsg_train_loss", "measured", "DSG"),), xlabel="iterations",
                 ylabel="loss", logx=True, logy=True),
    )
    default_data = "friedman:n=3000,n_test=1000"

    def estimate(self, params: Mapping[str, Any], n: int, p: int) -> dict[str, Any]:
        exact = n <= params.get("exact_max", 4000)
        return {"memory_bytes": 8 * (3 * n * n if exact else 0),
                "note": "exact KRR floor included" if exact else "no exact KRR (n too large)"}

    def run(self, params: Mapping[str, Any], data: Dataset, progress: Progress,
            executor: TaskExecutor = SERIAL) -> Iterator[PartialResult]:
        X, y, Xt, yt = data.X_train, data.y_train, data.X_test, data.y_test
        if data.n_test < 1:
            raise ParameterError("the learning curve needs a test set (test fraction > 0)")
        classify = data.task == "classification"
        loss = params["loss"]
        if loss == "auto":
            loss = "logistic" if classify else "squared"
        if classify != (loss in CLASSIFICATION_LOSSES):
            kind = "classification" if classify else "regression"
            raise ParameterError(f"the loss {loss!r} does not fit these {kind} data; "
                                 "choose loss=auto")
        n = data.n_train
        sigma = resolve_bandwidth(params["sigma"], X)
        nu = params["nu"]
        theta = params["theta"] or 1.0 / nu
        t0 = theta if params["t0"] is None else params["t0"]
        r = params["features_per_iter"]
        lam = n * nu

        def error(pred: np.ndarray, target: np.ndarray) -> float:
            if classify:
                return float(np.mean(np.sign(pred) != np.sign(target - np.mean(
                    np.unique(target)))))
            return float(np.mean((pred - target) ** 2))

        labels = np.unique(np.concatenate([y, yt]))
        y_pm = np.where(y == labels[-1], 1.0, -1.0) if classify else y
        yt_pm = np.where(yt == labels[-1], 1.0, -1.0) if classify else yt

        pts = checkpoints(params["n_iter"], params["points"])
        L = pts.size
        table = {"iteration": pts.astype(float), "samples_seen": pts * float(params[
            "batch_size"]), "n_features": pts * float(r)}
        for key in ("dsg_test_error", "dsg_train_loss", "rff_test_error", "nystrom_test_error",
                    "krr_test_error"):
            table[key] = np.full(L, np.nan)
        summaries: dict[str, Any] = {"task": "classification" if classify else "regression",
                                     "loss": loss, "sigma": sigma, "lam_exact": lam,
                                     "theta": theta, "t0": t0}

        # Every reference minimises DSG's own objective. In regression DSG subtracts the
        # fixed mean ȳ and fits f without intercept to ½ mean (f(x) − (y − ȳ))² + ν/2 ‖f‖²,
        # whose minimiser is plain KRR on y − ȳ with λ = nν (not centred KRR, whose
        # intercept is fitted jointly); the baselines are plain ridge on the features.
        # In classification DSG has no intercept; the references fit ±1 labels by ridge.
        shift = 0.0 if classify else float(np.mean(y))
        y_fit = y_pm - shift
        if n <= params["exact_max"]:
            progress(0.02, f"exact kernel ridge on {n} points (the floor)")
            krr = KernelRidge(lam, kernel=params["kernel"],
                              kernel_params={"sigma": sigma}).fit(X, y_fit)
            floor = error(krr.predict(Xt) + shift, yt_pm)
            table["krr_test_error"] = np.full(L, floor)
            summaries["krr_test_error"] = floor
        yield PartialResult(0.05, "training", dict(table), dict(summaries))

        cls = DSGClassifier if classify else DSGRegressor
        seed = check_seed(np.random.SeedSequence(params["seed"]))
        recent: list[float] = []

        def callback(info: dict[str, Any]) -> None:
            recent.append(info["train_loss"])

        model = cls(loss, kernel=params["kernel"], sigma=sigma, nu=nu, theta=theta, t0=t0,
                    n_iter=1, batch_size=params["batch_size"], n_features_per_iter=r,
                    cache_features=True, warm_start=True, callback=callback,
                    callback_every=1, random_state=seed)
        done = 0
        for k, t in enumerate(pts):
            recent.clear()
            model.set_params(n_iter=int(t - done))
            model.fit(X, y if classify else y_pm)
            done = int(t)
            pred = model.decision_function(Xt) if classify else model.predict(Xt)
            table["dsg_test_error"][k] = error(pred, yt_pm)
            table["dsg_train_loss"][k] = float(np.mean(recent))
            D = int(t * r)
            if 0 < D <= params["rff_max"]:
                rff = RFFRidge(lam, kernel=params["kernel"], sigma=sigma, n_components=D,
                               centered=False, random_state=seed).fit(X, y_fit)
                table["rff_test_error"][k] = error(rff.predict(Xt) + shift, yt_pm)
                if D <= n:
                    nys = NystromRidge(lam, kernel=params["kernel"],
                                       kernel_params={"sigma": sigma}, n_components=D,
                                       centered=False, random_state=seed).fit(X, y_fit)
                    table["nystrom_test_error"][k] = error(nys.predict(Xt) + shift, yt_pm)
            frac = 0.05 + 0.95 * (t / pts[-1]) ** 2  # the cost grows with t²
            if k == L - 1:
                self._summarise(table, summaries)
            yield PartialResult(frac, f"iteration {t} of {pts[-1]}", dict(table),
                                dict(summaries))

    @staticmethod
    def _summarise(table: dict[str, np.ndarray], summaries: dict[str, Any]) -> None:
        it = table["iteration"]
        last = it >= it[-1] / 10.0
        err = table["dsg_test_error"]
        summaries["dsg_test_error"] = float(err[-1])
        summaries["slope_last_decade"] = loglog_slope(it[last], err[last])
        if "krr_test_error" in summaries:
            excess = err - summaries["krr_test_error"]
            summaries["slope_excess_last_decade"] = loglog_slope(it[last], excess[last])
        rff = table["rff_test_error"]
        if np.isfinite(rff).any():
            k = int(np.flatnonzero(np.isfinite(rff))[-1])
            summaries["rff_test_error_at_max_features"] = float(rff[k])
            summaries["dsg_test_error_at_same_features"] = float(err[k])
