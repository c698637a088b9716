"""Experiment ``learning-curve``: doubly stochastic gradients against random features and
Nyström landmarks fitted with the same loss, and the exact minimiser of DSG's objective;
test error against the number of features, and the convergence to that minimiser.

One run for every data set, in memory (one part) or kept in partitions (many): every row
is read through the data set's parts and plan, and every choice about rows comes from keys
of the global row index (:mod:`kernel_lab.core.rows.keys`), so the same rows give the same
numbers wherever they live, for every DSG loss, regression, two classes and more:

- DSG trained in keyed epochs of blocks of rows (:class:`~kernel_lab.core.dsg.stream.
  BlockStream`: every training row once per epoch, blocks and the rows inside them in
  keyed order), through the model's own training loop — the stream the estimators'
  ``fit`` takes on an array, so an estimator and this run give the same DSG on the same
  rows; the features of iteration t drawn from the model's seed;
- the test error on at most :data:`TEST_CAP` test rows (the smallest keys of
  ``TEST_SUBSET``), the automatic bandwidth on :data:`BANDWIDTH_ROWS` keyed training rows;
  DSG's function on the test rows extended at each curve point by the iterations since
  the last, as tasks on the run's executor over blocks of the test rows
  (:class:`~kernel_lab.core.dsg.curve.CurvePredictions`) — on a cluster they run on the
  workers while the client trains;
- the RFF and Nyström baselines at DSG's feature counts, minimising DSG's objective with
  its loss: the first D of one draw of random features, and the first s of one keyed
  uniform sample of landmarks. With the squared loss they come from ``ΦᵀΦ`` and ``Φᵀy``
  summed per canonical row block and added in the blocks' fixed tree
  (:mod:`kernel_lab.core.ridge.normal`), for any n; with another solvable loss the n × D
  features are computed where the rows live and gathered in row order, under the size
  rule :func:`_rff_cap` (within :data:`DENSE_BYTES` when the count is auto). Beyond n
  random features the RFF baseline comes from the n × n Gram matrix of the gathered
  training rows;
- the exact floor and DSG's kernel twin when n ≤ ``exact_max`` and the loss is solvable:
  the training rows gathered and the n × n problem solved; gathering is refused by name
  when the n × n matrices exceed the memory budget.

Why uniform landmarks for the Nyström baseline, not recursive leverage scores: the first s
of a keyed order are themselves a uniform sample of s rows, so every curve point has a
baseline of the law it names, while the first s of one leverage-score draw of the largest
count are a uniform subset of a sample taken at that count's λ, a law of neither size;
and uniform costs one gather of the landmarks' rows, where recursive RLS adds a pass over
the rows per level. It is a weaker baseline where the leverage is uneven (a few clusters,
outliers); the ``nystrom`` experiment is where the samplers are compared.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core.dsg.curve import CurvePredictions
from kernel_lab.core.dsg.stream import (
    BlockStream,
    TargetSummary,
    join_targets,
    subset_keys,
    subset_rows,
    take_range,
    target_median,
)
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import make_kernel, median_heuristic
from kernel_lab.core.losses import CLASSIFICATION_LOSSES, MULTICLASS_LOSSES, REGRESSION_LOSSES
from kernel_lab.core.memory import check_allocation
from kernel_lab.core.models import DSGClassifier, DSGRegressor
from kernel_lab.core.models.dsg import checkpoints
from kernel_lab.core.models.regularised import (
    SOLVABLE_LOSSES,
)
from kernel_lab.core.params import ParamSpec
from kernel_lab.core.progress import Progress
from kernel_lab.core.ridge.normal import in_key_order
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.mapreduce import (
    LocalParts,
    PartMap,
    RowPlan,
    Rows,
)
from kernel_lab.core.validation import check_seed
from kernel_lab.experiments.base import (
    SERIAL,
    Experiment,
    ModelChoice,
    PartialResult,
    PlotSpec,
    TaskExecutor,
)
from kernel_lab.experiments.learning_curve_fits import (
    Baselines,
    CurveTargets,
    Floor,
    RFFBaseline,
    TestErrors,
    missing_class,
    nystrom_baseline,
    rff_baseline,
    rff_draw,
)
from kernel_lab.experiments.learning_curve_summary import summarise
from kernel_lab.experiments.plotspec import Curve

#: Above this many multiply-adds (n² D) the RFF baseline stops short of DSG's final
#: feature count (about 10 s on two cores).
RFF_GRAM_BUDGET = 2e11
#: The same for the baselines' n × D features with D ≤ n (n D² for ΦᵀΦ): each of the two
#: baselines takes about 10 s at most.
PRIMAL_BUDGET = 2e11
#: Above this size of the n × D features, the squared-loss baselines are fitted from ΦᵀΦ
#: and Φᵀy accumulated over row blocks (never the n × D matrix), and the other losses
#: get fewer features, so that the n × D matrix stays within it.
DENSE_BYTES = 2**28
#: At most this many test points are predicted; a larger test set is subsampled (keyed by
#: the row index, and the results say so).
TEST_CAP = 20_000
#: Training rows (a keyed sample) the automatic bandwidth is computed on, as the median
#: heuristic samples them.
BANDWIDTH_ROWS = 1000


#: ``n_iter`` = auto: this many passes over the training points (AUTO_EPOCHS · n / batch
#: size iterations), at least :data:`AUTO_ITER_MIN` and at most :data:`AUTO_ITER_MAX`. DSG's
#: cost grows as the square of the iterations (iteration t evaluates its batch on all t
#: blocks of features so far), so a small table gets a short run: 282 iterations on the
#: 225 training rows of a 300-row table, about 8 % of the work of the 1,000 a table of
#: 800 training rows or more gets.
AUTO_EPOCHS = 40
#: The fewest iterations ``auto`` gives: enough for two decades of curve points.
AUTO_ITER_MIN = 200
#: The most iterations ``auto`` gives (the default before it scaled with the data).
AUTO_ITER_MAX = 1000


def auto_iterations(n: int, batch_size: int) -> int:
    """DSG's iterations when ``n_iter`` is auto: :data:`AUTO_EPOCHS` passes over ``n``
    training points in batches of ``batch_size``, within [:data:`AUTO_ITER_MIN`,
    :data:`AUTO_ITER_MAX`]."""
    passes = math.ceil(AUTO_EPOCHS * max(int(n), 1) / max(int(batch_size), 1))
    return int(min(max(passes, AUTO_ITER_MIN), AUTO_ITER_MAX))


def _iterations(params: Mapping[str, Any], n: int) -> int:
    """The run's iterations: ``n_iter``, or :func:`auto_iterations` when it is auto."""
    given = params.get("n_iter")
    return int(given) if given is not None else auto_iterations(n, params.get("batch_size",
                                                                                32))


