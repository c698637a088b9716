"""Experiment ``krr-path``: training and test error of KRR and CKRR along a λ grid."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from kernel_lab.core.kernels import ShiftInvariantKernel
from kernel_lab.core.models import CenteredKernelRidge, KernelRidge
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.experiments.base import (
    SERIAL,
    Experiment,
    ModelChoice,
    PartialResult,
    PlotSpec,
    TaskExecutor,
    build_kernel,
    indefinite_text,
    kernel_param_specs,
    lam_grid,
    lam_specs,
    row_index,
    singular_bound,
)
from kernel_lab.experiments.plotspec import Curve

METHODS = {"krr": KernelRidge, "ckrr": CenteredKernelRidge}


def _worse_than_mean(method: str, best: float, lam: float, mean_mse: float, y_mean: float,
                     y_std: float) -> str:
    """What to say when a method's best test error on the grid is no better than predicting
    the training mean, and what to do about it."""
    head = (f"{method.upper()} at its best λ ({lam:.3g}) has test mse {best:.4g}, no better "
            f"than predicting the training mean ({mean_mse:.4g})")
    if method == "krr":
        return (f"{head}: plain KRR shrinks towards 0, and the target's mean ({y_mean:.4g}) "
                f"is {abs(y_mean) / max(y_std, 1e-300):.3g} standard deviations "
                f"({y_std:.3g}) from 0; use CKRR (an unpenalised intercept), or centre the "
                "target (fit y − ȳ and add ȳ back)")
    return (f"{head}: no λ on the grid makes these features predict the target better than "
            "its mean; widen the λ range or try another kernel or bandwidth")


#: Relative fall of the test error over the last grid step below which the curve counts
#: as levelled off at an end of the grid: a wider λ range would change the best error little.
LEVEL_REL = 1e-3


def _edge_note(lams: np.ndarray, mse: np.ndarray, evaluated: np.ndarray, best: int) -> str:
    """What to say when the best λ is the first or last grid point whose error was
    evaluated (``evaluated``: their indices): widen the range if the error still falls
    into that end by more than :data:`LEVEL_REL` over the last step, else that it has
    levelled off there; and whether the end is the grid's or that of the finite errors."""
    low = best == evaluated[0]
    inner = int(evaluated[1] if low else evaluated[-2])
    fall = float((mse[inner] - mse[best]) / mse[best])
    end = "smallest" if low else "largest"
    if best not in (0, lams.size - 1):  # errors beyond it are not finite (an overflow)
        return (f"the best λ ({lams[best]:.3g}) is the {end} with a finite test error; "
                f"the errors beyond it overflowed")
    if fall > LEVEL_REL:
        return (f"the best λ is the {end} of the grid ({lams[best]:.3g}), and the test error "
                f"still falls towards it ({mse[inner]:.4g} → {mse[best]:.4g} over the last "
                f"step); widen the λ range {'below' if low else 'above'} {lams[best]:.3g}")
    return (f"the test error levels off at the {end} λ of the grid ({lams[best]:.3g}): it "
            f"changes by {100 * abs(fall):.2g} % over the last step, so a wider λ range "
            f"would change it little")


