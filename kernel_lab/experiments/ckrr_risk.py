"""Experiment ``ckrr-risk``: empirical risk of centered kernel ridge regression against
the random-matrix limit (Theorem 1) and the data-driven estimates (Lemma 1, Theorem 2)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import InnerProductKernel
from kernel_lab.core.models import CenteredKernelRidge
from kernel_lab.core.params import ParamSpec
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.core.synthetic import SyntheticSource
from kernel_lab.core.theory.ckrr import (
    DataSpectrum,
    LimitSetting,
    kernel_z,
    lemma1,
    limiting_risks,
    optimal_lam,
    theorem2_mean,
)
from kernel_lab.experiments.base import (
    FAMILIES,
    SERIAL,
    Experiment,
    ModelChoice,
    PartialResult,
    PlotSpec,
    TaskExecutor,
    indefinite_text,
    lam_grid,
    lam_specs,
    paper_kernels,
    row_index,
    singular_bound,
)
from kernel_lab.experiments.plotspec import Curve

#: What :func:`run_trial` returns per kernel, each on the λ grid plus the appended λ*.
TRIAL_CURVES = ("R_train", "R_test", "thm2", "lemma1")
#: The test-risk plot's marker at λ̂ (the median trial's Theorem 2 choice) and its cost in
#: % (the table holds them at λ̂'s grid row only).
CHOICE_SERIES = ("R_test_emp_at_thm2_choice", "thm2_choice_cost_pct")
#: The summaries of Theorem 2's choice, per kernel (the last four for an indefinite K_c).
CHOICE_SUMMARIES = ("lam_thm2_choice_median", "R_test_at_thm2_choice", "thm2_choice_cost_pct",
                    "lam_best_emp_outside_flagged", "R_test_min_emp_outside_flagged",
                    "thm2_choice_cost_pct_outside_flagged", "note_thm2_choice")


@dataclass(frozen=True)
class TrialTask:
    """One Monte Carlo trial; everything it needs, picklable.

    Synthetic mode draws a training set and a test sample of ``n_test`` points from
    ``source`` (or evaluates on ``(X_test, f_test)`` when given). A test sample of its own
    per trial matters: one sample shared by every trial offsets all the means by that
    sample's error (±3 % at 2000 points), which more trials do not remove.
    Real-data mode re-splits ``(X_all, f_all)`` and adds noise to the training responses:
    the trial's training rows are the ``n`` rows with the smallest keys of stream
    ``TRIAL_SUBSET + trial`` (:mod:`kernel_lab.core.rows.keys`, seed ``key_seed``) over
    their global indices ``rows_all``, its test rows the next ``n_test`` — the same rows
    wherever the data are held.
    """

    seed: np.random.SeedSequence
    kernels: dict[str, InnerProductKernel]
    lams: np.ndarray                  # grid, plus per-kernel λ* appended at the end
    noise: float
    n: int
    n_test: int
    source: SyntheticSource | None    # synthetic mode
    X_test: np.ndarray | None = None
    f_test: np.ndarray | None = None
    X_all: np.ndarray | None = None   # real-data mode: inputs and noiseless responses
    f_all: np.ndarray | None = None
    rows_all: np.ndarray | None = None  # real-data mode: the rows' global indices
    key_seed: int = 0
    trial: int = 0


def _mean_square_error(pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Row-wise mean of (pred − target)², in place in ``pred`` (no temporaries)."""
    pred -= target
    return np.einsum("ij,ij->i", pred, pred) / pred.shape[1]


@dataclass
class TrialResult:
    """One trial's curves per kernel (``R_train``, ``R_test``, ``thm2``, ``lemma1``) and
    the spectrum of its training data (for the estimators' λ* searches)."""

    curves: dict[str, dict[str, np.ndarray]]
    spectrum: DataSpectrum
    #: Per kernel: the least and the largest eigenvalue of the centred kernel matrix.
    eig_range: dict[str, tuple[float, float]] = field(default_factory=dict)