def _auto_note(n: int, batch_size: int, n_iter: int) -> str:
    """How ``n_iter`` = auto chose ``n_iter`` for ``n`` training points."""
    bound = (f" (at least {AUTO_ITER_MIN})" if n_iter == AUTO_ITER_MIN else
             f" (at most {AUTO_ITER_MAX})" if n_iter == AUTO_ITER_MAX else "")
    return (f"iterations auto: {AUTO_EPOCHS} passes over {n:,} training points in batches of "
            f"{batch_size} → {n_iter:,}{bound}; set iterations (n_iter) for a longer run")


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


def _rff_cap(requested: int | None, final: int, n: int, squared: bool = True) -> int:
    """Baseline features: as requested, or (auto) up to DSG's final count while the n × D
    features cost at most :data:`PRIMAL_BUDGET` (n D²), or, beyond n features, the n × n
    Gram accumulation at most :data:`RFF_GRAM_BUDGET`; for losses other than the squared,
    also while the n × D features fit in :data:`DENSE_BYTES`."""
    if requested is not None:
        return int(requested)
    n = max(n, 1)
    primal = min(n, math.sqrt(PRIMAL_BUDGET / n))
    if not squared:
        primal = min(primal, max(DENSE_BYTES / (8.0 * n), 1.0))
    return int(min(final, max(primal, RFF_GRAM_BUDGET / n**2)))


def floor_words(task: str, loss: str, n: int, exact_max: int) -> dict[str, str]:
    """The summaries that say what the error is and why there is no exact floor, if none:
    the floor needs a solvable loss and n ≤ ``exact_max`` (an n × n kernel matrix)."""
    words = {"error_measure": ("test MSE" if task == "regression"  # the plots' y axis
                               else "misclassified (fraction of test points)")}
    solvable = loss in SOLVABLE_LOSSES
    if not solvable:
        words["floor_note"] = (f"no exact floor for the {loss} loss (solvable: "
                               f"{', '.join(SOLVABLE_LOSSES)})")
    if not (solvable and n <= exact_max):  # why the convergence plot is empty
        words["floor_missing"] = "No exact floor in this run, nothing to converge to: " + (
            words["floor_note"] if not solvable else
            f"n = {n:,} training rows is above exact_max = {exact_max:,} "
            "(raise it for the floor: an n × n kernel matrix and its solve).")
    return words


