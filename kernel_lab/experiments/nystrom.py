"""Experiment ``nystrom``: landmark samplers compared on approximation error, time, kernel
evaluations and downstream ridge regression."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core.approx_error import residual_norm
from kernel_lab.core.data import Dataset
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.memory import check_allocation
from kernel_lab.core.models import CenteredKernelRidge
from kernel_lab.core.models.feature_ridge import feature_ridge
from kernel_lab.core.models.nystrom import NystromFeatures
from kernel_lab.core.models.rff import RFF_KERNELS, RandomFourierFeatures
from kernel_lab.core.params import ParamSpec
from kernel_lab.core.progress import Progress
from kernel_lab.core.samplers import SAMPLERS
from kernel_lab.experiments.base import (
    SERIAL,
    Experiment,
    PartialResult,
    PlotSpec,
    TaskExecutor,
    build_kernel,
    kernel_param_specs,
    pad_columns,
)
from kernel_lab.experiments.plotspec import Curve
from kernel_lab.experiments.registry import register


def parse_sizes(text: str, n: int) -> np.ndarray:
    """``'25, 50, 100'`` → sorted distinct landmark counts, each checked against n."""
    try:
        sizes = sorted({int(float(v)) for v in str(text).replace(";", ",").split(",")
                        if v.strip()})
    except ValueError:
        raise ParameterError(f"landmark counts {text!r} must be whole numbers separated by "
                             "commas, e.g. 25,50,100") from None
    if not sizes or sizes[0] < 1:
        raise ParameterError("landmark counts must be positive, e.g. 25,50,100")
    if sizes[-1] > n:
        raise ParameterError(f"s = {sizes[-1]} landmarks is more than the n = {n} training "
                             f"points; use counts up to {n}")
    return np.asarray(sizes)


@dataclass(frozen=True)
class CellTask:
    """One (sampler, s, trial) cell; picklable."""

    sampler: str
    s: int
    seed: np.random.SeedSequence
    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    eval_rows: np.ndarray
    K_eval: np.ndarray
    kernel: Kernel
    lam: float


#: Random Fourier features beside the landmark samplers, on the same axes (s features).
RANDOM_FEATURES = {"rff": False, "rff-orthogonal": True}


def run_cell(task: CellTask) -> dict[str, Any]:
    """Fit s Nyström features (landmark sampling and factorisation) or s random Fourier
    features, form the n × s factor F, and measure it: ‖K − FFᵀ‖₂ on the evaluation rows,
    tr(K − FFᵀ), the time to F, kernel evaluations, downstream test RMSE."""
    t0 = time.perf_counter()
    if task.sampler in RANDOM_FEATURES:
        kernel = task.kernel
        features: Any = RandomFourierFeatures(
            kernel.name, sigma=kernel.params()["sigma"], n_components=task.s,
            orthogonal=RANDOM_FEATURES[task.sampler], random_state=task.seed).fit(task.X)
    else:
        features = NystromFeatures(task.kernel, n_components=task.s, sampler=task.sampler,
                                   random_state=task.seed).fit(task.X)
    F = features.transform(task.X)
    seconds = time.perf_counter() - t0
    spectral = residual_norm(task.K_eval, F[task.eval_rows]).value
    trace = float(task.kernel.diag(task.X).sum() - np.einsum("ij,ij->", F, F))
    # downstream: ridge on the features with an unpenalised intercept (Nyström CKRR)
    coef, intercept = feature_ridge(F, task.y, task.lam)
    pred = features.transform(task.X_test) @ coef + intercept
    return {"spectral": spectral, "trace": trace, "time": seconds,
            "evals": getattr(features, "kernel_evaluations_", 0),
            "rmse": float(np.sqrt(np.mean((pred - task.y_test) ** 2))),
            "indices": getattr(features, "landmark_indices_", None),
            "scores": getattr(features, "scores_", None)}


def view_coordinates(X: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
    """2-D coordinates for the picture: the first two features or principal components."""
    if X.shape[1] == 1:
        return X[:, 0], np.zeros(X.shape[0])
    if how == "features" or X.shape[1] == 2:
        return X[:, 0], X[:, 1]
    Xc = X - X.mean(axis=0)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    P = Xc @ Vt[:2].T
    return P[:, 0], P[:, 1]


@register
class NystromExperiment(Experiment):
    name = "nystrom"
    title = "Nyström landmark samplers"
    description = (
        "The Nyström method approximates the n×n kernel matrix K from s landmark columns: "
        "K̃ = C W⁺ Cᵀ. Which landmarks matters. Uniform sampling treats every point alike. "
        "Ridge leverage scores l_i(λ) = (K(K + λI)⁻¹)_ii measure how unique a point is for "
        "the kernel: points in small isolated clusters, or anywhere when the kernel is "
        "narrow, have high scores. Recursive RLS (Musco & Musco) estimates them with O(ns) "
        "kernel evaluations and samples by them; its accelerated variant uses fewer "
        "landmarks on the recursive levels; randomly pivoted Cholesky picks each landmark "
        "with probability proportional to what the previous ones leave unexplained. "
        "Random Fourier features (plain and orthogonal), the data-independent alternative, "
        "are drawn on the same axes with as many features as landmarks: their error "
        "‖K − ZZᵀ‖₂ falls only like 1/√s, which is why the recursive-RLS paper compares "
        "against them. "
        "Plots: the spectral error ‖K − K̃‖₂ against s and against time, the downstream "
        "test RMSE of ridge regression on the features, and the data coloured by leverage "
        "score with the chosen landmarks marked. When does leverage sampling help? When "
        "the scores are far from uniform — small, tight clusters (spread well below σ), or "
        "a narrow kernel — uniform sampling misses whole regions and its error stalls, "
        "while RLS and RP-Cholesky keep improving. When the scores are nearly uniform "
        "(broad data, wide kernel) all samplers perform alike and uniform is cheapest. "
        "Downstream accuracy differs less than the spectral error does. The accelerated "
        "variant estimates the scores from only about √((ns + s³)/4n) landmarks per "
        "level (20 for n = 3000, s = 160), as the authors' code does: on imbalanced "
        "clusters it now and then misses a small cluster, so its error is heavy-tailed — "
        "a median of three trials can rise with s by chance; take ten or more."
    )
    params = (
        *kernel_param_specs("gaussian", ("gaussian", "laplace", "cauchy", "matern32",
                                         "matern52")),
        ParamSpec("samplers", "choices", ["uniform", "recursive-rls", "recursive-rls-fast",
                                          "rp-cholesky", "rff"],
                  choices=(*SAMPLERS, *RANDOM_FEATURES), label="samplers / features",
                  help="landmark samplers and random features to compare at s features each; "
                       "exact-rls forms the n×n matrix (small n only); rff-orthogonal needs "
                       "a rotation-invariant kernel (gaussian, matern)"),
        ParamSpec("sizes", "str", "10,20,40,80,160", label="landmark counts s",
                  help="comma-separated numbers of landmarks"),
        ParamSpec("trials", "int", 3, low=1, high=1000,
                  help="independent draws per (sampler, s); medians and quartiles reported"),
        ParamSpec("lam", "float", 1.0, label="λ (downstream ridge)", low=1e-12, high=1e12,
                  log=True, help="regularisation of the ridge regression on the features"),
        ParamSpec("eval_points", "int", 2000, label="error evaluation points", low=50,
                  high=20_000, help="the spectral error is measured on a random subset of at "
                                    "most this many training points (the paper uses 20k)"),
        ParamSpec("view", "choice", "pca", choices=("pca", "features"),
                  help="2-D picture: first two principal components or first two features"),
    )
    plots = (
        PlotSpec("Spectral error ‖K − K̃‖₂ against s", "s",
                 (Curve("spectral_median", "measured", "spectral error"),),
                 xlabel="landmarks s", ylabel="‖K − K̃‖₂ (median)", logx=True, logy=True),
        PlotSpec("Spectral error against time", "time_median[*]",
                 (Curve("spectral_median", "measured", "spectral error"),),
                 xlabel="seconds (sampling, factorisation and the n × s features)",
                 ylabel="‖K − K̃‖₂",
                 logx=True, logy=True),
        PlotSpec("Downstream test RMSE against s", "s",
                 (Curve("rmse_median", "measured", "test RMSE"),
                  Curve("rmse_exact", "baseline", "exact KRR")),
                 xlabel="landmarks s", ylabel="test RMSE", logx=True),
        PlotSpec("Data coloured by leverage score, landmarks marked", "view_x",
                 (Curve("view_y", "measured", "points (colour: score)"),),
                 xlabel="x₁ (or principal component 1)",
                 ylabel="x₂ (or principal component 2)", kind="scatter", color="view_score",
                 overlay=("landmark_x", "landmark_y"), overlay_label="landmarks"),
    )
    default_data = "clusters:n=3000,k=8,imbalance=3,spread=0.05"

    def estimate(self, params: Mapping[str, Any], n: int, p: int) -> dict[str, Any]:
        m = min(n, params.get("eval_points", 2000))
        exact = "exact-rls" in params.get("samplers", [])
        return {"memory_bytes": 8 * (m * m + (3 * n * n if exact else 0)),
                "note": f"spectral error on {m} of {n} points"}

    def run(self, params: Mapping[str, Any], data: Dataset, progress: Progress,
            executor: TaskExecutor = SERIAL) -> Iterator[PartialResult]:
        X, y, Xt, yt = data.X_train, data.y_train, data.X_test, data.y_test
        n = data.n_train
        if data.n_test < 1:
            raise ParameterError("the downstream error needs a test set (test fraction > 0)")
        sizes = parse_sizes(params["sizes"], n)
        samplers = list(params["samplers"])
        if "exact-rls" in samplers:
            check_allocation(3 * 8.0 * n * n, f"exact leverage scores on {n} points",
                             "Leave out the exact-rls sampler (use recursive-rls).")
        kernel = build_kernel(params, X)
        if "rff-orthogonal" in samplers and kernel.name not in ("gaussian", "matern32",
                                                                "matern52"):
            raise ParameterError(f"orthogonal random features need a rotation-invariant "
                                 f"kernel (gaussian, matern32, matern52), not {kernel.name}; "
                                 "leave rff-orthogonal out")
        if any(s in RANDOM_FEATURES for s in samplers) and kernel.name not in RFF_KERNELS:
            raise ParameterError(f"random features need a shift-invariant kernel, not "
                                 f"{kernel.name}")
        rng = np.random.default_rng(np.random.SeedSequence(params["seed"]).spawn(1)[0])
        m = min(n, params["eval_points"])
        eval_rows = np.sort(rng.choice(n, size=m, replace=False)) if m < n else np.arange(n)
        summaries: dict[str, Any] = {"kernel": kernel.spec(), "n": n, "eval_points": m}
        if m < n:
            summaries["note"] = (f"spectral error measured on a random subset of {m} of the "
                                 f"{n} training points")
        progress(0.01, f"kernel matrix of the {m} evaluation points")
        check_allocation(8.0 * m * m, f"the {m}×{m} evaluation kernel matrix",
                         "Lower eval_points.")
        K_eval = kernel(X[eval_rows])
        L = sizes.size
        table: dict[str, np.ndarray] = {"s": sizes.astype(float)}
        for name in samplers:
            for key in ("spectral_median", "spectral_q25", "spectral_q75", "trace_median",
                        "time_median", "evals_median", "rmse_median"):
                table[f"{key}[{name}]"] = np.full(L, np.nan)
        if n <= 5000:
            progress(0.02, "exact kernel ridge (downstream reference)")
            exact = CenteredKernelRidge(params["lam"], kernel=kernel).fit(X, y)
            rmse_exact = float(np.sqrt(np.mean((exact.predict(Xt) - yt) ** 2)))
            table["rmse_exact"] = np.full(L, rmse_exact)
            summaries["rmse_exact"] = rmse_exact
        vx, vy = view_coordinates(X, params["view"])
        yield PartialResult(0.03, "sampling", _with_view(table, vx, vy, None, None),
                            dict(summaries))

        seeds = iter(np.random.SeedSequence(params["seed"]).spawn(
            L * len(samplers) * params["trials"] + 1)[1:])
        cells = [(i, name) for i in range(L) for name in samplers]
        tasks = [CellTask(name, int(sizes[i]), next(seeds), X, y, Xt, yt, eval_rows, K_eval,
                          kernel, params["lam"])
                 for i, name in cells for _ in range(params["trials"])]
        results: dict[tuple[int, str], list[dict[str, Any]]] = {}
        view_scores = view_marks = None
        for done, (task, res) in enumerate(zip(tasks, executor.map(run_cell, tasks),
                                               strict=True), start=1):
            i = int(np.searchsorted(sizes, task.s))
            results.setdefault((i, task.sampler), []).append(res)
            self._fill(table, results, i, task.sampler)
            if view_scores is None and res["scores"] is not None \
                    and task.sampler != "rp-cholesky":
                # the picture: leverage-type scores and landmarks of the first (smallest)
                # landmark set of a leverage sampler, where individual landmarks stay visible
                view_scores, view_marks = res["scores"], res["indices"]
            summaries[f"evals_per_point_max_s[{task.sampler}]"] = (
                table[f"evals_median[{task.sampler}]"][i] / n)
            yield PartialResult(0.03 + 0.97 * done / len(tasks),
                                f"{task.sampler}, s = {task.s} ({done}/{len(tasks)})",
                                _with_view(table, vx, vy, view_scores, view_marks),
                                dict(summaries))

    @staticmethod
    def _fill(table: dict[str, np.ndarray], results: dict[tuple[int, str], list[dict]],
              i: int, name: str) -> None:
        cell = results[(i, name)]
        spectral = np.array([r["spectral"] for r in cell])
        table[f"spectral_median[{name}]"][i] = np.median(spectral)
        table[f"spectral_q25[{name}]"][i] = np.quantile(spectral, 0.25)
        table[f"spectral_q75[{name}]"][i] = np.quantile(spectral, 0.75)
        for key in ("trace", "time", "evals", "rmse"):
            table[f"{key}_median[{name}]"][i] = np.median([r[key] for r in cell])


def _with_view(table: dict[str, np.ndarray], vx: np.ndarray, vy: np.ndarray,
               scores: np.ndarray | None, marks: np.ndarray | None) -> dict[str, np.ndarray]:
    """The result table plus the 2-D picture's columns, padded to one length."""
    columns = dict(table)
    columns["view_x"], columns["view_y"] = vx, vy
    columns["view_score"] = np.full(vx.size, np.nan) if scores is None else scores
    columns["landmark_x"] = vx[marks] if marks is not None else np.zeros(0)
    columns["landmark_y"] = vy[marks] if marks is not None else np.zeros(0)
    return pad_columns(columns)
