"""Experiment ``nystrom`` on partitioned data: the rows stay in their partitions.

:func:`run_on_parts` produces the table columns and summaries of
:meth:`NystromExperiment.run <kernel_lab.experiments.nystrom.NystromExperiment.run>` (so its
plots and reports apply unchanged) for every sampler — uniform, exact RLS (its rows gathered
when their n × n kernel matrix fits memory), recursive RLS with a budget (Algorithm 3) and
its accelerated variant, recursive RLS at a fixed λ (Algorithm 2, ``recursive-rls-lambda``),
RP-Cholesky (:mod:`kernel_lab.core.parts.landmarks`) — and random Fourier features. Per
cell: the landmarks (or features), one map-reduce of the centred feature sums over every
training row (:mod:`kernel_lab.core.parts.ridge`; a second one for λ by leave-one-out under
the paper protocol), the trace error from them, the
spectral error on a keyed subset of at most eval_points training rows gathered to the
client, the test RMSE on a keyed subset of at most :data:`TEST_MAX` test rows, and the
picture on a keyed subset of at most :data:`VIEW_MAX` training rows. Every subset is keyed
by the global row index (:mod:`kernel_lab.core.rowkeys`), so the same rows in one partition
or many give the same table; the draws differ from the in-memory run's (a generator
walking the rows). The exact-KRR line and d_eff(λ), which need the n × n matrix, are left
out (a note says so); exact leverage scores are refused when their n × n work does not fit
memory, naming the ``subsample=N`` that would.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from kernel_lab.core import rowkeys
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.memory import check_allocation
from kernel_lab.core.parts.base import PartitionedData, keyed_subset, keyed_subset_of, take_rows
from kernel_lab.core.parts.landmarks import check_exact_rows
from kernel_lab.core.parts.ridge import (
    FeatureMap,
    diag_sum,
    fit_ridge,
    make_features,
    spectral_error,
    test_rmse,
)
from kernel_lab.core.progress import Progress
from kernel_lab.experiments.base import PartialResult, build_kernel
from kernel_lab.experiments.nystrom import parse_lams, parse_sizes
from kernel_lab.experiments.nystrom_cells import FIXED_LAMBDA, check_random_features
from kernel_lab.experiments.nystrom_nested import EXACT_MAX
from kernel_lab.experiments.nystrom_picture import VIEW_MAX, View, with_view
from kernel_lab.experiments.nystrom_table import (
    TEST_MAX,
    empty_table,
    fill_row,
    fixed_lambda_summaries,
    protocol_settings,
    protocol_summaries,
)
from kernel_lab.experiments.nystrom_words import (
    landmark_summaries,
    picture_summaries,
    spectral_summaries,
)

#: The bandwidth's median heuristic looks at this many training rows (the first keys of
#: the evaluation subset).
BANDWIDTH_ROWS = 1000

def _cell(name: str, s: int | None, rls_lam: float | None, seed: np.random.SeedSequence,
          data: PartitionedData, kernel: Kernel, lam: float | None, diag: float,
          K_eval: np.ndarray, X_eval: np.ndarray, X_test: np.ndarray, y_test: np.ndarray,
          view: np.ndarray, progress: Progress) -> dict[str, Any]:
    """One (sampler, s, trial) cell, or (Algorithm 2, λ = ``rls_lam``, trial) with
    ``s=None``: the measures of :func:`nystrom.run_cell`; ``progress`` covers the cell (the
    landmarks its first half, the pass over the partitions the rest)."""
    t0 = time.perf_counter()
    features: FeatureMap = make_features(
        "recursive-rls" if name == FIXED_LAMBDA else name, data.parts, data.plan, kernel, s,
        seed, lam=rls_lam, view=view, progress=progress.sub(0.0, 0.5))
    fit = fit_ridge(data.parts, data.plan, features, lam, progress.sub(0.5, 1.0))
    seconds = time.perf_counter() - t0
    sample = features.sample
    size = features.width if sample is None else sample.index.size
    return {"spectral": spectral_error(K_eval, features, X_eval, exact_max=EXACT_MAX),
            "trace": float(diag - fit.squared_norm), "time": seconds,
            "evals": 0 if sample is None else sample.evaluations + size * size,
            "rmse": test_rmse(fit, features, X_test, y_test),
            "landmarks": size, "ridge_lam": fit.lam,
            "scores": None if sample is None else sample.scores,
            "marks": None if sample is None else sample.X}


def run_on_parts(experiment: Any, params: Mapping[str, Any], data: PartitionedData,
                 progress: Progress) -> Iterator[PartialResult]:
    """The ``nystrom`` experiment on partitioned data (see the module docstring).
    ``experiment``: the :class:`~kernel_lab.experiments.nystrom.NystromExperiment` whose
    table filling is used."""
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
    progress(0.005, f"evaluation, test and picture rows ({len(parts.parts)} partitions)")
    eval_index = keyed_subset(parts, plan, rowkeys.EVAL_SUBSET, m)
    X_eval = take_rows(parts, plan, eval_index).X
    bandwidth = np.isin(eval_index, keyed_subset_of(eval_index, plan.seed, rowkeys.EVAL_SUBSET,
                                                    BANDWIDTH_ROWS))
    kernel = build_kernel(params, X_eval[bandwidth])
    check_random_features(samplers, kernel)
    where = (f"a keyed random subset of {m} of the {n} training points" if m < n
             else f"all {n} training points")
    summaries = protocol_summaries(params, kernel, n, m, where)
    summaries["partitions"] = len(parts.parts)
    if m < n:
        summaries["note"] = (f"spectral error measured on {where} (a lower bound of the "
                             f"full norm); the trace error and the downstream ridge use all "
                             f"{n}")
    summaries.update(spectral_summaries(FIXED_LAMBDA in samplers, n, m))
    t = min(data.n_test, TEST_MAX)
    test = take_rows(parts, plan, keyed_subset(parts, plan, rowkeys.TEST_SUBSET, t, "test"),
                     "test")
    if t < data.n_test:
        summaries["note_test"] = (f"test RMSE on a keyed random subset of {t} of the "
                                  f"{data.n_test} test points")
    summaries["test_points"] = t
    v = min(n, VIEW_MAX)
    view_index = keyed_subset(parts, plan, rowkeys.VIEW_SUBSET, v)
    view = View(take_rows(parts, plan, view_index).X, params["view"], np.arange(v))
    summaries.update(picture_summaries(list(data.feature_names), view.X.shape[1],
                                       params["view"]))
    if v < n:
        summaries["note_view"] = (f"picture: a keyed random subset of {v} of the {n} "
                                  "training points (principal axes of that subset)")
    summaries["note_exact"] = ("no exact-KRR line and no d_eff on partitioned data (they "
                               "need the n × n kernel matrix)")
    check_allocation(8.0 * m * m, f"the {m}×{m} evaluation kernel matrix",
                     "Lower eval_points." if not paper else
                     "Use the light protocol with fewer evaluation points.")
    progress(0.01, f"kernel matrix of the {m} evaluation points")
    K_eval = kernel(X_eval)
    diag = diag_sum(parts, plan, kernel)
    table = empty_table(samplers, sizes, lams, stat, paper)
    if lams.size:
        table[f"lam_bound[{FIXED_LAMBDA}]"] = lams.copy()
    yield PartialResult(0.03, "sampling", with_view(table, view, None, None, n),
                        dict(summaries))

    seeds = iter(np.random.SeedSequence(params["seed"]).spawn(
        (sizes.size * len(budget) + lams.size) * trials + 1)[1:])
    cells = [(i, name) for i in range(sizes.size) for name in budget for _ in range(trials)]
    cells += [(j, FIXED_LAMBDA) for j in range(lams.size) for _ in range(trials)]
    # Algorithm 2's cells (s unknown before they run) count as 100 landmarks
    cost = np.cumsum([(100.0 if name == FIXED_LAMBDA else float(sizes[i])) ** 2 + 1.0
                      for i, name in cells])
    results: dict[tuple[int, str], list[dict[str, Any]]] = {}
    view_scores = view_marks = None
    fraction = 0.03
    for done, (i, name) in enumerate(cells, start=1):
        fixed = name == FIXED_LAMBDA
        s, rls_lam = (None, float(lams[i])) if fixed else (int(sizes[i]), None)
        at = f"λ = {rls_lam:g}" if fixed else f"s = {s}"
        end = 0.03 + 0.97 * float(cost[done - 1] / cost[-1])
        res = _cell(name, s, rls_lam, next(seeds), data, kernel, ridge_lam, diag, K_eval,
                    X_eval, test.X, test.y, view_index, progress.sub(fraction, end))
        fraction = end
        scores, marks = res.pop("scores"), res.pop("marks")
        results.setdefault((i, name), []).append(res)
        fill_row(table, results, i, name, stat, paper)
        if view_scores is None and scores is not None and name != "rp-cholesky":
            view_scores, view_marks = scores, marks
            if marks is not None:
                summaries.update(landmark_summaries(name, len(marks)))
        summaries[f"evals_per_point_max_s[{name}]"] = table[f"evals_{stat}[{name}]"][i] / n
        if fixed:
            summaries.update(fixed_lambda_summaries(table, results, lams))
        progress(fraction, f"{name}, {at} ({done}/{len(cells)})")
        yield PartialResult(fraction, f"{name}, {at} ({done}/{len(cells)})",
                            with_view(table, view, view_scores, None, n, view_marks),
                            dict(summaries))