def keyed_rows(parts: PartMap, plan: RowPlan, asks: list[tuple[str, int, int]],
               values: bool | None = None) -> tuple[list[Rows], TargetSummary | None]:
    """For each ``(which, stream, k)``: the rows of :func:`~kernel_lab.core.rows.mapreduce.
    keyed_subset` (the k smallest keys of the training or test rows for ``(plan.seed,
    stream)``) gathered in increasing index order as :func:`~kernel_lab.core.rows.mapreduce.
    take_rows` gathers them — the same rows and bits, in two passes over the parts for
    all of them (the keys, then the rows: each part reads its test and its training rows
    once for every subset) where one subset at a time takes two each. Unless ``values``
    is None, the first pass also makes :func:`~kernel_lab.core.dsg.stream.target_summary`
    (``values``: the distinct targets too), the same bits as its own pass would."""
    got = parts.map(subset_keys, plan, tuple(asks), values)
    found = None if values is None else join_targets([g[1] for g in got], plan)
    picks = []
    for j, (_, _, k) in enumerate(asks):
        key = np.concatenate([g[0][j][0] for g in got])
        index = np.concatenate([g[0][j][1] for g in got])
        picks.append(np.sort(index[rowkeys.smallest(key, index, k)]))
    kinds = sorted({which for which, _, _ in asks})
    union = {w: np.unique(np.concatenate([pick for (which, _, _), pick in zip(asks, picks,
                                                                              strict=True)
                                          if which == w])) for w in kinds}
    held: dict[str, Rows] = {}
    taken = parts.map(subset_rows, plan, tuple((w, union[w]) for w in kinds))
    for i, w in enumerate(kinds):
        rows = [t[i] for t in taken if t[i].index.size]
        held[w] = (Rows(np.concatenate([r.X for r in rows]), np.concatenate([r.y for r in rows]),
                        np.concatenate([r.index for r in rows])) if rows else
                   Rows(np.zeros((0, 0)), np.zeros(0), np.zeros(0, dtype=np.int64)))
    out = []
    for (which, _, _), pick in zip(asks, picks, strict=True):
        rows = held[which]
        if not rows.index.size:
            out.append(rows)
            continue
        at = np.minimum(np.searchsorted(rows.index, pick), rows.index.size - 1)
        at = at[rows.index[at] == pick]
        out.append(Rows(rows.X[at], rows.y[at], rows.index[at]))
    return out, found


def _targets(data: Any, parts: PartMap, plan: RowPlan, loss: str, test: Rows,
             found: TargetSummary) -> tuple[CurveTargets, Any, float]:
    """The curve's targets from the summary of the training targets (with their distinct
    values unless in regression), DSG's classes (None in regression) and DSG's regression
    offset (the mean; the median under the quantile loss, as :meth:`DSGRegressor.fit`
    takes it)."""
    task = data.task
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
    offset = target_median(parts, plan) if loss == "quantile" else found.mean
    return CurveTargets(task, loss, test.y, shift=found.mean), None, offset


def _costs(n: int, p: int, m: int, D: int, pts: np.ndarray, B: int, r: int, loss: str,
           exact: bool, gram: int) -> tuple[float, np.ndarray]:
    """Multiply-adds of the set-up (reading the rows, the floor, the baselines' sums or
    features) and, cumulated, of each curve point (DSG's iterations, its test predictions,
    the baselines' fits; the RFF Gram matrix up to ``gram`` features beyond n): the
    progress bar's weights and the plan's estimate."""
    # a cosine (the vectorised cos_scaled DSG and the baselines use) costs about 100
    # multiply-adds: 3.1 ns a value against 3.1e10 multiply-adds a second of one thread's
    # matrix product, measured; numpy's cos costs about 460
    q = p + 100
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


