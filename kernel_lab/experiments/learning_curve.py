"""Experiment ``learning-curve``: doubly stochastic gradients against random features and
Nyström landmarks fitted with the same loss, and the exact minimiser of DSG's objective;
test error against the number of features, and the convergence to that minimiser."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg

from kernel_lab.core.data import Dataset
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import make_kernel, resolve_bandwidth
from kernel_lab.core.losses import CLASSIFICATION_LOSSES, MULTICLASS_LOSSES, REGRESSION_LOSSES
from kernel_lab.core.models import DSGClassifier, DSGRegressor, NystromFeatures
from kernel_lab.core.models.regularised import (
    SOLVABLE_LOSSES,
    fit_regularised,
    kernel_feature_map,
    objective,
)
from kernel_lab.core.models.rff import RandomFourierFeatures, cos_features
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


#: Above this many multiply-adds (n² D) the RFF baseline stops short of DSG's final
#: feature count (about 10 s on two cores).
RFF_GRAM_BUDGET = 2e11


def _loss_for(name: str, task: str) -> str:
    """The loss DSG uses: ``auto`` resolved, checked against the task."""
    if name == "auto":
        return {"regression": "squared", "classification": "logistic"}.get(task, "multinomial")
    if task == "multiclass" and name in ("logistic", "multinomial"):
        return "multinomial"
    fits = {"regression": REGRESSION_LOSSES,
            "classification": (*CLASSIFICATION_LOSSES, *MULTICLASS_LOSSES),
            "multiclass": MULTICLASS_LOSSES}[task]
    if name not in fits:
        raise ParameterError(f"the loss {name!r} does not fit these {task} data; "
                             "choose loss=auto")
    return name


def _rff_cap(requested: int | None, final: int, n: int) -> int:
    """RFF baseline features: as requested, or (auto) up to DSG's final count while the
    n × n Gram accumulation stays within :data:`RFF_GRAM_BUDGET`."""
    if requested is not None:
        return int(requested)
    return int(min(final, max(n, RFF_GRAM_BUDGET / max(n, 1) ** 2)))


class _Targets:
    """The data's targets as DSG fits them, and the test error of predicted scores."""

    def __init__(self, task: str, y: np.ndarray, yt: np.ndarray) -> None:
        self.task = task
        self.n_classes: int | None = None
        self.shift = 0.0
        if task == "classification":
            top = np.unique(np.concatenate([y, yt]))[-1]
            self.fit, self.test = np.where(y == top, 1.0, -1.0), np.where(yt == top, 1.0, -1.0)
            self.dsg_fit = y
        elif task == "multiclass":
            self.n_classes = int(max(y.max(), yt.max())) + 1
            missing = np.setdiff1d(np.arange(self.n_classes), y)
            if missing.size:
                raise ParameterError(f"class {int(missing[0])} has no training point; use a "
                                     "smaller test fraction or another seed")
            self.fit, self.test, self.dsg_fit = y, yt, y
        else:
            self.shift = float(np.mean(y))
            self.fit, self.test, self.dsg_fit = y - self.shift, yt, y

    def scores(self, model: Any, Xt: np.ndarray) -> np.ndarray:
        """DSG's scores on the test inputs, on the scale of ``fit``."""
        if self.task == "regression":
            return model.predict(Xt) - self.shift
        return model.decision_function(Xt)

    def error(self, scores: np.ndarray) -> float:
        """Misclassification rate, or mean squared error of the predictions."""
        if self.task == "multiclass":
            return float(np.mean(np.argmax(scores, axis=1) != self.test))
        if self.task == "classification":
            return float(np.mean(np.where(scores >= 0, 1.0, -1.0) != self.test))
        return float(np.mean((scores + self.shift - self.test) ** 2))


@dataclass(frozen=True)
class _Fit:
    test_scores: np.ndarray
    objective: float


def _fit_primal(F: np.ndarray, Ft: np.ndarray, y: np.ndarray, loss: str, nu: float,
                n_classes: int | None) -> _Fit:
    fit = fit_regularised(F, y, loss, nu, n_classes=n_classes)
    return _Fit(Ft @ fit.w, fit.objective)


def _fit_gram(G: np.ndarray, Gt: np.ndarray, y: np.ndarray, loss: str, nu: float,
              n_classes: int | None) -> _Fit:
    """Minimiser over the RKHS of the kernel with Gram matrix G (test block Gt)."""
    n = G.shape[0]
    if loss == "squared":  # f = G a with (G + nν I) a = y: one Cholesky, no eigenvectors
        A = G.copy()
        A[np.diag_indices(n)] += n * nu
        a = linalg.cho_solve(linalg.cho_factor(A), y)
        f = G @ a
        return _Fit(Gt @ a, objective(f, y, loss, nu, float(a @ f)))
    Phi, B = kernel_feature_map(G)
    fit = fit_regularised(Phi, y, loss, nu, n_classes=n_classes)
    return _Fit(Gt @ (B @ fit.w), fit.objective)