def trial_rows(seed: int, trial: int, rows: np.ndarray, n: int, n_test: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Positions of one real-data trial's training and test rows among ``rows`` (the
    rows' global indices): all rows in the order of their keys of stream
    ``TRIAL_SUBSET + trial``, the first ``n`` training, the next ``n_test`` test."""
    perm = rowkeys.order(seed, rowkeys.TRIAL_SUBSET + trial, rows)
    return perm[:n], perm[n: n + n_test]


def run_trial(task: TrialTask) -> TrialResult:
    """Draw (or re-split) data, fit CKRR along the λ grid for every kernel from one
    eigendecomposition each, and evaluate risks and estimators."""
    rng = np.random.default_rng(task.seed)
    white = None
    if task.source is not None:
        X, f, y = task.source.sample(task.n, rng)
        if task.X_test is None:  # a fresh test sample per trial: no shared-sample bias
            # Gaussian inputs x = Σ^{1/2}z: the kernel needs Xs Xᵀ = Zs (XΣ^{1/2})ᵀ only,
            # so the test inputs are never formed (their map is a fifth of a trial's flops)
            white = task.source.sample_white(task.n_test, rng)
            if white is None:
                Xs, fs, _ = task.source.sample(task.n_test, rng)
            else:
                Xs, fs = None, white[1]
        else:
            Xs, fs = task.X_test, task.f_test
    else:
        tr, te = trial_rows(task.key_seed, task.trial, task.rows_all, task.n, task.n_test)
        X, f = task.X_all[tr], task.f_all[tr]
        Xs, fs = task.X_all[te], task.f_all[te]
        y = f + np.sqrt(task.noise) * rng.standard_normal(task.n)
    spectrum = DataSpectrum.from_data(X, y)
    n, p = X.shape
    # τ = tr(Σ)/p: exact for synthetic data, estimated from the training set otherwise
    tau = spectrum.tau if task.source is None else float(task.source.law.cov_eigvals.mean())
    out: dict[str, dict[str, np.ndarray]] = {}
    eig_range: dict[str, tuple[float, float]] = {}
    X_sqrt = None if white is None else task.source.law.sqrt_apply(X)
    for name, kernel in task.kernels.items():
        # g(xₛᵀx/p) = g(zₛᵀ(Σ^{1/2}x)/p): the same kernel, on the white test draws
        K_test = None if white is None else kernel(white[0], X_sqrt)
        path = CenteredKernelRidge(1.0, kernel=kernel).fit_path(X, y, task.lams, Xs,
                                                                  check_input=False,
                                                                  K_test=K_test)
        del K_test
        r_train, r_test = _mean_square_error(path.train, f), _mean_square_error(path.test, fs)
        eig_range[name] = (float(path.eigvals.min()), float(path.eigvals.max()))
        z = kernel_z(kernel, task.lams, tau)
        m_hat, thm2 = spectrum.m_hat_and_theorem2(z, task.noise)
        out[name] = {
            "R_train": r_train,
            "R_test": r_test,
            "thm2": thm2,
            "lemma1": lemma1(r_train, z, task.lams, m_hat, p / n, kernel.dg0, task.noise),
        }
    return TrialResult(out, spectrum, eig_range)


def _flag_indefinite(table: dict[str, np.ndarray], summaries: dict[str, Any],
                     grid: np.ndarray, low: Mapping[str, float],
                     high: Mapping[str, float]) -> None:
    """A kernel whose centred matrix K_c has negative eigenvalues (the sigmoid kernel is
    not positive definite): K_c + λI is singular at λ = −e for each negative eigenvalue e,
    so for λ up to |e_min| the risks can explode. Said in the summaries and on the plot:
    those points are marked (``R_test_indefinite``) with the eigenvalue in the legend."""
    for name, e_min in low.items():
        text = indefinite_text(e_min, high[name], "K_c")
        if text is None:
            continue
        summaries[f"min_eigenvalue[{name}]"] = float(e_min)
        summaries[f"indefinite[{name}]"] = text
        near = grid <= -e_min
        table[f"R_test_indefinite[{name}]"] = np.where(
            near, table[f"R_test_emp_mean[{name}]"], np.nan)
        table[f"K_c_min_eig[{name}]"] = np.full(grid.size, e_min)


def _cost_pct(chosen: float, best: float) -> float:
    """``100 (chosen/best − 1)``, exactly 0 when the two differ by round-off only (the
    same risks summed in another order)."""
    if abs(chosen - best) <= 1e-12 * abs(best):
        return 0.0
    return float(100.0 * (chosen / best - 1.0))


def _drop_non_finite(summaries: dict[str, Any]) -> None:
    """A number that is not finite is no summary: it is replaced by a note saying why."""
    for key, value in list(summaries.items()):
        if isinstance(value, float) and not np.isfinite(value):
            del summaries[key]
            summaries[f"note_{key}"] = ("left out: not a finite number (the risks or the "
                                        "estimate overflow there)")


class CkrrRiskExperiment(Experiment):
    name = "ckrr-risk"
    title = "CKRR risk: empirical against the random-matrix limit"
    description = (
        "Centered kernel ridge regression with an inner-product kernel g(xᵀx'/p), trained on n "
        "points in dimension p. Dots: the empirical test and training risks (against the "
        "noiseless target f), averaged over independent Monte Carlo trials. Lines: the limits "
        "that random-matrix theory predicts when n and p grow together (Elkhalil et al., "
        "Theorem 1). Dashed: the Theorem 2 estimate of the test risk, computed from the "
        "training data alone; the diamond marks the λ it picks (median over trials), and the "
        "legend says what that choice costs in mean test risk against the best λ (for a kernel "
        "that is not positive definite, such as the sigmoid, the choice is made only among the "
        "λ above the region flagged as singular, and its cost also given against the best λ "
        "there). What to "
        "look for: λ and the kernel enter the limiting test risk "
        "only through z = −(λ + ν)/g'(0), so every kernel reaches the same minimum test risk, "
        "each at its own λ*. The estimate lets you pick λ without a validation set. The "
        "Lemma 1 estimate (its own plot) is unstable at small λ, as the paper warns, and "
        "agreement for non-linear kernels degrades at small λ (finite-size effects). On real "
        "data the response is taken as the noiseless f, noise is added and the data re-split "
        "per trial (training points: all of the training split, or n_train of them); there "
        "is no limit curve there, since Σ and f are unknown."
    )
    params = (
        ParamSpec("kernels", "choices", list(FAMILIES), choices=FAMILIES,
                  help="inner-product kernels to compare (one or several)"),
        ParamSpec("alpha", "float", None, label="α", low=-1e6, high=1e6, allow_auto=True,
                  help="scale in g(α t + β) for all chosen kernels; auto = the paper's (1)"),
        ParamSpec("beta", "float", None, label="β", low=-1e6, high=1e6, allow_auto=True,
                  help="shift for all chosen kernels; auto = the paper's (linear 1, polynomial "
                       "1, sigmoid −1, exponential 0)"),
        ParamSpec("degree", "int", 2, label="degree d", low=1, high=20,
                  when={"kernels": ("polynomial",)}, help="polynomial degree"),
        *lam_specs(1e-2, 1e2, 40),
        ParamSpec("trials", "int", 50, label="Monte Carlo trials", low=1, high=100_000,
                  help="independent draws of the training data (and noise)"),
        ParamSpec("n_test", "int", 2000, label="test points", low=1, high=10_000_000,
                  help="fresh test points drawn in every trial for the empirical test "
                       "risk; real-data mode uses the data's test split"),
        ParamSpec("noise", "float", 0.5, label="noise σ² (real data)", low=0.0, high=1e6,
                  help="real-data mode only: variance of the noise added to the response; "
                       "synthetic data use their generator's noise"),
        ParamSpec("n_train", "int", None, label="training points (real data)", low=2,
                  high=10_000_000, allow_auto=True,
                  help="real-data mode only: training points drawn afresh in every trial; "
                       "all the remaining points are test points. auto = the size of the "
                       "data's training split. Synthetic data use their generator's n"),
    )
    plots = (
        PlotSpec("Test risk against λ", "lam",
                 (Curve("R_test_limit", "limit", "limit", star=True),
                  Curve("R_test_emp_mean", "empirical", "empirical", spread="R_test_emp_std"),
                  Curve("R_test_thm2_mean", "estimate", "Theorem 2"),
                  Curve("R_test_emp_at_thm2_choice", "choice", "Theorem 2's λ, cost:",
                        note="{group} {thm2_choice_cost_pct:+.1f} %"),
                  Curve("R_test_indefinite", "flag", "K_c + λI near singular:",
                        note="{group}: e_min {K_c_min_eig:.3g}")),
                 xlabel="λ", ylabel="test risk", logx=True, positive=True),
        PlotSpec("Training risk against λ", "lam",
                 (Curve("R_train_limit", "limit", "limit", star=True),
                  Curve("R_train_emp_mean", "empirical", "empirical",
                        spread="R_train_emp_std")),
                 xlabel="λ", ylabel="training risk", logx=True, positive=True),
        PlotSpec("Lemma 1 estimate (unstable at small λ)", "lam",
                 (Curve("R_test_emp_mean", "empirical", "empirical"),
                  Curve("R_test_lemma1_mean", "estimate", "Lemma 1", dash="dot")),
                 xlabel="λ", ylabel="test risk", logx=True,
                 y_range_from=("R_test_emp_mean",)),
    )
    default_data = "gaussian:n=200,p=100,cov=toeplitz,rho=0.4,noise=0.5,f=sin"

    def estimate(self, params: Mapping[str, Any], n: int, p: int) -> dict[str, Any]:
        m = params.get("n_test", 2000)
        n = params.get("n_train") or n
        trials, kernels = params.get("trials", 1), len(params.get("kernels", [])) or 1
        r = min(n, p)  # the estimators: a Gram matrix (r×r) and its tridiagonal reduction
        flops = trials * (kernels * (9.0 * n**3 + 2.0 * n * n * p + 2.0 * m * n * p)
                          + n * p * r + 4.0 / 3.0 * r**3)
        return {"memory_bytes": 8 * (3 * n * n + m * (n + p) + p * p), "flops": flops,
                "note": f"{params.get('trials', 1)} trials × {len(params.get('kernels', []))} "
                        f"eigendecompositions of {n}×{n}"}

    def run(self, params: Mapping[str, Any], data: Dataset, progress: Progress,
            executor: TaskExecutor = SERIAL) -> Iterator[PartialResult]:
        grid = lam_grid(params["lam_min"], params["lam_max"], params["n_lams"])
        kernels = paper_kernels(params["kernels"], params)
        source = data.source
        synthetic = source is not None and source.law.cov_eigvals is not None
        n = data.n_train
        table: dict[str, np.ndarray] = {"lam": grid}
        summaries: dict[str, Any] = {"mode": "synthetic" if synthetic else "real data",
                                     "n": n, "p": data.p}
        nan = np.full(grid.size, np.nan)
        extra: dict[str, float] = {}

        if synthetic:
            noise = source.noise
            setting = LimitSetting.from_law(source.law, source.truth, noise, n)
            summaries.update(c=setting.c, tau=setting.tau, var_f=setting.var_f, noise=noise)
            table.update(self._limits(setting, kernels, grid))
            for name, kernel in kernels.items():
                opt = optimal_lam(lambda lam, k=kernel: limiting_risks(setting, k, lam)[1],
                                  grid[0], grid[-1], (grid, table[f"R_test_limit[{name}]"]))
                self._optimum(summaries, f"limit[{name}]", opt)
                extra[name] = opt.lam
            mins = [summaries[f"R_test_min_limit[{k}]"] for k in kernels]
            summaries["R_test_min_limit_spread"] = float(max(mins) - min(mins))
            n_test = params["n_test"]
            X_all = f_all = rows_all = None
        else:
            noise = params["noise"]
            if noise <= 0:
                raise ParameterError("real-data mode needs noise σ² > 0 (parameter noise)")
            X_all = np.concatenate([data.X_train, data.X_test])
            f_all = np.concatenate([data.y_train, data.y_test])
            rows_all = np.concatenate([row_index(data, "train"), row_index(data, "test")])
            n = params["n_train"] or n
            n_test = X_all.shape[0] - n
            if params["n_train"] is None and n_test < 1:
                raise ParameterError("real-data mode needs a test split (test fraction > 0)")
            if n_test < 1:
                raise ParameterError(f"n_train = {n} leaves no test point: the data have "
                                     f"{X_all.shape[0]} points; choose at most "
                                     f"{X_all.shape[0] - 1}")
            summaries.update(n=n, n_test=n_test, c=data.p / n, noise=noise)
        for name in kernels:
            for key in ("R_train_emp_mean", "R_train_emp_std", "R_test_emp_mean",
                        "R_test_emp_std", "R_test_thm2_mean", "R_test_lemma1_mean",
                        *CHOICE_SERIES):
                table[f"{key}[{name}]"] = nan.copy()
        yield PartialResult(0.02, "theory curves" if synthetic else "real-data mode: no limit",
                            dict(table), dict(summaries))

        lams = np.concatenate([grid, [extra.get(k, grid[0]) for k in kernels]])
        # every trial draws its own training and test points (synthetic mode): a test
        # sample shared by all trials would offset every mean by its own sampling error
        _, *seeds = np.random.SeedSequence(params["seed"]).spawn(params["trials"] + 1)
        tasks = (TrialTask(s, kernels, lams, noise, n, n_test, source if synthetic else None,
                           None, None, X_all, f_all, rows_all, int(params["seed"]), t)
                 for t, s in enumerate(seeds))
        total = params["trials"]
        # one row per trial, filled as trials arrive (no re-stacking per partial result)
        acc = {k: {key: np.empty((total, lams.size)) for key in TRIAL_CURVES} for k in kernels}
        spectra: list[DataSpectrum] = []
        eig_low = {k: np.inf for k in kernels}  # least eigenvalue of K_c over the trials
        eig_high = {k: 0.0 for k in kernels}
        for t, result in enumerate(executor.map(run_trial, tasks), start=1):
            spectra.append(result.spectrum)
            for name, (low, high) in result.eig_range.items():
                eig_low[name] = min(eig_low[name], low)
                eig_high[name] = max(eig_high[name], high)
            for name, curves in result.curves.items():
                for key, values in curves.items():
                    acc[name][key][t - 1] = values
            bounds = {k: singular_bound(eig_low[k], eig_high[k]) for k in kernels}
            self._fill(table, summaries, {k: {key: v[:t] for key, v in a.items()}
                                          for k, a in acc.items()},
                       grid, kernels, spectra, noise, synthetic, extra, bounds,
                       final=t == total)
            _flag_indefinite(table, summaries, grid, eig_low, eig_high)
            eig = source.law.cov_eigvals if synthetic else None
            if t == total and synthetic and np.allclose(eig, eig[0]):
                # Σ = sI (s = τ): eq. 26 in its form for a multiple of the identity
                self._eq26(summaries, spectra, kernels, noise, summaries["tau"])
            _drop_non_finite(summaries)
            yield PartialResult(0.05 + 0.95 * t / total, f"trial {t} of {total}",
                                dict(table), dict(summaries))

    def best_models(self, params: Mapping[str, Any], data: Dataset,
                    table: Mapping[str, np.ndarray], summaries: Mapping[str, Any],
                    progress: Progress) -> list[ModelChoice]:
        """CKRR with the kernel and the grid λ of the least mean empirical test risk
        (``R_test_min_emp`` / ``lam_best_emp`` per kernel: the minimum of the
        ``R_test_emp_mean`` curves), fitted once on the data set's training split.

        The run's figure is a mean over Monte Carlo trials, each fitted on rows of its
        own (fresh draws from the generator, or a re-split of a table with noise added
        to the training targets) and scored against the noiseless target: no single fit
        has it. The exported model is the fit a user keeps — the data set's training
        rows and targets as they are — and its test error is its own test MSE on the
        data set's test split (the value ``krr-path``'s CKRR curve gives at the same
        kernel and λ), the run's mean risk given in the notes."""
        kernels = paper_kernels(params["kernels"], params)
        ranked = sorted((summaries[f"R_test_min_emp[{k}]"], k) for k in kernels
                        if f"R_test_min_emp[{k}]" in summaries)
        if not ranked or data.n_test < 1:
            return []
        risk, name = ranked[0]
        lam = float(summaries[f"lam_best_emp[{name}]"])
        progress(0.0, f"CKRR {name} at λ = {lam:.3g} on the training split")
        model = CenteredKernelRidge(lam, kernel=kernels[name])
        model.fit_path(data.X_train, data.y_train, [lam])
        mse = float(np.mean((model.predict(data.X_test) - data.y_test) ** 2))
        trials = int(params["trials"])
        notes = [f"kernel {name} and λ = {lam:.6g}: the least mean empirical test risk "
                 f"({risk:.4g}) over {trials} Monte Carlo trial{'s' if trials > 1 else ''} "
                 "and the kernels compared; that figure is a mean over fits on rows of each "
                 "trial's own, against the noiseless target, which no single model has",
                 f"this model: fitted once on the data set's {data.n_train:,} training rows "
                 f"and targets; its test MSE {mse:.6g} is measured on the "
                 f"{data.n_test:,} test rows when exported"]
        return [ModelChoice(f"CKRR {kernels[name].spec()} λ={lam:.3g}", model, mse,
                            "test MSE (this fit, on the data's test split)",
                            {"method": "ckrr", "kernel": kernels[name].spec(), "lam": lam,
                             "R_test_min_emp": float(risk), "trials": trials}, notes)]

    def preview(self, params: Mapping[str, Any], data: Dataset) -> dict[str, np.ndarray] | None:
        """The limit curves alone (closed form, milliseconds): the window redraws them as
        the λ range or the kernels change, without a run. None on real data."""
        source = data.source
        if source is None or source.law.cov_eigvals is None:
            return None
        grid = lam_grid(params["lam_min"], params["lam_max"], params["n_lams"])
        setting = LimitSetting.from_law(source.law, source.truth, source.noise, data.n_train)
        return {"lam": grid, **self._limits(setting, paper_kernels(params["kernels"], params),
                                            grid)}

    # -- helpers --------------------------------------------------------------------
    @staticmethod
    def _limits(setting: LimitSetting, kernels: Mapping[str, InnerProductKernel],
                grid: np.ndarray) -> dict[str, np.ndarray]:
        out = {}
        for name, kernel in kernels.items():
            out[f"R_train_limit[{name}]"], out[f"R_test_limit[{name}]"] = limiting_risks(
                setting, kernel, grid)
        return out

    @staticmethod
    def _optimum(summaries: dict[str, Any], label: str, opt: Any) -> None:
        summaries[f"lam_star_{label}"] = opt.lam
        summaries[f"R_test_min_{label}"] = opt.value
        if not opt.inside:
            summaries[f"note_{label}"] = "the minimum lies at the edge of the λ range; widen it"

    @staticmethod
    def _eq26(summaries: dict[str, Any], spectra: list[DataSpectrum],
              kernels: dict[str, InnerProductKernel], noise: float, tau: float) -> None:
        """Σ = sI (s = τ): the closed-form optimum of each trial's Theorem 2 estimate
        (the paper's eq. 26, stated for Σ = I, in its form for Σ = sI: see
        :meth:`DataSpectrum.identity_optimum`), as λ* per kernel (median over trials),
        beside the numeric search. Trials without one, and kernels for which the median
        z* needs λ ≤ 0, are said in notes."""
        optima = [sp.identity_optimum(noise, scale=tau) for sp in spectra]
        zs = np.array([o[1] for o in optima if not isinstance(o, str)])
        reasons = sorted({o for o in optima if isinstance(o, str)})
        where = "Σ = I" if tau == 1.0 else f"Σ = {tau:g} I"
        if reasons:
            missing = len(optima) - zs.size
            summaries["note_eq26"] = (
                f"eq. 26 (the closed-form optimum for {where}) gives no λ* in {missing} of "
                f"{len(optima)} trials: {'; '.join(reasons)}"
                + ("; the median is over the others" if zs.size else
                   "; no trial has one, so no λ* is given"))
        if zs.size == 0:
            return
        for name, kernel in kernels.items():
            nu = float(kernel.g(tau)) - kernel.g0 - tau * kernel.dg0
            lam = float(np.median(-zs * kernel.dg0 - nu))
            if lam > 0:
                summaries[f"lam_star_eq26_median[{name}]"] = lam
            else:
                summaries[f"note_eq26[{name}]"] = (
                    f"eq. 26's optimum z* = {float(np.median(zs)):.3g} needs λ = {lam:.3g} "
                    f"≤ 0 for this kernel (ν = {nu:.3g}): no λ* is given")

    @staticmethod
    def _choice(table: dict[str, np.ndarray], summaries: dict[str, Any], name: str,
                grid: np.ndarray, stack: dict[str, np.ndarray], allowed: np.ndarray,
                bound: float | None, best: int) -> None:
        """What choosing λ without a validation set costs: each trial picks the grid λ
        (among the ``allowed``, those above the flagged region) where its own Theorem 2
        estimate (training data only) is least, and pays its test risk there; against the
        least mean empirical test risk on the grid (index ``best``) and, for an indefinite
        K_c, also against the least above the flagged region."""
        L = grid.size
        emp = table[f"R_test_emp_mean[{name}]"]
        if bound is not None:
            out = np.flatnonzero(allowed)
            best_out = int(out[np.argmin(emp[out])])
            summaries[f"lam_best_emp_outside_flagged[{name}]"] = float(grid[best_out])
            summaries[f"R_test_min_emp_outside_flagged[{name}]"] = float(emp[best_out])
            summaries[f"note_thm2_choice[{name}]"] = (
                f"Theorem 2's λ is chosen among λ > {bound:.3g} only: below, K_c + λI is "
                "flagged singular")
        thm2_t = np.where(np.isfinite(stack["thm2"][:, :L]) & allowed, stack["thm2"][:, :L],
                          np.inf)
        pick = np.argmin(thm2_t, axis=1)
        chosen = float(stack["R_test"][np.arange(pick.size), pick].mean())
        # λ̂: the median trial's choice (the lower one for an even count), a grid point
        i_hat = int(np.sort(pick)[(pick.size - 1) // 2])
        cost = _cost_pct(chosen, float(emp[best]))
        summaries[f"lam_thm2_choice_median[{name}]"] = float(grid[i_hat])
        summaries[f"R_test_at_thm2_choice[{name}]"] = chosen
        summaries[f"thm2_choice_cost_pct[{name}]"] = cost
        if bound is not None:
            summaries[f"thm2_choice_cost_pct_outside_flagged[{name}]"] = _cost_pct(
                chosen, float(emp[best_out]))
        # the plot's marker: the mean empirical test risk at λ̂, labelled with the cost
        for series, value in zip(CHOICE_SERIES, (emp[i_hat], cost), strict=True):
            table[f"{series}[{name}]"][i_hat] = value

    def _fill(self, table: dict[str, np.ndarray], summaries: dict[str, Any],
              acc: dict[str, dict[str, np.ndarray]], grid: np.ndarray,
              kernels: dict[str, InnerProductKernel], spectra: list[DataSpectrum], noise: float,
              synthetic: bool, extra: dict[str, float],
              bounds: Mapping[str, float | None], final: bool) -> None:
        L = grid.size
        for name, kernel in kernels.items():
            for key in (*CHOICE_SUMMARIES, "lam_star_thm2", "R_test_min_thm2", "note_thm2",
                        "lam_star_thm2_outside_flagged", "R_test_min_thm2_outside_flagged"):
                summaries.pop(f"{key}[{name}]", None)   # the flagged region may have grown
            for series in CHOICE_SERIES:
                table[f"{series}[{name}]"] = np.full(L, np.nan)
            stack = acc[name]  # (trials so far, λ grid + appended λ*)
            table[f"R_train_emp_mean[{name}]"] = stack["R_train"][:, :L].mean(0)
            table[f"R_test_emp_mean[{name}]"] = stack["R_test"][:, :L].mean(0)
            ddof = 1 if stack["R_test"].shape[0] > 1 else 0
            table[f"R_train_emp_std[{name}]"] = stack["R_train"][:, :L].std(0, ddof=ddof)
            table[f"R_test_emp_std[{name}]"] = stack["R_test"][:, :L].std(0, ddof=ddof)
            table[f"R_test_thm2_mean[{name}]"] = stack["thm2"][:, :L].mean(0)
            table[f"R_test_lemma1_mean[{name}]"] = stack["lemma1"][:, :L].mean(0)
            k_index = list(kernels).index(name)
            if synthetic:
                summaries[f"R_test_emp_at_lam_star[{name}]"] = float(
                    stack["R_test"][:, L + k_index].mean())
            if synthetic:  # the paper's check: empirical against limit for λ ≥ 1
                big = grid >= 1.0
                if big.any():
                    dev = np.abs(table[f"R_test_emp_mean[{name}]"][big]
                                 / table[f"R_test_limit[{name}]"][big] - 1.0)
                    summaries[f"max_rel_dev_test_lam_ge_1[{name}]"] = float(dev.max())
            emp = table[f"R_test_emp_mean[{name}]"]
            best = int(np.argmin(emp))
            summaries[f"lam_best_emp[{name}]"] = float(grid[best])
            summaries[f"R_test_min_emp[{name}]"] = float(emp[best])
            # An indefinite K_c (sigmoid kernel): K_c + λI is flagged singular for
            # λ ≤ −e_min (see _flag_indefinite). Theorem 2 knows nothing of K_c, so its
            # choice is confined to the λ above, and its cost also given against the
            # best λ there.
            bound = bounds.get(name)
            allowed = np.ones(L, dtype=bool) if bound is None else grid > bound
            if bound is not None:
                if not allowed.any():
                    summaries[f"note_thm2_choice[{name}]"] = (
                        f"every λ of the grid (up to {grid[-1]:.3g}) lies where K_c + λI is "
                        f"flagged singular (λ ≤ {bound:.3g}): Theorem 2's λ is not chosen; "
                        f"widen the λ range above {bound:.3g}")
            if allowed.any():
                self._choice(table, summaries, name, grid, stack, allowed, bound, best)
            if final:  # the estimator's λ*: continuous in λ, one search on the mean curve
                # τ as in the trials: the law's on synthetic data, each trial's own on real
                taus = [summaries["tau"] if synthetic else e.tau for e in spectra]

                def thm2(lam: np.ndarray, k: InnerProductKernel = kernel,
                         ts: list[float] = taus) -> np.ndarray:
                    if synthetic:
                        return theorem2_mean(spectra, kernel_z(k, lam, ts[0]), noise)
                    rows = np.stack([kernel_z(k, lam, t) for t in ts])
                    return theorem2_mean(spectra, rows, noise)

                # the basin from the mean curve on the grid the trials already computed
                curve = table[f"R_test_thm2_mean[{name}]"]
                opt = optimal_lam(thm2, grid[0], grid[-1], (grid, curve))
                self._optimum(summaries, f"thm2[{name}]", opt)
                if bound is not None and opt.lam <= bound:
                    # the estimator's own minimum (common to all kernels in z) is kept and
                    # said to be flagged; beside it, its least value above the region
                    text = (f"the estimate's minimum λ = {opt.lam:.3g} lies where K_c + λI "
                            f"is flagged singular (λ ≤ {bound:.3g})")
                    lams = grid[allowed]
                    if lams.size:
                        above = optimal_lam(thm2, lams[0], lams[-1], (lams, curve[allowed]))
                        summaries[f"lam_star_thm2_outside_flagged[{name}]"] = above.lam
                        summaries[f"R_test_min_thm2_outside_flagged[{name}]"] = above.value
                        text += f"; above it, the estimate is least at λ = {above.lam:.3g}"
                        if not above.inside and above.lam == lams[0]:
                            text += " (the edge of the region)"
                    edge = summaries.get(f"note_thm2[{name}]")
                    summaries[f"note_thm2[{name}]"] = text if edge is None else f"{edge}; {text}"