def _gathered(parts: PartMap, plan: RowPlan, p: int, m: int, exact: bool, cap: int,
              params: Mapping[str, Any]) -> Rows:
    """The training rows, gathered for the n × n matrices of the floor or of the RFF
    baseline beyond n features (the size rules), after checking that those fit."""
    n = plan.n_train
    why = (f"the exact floor (n = {n:,} ≤ exact_max = {int(params['exact_max']):,})" if exact
           else f"the RFF baseline beyond n = {n:,} features (up to {cap:,})")
    check_allocation(8.0 * (4 * n * n + 2 * m * n + n * p),
                     f"the {n:,} × {n:,} kernel matrices of {why}",
                     "lower exact_max below n (no floor)" if exact else
                     f"set rff_max to at most {n:,}")
    return take_range(parts, plan, 0, plan.n)


def dsg_model(params: Mapping[str, Any], data: Any, loss: str, sigma: float, theta: float,
              t0: float, classes: Any, offset: float
              ) -> tuple[DSGRegressor | DSGClassifier, Iterator[Rows], BlockStream]:
    """The run's DSG model, prepared for training (no iteration yet), the batches of its
    keyed epochs over the data set's training rows (targets as the model takes them) and
    their stream: the estimators' own training loop, as their ``fit`` takes it."""
    p = data.p
    B = int(params["batch_size"])
    cls = DSGClassifier if data.task != "regression" else DSGRegressor
    model = cls(loss, kernel=params["kernel"], sigma=sigma, nu=float(params["nu"]),
                theta=theta, t0=t0, n_iter=1, batch_size=B,
                n_features_per_iter=int(params["features_per_iter"]), cache_features=True,
                random_state=check_seed(np.random.SeedSequence(int(params["seed"]))))
    if data.task == "regression":
        model.prepare(np.zeros((1, p)), offset=offset)
    else:
        model.prepare(np.zeros((1, p)), classes=classes)
    # the estimators' fit takes the same keyed epochs of the same rows
    stream = BlockStream(data.parts, data.plan, model.seed_, B, p=p)
    return model, (Rows(b.X, model.labels(b.y), b.index) for b in stream), stream


