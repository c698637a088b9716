"""Experiment ``learning-curve`` on partitioned data (the rows never gathered on the client).

The same table and summaries as :meth:`LearningCurveExperiment.run` with the squared loss:

- DSG trained over the parts in epochs of keyed blocks of rows
  (:class:`~kernel_lab.core.parts.dsg.BlockedDSG`), the features of iteration t drawn from
  the seed as in memory; its test error at the curve points on a keyed subset of at most
  the experiment's test cap of test rows, gathered once;
- the RFF and Nyström baselines at the same feature counts, from ``ΦᵀΦ`` and ``Φᵀy``
  summed per part and added in a fixed tree (:mod:`kernel_lab.core.parts.normal`): the
  first D of one draw of random features, and the first s of a keyed uniform sample of
  landmarks among the training rows;
- no exact floor: it needs the n × n kernel matrix (the summaries say so).

Every choice about rows comes from keys of the global row index, so one array and sixteen
files on a cluster give the same numbers. Other losses are refused (their baselines need
the n × D features). The experiment instance is passed in: experiment modules import no
other experiment's module.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from kernel_lab.core import rowkeys
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import make_kernel, median_heuristic
from kernel_lab.core.models import DSGRegressor
from kernel_lab.core.models.dsg import PredictionSums, checkpoints
from kernel_lab.core.models.rff import RandomFourierFeatures
from kernel_lab.core.parts.base import PartitionedData, keyed_subset, take_rows
from kernel_lab.core.parts.dsg import BlockedDSG
from kernel_lab.core.parts.normal import (
    CosineFeatures,
    KernelColumns,
    fit_first_features,
    fit_first_landmarks,
    normal_sums,
    target_mean,
    uniform_landmarks,
)
from kernel_lab.core.progress import Progress
from kernel_lab.core.validation import check_seed
from kernel_lab.experiments.base import PartialResult
from kernel_lab.experiments.learning_curve_summary import summarise

#: Training rows (a keyed sample) the automatic bandwidth is computed on, as the median
#: heuristic does in memory.
BANDWIDTH_ROWS = 1000


def _squared_only(experiment: Any, params: Mapping[str, Any], data: PartitionedData) -> str:
    loss = experiment.loss_for(params["loss"], data.task)
    if loss != "squared" or data.task != "regression":
        raise ParameterError(
            f"on partitioned data the learning curve supports regression with the squared "
            f"loss (loss=auto or squared), not the {loss} loss on {data.task} data: its RFF "
            "and Nyström baselines come from normal sums per partition; for another loss "
            "run it on a seeded sample of the rows in memory")
    if data.n_test < 1:
        raise ParameterError("the learning curve needs a test set (test fraction > 0)")
    return loss


def _costs(n: int, p: int, m: int, D: int, pts: np.ndarray, B: int, r: int
           ) -> tuple[float, np.ndarray]:
    """Multiply-adds of the set-up (reading the rows, the baselines' sums) and, cumulated,
    of each curve point (DSG's iterations, its test predictions, the baselines' solves), as
    in the in-memory run's estimate; for the progress bar."""
    q = p + 200  # a cosine costs about 200 multiply-adds
    start = 4.0 * n * p + 2.0 * n * D * (q + D) + 2.0 * m * D * q
    steps, prev = [], 0
    for t in pts:
        t = int(t)
        cost = (B * r * q * (t * t - prev * prev) / 2 + 5e6 * (t - prev) + m * r * (t - prev) * q
                + B * p * 4.0 * (t - prev))
        if t * r <= D:
            cost += 2 * (t * r) ** 3 / 3 + 2 * m * t * r
        steps.append(cost)
        prev = t
    return start, np.cumsum(steps)


def run_on_parts(experiment: Any, params: Mapping[str, Any], data: PartitionedData,
                 progress: Progress) -> Iterator[PartialResult]:
    """:meth:`LearningCurveExperiment.run` on a :class:`PartitionedData` (squared loss).

    Parameters
    ----------
    experiment : LearningCurveExperiment
        Gives the rules shared with the in-memory run (``loss_for``, ``rff_cap``,
        ``test_cap``, ``columns``, ``_summarise``).
    params : mapping
        The experiment's resolved parameters (``exact_max`` is not used: no floor here).
    data : PartitionedData
        Partitions with their split and standardisation.
    progress : Progress

    Yields
    ------
    PartialResult
        After the set-up and at every curve point, as the in-memory run does.
    """
    loss = _squared_only(experiment, params, data)
    parts, plan = data.parts, data.plan
    n, p, seed = plan.n_train, data.p, int(params["seed"])
    nu, r, B = float(params["nu"]), int(params["features_per_iter"]), int(params["batch_size"])
    theta = params["theta"] or 1.0 / nu
    t0 = theta if params["t0"] is None else params["t0"]
    n_iter = int(experiment.iterations(params, n))
    pts = checkpoints(n_iter, params["points"])
    L = pts.size
    m = min(int(experiment.test_cap()), plan.n_test)
    cap = experiment.rff_cap(params["rff_max"], int(pts[-1] * r), n, True)
    D_max = min(max((int(t * r) for t in pts if t * r <= cap), default=0), n)
    start, steps = _costs(n, p, m, D_max, pts, B, r)
    total = start + float(steps[-1])

    def at(cost: float) -> float:
        return min(cost / total, 1.0) if total > 0 else 0.0

    setup = progress.sub(0.0, at(start))
    setup(0.0, f"gathering {m:,} test rows")
    test = take_rows(parts, plan, keyed_subset(parts, plan, rowkeys.TEST_SUBSET, m, "test"),
                     "test")
    sigma = params["sigma"]
    if sigma is None:
        setup(0.05, "bandwidth from a keyed sample of the training rows")
        sample = take_rows(parts, plan, keyed_subset(parts, plan, rowkeys.BANDWIDTH,
                                                     BANDWIDTH_ROWS))
        sigma = median_heuristic(sample.X)
    ybar = target_mean(parts, plan, setup.sub(0.1, 0.2))
    yt = test.y

    def error(scores: np.ndarray) -> float:
        return float(np.mean((scores + ybar - yt) ** 2))

    table = {"iteration": pts.astype(float), "samples_seen": pts * float(B),
             "n_features": pts * float(r)}
    for key in experiment.columns:
        table[key] = np.full(L, np.nan)
    summaries: dict[str, Any] = {
        "task": data.task, "loss": loss, "sigma": sigma, "lam_exact": n * nu, "theta": theta,
        "t0": t0, "rff_max_features": D_max, "partitions": len(parts.parts),
        "floor_note": (f"no exact floor on partitioned data: the exact minimiser needs the "
                       f"n × n kernel matrix of the {n:,} training rows; run the experiment "
                       "on a seeded sample of the rows in memory for it"),
        "n_iter": n_iter}
    if params["n_iter"] is None:
        summaries["n_iter_note"] = experiment.auto_note(n, B, n_iter)
    # the words of the plots: their error (squared loss on regression data only) and why
    # the convergence plot is empty
    summaries["error_measure"] = "test MSE"
    summaries["floor_missing"] = ("No exact floor in this run, nothing to converge to: "
                                  + summaries["floor_note"] + ".")
    if m < plan.n_test:
        summaries["test_note"] = (f"test error on a random {m:,} of the {plan.n_test:,} test "
                                  "points (keyed by the row index)")
    model_seed = check_seed(np.random.SeedSequence(seed))
    kernel = make_kernel(params["kernel"], {"sigma": sigma})
    baselines = None
    if D_max > 0:
        summaries["baseline_note"] = (
            f"RFF and Nyström baselines from ΦᵀΦ summed per partition (the {n:,} × {D_max} "
            f"features never held): the first D of one draw of {D_max} random features, and "
            f"the first s of {D_max} landmarks, a uniform sample of the training rows keyed "
            "by the row index")
        rff = RandomFourierFeatures(params["kernel"], sigma=sigma, n_components=D_max,
                                    random_state=model_seed).fit(np.zeros((1, p)))
        cosines = CosineFeatures(rff.weights_, rff.offsets_)
        setup(0.2, f"Nyström baseline: {D_max} landmarks")
        marks = uniform_landmarks(parts, plan, D_max).X
        sums = normal_sums(parts, plan, [cosines, KernelColumns(kernel, marks)], ybar,
                           setup.sub(0.3, 1.0), f"ΦᵀΦ of {D_max} random features and landmarks")
        baselines = (sums, cosines(test.X), kernel(test.X, marks), marks)

    model = DSGRegressor("squared", kernel=params["kernel"], sigma=sigma, nu=nu, theta=theta,
                         t0=t0, n_iter=1, batch_size=B, n_features_per_iter=r,
                         cache_features=True, random_state=model_seed)
    dsg = BlockedDSG(model, parts, plan, seed, offset=ybar, p=p)
    summaries["dsg_block_rows"] = dsg.stream.block
    yield PartialResult(at(start), "training", dict(table), dict(summaries))

    predict = PredictionSums(test.X)
    done = 0
    for k, t in enumerate(pts):
        before = start + (float(steps[k - 1]) if k else 0.0)
        message = f"iterations {done + 1}–{t} of {pts[-1]}"
        losses = dsg.advance(int(t) - done, progress.sub(at(before), at(start + steps[k])),
                             message)
        done = int(t)
        table["dsg_test_error"][k] = error(predict(model))
        table["dsg_train_loss"][k] = float(np.mean(losses))
        D = int(t * r)
        if baselines is not None and D <= D_max:
            (rff_sums, nys_sums), rff_test, nys_test, marks = baselines
            table["rff_test_error"][k] = error(fit_first_features(rff_sums, rff_test, D, nu)[0])
            table["nystrom_test_error"][k] = error(
                fit_first_landmarks(nys_sums, nys_test, kernel, marks, D, nu)[0])
        if k == L - 1:
            summaries["dsg_epochs"] = done * B / n
            summarise(table, summaries)
        yield PartialResult(at(start + steps[k]), f"iteration {t} of {pts[-1]}", dict(table),
                            dict(summaries))