class KrrPathExperiment(Experiment):
    name = "krr-path"
    title = "KRR and CKRR along the λ path"
    description = (
        "Kernel ridge regression (KRR) fits f̂(s) = κ(s)ᵀ(K + λI)⁻¹y; centered KRR (CKRR) adds "
        "an unpenalised intercept, i.e. it centres the kernel matrix, K_c = PKP. This "
        "experiment shows the training and test error of both along a grid of λ. Small λ "
        "interpolates the training data (training error → 0, test error up: overfitting); "
        "large λ shrinks the fit towards a constant (both errors up: underfitting). KRR "
        "shrinks towards 0, CKRR towards the mean of y, so when the target has a non-zero "
        "mean the two differ most at large λ. The test error of predicting the training "
        "mean ȳ for every point is drawn as a baseline: a model that does not beat it has "
        "learnt nothing. Plain KRR can lose to it at every λ when the target's mean is far "
        "from 0 compared with its spread (test scores around 650 ± 19, say), because it "
        "shrinks towards 0 wherever the kernel rows are small; the results then say so, "
        "and the fix is CKRR, or centring the target (fit y − ȳ, add ȳ back). Each whole "
        "curve costs a single "
        "eigendecomposition of the n×n kernel matrix. On synthetic data the risk against the "
        "noiseless target f is shown as well. A kernel that is not positive definite (the "
        "sigmoid) makes K + λI singular for λ up to its most negative eigenvalue's size: "
        "those points are crossed out, and the best λ is chosen above them."
    )
    params = (
        *kernel_param_specs("gaussian"),
        *lam_specs(),
    )
    plots = (
        PlotSpec("Test error against λ", "lam",
                 (Curve("test_mse_krr", "measured", "test mse (KRR)", star=True, color="KRR"),
                  Curve("test_mse_ckrr", "measured", "test mse (CKRR)", star=True,
                        color="CKRR"),
                  Curve("test_risk_krr", "reference", "test risk (KRR)", star=True,
                        color="KRR"),
                  Curve("test_risk_ckrr", "reference", "test risk (CKRR)", star=True,
                        color="CKRR"),
                  Curve("test_mse_mean", "baseline", "predicting ȳ (train mean)"),
                  Curve("test_mse_indefinite_krr", "flag", "K + λI near singular",
                        note="KRR: e_min {K_min_eig_krr:.3g}", color="KRR"),
                  Curve("test_mse_indefinite_ckrr", "flag", "K_c + λI near singular",
                        note="CKRR: e_min {K_min_eig_ckrr:.3g}", color="CKRR")),
                 xlabel="λ", ylabel="mean squared error", logx=True, logy=True,
                 positive=True),
        PlotSpec("Training error against λ", "lam",
                 (Curve("train_mse_krr", "measured", "train mse (KRR)", star=True,
                        color="KRR"),
                  Curve("train_mse_ckrr", "measured", "train mse (CKRR)", star=True,
                        color="CKRR")),
                 xlabel="λ", ylabel="mean squared error", logx=True, logy=True,
                 positive=True),
    )
    default_data = "gaussian:n=400,p=20,f=sin,noise=0.5"

    def estimate(self, params: Mapping[str, Any], n: int, p: int) -> dict[str, Any]:
        return {"memory_bytes": 3 * 8 * n * n, "flops": 2 * (9.0 * n**3 + 2.0 * n * n * p),
                "note": f"one {n}×{n} eigendecomposition per method"}

    @staticmethod
    def _best(summaries: dict[str, Any], method: str, lams: np.ndarray, mse: np.ndarray,
              reliable: np.ndarray, bound: float | None, mean_mse: float, y_mean: float,
              y_std: float) -> None:
        """The best λ among the ``reliable`` ones with a finite error (a flagged point's
        error means nothing), its error, and what to say about it: worse than the mean, the
        least above the flagged region (λ ≤ ``bound``), or at an end of the grid run — and
        then whether the error still falls towards that end (widen the range) or has
        levelled off there (:data:`LEVEL_REL`: a wider range would change it little)."""
        evaluated = np.flatnonzero(reliable & np.isfinite(mse))
        if evaluated.size == 0:
            summaries[f"note_{method}"] = "no λ of the grid gave a finite test error"
            return
        best = int(evaluated[np.argmin(mse[evaluated])])
        summaries[f"lam_best_{method}"] = float(lams[best])
        summaries[f"test_mse_min_{method}"] = float(mse[best])
        if mse[best] >= mean_mse:
            summaries[f"worse_than_mean_{method}"] = _worse_than_mean(
                method, float(mse[best]), float(lams[best]), mean_mse, y_mean, y_std)
        if best > 0 and not reliable[best - 1]:
            summaries[f"note_{method}"] = (
                f"the best λ is the least above the region flagged singular "
                f"(λ ≤ {bound:.3g}); the errors below it are not to be trusted")
        elif best in (evaluated[0], evaluated[-1]) and evaluated.size > 1:
            summaries[f"note_{method}"] = _edge_note(lams, mse, evaluated, best)

    def run(self, params: Mapping[str, Any], data: Dataset, progress: Progress,
            executor: TaskExecutor = SERIAL) -> Iterator[PartialResult]:
        lams = lam_grid(params["lam_min"], params["lam_max"], params["n_lams"])
        summaries: dict[str, Any] = {}
        kernel = build_kernel(params, data.X_train, rows=row_index(data))
        if isinstance(kernel, ShiftInvariantKernel):
            summaries["sigma"] = kernel.sigma
        summaries["kernel"] = kernel.spec()

        nan = np.full(lams.size, np.nan)
        # the baseline every model must beat: the training mean for every test point
        y_mean = float(np.mean(data.y_train))
        mean_mse = float(np.mean((data.y_test - y_mean) ** 2))
        summaries["test_mse_mean"] = mean_mse
        table: dict[str, np.ndarray] = {"lam": lams, "test_mse_mean": np.full(lams.size,
                                                                              mean_mse)}
        keys = ["train_mse", "test_mse"] + (["test_risk"] if data.f_test is not None else [])
        for method in METHODS:
            for key in keys:
                table[f"{key}_{method}"] = nan.copy()
        yield PartialResult(0.02, f"kernel {kernel.spec()}: computing the λ path",
                            dict(table), dict(summaries))

        for i, (method, cls) in enumerate(METHODS.items()):
            progress(0.05 + 0.45 * i, f"{method.upper()}: eigendecomposition of the "
                                      f"{data.n_train}×{data.n_train} kernel matrix")
            path = cls(float(lams[0]), kernel=kernel).fit_path(data.X_train, data.y_train,
                                                               lams, data.X_test)
            table[f"train_mse_{method}"] = np.mean((path.train - data.y_train) ** 2, axis=1)
            table[f"test_mse_{method}"] = np.mean((path.test - data.y_test) ** 2, axis=1)
            if data.f_test is not None:
                table[f"test_risk_{method}"] = np.mean((path.test - data.f_test) ** 2, axis=1)
            matrix = "K_c" if method == "ckrr" else "K"
            e_min, e_max = float(path.eigvals.min()), float(path.eigvals.max())
            bound = singular_bound(e_min, e_max)
            reliable = np.ones(lams.size, dtype=bool) if bound is None else lams > bound
            if bound is not None:  # an indefinite kernel: the λ ≤ |e_min| points marked
                summaries[f"indefinite_{method}"] = indefinite_text(e_min, e_max, matrix)
                table[f"test_mse_indefinite_{method}"] = np.where(
                    ~reliable, table[f"test_mse_{method}"], np.nan)
                table[f"K_min_eig_{method}"] = np.full(lams.size, e_min)
            if reliable.any():
                self._best(summaries, method, lams, table[f"test_mse_{method}"], reliable,
                           bound, mean_mse, y_mean, float(np.std(data.y_train)))
            else:  # no λ of the grid lies above the flagged region: no best λ to report
                summaries[f"note_{method}"] = (
                    f"every λ of the grid lies where {matrix} + λI is flagged singular "
                    f"(λ ≤ {bound:.3g}): no best λ is given; widen the λ range above "
                    f"{bound:.3g}")
            yield PartialResult(0.5 * (i + 1), f"{method.upper()} path done",
                                dict(table), dict(summaries))

    def best_models(self, params: Mapping[str, Any], data: Dataset,
                    table: Mapping[str, np.ndarray], summaries: Mapping[str, Any],
                    progress: Progress) -> list[ModelChoice]:
        """KRR and CKRR at their starred λ — the least test error of the ``test mse``
        curves (``lam_best_krr`` / ``lam_best_ckrr``) — with the run's kernel, the better
        of the two first. Each is fitted on the run's training rows (all of them, as the
        run used) from one eigendecomposition at the grid's λ, as the run computed its
        curve, so its test error is the run's own figure (to rounding)."""
        lams = lam_grid(params["lam_min"], params["lam_max"], params["n_lams"])
        kernel = build_kernel(params, data.X_train, rows=row_index(data))
        choices = []
        for i, (method, cls) in enumerate(METHODS.items()):
            lam = summaries.get(f"lam_best_{method}")
            if lam is None:   # no λ of the grid was reliable: the run says why
                continue
            progress(0.5 * i, f"{method.upper()} at λ = {lam:.3g}")
            model = cls(float(lam), kernel=kernel)
            model.fit_path(data.X_train, data.y_train, [lam])
            notes = [f"λ = {lam:.6g}: the least test MSE of the run's {method.upper()} curve "
                     f"over its {lams.size} λ values, fitted on all {data.n_train:,} "
                     "training rows"]
            for key in (f"note_{method}", f"worse_than_mean_{method}"):
                if key in summaries:
                    notes.append(str(summaries[key]))
            choices.append(ModelChoice(
                f"{method.upper()} {kernel.spec()} λ={lam:.3g}", model,
                float(summaries[f"test_mse_min_{method}"]), "test MSE",
                {"method": method, "kernel": kernel.spec(), "lam": float(lam),
                 **({"sigma": kernel.sigma} if isinstance(kernel, ShiftInvariantKernel)
                    else {})}, notes))
        choices.sort(key=lambda c: c.test_error)
        return choices
