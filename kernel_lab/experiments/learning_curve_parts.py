"""Experiment ``learning-curve`` on partitioned data (the rows stay in their partitions).

The same table and summaries as :meth:`LearningCurveExperiment.run`, for every DSG loss,
regression, two classes and more (the multinomial loss):

- DSG trained over the parts in epochs of keyed blocks of rows
  (:class:`~kernel_lab.core.parts.dsg.BlockedDSG`), the features of iteration t drawn from
  the seed as in memory; its test error at the curve points on a keyed subset of at most
  the experiment's test cap of test rows, gathered once;
- the RFF and Nyström baselines at the same feature counts, minimising DSG's objective with
  its loss: the first D of one draw of random features, and the first s of a keyed uniform
  sample of landmarks among the training rows. With the squared loss they come from
  ``ΦᵀΦ`` and ``Φᵀy`` summed per part and added in a fixed tree
  (:mod:`kernel_lab.core.parts.normal`), for any n; with another solvable loss the n × D
  features themselves are computed where the rows live and gathered in row order, under
  the size rule memory uses (the n × D features within ``DENSE_BYTES`` when the feature
  count is auto), then fitted as in memory;
- beyond n random features (small n: the cap allows more features than rows), the RFF
  baseline from the n × n Gram matrix of the gathered training rows, as in memory;
- the exact floor (and DSG's kernel twin) when n ≤ ``exact_max`` and the loss is solvable,
  the rule memory uses: the training rows are gathered and the n × n problem solved as in
  memory. Gathering them is refused by name when their n × n matrices exceed the memory
  budget.

Every choice about rows comes from keys of the global row index, so one array and sixteen
files on a cluster give the same numbers; those of memory differ only by the draws (DSG's
batches, the Nyström landmarks, the test subset), not by the law of the rows in a batch.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from kernel_lab.core import rowkeys
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import make_kernel, median_heuristic
from kernel_lab.core.memory import check_allocation
from kernel_lab.core.models import DSGClassifier, DSGRegressor
from kernel_lab.core.models.dsg import PredictionSums, Step, checkpoints
from kernel_lab.core.models.nystrom import nystrom_factor
from kernel_lab.core.models.regularised import SOLVABLE_LOSSES
from kernel_lab.core.models.rff import RandomFourierFeatures
from kernel_lab.core.parts.base import PartitionedData, Rows, keyed_subset, take_rows
from kernel_lab.core.parts.dsg import (
    BlockedDSG,
    take_range,
    target_median,
    target_summary,
)
from kernel_lab.core.parts.normal import (
    CosineFeatures,
    KernelColumns,
    fit_first_features,
    fit_first_landmarks,
    gather_features,
    normal_sums,
    uniform_landmarks,
)
from kernel_lab.core.progress import Progress
from kernel_lab.core.validation import check_seed
from kernel_lab.experiments.base import PartialResult
from kernel_lab.experiments.learning_curve import (
    CurveFit,
    CurveTargets,
    KernelTwin,
    RFFBaseline,
    fit_gram,
    fit_primal,
    floor_words,
    missing_class,
)
from kernel_lab.experiments.learning_curve_summary import summarise

#: Training rows (a keyed sample) the automatic bandwidth is computed on, as the median
#: heuristic does in memory.
BANDWIDTH_ROWS = 1000


def _targets(data: PartitionedData, loss: str, test: Rows, progress: Progress
             ) -> tuple[CurveTargets, Any, float]:
    """The curve's targets from one pass over the training targets, DSG's classes (None
    in regression) and DSG's regression offset (the mean; the median under the quantile
    loss, as :meth:`DSGRegressor.fit` takes it)."""
    task, plan = data.task, data.plan
    found = target_summary(data.parts, plan, task != "regression", progress)
    if task == "classification":
        if found.values.size != 2:
            raise ParameterError(
                f"the training rows of {data.name or 'the data'} hold {found.values.size} "
                f"distinct value{'s' if found.values.size != 1 else ''} of the target "
                f"{data.target_name!r}: two classes are needed; use a smaller test fraction "
                "or another seed")
        top = float(found.values[-1])
        return CurveTargets(task, loss, test.y, top=top), found.values, 0.0
    if task == "multiclass":
        names = getattr(data, "classes", None)  # the data set's class list, if it has one
        k = len(names) if names else int(found.values.max()) + 1
        missing_class(found.values, k)
        return (CurveTargets(task, loss, test.y, n_classes=k), np.arange(k, dtype=float),
                0.0)
    offset = target_median(data.parts, plan) if loss == "quantile" else found.mean
    return CurveTargets(task, loss, test.y, shift=found.mean), None, offset


def _costs(n: int, p: int, m: int, D: int, pts: np.ndarray, B: int, r: int, loss: str,
           exact: bool, gram: int) -> tuple[float, np.ndarray]:
    """Multiply-adds of the set-up (reading the rows, the floor, the baselines' sums or
    features) and, cumulated, of each curve point (DSG's iterations, its test predictions,
    the baselines' fits; the RFF Gram matrix up to ``gram`` features beyond n), as in the
    in-memory run's estimate; for the progress bar."""
    q = p + 200  # a cosine costs about 200 multiply-adds
    squared = loss == "squared"
    start = 4.0 * n * p + 2.0 * n * D * (q + (D if squared else 0)) + 2.0 * m * D * q
    start += (2.0 * n**3 + n * n * q) if exact else 0.0
    steps, prev = [], 0
    for t in pts:
        t = int(t)
        cost = (B * r * q * (t * t - prev * prev) / 2 + 5e6 * (t - prev) + m * r * (t - prev) * q
                + B * p * 4.0 * (t - prev))
        d = t * r
        if d <= D:
            cost += (2 * d**3 / 3 + 2 * m * d) if squared else 2 * (n * d * d + d**3 / 3)
        elif n < d <= gram:  # the Gram matrix grows by the new features; one n × n solve
            cost += n * n * (d - max(prev * r, n)) + n**3 / 3
        steps.append(cost)
        prev = t
    return start, np.cumsum(steps)


class _Floor:
    """The exact minimiser of DSG's objective on the gathered training rows, and DSG's
    kernel twin following the same batches (global row indices mapped to the rows)."""

    def __init__(self, train: Rows, test: Rows, kernel: Any, targets: CurveTargets,
                 loss: str, nu: float) -> None:
        self.index = train.index
        self.y = targets.codes(train.y)
        self.K = kernel(train.X)
        self.fit = fit_gram(self.K, kernel(test.X, train.X), self.y, loss, nu,
                            targets.n_classes)
        self.twin = KernelTwin(train.index.size, targets.n_classes, nu)
        self.loss = loss

    def follow(self, batch: Rows, step: Step) -> None:
        self.twin.step(np.searchsorted(self.index, batch.index), step.grad, step.gamma)

    def excess(self) -> float:
        return self.twin.objective(self.K, self.y, self.loss) - self.fit.objective


class _Baselines:
    """The RFF and Nyström baselines at D features (see the module docstring): from
    normal sums with the squared loss, from the gathered n × D features otherwise."""

    def __init__(self, data: PartitionedData, kernel: Any, rff: RandomFourierFeatures,
                 test: Rows, targets: CurveTargets, loss: str, D_max: int, nu: float,
                 progress: Progress) -> None:
        parts, plan = data.parts, data.plan
        self.kernel, self.targets, self.loss, self.nu = kernel, targets, loss, nu
        cosines = CosineFeatures(rff.weights_[:, :D_max], rff.offsets_[:D_max])
        progress(0.0, f"Nyström baseline: {D_max} landmarks")
        self.marks = uniform_landmarks(parts, plan, D_max).X
        maps = [cosines, KernelColumns(kernel, self.marks)]
        self.rff_test, self.nys_test = cosines(test.X), kernel(test.X, self.marks)
        if loss == "squared":
            self.sums = normal_sums(parts, plan, maps, targets.shift, progress.sub(0.1, 1.0),
                                    f"ΦᵀΦ of {D_max} random features and landmarks")
        else:
            (self.rff_train, self.nys_train), y = gather_features(
                parts, plan, maps, progress.sub(0.1, 1.0),
                f"{D_max} random features and landmark columns of the training rows")
            self.y = targets.codes(y)

    def rff(self, D: int) -> CurveFit:
        if self.loss == "squared":
            return CurveFit(*fit_first_features(self.sums[0], self.rff_test, D, self.nu))
        root = math.sqrt(2.0 / D)
        return fit_primal(self.rff_train[:, :D] * root, self.rff_test[:, :D] * root, self.y,
                          self.loss, self.nu, self.targets.n_classes)

    def nystrom(self, s: int) -> CurveFit:
        if self.loss == "squared":
            return CurveFit(*fit_first_landmarks(self.sums[1], self.nys_test, self.kernel,
                                                 self.marks, s, self.nu))
        N = nystrom_factor(self.kernel(self.marks[:s]))
        return fit_primal(self.nys_train[:, :s] @ N, self.nys_test[:, :s] @ N, self.y,
                          self.loss, self.nu, self.targets.n_classes)


def _gathered(data: PartitionedData, m: int, exact: bool, cap: int,
              params: Mapping[str, Any]) -> Rows:
    """The training rows, gathered for the n × n matrices of the floor or of the RFF
    baseline beyond n features (memory's rules), after checking that those fit."""
    n, p = data.n_train, data.p
    why = (f"the exact floor (n = {n:,} ≤ exact_max = {int(params['exact_max']):,})" if exact
           else f"the RFF baseline beyond n = {n:,} features (up to {cap:,})")
    check_allocation(8.0 * (4 * n * n + 2 * m * n + n * p),
                     f"the {n:,} × {n:,} kernel matrices of {why}",
                     "lower exact_max below n (no floor)" if exact else
                     f"set rff_max to at most {n:,}")
    return take_range(data.parts, data.plan, 0, data.plan.n)


def run_on_parts(experiment: Any, params: Mapping[str, Any], data: PartitionedData,
                 progress: Progress) -> Iterator[PartialResult]:
    """:meth:`LearningCurveExperiment.run` on a :class:`PartitionedData`.

    Parameters
    ----------
    experiment : LearningCurveExperiment
        Gives the rules shared with the in-memory run (``loss_for``, ``rff_cap``,
        ``test_cap``, ``columns``, ``_summarise``).
    params : mapping
        The experiment's resolved parameters.
    data : PartitionedData
        Partitions with their split and standardisation.
    progress : Progress

    Yields
    ------
    PartialResult
        After the set-up and at every curve point, as the in-memory run does.
    """
    if data.n_test < 1:
        raise ParameterError("the learning curve needs a test set (test fraction > 0)")
    task = data.task
    loss = experiment.loss_for(params["loss"], task)
    solvable = loss in SOLVABLE_LOSSES
    parts, plan = data.parts, data.plan
    n, p, seed = plan.n_train, data.p, int(params["seed"])
    nu, r, B = float(params["nu"]), int(params["features_per_iter"]), int(params["batch_size"])
    theta = params["theta"] or 1.0 / nu
    t0 = theta if params["t0"] is None else params["t0"]
    n_iter = int(experiment.iterations(params, n))
    pts = checkpoints(n_iter, params["points"])
    L = pts.size
    m = min(int(experiment.test_cap()), plan.n_test)
    exact = solvable and n <= int(params["exact_max"])
    cap = experiment.rff_cap(params["rff_max"], int(pts[-1] * r), n, loss == "squared")
    D_max = min(max((int(t * r) for t in pts if t * r <= cap), default=0), n) if solvable else 0
    start, steps = _costs(n, p, m, D_max, pts, B, r, loss, exact,
                          cap if solvable and cap > n else 0)
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
    targets, classes, offset = _targets(data, loss, test, setup.sub(0.1, 0.2))

    table = {"iteration": pts.astype(float), "samples_seen": pts * float(B),
             "n_features": pts * float(r)}
    for key in experiment.columns:
        table[key] = np.full(L, np.nan)
    summaries: dict[str, Any] = {
        "task": task, "loss": loss, "sigma": sigma, "lam_exact": n * nu, "theta": theta,
        "t0": t0, "rff_max_features": D_max, "partitions": len(parts.parts),
        "n_iter": n_iter}
    if params["n_iter"] is None:
        summaries["n_iter_note"] = experiment.auto_note(n, B, n_iter)
    if targets.n_classes:
        summaries["classes"] = targets.n_classes
    summaries.update(floor_words(task, loss, n, int(params["exact_max"])))
    if m < plan.n_test:
        summaries["test_note"] = (f"test error on a random {m:,} of the {plan.n_test:,} test "
                                  "points (keyed by the row index)")
    model_seed = check_seed(np.random.SeedSequence(seed))
    kernel = make_kernel(params["kernel"], {"sigma": sigma})
    floor, gram = None, None
    if exact or (solvable and cap > n):
        train = _gathered(data, m, exact, cap, params)
    if exact:
        setup(0.2, f"exact kernel machine on {n:,} points (the floor)")
        floor = _Floor(train, test, kernel, targets, loss, nu)
        value = targets.error(floor.fit.test_scores)
        table["krr_test_error"] = np.full(L, value)
        summaries["krr_test_error"] = value
        summaries["objective_floor"] = floor.fit.objective
    baselines = None
    if D_max > 0:
        how = ("from ΦᵀΦ summed per partition (the "
               f"{n:,} × {D_max} features never held)" if loss == "squared" else
               f"from the {n:,} × {D_max} features computed where the rows live and gathered "
               "in row order")
        summaries["baseline_note"] = (
            f"RFF and Nyström baselines {how}: the first D of one draw of {D_max} random "
            f"features, and the first s of {D_max} landmarks, a uniform sample of the "
            "training rows keyed by the row index")
        # the draw of memory's baseline (as many features as the cap), of which the
        # first D_max serve
        rff = RandomFourierFeatures(params["kernel"], sigma=sigma, n_components=max(cap, 1),
                                    random_state=model_seed).fit(np.zeros((1, p)))
        baselines = _Baselines(data, kernel, rff, test, targets, loss, D_max, nu,
                               setup.sub(0.5 if exact else 0.2, 1.0))
        if cap > n:  # beyond n features: the Gram matrix of the gathered rows, as in memory
            gram = (RFFBaseline(rff, train.X, test.X), targets.codes(train.y))
            summaries["rff_max_features"] = cap

    cls = DSGClassifier if task != "regression" else DSGRegressor
    model = cls(loss, kernel=params["kernel"], sigma=sigma, nu=nu, theta=theta, t0=t0,
                n_iter=1, batch_size=B, n_features_per_iter=r, cache_features=True,
                random_state=model_seed)
    dsg = BlockedDSG(model, parts, plan, seed, offset=offset, classes=classes, p=p)
    summaries["dsg_block_rows"] = dsg.stream.block
    yield PartialResult(at(start), "training", dict(table), dict(summaries))

    predict = PredictionSums(test.X)
    done = 0
    for k, t in enumerate(pts):
        before = start + (float(steps[k - 1]) if k else 0.0)
        message = f"iterations {done + 1}–{t} of {pts[-1]}"
        losses = dsg.advance(int(t) - done, progress.sub(at(before), at(start + steps[k])),
                             message, None if floor is None else floor.follow)
        done = int(t)
        scores = targets.scores(model, predict(model))
        table["dsg_test_error"][k] = targets.error(scores)
        table["dsg_train_loss"][k] = float(np.mean(losses))
        if floor is not None:
            table["dsg_floor_distance"][k] = float(np.mean(np.sum(
                np.reshape((scores - floor.fit.test_scores) ** 2, (m, -1)), axis=1)))
            table["dsg_twin_excess_objective"][k] = floor.excess()
        D = int(t * r)
        if baselines is not None and D <= D_max:
            table["rff_test_error"][k] = targets.error(baselines.rff(D).test_scores)
            fit = baselines.nystrom(D)
            table["nystrom_test_error"][k] = targets.error(fit.test_scores)
            if floor is not None:
                table["nystrom_excess_objective"][k] = fit.objective - floor.fit.objective
        elif gram is not None and D <= cap:
            fit = gram[0].fit(D, gram[1], loss, nu, targets.n_classes)
            table["rff_test_error"][k] = targets.error(fit.test_scores)
        if k == L - 1:
            summaries["dsg_epochs"] = done * B / n
            summarise(table, summaries)
        yield PartialResult(at(start + steps[k]), f"iteration {t} of {pts[-1]}", dict(table),
                            dict(summaries))
