"""Experiment ``nystrom``: landmark samplers compared on approximation error, time, kernel
evaluations and downstream ridge regression — fixed-size samplers at the given s, recursive
RLS at a fixed λ (Musco & Musco, Algorithm 2) at the number of landmarks it draws, under the
light protocol or the paper's (Section 5; see ``docs/papers.md``).

One implementation for every data set, wherever its rows live (an array in memory is one
part): the data set's ``parts`` and ``plan`` (:mod:`kernel_lab.core.rows`). Every random
choice about rows is keyed by the global row index (:mod:`kernel_lab.core.rows.keys`): the
evaluation rows (at most eval_points) the spectral error is measured on, the test rows
(at most :data:`~kernel_lab.experiments.nystrom_table.TEST_MAX`), the picture's rows (at
most :data:`~kernel_lab.experiments.nystrom_picture.VIEW_MAX`), the bandwidth's rows
(:data:`BANDWIDTH_ROWS`) and every landmark draw; every sum over the training rows is taken
per canonical row block and combined in one fixed tree. So the same rows as one array, one
file or many files, read here, in a process pool or on a cluster, give the same table. What
needs the n × n kernel matrix — the exact-KRR line and d_eff(λ) — is computed from the
gathered training rows when n is small enough (size rules, the same for every kind of
data set), and said to be left out otherwise.

This module is the experiment: its parameters, plots and run. What it is made of sits in
modules named by what they hold: a cell (draw, features, ridge fit, errors) in
:mod:`~kernel_lab.experiments.nystrom_cells`, the result table and summaries in
:mod:`~kernel_lab.experiments.nystrom_table`, the picture in
:mod:`~kernel_lab.experiments.nystrom_picture`, the time and memory model in
:mod:`~kernel_lab.experiments.nystrom_cost`, the plots' words in
:mod:`~kernel_lab.experiments.nystrom_words`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any

import numpy as np

from kernel_lab.core.approx_error import effective_dimension
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.executor import blas_controller
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.memory import check_allocation
from kernel_lab.core.nystrom.landmarks import check_exact_rows
from kernel_lab.core.nystrom.samplers import SAMPLERS
from kernel_lab.core.nystrom.scores import check_fixed_lam
from kernel_lab.core.params import ParamSpec
from kernel_lab.core.progress import Progress
from kernel_lab.core.ridge.fit import diag_sum
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.core.rows.mapreduce import (
    LocalParts,
    PartMap,
    RowPlan,
    Rows,
    keyed_subset_of,
)
from kernel_lab.experiments import nystrom_cost
from kernel_lab.experiments.base import (
    SERIAL,
    Experiment,
    ModelChoice,
    PartialResult,
    PlotSpec,
    TaskExecutor,
    build_kernel,
    kernel_param_specs,
)
from kernel_lab.experiments.nystrom_cells import (
    BANDWIDTH_ROWS,
    FIXED_LAMBDA,
    FUSED_AT_ONCE,
    RANDOM_FEATURES,
    CellInputs,
    CellTask,
    FusedRun,
    cell_seed,
    check_random_features,
    exact_reference,
    fill_trace,
    gather_subsets,
)
from kernel_lab.experiments.nystrom_fits import best_nystrom
from kernel_lab.experiments.nystrom_nested import NESTED_TRIALS, NestedTask, cell_job, run_task
from kernel_lab.experiments.nystrom_picture import VIEW_MAX, View, with_view
from kernel_lab.experiments.nystrom_table import (
    CV_TEXT,
    EXACT_CV_MAX_N,
    EXACT_MAX_N,
    PAPER_EVAL_POINTS,
    TEST_MAX,
    empty_table,
    fill_row,
    fixed_lambda_summaries,
    protocol_settings,
    protocol_summaries,
    row_of,
)
from kernel_lab.experiments.nystrom_words import (
    landmark_summaries,
    picture_summaries,
    spectral_summaries,
)
from kernel_lab.experiments.plotspec import Curve


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


def parse_lams(text: str) -> np.ndarray:
    """``'1, 0.1, 0.01'`` → the distinct λ values of Algorithm 2, largest first (so the
    realised sample sizes grow along the table)."""
    try:
        values = {float(v) for v in str(text).replace(";", ",").split(",") if v.strip()}
    except ValueError:
        raise ParameterError(f"the λ values of Algorithm 2 {text!r} must be numbers "
                             "separated by commas, e.g. 1,0.1,0.01") from None
    if not values:
        raise ParameterError("give at least one λ for Algorithm 2, e.g. 1,0.1,0.01")
    return np.asarray(sorted((check_fixed_lam(v) for v in values), reverse=True))



def diag_job(plan: RowPlan, kernel: Kernel, parts: PartMap, progress: Progress) -> float:
    """``Σ k(x, x)`` over the training rows (:func:`~kernel_lab.core.ridge.fit.diag_sum`)."""
    return diag_sum(parts, plan, kernel)


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
        "Recursive RLS at a fixed λ (recursive-rls-lambda, the paper's Algorithm 2) is the "
        "other way round: you give λ, not s; it keeps each point with probability about "
        "log(d_eff)·l_i(λ), so the number of landmarks is random and set by the effective "
        "dimension d_eff(λ) = Σ_i l_i(λ), and the paper guarantees ‖K − K̃‖₂ ≤ λ. Each λ of "
        "'λ values (Algorithm 2)' is run once per trial and its point is drawn at the number "
        "of landmarks it actually sampled (the trials' median, or mean under the paper "
        "protocol) with that statistic of its error, next to a dotted line at λ itself — the "
        "bound, drawn at the same s. "
        "Plots: the spectral error ‖K − K̃‖₂ against the number of landmarks and against "
        "time, the downstream test RMSE of ridge regression on the features, and the data "
        "coloured by leverage score with the chosen landmarks marked. When does leverage "
        "sampling help? When the scores are far from uniform — small, tight clusters "
        "(spread well below σ), or a narrow kernel — uniform sampling misses whole regions "
        "and its error stalls, while RLS and RP-Cholesky keep improving. When the scores are "
        "nearly uniform (broad data, wide kernel) all samplers perform alike and uniform is "
        "cheapest. Downstream accuracy differs less than the spectral error does. The "
        "accelerated variant estimates the scores from only about √((ns + s³)/4n) landmarks "
        "per level (20 for n = 3000, s = 160), as the authors' code does: on imbalanced "
        "clusters it now and then misses a small cluster, so its error is heavy-tailed — "
        "a median of three trials can rise with s by chance; take ten or more. "
        "Protocol: 'light' (the default) measures the error on eval_points points, takes "
        "the median of 'trials' draws and fits the downstream ridge at the λ you set; "
        "'paper' follows Musco & Musco's Section 5 — the error on 20 000 points (all of them "
        "when there are fewer), the mean of 10 trials, and the downstream " + CV_TEXT[0].lower()
        + CV_TEXT[1:] + ", chosen per trial and sampler (the exact-KRR line alike). The "
        "summaries name the protocol that produced the figure. "
        "Large data: the n × s features are never held whole — their sums are taken over "
        f"blocks of rows (the trace error and the downstream ridge still use every training "
        f"point); the spectral error uses eval_points training points, the test RMSE at most "
        f"{TEST_MAX:,} test points and the picture at most {VIEW_MAX:,} training points, "
        "random subsets keyed by row that the summaries state. The exact-KRR line and d_eff "
        f"need the n × n kernel matrix: they are drawn up to n = {EXACT_MAX_N:,} training "
        f"points ({EXACT_CV_MAX_N:,} for the line under the paper protocol). Every cell "
        "(sampler, s, trial) has its own seed, so adding a size or a sampler leaves the "
        "other cells' draws as they were."
    )
    params = (
        *kernel_param_specs("gaussian", ("gaussian", "laplace", "cauchy", "matern32",
                                         "matern52")),
        ParamSpec("samplers", "choices", ["uniform", "recursive-rls", "recursive-rls-fast",
                                          "rp-cholesky", "rff"],
                  choices=(*SAMPLERS, FIXED_LAMBDA, *RANDOM_FEATURES),
                  label="samplers / features",
                  help="landmark samplers and random features to compare at s features each; "
                       "exact-rls forms the n×n matrix (small n only); rff-orthogonal needs "
                       "a rotation-invariant kernel (gaussian, matern); recursive-rls-lambda "
                       "runs at the λ values below and sets its own number of landmarks"),
        ParamSpec("sizes", "str", "10,20,40,80,160", label="landmark counts s",
                  help="comma-separated numbers of landmarks"),
        ParamSpec("rls_lams", "str", "1,0.1,0.01", label="λ values (Algorithm 2)",
                  help="comma-separated ridge λ for recursive-rls-lambda; each gives as many "
                       "landmarks as d_eff(λ) calls for (more as λ falls)",
                  when={"samplers": (FIXED_LAMBDA,)}),
        ParamSpec("protocol", "choice", "light", choices=("light", "paper"),
                  help="light: the settings below; paper: Musco & Musco's protocol — error "
                       "on 20 000 points (or all), mean of 10 trials, downstream λ by "
                       "leave-one-out cross-validation"),
        ParamSpec("trials", "int", 3, low=1, high=1000,
                  help="independent draws per (sampler, s); medians and quartiles reported",
                  when={"protocol": ("light",)}),
        ParamSpec("lam", "float", 1.0, label="λ (downstream ridge)", low=1e-12, high=1e12,
                  log=True, help="regularisation of the ridge regression on the features",
                  when={"protocol": ("light",)}),
        ParamSpec("eval_points", "int", 2000, label="error evaluation points", low=50,
                  high=PAPER_EVAL_POINTS,
                  help="the spectral error is measured on a random subset of at most this "
                       "many training points (the paper uses 20k)",
                  when={"protocol": ("light",)}),
        ParamSpec("view", "choice", "pca", choices=("pca", "features"),
                  help="2-D picture: first two principal components or first two features"),
    )
    # x columns: s[sampler] is the number of landmarks (features) actually used — s itself
    # for the fixed-size samplers, the realised size for Algorithm 2 — and time[sampler]
    # the seconds, both the protocol's statistic over trials; y columns end in _median
    # (light protocol) or _mean (paper protocol), whichever the run produced is drawn
    # texts in braces are the run's summaries (see spectral_summaries, picture_summaries):
    # the spectral error of a subset of the rows is labelled as that subset's
    plots = (
        PlotSpec("Spectral error ‖K − K̃‖₂ against the number of landmarks", "s[*]",
                 (Curve("spectral_median", "measured",
                        "spectral error (median){spectral_where|}"),
                  Curve("spectral_mean", "measured", "spectral error (mean){spectral_where|}"),
                  Curve("lam_bound", "reference", "bound λ (Algorithm 2)",
                        dash="dot")),
                 xlabel="{landmarks_axis|landmarks s}",
                 ylabel="{spectral_axis|‖K − K̃‖₂}",
                 logx=True, logy=True, positive=True, legend_kinds=True),
        PlotSpec("Spectral error against time", "time[*]",
                 (Curve("spectral_median", "measured",
                        "spectral error (median){spectral_where|}"),
                  Curve("spectral_mean", "measured", "spectral error (mean){spectral_where|}")),
                 xlabel="seconds (sampling, factorisation and the n × s features)",
                 ylabel="{spectral_axis|‖K − K̃‖₂}",
                 logx=True, logy=True, positive=True, legend_kinds=True),
        PlotSpec("Downstream test RMSE against the number of landmarks", "s[*]",
                 (Curve("rmse_median", "measured", "test RMSE (median)"),
                  Curve("rmse_mean", "measured", "test RMSE (mean)"),
                  Curve("rmse_exact", "baseline", "exact KRR")),
                 xlabel="{landmarks_axis|landmarks s}", ylabel="test RMSE",
                 positive=True,
                 logx=True),
        PlotSpec("Data coloured by leverage score, landmarks marked", "view_x",
                 (Curve("view_y", "measured", "training points"),),
                 xlabel="{picture_x|first coordinate}",
                 ylabel="{picture_y|second coordinate}", kind="scatter", color="view_score",
                 overlay=("landmark_x", "landmark_y"),
                 overlay_label="{landmarks_label|landmarks}",
                 color_label="{score_label|leverage score}",
                 total="view_total",
                 empty="No points to draw: the training set is empty."),
    )
    default_data = "clusters:n=3000,k=8,imbalance=3,spread=0.05"

    def fit_to_data(self, params: Mapping[str, Any], data: Dataset
                    ) -> tuple[dict[str, Any], list[str]]:
        out = dict(params)
        default = next(p.default for p in self.params if p.name == "sizes")
        n = data.n_train
        if out["sizes"] != default:
            return out, []
        sizes = [int(v) for v in default.split(",")]
        if max(sizes) <= n:
            return out, []
        out["sizes"] = ",".join(str(v) for v in sorted({min(v, n) for v in sizes}))
        return out, [f"landmark counts {default} clamped to the n = {n} training points: "
                     f"{out['sizes']}"]

    def estimate(self, params: Mapping[str, Any], n: int, p: int) -> dict[str, Any]:
        return nystrom_cost.estimate(params, n, p)

    def run(self, params: Mapping[str, Any], data: Dataset, progress: Progress,
            executor: TaskExecutor = SERIAL) -> Iterator[PartialResult]:
        parts, plan = data.parts, data.plan
        n = data.n_train
        if data.n_test < 1:
            raise ParameterError("the downstream error needs a test set (test fraction > 0)")
        samplers = list(params["samplers"])
        budget = [s for s in samplers if s != FIXED_LAMBDA]
        sizes = parse_sizes(params["sizes"], n) if budget else np.zeros(0, dtype=int)
        lams = parse_lams(params["rls_lams"]) if FIXED_LAMBDA in samplers else np.zeros(0)
        if "exact-rls" in samplers:
            check_exact_rows(plan)
        paper, trials, stat, ridge_lam, m = protocol_settings(params, n)
        line = n <= (EXACT_CV_MAX_N if paper else EXACT_MAX_N)
        d_eff = bool(lams.size) and n <= EXACT_MAX_N
        exact = line or d_eff  # every training row is gathered: their n × n matrix fits
        progress(0.005, "evaluation, test and picture rows")
        # one gather: the rows with the smallest keys of the evaluation stream — every
        # training row when the n × n references are formed; the evaluation rows (the
        # first m keys) and the bandwidth's (the first BANDWIDTH_ROWS) are among them;
        # the test and the picture's rows in the same two passes
        b = min(n, BANDWIDTH_ROWS)
        t = min(data.n_test, TEST_MAX)
        v = min(n, VIEW_MAX)
        gathered = gather_subsets(
            parts, plan, [(rowkeys.EVAL_SUBSET, n if exact else max(m, b), "train"),
                          (rowkeys.TEST_SUBSET, t, "test"), (rowkeys.VIEW_SUBSET, v, "train")])
        (index, train), (_, test), (view_index, view_rows) = gathered
        X_eval = train.X[np.isin(index, keyed_subset_of(index, plan.seed,
                                                        rowkeys.EVAL_SUBSET, m))]
        bandwidth = np.isin(index, keyed_subset_of(index, plan.seed, rowkeys.EVAL_SUBSET, b))
        kernel = build_kernel(params, train.X[bandwidth])
        check_random_features(samplers, kernel)
        where = (f"a keyed random subset of {m} of the {n} training points" if m < n
                 else f"all {n} training points")
        summaries = protocol_summaries(params, kernel, n, m, where)
        summaries["partitions"] = len(parts.parts)
        if m < n:
            summaries["note"] = (f"spectral error measured on {where} (a lower bound of the "
                                 f"full norm); the trace error and the downstream ridge use "
                                 f"all {n}")
        summaries.update(spectral_summaries(FIXED_LAMBDA in samplers, n, m))
        if t < data.n_test:
            summaries["note_test"] = (f"test RMSE on a keyed random subset of {t} of the "
                                      f"{data.n_test} test points")
        summaries["test_points"] = t
        view = View(view_rows.X, params["view"], np.arange(v))
        summaries.update(picture_summaries(list(data.feature_names), view.X.shape[1],
                                           params["view"]))
        if v < n:
            summaries["note_view"] = (f"picture: a keyed random subset of {v} of the {n} "
                                      "training points (principal axes of that subset)")
        check_allocation(8.0 * m * m, f"the {m}×{m} evaluation kernel matrix",
                         "Lower eval_points." if not paper else
                         "Use the light protocol with fewer evaluation points.")
        progress(0.01, f"kernel matrix of the {m} evaluation points")
        K_eval = kernel(X_eval)
        # cells spread over the cores through the executor (rows in this process), or
        # fused: every pass over the partitions shared by all cells, Σ k(x, x) in the first
        fused = not (type(parts) is LocalParts and executor is not SERIAL)
        diag = None if fused else diag_sum(parts, plan, kernel)
        table = empty_table(samplers, sizes, lams, stat, paper)
        if lams.size:
            table[f"lam_bound[{FIXED_LAMBDA}]"] = lams.copy()
        summaries.update(self._exact(train if exact else None, test, kernel, ridge_lam,
                                     lams if d_eff else lams[:0], table if line else None,
                                     max(sizes.size, lams.size), paper, progress))
        yield PartialResult(0.03, "sampling", with_view(table, view, None, None, n),
                            dict(summaries))

        inputs = CellInputs(data, kernel, ridge_lam, diag, X_eval, K_eval, test.X, test.y,
                            view_index)
        tasks = self._tasks(int(params["seed"]), budget, sizes, lams, trials, inputs)
        # progress by the tasks' operation counts (a cell of 160 landmarks costs hundreds
        # of times one of 10), not by their number
        cost = np.cumsum([nystrom_cost.task_cost(task, n, data.p, m) for task in tasks])
        results: dict[tuple[int, str], list[dict[str, Any]]] = {}
        view_scores = view_marks = None
        runs = (self._fused(tasks, cost, progress, kernel) if fused
                else self._run_tasks(tasks, cost, executor))
        for done, (task, (out, fraction)) in enumerate(zip(tasks, runs, strict=True),
                                                       start=1):
            fixed = task.sampler == FIXED_LAMBDA
            if isinstance(task, NestedTask):
                rows = list(range(sizes.size))
                at = f"s = {task.sizes[0]}…{task.sizes[-1]}"
            else:
                rows = [row_of(task, sizes, lams)]
                at = f"λ = {task.rls_lam:g}" if fixed else f"s = {task.s}"
            for i, res in zip(rows, out, strict=True):
                scores, marks = res.pop("scores"), res.pop("marks")
                fill_trace(res, diag)
                results.setdefault((i, task.sampler), []).append(res)
                fill_row(table, results, i, task.sampler, stat, paper)
                if view_scores is None and scores is not None \
                        and task.sampler != "rp-cholesky":
                    # the picture: the leverage-type scores and landmarks of the first
                    # (smallest) landmark set of a leverage sampler, where single landmarks
                    # stay visible
                    view_scores, view_marks = scores, marks
                    if marks is not None:
                        summaries.update(landmark_summaries(task.sampler, len(marks)))
                summaries[f"evals_per_point_max_s[{task.sampler}]"] = (
                    table[f"evals_{stat}[{task.sampler}]"][i] / n)
            if fixed:
                summaries.update(fixed_lambda_summaries(table, results, lams))
            message = f"{task.sampler}, {at} ({done}/{len(tasks)})"
            progress(fraction, message)
            yield PartialResult(fraction, message,
                                with_view(table, view, view_scores, None, n, view_marks),
                                dict(summaries))

    def best_models(self, params: Mapping[str, Any], data: Dataset,
                    table: Mapping[str, np.ndarray], summaries: Mapping[str, Any],
                    progress: Progress) -> list[ModelChoice]:
        """The landmark sampler and count (or Algorithm 2's λ) of the least test RMSE, at
        the trial of median test RMSE, as a fitted NystromRidge with the run's landmarks
        (:mod:`~kernel_lab.experiments.nystrom_fits`)."""
        samplers = list(params["samplers"])
        budget = [s for s in samplers if s != FIXED_LAMBDA]
        sizes = parse_sizes(params["sizes"], data.n_train) if budget else np.zeros(0, int)
        lams = parse_lams(params["rls_lams"]) if FIXED_LAMBDA in samplers else np.zeros(0)
        return best_nystrom(params, data, table, sizes, lams, progress)

    @staticmethod
    def _tasks(seed: int, budget: list[str], sizes: np.ndarray, lams: np.ndarray,
               trials: int, inputs: CellInputs) -> list[CellTask | NestedTask]:
        """The run's tasks in table order (size, sampler, trial; Algorithm 2 last): a cell
        per (sampler, s, trial), or, for a sampler whose draws nest and several sizes, one
        nested trial for all sizes (placed at the smallest)."""
        tasks: list[CellTask | NestedTask] = []
        for i, s in enumerate(int(v) for v in sizes):
            for name in budget:
                if name in NESTED_TRIALS and sizes.size > 1:
                    if i == 0:
                        tasks += [NestedTask(name, tuple(int(v) for v in sizes),
                                             cell_seed(seed, name, k), inputs)
                                  for k in range(trials)]
                    continue
                tasks += [CellTask(name, s, None, cell_seed(seed, name, k, s), inputs)
                          for k in range(trials)]
        tasks += [CellTask(FIXED_LAMBDA, None, float(lam),
                           cell_seed(seed, FIXED_LAMBDA, k, lam=float(lam)), inputs)
                  for lam in lams for k in range(trials)]
        return tasks

    @staticmethod
    def _run_tasks(tasks: list[CellTask | NestedTask], cost: np.ndarray,
                   executor: TaskExecutor) -> Iterator[tuple[list[dict[str, Any]], float]]:
        """The tasks' results in task order (a list per task: one per size) with the run's
        progress fraction, each task run alone through the parallel ``executor`` (rows in
        this process, which reads them one part at a time and would leave the other cores
        idle), each with one BLAS thread; the run is cancelled between tasks."""
        for done, out in enumerate(executor.map(run_task, tasks)):
            yield out, 0.03 + 0.97 * float(cost[done] / cost[-1])

    @staticmethod
    def _fused(tasks: list[CellTask | NestedTask], cost: np.ndarray, progress: Progress,
               kernel: Kernel) -> Iterator[tuple[list[dict[str, Any]], float]]:
        """The tasks' results as :meth:`_run_tasks` gives them, all tasks run together,
        every pass over the partitions shared (:class:`~kernel_lab.experiments.
        nystrom_cells.FusedRun`), the first with ``Σ k(x, x)`` over the training rows;
        progress per partition of each pass (cancelled there). The same bits: every
        task's calls are its own, each sum combined in its fixed tree."""
        if not tasks:
            return
        data = tasks[0].inputs.data
        jobs = [partial(diag_job, data.plan, kernel),
                *(partial(cell_job, task) for task in tasks)]
        run = FusedRun(data.parts, jobs, progress.sub(0.03, 1.0),
                       [float(cost[0]) * 0.01, *np.diff(cost, prepend=0.0)],
                       at_once=FUSED_AT_ONCE)
        results = run.results()
        diag = None
        try:
            while True:
                with blas_controller().limit(limits=1):  # the cells' work: one BLAS thread
                    got = next(results, None)
                if got is None:
                    return
                if diag is None:
                    diag = got[0]
                    continue
                yield [fill_trace(r, diag) for r in got[0]], 0.03 + 0.97 * got[1]
        finally:
            results.close()

    @staticmethod
    def _exact(train: Rows | None, test: Rows, kernel: Kernel, lam: float | None,
               lams: np.ndarray, table: dict[str, np.ndarray] | None, rows: int,
               paper: bool, progress: Progress) -> dict[str, Any]:
        """The exact-KRR line (``rmse_exact``, into ``table``; None: no line) and d_eff(λ)
        of ``lams`` from every training row (``train``), whose n × n kernel matrix is
        formed up to n = EXACT_MAX_N (the line under the paper protocol up to
        EXACT_CV_MAX_N, its cross-validation costing O(n³)); a note says what is left
        out."""
        out: dict[str, Any] = {}
        if table is None:
            limit = EXACT_CV_MAX_N if paper else EXACT_MAX_N
            out["note_exact"] = ("no exact-KRR line: it needs the n × n kernel matrix"
                                 + (" and a cross-validation costing O(n³)" if paper
                                    else "")
                                 + f", formed up to n = {limit:,} training points")
        if train is None:
            return out
        n = train.index.size
        check_allocation(3 * 8.0 * n * n, f"the {n}×{n} kernel matrix of the training rows "
                                          "(exact-KRR line, d_eff)",
                         "Open fewer rows with the data option subsample=N.")
        if table is not None:
            progress(0.02, "exact kernel ridge (downstream reference)")
            out.update(exact_reference(train.X, train.y, test.X, test.y, kernel, lam))
            table["rmse_exact"] = np.full(rows, out["rmse_exact"])
        if lams.size:
            progress(0.025, "effective dimensions d_eff(λ) of K (for comparison)")
            eigvals = np.linalg.eigvalsh(kernel(train.X))
            for lam_j in lams:
                out[f"d_eff[λ={lam_j:g}]"] = effective_dimension(eigvals, float(lam_j))
        return out