@dataclass(frozen=True)
class LearningCurveExperiment(Experiment):
    name = "learning-curve"
    title = "Doubly stochastic gradients: learning curve"
    description = (
        "Doubly stochastic functional gradients (Dai et al.) train a kernel machine by SGD in "
        "which two things are random at every step: the data points (a mini-batch) and the "
        "random Fourier features that stand in for the kernel (a fresh block per iteration). "
        "Here the points are taken in epochs, every training row once per pass in a random "
        "order keyed by the row index (random reshuffling by blocks of rows: the paper draws "
        "them independently, see docs/papers.md), the same wherever the rows live. The "
        "model is only the coefficients and a seed: the features are regenerated from "
        "(seed, iteration) when predicting, so memory grows as O(t), not O(n²). For "
        "comparison, all minimising DSG's own objective mean l(f(x), y) + ν/2 ‖f‖² with "
        "DSG's loss: the same number of random features drawn once (RFF), as many Nyström "
        "landmarks drawn uniformly from the training rows, and the exact minimiser over the "
        "whole RKHS as the floor (the limit DSG converges to; with the squared loss it is "
        "plain kernel ridge on y − ȳ with λ = nν, since DSG subtracts the mean of the "
        "training targets and fits the rest without an intercept; with the logistic, hinge "
        "or multinomial loss it is the kernel logistic regression or SVM of the same ν, "
        "solved to machine precision). On two-class data the error is the "
        "misclassification rate (with the softmax loss DSG keeps two scores there, for "
        "the labels −1 and +1); on data with more classes (digits) DSG uses the "
        "multinomial (softmax) loss with one score per class. What the paper proves, "
        "and what the results measure (log–log slopes over the last two decades of "
        "iterations): with steps θ/(t + t0), DSG's function converges to the floor's at "
        "O(1/t) — the mean squared distance between the two on the test points, slope −1 "
        "(second plot, beside a slope −1 guide). The excess objective J(h_t) − J(f*) of "
        "DSG's kernel twin h_t (the same steps with the exact kernel in place of the "
        "random features — the function the paper's analysis follows; DSG's own sum of "
        "cosines has no RKHS norm, so J(f_t) is undefined) is bounded by a multiple of "
        "‖h_t − f*‖², which the analysis bounds by O(1/t) too. The test error itself does "
        "not fall at −1: it levels off at the floor's, and the paper bounds the part above "
        "the floor only by O(1/√t) — a slope of −½ (first plot); it may fall faster, and "
        "it can cross the floor (DSG can do better on the test set than the exact "
        "minimiser of the training objective), and then no slope is measured. These rates "
        "are upper bounds and asymptotic: they show once t is well past t0 (t0 = θ = 1/ν "
        "by default, 1000 at ν = 10⁻³; before that the steps are nearly constant and the "
        "slopes flatter, the twin's excess objective may even rise), and they are proved "
        "for losses with a Lipschitz derivative, which the hinge is not. The iterations "
        f"(auto by default) scale with the data: {AUTO_EPOCHS} passes over the training "
        f"points in batches ({AUTO_EPOCHS} n / batch size iterations), at least "
        f"{AUTO_ITER_MIN} and at most {AUTO_ITER_MAX} — DSG's work grows as the square of "
        "the iterations, so a table of a few hundred rows answers in seconds "
        f"({auto_iterations(225, 32)} iterations for 225 training rows in batches of 32), "
        f"and from {AUTO_ITER_MAX * 32 // AUTO_EPOCHS} training rows on a run gets "
        f"{AUTO_ITER_MAX}; the curve points are log-spaced up to the last iteration. A "
        "short run stops before t0, so its slopes are the flatter ones above: set the "
        "iterations for a longer run."
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
        ParamSpec("n_iter", "int", None, label="iterations", low=2, high=10_000_000,
                  allow_auto=True,
                  help=f"DSG's iterations; auto = {AUTO_EPOCHS} passes over the training "
                       f"points ({AUTO_EPOCHS} n / batch size), at least {AUTO_ITER_MIN} and "
                       f"at most {AUTO_ITER_MAX}: a small table gets a short run"),
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
                 (Curve("dsg_test_error", "measured", "DSG", color="DSG"),
                  Curve("rff_test_error", "baseline", "RFF, same loss", color="RFF"),
                  Curve("nystrom_test_error", "baseline", "Nyström, same loss",
                        color="Nyström"),
                  Curve("krr_test_error", "baseline", "exact (the floor)")),
                 xlabel="features or landmarks (DSG: iterations × features per iteration)",
                 ylabel="{error_measure|test error}", logx=True, logy=True, positive=True),
        PlotSpec("Convergence to the floor (DSG's objective)", "n_features",
                 (Curve("dsg_floor_distance", "measured",
                        "DSG: mean |f_t − f*|² (test)", color="DSG"),
                  Curve("dsg_twin_excess_objective", "estimate",
                        "kernel twin: J(h_t) − J*", color="DSG"),
                  Curve("nystrom_excess_objective", "baseline",
                        "Nyström: J − J*", color="Nyström"),
                  Curve("rate_guide", "reference", "slope −1 (O(1/t))")),
                 xlabel="features or landmarks (DSG: iterations × features per iteration)",
                 ylabel="distance / excess objective", logx=True, logy=True,
                 empty="{floor_missing|No exact floor in this run: nothing to converge to.}"),
        PlotSpec("Training loss (progressive, before each update)", "iteration",
                 (Curve("dsg_train_loss", "measured", "DSG", color="DSG"),), xlabel="iterations",
                 ylabel="loss", logx=True, logy=True),
    )
    default_data = "friedman:n=3000,n_test=1000"
    #: The columns measured at the curve points (NaN until measured), beside iteration,
    #: samples_seen and n_features.
    columns = ("dsg_test_error", "dsg_train_loss", "rff_test_error", "nystrom_test_error",
               "krr_test_error", "dsg_floor_distance", "dsg_twin_excess_objective",
               "nystrom_excess_objective", "rate_guide")

    def estimate(self, params: Mapping[str, Any], n: int, p: int) -> dict[str, Any]:
        loss = params.get("loss", "auto")
        loss = "squared" if loss == "auto" else loss  # auto is squared on regression data
        solvable = loss in SOLVABLE_LOSSES
        exact = solvable and n <= params.get("exact_max", 4000)
        T, r = _iterations(params, n), params.get("features_per_iter", 16)
        B = params.get("batch_size", 32)
        pts = checkpoints(T, params.get("points", 16))
        m = min(max(n // 3, 1), TEST_CAP)  # test points (a quarter of the rows, capped)
        cap = _rff_cap(params.get("rff_max"), int(pts[-1] * r), n, loss == "squared")
        D = min(max((int(t * r) for t in pts if t * r <= cap), default=0), n) if solvable else 0
        gram = cap if solvable and cap > n else 0
        start, steps = _costs(n, p, m, D, pts, B, r, loss, exact, gram)
        # the data (train and test, and the table they came from), DSG's coefficients and
        # features, the floor's n × n matrices, the baselines' sums (D × D) and test
        # features with the squared loss, else their n × D features, and the Gram matrix
        # beyond n features
        memory = 8.0 * (2 * (n + n // 3) * p + 4 * T * r * (p + 2))
        memory += 8.0 * 4 * n * n if exact or gram else 0.0
        memory += (8.0 * (6 * D * D + 2 * m * D) if loss == "squared" else
                   8.0 * 3 * (n + m) * D)
        note = "exact floor included" if exact else "no exact floor (n too large)"
        if D and loss == "squared":
            note += (f"; with the squared loss the baselines are fitted from sums over row "
                     f"blocks ({D} features)")
        return {"memory_bytes": memory, "flops": start + float(steps[-1]), "note": note}

    def run(self, params: Mapping[str, Any], data: Any, progress: Progress,
            executor: TaskExecutor = SERIAL) -> Iterator[PartialResult]:
        """The learning curve on any data set: its rows read through its parts and plan
        (one part for an array in memory, many for partitions), every choice about rows
        keyed by the global row index (see the module docstring)."""
        if data.n_test < 1:
            raise ParameterError("the learning curve needs a test set (test fraction > 0)")
        task = data.task
        loss = _loss_for(params["loss"], task)
        solvable = loss in SOLVABLE_LOSSES
        parts, plan = data.parts, data.plan
        n, p, seed = plan.n_train, data.p, int(params["seed"])
        nu, r = float(params["nu"]), int(params["features_per_iter"])
        B = int(params["batch_size"])
        theta = params["theta"] or 1.0 / nu
        t0 = theta if params["t0"] is None else params["t0"]
        n_iter = int(_iterations(params, n))
        pts = checkpoints(n_iter, params["points"])
        L = pts.size
        m = min(TEST_CAP, plan.n_test)
        exact = solvable and n <= int(params["exact_max"])
        cap = _rff_cap(params["rff_max"], int(pts[-1] * r), n, loss == "squared")
        D_max = (min(max((int(t * r) for t in pts if t * r <= cap), default=0), n)
                 if solvable else 0)
        start, steps = _costs(n, p, m, D_max, pts, B, r, loss, exact,
                              cap if solvable and cap > n else 0)
        total = start + float(steps[-1])

        def at(cost: float) -> float:
            return min(cost / total, 1.0) if total > 0 else 0.0

        setup = progress.sub(0.0, at(start))
        sigma = params["sigma"]
        # every keyed subset of rows the run needs, in one gather: the test rows, the
        # bandwidth's sample, the Nyström baseline's landmarks
        asks = [("test", rowkeys.TEST_SUBSET, m)]
        if sigma is None:
            asks.append(("train", rowkeys.BANDWIDTH, BANDWIDTH_ROWS))
        if D_max > 0:
            asks.append(("train", rowkeys.LANDMARKS, D_max))
        setup(0.0, f"gathering {m:,} test rows" + (
            ", a keyed sample of the training rows for the bandwidth" if sigma is None
            else "") + (f", {D_max} landmarks" if D_max > 0 else ""))
        # the same pass sums the training targets
        gathered, found = keyed_rows(parts, plan, asks, task != "regression")
        assert found is not None
        test = gathered[0]
        if sigma is None:
            sigma = median_heuristic(gathered[1].X)
        marks = in_key_order(gathered[-1], plan.seed) if D_max > 0 else None
        targets, classes, offset = _targets(data, parts, plan, loss, test, found)

        table = {"iteration": pts.astype(float), "samples_seen": pts * float(B),
                 "n_features": pts * float(r)}
        for key in self.columns:
            table[key] = np.full(L, np.nan)
        summaries: dict[str, Any] = {
            "task": task, "loss": loss, "sigma": sigma, "lam_exact": n * nu, "theta": theta,
            "t0": t0, "rff_max_features": D_max,
            # arrays without parts are one data set in memory, read as two views
            "partitions": len(parts.parts) if getattr(data, "parts", None) is not None else 1,
            "n_iter": n_iter}
        if params["n_iter"] is None:
            summaries["n_iter_note"] = _auto_note(n, B, n_iter)
        if targets.n_classes:
            summaries["classes"] = targets.n_classes
        summaries.update(floor_words(task, loss, n, int(params["exact_max"])))
        if m < plan.n_test:
            summaries["test_note"] = (f"test error on a random {m:,} of the {plan.n_test:,} "
                                      "test points (keyed by the row index)")
        kernel = make_kernel(params["kernel"], {"sigma": sigma})
        floor, gram = None, None
        if exact or (solvable and cap > n):
            train = _gathered(parts, plan, p, m, exact, cap, params)
        if exact:
            setup(0.2, f"exact kernel machine on {n:,} points (the floor)")
            floor = Floor(train, test, kernel, targets, loss, nu)
            value = targets.error(floor.fit.test_scores)
            table["krr_test_error"] = np.full(L, value)
            summaries["krr_test_error"] = value
            summaries["objective_floor"] = floor.fit.objective
        baselines = None
        if D_max > 0:
            how = ("from ΦᵀΦ summed over blocks of rows (the "
                   f"{n:,} × {D_max} features never held)" if loss == "squared" else
                   f"from the {n:,} × {D_max} features computed where the rows live and "
                   "gathered in row order")
            summaries["baseline_note"] = (
                f"RFF and Nyström baselines {how}: the first D of one draw of {D_max} random "
                f"features, and the first s of {D_max} landmarks, a uniform sample of the "
                "training rows keyed by the row index")
            # one draw of as many features as the cap, of which the first D_max serve
            rff = rff_draw(params["kernel"], sigma, cap, p, seed)
            # on a cluster, the sums' pass runs on the workers while the client trains DSG
            later = loss == "squared" and not isinstance(parts, LocalParts)
            baselines = Baselines(parts, plan, kernel, rff, test, marks, targets, loss, D_max,
                                   nu, setup.sub(0.5 if exact else 0.2, 1.0), later)
            if cap > n:  # beyond n features: the Gram matrix of the gathered rows
                gram = (RFFBaseline(rff, train.X, test.X), targets.codes(train.y))
                summaries["rff_max_features"] = cap

        model, batches, stream = dsg_model(params, data, loss, sigma, theta, t0, classes,
                                           offset)
        summaries["dsg_block_rows"] = stream.block
        yield PartialResult(at(start), "training", dict(table), dict(summaries))

        tests = None
        try:
            if baselines is not None and baselines.later:
                # DSG's first block of rows is read before the sums' pass takes the workers
                batches = itertools.chain([next(batches)], batches)
                baselines.start()
            waiting: list[int] = []  # curve points whose baselines wait for the sums
            predict = CurvePredictions(test.X, executor)
            # on a cluster, DSG's test sums run on the workers while the client trains
            tests = TestErrors(predict, later=not isinstance(parts, LocalParts))
            done = 0
            for k, t in enumerate(pts):
                before = start + (float(steps[k - 1]) if k else 0.0)
                losses = model.train(batches, int(t) - done,
                                     progress=progress.sub(at(before), at(start + steps[k])),
                                     message=f"iterations {done + 1}–{t} of {pts[-1]}",
                                     on_step=None if floor is None else floor.follow)
                done = int(t)
                predict.add(model, k)
                for j in tests.update(last=k == L - 1):
                    scores = targets.scores(model, predict.raw(j))
                    table["dsg_test_error"][j] = targets.error(scores)
                    if floor is not None:
                        table["dsg_floor_distance"][j] = float(np.mean(np.sum(np.reshape(
                            (scores - floor.fit.test_scores) ** 2, (m, -1)), axis=1)))
                table["dsg_train_loss"][k] = float(np.mean(losses))
                if floor is not None:
                    table["dsg_twin_excess_objective"][k] = floor.excess()
                D = int(t * r)
                if baselines is not None and D <= D_max:
                    waiting.append(k)
                elif gram is not None and D <= cap:
                    fit = gram[0].fit(D, gram[1], loss, nu, targets.n_classes)
                    table["rff_test_error"][k] = targets.error(fit.test_scores)
                if waiting and (k == L - 1 or (baselines is not None and baselines.ready())):
                    for j in waiting:
                        D = int(pts[j] * r)
                        table["rff_test_error"][j] = targets.error(baselines.rff(D).test_scores)
                        fit = baselines.nystrom(D)
                        table["nystrom_test_error"][j] = targets.error(fit.test_scores)
                        if floor is not None:
                            table["nystrom_excess_objective"][j] = (fit.objective
                                                                    - floor.fit.objective)
                    waiting.clear()
                if k == L - 1:
                    summaries["dsg_epochs"] = done * B / n
                    summarise(table, summaries)
                yield PartialResult(at(start + steps[k]), f"iteration {t} of {pts[-1]}",
                                    dict(table), dict(summaries))
        finally:  # a run cancelled or failed stops the sums' pass too
            if baselines is not None:
                baselines.close()
            if tests is not None:
                tests.close()

    def best_models(self, params: Mapping[str, Any], data: Any,
                    table: Mapping[str, np.ndarray], summaries: Mapping[str, Any],
                    progress: Progress) -> list[ModelChoice]:
        """DSG at its last iteration: the run's model (its seed, bandwidth, steps and
        targets) trained again through the same keyed epochs of the same rows, the
        estimators' own training loop, to the run's last iteration — so its test error
        is the run's last ``dsg_test_error`` (to the order its sums are taken in).

        Then, with the squared loss, the RFF and Nyström baselines at their largest
        feature count the run fitted from its sums (at most n): ridge without intercept at
        λ = nν on the first D random features of the run's one draw (RFFRidge given those
        frequencies and phases) or on the Nyström features of the first s keyed uniform
        landmarks (NystromRidge given those landmarks), fitting y − ȳ and adding ȳ back
        (``target_mean``: DSG's objective with the squared loss) — in memory or on the
        data set's partitions, never gathered. The baselines of other losses minimise
        DSG's objective with that loss, which no estimator of the library fits; the notes
        say so."""
        task = data.task
        loss = str(summaries.get("loss") or _loss_for(params["loss"], task))
        parts, plan = data.parts, data.plan
        m = min(TEST_CAP, plan.n_test)
        (test,), found = keyed_rows(parts, plan, [("test", rowkeys.TEST_SUBSET, m)],
                                    task != "regression")
        assert found is not None
        _, classes, offset = _targets(data, parts, plan, loss, test, found)
        n_iter = int(summaries["n_iter"])
        model, batches, _ = dsg_model(params, data, loss, float(summaries["sigma"]),
                                      float(summaries["theta"]), float(summaries["t0"]),
                                      classes, offset)
        model.train(batches, n_iter, progress=progress,
                    message=f"DSG: {n_iter} iterations, as the run trained it")
        errors = np.asarray(table.get("dsg_test_error", []), dtype=np.float64)
        error = float(errors[-1]) if errors.size and np.isfinite(errors[-1]) else None
        measure = "test MSE" if task == "regression" else "test error rate"
        features = n_iter * int(params["features_per_iter"])
        notes = [f"DSG after its last iteration ({n_iter:,}; {features:,} random features), "
                 f"trained on all {plan.n_train:,} training rows as the run trained it"]
        if m < plan.n_test:
            notes.append(f"the run's test error is measured on a keyed random {m:,} of the "
                         f"{plan.n_test:,} test rows")
        baselines: list[ModelChoice] = []
        if loss == "squared":
            pts = checkpoints(n_iter, params["points"])
            cap = _rff_cap(params["rff_max"], int(pts[-1] * int(params["features_per_iter"])),
                           plan.n_train)

            def landmarks(s: int) -> Rows:
                (marks,), _ = keyed_rows(parts, plan, [("train", rowkeys.LANDMARKS, s)])
                return in_key_order(marks, plan.seed)

            baselines = [*rff_baseline(params, data, table, float(summaries["sigma"]), cap,
                                       offset, test),
                         *nystrom_baseline(params, data, table, float(summaries["sigma"]),
                                           landmarks, offset, test)]
        elif any(np.isfinite(np.asarray(table.get(key, [np.nan]), float)).any()
                 for key in ("rff_test_error", "nystrom_test_error")):
            notes.append(f"the run's RFF and Nyström baselines are not exported: they "
                         f"minimise DSG's objective with the {loss} loss on their features, "
                         "and the library's RFFRidge and NystromRidge fit the squared loss "
                         "only")
        return [ModelChoice(f"DSG {loss} {params['kernel']} σ={float(summaries['sigma']):.3g} "
                            f"t={n_iter}", model, error, measure,
                            {"method": "dsg", "loss": loss, "kernel": params["kernel"],
                             "sigma": float(summaries["sigma"]), "nu": float(params["nu"]),
                             "theta": float(summaries["theta"]),
                             "t0": float(summaries["t0"]), "n_iter": n_iter,
                             "features": features}, notes), *baselines]