class _RFFBaseline:
    """Fits on the first D of one draw of random features, D growing over the curve. Up to
    n features the n × D matrix is used; beyond, the n × n Gram matrix is accumulated in
    feature blocks, continuing from the previous D (the n × D matrix is never formed)."""

    def __init__(self, rff: RandomFourierFeatures, X: np.ndarray, Xt: np.ndarray) -> None:
        self.W, self.b = rff.weights_, rff.offsets_
        self.X, self.Xt = X, Xt
        n, m = X.shape[0], Xt.shape[0]
        self.G, self.Gt = np.zeros((n, n)), np.zeros((m, n))  # Σ cos·cos, unscaled
        self.done = 0

    def _features(self, X: np.ndarray, start: int, stop: int) -> np.ndarray:
        return cos_features(X, self.W[:, start:stop], self.b[start:stop], 1.0)

    def fit(self, D: int, y: np.ndarray, loss: str, nu: float, n_classes: int | None) -> _Fit:
        n = self.X.shape[0]
        scale = 2.0 / D
        if D <= n:
            root = math.sqrt(scale)
            return _fit_primal(self._features(self.X, 0, D) * root,
                               self._features(self.Xt, 0, D) * root, y, loss, nu, n_classes)
        step = max(1, (1 << 22) // (n + self.Xt.shape[0]))
        for j in range(self.done, D, step):
            stop = min(j + step, D)
            Z = self._features(self.X, j, stop)
            self.G += Z @ Z.T
            self.Gt += self._features(self.Xt, j, stop) @ Z.T
        self.done = D
        return _fit_gram(self.G * scale, self.Gt * scale, y, loss, nu, n_classes)


class _Twin:
    """DSG's kernel twin h_t, the function Dai et al.'s analysis follows: the same sampled
    points and loss gradients l'(f_t(x), y), with the exact kernel in place of the random
    features, h ← (1 − γν) h − γ (1/B) Σ_b l'(f_t(x_b), y_b) k(x_b, ·). It lies in the
    RKHS, so its objective J(h_t) is defined (DSG's own f_t, a sum of cosines, has no
    RKHS norm); E‖h_t − f*‖² = O(1/t) and J(h_t) − J(f*) with it."""

    def __init__(self, n: int, n_classes: int | None, nu: float) -> None:
        self.a = np.zeros((n, n_classes) if n_classes else n)
        self.scale = 1.0
        self.nu = nu

    def step(self, index: np.ndarray, grad: np.ndarray, gamma: float) -> None:
        self.scale *= 1.0 - gamma * self.nu
        np.add.at(self.a, index, (-gamma / len(index)) * grad / self.scale)
        if self.scale < 1e-150:
            self.a *= self.scale
            self.scale = 1.0

    def objective(self, K: np.ndarray, y: np.ndarray, loss: str) -> float:
        a = self.a * self.scale
        f = K @ a
        return objective(f, y, loss, self.nu, float(np.sum(a * f)))


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
        "comparison, all minimising DSG's own objective mean l(f(x), y) + ν/2 ‖f‖² with "
        "DSG's loss: the same number of random features drawn once (RFF), as many Nyström "
        "landmarks chosen by recursive leverage scores, and the exact minimiser over the "
        "whole RKHS as the floor (the limit DSG converges to; with the squared loss it is "
        "plain kernel ridge on y − ȳ with λ = nν, since DSG subtracts the mean of the "
        "training targets and fits the rest without an intercept; with the logistic, hinge "
        "or multinomial loss it is the kernel logistic regression or SVM of the same ν, "
        "solved to machine precision). On two-class data the error is the "
        "misclassification rate; on data with more classes (digits) DSG uses the "
        "multinomial (softmax) loss with one score per class. The second plot shows the "
        "convergence the paper proves: the mean squared distance between DSG's function "
        "and the floor's on the test points falls like 1/t, and so does the excess "
        "objective J(h_t) − J(f*) of DSG's kernel twin h_t (the same steps with the exact "
        "kernel in place of the random features — the function the paper's analysis "
        "follows; DSG's own sum of cosines has no RKHS norm, so J(f_t) is undefined). The "
        "reported slopes are over the last two decades of iterations."
    )
    tasks = ("regression", "classification", "multiclass")
    params = (
        ParamSpec("kernel", "choice", "gaussian", choices=("gaussian", "laplace", "cauchy"),
                  help="shift-invariant kernel (its spectral density drives the features)"),
        ParamSpec("sigma", "float", None, label="bandwidth σ", low=1e-12, high=1e12, log=True,
                  allow_auto=True, help="auto = median pairwise distance of the inputs"),
        ParamSpec("loss", "choice", "auto",
                  choices=("auto", *REGRESSION_LOSSES, *CLASSIFICATION_LOSSES,
                           *MULTICLASS_LOSSES),
                  help="auto = squared for regression, logistic for two classes, "
                       "multinomial (softmax) for more"),
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
        ParamSpec("rff_max", "int", None, label="RFF features max", low=0, high=10_000_000,
                  allow_auto=True,
                  help="the RFF and Nyström baselines are fitted at the curve points with at "
                       "most this many features (0: none); auto = DSG's final count, or "
                       "fewer when the n × n accumulation would take more than ~10 s"),
        ParamSpec("exact_max", "int", 4000, label="exact floor up to n", low=0,
                  high=1_000_000, help="exact minimiser (the floor) only for n up to this"),
    )
    plots = (
        PlotSpec("Test error against the number of features", "n_features",
                 (Curve("dsg_test_error", "measured", "DSG"),
                  Curve("rff_test_error", "baseline", "RFF, same loss"),
                  Curve("nystrom_test_error", "baseline", "Nyström, same loss"),
                  Curve("krr_test_error", "baseline", "exact (the floor)")),
                 xlabel="features or landmarks (DSG: iterations × features per iteration)",
                 ylabel="test error", logx=True, logy=True, positive=True),
        PlotSpec("Convergence to the floor (DSG's objective)", "n_features",
                 (Curve("dsg_floor_distance", "measured",
                        "DSG: mean |f_t − f*|² (test)"),
                  Curve("dsg_twin_excess_objective", "estimate",
                        "kernel twin: J(h_t) − J*"),
                  Curve("nystrom_excess_objective", "baseline",
                        "Nyström: J − J*"),
                  Curve("rate_guide", "reference", "slope −1 (O(1/t))")),
                 xlabel="features or landmarks (DSG: iterations × features per iteration)",
                 ylabel="distance / excess objective", logx=True, logy=True),
        PlotSpec("Training loss (progressive, before each update)", "iteration",
                 (Curve("dsg_train_loss", "measured", "DSG"),), xlabel="iterations",
                 ylabel="loss", logx=True, logy=True),
    )
    default_data = "friedman:n=3000,n_test=1000"

    def estimate(self, params: Mapping[str, Any], n: int, p: int) -> dict[str, Any]:
        exact = n <= params.get("exact_max", 4000)
        T, B = params.get("n_iter", 1000), params.get("batch_size", 32)
        r, pts = params.get("features_per_iter", 16), params.get("points", 16)
        m = max(n // 3, 1)  # test points (a quarter of the rows)
        D = min(T * r, params.get("rff_max") or T * r)
        # DSG: iteration i evaluates B points on i·r features (a cosine each: B r (p + 20)
        # T² / 2 in all) plus a fixed cost per iteration, the test set once; the RFF
        # baselines accumulate an n × n Gram matrix over D features (n² D) and solve it
        # at each curve point (n³ / 3); the exact floor: ~2 n³ (one solve, or Newton)
        flops = (B * r * (p + 20) * T * T / 2 + 5e6 * T + m * r * T * (p + 20)
                 + 1.0 * n * n * D + pts * n**3 / 3 + (2.0 * n**3 if exact else 0.0))
        return {"memory_bytes": 8 * (4 * n * n if exact else 0), "flops": flops,
                "note": "exact floor included" if exact else "no exact floor (n too large)"}

    def run(self, params: Mapping[str, Any], data: Dataset, progress: Progress,
            executor: TaskExecutor = SERIAL) -> Iterator[PartialResult]:
        X, y, Xt, yt = data.X_train, data.y_train, data.X_test, data.y_test
        if data.n_test < 1:
            raise ParameterError("the learning curve needs a test set (test fraction > 0)")
        task = data.task
        loss = _loss_for(params["loss"], task)
        n = data.n_train
        sigma = resolve_bandwidth(params["sigma"], X)
        nu = params["nu"]
        theta = params["theta"] or 1.0 / nu
        t0 = theta if params["t0"] is None else params["t0"]
        r = params["features_per_iter"]
        targets = _Targets(task, y, yt)
        n_classes = targets.n_classes

        pts = checkpoints(params["n_iter"], params["points"])
        L = pts.size
        table = {"iteration": pts.astype(float), "samples_seen": pts * float(params[
            "batch_size"]), "n_features": pts * float(r)}
        for key in ("dsg_test_error", "dsg_train_loss", "rff_test_error", "nystrom_test_error",
                    "krr_test_error", "dsg_floor_distance", "dsg_twin_excess_objective",
                    "nystrom_excess_objective", "rate_guide"):
            table[key] = np.full(L, np.nan)
        summaries: dict[str, Any] = {"task": task, "loss": loss, "sigma": sigma,
                                     "lam_exact": n * nu, "theta": theta, "t0": t0}
        if n_classes:
            summaries["classes"] = n_classes
        rff_cap = _rff_cap(params["rff_max"], int(pts[-1] * r), n)
        summaries["rff_max_features"] = rff_cap

        # Every reference minimises DSG's own objective J(f) = mean l(f(x), y) + ν/2 ‖f‖²
        # with DSG's loss and targets: ±1 labels or class codes, and in regression y − ȳ
        # with ȳ fixed (DSG fits f without intercept), so in regression with the squared
        # loss the floor is plain KRR on y − ȳ with λ = nν, not centred KRR.
        solvable = loss in SOLVABLE_LOSSES
        if not solvable:
            summaries["floor_note"] = (f"no exact floor for the {loss} loss (solvable: "
                                       f"{', '.join(SOLVABLE_LOSSES)})")
        kernel = make_kernel(params["kernel"], {"sigma": sigma})
        floor: _Fit | None = None
        K = None
        if solvable and n <= params["exact_max"]:
            progress(0.02, f"exact kernel machine on {n} points (the floor)")
            K = kernel(X)
            floor = _fit_gram(K, kernel(Xt, X), targets.fit, loss, nu, n_classes)
            value = targets.error(floor.test_scores)
            table["krr_test_error"] = np.full(L, value)
            summaries["krr_test_error"] = value
            summaries["objective_floor"] = floor.objective
        yield PartialResult(0.05, "training", dict(table), dict(summaries))

        cls = DSGClassifier if task != "regression" else DSGRegressor
        seed = check_seed(np.random.SeedSequence(params["seed"]))
        recent: list[float] = []
        twin = _Twin(n, n_classes, nu) if K is not None else None

        def callback(info: dict[str, Any]) -> None:
            recent.append(info["train_loss"])
            if twin is not None:
                twin.step(info["batch_index"], info["batch_grad"], info["step"])

        model = cls(loss, kernel=params["kernel"], sigma=sigma, nu=nu, theta=theta, t0=t0,
                    n_iter=1, batch_size=params["batch_size"], n_features_per_iter=r,
                    cache_features=True, warm_start=True, callback=callback,
                    callback_every=1, random_state=seed)
        rff = _RFFBaseline(RandomFourierFeatures(
            params["kernel"], sigma=sigma, n_components=max(rff_cap, 1),
            random_state=seed).fit(X), X, Xt) if rff_cap else None
        done = 0
        for k, t in enumerate(pts):
            recent.clear()
            model.set_params(n_iter=int(t - done))
            model.fit(X, targets.dsg_fit)
            done = int(t)
            scores = targets.scores(model, Xt)
            table["dsg_test_error"][k] = targets.error(scores)
            table["dsg_train_loss"][k] = float(np.mean(recent))
            if floor is not None:
                table["dsg_floor_distance"][k] = float(np.mean(np.sum(
                    np.reshape((scores - floor.test_scores) ** 2, (len(Xt), -1)), axis=1)))
            if twin is not None and floor is not None:
                table["dsg_twin_excess_objective"][k] = (
                    twin.objective(K, targets.fit, loss) - floor.objective)
            D = int(t * r)
            if rff is not None and D <= rff_cap and solvable:
                fit = rff.fit(D, targets.fit, loss, nu, n_classes)
                table["rff_test_error"][k] = targets.error(fit.test_scores)
                if D <= n:
                    nys = NystromFeatures(params["kernel"], kernel_params={"sigma": sigma},
                                          n_components=D, random_state=seed).fit(X)
                    fit = _fit_primal(nys.transform(X), nys.transform(Xt), targets.fit, loss,
                                      nu, n_classes)
                    table["nystrom_test_error"][k] = targets.error(fit.test_scores)
                    if floor is not None:
                        table["nystrom_excess_objective"][k] = fit.objective - floor.objective
            frac = 0.05 + 0.95 * (t / pts[-1]) ** 2  # the cost grows with t²
            if k == L - 1:
                self._summarise(table, summaries)
            yield PartialResult(frac, f"iteration {t} of {pts[-1]}", dict(table),
                                dict(summaries))

    @staticmethod
    def _summarise(table: dict[str, np.ndarray], summaries: dict[str, Any]) -> None:
        it = table["iteration"]
        last = it >= it[-1] / 10.0
        window = it >= it[-1] / 100.0  # two decades, as the paper's rate is asymptotic
        dist = table["dsg_floor_distance"]
        if np.isfinite(dist).any():
            summaries["floor_distance_slope"] = loglog_slope(it[window], dist[window])
            table["rate_guide"] = dist[-1] * it[-1] / it
        twin = table["dsg_twin_excess_objective"]
        if np.isfinite(twin).any():
            summaries["excess_objective_slope"] = loglog_slope(it[window], twin[window])
            summaries["dsg_twin_excess_objective"] = float(twin[-1])
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
